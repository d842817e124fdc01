/*
 * Unit tests for the control protocol: request parsing, JSON replies built
 * from a synthetic snapshot and from a real engine, rendering for people,
 * socket paths, and the server over a real Unix socket in a temporary
 * directory (no daemon, no root).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "pair.h"
#include "poll/poll.h"
#include "util/clock.h"
#include "util/hex.h"

#define KEY_A "0101010101010101010101010101010101010101010101010101010101010101"
#define KEY_B "abababababababababababababababababababababababababababababababab"

/* ---- Request parsing ---- */

static void test_parse_table(void **state)
{
	static const struct {
		const char *line;
		int rc;
		enum yip_ctl_cmd cmd;
		bool has_peer;
	} cases[] = {
	    {"show", 0, YIP_CTL_SHOW, false},
	    {"stats", 0, YIP_CTL_STATS, false},
	    {"show\r", 0, YIP_CTL_SHOW, false},
	    {"  show  ", 0, YIP_CTL_SHOW, false},
	    {"\tstats\t", 0, YIP_CTL_STATS, false},
	    {"show " KEY_A, 0, YIP_CTL_SHOW, true},
	    {"show\t" KEY_B "  ", 0, YIP_CTL_SHOW, true},
	    {"show ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB", 0,
	     YIP_CTL_SHOW, true},
	    {"log", 0, YIP_CTL_LOG, false},
	    {"log debug", 0, YIP_CTL_LOG, false},
	    {"log loud", -1, 0, false},
	    {"log info extra", -1, 0, false},
	    {"log averyveryverylonglevelname", -1, 0, false},
	    {"", -1, 0, false},
	    {"   ", -1, 0, false},
	    {"\r", -1, 0, false},
	    {"Show", -1, 0, false},
	    {"shows", -1, 0, false},
	    {"sho", -1, 0, false},
	    {"stats x", -1, 0, false},
	    {"reload", 0, YIP_CTL_RELOAD, false},
	    {" reload\r", 0, YIP_CTL_RELOAD, false},
	    {"reload now", -1, 0, false},
	    {"reloads", -1, 0, false},
	    {"show " KEY_A " x", -1, 0, false},
	    {"show a b c d", -1, 0, false},
	    {"show 0101", -1, 0, false},
	    {"show " KEY_A "0", -1, 0, false},
	    {"show 010101010101010101010101010101010101010101010101010101010101010g", -1, 0, false},
	    {"show\n", -1, 0, false},
	    {"show\r\r", -1, 0, false},
	    {"sh\x1bow", -1, 0, false},
	    {"show \x7f", -1, 0, false},
	    {"show \xc3\xa9", -1, 0, false},
	    {"dump", -1, 0, false},
	};
	struct yip_ctl_request req;
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		err[0] = '\0';
		rc = yip_ctl_parse_request(cases[i].line, strlen(cases[i].line), &req, err,
		                           sizeof(err));
		if (rc != cases[i].rc)
			fail_msg("'%s': rc %d, want %d (%s)", cases[i].line, rc, cases[i].rc, err);
		if (rc != 0) {
			assert_true(err[0] != '\0');
			continue;
		}
		assert_int_equal(req.cmd, cases[i].cmd);
		assert_int_equal(req.has_peer, cases[i].has_peer);
	}
	assert_int_equal(yip_ctl_parse_request("show " KEY_B, 69, &req, err, sizeof(err)), 0);
	for (int i = 0; i < YIP_KEY_LEN; i++)
		assert_int_equal(req.peer[i], 0xab);
}

static void test_log_request(void **state)
{
	struct yip_ctl_request req;
	char err[128], *r;
	size_t len;

	(void)state;
	assert_int_equal(yip_ctl_parse_request("log warn", 8, &req, err, sizeof(err)), 0);
	assert_true(req.has_level);
	assert_int_equal(req.level, YIP_LOG_WARN);
	assert_int_equal(yip_ctl_parse_request("log", 3, &req, err, sizeof(err)), 0);
	assert_false(req.has_level);
	r = yip_ctl_log_reply(YIP_LOG_DEBUG, &len);
	assert_non_null(r);
	assert_string_equal(r, "{\"log_level\":\"debug\"}\n");
	assert_int_equal(len, strlen(r));
	free(r);
}

static void test_parse_nul_and_length(void **state)
{
	struct yip_ctl_request req;
	char line[YIP_CTL_MAX_REQUEST + 8], err[128];

	(void)state;
	/* A NUL inside the line is a control byte, not the end of it. */
	assert_int_equal(yip_ctl_parse_request("show\0x", 6, &req, err, sizeof(err)), -1);
	assert_int_equal(yip_ctl_parse_request("stats\0", 6, &req, err, sizeof(err)), -1);
	/* Exactly one byte under the limit passes the length check. */
	memset(line, ' ', sizeof(line));
	memcpy(line, "show", 4);
	assert_int_equal(
	    yip_ctl_parse_request(line, YIP_CTL_MAX_REQUEST - 1, &req, err, sizeof(err)), 0);
	assert_int_equal(yip_ctl_parse_request(line, YIP_CTL_MAX_REQUEST, &req, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "longer"));
	assert_int_equal(yip_ctl_parse_request(line, sizeof(line), &req, err, sizeof(err)), -1);
	/* A tiny error buffer still gets a terminated message. */
	assert_int_equal(yip_ctl_parse_request("x", 1, &req, err, 4), -1);
	assert_int_equal(strlen(err), 3);
}

/* ---- A synthetic snapshot ---- */

static struct yip_cidr ips_b[2];
static struct yip_ctl_peer peers[2];

