/*
 * The engine's side of a CA-gated network, with real engines in memory
 * (tests/lib/pair.h): the peer table at run time (peers added and
 * removed), admission of a stranger by the certificate in its Init, every
 * refusal counted by its verdict, root sets and revocation lists (rollback
 * refused, newer adopted, a revoked member torn down).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "membership/member.h"
#include "pair.h"
#include "peer/internal.h" /* to make a node present a bad certificate */
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

#include "testpkt.h"

#define NET  "testnet"
#define DAY  86400ULL
#define WALL (PAIR_WALL_START / YIP_NS_PER_S) /* the nodes' wall clock, Unix seconds */

static uint8_t ca_pub[32], ca_sec[64], other_pub[32], other_sec[64];

/* A node: B answers, A calls. Each has a certificate for 10.0.0.(i+1)/32. */
struct node {
	struct pair_node n;
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	struct member_cert cert;
};

static struct node A, B;
static uint64_t now = YIP_NS_PER_S;

static union yip_sockaddr underlay(int i)
{
	union yip_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.in4.sin_family = AF_INET;
	a.in4.sin_port = htons(PAIR_PORT);
	a.in4.sin_addr.s_addr = htonl(0xc0000201u + (uint32_t)i); /* 192.0.2.(i+1) */
	return a;
}

static struct yip_cidr inner(int i)
{
	return (struct yip_cidr){
	    .family = AF_INET, .plen = 32, .addr = {10, 0, 0, (uint8_t)(i + 1)}};
}

/* A certificate for key pub, signed by sec, with the given window and network. */
static void make_cert(struct member_cert *c, const uint8_t priv[YIP_KEY_LEN],
                      const uint8_t pub[YIP_KEY_LEN], const uint8_t *sec, const char *net,
                      uint64_t nb, uint64_t na, int i)
{
	uint8_t spub[32], ssec[64];
	struct wire_cert f;

	member_sign_keypair(priv, spub, ssec);
	memset(&f, 0, sizeof(f));
	strcpy(f.network, net);
	snprintf(f.name, sizeof(f.name), "node %d", i);
	memcpy(f.key, pub, YIP_KEY_LEN);
	memcpy(f.sign_key, spub, 32);
	f.not_before = nb;
	f.not_after = na;
	f.n_prefixes = 1;
	f.prefixes[0] = inner(i);
	assert_int_equal(member_cert_sign(c, &f, sec), 0);
	sodium_memzero(ssec, sizeof(ssec));
}

