/*
 * Every drop path of the engine, one at a time: each case builds a fresh
 * pair of engines (tests/lib/pair.h), brings the session up when it needs
 * one, does the one thing that must be dropped, and checks that exactly one
 * counter moved, by exactly the number of things dropped, on exactly the
 * node that dropped them. Datagrams an authenticated peer could send are
 * forged with the live session's keys.
 *
 * The drops the event loop counts (truncated, send_failed,
 * tun_write_failed, aqm) happen outside the engine: tests/unit/test_shape.c
 * and the netns tests cover those.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include <sodium.h>

#include "fec/fec.h"
#include "membership/member.h"
#include "pair.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

#include "testpkt.h"

static struct pair P;
static struct pair_node *A, *B;
static uint64_t now = YIP_NS_PER_S;
static uint64_t before[2][YIP_DROP_COUNT];
/* A's first Init, kept by up() for the replay case. */
static uint8_t first_init[WIRE_INIT_LEN];
/* Which reasons the cases above have walked (see every_reason_walked). */
static bool walked[YIP_DROP_COUNT];

static void start(const struct pair_opts *o)
{
	static const struct pair_opts none;
	char err[256];

	assert_int_equal(pair_init(&P, o ? o : &none, err, sizeof(err)), 0);
	A = &P.n[0];
	B = &P.n[1];
	now = YIP_NS_PER_S;
}

static void finish(void)
{
	pair_free(&P);
}

/* An IPv4/UDP packet of len bytes (>= 28) from 10.0.0.s to 10.0.0.d. */
static size_t ip4(uint8_t *pkt, size_t len, uint8_t s, uint8_t d)
{
	ip4_packet(pkt, len, IPPROTO_UDP, "10.0.0.0", "10.0.0.0");
	pkt[15] = s, pkt[19] = d;
	return len;
}

/* A sends B one packet and the handshake completes. */
static void up(void)
{
	uint8_t pkt[64];

	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_true(A->nout == 1 && A->out[0].len == WIRE_INIT_LEN);
	memcpy(first_init, A->out[0].buf, WIRE_INIT_LEN);
	pair_settle(&P, now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	assert_true(yip_peer_established(B->dev.peers[0], now));
	assert_int_equal(B->packets, 1);
}

static void mark(void)
{
	struct yip_device_info di;

	for (int i = 0; i < 2; i++) {
		yip_device_info(&P.n[i].dev, &di);
		memcpy(before[i], di.drops, sizeof(before[i]));
	}
}

/* Exactly counter `want` of node `who` moved, by n; nothing else on either node. */
static void expect(int who, enum yip_drop want, uint64_t n)
{
	struct yip_device_info di;

	for (int i = 0; i < 2; i++) {
		yip_device_info(&P.n[i].dev, &di);
		for (int d = 0; d < YIP_DROP_COUNT; d++) {
			uint64_t moved = di.drops[d] - before[i][d];
			uint64_t wanted = i == who && d == (int)want ? n : 0;

			if (moved != wanted)
				fail_msg("node %d, %s: moved by %llu, expected %llu", i,
				         yip_drop_name((enum yip_drop)d), (unsigned long long)moved,
				         (unsigned long long)wanted);
		}
	}
	walked[want] = true;
}

/* Seals plain as a datagram from A to B under A's current keys and hands it to B. */
static void forge(uint8_t type, uint8_t idx, uint16_t block, const uint8_t *plain, size_t len,
                  uint8_t *keep)
{
	struct yip_keypair *kp = A->dev.peers[0]->cur;
	uint8_t d[YIP_MAX_DGRAM];
	struct wire_hdr h = {type, idx, block, kp->remote_index, kp->send_counter++};

	wire_hdr_put(d, &h);
	yip_cipher_seal(d + WIRE_DATA_HDR, &kp->send, h.counter, d, WIRE_DATA_HDR, plain, len);
	if (keep != NULL)
		memcpy(keep, d, WIRE_DATA_MIN + len);
	pair_rx(B, now, &A->addr, d, WIRE_DATA_MIN + len);
}

/* ---- outsiders ----------------------------------------------------------------- */

static void malformed(void **state)
{
	uint8_t d[40] = {3};

	(void)state;
	start(NULL);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_MALFORMED, 1);
	finish();
}

static void bad_mac1(void **state)
{
	uint8_t d[WIRE_INIT_LEN];

	(void)state;
	start(NULL);
	memset(d, 0x5a, sizeof(d));
	wire_init_put(d, 77);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_BAD_MAC1, 1);
	finish();
}