static void make_snapshot(struct yip_ctl_snapshot *s)
{
	char e[128];

	memset(s, 0, sizeof(*s));
	memset(peers, 0, sizeof(peers));
	snprintf(s->device, sizeof(s->device), "yip7");
	yip_hex_decode(s->public_key, YIP_KEY_LEN, KEY_A);
	yip_addr_from_public(s->address, s->public_key);
	s->listen_port = 51820;
	s->fec = true;
	for (int i = 0; i < YIP_DROP_COUNT; i++)
		s->drops[i] = (uint64_t)i * 3;
	s->drops[YIP_DROP_REPLAY] = (1ULL << 53) + 1; /* not representable as a double */

	assert_int_equal(yip_cidr_parse("10.9.0.0/24", false, &ips_b[0], e, sizeof(e)), 0);
	assert_int_equal(yip_cidr_parse("fd01::/64", false, &ips_b[1], e, sizeof(e)), 0);

	yip_hex_decode(peers[0].public_key, YIP_KEY_LEN, KEY_B);
	yip_addr_from_public(peers[0].address, peers[0].public_key);
	peers[0].has_endpoint = true;
	assert_int_equal(
	    yip_endpoint_parse("192.0.2.7:4500", 0, false, &peers[0].endpoint, NULL, e, sizeof(e)),
	    0);
	peers[0].allowed_ips = ips_b;
	peers[0].n_allowed_ips = 2;
	peers[0].established = true;
	peers[0].latest_handshake = 1700000000;
	peers[0].cipher = "aes-256-gcm";
	peers[0].rtt_ms = 12.3456789;
	peers[0].loss_estimate = 0.0123456789;
	peers[0].stats.rx_bytes = 1258291; /* 1.20 MiB */
	peers[0].stats.tx_bytes = 3565158; /* 3.40 MiB */
	peers[0].stats.rx_packets = 1000;
	peers[0].stats.tx_packets = 2000;
	peers[0].stats.lost = 7;
	peers[0].stats.fec_recovered = 5;
	peers[0].stats.fec_unrecovered = 1;
	peers[0].stats.fec_late = 12;
	peers[0].stats.arq_recovered = 2;
	peers[0].stats.arq_sent = 3;
	peers[0].stats.nacks_sent = 8;
	peers[0].stats.nacks_received = 9;
	peers[0].stats.arq_history_miss = 10;
	peers[0].stats.arq_late = 11;
	peers[0].stats.repair_bytes = 4096;
	peers[0].recovery_mem = 3 << 20;
	peers[0].stats.wire_bytes = UINT64_MAX;
	peers[0].fec[FLOW_DEFAULT] = (struct fec_params){.k = 16, .r = 2};
	peers[0].fec[FLOW_INTERACTIVE] = (struct fec_params){.k = 1, .r = 1};
	peers[0].fec[FLOW_BULK] = (struct fec_params){.k = 32, .r = 4, .lanes = 4};
	/* Relayed for now, with a direct candidate that has not answered. */
	peers[0].has_path = true;
	snprintf(peers[0].path, sizeof(peers[0].path), "relayed via 198.51.100.1:7000");
	peers[0].path_age_s = 65;
	peers[0].relayed_why = "both sides map per destination";
	peers[0].nat = "per destination";
	peers[0].n_paths = 2;
	snprintf(peers[0].paths[0].path, sizeof(peers[0].paths[0].path), "direct 192.0.2.7:4500");
	peers[0].paths[0].origin = "server";
	snprintf(peers[0].paths[1].path, sizeof(peers[0].paths[1].path),
	         "relayed via 198.51.100.1:7000");
	peers[0].paths[1].origin = "relay";
	peers[0].paths[1].validated = true;
	peers[0].paths[1].rtt = 2500000;
	s->nat = "per destination";
	s->n_servers = 1;
	s->servers[0].state = "registered";
	s->servers[0].relay = true;
	s->servers[0].has_reflexive = true;
	assert_int_equal(yip_endpoint_parse("198.51.100.1:7000", 0, false, &s->servers[0].addr,
	                                    NULL, e, sizeof(e)),
	                 0);
	assert_int_equal(yip_endpoint_parse("203.0.113.9:40000", 0, false, &s->servers[0].reflexive,
	                                    NULL, e, sizeof(e)),
	                 0);

	memset(peers[1].public_key, 0x02, YIP_KEY_LEN);
	peers[1].rtt_ms = -1;
	s->peers = peers;
	s->n_peers = 2;
}

/* The reply to line, checked to be one line of JSON; the caller deletes it. */
static cJSON *reply_json(const struct yip_ctl_snapshot *s, const char *line, char **text)
{
	size_t len = 0;
	char *r = yip_ctl_reply(s, line, strlen(line), &len);
	cJSON *j;

	assert_non_null(r);
	assert_int_equal(strlen(r), len);
	assert_true(len >= 2 && r[len - 1] == '\n');
	assert_null(memchr(r, '\n', len - 1));
	j = cJSON_Parse(r);
	assert_non_null(j);
	if (text)
		*text = r;
	else
		free(r);
	return j;
}

static double num(const cJSON *o, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsNumber(f))
		fail_msg("%s is not a number", name);
	return f->valuedouble;
}

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsString(f))
		fail_msg("%s is not a string", name);
	return f->valuestring;
}

