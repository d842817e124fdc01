/*
 * ping and netcheck (src/ctl/reach.c, the request parser in src/ctl/ctl.c):
 * the requests parsed, a ping's target resolved, the replies built and read
 * back, the pong and summary lines and exit statuses, netcheck's report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/reach.h"
#include "util/hex.h"

static struct yip_ctl_snapshot snap;
static struct yip_ctl_peer peers[2];
static struct yip_cidr ips[1];

static void make_snapshot(void)
{
	memset(&snap, 0, sizeof(snap));
	memset(peers, 0, sizeof(peers));
	snprintf(snap.device, sizeof(snap.device), "yip0");
	memset(peers[0].public_key, 0xab, YIP_KEY_LEN);
	memset(peers[1].public_key, 0xcd, YIP_KEY_LEN);
	inet_pton(AF_INET6, "fd00::1", peers[0].address);
	inet_pton(AF_INET6, "fd00::2", peers[1].address);
	ips[0] = (struct yip_cidr){.family = AF_INET, .plen = 24, .addr = {10, 77, 1, 0}};
	peers[1].allowed_ips = ips;
	peers[1].n_allowed_ips = 1;
	peers[1].has_cert = true;
	snprintf(peers[1].cert.name, sizeof(peers[1].cert.name), "bob");
	snap.peers = peers;
	snap.n_peers = 2;
}

static void parse_requests(void **state)
{
	struct yip_ctl_request r;
	char err[128];

	(void)state;
	assert_int_equal(yip_ctl_parse_request("ping bob", 8, &r, err, sizeof(err)), 0);
	assert_int_equal(r.cmd, YIP_CTL_PING);
	assert_string_equal(r.target, "bob");
	assert_false(r.poll);
	assert_int_equal(yip_ctl_parse_request("ping bob poll", 13, &r, err, sizeof(err)), 0);
	assert_true(r.poll);
	assert_int_equal(yip_ctl_parse_request("ping", 4, &r, err, sizeof(err)), -1);
	assert_int_equal(yip_ctl_parse_request("ping bob now", 12, &r, err, sizeof(err)), -1);
	assert_int_equal(yip_ctl_parse_request("netcheck", 8, &r, err, sizeof(err)), 0);
	assert_int_equal(r.cmd, YIP_CTL_NETCHECK);
	assert_false(r.poll);
	assert_int_equal(yip_ctl_parse_request("netcheck probe", 14, &r, err, sizeof(err)), 0);
	assert_true(r.poll);
	assert_int_equal(yip_ctl_parse_request("netcheck x", 10, &r, err, sizeof(err)), -1);
	{
		char line[200];

		memset(line, 'a', sizeof(line));
		memcpy(line, "ping ", 5);
		assert_int_equal(
		    yip_ctl_parse_request(line, 5 + YIP_CTL_TARGET_MAX + 1, &r, err, sizeof(err)),
		    -1);
	}
}

static void resolve(void **state)
{
	char err[256], hex[65];

	(void)state;
	make_snapshot();
	yip_hex_encode(hex, peers[1].public_key, YIP_KEY_LEN);
	assert_int_equal(yip_ctl_resolve_peer(&snap, hex, err, sizeof(err)), 1);
	assert_int_equal(yip_ctl_resolve_peer(&snap, "bob", err, sizeof(err)), 1);
	assert_int_equal(yip_ctl_resolve_peer(&snap, "fd00::1", err, sizeof(err)), 0);
	assert_int_equal(yip_ctl_resolve_peer(&snap, "10.77.1.9", err, sizeof(err)), 1);
	assert_int_equal(yip_ctl_resolve_peer(&snap, "10.77.2.9", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no such peer"));
	memset(hex, '0', 64);
	assert_int_equal(yip_ctl_resolve_peer(&snap, hex, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no such peer"));
	assert_int_equal(yip_ctl_resolve_peer(&snap, "carol", err, sizeof(err)), -1);
}

static void ping_round_trip(void **state)
{
	struct yip_ping_info pi = {.round = 4, .n = 2, .sent = 8, .pongs = 5};
	struct yip_ctl_ping_reply r;
	struct yip_ctl_ping_tally t = {0};
	char err[128], *reply, *text = NULL;
	size_t len, tlen;
	FILE *out;

	(void)state;
	make_snapshot();
	pi.probes[0].addr.in4 = (struct sockaddr_in){
	    .sin_family = AF_INET, .sin_port = htons(51820), .sin_addr.s_addr = htonl(0xcb007107)};
	pi.probes[0].answered = true;
	pi.probes[0].rtt = 1200000;
	pi.probes[1].relay = true;
	pi.probes[1].server = 1;
	pi.probes[1].addr.in4 = (struct sockaddr_in){
	    .sin_family = AF_INET, .sin_port = htons(7000), .sin_addr.s_addr = htonl(0xc6336401)};
	pi.probes[1].answered = true;
	pi.probes[1].rtt = 3400000;
	reply = yip_ctl_ping_reply(&snap, 1, YIP_PING_SENT, false, &pi, &len);
	assert_non_null(reply);
	assert_int_equal(reply[len - 1], '\n');
	assert_int_equal(yip_ctl_ping_parse(reply, len, &r, err, sizeof(err)), 0);
	free(reply);
	assert_string_equal(r.status, "sent");
	assert_string_equal(r.name, "bob");
	assert_int_equal(r.round, 4);
	assert_int_equal(r.n, 2);
	out = open_memstream(&text, &tlen);
	yip_ctl_pong_line(out, &r, 0);
	yip_ctl_pong_line(out, &r, 1);
	yip_ctl_ping_count(&t, &r, 0);
	yip_ctl_ping_count(&t, &r, 1);
	t.rounds = 1;
	t.probes = 2;
	assert_int_equal(yip_ctl_ping_summary(out, &t, r.name), 0);
	fclose(out);
	assert_non_null(strstr(text, "pong from bob (fd00::2) via direct 203.0.113.7:51820 in "
	                             "1.200 ms\n"));
	assert_non_null(strstr(text, "pong from bob (fd00::2) via relay 198.51.100.1:7000 "
	                             "(rendezvous server 1) in 3.400 ms\n"));
	assert_non_null(strstr(text, "2 probes sent in 1 rounds, 2 pongs (1 direct, 1 relayed)"));
	assert_non_null(strstr(text, "path to bob: direct 203.0.113.7:51820"));
	free(text);

	/* Only relayed: 3; nothing: 1. */
	out = fopen("/dev/null", "w");
	t = (struct yip_ctl_ping_tally){0};
	yip_ctl_ping_count(&t, &r, 1);
	assert_int_equal(yip_ctl_ping_summary(out, &t, "bob"), 3);
	t = (struct yip_ctl_ping_tally){0};
	assert_int_equal(yip_ctl_ping_summary(out, &t, "bob"), 1);
	fclose(out);

	/* Error replies and junk. */
	assert_int_equal(
	    yip_ctl_ping_parse("{\"error\":\"no such peer\"}", 24, &r, err, sizeof(err)), -1);
	assert_string_equal(err, "no such peer");
	assert_int_equal(yip_ctl_ping_parse("[1]", 3, &r, err, sizeof(err)), -1);
	assert_int_equal(yip_ctl_ping_parse("{\"status\":1}", 12, &r, err, sizeof(err)), -1);
	/* A pong without a usable rtt is not answered. */
	{
		static const char polled[] =
		    "{\"status\":\"polled\",\"peer\":\"ab\",\"probes\":[{\"via\":\"direct\","
		    "\"answered\":true,\"rtt_ms\":-1}]}";

		assert_int_equal(
		    yip_ctl_ping_parse(polled, sizeof(polled) - 1, &r, err, sizeof(err)), 0);
	}
	assert_int_equal(r.n, 1);
	assert_false(r.pongs[0].answered);
}