/* Knowing B's public key is enough for mac1; Noise then refuses the rest. */
static void handshake_failed_noise(void **state)
{
	uint8_t d[WIRE_INIT_LEN], key[YIP_KEY_LEN];

	(void)state;
	start(NULL);
	memset(d, 0x5a, sizeof(d));
	wire_init_put(d, 77);
	wire_mac1_key(key, B->dev.public_key);
	wire_init_mac1_put(d, key);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_HANDSHAKE_FAILED, 1);
	finish();
}

static void handshake_failed_cipher(void **state)
{
	struct pair_opts o = {
	    .ciphers = {YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305),
	                YIP_CIPHER_BIT(YIP_CIPHER_AES256_GCM)},
	};
	uint8_t pkt[64];

	(void)state;
	if (!yip_cipher_available(YIP_CIPHER_AES256_GCM))
		skip();
	start(&o);
	mark();
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	pair_pump(&P, 0, now, NULL, NULL);
	expect(1, YIP_DROP_HANDSHAKE_FAILED, 1);
	assert_int_equal(B->nout, 0); /* no Resp */
	finish();
}

/* An Init from a key B does not know, built by a third engine that knows B. */
static void unknown_peer(void **state)
{
	struct yip_peer_config pc = {.has_endpoint = true};
	struct yip_config cfg = {.mtu = 1420, .peers = &pc, .n_peers = 1};
	struct pair_opts o = {0};
	struct pair_node C;
	struct yip_timing t;
	char err[256];
	uint8_t pkt[64];

	(void)state;
	start(NULL);
	yip_timing_default(&t);
	yip_key_generate(cfg.private_key);
	yip_key_public(cfg.public_key, cfg.private_key);
	memcpy(pc.public_key, B->dev.public_key, YIP_KEY_LEN);
	pc.endpoint = B->addr;
	pc.allowed_ips = &(struct yip_cidr){.family = AF_INET, .plen = 32, .addr = {10, 0, 0, 2}};
	pc.n_allowed_ips = 1;
	assert_int_equal(pair_node_init(&C, &cfg, &t, &o, err, sizeof(err)), 0);
	yip_device_tx(&C.dev, now, pkt, ip4(pkt, sizeof(pkt), 9, 2));
	assert_int_equal(C.nout, 1);
	mark();
	pair_rx(B, now, &C.addr, C.out[0].buf, C.out[0].len);
	expect(1, YIP_DROP_UNKNOWN_PEER, 1);
	pair_node_free(&C);
	finish();
}

/* An Init-shaped datagram with a valid mac1 for B from 10.1.x.y (Noise fails). */
static void mac1_only_init(uint32_t from, uint8_t d[WIRE_INIT_LEN], union yip_sockaddr *src)
{
	uint8_t key[YIP_KEY_LEN];

	memset(d, 0x5a, WIRE_INIT_LEN);
	wire_init_put(d, from);
	wire_mac1_key(key, B->dev.public_key);
	wire_init_mac1_put(d, key);
	*src = A->addr;
	src->in4.sin_addr.s_addr = htonl(0x0a010000 | (from & 0xffff));
}

/* More Inits than YIP_INIT_LOAD a second: the next is answered with a
 * cookie and costs no Diffie-Hellman. */
/* An Init with no certificate, to a CA-gated node that does not know its key. */
static void not_admitted(void **state)
{
	struct yip_peer_config pc = {.has_endpoint = true};
	struct yip_config cfg = {.mtu = 1420, .peers = &pc, .n_peers = 1};
	struct pair_opts o = {.ca = true};
	uint8_t seed[32] = {1}, ca_pub[32], ca_sec[64], spub[32], ssec[64];
	struct member_cert cert;
	struct wire_cert f = {.network = "net", .name = "b", .not_before = 1, .n_prefixes = 0};
	struct pair_node C;
	struct yip_timing t;
	char err[256];
	uint8_t pkt[64];

	(void)state;
	start(&o);
	member_ca_keypair(seed, ca_pub, ca_sec);
	member_sign_keypair(P.keys[1], spub, ssec);
	memcpy(f.key, B->dev.public_key, YIP_KEY_LEN);
	memcpy(f.sign_key, spub, 32);
	f.not_after = UINT64_MAX / 2;
	assert_int_equal(member_cert_sign(&cert, &f, ca_sec), 0);
	assert_int_equal(
	    yip_device_members_init(&B->dev, ca_pub, cert.raw, cert.len, err, sizeof(err)), 0);
	yip_timing_default(&t);
	yip_key_generate(cfg.private_key);
	yip_key_public(cfg.public_key, cfg.private_key);
	memcpy(pc.public_key, B->dev.public_key, YIP_KEY_LEN);
	pc.endpoint = B->addr;
	pc.allowed_ips = &(struct yip_cidr){.family = AF_INET, .plen = 32, .addr = {10, 0, 0, 2}};
	pc.n_allowed_ips = 1;
	assert_int_equal(pair_node_init(&C, &cfg, &t, &o, err, sizeof(err)), 0);
	yip_device_tx(&C.dev, now, pkt, ip4(pkt, sizeof(pkt), 9, 2));
	assert_int_equal(C.nout, 1);
	mark();
	pair_rx(B, now, &C.addr, C.out[0].buf, C.out[0].len);
	expect(1, YIP_DROP_NOT_ADMITTED, 1);
	assert_int_equal(B->dev.n_peers, 1); /* no peer was made for C */
	pair_node_free(&C);
	finish();
}