static void test_json_show(void **state)
{
	struct yip_ctl_snapshot s;
	const cJSON *p, *q, *drops, *ips, *fec;
	char addr[INET6_ADDRSTRLEN], *text;
	cJSON *j;

	(void)state;
	make_snapshot(&s);
	j = reply_json(&s, "show", &text);
	assert_string_equal(str(j, "device"), "yip7");
	assert_string_equal(str(j, "public_key"), KEY_A);
	assert_int_equal(num(j, "listen_port"), 51820);
	inet_ntop(AF_INET6, s.address, addr, sizeof(addr));
	assert_string_equal(str(j, "address"), addr);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "fec")));

	drops = cJSON_GetObjectItem(j, "drops");
	assert_int_equal(cJSON_GetArraySize(drops), YIP_DROP_COUNT);
	for (int i = 0; i < YIP_DROP_COUNT; i++)
		if (i != YIP_DROP_REPLAY)
			assert_int_equal(num(drops, yip_drop_name((enum yip_drop)i)), i * 3);
	/* Counters are exact integers in the text, not rounded through a double. */
	assert_non_null(strstr(text, "\"replay\":9007199254740993"));
	assert_non_null(strstr(text, "\"wire_bytes\":18446744073709551615"));
	free(text);

	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "peers")), 2);
	p = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peers"), 0);
	assert_string_equal(str(p, "public_key"), KEY_B);
	assert_string_equal(str(p, "endpoint"), "192.0.2.7:4500");
	ips = cJSON_GetObjectItem(p, "allowed_ips");
	assert_int_equal(cJSON_GetArraySize(ips), 2);
	assert_string_equal(cJSON_GetArrayItem(ips, 0)->valuestring, "10.9.0.0/24");
	assert_string_equal(cJSON_GetArrayItem(ips, 1)->valuestring, "fd01::/64");
	inet_ntop(AF_INET6, peers[0].address, addr, sizeof(addr));
	assert_string_equal(str(p, "address"), addr);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(p, "established")));
	assert_int_equal(num(p, "latest_handshake"), 1700000000);
	assert_string_equal(str(p, "cipher"), "aes-256-gcm");
	assert_true(num(p, "rtt_ms") == 12.346);
	assert_true(num(p, "loss_estimate") == 0.012346);
	assert_int_equal(num(p, "rx_bytes"), 1258291);
	assert_int_equal(num(p, "tx_bytes"), 3565158);
	assert_int_equal(num(p, "rx_packets"), 1000);
	assert_int_equal(num(p, "tx_packets"), 2000);
	assert_int_equal(num(p, "lost"), 7);
	assert_int_equal(num(p, "fec_recovered"), 5);
	assert_int_equal(num(p, "fec_unrecovered"), 1);
	assert_int_equal(num(p, "fec_late"), 12);
	assert_int_equal(num(p, "arq_recovered"), 2);
	assert_int_equal(num(p, "arq_sent"), 3);
	assert_int_equal(num(p, "nacks_sent"), 8);
	assert_int_equal(num(p, "nacks_received"), 9);
	assert_int_equal(num(p, "arq_history_miss"), 10);
	assert_int_equal(num(p, "arq_late"), 11);
	assert_int_equal(num(p, "repair_bytes"), 4096);
	assert_int_equal(num(p, "recovery_mem"), 3 << 20);
	fec = cJSON_GetObjectItem(p, "fec");
	assert_int_equal(num(cJSON_GetObjectItem(fec, "default"), "k"), 16);
	assert_int_equal(num(cJSON_GetObjectItem(fec, "default"), "r"), 2);
	assert_int_equal(num(cJSON_GetObjectItem(fec, "interactive"), "k"), 1);
	assert_int_equal(num(cJSON_GetObjectItem(fec, "interactive"), "r"), 1);
	assert_int_equal(num(cJSON_GetObjectItem(fec, "bulk"), "k"), 32);
	assert_int_equal(num(cJSON_GetObjectItem(fec, "bulk"), "r"), 4);
	assert_int_equal(num(cJSON_GetObjectItem(fec, "bulk"), "lanes"), 4);

	/* The second peer: no endpoint, no allowed IPs, never shook hands, RTT unknown. */
	q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peers"), 1);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(q, "endpoint")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(q, "rtt_ms")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(q, "allowed_ips")), 0);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(q, "established")));
	assert_int_equal(num(q, "latest_handshake"), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(q, "cipher")));
	cJSON_Delete(j);
}

static void test_json_show_peer_and_stats(void **state)
{
	struct yip_ctl_snapshot s;
	const cJSON *ps;
	cJSON *j;

	(void)state;
	make_snapshot(&s);
	j = reply_json(&s, "show " KEY_B, NULL);
	ps = cJSON_GetObjectItem(j, "peers");
	assert_int_equal(cJSON_GetArraySize(ps), 1);
	assert_string_equal(str(cJSON_GetArrayItem(ps, 0), "public_key"), KEY_B);
	assert_string_equal(str(j, "device"), "yip7");
	cJSON_Delete(j);

	j = reply_json(&s, "show " KEY_A, NULL); /* our own key is no peer */
	assert_string_equal(str(j, "error"), "no such peer");
	assert_int_equal(cJSON_GetArraySize(j), 1);
	cJSON_Delete(j);

	j = reply_json(&s, "stats", NULL);
	assert_string_equal(str(j, "device"), "yip7");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "drops")), YIP_DROP_COUNT);
	assert_null(cJSON_GetObjectItem(j, "peers"));
	assert_null(cJSON_GetObjectItem(j, "datapath")); /* not filled in: not sent */
	cJSON_Delete(j);

	/* The loop's counters, when it filled them in. */
	s.datapath = (struct yip_ctl_datapath){.present = true,
	                                       .io = "uring",
	                                       .workers = 2,
	                                       .tun_offload = true,
	                                       .udp_gro = true,
	                                       .tso_reads = 7,
	                                       .udp_train_datagrams = UINT64_MAX,
	                                       .aqm_drops = 3,
	                                       .timer_runs = 4};
	j = reply_json(&s, "stats", NULL);
	{
		const cJSON *dp = cJSON_GetObjectItem(j, "datapath");

		assert_string_equal(str(dp, "io"), "uring");
		assert_int_equal(cJSON_GetObjectItem(dp, "workers")->valueint, 2);
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(dp, "tun_offload")));
		assert_true(cJSON_IsFalse(cJSON_GetObjectItem(dp, "udp_gso")));
		assert_int_equal(cJSON_GetObjectItem(dp, "tso_reads")->valuedouble, 7);
		assert_int_equal(cJSON_GetObjectItem(dp, "aqm_drops")->valuedouble, 3);
		assert_int_equal(cJSON_GetObjectItem(dp, "timer_runs")->valuedouble, 4);
		assert_non_null(cJSON_GetObjectItem(dp, "udp_train_datagrams"));
	}
	cJSON_Delete(j);
	s.datapath.present = false;

	j = reply_json(&s, "frob", NULL);
	assert_non_null(strstr(str(j, "error"), "unknown request 'frob'"));
	cJSON_Delete(j);
	j = reply_json(&s, "", NULL);
	assert_non_null(strstr(str(j, "error"), "empty"));
	cJSON_Delete(j);
}

