/*
 * The order a node reaches a rendezvous server in (docs/transports.md,
 * "Fallback"): a server named by UDP, quic:// and tls:// (one key) is
 * tried by UDP first, over QUIC once UDP's Inits go 2.5 s unanswered, and
 * over TLS once QUIC's go 5 s more. A real server engine; the node's
 * dials are recorded (struct yip_io.dial_server, undial_server), and a
 * QUIC link the test "opens" carries the node's datagrams to the server
 * as a stream node's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "peer/internal.h"
#include "peer/peer.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"

#define UNIX_NOW (PAIR_WALL_START / YIP_NS_PER_S)
#define SRV_Q    256
#define MAX_ASKS 16

static struct rdv_server S;
static uint8_t srv_priv[YIP_KEY_LEN], srv_pub[YIP_KEY_LEN], node_key[YIP_KEY_LEN];
static union yip_sockaddr srv_addr, node_addr, quic_addr;
static struct pair_node N;
static uint64_t now, t0;

/* What the node asked of the daemon: dial line (>= 0) or undial (-1), when. */
static struct ask {
	int line;
	uint64_t at;
} asks[MAX_ASKS];
static unsigned n_asks;
static bool quic_works; /* a QUIC dial opens a link that reaches the server */
static int64_t quic_link = -1;

struct srv_dgram {
	union yip_sockaddr to;
	size_t len;
	uint8_t buf[RDV_MAX_DGRAM];
};
static struct srv_dgram *srv_q;
static unsigned srv_n;

static void set4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static uint8_t *srv_buf(void *ctx)
{
	(void)ctx;
	assert_true(srv_n < SRV_Q);
	return srv_q[srv_n].buf;
}

static void srv_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	(void)sock;
	srv_q[srv_n].to = *to;
	srv_q[srv_n].len = len;
	srv_n++;
}

static void dial(void *ctx, size_t k, size_t line)
{
	(void)ctx;
	assert_int_equal(k, 0);
	assert_true(n_asks < MAX_ASKS);
	asks[n_asks++] = (struct ask){(int)line, now};
	if (line == 1 && quic_works) {
		quic_link = N.dev.io.link_open(N.dev.io.ctx);
		assert_true(quic_link > 0);
		assert_int_equal(
		    yip_device_server_link(&N.dev, now, 0, (uint32_t)quic_link, &srv_addr), 0);
	}
}

static void undial(void *ctx, size_t k)
{
	(void)ctx;
	assert_int_equal(k, 0);
	assert_true(n_asks < MAX_ASKS);
	asks[n_asks++] = (struct ask){-1, now};
}

/* UDP from the node never arrives; its QUIC link's datagrams do. */
static void run_net(void)
{
	for (int round = 0; round < 100; round++) {
		unsigned n = N.nout;

		pair_flush(&N);
		for (unsigned i = 0; i < n; i++) {
			const struct pair_dgram *d = &N.out[i];

			if (quic_link > 0 && d->sock == (uint32_t)quic_link)
				rdv_rx(&S, now, RDV_SOCK_STREAM, &quic_addr, d->buf, d->len);
		}
		N.nout = 0;
		for (unsigned i = 0; i < srv_n; i++)
			if (yip_sockaddr_eq(&srv_q[i].to, &quic_addr))
				yip_device_rx_link(&N.dev, now, (uint32_t)quic_link, &srv_addr,
				                   srv_q[i].buf, srv_q[i].len);
		if (n == 0 && srv_n == 0)
			return;
		srv_n = 0;
	}
	fail_msg("the network did not settle");
}

static void advance_to(double secs)
{
	uint64_t end = t0 + (uint64_t)(secs * 1e9);

	while (now < end) {
		now += 50 * YIP_NS_PER_MS;
		N.wall = PAIR_WALL_START + now;
		yip_device_timers(&N.dev, now);
		rdv_timers(&S, now);
		run_net();
	}
}

/* The node, with the server's lines: UDP (if udp), quic:// and tls://. */
static void node_start(bool udp)
{
	struct yip_config cfg;
	struct pair_opts o = {.out_cap = 1024, .discard_overflow = true, .extra_socks = 4};
	char err[256];
	size_t n = 0;

	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.private_key, node_key, YIP_KEY_LEN);
	yip_key_public(cfg.public_key, node_key);
	cfg.mtu = 1420;
	cfg.nat_keepalive = 20;
	if (udp) {
		cfg.rendezvous[n].addr = srv_addr;
		cfg.rendezvous[n++].transport = YIP_TRANSPORT_UDP;
	}
	cfg.rendezvous[n].addr = srv_addr;
	cfg.rendezvous[n++].transport = YIP_TRANSPORT_QUIC;
	cfg.rendezvous[n].addr = srv_addr;
	cfg.rendezvous[n++].transport = YIP_TRANSPORT_TLS;
	for (size_t i = 0; i < n; i++) {
		memcpy(cfg.rendezvous[i].public_key, srv_pub, YIP_KEY_LEN);
		cfg.rendezvous[i].has_key = true;
	}
	cfg.n_rendezvous = n;
	assert_int_equal(pair_node_init(&N, &cfg, NULL, &o, err, sizeof(err)), 0);
	N.addr = node_addr;
	N.wall = PAIR_WALL_START + now;
	N.dev.io.dial_server = dial;
	N.dev.io.undial_server = undial;
	t0 = now;
	yip_device_timers(&N.dev, now);
	run_net();
}