static void under_load(void **state)
{
	uint8_t d[WIRE_INIT_LEN];
	union yip_sockaddr src;

	(void)state;
	start(NULL);
	for (uint32_t i = 0; i < YIP_INIT_LOAD; i++) {
		mac1_only_init(i, d, &src);
		pair_rx(B, now, &src, d, sizeof(d));
	}
	pair_discard(B);
	mark();
	mac1_only_init(YIP_INIT_LOAD, d, &src);
	pair_rx(B, now, &src, d, sizeof(d));
	expect(1, YIP_DROP_UNDER_LOAD, 1);
	assert_int_equal(B->nout, 1);
	assert_int_equal(B->out[0].len, WIRE_COOKIE_MSG);
	assert_true(yip_sockaddr_eq(&B->out[0].to, &src));
	finish();
}

/* One address gets 2 x YIP_INIT_RATE Inits at once, then YIP_INIT_RATE a second. */
static void rate_limited_source(void **state)
{
	uint8_t d[WIRE_INIT_LEN];
	union yip_sockaddr src;

	(void)state;
	start(NULL);
	for (int i = 0; i < 2 * YIP_INIT_RATE; i++) {
		mac1_only_init(7, d, &src);
		pair_rx(B, now, &src, d, sizeof(d));
	}
	mark();
	pair_rx(B, now, &src, d, sizeof(d));
	expect(1, YIP_DROP_RATE_LIMITED, 1);
	now += YIP_NS_PER_S / YIP_INIT_RATE; /* one token back */
	mark();
	pair_rx(B, now, &src, d, sizeof(d));
	expect(1, YIP_DROP_HANDSHAKE_FAILED, 1);
	finish();
}

/* A configured peer gets at most one Init accepted per YIP_INIT_PEER_NS. */
static void rate_limited_peer(void **state)
{
	uint8_t pkt[64];
	char err[256];

	(void)state;
	start(NULL);
	up();
	/* A restarts and sends a new Init (newer by its clock) right away:
	 * refused for now, though it is genuine and new. */
	assert_int_equal(pair_node_reset(&P, 0, err, sizeof(err)), 0);
	A->wall = B->wall + YIP_NS_PER_S;
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_true(A->nout == 1 && A->out[0].len == WIRE_INIT_LEN);
	mark();
	pair_rx(B, now + 1, &A->addr, A->out[0].buf, WIRE_INIT_LEN);
	expect(1, YIP_DROP_RATE_LIMITED, 1);
	finish();
}

/* A Cookie that names our pending handshake but does not open. */
static void bad_cookie(void **state)
{
	uint8_t d[WIRE_COOKIE_MSG], pkt[64], *nonce;

	(void)state;
	start(NULL);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_true(A->dev.peers[0]->hs_pending);
	memset(d, 0x33, sizeof(d));
	nonce = wire_cookie_put(d, A->dev.peers[0]->hs_index);
	(void)nonce;
	mark();
	pair_rx(A, now, &B->addr, d, sizeof(d));
	expect(0, YIP_DROP_BAD_COOKIE, 1);
	finish();
}

static void stale_init(void **state)
{
	(void)state;
	start(NULL);
	up();
	now += YIP_INIT_PEER_NS; /* past the per-peer budget: the timestamp is what refuses it */
	mark();
	pair_rx(B, now, &A->addr, first_init, sizeof(first_init));
	expect(1, YIP_DROP_STALE_INIT, 1);
	finish();
}

