/*
 * yip-rendezvous's QUIC listener (src/rdvloop/quic.c) on real loopback
 * sockets: a QUIC client (src/quic) dials it, and a node in miniature
 * (tests/lib/rdvclient.h) runs its Noise handshake and REGISTER with a
 * real server engine inside DATAGRAM frames. The server must answer in
 * DATAGRAM frames on the same connection, know the node as a QUIC one,
 * count it, and forget its address when the connection goes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl/rendezvous.h"
#include "quic/conn.h"
#include "rdvclient.h"
#include "rdvloop/quic.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"

static struct rdv_server S;
static struct rdv_quic *Q;
static uint8_t srv_pub[YIP_KEY_LEN], sbuf[RDV_MAX_DGRAM];
static unsigned stream_sends, other_sends;

/* The engine's sends: to a QUIC node by the listener, as the loop does. */
static uint8_t *srv_buf(void *ctx)
{
	(void)ctx;
	return sbuf;
}

static void srv_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	if (sock == RDV_SOCK_STREAM && rdv_is_quic_addr(to)) {
		stream_sends++;
		rdv_quic_send(Q, to, sbuf, len);
	} else {
		other_sends++;
	}
}

/* What the client received in DATAGRAM frames. */
static struct {
	unsigned n;
	uint8_t d[8][1500];
	size_t len[8];
} got;

static void on_dgram(void *user, struct quic_conn *c, const uint8_t *p, size_t len)
{
	(void)user;
	(void)c;
	if (got.n < 8 && len <= sizeof(got.d[0])) {
		memcpy(got.d[got.n], p, len);
		got.len[got.n++] = len;
	}
}

static int cfd = -1;
static struct quic_conn *C;
static union yip_sockaddr srv_addr;

static void client_flush(uint64_t now)
{
	uint8_t pkt[QUIC_PKT_MAX];
	size_t n;

	while ((n = quic_conn_write(C, pkt, sizeof(pkt), now)) > 0)
		assert_true(send(cfd, pkt, n, 0) == (ssize_t)n);
}

/* Moves packets both ways for up to ms, or until done() holds. */
static void pump(unsigned ms, bool (*done)(void))
{
	uint64_t end = yip_now_mono() + (uint64_t)ms * YIP_NS_PER_MS;
	uint8_t pkt[2048];

	while (yip_now_mono() < end && (done == NULL || !done())) {
		uint64_t now = yip_now_mono();
		ssize_t n;

		client_flush(now);
		usleep(1000);
		now = yip_now_mono();
		rdv_quic_readable(Q, now);
		if (now >= rdv_quic_expiry(Q))
			rdv_quic_timers(Q, now);
		while ((n = recv(cfd, pkt, sizeof(pkt), MSG_DONTWAIT)) > 0)
			quic_conn_read(C, pkt, (size_t)n, NULL, now);
		if (now >= quic_conn_expiry(C))
			quic_conn_expire(C, now);
	}
}

static bool open_(void)
{
	return quic_conn_state(C) == QUIC_CONN_OPEN;
}

static bool got_one(void)
{
	return got.n > 0;
}

static void send_dgram(const uint8_t *d, size_t len)
{
	uint8_t pkt[QUIC_PKT_MAX];
	bool carried = false;

	for (int i = 0; i < 4 && !carried; i++) {
		size_t n =
		    quic_conn_send_datagram(C, d, len, pkt, sizeof(pkt), yip_now_mono(), &carried);

		if (n == 0)
			break;
		assert_true(send(cfd, pkt, n, 0) == (ssize_t)n);
	}
	assert_true(carried);
}

static void listen_and_dial(void)
{
	struct quic_dial_config dc = {.sni = "www.example.org"};
	union yip_sockaddr local;
	socklen_t len = sizeof(srv_addr);
	char err[256] = "";
	int sfd;

	memset(&srv_addr, 0, sizeof(srv_addr));
	srv_addr.in4.sin_family = AF_INET;
	srv_addr.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sfd = rdv_quic_listen(&srv_addr, err, sizeof(err));
	assert_true(sfd >= 0);
	assert_int_equal(getsockname(sfd, &srv_addr.sa, &len), 0);
	Q = rdv_quic_new(&(struct rdv_quic_config){.fd = sfd, .listen = srv_addr}, &S, err,
	                 sizeof(err));
	if (Q == NULL)
		fail_msg("%s", err);
	cfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	assert_true(cfd >= 0);
	assert_int_equal(connect(cfd, &srv_addr.sa, sizeof(srv_addr.in4)), 0);
	len = sizeof(local);
	assert_int_equal(getsockname(cfd, &local.sa, &len), 0);
	C = quic_conn_dial(&dc, &local, &srv_addr, yip_now_mono(), err, sizeof(err));
	if (C == NULL)
		fail_msg("%s", err);
	quic_conn_set_recv(C, on_dgram, NULL);
}