static void test_json_no_peers_and_escaping(void **state)
{
	struct yip_ctl_snapshot s;
	size_t len;
	char *r;
	cJSON *j;

	(void)state;
	make_snapshot(&s);
	s.n_peers = 0;
	s.peers = NULL;
	j = reply_json(&s, "show", NULL);
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "peers")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "peers")), 0);
	cJSON_Delete(j);

	r = yip_ctl_error_reply("quote \" and \\ and \n", &len);
	assert_non_null(r);
	j = cJSON_Parse(r);
	assert_string_equal(str(j, "error"), "quote \" and \\ and \n");
	cJSON_Delete(j);
	free(r);
}

/* ---- A real engine ---- */

static void test_snapshot_from_engine(void **state)
{
	static const char text[] = "local_private=" KEY_A "\n"
	                           "[peer]\n"
	                           "public_key=" KEY_B "\n"
	                           "endpoint=[2001:db8::1]:443\n"
	                           "allowed_ips=10.9.0.2/32, 10.10.0.0/16\n";
	const struct pair_opts po = {0};
	struct yip_ctl_snapshot s;
	struct yip_ctl_config cc;
	struct yip_config cfg;
	struct pair_node node;
	struct yip_device *dev = &node.dev;
	struct yip_peer *p;
	uint8_t pub_b[YIP_KEY_LEN];
	char err[256], *r, ep[YIP_ADDRSTRLEN], ip[YIP_ADDRSTRLEN];
	size_t len;
	cJSON *j, *jp;

	(void)state;
	assert_int_equal(yip_crypto_init(), 0);
	if (yip_config_parse(text, sizeof(text) - 1, "t", false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (pair_node_init(&node, &cfg, NULL, &po, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	yip_ctl_config_init(&cc, "yip3", 4242);
	yip_config_free(&cfg); /* the snapshot must not depend on it */

	yip_hex_decode(pub_b, YIP_KEY_LEN, KEY_B);
	p = yip_device_peer(dev, pub_b);
	assert_non_null(p);
	p->stats.rx_bytes = 100;
	p->stats.last_handshake_wall = 1700000000ULL * YIP_NS_PER_S + 999999999;
	p->fec.srtt = 2500000; /* 2.5 ms */
	p->fec.loss = 0.25;
	dev->drops[YIP_DROP_DECRYPT] = 9;

	assert_int_equal(yip_ctl_snapshot_take(&s, &cc, dev, 1000), 0);
	assert_string_equal(s.device, "yip3");
	assert_int_equal(s.listen_port, 4242);
	assert_int_equal(s.n_peers, 1);
	assert_int_equal(s.peers[0].n_allowed_ips, 2);
	yip_cidr_format(&s.peers[0].allowed_ips[1], ip, sizeof(ip));
	assert_string_equal(ip, "10.10.0.0/16");
	assert_int_equal(s.peers[0].latest_handshake, 1700000000);
	assert_false(s.peers[0].established);
	assert_null(s.peers[0].cipher); /* no session yet */
	yip_sockaddr_format(&s.peers[0].endpoint, ep, sizeof(ep));

	r = yip_ctl_reply(&s, "show", 4, &len);
	assert_non_null(r);
	j = cJSON_Parse(r);
	free(r);
	assert_non_null(j);
	assert_int_equal(num(cJSON_GetObjectItem(j, "drops"), "decrypt"), 9);
	jp = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peers"), 0);
	assert_string_equal(str(jp, "endpoint"), ep);
	assert_string_equal(str(jp, "endpoint"), "[2001:db8::1]:443");
	assert_true(num(jp, "rtt_ms") == 2.5);
	assert_true(num(jp, "loss_estimate") == 0.25);
	assert_int_equal(num(jp, "rx_bytes"), 100);
	assert_string_equal(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(jp, "allowed_ips"), 0)->valuestring,
	    "10.9.0.2/32");
	cJSON_Delete(j);

	/* Without a control configuration: the allowed IPs are the engine's all the same. */
	yip_ctl_snapshot_free(&s);
	assert_int_equal(yip_ctl_snapshot_take(&s, NULL, dev, 1000), 0);
	assert_int_equal(s.peers[0].n_allowed_ips, 2);
	assert_string_equal(s.device, "");
	yip_ctl_snapshot_free(&s);
	pair_node_free(&node);
}

/* ---- Rendering ---- */

/* Renders reply as view v into a heap string (caller frees); rc in *rc. */
static char *render(const char *reply, size_t len, enum yip_ctl_view v, uint64_t now, int *rc,
                    char *err, size_t errlen)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	*rc = yip_ctl_render(f, v, reply, len, now, err, errlen);
	fclose(f);
	return buf;
}

static void test_render_views(void **state)
{
	struct yip_ctl_snapshot s;
	char *reply, *out, err[128];
	size_t len;
	int rc;
	cJSON *a, *b;

	(void)state;
	make_snapshot(&s);
	reply = yip_ctl_reply(&s, "show", 4, &len);
	assert_non_null(reply);

	out = render(reply, len, YIP_CTL_VIEW_SHOW, 1700000012, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "interface: yip7\n"));
	assert_non_null(strstr(out, "  public key: " KEY_A "\n"));
	assert_non_null(strstr(out, "  listening port: 51820\n"));
	assert_non_null(strstr(out, "  fec: on\n"));
	assert_non_null(strstr(out, "\npeer: " KEY_B "\n"));
	assert_non_null(strstr(out, "  endpoint: 192.0.2.7:4500\n"));
	assert_non_null(strstr(out, "  allowed ips: 10.9.0.0/24, fd01::/64\n"));
	assert_non_null(strstr(out, "  latest handshake: 12 seconds ago\n"));
	assert_non_null(strstr(out, "  rtt: 12.346 ms\n"));
	assert_non_null(strstr(out, "  transfer: 1.20 MiB received, 3.40 MiB sent"));
	assert_non_null(
	    strstr(out, "  loss: sending 1.23% (peer's reports), receiving 7 packets lost\n"));
	assert_non_null(strstr(out, "fec 5 recovered, 1 unrecovered; arq 2 recovered, 3 resent"));
	assert_non_null(
	    strstr(out, "  fec k/r: default 16/2, interactive 1/1, bulk 32/4 in 4 lanes\n"));
	/* The second peer. */
	assert_non_null(strstr(out,
	                       "  path: relayed via 198.51.100.1:7000 (for 1 minute, 5 seconds)\n"
	                       "  relayed because: both sides map per destination\n"
	                       "  candidates:\n"
	                       "    direct 192.0.2.7:4500 (server, not answered)\n"
	                       "    relayed via 198.51.100.1:7000 (relay, works, 2.500 ms)\n"));
	assert_non_null(strstr(out, "  nat: per destination\n  rendezvous: 198.51.100.1:7000 "
	                            "(registered, sees us as 203.0.113.9:40000, relays)\n"));
	assert_non_null(
	    strstr(out, "  endpoint: (none)\n  path: (none yet)\n  allowed ips: (none)\n"));
	assert_non_null(strstr(out, "  latest handshake: never\n"));
	assert_non_null(strstr(out, "  rtt: unknown\n"));
	free(out);

	out = render(reply, len, YIP_CTL_VIEW_PEERS, 1700003560, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, KEY_B "\t192.0.2.7:4500\t10.9.0.0/24,fd01::/64\t"
	                                  "59 minutes, 20 seconds ago\t12.346 ms\n"));
	assert_non_null(strstr(out, "\t(none)\t(none)\tnever\tunknown\n"));
	free(out);

	out = render(reply, len, YIP_CTL_VIEW_STATS, 0, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "interface: yip7\n  drops:\n"));
	assert_non_null(strstr(out, "    malformed:"));
	assert_non_null(strstr(out, "    truncated:           3\n"));
	assert_non_null(strstr(out, "    replay:              9007199254740992\n"));
	free(out);

	/* JSON view: pretty, same document, numbers kept exactly as sent. */
	out = render(reply, len, YIP_CTL_VIEW_JSON, 0, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\n  \"device\": \"yip7\",\n"));
	assert_non_null(strstr(out, "\"replay\": 9007199254740993"));
	assert_non_null(strstr(out, "\"allowed_ips\": []"));
	a = cJSON_Parse(out);
	b = cJSON_Parse(reply);
	assert_non_null(a);
	assert_true(cJSON_Compare(a, b, true));
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(out);
	free(reply);
}