/* Node i: CA-gated (when member), with peer `peer` configured if not NULL. */
static void node_init(struct node *x, int i, bool member, const struct node *peer)
{
	struct yip_peer_config pc = {.has_endpoint = true};
	struct yip_config cfg = {.mtu = 1420, .has_ca = true};
	struct yip_cidr allowed = inner(i == 0 ? 1 : 0);
	struct pair_opts o = {0};
	struct yip_timing t;
	char err[256];

	memset(&x->n, 0, sizeof(x->n));
	yip_timing_default(&t);
	memcpy(cfg.private_key, x->priv, YIP_KEY_LEN);
	memcpy(cfg.public_key, x->pub, YIP_KEY_LEN);
	if (peer != NULL) {
		memcpy(pc.public_key, peer->pub, YIP_KEY_LEN);
		pc.endpoint = underlay(i == 0 ? 1 : 0);
		pc.allowed_ips = &allowed;
		pc.n_allowed_ips = 1;
		cfg.peers = &pc;
		cfg.n_peers = 1;
	}
	if (pair_node_init(&x->n, &cfg, &t, &o, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	x->n.addr = underlay(i);
	if (member)
		assert_int_equal(yip_device_members_init(&x->n.dev, ca_pub, x->cert.raw,
		                                         x->cert.len, err, sizeof(err)),
		                 0);
}

static void keys(struct node *x, int i)
{
	yip_key_generate(x->priv);
	yip_key_public(x->pub, x->priv);
	make_cert(&x->cert, x->priv, x->pub, ca_sec, NET, WALL - DAY, WALL + 30 * DAY, i);
}

/* B answers anyone with a certificate; A knows B as a configured peer. */
static void setup(bool a_member)
{
	keys(&A, 0);
	keys(&B, 1);
	node_init(&A, 0, a_member, &B);
	node_init(&B, 1, true, NULL);
	now = YIP_NS_PER_S;
}

static void teardown(void)
{
	pair_node_free(&A.n);
	pair_node_free(&B.n);
}

/* An IPv4/UDP packet of len bytes from 10.0.0.s to 10.0.0.d. */
static size_t ip4(uint8_t *pkt, size_t len, uint8_t s, uint8_t d)
{
	ip4_packet(pkt, len, IPPROTO_UDP, "10.0.0.0", "10.0.0.0");
	pkt[15] = s, pkt[19] = d;
	return len;
}

/* Moves what each node sent to the other until both are quiet. */
static void settle(void)
{
	for (int round = 0; round < 10 && (A.n.nout || B.n.nout); round++) {
		for (int k = 0; k < 2; k++) {
			struct node *f = k ? &B : &A, *to = k ? &A : &B;
			unsigned n = f->n.nout;

			for (unsigned j = 0; j < n; j++)
				pair_rx(&to->n, now, &f->n.addr, f->n.out[j].buf, f->n.out[j].len);
			f->n.nout -= n;
		}
	}
}

static uint64_t dropped(struct node *x, enum yip_drop d)
{
	struct yip_device_info di;

	yip_device_info(&x->n.dev, &di);
	return di.drops[d];
}

static void members(struct node *x, struct yip_members_info *mi)
{
	assert_true(yip_device_members_info(&x->n.dev, mi));
}

/* ---- the peer table ---------------------------------------------------------------- */

static void peer_table(void **state)
{
	enum { N = 40 };
	uint8_t pubs[N][YIP_KEY_LEN], priv[YIP_KEY_LEN];
	struct yip_peer *p[N];
	char err[128];

	(void)state;
	setup(true);
	for (int i = 0; i < N; i++) {
		struct yip_cidr c = {.family = AF_INET, .plen = 32, .addr = {10, 9, 0, (uint8_t)i}};
		union yip_sockaddr ep = underlay(10 + i);

		yip_key_generate(priv);
		yip_key_public(pubs[i], priv);
		p[i] = yip_device_peer_add(&B.n.dev, now, pubs[i], &c, 1, &ep, 1, i % 2 ? 25 : 0,
		                           err, sizeof(err));
		assert_non_null(p[i]);
		pair_discard(&B.n); /* keepalive peers call at once */
	}
	assert_int_equal(B.n.dev.n_peers, N);
	/* The same key twice is refused. */
	assert_null(
	    yip_device_peer_add(&B.n.dev, now, pubs[3], NULL, 0, NULL, 0, 0, err, sizeof(err)));
	/* Remove every third; the others are still found by key, and routed to. */
	for (int i = 0; i < N; i += 3) {
		assert_int_equal(yip_device_peer_remove(&B.n.dev, p[i]), 0);
		p[i] = NULL;
	}
	for (int i = 0; i < N; i++) {
		assert_ptr_equal(yip_device_peer(&B.n.dev, pubs[i]), p[i]);
		if (p[i] != NULL)
			assert_int_equal(memcmp(B.n.dev.peers[p[i]->slot]->public_key, pubs[i], 32),
			                 0);
	}
	assert_int_equal(B.n.dev.n_peers, N - (N + 2) / 3);
	/* A packet to a removed peer's prefix has no route now; to a kept one it
	 * waits for that peer's handshake (an Init goes out). */
	{
		uint8_t pkt[64];
		uint64_t before = dropped(&B, YIP_DROP_NO_ROUTE);

		yip_device_tx(&B.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 2, 0));
		/* 10.0.0.0 is nobody's: to a removed peer's prefix next */
		pkt[16] = 10, pkt[17] = 9, pkt[18] = 0, pkt[19] = 3;
		yip_device_tx(&B.n.dev, now, pkt, sizeof(pkt));
		assert_int_equal(dropped(&B, YIP_DROP_NO_ROUTE), before + 2);
		pkt[19] = 4;
		B.n.nout = 0;
		yip_device_tx(&B.n.dev, now, pkt, sizeof(pkt));
		assert_int_equal(B.n.nout, 1);
		assert_int_equal(dropped(&B, YIP_DROP_NO_ROUTE), before + 2);
		B.n.nout = 0;
	}
	/* Timers run over the remaining peers only (removed ones left the heap). */
	for (int s = 0; s < 40; s++) {
		yip_device_timers(&B.n.dev, now + (uint64_t)s * YIP_NS_PER_S);
		pair_discard(&B.n);
	}
	assert_true(B.n.dev.heap_len <= B.n.dev.n_peers);
	/* Nor can another device's peer be removed. */
	assert_int_equal(yip_device_peer_remove(&B.n.dev, A.n.dev.peers[0]), -1);
	teardown();
}

/* ---- admission ---------------------------------------------------------------------- */

static void admitted_by_certificate(void **state)
{
	struct yip_members_info mi;
	struct yip_peer_info pi;
	uint8_t pkt[64];

	(void)state;
	setup(true);
	assert_int_equal(B.n.dev.n_peers, 0);
	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_int_equal(A.n.nout, 1);
	/* The Init carries A's certificate: longer than a bare one. */
	assert_int_equal(A.n.out[0].len, WIRE_INIT_LEN + A.cert.len);
	settle();
	assert_true(yip_peer_established(A.n.dev.peers[0], now));
	assert_int_equal(B.n.dev.n_peers, 1);
	assert_true(yip_peer_established(B.n.dev.peers[0], now));
	assert_int_equal(B.n.packets, 1);
	members(&B, &mi);
	assert_int_equal(mi.admitted, 1);
	assert_true(yip_device_peer_info(&B.n.dev, 0, now, &pi));
	assert_true(pi.dynamic);
	assert_non_null(pi.cert);
	assert_string_equal(pi.cert->f.name, "node 0");
	/* B reaches A's certificate address: it is A's allowed IP now. */
	yip_device_tx(&B.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 2, 1));
	settle();
	assert_int_equal(A.n.packets, 1);
	teardown();
}