static int setup(void **state)
{
	struct rdv_io io = {NULL, srv_buf, srv_send};
	struct rdv_config c;
	char err[256];

	(void)state;
	yip_crypto_init();
	yip_key_generate(srv_priv);
	yip_key_public(srv_pub, srv_priv);
	yip_key_generate(node_key);
	set4(&srv_addr, "198.51.100.1", 7000);
	set4(&node_addr, "192.0.2.1", 51820);
	rdv_stream_addr(&quic_addr, RDV_QUIC_ID_BIT | 1);
	srv_q = calloc(SRV_Q, sizeof(*srv_q));
	assert_non_null(srv_q);
	srv_n = 0;
	n_asks = 0;
	quic_link = -1;
	now = YIP_NS_PER_S;
	rdv_config_default(&c);
	memcpy(c.private_key, srv_priv, YIP_KEY_LEN);
	assert_int_equal(rdv_init(&S, &c, &io, err, sizeof(err)), 0);
	rdv_clock(&S, now, UNIX_NOW);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pair_node_free(&N);
	rdv_free(&S);
	free(srv_q);
	quic_works = false;
	return 0;
}

static double secs(uint64_t at)
{
	return (double)(at - t0) / 1e9;
}

static const char *reason(void)
{
	struct yip_server_info si;

	assert_true(yip_device_server_info(&N.dev, 0, now, &si));
	return si.reason ? si.reason : "";
}

/* Nothing answers: QUIC at 2.5 s, then (the QUIC link let go) TLS 5 s later. */
static void udp_then_quic_then_tls(void **state)
{
	(void)state;
	node_start(true);
	advance_to(2.4);
	assert_int_equal(n_asks, 0);
	advance_to(2.7);
	if (n_asks != 1) {
		advance_to(10);
		for (unsigned i = 0; i < n_asks; i++)
			print_message("ask %d at %.2f\n", asks[i].line, secs(asks[i].at));
	}
	assert_int_equal(n_asks, 1);
	assert_int_equal(asks[0].line, 1); /* quic:// */
	assert_true(secs(asks[0].at) >= 2.5);
	advance_to(7.4);
	assert_int_equal(n_asks, 1);
	advance_to(8.0);
	if (n_asks != 3) {
		advance_to(20);
		for (unsigned i = 0; i < n_asks; i++)
			print_message("ask %d at %.2f\n", asks[i].line, secs(asks[i].at));
	}
	assert_int_equal(n_asks, 3);
	assert_int_equal(asks[1].line, -1); /* QUIC let go ... */
	assert_int_equal(asks[2].line, 2);  /* ... and TLS dialed */
	assert_true(secs(asks[2].at) - secs(asks[0].at) >= 5.0);
	assert_true(secs(asks[2].at) - secs(asks[0].at) < 5.2);
	advance_to(30);
	assert_int_equal(n_asks, 3); /* nothing more: TLS is the last way in */
}

/* QUIC answers: the node registers over it and never dials TLS. */
static void quic_answers(void **state)
{
	struct yip_server_info si;

	(void)state;
	quic_works = true;
	node_start(true);
	advance_to(20);
	assert_int_equal(n_asks, 1);
	assert_int_equal(asks[0].line, 1);
	assert_true(yip_device_server_info(&N.dev, 0, now, &si));
	assert_string_equal(si.state, "registered");
	assert_true(si.has_path);
	assert_int_equal(si.link, (uint32_t)quic_link);
	assert_string_equal(reason(), "udp to the server unanswered for 2.5 s");
}

/* No UDP line: QUIC at once, TLS 5 s later. */
static void no_udp_line(void **state)
{
	(void)state;
	node_start(false);
	advance_to(0.1);
	assert_int_equal(n_asks, 1);
	assert_int_equal(asks[0].line, 0); /* quic:// is line 0 now */
	advance_to(4.9);
	assert_int_equal(n_asks, 1);
	advance_to(5.3);
	assert_int_equal(n_asks, 3);
	assert_int_equal(asks[1].line, -1);
	assert_int_equal(asks[2].line, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(udp_then_quic_then_tls, setup, teardown),
	    cmocka_unit_test_setup_teardown(quic_answers, setup, teardown),
	    cmocka_unit_test_setup_teardown(no_udp_line, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
