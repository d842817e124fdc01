/*
 * yip_device_set_endpoint, what the daemon calls when a configured host
 * name resolves to a new address (two engines in memory, tests/lib/pair.h):
 * a peer that never answered at the old address is sought at the new one
 * at once; one that is answering stays where it is, with the new address
 * among its paths, until it falls silent; the same address twice changes
 * nothing; an index past the peers and servers is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "pair.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

#include "testpkt.h"

static struct pair P;
static struct pair_node *A, *B;

static void set_v4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

/* A minimal IPv4 packet from src to dst (protocol 253, for experiments). */
static size_t ip4(uint8_t *p, const char *src, const char *dst)
{
	return ip4_packet(p, 21, 253, src, dst);
}

static int setup(void **state)
{
	const struct pair_opts o = {.out_cap = 64, .keep_cap = 64};
	char err[256];

	(void)state;
	if (pair_init(&P, &o, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	A = &P.n[0];
	B = &P.n[1];
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pair_free(&P);
	return 0;
}

/* Only what is addressed to the other node arrives (the pair would deliver anything). */
static bool addressed(void *arg, const struct pair_dgram *d, unsigned i)
{
	(void)i;
	return yip_sockaddr_eq(&d->to, &((struct pair_node *)arg)->addr);
}

static void exchange(uint64_t now)
{
	for (int i = 0; i < 10 && (A->nout || B->nout); i++) {
		pair_pump(&P, 0, now, addressed, B);
		pair_pump(&P, 1, now, addressed, A);
	}
}

/* How many of A's paths to its peer lead to addr. */
static unsigned paths_to(const union yip_sockaddr *addr)
{
	const struct yip_peer *p = A->dev.peers[0];
	unsigned n = 0;

	for (unsigned i = 0; i < p->n_paths; i++)
		n +=
		    p->paths[i].kind == YIP_PATH_DIRECT && yip_sockaddr_eq(&p->paths[i].addr, addr);
	return n;
}

static void test_silent_peer_moves(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	union yip_sockaddr stale, fresh = B->addr;
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2");
	bool init_to_fresh = false;

	(void)state;
	/* The name first resolved to an address where B is not. */
	set_v4(&stale, "198.51.100.50", PAIR_PORT);
	assert_int_equal(yip_device_set_endpoint(&A->dev, now, A->dev.peers[0]->public_key, &stale),
	                 0);
	assert_true(yip_sockaddr_eq(&A->dev.peers[0]->endpoint, &stale));
	assert_int_equal(paths_to(&fresh), 0);
	yip_device_tx(&A->dev, now, pkt, len);
	assert_true(A->nout > 0);
	assert_true(yip_sockaddr_eq(&A->out[A->nout - 1].to, &stale));
	exchange(now); /* lost: nothing is at the stale address */
	assert_false(yip_peer_established(A->dev.peers[0], now));

	/* It now resolves to where B is: the retry goes there and the tunnel comes up. */
	now += YIP_NS_PER_S / 2;
	assert_int_equal(yip_device_set_endpoint(&A->dev, now, A->dev.peers[0]->public_key, &fresh),
	                 0);
	assert_true(yip_sockaddr_eq(&A->dev.peers[0]->endpoint, &fresh));
	assert_int_equal(paths_to(&stale), 0);
	for (int i = 0; i < 20 && !yip_peer_established(A->dev.peers[0], now); i++) {
		now += YIP_NS_PER_S / 2;
		yip_device_timers(&A->dev, now);
		for (unsigned k = 0; k < A->nout; k++)
			init_to_fresh |= yip_sockaddr_eq(&A->out[k].to, &fresh);
		exchange(now);
	}
	assert_true(init_to_fresh);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	/* The packet that waited for the handshake arrived. */
	assert_true(B->ndelivered >= 1);
}

static void test_answering_peer_stays(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	union yip_sockaddr here = B->addr, elsewhere;
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2");

	(void)state;
	yip_device_tx(&A->dev, now, pkt, len);
	exchange(now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	set_v4(&elsewhere, "198.51.100.60", PAIR_PORT);
	assert_int_equal(
	    yip_device_set_endpoint(&A->dev, now, A->dev.peers[0]->public_key, &elsewhere), 0);
	/* B answered here a moment ago: traffic keeps going here. */
	assert_true(yip_sockaddr_eq(&A->dev.peers[0]->endpoint, &here));
	assert_int_equal(paths_to(&elsewhere), 1);
	assert_int_equal(paths_to(&here), 1);
	yip_device_tx(&A->dev, now, pkt, len);
	assert_true(A->nout > 0);
	assert_true(yip_sockaddr_eq(&A->out[A->nout - 1].to, &here));
	exchange(now);
	/* The same answer again changes nothing. */
	assert_int_equal(
	    yip_device_set_endpoint(&A->dev, now, A->dev.peers[0]->public_key, &elsewhere), 0);
	assert_int_equal(paths_to(&elsewhere), 1);
	/* No such peer, no such server (one peer, no rendezvous servers). */
	assert_int_equal(yip_device_set_endpoint(&A->dev, now, A->dev.public_key, &elsewhere), -1);
	assert_int_equal(yip_device_set_server_endpoint(&A->dev, now, 0, &elsewhere), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_silent_peer_moves, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_answering_peer_stays, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