/* A's Init is refused for the reason given, counted by it; no peer is made. */
static void refused(const char *why, int verdict)
{
	struct yip_members_info mi;
	uint8_t pkt[64];
	uint64_t before = dropped(&B, YIP_DROP_NOT_ADMITTED);

	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	settle();
	assert_int_equal(B.n.dev.n_peers, 0);
	assert_false(yip_peer_established(A.n.dev.peers[0], now));
	assert_int_equal(dropped(&B, YIP_DROP_NOT_ADMITTED), before + 1);
	members(&B, &mi);
	if (verdict < 0)
		assert_int_equal(mi.no_cert, 1);
	else
		assert_int_equal(mi.refused[verdict], 1);
	print_message("refused: %s\n", why);
}

static void refused_no_certificate(void **state)
{
	(void)state;
	setup(false); /* A is not a member: its Init carries nothing */
	refused("no certificate", -1);
	teardown();
}

static void refused_each_verdict(void **state)
{
	static const struct {
		enum member_verdict v;
	} cases[] = {{MEMBER_WRONG_CA},      {MEMBER_EXPIRED},      {MEMBER_NOT_YET_VALID},
	             {MEMBER_WRONG_NETWORK}, {MEMBER_KEY_MISMATCH}, {MEMBER_REVOKED}};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		enum member_verdict v = cases[k].v;
		struct member_cert bad;
		uint8_t priv2[32], pub2[32];

		keys(&A, 0);
		keys(&B, 1);
		/* A's own device accepts only a valid certificate of its own, so the
		 * bad one is set in its state directly: what a forged or stale
		 * member would send. */
		switch (v) {
		case MEMBER_WRONG_CA:
			make_cert(&bad, A.priv, A.pub, other_sec, NET, WALL - DAY, WALL + DAY, 0);
			break;
		case MEMBER_EXPIRED:
			make_cert(&bad, A.priv, A.pub, ca_sec, NET, WALL - 9 * DAY, WALL - 2 * DAY,
			          0);
			break;
		case MEMBER_NOT_YET_VALID:
			make_cert(&bad, A.priv, A.pub, ca_sec, NET, WALL + 2 * DAY, WALL + 9 * DAY,
			          0);
			break;
		case MEMBER_WRONG_NETWORK:
			make_cert(&bad, A.priv, A.pub, ca_sec, "othernet", WALL - DAY, WALL + DAY,
			          0);
			break;
		case MEMBER_KEY_MISMATCH:
			yip_key_generate(priv2);
			yip_key_public(pub2, priv2);
			make_cert(&bad, priv2, pub2, ca_sec, NET, WALL - DAY, WALL + DAY, 0);
			break;
		default:
			bad = A.cert;
			break;
		}
		node_init(&A, 0, true, &B);
		node_init(&B, 1, true, NULL);
		now = YIP_NS_PER_S;
		if (v == MEMBER_REVOKED) {
			struct member_revocations *r = malloc(sizeof(*r));
			uint8_t e[WIRE_REVOKED_ENTRY] = {WIRE_REVOKED_KEY};

			assert_non_null(r);
			memcpy(e + 1, A.pub, 32);
			assert_int_equal(member_revocations_sign(r, NET, 5, WALL, e, 1, ca_sec), 0);
			assert_int_equal(
			    yip_device_offer_revocations(&B.n.dev, now, r->raw, r->len), MEMBER_OK);
			free(r);
		}
		A.n.dev.members->cert = bad;
		refused(member_verdict_name(v), (int)v);
		teardown();
	}
}