/* Both start at once: the node with the smaller key keeps its own Init. */
static void glare(void **state)
{
	uint8_t pkt[64];
	int small, large;

	(void)state;
	start(NULL);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	yip_device_tx(&B->dev, now, pkt, ip4(pkt, sizeof(pkt), 2, 1));
	small = memcmp(A->dev.public_key, B->dev.public_key, YIP_KEY_LEN) < 0 ? 0 : 1;
	large = 1 - small;
	mark();
	pair_pump(&P, large, now, NULL, NULL);
	expect(small, YIP_DROP_GLARE, 1);
	finish();
}

static void unknown_index(void **state)
{
	uint8_t d[WIRE_DATA_MIN + 8];
	struct wire_hdr h = {WIRE_DATA, WIRE_FEC_NONE, 0, 0xabcdef01, 5};

	(void)state;
	start(NULL);
	up();
	memset(d, 0, sizeof(d));
	wire_hdr_put(d, &h);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_UNKNOWN_INDEX, 1);
	finish();
}

/* A Resp naming an index B never gave out is refused before any Noise work. */
static void unknown_index_resp(void **state)
{
	uint8_t d[WIRE_RESP_LEN], key[YIP_KEY_LEN];

	(void)state;
	start(NULL);
	memset(d, 0, sizeof(d));
	wire_resp_put(d, 1, 0x12345678);
	wire_mac1_key(key, B->dev.public_key);
	wire_mac1_put(d, sizeof(d), key);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_UNKNOWN_INDEX, 1);
	finish();
}

/* ---- an authenticated peer ------------------------------------------------------- */

static void replay(void **state)
{
	uint8_t pkt[64], d[WIRE_DATA_MIN + 64];

	(void)state;
	start(NULL);
	up();
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, pkt, ip4(pkt, sizeof(pkt), 1, 2), d);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_REPLAY, 1);
	finish();
}

/* A Data datagram from A to B with a 64-byte packet, sealed but not sent. */
static void sealed(uint8_t d[WIRE_DATA_MIN + 64])
{
	struct yip_keypair *kp = A->dev.peers[0]->cur;
	struct wire_hdr h = {WIRE_DATA, WIRE_FEC_NONE, 0, kp->remote_index, kp->send_counter++};
	uint8_t pkt[64];

	wire_hdr_put(d, &h);
	yip_cipher_seal(d + WIRE_DATA_HDR, &kp->send, h.counter, d, WIRE_DATA_HDR, pkt,
	                ip4(pkt, sizeof(pkt), 1, 2));
}

static void decrypt(void **state)
{
	uint8_t d[WIRE_DATA_MIN + 64];

	(void)state;
	start(NULL);
	up();
	sealed(d);
	d[WIRE_DATA_HDR + 3] ^= 1;
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_DECRYPT, 1);
	finish();
}

/* A datagram sealed under keys that have since passed their lifetime. */
static void expired(void **state)
{
	uint8_t d[WIRE_DATA_MIN + 64];

	(void)state;
	start(NULL);
	up();
	sealed(d);
	now += B->dev.t.reject_after; /* no timers ran: the keys are still indexed */
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_EXPIRED, 1);
	finish();
}

static void bad_inner(void **state)
{
	uint8_t junk[20] = {0x12, 0x34};

	(void)state;
	start(NULL);
	up();
	mark();
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, junk, sizeof(junk), NULL);
	expect(1, YIP_DROP_BAD_INNER, 1);
	finish();
}

/* A retransmission too short to hold the counter it stands for. */
static void bad_inner_arq(void **state)
{
	uint8_t junk[5] = {1, 2, 3, 4, 5};

	(void)state;
	start(NULL);
	up();
	mark();
	forge(WIRE_DATA, WIRE_FEC_ARQ, 0, junk, sizeof(junk), NULL);
	expect(1, YIP_DROP_BAD_INNER, 1);
	finish();
}

/* TAP: a frame shorter than an Ethernet header, or with a multicast source. */
static void bad_inner_tap(void **state)
{
	struct pair_opts o = {.tap = true};
	uint8_t runt[10] = {0}, mcast[60] = {0};

	(void)state;
	start(&o);
	up();
	mark();
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, runt, sizeof(runt), NULL);
	expect(1, YIP_DROP_BAD_INNER, 1);
	mcast[6] = 0x01; /* source MAC with the group bit */
	mark();
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, mcast, sizeof(mcast), NULL);
	expect(1, YIP_DROP_BAD_INNER, 1);
	finish();
}

