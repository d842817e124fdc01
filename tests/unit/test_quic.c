/*
 * src/quic: a client and a server connection in memory, packets handed
 * across by the test with its own clock; loss by dropping packets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "quic/conn.h"

#define MS (1000ULL * 1000)

struct got {
	unsigned n;
	size_t bytes;
	uint8_t last[2048];
	size_t last_len;
};

static void on_dgram(void *user, struct quic_conn *c, const uint8_t *p, size_t len)
{
	struct got *g = user;

	(void)c;
	g->n++;
	g->bytes += len;
	if (len <= sizeof g->last) {
		memcpy(g->last, p, len);
		g->last_len = len;
	}
}

struct world {
	struct quic_server *srv;
	struct quic_conn *cli, *sc; /* sc: the server's end */
	union yip_sockaddr caddr, saddr;
	uint64_t now;
	struct got cgot, sgot;
	unsigned drop_every; /* drop one packet in n each way, at random; 0: none */
	unsigned count;
	int gone;
	/* Packets in flight, each way: delivered one-way delay after sent. */
	struct {
		uint8_t p[QUIC_PKT_MAX];
		size_t len;
		bool to_srv;
		uint64_t at;
	} q[1024];
	unsigned qh, qt;
	uint64_t delay;
};

static void on_gone(void *arg, struct quic_conn *c)
{
	struct world *w = arg;

	if (c == w->sc)
		w->sc = NULL;
	w->gone++;
}

static void addr(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof *a);
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static bool lose(struct world *w)
{
	/* A fixed pseudo-random sequence (not a period, which can line up with one direction). */
	w->count = w->count * 1103515245u + 12345u;
	return w->drop_every != 0 && (w->count >> 16) % w->drop_every == 0;
}

static void deliver(struct world *w, bool to_srv, const uint8_t *p, size_t n);

/* Puts a packet on the wire: lost, or delivered after the delay (at once without one). */
static void wire(struct world *w, bool to_srv, const uint8_t *p, size_t n)
{
	if (lose(w))
		return;
	if (w->delay == 0) {
		deliver(w, to_srv, p, n);
		return;
	}
	assert_true(w->qt - w->qh < 1024);
	memcpy(w->q[w->qt % 1024].p, p, n);
	w->q[w->qt % 1024].len = n;
	w->q[w->qt % 1024].to_srv = to_srv;
	w->q[w->qt % 1024].at = w->now + w->delay;
	w->qt++;
}

static void to_server(struct world *w, const uint8_t *p, size_t n)
{
	struct quic_conn *c;
	uint8_t reply[QUIC_PKT_MAX];
	size_t rl;

	quic_server_read(w->srv, p, n, &w->saddr, &w->caddr, w->now, &c, reply, sizeof reply, &rl);
	if (c != NULL)
		w->sc = c;
}

static void deliver(struct world *w, bool to_srv, const uint8_t *p, size_t n)
{
	if (to_srv)
		to_server(w, p, n);
	else if (w->cli != NULL)
		quic_conn_read(w->cli, p, n, &w->saddr, w->now);
}

/* Moves every packet waiting on both ends, and runs timers; a few rounds. */
static void pump(struct world *w, int rounds)
{
	uint8_t pkt[QUIC_PKT_MAX];
	size_t n;

	for (int r = 0; r < rounds; r++) {
		w->now += 1 * MS;
		while (w->qh != w->qt && w->q[w->qh % 1024].at <= w->now) {
			deliver(w, w->q[w->qh % 1024].to_srv, w->q[w->qh % 1024].p,
			        w->q[w->qh % 1024].len);
			w->qh++;
		}
		if (w->cli != NULL && quic_conn_expiry(w->cli) <= w->now)
			quic_conn_expire(w->cli, w->now);
		quic_server_expire(w->srv, w->now);
		while (w->cli != NULL && (n = quic_conn_write(w->cli, pkt, sizeof pkt, w->now)) > 0)
			wire(w, true, pkt, n);
		if (w->sc != NULL)
			while ((n = quic_conn_write(w->sc, pkt, sizeof pkt, w->now)) > 0)
				wire(w, false, pkt, n);
	}
}