/* ---- root sets and revocation lists ---------------------------------------------------- */

static void roots_rollback_refused(void **state)
{
	struct member_roots r5, r9;
	struct wire_roots f;
	struct yip_members_info mi;

	(void)state;
	setup(true);
	memset(&f, 0, sizeof(f));
	strcpy(f.network, NET);
	f.issued_at = WALL;
	f.n_roots = 1;
	memcpy(f.roots[0].key, B.pub, 32);
	f.roots[0].n_addrs = 1;
	f.roots[0].addrs[0] = underlay(1);
	f.serial = 9;
	assert_int_equal(member_roots_sign(&r9, &f, ca_sec), 0);
	f.serial = 5;
	assert_int_equal(member_roots_sign(&r5, &f, ca_sec), 0);
	/* B is A's configured peer already: the set marks it a root. */
	assert_int_equal(yip_device_offer_roots(&A.n.dev, now, r9.raw, r9.len), MEMBER_OK);
	assert_int_equal(yip_device_offer_roots(&A.n.dev, now, r5.raw, r5.len), MEMBER_OLDER);
	assert_int_equal(yip_device_offer_roots(&A.n.dev, now, r9.raw, r9.len), MEMBER_OK);
	members(&A, &mi);
	assert_int_equal(mi.roots_serial, 9);
	assert_int_equal(mi.roots_older, 1);
	assert_true(A.n.dev.peers[0]->root);
	/* Another CA's set is refused. */
	assert_int_equal(member_roots_sign(&r9, &f, other_sec), 0);
	assert_int_equal(yip_device_offer_roots(&A.n.dev, now, r9.raw, r9.len), MEMBER_WRONG_CA);
	teardown();
}

/* A root B is unknown to A: A adds it, calls it, and both learn each other's
 * certificate addresses. */
static void roots_connect(void **state)
{
	struct member_roots r;
	struct wire_roots f;
	uint8_t pkt[64];

	(void)state;
	keys(&A, 0);
	keys(&B, 1);
	node_init(&A, 0, true, NULL);
	node_init(&B, 1, true, NULL);
	now = YIP_NS_PER_S;
	memset(&f, 0, sizeof(f));
	strcpy(f.network, NET);
	f.serial = 1;
	f.n_roots = 1;
	memcpy(f.roots[0].key, B.pub, 32);
	f.roots[0].n_addrs = 1;
	f.roots[0].addrs[0] = underlay(1);
	assert_int_equal(member_roots_sign(&r, &f, ca_sec), 0);
	assert_int_equal(yip_device_offer_roots(&A.n.dev, now, r.raw, r.len), MEMBER_OK);
	assert_int_equal(A.n.dev.n_peers, 1);
	/* The root's keepalive starts a handshake at once. */
	yip_device_timers(&A.n.dev, now);
	settle();
	assert_true(yip_peer_established(A.n.dev.peers[0], now));
	assert_int_equal(B.n.dev.n_peers, 1);
	/* A learned B's prefix from B's Resp; B learned A's from the Init. */
	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	settle();
	assert_int_equal(B.n.packets, 1);
	yip_device_tx(&B.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 2, 1));
	settle();
	assert_int_equal(A.n.packets, 1);
	teardown();
}