static void source_not_allowed(void **state)
{
	uint8_t pkt[64];

	(void)state;
	start(NULL);
	up();
	mark();
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, pkt, ip4(pkt, sizeof(pkt), 9, 2), NULL);
	expect(1, YIP_DROP_SOURCE_NOT_ALLOWED, 1);
	finish();
}

static void bad_repair(void **state)
{
	uint8_t plain[WIRE_REPAIR_PRE + WIRE_SYM_HDR + 64] = {0};

	(void)state;
	start(NULL);
	up();
	/* K = 0 */
	wire_repair_put(plain, 0, 1);
	mark();
	forge(WIRE_REPAIR, 0, 900, plain, sizeof(plain), NULL);
	expect(1, YIP_DROP_BAD_REPAIR, 1);
	/* Repair index past R */
	wire_repair_put(plain, 4, 2);
	mark();
	forge(WIRE_REPAIR, 2, 901, plain, sizeof(plain), NULL);
	expect(1, YIP_DROP_BAD_REPAIR, 1);
	/* Two repairs of one block that disagree on K */
	wire_repair_put(plain, 4, 2);
	forge(WIRE_REPAIR, 0, 902, plain, sizeof(plain), NULL);
	wire_repair_put(plain, 5, 2);
	mark();
	forge(WIRE_REPAIR, 1, 902, plain, sizeof(plain), NULL);
	expect(1, YIP_DROP_BAD_REPAIR, 1);
	finish();
}

/* K = 64, the largest block: a repair for a block whose source arrived is no
 * drop (and checking it must not shift a 64-bit mask by 64, which UBSan
 * would catch in the sanitizer build). */
static void repair_k64(void **state)
{
	uint8_t pkt[64], plain[WIRE_REPAIR_PRE + WIRE_SYM_HDR + 64] = {0};

	(void)state;
	start(NULL);
	up();
	forge(WIRE_DATA, 3, 906, pkt, ip4(pkt, sizeof(pkt), 1, 2), NULL);
	wire_repair_put(plain, FEC_MAX_K, 1);
	mark();
	forge(WIRE_REPAIR, 0, 906, plain, sizeof(plain), NULL);
	expect(1, YIP_DROP_BAD_REPAIR, 0);
	finish();
}

/* K = R = 1: the repair is the source's symbol itself (XOR parity of one). */
static void lone_repair(uint16_t block, uint64_t counter, uint16_t claim, const uint8_t *pkt,
                        size_t len)
{
	uint8_t plain[WIRE_REPAIR_PRE + WIRE_SYM_HDR + 128];
	struct wire_sym s = {counter, claim};

	wire_repair_put(plain, 1, 1);
	wire_sym_put(plain + WIRE_REPAIR_PRE, &s);
	memcpy(plain + WIRE_REPAIR_PRE + WIRE_SYM_HDR, pkt, len);
	forge(WIRE_REPAIR, 0, block, plain, WIRE_REPAIR_PRE + WIRE_SYM_HDR + len, NULL);
}

/* A rebuilt symbol whose length runs past the symbol. */
static void bad_repair_rebuilt(void **state)
{
	uint8_t pkt[64];
	size_t len = ip4(pkt, sizeof(pkt), 1, 2);

	(void)state;
	start(NULL);
	up();
	mark();
	lone_repair(903, 1, (uint16_t)(len + 1), pkt, len);
	expect(1, YIP_DROP_BAD_REPAIR, 1);
	finish();
}

/* With fec=off a repair has nowhere to go. */
static void bad_repair_fec_off(void **state)
{
	struct pair_opts o = {.fec_off = true};
	uint8_t pkt[64];

	(void)state;
	start(&o);
	up();
	mark();
	lone_repair(904, 1, 64, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	expect(1, YIP_DROP_BAD_REPAIR, 1);
	finish();
}

/* The packet a repair rebuilds had already arrived (in no block). */
static void fec_duplicate(void **state)
{
	uint8_t pkt[64];
	size_t len = ip4(pkt, sizeof(pkt), 1, 2);
	uint64_t counter;

	(void)state;
	start(NULL);
	up();
	counter = A->dev.peers[0]->cur->send_counter;
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, pkt, len, NULL);
	assert_int_equal(B->packets, 2);
	mark();
	lone_repair(905, counter, (uint16_t)len, pkt, len);
	expect(1, YIP_DROP_FEC_DUPLICATE, 1);
	assert_int_equal(B->packets, 2);
	finish();
}