#define NO_PEER "{\"error\":\"no such peer\"}\n"
#define ESCAPE  "{\"error\":\"a\\u001b[2Jb\"}"
#define NOT_STR "{\"error\":7}"

static void test_render_errors(void **state)
{
	static const char *bad[] = {
	    "", "null", "[]", "42", "\"x\"", "{", "{\"a\":1} x", "{\"a\":1}{}", "{\"a\":1}\0",
	};
	char *out, err[64];
	int rc;

	(void)state;
	out = render(NO_PEER, strlen(NO_PEER), YIP_CTL_VIEW_SHOW, 0, &rc, err, sizeof(err));
	assert_int_equal(rc, -1);
	assert_string_equal(err, "no such peer");
	assert_string_equal(out, "");
	free(out);
	out = render(ESCAPE, strlen(ESCAPE), YIP_CTL_VIEW_SHOW, 0, &rc, err, sizeof(err));
	assert_int_equal(rc, -1);
	assert_string_equal(err, "a?[2Jb");
	free(out);
	out = render(NOT_STR, strlen(NOT_STR), YIP_CTL_VIEW_JSON, 0, &rc, err, sizeof(err));
	assert_int_equal(rc, -1);
	free(out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i]) + (i == sizeof(bad) / sizeof(bad[0]) - 1);

		out = render(bad[i], len, YIP_CTL_VIEW_SHOW, 0, &rc, err, sizeof(err));
		if (rc != -1)
			fail_msg("'%s' rendered", bad[i]);
		free(out);
	}
}

static void test_render_wrong_types(void **state)
{
	static const char doc[] =
	    "{\"device\":5,\"public_key\":\"k\\u0007\",\"listen_port\":-3,\"fec\":\"yes\","
	    "\"drops\":{\"x\":-1,\"y\":1e300,\"z\":\"q\"},\"peers\":[7,{\"public_key\":null,"
	    "\"allowed_ips\":[1,\"a\",null],\"latest_handshake\":9e99,\"rtt_ms\":\"x\","
	    "\"rx_bytes\":-5,\"loss_estimate\":1e308,\"fec\":{\"default\":[]}}]}";
	char *out, err[64];
	int rc;

	(void)state;
	for (int v = YIP_CTL_VIEW_SHOW; v <= YIP_CTL_VIEW_JSON; v++) {
		out =
		    render(doc, sizeof(doc) - 1, (enum yip_ctl_view)v, 100, &rc, err, sizeof(err));
		assert_int_equal(rc, 0);
		assert_null(strchr(out, '\a'));
		if (v == YIP_CTL_VIEW_SHOW) {
			assert_non_null(strstr(out, "interface: (unknown)\n"));
			assert_non_null(strstr(out, "public key: k?\n"));
			assert_non_null(strstr(out, "allowed ips: a\n"));
			assert_non_null(strstr(out, "latest handshake: 0 seconds ago\n"));
			assert_non_null(strstr(out, "default ?"));
		}
		free(out);
	}
}