static int setup(void **state)
{
	struct rdv_io io = {NULL, srv_buf, srv_send};
	struct rdv_config c;
	uint8_t priv[YIP_KEY_LEN];
	char err[256];

	(void)state;
	yip_crypto_init();
	yip_key_generate(priv);
	yip_key_public(srv_pub, priv);
	rdv_config_default(&c);
	memcpy(c.private_key, priv, YIP_KEY_LEN);
	assert_int_equal(rdv_init(&S, &c, &io, err, sizeof(err)), 0);
	rdv_clock(&S, yip_now_mono(), (uint64_t)time(NULL));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	quic_conn_free(C);
	rdv_quic_free(Q);
	rdv_free(&S);
	if (cfd >= 0)
		close(cfd);
	return 0;
}

/* A node over QUIC: handshake, REGISTER, REGISTERED, all in DATAGRAM frames. */
static void node_over_quic(void **state)
{
	struct yip_rdv_status st = {.srv = &S};
	struct rdvc node;
	struct wire_ctrl m = {.kind = WIRE_CTRL_REGISTER};
	uint8_t init[WIRE_INIT_LEN], buf[512];
	size_t n, rlen;
	char *reply;

	(void)state;
	listen_and_dial();
	pump(3000, open_);
	assert_int_equal(quic_conn_state(C), QUIC_CONN_OPEN);
	assert_int_equal(rdv_quic_status(Q)->open, 1);
	assert_int_equal(rdv_quic_status(Q)->yip_conns, 0);

	rdvc_init(&node, NULL, "127.0.0.1", 1);
	n = rdvc_init_msg(&node, srv_pub, (uint64_t)time(NULL) * YIP_NS_PER_S,
	                  YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305), init);
	assert_int_equal(n, WIRE_INIT_LEN);
	send_dgram(init, n);
	pump(2000, got_one);
	assert_int_equal(got.n, 1);
	assert_true(rdvc_resp(&node, got.d[0], got.len[0]));
	assert_int_equal(rdv_quic_status(Q)->yip_conns, 1);

	got.n = 0;
	n = rdvc_seal_ctrl(&node, &m, buf);
	assert_true(n > 0);
	send_dgram(buf, n);
	pump(2000, got_one);
	assert_true(got.n >= 1);
	assert_true(rdvc_open(&node, got.d[0], got.len[0], &m));
	assert_int_equal(m.kind, WIRE_CTRL_REGISTERED);
	assert_true(node.registered);
	assert_int_equal(other_sends, 0); /* nothing went by UDP */
	assert_true(stream_sends >= 2);
	assert_true(rdv_quic_status(Q)->dgrams_in >= 2);
	assert_true(rdv_quic_status(Q)->dgrams_out >= 2);

	/* The server knows the node as one on QUIC. */
	st.quic = rdv_quic_status(Q);
	reply = yip_rdv_ctl_reply(&st, "show", 4, &rlen);
	assert_non_null(reply);
	assert_non_null(strstr(reply, "\"via\":\"quic\""));
	assert_non_null(strstr(reply, "\"quic\":{"));
	free(reply);

	/* The connection goes: the node's address is stale. */
	rdv_quic_free(Q);
	Q = NULL;
	assert_int_equal(S.stats.streams_gone, 1);
	rdvc_wipe(&node);
}

/* A send for a connection that is not there is dropped and counted. */
static void stale_send(void **state)
{
	union yip_sockaddr a;
	uint8_t d[64] = {0};

	(void)state;
	listen_and_dial();
	rdv_stream_addr(&a, RDV_QUIC_ID_BIT | 1ULL << 32 | 7);
	rdv_quic_send(Q, &a, d, sizeof(d));
	assert_int_equal(rdv_quic_status(Q)->dgram_stale, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(node_over_quic, setup, teardown),
	    cmocka_unit_test_setup_teardown(stale_send, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