/* A resend (ARQ) of a packet whose original had already been delivered. */
static void arq_duplicate(void **state)
{
	uint8_t pkt[64], plain[WIRE_ARQ_PRE + 64];
	size_t len = ip4(pkt, sizeof(pkt), 1, 2);
	uint64_t counter;

	(void)state;
	start(NULL);
	up();
	counter = A->dev.peers[0]->cur->send_counter;
	forge(WIRE_DATA, WIRE_FEC_NONE, 0, pkt, len, NULL);
	assert_int_equal(B->packets, 2);
	wire_arq_put(plain, counter);
	memcpy(plain + WIRE_ARQ_PRE, pkt, len);
	mark();
	forge(WIRE_DATA, WIRE_FEC_ARQ, 0, plain, WIRE_ARQ_PRE + len, NULL);
	expect(1, YIP_DROP_ARQ_DUPLICATE, 1);
	assert_int_equal(B->packets, 2);
	finish();
}

static void bad_report(void **state)
{
	struct wire_report r = {.received = 1, .span = 1};
	uint8_t b[WIRE_REPORT_MAX];
	size_t len = wire_report_put(b, &r);

	(void)state;
	start(NULL);
	up();
	b[0] = 2; /* version */
	mark();
	forge(WIRE_REPORT, 0, 0, b, len, NULL);
	expect(1, YIP_DROP_BAD_REPORT, 1);
	b[0] = 1;
	mark();
	forge(WIRE_REPORT, 0, 0, b, len + 3, NULL); /* a length that fits no count */
	expect(1, YIP_DROP_BAD_REPORT, 1);
	finish();
}

/* A control message that is no message, and one a peer never sends. */
static void bad_ctrl(void **state)
{
	uint8_t junk[3] = {99, 1, 2};
	struct wire_ctrl c = {.kind = WIRE_CTRL_ASK, .id = 1};
	uint8_t msg[WIRE_CTRL_MAX];

	(void)state;
	start(NULL);
	up();
	mark();
	forge(WIRE_CTRL, 0, 0, junk, sizeof(junk), NULL);
	expect(1, YIP_DROP_BAD_CTRL, 1);
	mark();
	forge(WIRE_CTRL, 0, 0, msg, wire_ctrl_put(msg, &c), NULL);
	expect(1, YIP_DROP_BAD_CTRL, 1);
	finish();
}

/* A Relay datagram from an address that is no server of ours. */
static void bad_relay(void **state)
{
	uint8_t d[WIRE_RELAY_HDR + WIRE_DATA_MIN + 8] = {0};
	struct wire_hdr h = {WIRE_DATA, WIRE_FEC_NONE, 0, 1, 1};

	(void)state;
	start(NULL);
	up();
	wire_relay_put(d, WIRE_RELAY_FROM_SERVER, 42, 7);
	wire_hdr_put(d + WIRE_RELAY_HDR, &h);
	mark();
	pair_rx(B, now, &A->addr, d, sizeof(d));
	expect(1, YIP_DROP_BAD_RELAY, 1);
	finish();
}

/* ---- obf_psk ------------------------------------------------------------------------ */

static const uint8_t psk_one[OBF_PSK_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const uint8_t psk_two[OBF_PSK_LEN] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};

