/*
 * The metrics text (src/ctl/metrics.c): the exposition format's rules
 * (HELP and TYPE before a metric's samples, one group per name, no series
 * twice, the last line ended), counters summed over live and removed peers,
 * the bounded per-peer series, and the "metrics" control request.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/rendezvous.h"

/* The value of the series named exactly so (name{labels}), or -1. */
static long long value_of(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *l = text; *l != '\0';) {
		const char *eol = strchr(l, '\n');

		if (strncmp(l, series, n) == 0 && l[n] == ' ')
			return atoll(l + n + 1);
		if (eol == NULL)
			break;
		l = eol + 1;
	}
	return -1;
}

/* Checks the format's rules on text. */
static void check_format(const char *text, size_t len)
{
	char names[256][96], typed[96] = "", series[2048][160];
	size_t n_names = 0, n_series = 0;

	assert_true(len > 0 && text[len - 1] == '\n');
	assert_int_equal(strlen(text), len);
	for (const char *l = text; l < text + len;) {
		const char *eol = strchr(l, '\n');
		size_t ll = (size_t)(eol - l), nl;
		char name[96];

		if (strncmp(l, "# TYPE ", 7) == 0) {
			nl = strcspn(l + 7, " ");
			assert_true(nl < sizeof(name));
			memcpy(typed, l + 7, nl);
			typed[nl] = '\0';
			/* One group per name. */
			for (size_t i = 0; i < n_names; i++)
				assert_string_not_equal(names[i], typed);
			assert_true(n_names < 256);
			strcpy(names[n_names++], typed);
		} else if (l[0] != '#') {
			nl = strcspn(l, "{ ");
			assert_true(nl < sizeof(name) && ll < 160);
			memcpy(name, l, nl);
			name[nl] = '\0';
			assert_string_equal(name, typed); /* its TYPE came just before */
			assert_memory_equal(name, "yip_",
			                    4 - (strncmp(name, "process_", 8) == 0) * 4);
			/* No series twice. */
			for (size_t i = 0; i < n_series; i++)
				assert_true(strncmp(series[i], l, strcspn(l, " ")) != 0 ||
				            series[i][strcspn(l, " ")] != '\0');
			assert_true(n_series < 2048);
			memcpy(series[n_series], l, strcspn(l, " "));
			series[n_series++][strcspn(l, " ")] = '\0';
		}
		l = eol + 1;
	}
	/* Counters end in _total. */
	for (const char *t = strstr(text, " counter\n"); t != NULL; t = strstr(t + 1, " counter\n"))
		assert_memory_equal(t - 6, "_total", 6);
}

static void snapshot_fill(struct yip_ctl_snapshot *s, struct yip_ctl_peer *peers, size_t n)
{
	memset(s, 0, sizeof(*s));
	memset(peers, 0, n * sizeof(*peers));
	s->peers = peers;
	s->n_peers = n;
	for (size_t i = 0; i < n; i++) {
		peers[i].public_key[0] = (uint8_t)i;
		peers[i].public_key[1] = (uint8_t)(i >> 8);
		peers[i].established = i % 2 == 0;
		peers[i].handshaking = i % 3 == 1;
		peers[i].stats.fec_recovered = 10;
		peers[i].stats.rx_bytes = 1000 + i;
		peers[i].has_path = i % 4 != 3;
		peers[i].relayed_why = i % 4 == 1 ? "both sides map per destination" : NULL;
		peers[i].link.kind = i % 4 == 2 ? "tls" : "udp";
	}
	s->totals.removed.fec_recovered = 5;
	s->totals.by_kind[YIP_TRAFFIC_DIRECT].rx_packets = 1234;
	s->totals.by_kind[YIP_TRAFFIC_RELAYED].tx_bytes = 99;
	s->totals.hs_completed = 7;
	s->drops[YIP_DROP_REPLAY] = 3;
	s->start_time_s = 1700000000;
	s->n_servers = 2;
	s->servers[0].state = "registered";
	s->servers[1].state = "connecting";
}