static void revocation_tears_down(void **state)
{
	struct member_revocations *r = malloc(sizeof(*r));
	struct yip_members_info mi;
	uint8_t e[WIRE_REVOKED_ENTRY] = {WIRE_REVOKED_CERT};
	uint8_t pkt[64];

	(void)state;
	assert_non_null(r);
	setup(true);
	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	settle();
	assert_int_equal(B.n.dev.n_peers, 1);
	/* An empty list first (serial 3), then one revoking A's certificate
	 * (serial 4); serial 3 again is a rollback. */
	assert_int_equal(member_revocations_sign(r, NET, 3, WALL, NULL, 0, ca_sec), 0);
	assert_int_equal(yip_device_offer_revocations(&B.n.dev, now, r->raw, r->len), MEMBER_OK);
	assert_int_equal(B.n.dev.n_peers, 1);
	member_cert_hash(&A.cert, e + 1);
	{
		struct member_revocations *r4 = malloc(sizeof(*r4));

		assert_non_null(r4);
		assert_int_equal(member_revocations_sign(r4, NET, 4, WALL, e, 1, ca_sec), 0);
		assert_int_equal(yip_device_offer_revocations(&B.n.dev, now, r4->raw, r4->len),
		                 MEMBER_OK);
		free(r4);
	}
	assert_int_equal(B.n.dev.n_peers, 0);
	assert_int_equal(yip_device_offer_revocations(&B.n.dev, now, r->raw, r->len), MEMBER_OLDER);
	members(&B, &mi);
	assert_int_equal(mi.removed, 1);
	assert_int_equal(mi.revocations_serial, 4);
	assert_int_equal(mi.revocations_older, 1);
	/* A's data now reaches nobody (no session at B) and A cannot rejoin. */
	A.n.nout = 0;
	now += 20 * YIP_NS_PER_S;
	yip_device_timers(&A.n.dev, now);
	session_clear(&A.n.dev, &A.n.dev.peers[0]->cur); /* as if its keys had expired */
	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	settle();
	assert_int_equal(B.n.dev.n_peers, 0);
	members(&B, &mi);
	assert_int_equal(mi.refused[MEMBER_REVOKED], 1);
	free(r);
	teardown();
}

/* A member is forgotten when its certificate expires, or after 10 idle
 * minutes without a session; admitted again when it calls. */