/* Both nodes with obf_psk (the same one unless other), and a session up. */
static void obf_start(const uint8_t *other, bool establish)
{
	struct pair_opts o = {.obf_psk = {psk_one, other ? other : psk_one}};
	uint8_t pkt[64];

	start(&o);
	if (!establish)
		return;
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_int_equal(A->nout, 1);
	assert_int_not_equal(A->out[0].len, WIRE_INIT_LEN); /* an envelope, of a random length */
	pair_settle(&P, now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	assert_int_equal(B->packets, 1);
}

/* Random bytes, a plain datagram sealed under the session's own keys, and
 * datagrams obfuscated with another key: all dropped as obf, nothing sent back. */
static void obf_foreign(void **state)
{
	uint8_t d[1500];

	(void)state;
	obf_start(NULL, true);
	mark();
	for (unsigned len = 0; len < sizeof(d); len += 7) {
		randombytes_buf(d, len);
		pair_rx(B, now, &A->addr, d, len);
	}
	sealed(d); /* plain: what B would take without obf_psk */
	pair_rx(B, now, &A->addr, d, WIRE_DATA_MIN + 64);
	expect(1, YIP_DROP_OBF, (sizeof(d) + 6) / 7 + 1);
	assert_int_equal(B->nout, 0);
	finish();
}

/* Every single-bit change to an obfuscated data datagram is dropped: as obf
 * where the obfuscation layer authenticates it, as decrypt in the body
 * after the sample (the session's AEAD); never delivered, never answered. */
static void obf_tampered(void **state)
{
	uint8_t pkt[200], d[YIP_MAX_DGRAM], t[YIP_MAX_DGRAM];
	size_t len;
	uint64_t obf = 0, dec = 0;

	(void)state;
	obf_start(NULL, true);
	pair_discard(A);
	pair_discard(B);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_true(A->nout >= 1);
	len = A->out[0].len;
	memcpy(d, A->out[0].buf, len);
	pair_discard(A);
	for (size_t i = 0; i < len; i++) {
		struct yip_device_info di;

		memcpy(t, d, len);
		t[i] ^= (uint8_t)(1 << (i % 8));
		mark();
		pair_rx(B, now, &A->addr, t, len);
		yip_device_info(&B->dev, &di);
		if (i >= OBF_HDR + OBF_SAMPLE && i < len - OBF_TRAILER - obf_frame_pad(len) &&
		    di.drops[YIP_DROP_DECRYPT] != before[1][YIP_DROP_DECRYPT]) {
			expect(1, YIP_DROP_DECRYPT, 1);
			dec++;
		} else {
			expect(1, YIP_DROP_OBF, 1);
			obf++;
		}
	}
	assert_true(obf >= OBF_HDR + OBF_SAMPLE + OBF_TRAILER && dec > 100);
	assert_int_equal(B->packets, 1);
	assert_int_equal(B->nout, 0);
	/* The datagram itself still arrives. */
	pair_rx(B, now, &A->addr, d, len);
	assert_int_equal(B->packets, 2);
	finish();
}

/* A replayed obfuscated Init is refused by its timestamp and gets no answer. */
static void obf_replayed_init(void **state)
{
	uint8_t init[YIP_MAX_DGRAM], pkt[64];
	size_t len;

	(void)state;
	obf_start(NULL, false);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	len = A->out[0].len;
	memcpy(init, A->out[0].buf, len);
	pair_settle(&P, now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	now += YIP_NS_PER_S;
	mark();
	pair_rx(B, now, &A->addr, init, len);
	expect(1, YIP_DROP_STALE_INIT, 1);
	assert_int_equal(B->nout, 0);
	finish();
}

/* Two networks' keys: the Init is noise to the responder, which stays silent. */
static void obf_other_key(void **state)
{
	uint8_t pkt[64];

	(void)state;
	obf_start(psk_two, false);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_int_equal(A->nout, 1);
	mark();
	pair_pump(&P, 0, now, NULL, NULL);
	expect(1, YIP_DROP_OBF, 1);
	assert_int_equal(B->nout, 0);
	assert_false(yip_peer_established(A->dev.peers[0], now));
	finish();
}

/* obf_junk: junk ahead of the first Init on a direct path, thrown away by
 * the receiver without a drop; obf_cover_ms: keepalives while idle. */
static void obf_junk_and_cover(void **state)
{
	struct pair_opts o = {.obf_psk = {psk_one, psk_one}, .obf_junk = 3, .obf_cover_ms = 200};
	uint8_t pkt[64];
	unsigned sent;

	(void)state;
	start(&o);
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	assert_int_equal(A->nout, 4); /* three junk datagrams, then the Init */
	for (unsigned i = 0; i < 3; i++)
		assert_true(A->out[i].len >= OBF_JUNK_MIN && A->out[i].len <= OBF_JUNK_MAX);
	mark();
	pair_settle(&P, now);
	expect(1, YIP_DROP_OBF, 0);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	assert_int_equal(B->packets, 1);
	/* Idle for 10 s: cover keepalives, padded to 64 bytes, 100 to 300 ms
	 * apart unless the node sent something else meanwhile (each one asks
	 * the other side for a loss report, which is that something). */
	pair_discard(A);
	sent = 0;
	for (uint64_t end = now + 10 * YIP_NS_PER_S; now < end; now += 10 * YIP_NS_PER_MS) {
		pair_timers(&P, now);
		for (unsigned i = 0; i < A->nout; i++)
			sent += A->out[i].len == 64;
		pair_settle(&P, now);
	}
	assert_in_range(sent, 20, 100);
	assert_int_equal(B->packets, 1); /* keepalives deliver nothing */
	finish();
}

/* ---- the device side ----------------------------------------------------------- */

static void no_route(void **state)
{
	uint8_t pkt[64];

	(void)state;
	start(NULL);
	mark();
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 99));
	expect(0, YIP_DROP_NO_ROUTE, 1);
	assert_int_equal(A->packets, 1); /* the ICMP unreachable, which is not a drop */
	finish();
}