static void setup(struct world *w, unsigned drop_every, uint64_t delay)
{
	struct quic_server_config sc = {
	    .self_name = "example.org",
	    .gone = on_gone,
	    .recv = on_dgram,
	};
	struct quic_dial_config dc = {.sni = "www.example.org"};
	char err[256] = "";

	memset(w, 0, sizeof *w);
	sc.gone_arg = w;
	sc.recv_user = &w->sgot;
	w->now = 1000 * MS;
	w->drop_every = drop_every;
	w->delay = delay;
	addr(&w->caddr, "192.0.2.1", 50000);
	addr(&w->saddr, "192.0.2.2", 443);
	w->srv = quic_server_new(&sc, err, sizeof err);
	assert_non_null(w->srv);
	w->cli = quic_conn_dial(&dc, &w->caddr, &w->saddr, w->now, err, sizeof err);
	assert_non_null(w->cli);
	quic_conn_set_recv(w->cli, on_dgram, &w->cgot);
}

static void teardown(struct world *w)
{
	quic_conn_free(w->cli);
	quic_server_free(w->srv);
}

/* Sends one datagram from c; the packet is handed across (or lost). true if carried. */
static bool send_one(struct world *w, struct quic_conn *c, const uint8_t *d, size_t len)
{
	uint8_t pkt[QUIC_PKT_MAX];
	bool carried = false;
	size_t n;

	for (int i = 0; i < 4 && !carried; i++) {
		n = quic_conn_send_datagram(c, d, len, pkt, sizeof pkt, w->now, &carried);
		if (n == 0)
			return false;
		wire(w, c == w->cli, pkt, n);
	}
	return carried;
}

static void test_handshake_and_datagrams(void **state)
{
	static struct world w;
	struct quic_conn_info ci, si;
	uint8_t d[1500];
	size_t max;

	(void)state;
	setup(&w, 0, 0);
	pump(&w, 10);
	assert_int_equal(quic_conn_state(w.cli), QUIC_CONN_OPEN);
	assert_non_null(w.sc);
	assert_int_equal(quic_conn_state(w.sc), QUIC_CONN_OPEN);
	quic_conn_info(w.cli, &ci);
	quic_conn_info(w.sc, &si);
	assert_string_equal(ci.version, "QUICv1");
	assert_string_equal(ci.alpn, "h3");
	assert_string_equal(si.alpn, "h3");
	assert_string_equal(si.sni, "www.example.org");
	assert_non_null(strstr(ci.cipher, "TLS_"));
	assert_string_equal(ci.cipher, si.cipher);
	assert_false(ci.server);
	assert_true(si.server);

	max = quic_conn_dgram_max(w.cli);
	assert_int_equal(max, QUIC_PKT_MAX - 32);
	assert_int_equal(quic_conn_dgram_max(w.sc), max);
	for (size_t i = 0; i < sizeof d; i++)
		d[i] = (uint8_t)(i * 7);
	/* Both ways, of every size up to the largest. */
	for (size_t len = 1; len <= max; len += 97) {
		assert_true(send_one(&w, w.cli, d, len));
		assert_int_equal(w.sgot.last_len, len);
		assert_memory_equal(w.sgot.last, d, len);
		assert_true(send_one(&w, w.sc, d, len));
		assert_int_equal(w.cgot.last_len, len);
		assert_memory_equal(w.cgot.last, d, len);
		pump(&w, 1);
	}
	assert_true(send_one(&w, w.cli, d, max));
	assert_int_equal(w.sgot.last_len, max);
	/* One byte more does not fit: refused and counted. */
	{
		struct quic_conn_stats st;
		uint8_t pkt[QUIC_PKT_MAX];
		bool carried;

		assert_int_equal(
		    quic_conn_send_datagram(w.cli, d, max + 1, pkt, sizeof pkt, w.now, &carried),
		    0);
		quic_conn_stats(w.cli, &st);
		assert_int_equal(st.dgram_too_big, 1);
	}
	quic_conn_close(w.cli, w.now);
	assert_int_equal(quic_conn_state(w.cli), QUIC_CONN_DONE);
	assert_string_equal(quic_conn_why(w.cli), "closed");
	pump(&w, 3);
	/* The server saw the CONNECTION_CLOSE and freed its end. */
	assert_null(w.sc);
	assert_int_equal(w.gone, 1);
	teardown(&w);
}

