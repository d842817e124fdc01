/*
 * Peers set and removed at run time (yip_device_peer_set,
 * yip_device_peer_remove) on a live pair of engines (tests/lib/pair.h): a
 * configured peer is added, its allowed IPs and its endpoint change, and it
 * is removed, while the session of the peer nobody touched keeps its keys,
 * counters and receiver index and carries traffic both ways throughout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sodium.h>
#include <string.h>

#include "pair.h"
#include "peer/internal.h" /* the session to compare, index_find */
#include "util/clock.h"

static const struct yip_timing timing = {
    .rekey_after = 120 * YIP_NS_PER_S,
    .reject_after = 180 * YIP_NS_PER_S,
    .rekey_attempt = 90 * YIP_NS_PER_S,
    .retry_base = YIP_NS_PER_S,
    .retry_max = 8 * YIP_NS_PER_S,
    .keepalive = 10 * YIP_NS_PER_S,
    .dead_after = 15 * YIP_NS_PER_S,
    .prev_overlap = 15 * YIP_NS_PER_S,
};

static struct pair P;
static struct pair_node *A, *B;

static void set_v4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void set_cidr(struct yip_cidr *c, const char *ip, unsigned plen)
{
	memset(c, 0, sizeof(*c));
	c->family = AF_INET;
	c->plen = (uint8_t)plen;
	inet_pton(AF_INET, ip, c->addr);
}

/* A minimal IPv4 packet from src to dst with a one-byte marker payload. */
static size_t ip4(uint8_t *p, const char *src, const char *dst, uint8_t marker)
{
	memset(p, 0, 21);
	p[0] = 0x45;
	p[3] = 21;
	p[8] = 64;
	p[9] = 253;
	inet_pton(AF_INET, src, p + 12);
	inet_pton(AF_INET, dst, p + 16);
	p[20] = marker;
	return 21;
}

/* A packet from A to B and one back; both must arrive. */
static void ping(uint64_t now, uint8_t marker)
{
	uint64_t a = A->packets, b = B->packets;
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", marker);

	yip_device_tx(&A->dev, now, pkt, len);
	pair_settle(&P, now);
	len = ip4(pkt, "10.0.0.2", "10.0.0.1", marker);
	yip_device_tx(&B->dev, now, pkt, len);
	pair_settle(&P, now);
	assert_int_equal(B->packets, b + 1);
	assert_int_equal(A->packets, a + 1);
}

/* What must not change of a session: its keys, counters, indices, replay window. */
struct session_copy {
	struct yip_keypair kp;
	const struct yip_keypair *where;
	struct yip_peer_stats stats;
};

static void session_take(struct session_copy *c, const struct yip_peer *p)
{
	assert_non_null(p->cur);
	c->kp = *p->cur;
	c->where = p->cur;
	c->stats = p->stats;
}

static void session_same_at(const struct session_copy *c, const struct yip_peer *p, int line)
{
	if (p->cur != c->where || memcmp(p->cur, &c->kp, sizeof(c->kp)) != 0)
		fail_msg("the session changed (line %d)", line);
	assert_memory_equal(&p->stats, &c->stats, sizeof(c->stats));
	assert_ptr_equal(index_find(p->dev, c->kp.local_index), p);
}

static uint64_t drops(const struct pair_node *n, enum yip_drop d)
{
	struct yip_device_info di;

	yip_device_info(&n->dev, &di);
	return di.drops[d];
}

/* How many datagrams A sent to addr since the last discard. */
static unsigned sent_to(const union yip_sockaddr *addr)
{
	unsigned n = 0;

	for (unsigned i = 0; i < A->nout; i++)
		n += yip_sockaddr_eq(&A->out[i].to, addr);
	return n;
}

/* peer_info of the peer with key pub on A. */
static bool info_of(const uint8_t pub[YIP_KEY_LEN], uint64_t now, struct yip_peer_info *out)
{
	for (size_t i = 0; yip_device_peer_info(&A->dev, i, now, out); i++)
		if (memcmp(out->public_key, pub, YIP_KEY_LEN) == 0)
			return true;
	return false;
}

#define session_same(c, p) session_same_at(c, p, __LINE__)