static void netcheck(void **state)
{
	struct yip_server_info *v = &snap.servers[0];
	char err[128], *reply, *text = NULL;
	size_t len, tlen;
	FILE *out;

	(void)state;
	make_snapshot();
	snap.n_servers = 1;
	snap.nat = "per destination";
	v->addr.in4 = (struct sockaddr_in){
	    .sin_family = AF_INET, .sin_port = htons(7000), .sin_addr.s_addr = htonl(0xcb00710a)};
	v->state = "registered";
	v->udp = true;
	v->has_path = true;
	v->relay = true;
	v->has_reflexive = v->has_reflexive_alt = true;
	v->reflexive.in4 = (struct sockaddr_in){
	    .sin_family = AF_INET, .sin_port = htons(40112), .sin_addr.s_addr = htonl(0xc6336404)};
	v->reflexive_alt = v->reflexive;
	v->reflexive_alt.in4.sin_port = htons(40113);
	v->alt_port = 7001;
	v->rtt = 12300000;
	reply = yip_ctl_netcheck_reply(&snap, true, &len);
	assert_non_null(reply);
	assert_non_null(strstr(reply, "\"version\":1"));
	assert_non_null(strstr(reply, "\"ipv4\":\"198.51.100.4:40112\""));
	assert_non_null(strstr(reply, "\"nat\":\"endpoint-dependent\""));
	assert_non_null(strstr(reply, "\"mapping_varies_by_dest\":true"));
	assert_non_null(strstr(reply, "\"rtt_ms\":12.3"));
	assert_non_null(strstr(reply, "\"preferred_relay\":\"203.0.113.10:7000\""));
	assert_int_equal(yip_ctl_netcheck_status(reply, len), 0);
	out = open_memstream(&text, &tlen);
	assert_int_equal(yip_ctl_netcheck_render(out, reply, len, err, sizeof(err)), 0);
	fclose(out);
	free(reply);
	assert_non_null(strstr(text, "UDP: yes (1/1 rendezvous servers answered)"));
	assert_non_null(strstr(text, "IPv4: yes, 198.51.100.4:40112"));
	assert_non_null(
	    strstr(text, "NAT mapping: endpoint-dependent (MappingVariesByDestIP: true)"));
	assert_non_null(strstr(text, "203.0.113.10:7000  12.300 ms  registered, over udp"));
	free(text);

	/* No server answered: exit 1, no address. */
	v->state = "registering";
	reply = yip_ctl_netcheck_reply(&snap, false, &len);
	assert_non_null(strstr(reply, "\"ipv4\":null"));
	assert_non_null(strstr(reply, "\"udp\":false"));
	assert_int_equal(yip_ctl_netcheck_status(reply, len), 1);
	free(reply);
	/* The plain netcheck request is answered from a snapshot too. */
	reply = yip_ctl_reply(&snap, "netcheck", 8, &len);
	assert_non_null(strstr(reply, "\"probed\":false"));
	free(reply);
	reply = yip_ctl_reply(&snap, "ping bob", 8, &len);
	assert_non_null(strstr(reply, "\"error\""));
	free(reply);
	assert_int_equal(yip_ctl_netcheck_render(stdout, "{\"error\":\"x\"}", 13, err, sizeof(err)),
	                 -1);
	assert_int_equal(yip_ctl_netcheck_status("junk", 4), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_requests),
	    cmocka_unit_test(resolve),
	    cmocka_unit_test(ping_round_trip),
	    cmocka_unit_test(netcheck),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