static void test_format(void **state)
{
	static const struct {
		uint64_t secs;
		const char *want;
	} durations[] = {
	    {0, "0 seconds"},
	    {1, "1 second"},
	    {12, "12 seconds"},
	    {60, "1 minute"},
	    {61, "1 minute, 1 second"},
	    {3600 + 120 + 5, "1 hour, 2 minutes, 5 seconds"},
	    {2 * 86400 + 3600, "2 days, 1 hour"},
	    {365ULL * 86400, "1 year"},
	};
	static const struct {
		uint64_t bytes;
		const char *want;
	} sizes[] = {
	    {0, "0 B"},
	    {1023, "1023 B"},
	    {1024, "1.00 KiB"},
	    {1258291, "1.20 MiB"},
	    {3565158, "3.40 MiB"},
	    {5ULL << 30, "5.00 GiB"},
	    {UINT64_MAX, "16.00 EiB"},
	};
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		yip_ctl_format_duration(buf, sizeof(buf), durations[i].secs);
		assert_string_equal(buf, durations[i].want);
	}
	yip_ctl_format_duration(buf, sizeof(buf), UINT64_MAX);
	assert_non_null(strstr(buf, "years"));
	yip_ctl_format_duration(buf, 8, 3600 + 120 + 5); /* truncated, still terminated */
	assert_true(strlen(buf) < 8);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		yip_ctl_format_bytes(buf, sizeof(buf), sizes[i].bytes);
		assert_string_equal(buf, sizes[i].want);
	}
}

/* A CA-gated node: membership in show, the members reply, and their rendering. */
static void test_members(void **state)
{
	struct yip_ctl_snapshot s;
	const cJSON *m, *r, *list, *e;
	char *reply, *out, err[128], e2[128];
	size_t len;
	int rc;
	cJSON *j;

	(void)state;
	make_snapshot(&s);
	/* Not CA-gated: membership is null, members is an error. */
	j = reply_json(&s, "show", NULL);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "membership")));
	cJSON_Delete(j);
	j = reply_json(&s, "members", NULL);
	assert_non_null(strstr(str(j, "error"), "not a member"));
	cJSON_Delete(j);

	s.members.present = true;
	strcpy(s.members.network, "example");
	strcpy(s.members.cert.name, "r1");
	s.members.now_unix = 1700000000;
	s.members.cert.not_after = 1700000000 + 3 * 86400 + 100; /* within 7 days: a warning */
	s.members.cert_verdict = MEMBER_OK;
	s.members.has_roots = true;
	s.members.roots_serial = 20;
	s.members.no_cert = 2;
	s.members.refused[MEMBER_REVOKED] = 5;
	s.members.admitted = 7;
	peers[0].has_cert = true;
	peers[0].dynamic = true;
	peers[0].established = true;
	strcpy(peers[0].cert.name, "alice laptop");
	peers[0].cert.n_prefixes = 1;
	assert_int_equal(
	    yip_cidr_parse("10.1.0.5/32", false, &peers[0].cert.prefixes[0], e2, sizeof(e2)), 0);
	peers[0].cert.n_groups = 1;
	strcpy(peers[0].cert.groups[0], "admins");
	peers[0].cert.not_after = 1700000000 + 10 * 86400;
	peers[0].has_path = true;
	strcpy(peers[0].path, "direct 192.0.2.7:4500");
	peers[1].root = true; /* a root whose certificate is not known yet */

	j = reply_json(&s, "show", NULL);
	m = cJSON_GetObjectItemCaseSensitive(j, "membership");
	assert_true(cJSON_IsObject(m));
	assert_string_equal(str(m, "network"), "example");
	assert_string_equal(str(m, "cert_verdict"), "ok");
	assert_non_null(strstr(str(m, "warning"), "within 7 days"));
	assert_int_equal(num(m, "roots_serial"), 20);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(m, "revocations_serial")));
	assert_int_equal(num(m, "admitted"), 7);
	r = cJSON_GetObjectItemCaseSensitive(m, "refused");
	assert_int_equal(num(r, "no_certificate"), 2);
	assert_int_equal(num(r, "revoked"), 5);
	assert_int_equal(num(r, "wrong_ca"), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(r, "older"));
	e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "peers"), 0);
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(e, "member"), "name"),
	                    "alice laptop");
	cJSON_Delete(j);

	j = reply_json(&s, "members", NULL);
	assert_string_equal(str(j, "network"), "example");
	list = cJSON_GetObjectItemCaseSensitive(j, "members");
	assert_int_equal(cJSON_GetArraySize(list), 3); /* self, alice, the root */
	e = cJSON_GetArrayItem(list, 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "self")));
	assert_string_equal(str(e, "name"), "r1");
	e = cJSON_GetArrayItem(list, 1);
	assert_string_equal(str(e, "name"), "alice laptop");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "connected")));
	assert_string_equal(str(e, "path"), "direct 192.0.2.7:4500");
	assert_int_equal(num(e, "expires_in_days"), 10);
	assert_string_equal(
	    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "addresses"), 0)->valuestring,
	    "10.1.0.5/32");
	e = cJSON_GetArrayItem(list, 2);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "name")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "root")));
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "connected")));
	assert_non_null(strstr(str(e, "why_not"), "no "));
	cJSON_Delete(j);

	reply = yip_ctl_reply(&s, "members", 7, &len);
	assert_non_null(reply);
	out = render(reply, len, YIP_CTL_VIEW_MEMBERS, 1700000000, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "network: example\n"));
	assert_non_null(strstr(out, "member: r1 (this node)\n"));
	assert_non_null(strstr(out, "member: alice laptop\n"));
	assert_non_null(strstr(out, "  groups: admins\n"));
	assert_non_null(strstr(out, "  connected: yes, direct 192.0.2.7:4500\n"));
	assert_non_null(strstr(out, "member: (certificate not seen yet) (root)\n"));
	assert_non_null(strstr(out, "  connected: no ("));
	free(out);
	free(reply);
	reply = yip_ctl_reply(&s, "show", 4, &len);
	out = render(reply, len, YIP_CTL_VIEW_SHOW, 1700000000, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(
	    strstr(out, "  network: example (member \"r1\", certificate expires in 3 days)"));
	assert_non_null(strstr(out, "  WARNING: this node's certificate expires within 7 days"));
	assert_non_null(strstr(out, "  refused: no_certificate 2, revoked 5"));
	free(out);
	free(reply);
	/* members takes no arguments. */
	j = reply_json(&s, "members x", NULL);
	assert_non_null(strstr(str(j, "error"), "no arguments"));
	cJSON_Delete(j);
}