static int setup(void **state)
{
	const struct pair_opts o = {.timing = &timing, .out_cap = 64};
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

static void test_set_and_remove(void **state)
{
	struct yip_peer_config pc = {0};
	struct yip_cidr c5, c6, b_addr;
	union yip_sockaddr ep1, ep2;
	struct session_copy ab, ba;
	struct yip_peer_info pi;
	struct yip_peer *pb, *pa, *c;
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN], pkt[64];
	uint64_t now = YIP_NS_PER_S, held, no_route;
	uint32_t c_index;
	size_t n_peers;
	char err[256];

	(void)state;
	/* A session between A and B. */
	ping(now, 1);
	pb = yip_device_peer(&A->dev, P.n[1].dev.public_key);
	pa = yip_device_peer(&B->dev, P.n[0].dev.public_key);
	assert_true(yip_peer_established(pb, now) && yip_peer_established(pa, now));
	session_take(&ab, pb);
	session_take(&ba, pa);
	n_peers = A->dev.n_peers;
	held = A->dev.keys.held;

	/* A new key adds a configured peer: its endpoint and allowed IPs. */
	yip_key_generate(priv);
	yip_key_public(pub, priv);
	memcpy(pc.public_key, pub, YIP_KEY_LEN);
	set_v4(&ep1, "198.51.100.7", PAIR_PORT);
	set_cidr(&c5, "10.5.0.0", 16);
	pc.has_endpoint = true;
	pc.endpoint = ep1;
	pc.allowed_ips = &c5;
	pc.n_allowed_ips = 1;
	assert_int_equal(yip_device_peer_set(&A->dev, now, &pc,
	                                     YIP_PEER_SET_ENDPOINT | YIP_PEER_SET_ALLOWED_IPS, err,
	                                     sizeof(err)),
	                 0);
	c = yip_device_peer(&A->dev, pub);
	assert_non_null(c);
	assert_true(c->configured);
	assert_int_equal(A->dev.n_peers, n_peers + 1);
	assert_true(info_of(pub, now, &pi));
	assert_false(pi.dynamic);
	assert_int_equal(pi.n_allowed, 1);
	assert_memory_equal(&pi.allowed[0], &c5, sizeof(c5));
	/* Traffic for 10.5/16 goes to it: a handshake to its endpoint. */
	pair_discard(A);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, "10.0.0.1", "10.5.1.1", 2));
	assert_true(sent_to(&ep1) >= 1);
	assert_true(c->hs_pending);
	c_index = c->hs_index;
	assert_ptr_equal(index_find(&A->dev, c_index), c);
	pair_discard(A);
	session_same(&ab, pb);

	/* Its allowed IPs change; its endpoint (not given) stays. */
	set_cidr(&c6, "10.6.0.0", 16);
	pc.allowed_ips = &c6;
	pc.has_endpoint = false;
	assert_int_equal(
	    yip_device_peer_set(&A->dev, now, &pc, YIP_PEER_SET_ALLOWED_IPS, err, sizeof(err)), 0);
	assert_true(info_of(pub, now, &pi));
	assert_int_equal(pi.n_allowed, 1);
	assert_memory_equal(&pi.allowed[0], &c6, sizeof(c6));
	assert_true(pi.has_endpoint && yip_sockaddr_eq(&pi.endpoint, &ep1));
	no_route = drops(A, YIP_DROP_NO_ROUTE);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, "10.0.0.1", "10.5.1.1", 3));
	assert_int_equal(drops(A, YIP_DROP_NO_ROUTE), no_route + 1);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, "10.0.0.1", "10.6.1.1", 4));
	assert_int_equal(drops(A, YIP_DROP_NO_ROUTE), no_route + 1);
	/* A prefix B holds is refused, and C keeps what it had. */
	b_addr = (struct yip_cidr){0};
	set_cidr(&b_addr, "10.0.0.2", 32);
	pc.allowed_ips = &b_addr;
	assert_int_equal(
	    yip_device_peer_set(&A->dev, now, &pc, YIP_PEER_SET_ALLOWED_IPS, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "claimed by two peers"));
	assert_true(info_of(pub, now, &pi));
	assert_memory_equal(&pi.allowed[0], &c6, sizeof(c6));
	pair_discard(A);
	session_same(&ab, pb);

	/* Its endpoint changes; its allowed IPs (not given) stay. */
	set_v4(&ep2, "198.51.100.8", PAIR_PORT);
	pc.has_endpoint = true;
	pc.endpoint = ep2;
	pc.allowed_ips = NULL;
	pc.n_allowed_ips = 0;
	assert_int_equal(
	    yip_device_peer_set(&A->dev, now, &pc, YIP_PEER_SET_ENDPOINT, err, sizeof(err)), 0);
	assert_true(info_of(pub, now, &pi));
	assert_int_equal(pi.n_paths, 1); /* the old one never answered: gone */
	assert_true(pi.has_endpoint && yip_sockaddr_eq(&pi.endpoint, &ep2));
	assert_int_equal(pi.n_allowed, 1);
	assert_memory_equal(&pi.allowed[0], &c6, sizeof(c6));
	/* The new address is its current path: what it is sent next goes there. */
	assert_true(c->path >= 0 && yip_sockaddr_eq(&c->paths[c->path].addr, &ep2));
	session_same(&ab, pb);

	/* Removed: its handshake's slot and index go, and so do its routes. */
	assert_int_equal(yip_device_peer_remove(&A->dev, c), 0);
	assert_null(yip_device_peer(&A->dev, pub));
	assert_int_equal(A->dev.n_peers, n_peers);
	assert_int_equal(A->dev.keys.held, held);
	assert_null(index_find(&A->dev, c_index));
	no_route = drops(A, YIP_DROP_NO_ROUTE);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, "10.0.0.1", "10.6.1.1", 5));
	assert_int_equal(drops(A, YIP_DROP_NO_ROUTE), no_route + 1);
	assert_int_equal(A->nout, 0);
	session_same(&ab, pb);
	session_same(&ba, pa);

	/* The same session carries traffic both ways, one counter further each. */
	ping(now + 2 * YIP_NS_PER_S, 6);
	assert_ptr_equal(pb->cur, ab.where);
	assert_int_equal(pb->cur->local_index, ab.kp.local_index);
	assert_int_equal(pb->cur->remote_index, ab.kp.remote_index);
	assert_memory_equal(&pb->cur->send, &ab.kp.send, sizeof(ab.kp.send));
	assert_memory_equal(&pb->cur->recv, &ab.kp.recv, sizeof(ab.kp.recv));
	assert_int_equal(pb->cur->send_counter, ab.kp.send_counter + 1);
	assert_int_equal(pa->cur->send_counter, ba.kp.send_counter + 1);
	assert_int_equal(pb->stats.handshakes, ab.stats.handshakes);
	sodium_memzero(priv, sizeof(priv));
}