static void test_loss(void **state)
{
	static struct world w;
	uint8_t d[1000];
	unsigned sent = 0;

	(void)state;
	memset(d, 0xab, sizeof d);
	/* One packet in 6 lost, each way, handshake included; 10 ms each way. */
	setup(&w, 6, 10 * MS);
	for (int i = 0; i < 200 && (quic_conn_state(w.cli) != QUIC_CONN_OPEN || w.sc == NULL ||
	                            quic_conn_state(w.sc) != QUIC_CONN_OPEN);
	     i++)
		pump(&w, 50);
	assert_int_equal(quic_conn_state(w.cli), QUIC_CONN_OPEN);
	assert_int_equal(quic_conn_state(w.sc), QUIC_CONN_OPEN);
	for (int i = 0; i < 300; i++) {
		sent += send_one(&w, w.cli, d, sizeof d);
		pump(&w, 1);
	}
	/* Datagrams are not retransmitted: about 5/6 arrive; the connection lives
	 * (and congestion control blocks some sends while its window grows). */
	assert_true(sent > 200);
	assert_true(w.sgot.n > sent * 7 / 10);
	assert_true(w.sgot.n < sent);
	assert_int_equal(quic_conn_state(w.cli), QUIC_CONN_OPEN);
	teardown(&w);
}