static void text_and_sums(void **state)
{
	struct yip_ctl_peer peers[4];
	struct yip_ctl_snapshot s;
	size_t len;
	char *t;

	(void)state;
	snapshot_fill(&s, peers, 4);
	t = yip_ctl_metrics(&s, &len);
	assert_non_null(t);
	check_format(t, len);
	assert_int_equal(value_of(t, "yip_build_info{version=\"" YIP_VERSION "\"}"), 1);
	assert_int_equal(value_of(t, "process_start_time_seconds"), 1700000000);
	assert_int_equal(value_of(t, "yip_received_packets_total{kind=\"direct\"}"), 1234);
	assert_int_equal(value_of(t, "yip_sent_bytes_total{kind=\"relayed\"}"), 99);
	assert_int_equal(value_of(t, "yip_sent_bytes_total{kind=\"quic\"}"), 0);
	assert_int_equal(value_of(t, "yip_fec_recovered_packets_total"),
	                 45); /* 4 x 10 + 5 removed */
	assert_int_equal(value_of(t, "yip_handshakes_completed_total"), 7);
	assert_int_equal(value_of(t, "yip_peers{state=\"established\"}"), 2);
	assert_int_equal(value_of(t, "yip_peers{state=\"handshaking\"}"), 1);
	assert_int_equal(value_of(t, "yip_peers{state=\"idle\"}"), 1);
	assert_int_equal(value_of(t, "yip_sessions_up"), 2);
	assert_int_equal(value_of(t, "yip_peers_by_path{kind=\"direct\"}"), 1);
	assert_int_equal(value_of(t, "yip_peers_by_path{kind=\"relayed\"}"), 1);
	assert_int_equal(value_of(t, "yip_peers_by_path{kind=\"tls\"}"), 1);
	assert_int_equal(value_of(t, "yip_peers_by_path{kind=\"none\"}"), 1);
	assert_int_equal(value_of(t, "yip_drops_total{reason=\"replay\"}"), 3);
	assert_int_equal(value_of(t, "yip_drops_total{reason=\"malformed\"}"), 0);
	assert_int_equal(
	    value_of(t, "yip_rendezvous_server_state{server=\"0\",state=\"registered\"}"), 1);
	assert_int_equal(
	    value_of(t, "yip_rendezvous_server_state{server=\"1\",state=\"registered\"}"), 0);
	assert_null(strstr(t, "yip_peer_received_bytes_total")); /* not asked for */
	assert_null(strstr(t, "yip_gossip_"));                   /* not a CA-gated node */
	free(t);
}

/* Per-peer series: asked for, and never more than YIP_CTL_METRICS_MAX_PEERS peers. */
static void per_peer_bounded(void **state)
{
	static struct yip_ctl_peer peers[YIP_CTL_METRICS_MAX_PEERS + 10];
	struct yip_ctl_snapshot s;
	size_t len, n = 0;
	char *t;

	(void)state;
	snapshot_fill(&s, peers, YIP_CTL_METRICS_MAX_PEERS + 10);
	s.metrics_peers = true;
	t = yip_ctl_metrics(&s, &len);
	assert_non_null(t);
	check_format(t, len);
	for (const char *p = strstr(t, "\nyip_peer_received_bytes_total{"); p != NULL;
	     p = strstr(p + 1, "\nyip_peer_received_bytes_total{"))
		n++;
	assert_int_equal(n, YIP_CTL_METRICS_MAX_PEERS);
	assert_int_equal(value_of(t, "yip_peer_series_omitted"), 10);
	assert_int_equal(value_of(t, "yip_peer_received_bytes_total{peer=\"0100000000000000\"}"),
	                 1001);
	free(t);
}

/* The control request: text, not JSON; arguments refused. */
static void request(void **state)
{
	struct yip_ctl_peer peers[1];
	struct yip_ctl_snapshot s;
	struct yip_ctl_request req;
	char err[128];
	size_t len;
	char *t;

	(void)state;
	snapshot_fill(&s, peers, 1);
	assert_int_equal(yip_ctl_parse_request("metrics", 7, &req, err, sizeof(err)), 0);
	assert_int_equal(req.cmd, YIP_CTL_METRICS);
	assert_int_equal(yip_ctl_parse_request("metrics x", 9, &req, err, sizeof(err)), -1);
	t = yip_ctl_reply(&s, "metrics", 7, &len);
	assert_non_null(t);
	assert_memory_equal(t, "# HELP yip_build_info ", 22);
	free(t);
	t = yip_ctl_reply(&s, "metrics 1", 9, &len);
	assert_non_null(t);
	assert_true(t[0] == '{' && strstr(t, "error") != NULL);
	free(t);
}

/* yip-rendezvous's text: the same rules, its counters, the fronts only when present. */
static void rendezvous(void **state)
{
	struct rdv_server *srv = calloc(1, sizeof(*srv));
	struct yip_rdv_quic quic = {.accepted = 4};
	struct yip_rdv_status st = {0};
	size_t len;
	char *t;

	(void)state;
	assert_non_null(srv);
	srv->n_nodes = 3;
	srv->stats.relayed_bytes = 4096;
	srv->stats.refused[0] = 2;
	st.srv = srv;
	t = yip_rdv_metrics(&st, 1700000000, &len);
	assert_non_null(t);
	check_format(t, len);
	assert_int_equal(value_of(t, "yip_rendezvous_nodes"), 3);
	assert_int_equal(value_of(t, "yip_rendezvous_relayed_bytes_total"), 4096);
	assert_int_equal(value_of(t, "yip_rendezvous_refused_total{reason=\"no_certificate\"}"), 2);
	assert_null(strstr(t, "yip_rendezvous_quic_"));
	free(t);
	st.quic = &quic;
	t = yip_rdv_metrics(&st, 0, &len);
	assert_non_null(t);
	check_format(t, len);
	assert_int_equal(value_of(t, "yip_rendezvous_quic_accepted_total"), 4);
	assert_null(strstr(t, "process_start_time_seconds"));
	free(t);
	free(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(text_and_sums),
	    cmocka_unit_test(per_peer_bounded),
	    cmocka_unit_test(request),
	    cmocka_unit_test(rendezvous),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