static void sweep_expired_and_idle(void **state)
{
	struct yip_members_info mi;
	uint8_t pkt[64];

	(void)state;
	setup(true);
	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	settle();
	assert_int_equal(B.n.dev.n_peers, 1);
	/* Idle: nothing for 10 minutes, and its keys have long expired. */
	for (int s = 1; s <= 61; s++) {
		yip_device_timers(&B.n.dev, now + (uint64_t)s * 10 * YIP_NS_PER_S);
		pair_discard(&B.n);
		if (s < 59)
			assert_int_equal(B.n.dev.n_peers, 1);
	}
	assert_int_equal(B.n.dev.n_peers, 0);
	members(&B, &mi);
	assert_int_equal(mi.removed, 1);
	teardown();

	/* Expired: B's clock passes A's not_after (30 days) while they talk. */
	setup(true);
	yip_device_tx(&A.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	settle();
	assert_int_equal(B.n.dev.n_peers, 1);
	B.n.wall += (30 * DAY + 2 * MEMBER_SKEW_S) * YIP_NS_PER_S;
	now += 6 * YIP_NS_PER_S;
	yip_device_timers(&B.n.dev, now);
	assert_int_equal(B.n.dev.n_peers, 0);
	teardown();
}

/* Our own record, another's checked, and a member called from its record. */
static void records(void **state)
{
	struct member_record r, bad;
	const struct member_record *own;
	struct yip_peer *p;
	uint8_t pkt[64];
	uint64_t seq;

	(void)state;
	keys(&A, 0);
	keys(&B, 1);
	node_init(&A, 0, true, NULL);
	node_init(&B, 1, true, NULL);
	now = YIP_NS_PER_S;
	own = records_own(&A.n.dev, now);
	assert_non_null(own);
	assert_int_equal(memcmp(own->cert.f.key, A.pub, 32), 0);
	/* Unchanged: the same record again. */
	assert_ptr_equal(records_own(&A.n.dev, now), own);
	assert_int_equal(records_own(&A.n.dev, now)->f.seq, own->f.seq);
	r = *own;
	/* B checks it: valid for A's key and seq; not under another name or version. */
	assert_int_equal(records_check(&B.n.dev, r.raw, r.len, A.pub, r.f.seq, &bad), MEMBER_OK);
	assert_int_equal(records_check(&B.n.dev, r.raw, r.len, B.pub, r.f.seq, &bad),
	                 MEMBER_MALFORMED);
	assert_int_equal(records_check(&B.n.dev, r.raw, r.len, A.pub, r.f.seq + 1, &bad),
	                 MEMBER_MALFORMED);
	bad = r;
	bad.raw[bad.len - 1] ^= 1; /* its signature */
	assert_int_equal(records_check(&B.n.dev, bad.raw, bad.len, A.pub, r.f.seq, &bad),
	                 MEMBER_BAD_SIGNATURE);
	/* B calls A from the record (the pair's nodes have no local addresses:
	 * give it one), and routes A's certificate address to it. */
	r.f.n_endpoints = 1;
	r.f.endpoints[0] = underlay(0);
	p = records_connect(&B.n.dev, now, &r, true);
	assert_non_null(p);
	assert_int_equal(B.n.dev.n_peers, 1);
	assert_int_equal(B.n.nout, 1); /* the Init */
	settle();
	assert_true(yip_peer_established(p, now));
	yip_device_tx(&B.n.dev, now, pkt, ip4(pkt, sizeof(pkt), 2, 1));
	settle();
	assert_int_equal(A.n.packets, 1);
	/* A's record is valid YIP_RECORD_LIFETIME_S; A keeps it until it is
	 * YIP_RECORD_RESIGN_S old and signs it again then. */
	own = records_own(&A.n.dev, now);
	seq = own->f.seq;
	assert_true(own->f.expires >= A.n.wall / YIP_NS_PER_S + YIP_RECORD_LIFETIME_S - 1);
	assert_true(own->f.expires <= A.n.wall / YIP_NS_PER_S + YIP_RECORD_LIFETIME_S + 1);
	A.n.wall += (YIP_RECORD_RESIGN_S - 10) * YIP_NS_PER_S;
	assert_int_equal(records_own(&A.n.dev, now)->f.seq, seq);
	A.n.wall += 20 * YIP_NS_PER_S;
	assert_true(records_own(&A.n.dev, now)->f.seq > seq);
	teardown();
}

/* ---- many records at once -------------------------------------------------------- */

enum { MANY = 300 }; /* more than one walk of the old code removed (256) */

/* The records B holds of others, counted. */
static void count_other(void *arg, const uint8_t *obj, size_t len)
{
	struct member_record r;

	if (member_record_parse(&r, obj, len) == MEMBER_OK && memcmp(r.cert.f.key, B.pub, 32) != 0)
		(*(size_t *)arg)++;
}

static size_t others_held(void)
{
	size_t n = 0;

	yip_device_records(&B.n.dev, count_other, &n);
	return n;
}

/* B, a member, holds the records of MANY others (valid until expires, Unix
 * seconds); entries gets, for each, a revocation of it (by key for even i,
 * by certificate hash for odd i). */
static void hold_many(uint64_t expires, uint8_t (*entries)[WIRE_REVOKED_ENTRY])
{
	struct member_record *r = malloc(sizeof(*r));
	struct member_cert *c = malloc(sizeof(*c));
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN], spub[32], ssec[64];
	union yip_sockaddr ep = underlay(2);

	assert_non_null(r);
	assert_non_null(c);
	keys(&B, 1);
	node_init(&B, 1, true, NULL);
	now = YIP_NS_PER_S;
	for (int i = 0; i < MANY; i++) {
		yip_key_generate(priv);
		yip_key_public(pub, priv);
		make_cert(c, priv, pub, ca_sec, NET, WALL - DAY, WALL + 30 * DAY, 2 + i % 200);
		member_sign_keypair(priv, spub, ssec);
		assert_int_equal(
		    member_record_sign(r, c, 1000 + (uint64_t)i, expires, &ep, 1, ssec), 0);
		sodium_memzero(ssec, sizeof(ssec));
		sodium_memzero(priv, sizeof(priv));
		assert_int_equal(yip_device_offer_record(&B.n.dev, now, r->raw, r->len), MEMBER_OK);
		entries[i][0] = i % 2 ? WIRE_REVOKED_CERT : WIRE_REVOKED_KEY;
		if (i % 2)
			member_cert_hash(c, entries[i] + 1);
		else
			memcpy(entries[i] + 1, pub, 32);
	}
	assert_int_equal(others_held(), MANY);
	free(r);
	free(c);
}