static void test_junk_and_small_initial(void **state)
{
	static struct world w;
	const struct quic_server_stats *st;
	uint8_t pkt[QUIC_PKT_MAX], reply[QUIC_PKT_MAX];
	struct quic_conn *c;
	size_t n, rl;

	(void)state;
	setup(&w, 0, 0);
	st = quic_server_stats(w.srv);
	/* Too short to be QUIC at all. */
	quic_server_read(w.srv, (const uint8_t *)"\x40", 1, &w.saddr, &w.caddr, w.now, &c, reply,
	                 sizeof reply, &rl);
	assert_null(c);
	assert_int_equal(st->drop_short, 1);
	/* A short header for no connection. */
	memset(pkt, 0x41, 64);
	quic_server_read(w.srv, pkt, 64, &w.saddr, &w.caddr, w.now, &c, reply, sizeof reply, &rl);
	assert_null(c);
	assert_int_equal(st->drop_unknown, 1);

	/* The client's real Initial, cut below 1200 bytes: refused. */
	n = quic_conn_write(w.cli, pkt, sizeof pkt, w.now);
	assert_true(n >= QUIC_INITIAL_MIN);
	quic_server_read(w.srv, pkt, 1100, &w.saddr, &w.caddr, w.now, &c, reply, sizeof reply, &rl);
	assert_null(c);
	assert_int_equal(st->drop_small, 1);
	assert_int_equal(st->conns, 0);

	/* Another version: a version negotiation packet, no larger than the packet. */
	{
		uint8_t v2[1200];

		memcpy(v2, pkt, sizeof v2);
		v2[1] = 0x1a, v2[2] = 0x2a, v2[3] = 0x3a, v2[4] = 0x4a;
		quic_server_read(w.srv, v2, sizeof v2, &w.saddr, &w.caddr, w.now, &c, reply,
		                 sizeof reply, &rl);
		assert_null(c);
		assert_int_equal(st->drop_version, 1);
		assert_int_equal(st->vn_sent, 1);
		assert_true(rl > 0 && rl < sizeof v2);
		/* ... but not to one too small to be a client's first flight. */
		quic_server_read(w.srv, v2, 600, &w.saddr, &w.caddr, w.now, &c, reply, sizeof reply,
		                 &rl);
		assert_int_equal(rl, 0);
		assert_int_equal(st->vn_sent, 1);
		assert_int_equal(st->drop_short + st->drop_vn_limited, 2);
	}

	/* The whole Initial makes a connection, and the handshake completes. */
	quic_server_read(w.srv, pkt, n, &w.saddr, &w.caddr, w.now, &c, reply, sizeof reply, &rl);
	assert_non_null(c);
	w.sc = c;
	assert_int_equal(st->accepted, 1);
	pump(&w, 10);
	assert_int_equal(quic_conn_state(w.cli), QUIC_CONN_OPEN);
	/* Junk on the connection's CID is dropped by the connection and counted. */
	{
		struct quic_conn_stats cs0, cs1;
		uint8_t d[8] = "datagram";
		bool carried;

		quic_conn_stats(w.sc, &cs0);
		/* The first packet may be the keep stream's (conn.c): delivered. */
		n = quic_conn_send_datagram(w.cli, d, sizeof d, pkt, sizeof pkt, w.now, &carried);
		if (n > 0 && !carried) {
			to_server(&w, pkt, n);
			quic_conn_stats(w.sc, &cs0);
			n = quic_conn_send_datagram(w.cli, d, sizeof d, pkt, sizeof pkt, w.now,
			                            &carried);
		}
		assert_true(n > 20 && carried);
		pkt[n - 1] ^= 1; /* the AEAD tag */
		to_server(&w, pkt, n);
		quic_conn_stats(w.sc, &cs1);
		assert_int_equal(cs1.pkts_in, cs0.pkts_in + 1);
		assert_int_equal(cs1.dgrams_in, cs0.dgrams_in);
		assert_int_equal(quic_conn_state(w.sc), QUIC_CONN_OPEN);
	}
	teardown(&w);
}

static void test_limits(void **state)
{
	struct quic_server_config sc = {.max_per_source = 2};
	struct quic_dial_config dc = {.sni = "a"};
	union yip_sockaddr ca, sa;
	struct quic_server *srv;
	struct quic_conn *cli[3], *c;
	uint8_t pkt[QUIC_PKT_MAX], reply[64];
	char err[256];
	size_t n, rl;

	(void)state;
	addr(&ca, "192.0.2.1", 50000);
	addr(&sa, "192.0.2.2", 443);
	srv = quic_server_new(&sc, err, sizeof err);
	assert_non_null(srv);
	for (int i = 0; i < 3; i++) {
		cli[i] = quic_conn_dial(&dc, &ca, &sa, 1000 * MS, err, sizeof err);
		assert_non_null(cli[i]);
		n = quic_conn_write(cli[i], pkt, sizeof pkt, 1000 * MS);
		quic_server_read(srv, pkt, n, &sa, &ca, 1000 * MS, &c, reply, sizeof reply, &rl);
		if (i < 2)
			assert_non_null(c);
		else
			assert_null(c);
	}
	assert_int_equal(quic_server_stats(srv)->drop_per_source, 1);
	assert_int_equal(quic_server_stats(srv)->handshakes, 2);
	/* Idle handshakes time out and are freed. */
	quic_server_expire(srv, 1000 * MS + 60ULL * 1000 * MS);
	assert_int_equal(quic_server_stats(srv)->conns, 0);
	assert_int_equal(quic_server_stats(srv)->handshakes, 0);
	assert_int_equal(quic_server_stats(srv)->expired, 2);
	for (int i = 0; i < 3; i++)
		quic_conn_free(cli[i]);
	quic_server_free(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_handshake_and_datagrams),
	    cmocka_unit_test(test_loss),
	    cmocka_unit_test(test_junk_and_small_initial),
	    cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