static void test_socket_path(void **state)
{
	char path[108], longdir[120];

	(void)state;
	assert_int_equal(yip_ctl_socket_path(path, sizeof(path), "/run/yip", "yip0"), 0);
	assert_string_equal(path, "/run/yip/yip0.sock");
	assert_int_equal(yip_ctl_socket_path(path, sizeof(path), "/run/yip", ""), -1);
	assert_int_equal(yip_ctl_socket_path(path, sizeof(path), "/run/yip", "a/b"), -1);
	assert_int_equal(yip_ctl_socket_path(path, sizeof(path), "/run/yip", ".."), -1);
	assert_int_equal(yip_ctl_socket_path(path, sizeof(path), "/run/yip", "abcdefghijklmnop"),
	                 -1);
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[100] = '\0';
	assert_int_equal(yip_ctl_socket_path(path, sizeof(path), longdir, "yip0"), -1);
	assert_int_equal(yip_ctl_socket_path(path, 10, "/run/yip", "yip0"), -1);
	/* The directory: the override ($YIP_CTL_DIR) unless unset or empty. */
	assert_string_equal(yip_ctl_dir(NULL), YIP_CTL_DEFAULT_DIR);
	assert_string_equal(yip_ctl_dir(""), YIP_CTL_DEFAULT_DIR);
	assert_string_equal(yip_ctl_dir("/tmp/x"), "/tmp/x");
}

/* ---- The server over a real socket ---- */

static int calls;

static char *fake_reply(void *ctx, const char *line, size_t len, size_t *out_len)
{
	(void)ctx;
	calls++;
	if (len == 4 && memcmp(line, "big!", 4) == 0) {
		/* Larger than any socket buffer: written across several wakeups. */
		size_t n = 4u << 20;
		char *r = malloc(n + 1);

		memset(r, 'x', n);
		r[0] = '"';
		r[n - 2] = '"';
		r[n - 1] = '\n';
		r[n] = '\0';
		*out_len = n;
		return r;
	}
	return yip_ctl_error_reply("fake", out_len);
}

static int client(const char *path, const char *send_text)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (send_text)
		assert_int_equal(send(fd, send_text, strlen(send_text), 0),
		                 (ssize_t)strlen(send_text));
	return fd;
}

/* Handles what the server has pending, as the event loop would. */
static void pump(struct yip_ctl_server *s)
{
	for (int round = 0; round < 8; round++) {
		struct epoll_event ev[4];

		assert_int_equal(yip_poll_wait(s->poll, 10, ev, 4), 0);
	}
}