/* A revocation list adopted removes every record it revokes, however many. */
static void revocation_removes_every_record(void **state)
{
	uint8_t(*e)[WIRE_REVOKED_ENTRY] = malloc(MANY * WIRE_REVOKED_ENTRY);
	struct member_revocations *rv = malloc(sizeof(*rv));

	(void)state;
	assert_non_null(e);
	assert_non_null(rv);
	hold_many(WALL + 3600, e);
	/* One list revoking all but the last; then one with the last too. */
	assert_int_equal(member_revocations_sign(rv, NET, 7, WALL, e[0], MANY - 1, ca_sec), 0);
	assert_int_equal(yip_device_offer_revocations(&B.n.dev, now, rv->raw, rv->len), MEMBER_OK);
	assert_int_equal(others_held(), 1);
	assert_int_equal(member_revocations_sign(rv, NET, 8, WALL, e[0], MANY, ca_sec), 0);
	assert_int_equal(yip_device_offer_revocations(&B.n.dev, now, rv->raw, rv->len), MEMBER_OK);
	assert_int_equal(others_held(), 0);
	free(rv);
	free(e);
	pair_node_free(&B.n);
}

/* Records that expired are all dropped at the next sweep, however many. */
static void expiry_removes_every_record(void **state)
{
	uint8_t(*e)[WIRE_REVOKED_ENTRY] = malloc(MANY * WIRE_REVOKED_ENTRY);

	(void)state;
	assert_non_null(e);
	hold_many(WALL + 600, e);
	B.n.wall += (600 + MEMBER_SKEW_S + 60) * YIP_NS_PER_S;
	now += 10 * YIP_NS_PER_S; /* past the next sweep */
	yip_device_timers(&B.n.dev, now);
	B.n.nout = 0;
	assert_int_equal(others_held(), 0);
	free(e);
	pair_node_free(&B.n);
}

/* Three engines in memory: R, a root, and members A and B that know only
 * R. Gossip through R gives each the other's record; a packet from A to
 * B's certificate address looks B up and calls it. */
static void pump3(struct node *n[3], uint64_t t)
{
	for (int round = 0; round < 10; round++) {
		bool any = false;

		for (int i = 0; i < 3; i++) {
			unsigned k = n[i]->n.nout;

			for (unsigned j = 0; j < k; j++)
				for (int d = 0; d < 3; d++)
					if (d != i &&
					    yip_sockaddr_eq(&n[i]->n.out[j].to, &n[d]->n.addr))
						pair_rx(&n[d]->n, t, &n[i]->n.addr,
						        n[i]->n.out[j].buf, n[i]->n.out[j].len);
			n[i]->n.nout = 0;
			any = any || k > 0;
		}
		if (!any)
			break;
	}
}