static void bad_inner_tx(void **state)
{
	uint8_t pkt[64] = {0x45};

	(void)state;
	start(NULL);
	pkt[3] = 200; /* longer than the packet */
	mark();
	yip_device_tx(&A->dev, now, pkt, sizeof(pkt));
	expect(0, YIP_DROP_BAD_INNER, 1);
	finish();
}

static void too_big(void **state)
{
	static uint8_t pkt[YIP_MAX_MTU + 64];
	size_t len;

	(void)state;
	start(NULL);
	len = yip_device_mtu(&A->dev) + 1;
	mark();
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, len, 1, 2));
	expect(0, YIP_DROP_TOO_BIG, 1);
	finish();
}

static void no_endpoint(void **state)
{
	struct pair_opts o = {.no_endpoint = {true, false}};
	uint8_t pkt[64];

	(void)state;
	start(&o);
	mark();
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	expect(0, YIP_DROP_NO_ENDPOINT, 1);
	finish();
}

/* While a handshake goes unanswered, the 17th packet pushes out the first;
 * when the handshake gives up, the 16 that waited go too. */
static void queue_full_then_timeout(void **state)
{
	uint8_t pkt[64];

	(void)state;
	start(NULL);
	for (int i = 0; i < 16; i++)
		yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	mark();
	yip_device_tx(&A->dev, now, pkt, ip4(pkt, sizeof(pkt), 1, 2));
	expect(0, YIP_DROP_QUEUE_FULL, 1);
	mark();
	for (int s = 0; s <= 95; s++) {
		yip_device_timers(&A->dev, now + (uint64_t)s * YIP_NS_PER_S);
		pair_discard(A);
	}
	expect(0, YIP_DROP_HANDSHAKE_TIMEOUT, 16);
	finish();
}

/* Runs last: a reason added to peer.h without a case here fails. */
static void every_reason_walked(void **state)
{
	static const enum yip_drop outside[] = {YIP_DROP_TRUNCATED, YIP_DROP_SEND_FAILED,
	                                        YIP_DROP_TUN_WRITE_FAILED, YIP_DROP_AQM};

	(void)state;
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		walked[outside[i]] = true; /* counted by the event loop */
	for (int d = 0; d < YIP_DROP_COUNT; d++)
		if (!walked[d])
			fail_msg("no case walks the drop '%s'", yip_drop_name((enum yip_drop)d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(malformed),
	    cmocka_unit_test(bad_mac1),
	    cmocka_unit_test(handshake_failed_noise),
	    cmocka_unit_test(handshake_failed_cipher),
	    cmocka_unit_test(unknown_peer),
	    cmocka_unit_test(not_admitted),
	    cmocka_unit_test(under_load),
	    cmocka_unit_test(rate_limited_source),
	    cmocka_unit_test(rate_limited_peer),
	    cmocka_unit_test(bad_cookie),
	    cmocka_unit_test(stale_init),
	    cmocka_unit_test(glare),
	    cmocka_unit_test(unknown_index),
	    cmocka_unit_test(unknown_index_resp),
	    cmocka_unit_test(replay),
	    cmocka_unit_test(decrypt),
	    cmocka_unit_test(expired),
	    cmocka_unit_test(bad_inner),
	    cmocka_unit_test(bad_inner_arq),
	    cmocka_unit_test(bad_inner_tap),
	    cmocka_unit_test(source_not_allowed),
	    cmocka_unit_test(bad_repair),
	    cmocka_unit_test(bad_repair_rebuilt),
	    cmocka_unit_test(repair_k64),
	    cmocka_unit_test(bad_repair_fec_off),
	    cmocka_unit_test(fec_duplicate),
	    cmocka_unit_test(arq_duplicate),
	    cmocka_unit_test(bad_report),
	    cmocka_unit_test(bad_ctrl),
	    cmocka_unit_test(bad_relay),
	    cmocka_unit_test(obf_foreign),
	    cmocka_unit_test(obf_tampered),
	    cmocka_unit_test(obf_replayed_init),
	    cmocka_unit_test(obf_other_key),
	    cmocka_unit_test(obf_junk_and_cover),
	    cmocka_unit_test(no_route),
	    cmocka_unit_test(bad_inner_tx),
	    cmocka_unit_test(too_big),
	    cmocka_unit_test(no_endpoint),
	    cmocka_unit_test(queue_full_then_timeout),
	    cmocka_unit_test(every_reason_walked),
	};

	yip_crypto_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