/* A configured peer from the start is removed and set again: a new peer
 * with the same key, nothing left of the old one; a member added at run
 * time is not a configured peer to set. */
static void test_remove_configured(void **state)
{
	struct yip_peer_config pc = {0};
	struct yip_cidr b_addr;
	struct yip_peer *pb;
	uint64_t now = YIP_NS_PER_S;
	char err[256];

	(void)state;
	ping(now, 1);
	pb = yip_device_peer(&A->dev, P.n[1].dev.public_key);
	assert_non_null(pb);
	assert_int_equal(yip_device_peer_remove(&A->dev, pb), 0);
	assert_int_equal(A->dev.n_peers, 0);
	assert_int_equal(A->dev.keys.held, 0);
	/* B's next datagram under the old keys finds no session. */
	{
		uint8_t pkt[64];
		uint64_t unknown = drops(A, YIP_DROP_UNKNOWN_INDEX);

		yip_device_tx(&B->dev, now, pkt, ip4(pkt, "10.0.0.2", "10.0.0.1", 2));
		pair_pump(&P, 1, now, NULL, NULL);
		assert_int_equal(drops(A, YIP_DROP_UNKNOWN_INDEX), unknown + 1);
	}
	/* Set again, it is a new peer: B is found and a new session comes up. */
	memcpy(pc.public_key, P.n[1].dev.public_key, YIP_KEY_LEN);
	pc.has_endpoint = true;
	pc.endpoint = B->addr;
	set_cidr(&b_addr, "10.0.0.2", 32);
	pc.allowed_ips = &b_addr;
	pc.n_allowed_ips = 1;
	assert_int_equal(yip_device_peer_set(&A->dev, now, &pc, YIP_PEER_SET_ALL, err, sizeof(err)),
	                 0);
	ping(now + YIP_NS_PER_S, 3);
	pb = yip_device_peer(&A->dev, P.n[1].dev.public_key);
	assert_true(yip_peer_established(pb, now + YIP_NS_PER_S));
	assert_int_equal(pb->stats.handshakes, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_set_and_remove, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remove_configured, setup, teardown),
	};

	if (yip_crypto_init() != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