static size_t own_addr(void *ctx, union yip_sockaddr *out, size_t max)
{
	const struct pair_node *pn = ctx;

	if (max == 0)
		return 0;
	out[0] = pn->addr;
	return 1;
}

static void gossip_three(void **state)
{
	static struct node R;
	struct node *n[3] = {&A, &B, &R};
	struct member_roots roots;
	struct wire_roots f;
	struct yip_members_info mi;
	uint8_t pkt[64];
	uint64_t t;

	(void)state;
	keys(&A, 0);
	keys(&B, 1);
	keys(&R, 2);
	node_init(&A, 0, true, NULL);
	node_init(&B, 1, true, NULL);
	node_init(&R, 2, true, NULL);
	memset(&f, 0, sizeof(f));
	strcpy(f.network, NET);
	f.serial = 1;
	f.n_roots = 1;
	memcpy(f.roots[0].key, R.pub, 32);
	f.roots[0].n_addrs = 1;
	f.roots[0].addrs[0] = underlay(2);
	assert_int_equal(member_roots_sign(&roots, &f, ca_sec), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(
		    yip_device_offer_roots(&n[i]->n.dev, YIP_NS_PER_S, roots.raw, roots.len),
		    MEMBER_OK);
	/* The pair's nodes have no local addresses of their own: each says
	 * its underlay address is, so its record carries it. */
	for (int i = 0; i < 3; i++)
		n[i]->n.dev.io.local_addrs = own_addr;
	for (t = YIP_NS_PER_S; t < 12 * YIP_NS_PER_S; t += 50 * YIP_NS_PER_MS) {
		for (int i = 0; i < 3; i++)
			yip_device_timers(&n[i]->n.dev, t);
		pump3(n, t);
	}
	/* R holds three records and the root set, and took A's and B's from them. */
	assert_true(yip_device_members_info(&R.n.dev, &mi));
	assert_true(mi.gossip);
	assert_true(mi.gossip_items >= 4);
	assert_true(mi.gossip_accepted >= 2);
	/* A reaches B by its certificate address, directly. */
	yip_device_tx(&A.n.dev, t, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	pump3(n, t);
	for (int k = 0; k < 20 && B.n.packets == 0; k++) {
		t += 50 * YIP_NS_PER_MS;
		for (int i = 0; i < 3; i++)
			yip_device_timers(&n[i]->n.dev, t);
		pump3(n, t);
	}
	assert_int_equal(B.n.packets, 1);
	assert_non_null(yip_device_peer(&A.n.dev, B.pub));
	assert_non_null(yip_device_peer(&B.n.dev, A.pub));
	/* An hour past a record's lifetime, at R alone: A's and B's records
	 * have expired and are dropped; R's own is signed again; the root set
	 * stays. */
	R.n.wall += (YIP_RECORD_LIFETIME_S + 3600) * YIP_NS_PER_S;
	t += 6 * YIP_NS_PER_S;
	yip_device_timers(&R.n.dev, t);
	R.n.nout = 0;
	assert_true(yip_device_members_info(&R.n.dev, &mi));
	assert_int_equal(mi.gossip_items, 2);
	teardown();
	pair_node_free(&R.n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(peer_table),
	    cmocka_unit_test(admitted_by_certificate),
	    cmocka_unit_test(refused_no_certificate),
	    cmocka_unit_test(refused_each_verdict),
	    cmocka_unit_test(roots_rollback_refused),
	    cmocka_unit_test(roots_connect),
	    cmocka_unit_test(revocation_tears_down),
	    cmocka_unit_test(sweep_expired_and_idle),
	    cmocka_unit_test(records),
	    cmocka_unit_test(revocation_removes_every_record),
	    cmocka_unit_test(expiry_removes_every_record),
	    cmocka_unit_test(gossip_three),
	};
	uint8_t seed[32];

	yip_crypto_init();
	randombytes_buf(seed, sizeof(seed));
	member_ca_keypair(seed, ca_pub, ca_sec);
	randombytes_buf(seed, sizeof(seed));
	member_ca_keypair(seed, other_pub, other_sec);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