/* Runs the server's side until fd's reply is complete; returns it (caller frees). */
static char *serve(struct yip_ctl_server *s, int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);

	assert_non_null(buf);
	for (int spins = 0; spins < 100000; spins++) {
		struct epoll_event ev[4];
		ssize_t r;

		assert_int_equal(yip_poll_wait(s->poll, 0, ev, 4), 0);
		if (n + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		r = recv(fd, buf + n, cap - 1 - n, MSG_DONTWAIT);
		if (r == 0)
			break;
		if (r > 0)
			n += (size_t)r;
		else if (errno != EAGAIN)
			break;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void test_server(void **state)
{
	char dir[] = "/tmp/yip-test-ctl.XXXXXX", sub[64], path[108], err[256], *r;
	struct yip_ctl_server s, s2;
	struct stat st;
	size_t len;
	struct yip_poll poll;
	int fd, busy;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/run", dir);
	assert_int_equal(yip_poll_open(&poll), 0);

	if (yip_ctl_server_open(&s, sub, "yip9", geteuid(), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(yip_ctl_server_watch(&s, &poll, fake_reply, NULL), 0);
	snprintf(path, sizeof(path), "%s/yip9.sock", sub);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);

	/* A second server on the same path must not steal a live socket. */
	assert_int_equal(yip_ctl_server_open(&s2, sub, "yip9", geteuid(), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "in use"));
	/* Its probe connection is a client that leaves without asking. */
	pump(&s);
	assert_true(s.client < 0);

	/* One request, one reply, then the server closes. */
	fd = client(path, "show\n");
	r = serve(&s, fd, &len);
	assert_string_equal(r, "{\"error\":\"fake\"}\n");
	free(r);
	close(fd);

	/* While one client is served, another is turned away with "busy". */
	fd = client(path, NULL);
	pump(&s); /* accepted; waits for its request */
	assert_true(s.client >= 0);
	busy = client(path, "show\n");
	r = serve(&s, busy, &len);
	assert_non_null(strstr(r, "busy"));
	free(r);
	close(busy);
	/* The silent one times out after YIP_CTL_REQUEST_MS. */
	assert_int_not_equal(yip_ctl_server_expire(&s, yip_now_mono()), 0);
	assert_int_equal(
	    yip_ctl_server_expire(&s, yip_now_mono() + YIP_CTL_REQUEST_MS * YIP_NS_PER_MS + 1), 0);
	assert_true(s.client < 0);
	r = serve(&s, fd, &len);
	assert_non_null(strstr(r, "timed out"));
	free(r);
	close(fd);

	/* A request too long for a line, and a reply bigger than the socket buffer. */
	calls = 0;
	{
		char longreq[600];

		memset(longreq, 'a', sizeof(longreq) - 1);
		longreq[sizeof(longreq) - 1] = '\0';
		fd = client(path, longreq);
		r = serve(&s, fd, &len);
		assert_string_equal(r, "{\"error\":\"fake\"}\n");
		free(r);
		close(fd);
	}
	fd = client(path, "big!\n");
	r = serve(&s, fd, &len);
	assert_int_equal(len, 4u << 20);
	free(r);
	close(fd);
	assert_int_equal(calls, 2);

	/* A socket left behind by a dead server is replaced. */
	close(s.fd);                                    /* as if the daemon died: the file stays */
	s.fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* so closing s below is harmless */
	assert_int_equal(stat(path, &st), 0);
	if (yip_ctl_server_open(&s2, sub, "yip9", geteuid(), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	yip_ctl_server_close(&s); /* the old one must not remove the new file */
	assert_int_equal(stat(path, &st), 0);
	yip_ctl_server_close(&s2);
	assert_int_equal(stat(path, &st), -1);
	yip_ctl_server_close(&s2); /* idempotent */

	/* Something that is not a socket is never replaced. */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(yip_ctl_server_open(&s2, sub, "yip9", geteuid(), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a socket"));
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	yip_poll_close(&poll);
}

/*
 * Where the control socket may go: a directory that is a symbolic link, is
 * writable by group or others, or belongs to someone other than root or the
 * daemon's user is refused (anyone who can write there could swap in a
 * socket of their own and answer yipctl); one of the daemon's user is fine.
 * The socket is 0600 whatever the umask, without a chmod by path.
 */
static void test_server_dir(void **state)
{
	char dir[] = "/tmp/yip-test-ctldir.XXXXXX", sub[64], link[64], path[108], err[256];
	struct yip_ctl_server s;
	struct stat st;
	mode_t old;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/run", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(path, sizeof(path), "%s/yip9.sock", sub);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(symlink(sub, link), 0);

	assert_int_equal(yip_ctl_server_open(&s, link, "yip9", geteuid(), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(stat(path, &st), -1);

	assert_int_equal(chmod(sub, 0770), 0);
	assert_int_equal(yip_ctl_server_open(&s, sub, "yip9", geteuid(), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mode 0770"));
	assert_int_equal(chmod(sub, 0703), 0);
	assert_int_equal(yip_ctl_server_open(&s, sub, "yip9", geteuid(), err, sizeof(err)), -1);
	assert_int_equal(chmod(sub, 0755), 0);

	/* The mode comes from the umask at bind time, not a later chmod. */
	old = umask(0);
	if (yip_ctl_server_open(&s, sub, "yip9", geteuid(), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	yip_ctl_server_close(&s);
	assert_int_equal(stat(path, &st), -1);

	if (geteuid() == 0) {
		/* Someone else's directory is refused; the daemon's user's is not. */
		assert_int_equal(chown(sub, 4242, 4242), 0);
		assert_int_equal(yip_ctl_server_open(&s, sub, "yip9", 4343, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "uid 4242"));
		if (yip_ctl_server_open(&s, sub, "yip9", 4242, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		yip_ctl_server_close(&s);
	}
	unlink(link);
	rmdir(sub);
	rmdir(dir);
}

/* The reply to reload, done or refused, and how yipctl prints it. */
static void test_reload_reply(void **state)
{
	struct yip_ctl_reload r = {.ok = true, .added = 1, .changed = 2, .removed = 0};
	char *text, *out = NULL, err[256];
	size_t len, olen = 0;
	FILE *f;

	(void)state;
	yip_ctl_reload_note(&r, "+ peer %s (line %u)", "c0c0c0c0", 12u);
	yip_ctl_reload_note(&r, "~ peer d0d0d0d0 (line 3): allowed_ips +10.9.0.0/16\x1b[2J");
	for (int i = 0; i < YIP_CTL_RELOAD_LINES; i++)
		yip_ctl_reload_note(&r, "line %d", i);
	assert_int_equal(r.n_lines, YIP_CTL_RELOAD_LINES);
	assert_int_equal(r.more, 2);
	text = yip_ctl_reload_reply(&r, &len);
	assert_non_null(text);
	f = open_memstream(&out, &olen);
	assert_int_equal(yip_ctl_render(f, YIP_CTL_VIEW_RELOAD, text, len, 0, err, sizeof(err)), 0);
	fclose(f);
	assert_true(strncmp(out, "+1 ~2 -0\n  + peer c0c0c0c0 (line 12)\n", 37) == 0);
	assert_non_null(strstr(out, "+10.9.0.0/16?[2J\n")); /* no escape reaches the terminal */
	assert_non_null(strstr(out, "(and 2 more)\n"));
	free(out);
	free(text);

	r = (struct yip_ctl_reload){.ok = false};
	snprintf(r.error, sizeof(r.error), "reload refused: listen cannot change");
	text = yip_ctl_reload_reply(&r, &len);
	assert_non_null(text);
	f = open_memstream(&out, &olen);
	assert_int_equal(yip_ctl_render(f, YIP_CTL_VIEW_RELOAD, text, len, 0, err, sizeof(err)),
	                 -1);
	fclose(f);
	assert_string_equal(err, "reload refused: listen cannot change");
	free(out);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_table),
	    cmocka_unit_test(test_parse_nul_and_length),
	    cmocka_unit_test(test_log_request),
	    cmocka_unit_test(test_json_show),
	    cmocka_unit_test(test_json_show_peer_and_stats),
	    cmocka_unit_test(test_json_no_peers_and_escaping),
	    cmocka_unit_test(test_snapshot_from_engine),
	    cmocka_unit_test(test_render_views),
	    cmocka_unit_test(test_render_errors),
	    cmocka_unit_test(test_render_wrong_types),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_members),
	    cmocka_unit_test(test_socket_path),
	    cmocka_unit_test(test_server),
	    cmocka_unit_test(test_server_dir),
	    cmocka_unit_test(test_reload_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
