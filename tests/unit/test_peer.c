/*
 * Two engines wired back to back in memory (tests/lib/pair.h): handshake,
 * data both ways, rekey without loss, replayed Init, glare, roaming and
 * garbage, and loss recovery under random and bursty loss.
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

#include "cookie/cookie.h"
#include "pair.h"
#include "peer/peer.h"
#include "peer/internal.h" /* protect_queueing, index_find, the sessions */
#include "util/clock.h"
#include "wire/wire.h"

#include "testpkt.h"

#define MAXQ 64

static const struct yip_timing timing = {
    .rekey_after = 2 * YIP_NS_PER_S,
    .reject_after = 6 * YIP_NS_PER_S,
    .rekey_attempt = 90 * YIP_NS_PER_S,
    .retry_base = YIP_NS_PER_S,
    .retry_max = 8 * YIP_NS_PER_S,
    .keepalive = 10 * YIP_NS_PER_S,
    .dead_after = 15 * YIP_NS_PER_S,
    .prev_overlap = 15 * YIP_NS_PER_S,
};

static struct pair P;
static struct pair_node *A, *B;  /* P.n[0] and P.n[1] */
static unsigned node_ciphers[2]; /* cfg.ciphers of A and B; 0 = auto */

/* Random loss for pair_pump; one generator for the whole run, so it is repeatable. */
static struct pair_loss loss = {.state = 12345};

static void set_v4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void settle(uint64_t now)
{
	pair_settle(&P, now);
}

/* Delivers what node `from` sent, dropping each datagram with the given probability. */
static void pump_lossy(int from, uint64_t now, unsigned percent)
{
	loss.percent = percent;
	pair_pump(&P, from, now, pair_keep_lossy, &loss);
}

/* A minimal IPv4 packet from src to dst with a one-byte marker payload. */
static size_t ip4(uint8_t *p, const char *src, const char *dst, uint8_t marker)
{
	ip4_packet(p, 21, 253, src, dst);
	p[20] = marker;
	return 21;
}

/* A (10.0.0.1, 192.0.2.1) and B (10.0.0.2, 192.0.2.2) with fresh keys, MTU 1420. */
static int setup(void **state)
{
	const struct pair_opts o = {
	    .ciphers = {node_ciphers[0], node_ciphers[1]},
	    .timing = &timing,
	    .out_cap = MAXQ,
	    .keep_cap = 4096, /* a rebuilt packet lets all it held back go at once */
	    .keep_len = 1500,
	};
	char err[256];

	(void)state;
	/* Every test draws the same losses whatever ran before it: a change
	 * in one test's traffic must not move another's loss pattern. */
	loss = (struct pair_loss){.state = 12345};
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

static void ping(uint64_t now, uint8_t marker)
{
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", marker);

	yip_device_tx(&A->dev, now, pkt, len);
	settle(now);
	len = ip4(pkt, "10.0.0.2", "10.0.0.1", marker);
	yip_device_tx(&B->dev, now, pkt, len);
	settle(now);
}

static void test_handshake_and_data(void **state)
{
	uint64_t now = YIP_NS_PER_S;

	(void)state;
	ping(now, 7);
	assert_int_equal(B->ndelivered, 1);
	assert_int_equal(B->delivered[0].buf[20], 7);
	assert_int_equal(A->ndelivered, 1);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	assert_true(yip_peer_established(B->dev.peers[0], now));
	assert_int_equal(A->dev.peers[0]->stats.handshakes, 1);
}

/*
 * yipctl ping's rounds (ping.c): no session starts a handshake; a round is a
 * PROBE on every path, each answered by a pong that is measured and counted;
 * a second round within YIP_PING_GAP_MS is refused; a key that is no peer
 * is said so; path probes' answers do not pass for pongs.
 */
static void test_ping_rounds(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	const uint8_t *bkey = A->dev.peers[0]->public_key;
	struct yip_ping_info pi;
	uint8_t nokey[YIP_KEY_LEN] = {1};

	(void)state;
	assert_int_equal(yip_device_ping(&A->dev, now, nokey), YIP_PING_NO_PEER);
	assert_false(yip_device_ping_info(&A->dev, nokey, now, &pi));
	assert_int_equal(yip_device_ping(&A->dev, now, bkey), YIP_PING_NO_SESSION);
	settle(now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	now += YIP_NS_PER_MS;
	assert_int_equal(yip_device_ping(&A->dev, now, bkey), YIP_PING_SENT);
	assert_true(yip_device_ping_info(&A->dev, bkey, now, &pi));
	assert_int_equal(pi.round, 1);
	assert_true(pi.n >= 1);
	assert_false(pi.probes[0].answered);
	assert_int_equal(yip_device_ping(&A->dev, now + YIP_NS_PER_MS, bkey), YIP_PING_TOO_SOON);
	settle(now + 2 * YIP_NS_PER_MS);
	assert_true(yip_device_ping_info(&A->dev, bkey, now + 3 * YIP_NS_PER_MS, &pi));
	assert_true(pi.probes[0].answered);
	assert_false(pi.probes[0].relay);
	assert_int_equal(pi.probes[0].rtt, 2 * YIP_NS_PER_MS);
	assert_int_equal(pi.sent, pi.n);
	assert_int_equal(pi.pongs, pi.n);
	assert_int_equal(pi.refused, 1);
	/* The next round, after the gap, starts afresh. */
	now += YIP_PING_GAP_MS * YIP_NS_PER_MS;
	assert_int_equal(yip_device_ping(&A->dev, now, bkey), YIP_PING_SENT);
	assert_true(yip_device_ping_info(&A->dev, bkey, now, &pi));
	assert_int_equal(pi.round, 2);
	assert_false(pi.probes[0].answered);
}

/*
 * The data cipher: AES-256-GCM when both allow it and the CPU has it,
 * ChaCha20-Poly1305 when either side asks for it, and no session (counted as
 * a failed handshake) when the two have nothing in common. Data flows under
 * whatever was chosen, and a rekey keeps the choice.
 */
static void test_cipher_negotiation(void **state)
{
	const unsigned chacha = YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305);
	const unsigned aes = YIP_CIPHER_BIT(YIP_CIPHER_AES256_GCM);
	const bool have_aes = yip_cipher_available(YIP_CIPHER_AES256_GCM);
	const struct {
		unsigned a, b;
		int want; /* -1: no session */
	} cases[] = {
	    {0, 0, have_aes ? YIP_CIPHER_AES256_GCM : YIP_CIPHER_CHACHA20_POLY1305},
	    {chacha, 0, YIP_CIPHER_CHACHA20_POLY1305},
	    {0, chacha, YIP_CIPHER_CHACHA20_POLY1305},
	    {aes, 0, YIP_CIPHER_AES256_GCM},
	    {0, aes, YIP_CIPHER_AES256_GCM},
	    {aes, chacha, -1},
	    {chacha, aes, -1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t now = YIP_NS_PER_S;

		if (!have_aes && ((cases[i].a | cases[i].b) & aes))
			continue; /* aes-256-gcm alone cannot be configured here */
		node_ciphers[0] = cases[i].a;
		node_ciphers[1] = cases[i].b;
		teardown(NULL);
		setup(NULL);
		ping(now, (uint8_t)i);
		if (cases[i].want < 0) {
			assert_int_equal(B->ndelivered, 0);
			assert_false(yip_peer_established(A->dev.peers[0], now));
			assert_int_equal(B->dev.drops[YIP_DROP_HANDSHAKE_FAILED], 1);
			continue;
		}
		assert_int_equal(B->ndelivered, 1);
		assert_int_equal(A->ndelivered, 1);
		assert_int_equal(A->dev.peers[0]->cur->send.cipher, cases[i].want);
		assert_int_equal(A->dev.peers[0]->cur->recv.cipher, cases[i].want);
		assert_int_equal(B->dev.peers[0]->cur->send.cipher, cases[i].want);
		/* A rekey (A initiated, so it rekeys first) chooses the same. */
		now += timing.rekey_after + YIP_NS_PER_S;
		yip_device_timers(&A->dev, now);
		settle(now);
		ping(now, 99);
		assert_int_equal(B->ndelivered, 2);
		assert_int_equal(A->dev.peers[0]->stats.handshakes, 2);
		assert_int_equal(A->dev.peers[0]->cur->send.cipher, cases[i].want);
	}
	node_ciphers[0] = node_ciphers[1] = 0;
}

static void test_rekey_without_loss(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	unsigned sent = 0;

	(void)state;
	/* 20 s of traffic every 50 ms with a 2 s rekey interval. */
	for (int i = 0; i < 400; i++, now += 50 * YIP_NS_PER_MS) {
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		settle(now);
		ping(now, (uint8_t)i);
		sent++;
		pair_forget(A);
		pair_forget(B);
		assert_int_equal(A->dev.drops[YIP_DROP_NO_ROUTE], 0);
	}
	assert_true(A->dev.peers[0]->stats.handshakes >= 8);
	for (int d = 0; d < YIP_DROP_COUNT; d++) {
		assert_int_equal(A->dev.drops[d], 0);
		assert_int_equal(B->dev.drops[d], 0);
	}
	assert_int_equal(A->dev.peers[0]->stats.rx_packets, sent);
	assert_int_equal(B->dev.peers[0]->stats.rx_packets, sent);
}

/*
 * Key slots (struct yip_key_store). A's engine gets memory for them as
 * yipd gives it (sized for all its peers); B takes them from the heap.
 * 200 configured peers that never talk hold none; a session holds one and
 * a rekey at most YIP_KEY_SLOTS_PER_PEER, taken lowest first and reused,
 * so 20 s of rekeys every 2 s touch a few slots of A's memory. Once the
 * keys have expired and the handshakes given up, every slot is back and
 * A's memory is all zeros again but for the free slots' links: each slot
 * was wiped when it was freed.
 */
static void test_key_slots(void **state)
{
	const struct pair_opts o = {.timing = &timing, .out_cap = MAXQ, .extra_peers = 200};
	uint64_t now = YIP_NS_PER_S, end;
	size_t len, max_held[2] = {0, 0};
	struct pair K;
	uint8_t *mem;
	char err[256];

	(void)state;
	assert_int_equal(pair_init(&K, &o, err, sizeof(err)), 0);
	len = yip_device_key_memory_size(&K.n[0].dev);
	/* Room for every peer it has, and for those yip_device_peer_set may add. */
	assert_int_equal(len, (201 + YIP_MAX_ADDED_PEERS) * YIP_KEY_SLOTS_PER_PEER *
	                          sizeof(union yip_key_slot));
	mem = aligned_alloc(_Alignof(union yip_key_slot), len);
	assert_non_null(mem);
	memset(mem, 0, len);
	yip_device_key_memory(&K.n[0].dev, mem, len);
	assert_int_equal(K.n[0].dev.keys.held, 0);
	assert_int_equal(K.n[1].dev.keys.held, 0);

	for (int i = 0; i < 400; i++, now += 50 * YIP_NS_PER_MS) {
		uint8_t pkt[64];

		pair_timers(&K, now);
		pair_settle(&K, now);
		yip_device_tx(&K.n[0].dev, now, pkt, ip4(pkt, "10.0.0.1", "10.0.0.2", 1));
		pair_settle(&K, now);
		yip_device_tx(&K.n[1].dev, now, pkt, ip4(pkt, "10.0.0.2", "10.0.0.1", 2));
		pair_settle(&K, now);
		for (int n = 0; n < 2; n++)
			if (K.n[n].dev.keys.held > max_held[n])
				max_held[n] = K.n[n].dev.keys.held;
	}
	print_message("key slots over %llu handshakes: at most %zu and %zu held, %zu of A's %zu "
	              "slots ever used\n",
	              (unsigned long long)K.n[0].dev.peers[0]->stats.handshakes, max_held[0],
	              max_held[1], K.n[0].dev.keys.used, K.n[0].dev.keys.n);
	assert_true(K.n[0].dev.peers[0]->stats.handshakes >= 8);
	assert_true(K.n[1].packets >= 390 && K.n[0].packets >= 390);
	for (int n = 0; n < 2; n++) {
		assert_true(max_held[n] >= 2); /* the old keys stay a while after a rekey */
		assert_true(max_held[n] <= YIP_KEY_SLOTS_PER_PEER);
	}
	assert_true(K.n[0].dev.keys.used >= 2 && K.n[0].dev.keys.used <= YIP_KEY_SLOTS_PER_PEER);
	assert_int_equal(K.n[0].dev.keys.refused, 0);

	/* Silence: nothing arrives any more. Keys expire, handshakes give up. */
	end = now + 2 * timing.rekey_attempt;
	while (now < end) {
		uint64_t next = pair_timers(&K, now);

		pair_discard(&K.n[0]);
		pair_discard(&K.n[1]);
		now = next > now && next < end ? next : now + YIP_NS_PER_S;
	}
	assert_false(K.n[0].dev.peers[0]->hs_pending);
	assert_int_equal(K.n[0].dev.keys.held, 0);
	assert_int_equal(K.n[1].dev.keys.held, 0);
	/* A free slot holds the link to the next free one, and nothing else. */
	for (size_t i = 0; i < len; i++)
		if (mem[i] != 0 && i % sizeof(union yip_key_slot) >= sizeof(void *))
			fail_msg("byte %zu of the key memory is not wiped", i);
	pair_free(&K);
	free(mem);
}

static void test_replayed_init_refused(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64], init[WIRE_INIT_LEN];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", 1);
	union yip_sockaddr evil;
	uint64_t hs_before;

	(void)state;
	yip_device_tx(&A->dev, now, pkt, len);
	assert_int_equal(A->nout, 1);
	assert_int_equal(A->out[0].len, WIRE_INIT_LEN);
	memcpy(init, A->out[0].buf, WIRE_INIT_LEN);
	settle(now);
	ping(now, 2);
	hs_before = B->dev.peers[0]->stats.handshakes;

	/* The captured Init, replayed from another address (later than one
	 * costly Init per peer may come, so it meets the timestamp check). */
	set_v4(&evil, "198.51.100.9", 4444);
	yip_device_rx(&B->dev, now + YIP_INIT_PEER_NS, &evil, init, sizeof(init));
	assert_int_equal(B->nout, 0);
	assert_int_equal(B->dev.drops[YIP_DROP_STALE_INIT], 1);
	assert_int_equal(B->dev.peers[0]->stats.handshakes, hs_before);
	assert_true(yip_sockaddr_eq(&B->dev.peers[0]->endpoint, &A->addr));
	pair_forget(B);
	ping(now + YIP_INIT_PEER_NS + 1, 3);
	assert_int_equal(B->ndelivered, 1);
}

/*
 * B is flooded with Inits that pass mac1 (anyone who knows its public key
 * can make those): past YIP_INIT_LOAD a second it answers A's Init with a
 * cookie instead of doing Diffie-Hellman. A keeps the cookie, its retry
 * proves its address with mac2, and the handshake completes while the
 * flood goes on.
 */
static void flood(uint64_t now, unsigned n)
{
	uint8_t d[WIRE_INIT_LEN], key[YIP_KEY_LEN];
	union yip_sockaddr src;

	wire_mac1_key(key, B->dev.public_key);
	for (unsigned i = 0; i < n; i++) {
		memset(d, 0x77, sizeof(d));
		wire_init_put(d, i);
		wire_init_mac1_put(d, key);
		set_v4(&src, "198.51.100.1", (uint16_t)(1000 + i));
		src.in4.sin_addr.s_addr = htonl(0xc6336400 | (i & 0xff)); /* 198.51.100.x */
		yip_device_rx(&B->dev, now, &src, d, sizeof(d));
	}
	pair_discard(B); /* cookies for the flood's sources go nowhere */
}

static void test_handshake_under_load(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", 1);
	uint64_t failed;

	(void)state;
	flood(now, YIP_INIT_LOAD + 20);
	failed = B->dev.drops[YIP_DROP_HANDSHAKE_FAILED];
	yip_device_tx(&A->dev, now, pkt, len);
	settle(now);
	/* B answered with a cookie and did no DH: nothing failed, nothing done. */
	assert_int_equal(B->dev.drops[YIP_DROP_HANDSHAKE_FAILED], failed);
	assert_true(B->dev.drops[YIP_DROP_UNDER_LOAD] >= 21);
	assert_false(yip_peer_established(A->dev.peers[0], now));
	assert_true(A->dev.peers[0]->cookie.got != 0);
	/* A's retry, a second later, in a second that is also flooded. */
	now += 2 * YIP_NS_PER_S;
	flood(now, YIP_INIT_LOAD + 20);
	pair_timers(&P, now);
	settle(now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	assert_true(yip_peer_established(B->dev.peers[0], now));
	pair_forget(B);
	ping(now, 2);
	assert_int_equal(B->ndelivered, 1);
}

/* A flood faster than YIP_COOKIE_RATE is answered with at most that many
 * Cookies a second (each one a seal and a send), and every Init is still
 * counted; the budget refills with time. */
static void flood_many(uint64_t now, unsigned n)
{
	for (unsigned i = 0; i < n; i += 50)
		flood(now, 50); /* the pair holds 64 datagrams at a time */
}

static void test_cookie_answers_capped(void **state)
{
	uint64_t now = YIP_NS_PER_S, sent, drops = B->dev.drops[YIP_DROP_UNDER_LOAD];

	(void)state;
	sent = B->datagrams;
	flood_many(now, 3 * YIP_COOKIE_RATE);
	sent = B->datagrams - sent;
	assert_true(sent <= YIP_COOKIE_RATE);
	assert_true(sent >= YIP_COOKIE_RATE - YIP_INIT_LOAD);
	assert_true(B->dev.drops[YIP_DROP_UNDER_LOAD] - drops >=
	            3 * YIP_COOKIE_RATE - 2 * YIP_INIT_LOAD);
	/* Half a second later, half the budget is back. */
	now += YIP_NS_PER_S / 2;
	sent = B->datagrams;
	flood_many(now, YIP_COOKIE_RATE);
	sent = B->datagrams - sent;
	assert_true(sent >= YIP_COOKIE_RATE / 2 - 1 && sent <= YIP_COOKIE_RATE / 2 + 1);
}

/*
 * Cookie nonces: a checker seals every Cookie under one key for its whole
 * life, so no two of its nonces may be equal (they come from a random base
 * and a count, not a random draw each). Every Cookie opens for the Init it
 * answers; a checker made again (a restart) starts elsewhere. A cookie
 * binds its source: one made for a relay path (server, relay id) is no
 * good from another relay id or from the server's address itself.
 */
static void test_cookie_nonces_and_sources(void **state)
{
	enum { N = 2000 };
	static uint8_t nonces[N][WIRE_COOKIE_NONCE];
	uint8_t pub[YIP_KEY_LEN], key[YIP_KEY_LEN], init[WIRE_INIT_LEN], msg[WIRE_COOKIE_MSG];
	struct cookie_checker c, again;
	struct cookie_source relay1, relay2, direct;
	union yip_sockaddr server;
	struct wire_cookie m;
	struct cookie_jar j;
	uint64_t now = YIP_NS_PER_S;

	(void)state;
	randombytes_buf(pub, sizeof(pub));
	cookie_checker_init(&c, pub);
	cookie_jar_init(&j, pub);
	wire_mac1_key(key, pub);
	memset(init, 0x55, sizeof(init));
	wire_init_put(init, 77);
	wire_init_mac1_put(init, key);
	cookie_jar_stamp(&j, now, init, sizeof(init));
	set_v4(&server, "198.51.100.1", 7000);
	cookie_source_relay(&relay1, &server, 1);
	cookie_source_relay(&relay2, &server, 2);
	cookie_source_addr(&direct, &server);
	for (int i = 0; i < N; i++) {
		cookie_reply(&c, now, &relay1, init, sizeof(init), msg);
		assert_true(wire_cookie_get(&m, msg, sizeof(msg)));
		assert_true(cookie_jar_take(&j, now, &m));
		memcpy(nonces[i], m.nonce, WIRE_COOKIE_NONCE);
	}
	for (int i = 0; i < N; i++)
		for (int k = i + 1; k < N; k++)
			if (memcmp(nonces[i], nonces[k], WIRE_COOKIE_NONCE) == 0)
				fail_msg("Cookies %d and %d share a nonce", i, k);
	cookie_checker_init(&again, pub);
	cookie_reply(&again, now, &relay1, init, sizeof(init), msg);
	assert_true(wire_cookie_get(&m, msg, sizeof(msg)));
	assert_memory_not_equal(m.nonce, nonces[0], WIRE_COOKIE_NONCE);

	/* The next Init carries a mac2 made with the relay path's cookie. */
	wire_init_put(init, 78);
	wire_init_mac1_put(init, key);
	cookie_jar_stamp(&j, now, init, sizeof(init));
	assert_true(cookie_check(&c, now, &relay1, init, sizeof(init)));
	assert_false(cookie_check(&c, now, &relay2, init, sizeof(init)));
	assert_false(cookie_check(&c, now, &direct, init, sizeof(init)));
	cookie_checker_wipe(&c);
	cookie_checker_wipe(&again);
}

/*
 * An Init that claims A's key, made without A's private key (the ss DH
 * uses a random one), with a valid mac1 and a timestamp newer than any:
 * what anyone who knows both public keys can send. B pays both DHs and
 * the payload fails to open.
 */
static void forge_init(uint8_t d[WIRE_INIT_LEN], uint32_t sender)
{
	struct wire_init_payload pl = {.ciphers = 0xff};
	uint8_t priv[YIP_KEY_LEN], payload[WIRE_INIT_PAYLOAD], key[YIP_KEY_LEN];
	struct noise_hs hs;

	randombytes_buf(priv, sizeof(priv));
	noise_hs_init(&hs, true, (const uint8_t *)WIRE_PROLOGUE, WIRE_PROLOGUE_LEN, priv,
	              A->dev.public_key, B->dev.public_key);
	yip_tai64n(pl.tai64n, B->wall + 3600 * YIP_NS_PER_S);
	wire_init_payload_put(payload, &pl);
	memset(d, 0, WIRE_INIT_LEN);
	assert_int_equal(noise_write_msg1(&hs, payload, sizeof(payload), wire_init_put(d, sender),
	                                  WIRE_MSG1_LEN),
	                 WIRE_MSG1_LEN);
	wire_mac1_key(key, B->dev.public_key);
	wire_init_mac1_put(d, key);
}

/* A sends B a packet; its Init (the first datagram) is kept in init. */
static void first_init(uint64_t now, uint8_t init[WIRE_INIT_LEN])
{
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", 7);

	yip_device_tx(&A->dev, now, pkt, len);
	assert_true(A->nout >= 1);
	assert_int_equal(A->out[0].len, WIRE_INIT_LEN);
	memcpy(init, A->out[0].buf, WIRE_INIT_LEN);
}

/*
 * The review's lockout: B used to renew A's one-Init-per-50-ms limiter
 * before the Init authenticated, so an Init every 50 ms, forged (claiming
 * A's key) or replayed (A's own, captured earlier), from one address and
 * inside that address's budget, had every real Init of A's refused. Now
 * only an Init that authenticated and is newer than the last one counts.
 * A restarts (same keys, an empty table) and its Init reaches B 10 ms
 * after an attacker's: B answers it.
 */
static void lockout(bool replay)
{
	uint8_t captured[WIRE_INIT_LEN], evil_init[WIRE_INIT_LEN], init[WIRE_INIT_LEN];
	uint64_t now = YIP_NS_PER_S, hs;
	union yip_sockaddr evil;
	char err[256];

	first_init(now, captured);
	settle(now);
	assert_true(yip_peer_established(B->dev.peers[0], now));
	assert_int_equal(pair_node_reset(&P, 0, err, sizeof(err)), 0);
	A->wall = B->wall + YIP_NS_PER_S; /* its clock went on while it was down */
	set_v4(&evil, "198.51.100.7", 4444);
	hs = B->dev.peers[0]->stats.handshakes;
	for (unsigned i = 0; i < 10; i++) {
		now += YIP_INIT_PEER_NS;
		if (replay)
			memcpy(evil_init, captured, WIRE_INIT_LEN);
		else
			forge_init(evil_init, 1000 + i);
		yip_device_rx(&B->dev, now, &evil, evil_init, WIRE_INIT_LEN);
		assert_int_equal(B->nout, 0); /* never an answer to the attacker */
	}
	assert_int_equal(B->dev.drops[replay ? YIP_DROP_STALE_INIT : YIP_DROP_HANDSHAKE_FAILED],
	                 10);
	now += YIP_INIT_PEER_NS / 5;
	first_init(now, init);
	pair_discard(A);
	yip_device_rx(&B->dev, now, &A->addr, init, WIRE_INIT_LEN);
	assert_int_equal(B->dev.drops[YIP_DROP_RATE_LIMITED], 0);
	assert_int_equal(B->dev.peers[0]->stats.handshakes, hs + 1);
	assert_int_equal(B->nout, 1); /* the Resp */
	pair_pump(&P, 1, now, NULL, NULL);
	assert_true(yip_peer_established(A->dev.peers[0], now));
}

static void test_forged_inits_do_not_lock_out(void **state)
{
	(void)state;
	lockout(false);
}

static void test_replayed_inits_do_not_lock_out(void **state)
{
	(void)state;
	lockout(true);
}

/* A and B have a session from A's first Init (kept in captured); then B
 * restarts, remembering no timestamp of A's, its clock at `wall`. */
static void b_restarts_after(uint64_t now, uint8_t captured[WIRE_INIT_LEN], uint64_t wall)
{
	char err[256];

	first_init(now, captured);
	settle(now);
	assert_true(yip_peer_established(B->dev.peers[0], now));
	assert_int_equal(pair_node_reset(&P, 1, err, sizeof(err)), 0);
	B->wall = wall;
}

/*
 * Timestamps older than WIRE_INIT_MAX_AGE_NS by the responder's clock are
 * refused whether or not it remembers the sender: a recorded Init replayed
 * after B restarted gets nothing back once it is that old, and an
 * initiator whose clock is that far behind is refused (and within it, is
 * answered).
 */
static void test_old_init_refused(void **state)
{
	uint8_t captured[WIRE_INIT_LEN], init[WIRE_INIT_LEN];
	uint64_t now = YIP_NS_PER_S, stale;
	union yip_sockaddr evil;
	char err[256];

	(void)state;
	b_restarts_after(now, captured, PAIR_WALL_START + WIRE_INIT_MAX_AGE_NS + YIP_NS_PER_S);
	set_v4(&evil, "198.51.100.7", 4444);
	stale = B->dev.drops[YIP_DROP_STALE_INIT];
	yip_device_rx(&B->dev, now, &evil, captured, WIRE_INIT_LEN);
	assert_int_equal(B->nout, 0);
	assert_int_equal(B->dev.drops[YIP_DROP_STALE_INIT], stale + 1);
	assert_int_equal(B->dev.peers[0]->stats.handshakes, 0);

	/* A's clock 121 s behind B's: refused; 100 s behind: answered. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pair_node_reset(&P, 0, err, sizeof(err)), 0);
		A->wall =
		    B->wall - (i == 0 ? WIRE_INIT_MAX_AGE_NS + YIP_NS_PER_S : 100 * YIP_NS_PER_S);
		now += YIP_NS_PER_S;
		first_init(now, init);
		pair_discard(A);
		yip_device_rx(&B->dev, now, &A->addr, init, WIRE_INIT_LEN);
		assert_int_equal(B->nout, i);
		assert_int_equal(B->dev.drops[YIP_DROP_STALE_INIT], stale + 2);
		assert_int_equal(B->dev.peers[0]->stats.handshakes, (uint64_t)i);
	}
}

/*
 * After B restarts it remembers no timestamp of A's, so a captured Init of
 * A's, replayed within WIRE_INIT_MAX_AGE_NS from another address, is
 * accepted once more and answered there (the attacker cannot use the
 * Resp). It used to move B's path for A to the attacker's address until
 * A's next handshake; now a path becomes A's only when A uses the keys.
 */
static void test_replay_after_restart_moves_nothing(void **state)
{
	uint8_t captured[WIRE_INIT_LEN], pkt[64];
	uint64_t now = YIP_NS_PER_S;
	union yip_sockaddr evil;

	(void)state;
	b_restarts_after(now, captured, PAIR_WALL_START + 10 * YIP_NS_PER_S);
	set_v4(&evil, "198.51.100.7", 4444);
	yip_device_rx(&B->dev, now, &evil, captured, WIRE_INIT_LEN);
	assert_int_equal(B->nout, 1);
	assert_true(yip_sockaddr_eq(&B->out[0].to, &evil));
	pair_discard(B);
	assert_true(yip_sockaddr_eq(&B->dev.peers[0]->endpoint, &A->addr));
	/* B's own traffic for A still goes to A, which answers its Init. */
	yip_device_tx(&B->dev, now + YIP_NS_PER_S, pkt, ip4(pkt, "10.0.0.2", "10.0.0.1", 5));
	assert_true(B->nout >= 1);
	assert_true(yip_sockaddr_eq(&B->out[0].to, &A->addr));
}

/* A forged Resp that names A's pending Init (indices travel in the clear)
 * fails, and the real one still completes the handshake: A works on a
 * copy of its handshake state. */
static void test_forged_resp_spoils_nothing(void **state)
{
	uint8_t pkt[64], forged[WIRE_RESP_LEN], key[YIP_KEY_LEN];
	uint64_t now = YIP_NS_PER_S;
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", 1);

	(void)state;
	yip_device_tx(&A->dev, now, pkt, len);
	pair_pump(&P, 0, now, NULL, NULL); /* A's Init reaches B; B's Resp waits */
	assert_int_equal(B->nout, 1);
	memset(forged, 0x5a, sizeof(forged));
	wire_resp_put(forged, 0x12345678, A->dev.peers[0]->hs_index);
	wire_mac1_key(key, A->dev.public_key);
	wire_mac1_put(forged, sizeof(forged), key);
	yip_device_rx(&A->dev, now, &B->addr, forged, sizeof(forged));
	assert_int_equal(A->dev.drops[YIP_DROP_HANDSHAKE_FAILED], 1);
	assert_false(yip_peer_established(A->dev.peers[0], now));
	settle(now);
	assert_true(yip_peer_established(A->dev.peers[0], now));
	assert_int_equal(B->ndelivered, 1);
}

/*
 * Per-source budgets: an IPv6 sender holds a whole /64, so every address
 * in one /64 shares one budget (2 x YIP_INIT_RATE at once); IPv4 senders,
 * also as IPv4-mapped IPv6 from a dual-stack socket, have one each. The
 * Inits are garbage past a valid mac1: each one that passes the budget
 * costs B one DH and fails (handshake_failed).
 */
static unsigned budget_passed(uint64_t now, int family, bool mapped)
{
	uint8_t d[WIRE_INIT_LEN], key[YIP_KEY_LEN];
	uint64_t failed = B->dev.drops[YIP_DROP_HANDSHAKE_FAILED];
	union yip_sockaddr src;

	wire_mac1_key(key, B->dev.public_key);
	for (unsigned i = 0; i < 80; i++) { /* under YIP_INIT_LOAD: no cookies */
		memset(d, 0x77, sizeof(d));
		wire_init_put(d, i);
		wire_init_mac1_put(d, key);
		memset(&src, 0, sizeof(src));
		if (family == AF_INET) {
			set_v4(&src, "198.51.100.1", 4000);
			src.in4.sin_addr.s_addr = htonl(0xc6336400 | i); /* 198.51.100.i */
			if (mapped)
				yip_sockaddr_to_v6(&src);
		} else {
			src.in6.sin6_family = AF_INET6;
			src.in6.sin6_port = htons(4000);
			inet_pton(AF_INET6, "2001:db8:1:2::", &src.in6.sin6_addr);
			src.in6.sin6_addr.s6_addr[8] = (uint8_t)i; /* another host of the /64 */
			src.in6.sin6_addr.s6_addr[15] = (uint8_t)(i * 7 + 1);
		}
		yip_device_rx(&B->dev, now, &src, d, sizeof(d));
	}
	pair_discard(B);
	return (unsigned)(B->dev.drops[YIP_DROP_HANDSHAKE_FAILED] - failed);
}

static void test_init_budget_per_source(void **state)
{
	uint64_t now = YIP_NS_PER_S;

	(void)state;
	assert_int_equal(budget_passed(now, AF_INET6, false), 2 * YIP_INIT_RATE);
	assert_int_equal(budget_passed(now + 2 * YIP_NS_PER_S, AF_INET, false), 80);
	assert_int_equal(budget_passed(now + 4 * YIP_NS_PER_S, AF_INET, true), 80);
}

static void test_glare(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64];
	size_t len;

	(void)state;
	/* Both send at once: each emits an Init before seeing the other's. */
	len = ip4(pkt, "10.0.0.1", "10.0.0.2", 1);
	yip_device_tx(&A->dev, now, pkt, len);
	len = ip4(pkt, "10.0.0.2", "10.0.0.1", 2);
	yip_device_tx(&B->dev, now, pkt, len);
	settle(now);
	assert_int_equal(A->dev.drops[YIP_DROP_GLARE] + B->dev.drops[YIP_DROP_GLARE], 1);
	assert_int_equal(A->ndelivered, 1);
	assert_int_equal(B->ndelivered, 1);
	assert_int_equal(A->dev.peers[0]->stats.handshakes, 1);
	assert_int_equal(B->dev.peers[0]->stats.handshakes, 1);
}

static void test_roaming_and_spoofing(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64];
	size_t len;
	union yip_sockaddr moved;

	(void)state;
	ping(now, 1);
	/* A moves: B follows only after a datagram authenticates. */
	set_v4(&moved, "203.0.113.7", 40000);
	A->addr = moved;
	len = ip4(pkt, "10.0.0.1", "10.0.0.2", 9);
	yip_device_tx(&A->dev, now, pkt, len);
	/* A forged copy with a flipped byte from a third address must not move it. */
	{
		union yip_sockaddr evil;
		uint8_t bad[YIP_MAX_DGRAM];
		size_t blen = A->out[0].len;

		memcpy(bad, A->out[0].buf, blen);
		bad[blen - 1] ^= 1;
		set_v4(&evil, "198.51.100.9", 4444);
		yip_device_rx(&B->dev, now, &evil, bad, blen);
		assert_int_equal(B->dev.drops[YIP_DROP_DECRYPT], 1);
		assert_false(yip_sockaddr_eq(&B->dev.peers[0]->endpoint, &evil));
	}
	settle(now);
	assert_true(yip_sockaddr_eq(&B->dev.peers[0]->endpoint, &moved));
	/* Inner source outside allowed_ips is dropped. */
	len = ip4(pkt, "10.0.0.99", "10.0.0.2", 5);
	yip_device_tx(&A->dev, now, pkt, len);
	pair_forget(B);
	settle(now);
	assert_int_equal(B->ndelivered, 0);
	assert_int_equal(B->dev.drops[YIP_DROP_SOURCE_NOT_ALLOWED], 1);
}

static void test_replayed_data_and_garbage(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64], copy[YIP_MAX_DGRAM], junk[2000];
	size_t len, clen;

	(void)state;
	ping(now, 1);
	len = ip4(pkt, "10.0.0.1", "10.0.0.2", 4);
	yip_device_tx(&A->dev, now, pkt, len);
	clen = A->out[0].len;
	memcpy(copy, A->out[0].buf, clen);
	pair_forget(B);
	settle(now);
	assert_int_equal(B->ndelivered, 1);
	yip_device_rx(&B->dev, now, &A->addr, copy, clen);
	assert_int_equal(B->ndelivered, 1);
	assert_int_equal(B->dev.drops[YIP_DROP_REPLAY], 1);

	for (size_t n = 0; n < sizeof(junk); n += 7) {
		for (size_t i = 0; i < n; i++)
			junk[i] = (uint8_t)(i * 31 + n);
		if (n >= 4)
			junk[0] = (uint8_t)(n % 5), junk[1] = junk[2] = junk[3] = 0;
		yip_device_rx(&B->dev, now, &A->addr, junk, n);
	}
	assert_int_equal(B->ndelivered, 1);
	assert_true(B->dev.drops[YIP_DROP_MALFORMED] > 0);
	pair_forget(B);
	ping(now, 5);
	assert_int_equal(B->ndelivered, 1);
}

static void test_handshake_retry_and_give_up(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64];
	size_t len = ip4(pkt, "10.0.0.1", "10.0.0.2", 1);
	unsigned inits = 0;

	(void)state;
	yip_device_tx(&A->dev, now, pkt, len);
	inits += pair_discard(A);
	for (uint64_t t = now; t < now + 100 * YIP_NS_PER_S; t += 100 * YIP_NS_PER_MS) {
		yip_device_timers(&A->dev, t);
		inits += pair_discard(A);
	}
	/* Backoff 1,2,4,8,8,... s with jitter over 90 s: between 10 and 20 tries. */
	assert_in_range(inits, 10, 20);
	assert_false(A->dev.peers[0]->hs_pending);
	assert_int_equal(A->dev.drops[YIP_DROP_HANDSHAKE_TIMEOUT], 1);
}

/* A UDP packet of len bytes (len >= 28) from a to b carrying a 32-bit sequence number. */
static size_t udp4(uint8_t *p, const char *src, const char *dst, size_t len, uint32_t seq)
{
	ip4_packet(p, len, IPPROTO_UDP, src, dst);
	p[20] = 0x30, p[21] = 0x39, p[22] = 0x30, p[23] = 0x39; /* ports 12345 */
	memcpy(p + 28, &seq, sizeof(seq));
	return len;
}

/*
 * 10 % random loss each way on a steady stream of 1200-byte packets: after
 * the loss reports have raised the redundancy, FEC (and ARQ for what it
 * misses) deliver nearly everything.
 */
/* One millisecond-or-less step of the lossy link: timers, then both directions. */
static void lossy_step(uint64_t now)
{
	yip_device_timers(&A->dev, now);
	yip_device_timers(&B->dev, now);
	pump_lossy(0, now, 10);
	pump_lossy(1, now, 10);
}

/* Counts B's deliveries by sequence number: new ones at or after first. */
static unsigned count_new(bool *seen, uint32_t total, uint32_t first)
{
	unsigned fresh = 0;

	for (unsigned j = 0; j < B->ndelivered; j++) {
		uint32_t seq;

		memcpy(&seq, B->delivered[j].buf + 28, sizeof(seq));
		assert_true(seq < total);
		if (!seen[seq] && seq >= first)
			fresh++;
		seen[seq] = true;
	}
	pair_forget(B);
	return fresh;
}

static void test_fec_under_loss(void **state)
{
	static bool seen[6000];
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[1300];
	unsigned delivered = 0, total = 6000, late = 1000;

	(void)state;
	ping(now, 1);
	pair_forget(B);
	for (uint32_t i = 0; i < total; i++, now += 200 * 1000) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		lossy_step(now);
		delivered += count_new(seen, total, late);
	}
	/* Let the last blocks close and NACKs be answered. */
	for (int t = 0; t < 200; t++, now += YIP_NS_PER_MS) {
		lossy_step(now);
		delivered += count_new(seen, total, late);
	}
	print_message("delivered %u of %u after warm-up; fec %llu arq %llu lost %llu\n", delivered,
	              total - late, (unsigned long long)B->dev.peers[0]->stats.fec_recovered,
	              (unsigned long long)B->dev.peers[0]->stats.arq_recovered,
	              (unsigned long long)B->dev.peers[0]->stats.lost);
	assert_true(B->dev.peers[0]->stats.fec_recovered > 100);
	assert_true(delivered >= (total - late) * 995 / 1000);
}

/* A repair symbol with one flipped bit never produces a delivered packet. */
static void test_corrupt_repair_never_delivers(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[64];
	size_t len;

	(void)state;
	ping(now, 1);
	pair_forget(B);
	/* Interactive traffic carries a repair right behind each packet. */
	for (int i = 0; i < 8; i++) {
		len = ip4(pkt, "10.0.0.1", "10.0.0.2", (uint8_t)i);
		now += 50 * YIP_NS_PER_MS;
		yip_device_tx(&A->dev, now, pkt, len);
		if (i < 7) {
			settle(now);
			continue;
		}
		/* The last one: lose the source, corrupt every repair. */
		for (unsigned j = 1; j < A->nout; j++) {
			assert_int_equal(A->out[j].buf[0], WIRE_REPAIR);
			A->out[j].buf[A->out[j].len / 2] ^= 0x20;
			yip_device_rx(&B->dev, now, &A->addr, A->out[j].buf, A->out[j].len);
		}
		A->nout = 0;
	}
	assert_int_equal(B->ndelivered, 7);
	assert_true(B->dev.drops[YIP_DROP_DECRYPT] >= 1);
	assert_int_equal(B->dev.peers[0]->stats.fec_recovered, 0);
}

/* Sends n bulk packets of varying sizes A -> B at 5 kpps with loss, running timers. */
static void run_stream(uint32_t n, unsigned percent, uint64_t *now, bool vary)
{
	uint8_t pkt[1500];

	for (uint32_t i = 0; i < n; i++, *now += 200 * 1000) {
		size_t len = vary ? 100 + (i * 397) % 1300 : 1200;

		yip_device_tx(&A->dev, *now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", len, i));
		yip_device_timers(&A->dev, *now);
		yip_device_timers(&B->dev, *now);
		pump_lossy(0, *now, percent);
		pump_lossy(1, *now, percent);
		pair_forget(B);
	}
}

/*
 * The sender's loss estimate follows what the receiver reports: it rises to
 * the real rate under loss (and the bulk class gets repairs), then decays on
 * a clean link until bulk traffic carries no redundancy at all.
 */
static void test_loss_estimator(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	const struct yip_fec *f = &A->dev.peers[0]->fec;

	double sum = 0, low = 1, high = 0;

	(void)state;
	ping(now, 1);
	run_stream(2000, 5, &now, false);
	/* One window's estimate moves with its sample (up by half of the
	 * difference), so it is judged over 30 of them: it follows the rate,
	 * a little above it, and never strays far. */
	for (int i = 0; i < 30; i++) {
		run_stream(100, 5, &now, false);
		sum += f->loss;
		low = f->loss < low ? f->loss : low;
		high = f->loss > high ? f->loss : high;
	}
	print_message("under 5 %% loss: estimate %.4f (%.4f-%.4f), bulk K/R %u/%u\n", sum / 30, low,
	              high, f->params[FLOW_BULK].k, f->params[FLOW_BULK].r);
	assert_true(sum / 30 > 0.04 && sum / 30 < 0.075);
	assert_true(low > 0.03 && high < 0.12);
	assert_true(f->params[FLOW_BULK].r >= 6);
	run_stream(10000, 0, &now, false);
	print_message("after a clean stretch: estimate %.5f, bulk R %u\n", f->loss,
	              f->params[FLOW_BULK].r);
	assert_true(f->loss < FEC_CLEAN_LOSS);
	assert_int_equal(f->params[FLOW_BULK].r, 0);
	assert_int_equal(f->params[FLOW_INTERACTIVE].r, 1); /* the floor stays */
}

/* Drops datagrams 0-3 of every 80 (arg counts them): 5 % loss in runs of 4. */
static bool keep_burst(void *arg, const struct pair_dgram *d, unsigned i)
{
	unsigned *sent = arg;

	(void)d;
	(void)i;
	return (*sent)++ % 80 >= 4;
}

/* Loss in runs of 4: the burst estimate sees it and the policy plans for it. */
static void test_burst_estimate(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[1500];
	const struct yip_fec *f = &A->dev.peers[0]->fec;
	unsigned sent = 0;

	(void)state;
	ping(now, 1);
	for (uint32_t i = 0; i < 8000; i++, now += 200 * 1000) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pair_pump(&P, 0, now, keep_burst, &sent);
		pump_lossy(1, now, 0);
		pair_forget(B);
	}
	print_message("burst estimate %.2f, loss %.4f, bulk K/R %u/%u\n", f->burst, f->loss,
	              f->params[FLOW_BULK].k, f->params[FLOW_BULK].r);
	assert_true(f->burst > 3 && f->burst < 5);
	assert_true(f->params[FLOW_BULK].r >= 8);
	assert_int_equal(f->params[FLOW_BULK].lanes, FEC_BULK_LANES);
}

/* Drops every 20th datagram (arg counts them): 5 % loss, one at a time. */
static bool keep_single(void *arg, const struct pair_dgram *d, unsigned i)
{
	unsigned *sent = arg;

	(void)d;
	(void)i;
	return ++*sent % 20 != 0;
}

/* keep_single, and the first retransmission is lost too (arg: a count, and
 * whether that one went). */
struct single_arq {
	unsigned sent;
	bool resend_lost;
};

static bool keep_single_arq(void *arg, const struct pair_dgram *d, unsigned i)
{
	struct single_arq *s = arg;

	if (!s->resend_lost && d->buf[0] == WIRE_DATA && d->buf[1] == WIRE_FEC_ARQ) {
		s->resend_lost = true;
		return false;
	}
	return keep_single(&s->sent, d, i);
}

/* Sends one bulk packet every step ns for n steps, A to B; keep decides A's
 * datagrams. Returns the longest A went without a report from B. */
static uint64_t run_keep(uint64_t *now, unsigned n, uint64_t step, pair_keep_fn keep, void *arg,
                         uint64_t *first_estimate)
{
	uint8_t pkt[1500];
	const struct yip_fec *f = &A->dev.peers[0]->fec;
	uint64_t last = *now, longest = 0;

	for (unsigned i = 0; i < n; i++, *now += step) {
		yip_device_tx(&A->dev, *now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, *now);
		yip_device_timers(&B->dev, *now);
		pair_pump(&P, 0, *now, keep, arg);
		pump_lossy(1, *now, 0);
		pair_forget(B);
		if (first_estimate != NULL && *first_estimate == 0 && f->loss > 0)
			*first_estimate = *now;
		if (f->peer_ts_at > last) {
			longest = f->peer_ts_at - last > longest ? f->peer_ts_at - last : longest;
			last = f->peer_ts_at;
		}
	}
	return longest;
}

/*
 * Loss one datagram at a time: the receiver's reports follow it closely,
 * also when it knows no round trip (it sends no data of its own) and a
 * NACK of a repair, which no one can resend, is due again only 100 ms
 * later; and once they have shown enough
 * single losses, bulk blocks are no longer interleaved (each is rebuilt as
 * soon as its own sources are in). Runs of 4 bring the lanes back at once,
 * and they stay for 30 s after the runs stop.
 */
static void test_lanes_follow_bursts(void **state)
{
	uint64_t now = YIP_NS_PER_S, start, estimated = 0, quiet;
	const struct yip_fec *f = &A->dev.peers[0]->fec;
	struct single_arq first = {0};
	unsigned sent = 0;

	(void)state;
	ping(now, 1);
	start = now;
	quiet = run_keep(&now, 2000, 100 * 1000, keep_single_arq, &first, &estimated);
	print_message("loss estimate above 0 after %.1f ms; %.4f after 200 ms, lanes %u; longest "
	              "without a report %.1f ms\n",
	              (double)(estimated - start) / 1e6, f->loss, f->params[FLOW_BULK].lanes,
	              (double)quiet / 1e6);
	assert_true(estimated != 0 && estimated - start < 40 * YIP_NS_PER_MS);
	assert_true(first.resend_lost);
	assert_true(quiet < 2 * YIP_NACK_GRACE_NS);
	/* 100 single losses so far: not yet enough to give up interleaving. */
	assert_int_equal(f->params[FLOW_BULK].lanes, FEC_BULK_LANES);
	quiet = run_keep(&now, 6000, 100 * 1000, keep_single, &sent, NULL);
	print_message("after 400 single losses: burst %.2f, lanes %u; longest without a report "
	              "%.1f ms\n",
	              f->burst, f->params[FLOW_BULK].lanes, (double)quiet / 1e6);
	assert_true(quiet < 2 * YIP_NACK_GRACE_NS);
	assert_int_equal(f->params[FLOW_BULK].lanes, 1);
	assert_true(f->params[FLOW_BULK].r > 0);

	sent = 0;
	run_keep(&now, 1000, 100 * 1000, keep_burst, &sent, NULL);
	print_message("after runs of 4: burst %.2f, lanes %u\n", f->burst,
	              f->params[FLOW_BULK].lanes);
	assert_int_equal(f->params[FLOW_BULK].lanes, FEC_BULK_LANES);
	start = now;
	sent = 0;
	run_keep(&now, 2500, 10 * YIP_NS_PER_MS, keep_single, &sent, NULL);
	print_message("25 s of single losses later: burst %.2f, lanes %u\n", f->burst,
	              f->params[FLOW_BULK].lanes);
	assert_true(f->burst < FEC_BURSTY);
	assert_int_equal(f->params[FLOW_BULK].lanes, FEC_BULK_LANES);
	run_keep(&now, 1000, 10 * YIP_NS_PER_MS, keep_single, &sent, NULL);
	print_message("35 s later: lanes %u\n", f->params[FLOW_BULK].lanes);
	assert_true(now - start > 32 * YIP_NS_PER_S);
	assert_int_equal(f->params[FLOW_BULK].lanes, 1);
}

/* What test_arq_timing lets through, and when it saw the loss and the resend. */
struct arq_watch {
	uint32_t i; /* packet number */
	uint64_t now, lost_at, resent_at;
};

static bool keep_arq(void *arg, const struct pair_dgram *dg, unsigned j)
{
	struct arq_watch *w = arg;
	const uint8_t *d = dg->buf;

	(void)j;
	if (d[0] == WIRE_DATA && d[1] == WIRE_FEC_ARQ && w->resent_at == 0)
		w->resent_at = w->now;
	/* Lose packet 100 (and any repair of its block). */
	if (w->i >= 100 && w->i < 140 && d[0] == WIRE_REPAIR)
		return false;
	if (d[0] == WIRE_DATA && d[1] != WIRE_FEC_ARQ && w->i == 100 && w->lost_at == 0) {
		w->lost_at = w->now;
		return false;
	}
	return true;
}

/*
 * ARQ timing: a bulk packet that FEC cannot rebuild is NACKed no sooner than
 * the grace period, resent once, and delivered.
 */
static void test_arq_timing(void **state)
{
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[1500];
	struct arq_watch w = {0};
	struct yip_peer *a = A->dev.peers[0], *b = B->dev.peers[0];

	(void)state;
	ping(now, 1);
	/* A clean link: bulk packets carry no repairs, so a loss is ARQ's to fix. */
	for (int i = 0; i < 64; i++, now += YIP_NS_PER_MS) { /* classify the flow as bulk */
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, 1000));
		settle(now);
		pair_forget(B);
	}
	pair_forget(B);
	for (uint32_t i = 0; i < 400; i++, now += YIP_NS_PER_MS / 4) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		w.i = i;
		w.now = now;
		pair_pump(&P, 0, now, keep_arq, &w);
		pump_lossy(1, now, 0);
		pair_forget(B);
	}
	assert_true(w.lost_at != 0);
	assert_true(w.resent_at != 0);
	print_message("lost at +0, resent at +%.1f ms; arq sent %llu, recovered %llu\n",
	              (double)(w.resent_at - w.lost_at) / 1e6,
	              (unsigned long long)a->stats.arq_sent,
	              (unsigned long long)b->stats.arq_recovered);
	assert_true(w.resent_at - w.lost_at >= 8 * YIP_NS_PER_MS); /* not before the grace */
	assert_true(w.resent_at - w.lost_at <= 60 * YIP_NS_PER_MS);
	assert_int_equal(a->stats.arq_sent, 1);
	assert_int_equal(b->stats.arq_recovered, 1);
}

/* ---- ARQ: at most once ---------------------------------------------------------- */

/*
 * A link that loses and holds back datagrams: each is lost with probability
 * lose % and otherwise, with probability hold %, held for 20-60 ms and
 * delivered after everything sent meanwhile (a late original, a late repair,
 * a late resend). One per direction.
 */
#define HOLD_MAX 256

struct held {
	uint64_t at;
	size_t len;
	uint8_t buf[YIP_MAX_DGRAM];
};

struct late_link {
	struct pair_loss rng;
	unsigned lose, hold;
	uint64_t now;
	struct held *q; /* HOLD_MAX */
	unsigned n;
};

static bool keep_late(void *arg, const struct pair_dgram *d, unsigned i)
{
	struct late_link *l = arg;

	(void)i;
	if (pair_lose(&l->rng.state, l->lose))
		return false;
	if (l->n < HOLD_MAX && pair_lose(&l->rng.state, l->hold)) {
		struct held *h = &l->q[l->n++];

		h->at = l->now + (20 + (l->rng.state >> 8) % 41) * YIP_NS_PER_MS;
		h->len = d->len;
		memcpy(h->buf, d->buf, d->len);
		return false;
	}
	return true;
}

/* Hands node `to` what l held that is due by now. */
static void release_late(struct late_link *l, struct pair_node *to, const struct pair_node *from,
                         uint64_t now)
{
	for (unsigned j = 0; j < l->n;) {
		if (l->q[j].at > now) {
			j++;
			continue;
		}
		pair_rx(to, now, &from->addr, l->q[j].buf, l->q[j].len);
		l->q[j] = l->q[--l->n];
	}
}

/* Counts B's deliveries by sequence number into times[]; fails on a second one. */
static unsigned count_once(uint8_t *times, uint32_t total)
{
	unsigned n = 0;

	for (unsigned j = 0; j < B->ndelivered; j++) {
		uint32_t seq;

		memcpy(&seq, B->delivered[j].buf + 28, sizeof(seq));
		assert_true(seq < total);
		if (times[seq]++ != 0)
			fail_msg("packet %u delivered twice", seq);
		n++;
	}
	pair_forget(B);
	return n;
}

/*
 * Docs/protocol.md §10.2 promises every packet at most once. Bulk traffic
 * over a link that loses 8 % each way and holds 4 % of the datagrams back
 * for 20-60 ms, with a rekey every 2 s: late originals after their resends,
 * rebuilds after resends, resends of resends, originals under the previous
 * keys. No packet may come out twice, and FEC and ARQ must both have worked.
 */
static void test_arq_at_most_once(void **state)
{
	enum { TOTAL = 12000 };
	static uint8_t times[TOTAL];
	static struct held qa[HOLD_MAX], qb[HOLD_MAX];
	struct late_link ab = {.rng = {.state = 7}, .lose = 8, .hold = 4, .q = qa};
	struct late_link ba = {.rng = {.state = 11}, .lose = 8, .hold = 4, .q = qb};
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[1300];
	unsigned delivered = 0;
	const struct yip_peer *b = B->dev.peers[0];

	(void)state;
	memset(times, 0, sizeof(times));
	ping(now, 1);
	pair_forget(B);
	for (uint32_t i = 0; i < TOTAL; i++, now += 500 * 1000) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		ab.now = ba.now = now;
		pair_pump(&P, 0, now, keep_late, &ab);
		pair_pump(&P, 1, now, keep_late, &ba);
		release_late(&ab, B, A, now);
		release_late(&ba, A, B, now);
		delivered += count_once(times, TOTAL);
	}
	for (int t = 0; t < 300; t++, now += YIP_NS_PER_MS) {
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		ab.now = ba.now = now;
		pair_pump(&P, 0, now, keep_late, &ab);
		pair_pump(&P, 1, now, keep_late, &ba);
		release_late(&ab, B, A, now);
		release_late(&ba, A, B, now);
		delivered += count_once(times, TOTAL);
	}
	print_message("delivered %u of %u; fec %llu, arq %llu (sent %llu), handshakes %llu; "
	              "dropped as replay %llu, fec_duplicate %llu, arq_duplicate %llu\n",
	              delivered, TOTAL, (unsigned long long)b->stats.fec_recovered,
	              (unsigned long long)b->stats.arq_recovered,
	              (unsigned long long)A->dev.peers[0]->stats.arq_sent,
	              (unsigned long long)b->stats.handshakes,
	              (unsigned long long)B->dev.drops[YIP_DROP_REPLAY],
	              (unsigned long long)B->dev.drops[YIP_DROP_FEC_DUPLICATE],
	              (unsigned long long)B->dev.drops[YIP_DROP_ARQ_DUPLICATE]);
	assert_true(b->stats.handshakes >= 3);
	assert_true(b->stats.fec_recovered > 100);
	assert_true(b->stats.arq_recovered > 10);
	assert_true(delivered >= TOTAL * 97 / 100);
}

/* Keeps datagrams of A's that test_arq_late_original holds or loses. */
struct one_late {
	int state; /* 0: waiting for the packet, 1: held it, 2: saw its resend */
	size_t len;
	uint8_t buf[YIP_MAX_DGRAM];
};

static bool keep_one_late(void *arg, const struct pair_dgram *dg, unsigned j)
{
	struct one_late *o = arg;
	const uint8_t *d = dg->buf;

	(void)j;
	if (o->state == 0 && d[0] == WIRE_DATA && d[1] == WIRE_FEC_NONE && dg->len > 1000) {
		o->len = dg->len;
		memcpy(o->buf, d, dg->len);
		o->state = 1;
		return false;
	}
	if (o->state == 1 && d[0] == WIRE_DATA && d[1] == WIRE_FEC_ARQ)
		o->state = 2;
	return true;
}

/*
 * The simplest duplicate: a bulk packet is late, not lost. B NACKs it, A
 * resends it, B delivers the resend; then the original arrives, and must
 * not be delivered again (it is refused as a replay of its own counter).
 */
static void test_arq_late_original(void **state)
{
	enum { TOTAL = 300 };
	static uint8_t times[TOTAL];
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[1300];
	struct one_late o = {0};
	uint64_t replays;

	(void)state;
	memset(times, 0, sizeof(times));
	ping(now, 1);
	pair_forget(B);
	/* A clean link: bulk packets carry no repairs, so ARQ is all there is. */
	for (uint32_t i = 0; i < 100; i++, now += YIP_NS_PER_MS) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		settle(now);
		count_once(times, TOTAL);
	}
	for (uint32_t i = 100; i < TOTAL; i++, now += YIP_NS_PER_MS / 4) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pair_pump(&P, 0, now, keep_one_late, &o);
		pair_pump(&P, 1, now, NULL, NULL);
		count_once(times, TOTAL);
	}
	assert_int_equal(o.state, 2); /* held, NACKed, resent */
	replays = B->dev.drops[YIP_DROP_REPLAY];
	pair_rx(B, now, &A->addr, o.buf, o.len); /* the original, at last */
	count_once(times, TOTAL);
	assert_int_equal(B->dev.drops[YIP_DROP_REPLAY], replays + 1);
	for (uint32_t i = 0; i < TOTAL; i++)
		assert_int_equal(times[i], 1);
	assert_int_equal(B->dev.peers[0]->stats.arq_recovered, 1);
}

/*
 * The same, but the original arrives after a rekey, under keys that are now
 * the previous ones: it is still refused as a replay of its own counter
 * (the resend marked it in the replay window of the keys it came under).
 */
static void test_arq_previous_key_original(void **state)
{
	enum { TOTAL = 300 };
	static uint8_t times[TOTAL];
	uint64_t now = YIP_NS_PER_S, handshakes;
	uint8_t pkt[1300];
	struct one_late o = {0};
	uint64_t replays;

	(void)state;
	memset(times, 0, sizeof(times));
	ping(now, 1);
	pair_forget(B);
	for (uint32_t i = 0; i < 100; i++, now += YIP_NS_PER_MS) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		settle(now);
		count_once(times, TOTAL);
	}
	for (uint32_t i = 100; i < TOTAL; i++, now += YIP_NS_PER_MS / 4) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pair_pump(&P, 0, now, keep_one_late, &o);
		pair_pump(&P, 1, now, NULL, NULL);
		count_once(times, TOTAL);
	}
	assert_int_equal(o.state, 2); /* held, NACKed, resent */
	assert_int_equal(B->dev.peers[0]->stats.arq_recovered, 1);
	/* One rekey (every 2 s here): the original's keys become the previous ones. */
	handshakes = B->dev.peers[0]->stats.handshakes;
	for (int i = 0; i < 100 && B->dev.peers[0]->stats.handshakes == handshakes;
	     i++, now += 50 * YIP_NS_PER_MS) {
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		settle(now);
		ping(now, 2);
		pair_forget(A);
		pair_forget(B);
	}
	assert_int_equal(B->dev.peers[0]->stats.handshakes, handshakes + 1);
	replays = B->dev.drops[YIP_DROP_REPLAY];
	pair_rx(B, now, &A->addr, o.buf, o.len); /* the original, at last */
	count_once(times, TOTAL);
	/* Refused as a replay, not for unknown or expired keys. */
	assert_int_equal(B->dev.drops[YIP_DROP_REPLAY], replays + 1);
	for (uint32_t i = 0; i < TOTAL; i++)
		assert_int_equal(times[i], 1);
}

/* Holds back a bulk packet of an FEC block for good, and every repair of its
 * block until the packet's resend has gone by. */
struct rebuild_late {
	int state; /* 0: waiting for the packet, 1: holding, 2: saw its resend */
	uint16_t block;
	unsigned n;
	size_t len[FEC_MAX_R];
	uint8_t buf[FEC_MAX_R][YIP_MAX_DGRAM];
};

static bool keep_rebuild_late(void *arg, const struct pair_dgram *dg, unsigned j)
{
	struct rebuild_late *o = arg;
	const uint8_t *d = dg->buf;

	(void)j;
	if (o->state == 0 && d[0] == WIRE_DATA && d[1] < WIRE_FEC_ARQ && dg->len > 1000 &&
	    wire_block_class(wire_get16(d + 2)) == FLOW_BULK) {
		o->block = wire_get16(d + 2);
		o->state = 1;
		return false;
	}
	if (o->state == 1 && d[0] == WIRE_REPAIR && wire_get16(d + 2) == o->block) {
		assert_true(o->n < FEC_MAX_R);
		o->len[o->n] = dg->len;
		memcpy(o->buf[o->n++], d, dg->len);
		return false;
	}
	if (o->state == 1 && d[0] == WIRE_DATA && d[1] == WIRE_FEC_ARQ)
		o->state = 2;
	return true;
}

/*
 * A bulk packet in an FEC block is lost and so, for a while, are its
 * block's repairs: B NACKs it, A resends it, B delivers the resend. Then
 * the repairs arrive and FEC could rebuild the packet: it must not be
 * delivered a second time (it is counted as fec_duplicate instead). Bulk
 * blocks have K = 64 = FEC_MAX_K, so this also rebuilds a full-size block,
 * where a 64-bit source mask shifted by K would be undefined (UBSan stops
 * make unit-asan on it).
 */
static void test_arq_then_fec_rebuild(void **state)
{
	enum { WARM = 3000, TOTAL = WARM + 600 };
	static uint8_t times[TOTAL];
	static struct rebuild_late o;
	uint64_t now = YIP_NS_PER_S, dups = 0;
	uint8_t pkt[1300];
	const struct yip_peer *a = A->dev.peers[0];

	(void)state;
	memset(times, 0, sizeof(times));
	memset(&o, 0, sizeof(o));
	ping(now, 1);
	pair_forget(B);
	/* 3 % loss each way first, so that bulk blocks carry repairs. */
	for (uint32_t i = 0; i < WARM; i++, now += 100 * 1000) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pump_lossy(0, now, 3);
		pump_lossy(1, now, 3);
		pair_forget(B);
	}
	assert_true(a->fec.params[FLOW_BULK].r > 0);
	assert_int_equal(a->fec.params[FLOW_BULK].k, FEC_MAX_K);
	for (uint32_t i = WARM; i < TOTAL + 1000; i++, now += 100 * 1000) {
		int was = o.state;
		uint64_t before = B->dev.drops[YIP_DROP_FEC_DUPLICATE];

		if (i < TOTAL)
			yip_device_tx(&A->dev, now, pkt,
			              udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pair_pump(&P, 0, now, keep_rebuild_late, &o);
		if (was == 1 && o.state == 2) {
			/* The resend is in: now the repairs, while the block is
			 * still open at B. */
			dups = before;
			assert_true(o.n > 0);
			for (unsigned j = 0; j < o.n; j++)
				pair_rx(B, now, &A->addr, o.buf[j], o.len[j]);
		}
		pair_pump(&P, 1, now, NULL, NULL);
		count_once(times, TOTAL);
	}
	assert_int_equal(o.state, 2); /* held, NACKed, resent */
	print_message("held %u repairs of block %u; fec_duplicate %llu -> %llu\n", o.n, o.block,
	              (unsigned long long)dups,
	              (unsigned long long)B->dev.drops[YIP_DROP_FEC_DUPLICATE]);
	/* The rebuild happened (once the block's other sources were in) and
	 * was recognised as a duplicate. */
	assert_true(B->dev.drops[YIP_DROP_FEC_DUPLICATE] >= dups + 1);
	for (uint32_t i = WARM; i < TOTAL; i++)
		assert_int_equal(times[i], 1);
}

/* ---- in order -------------------------------------------------------------------- */

/*
 * FEC rebuilds a lost packet only once its block's repairs are in, after
 * later packets have come: those wait for it, so that the inner TCP sees
 * its segments in order, and no longer than YIP_ORDER_WAIT_NS. 5 % loss
 * each way on a bulk stream: out of order only where FEC could not rebuild
 * (ARQ's resends come later), nothing held past the wait.
 */
static void test_fec_delivers_in_order(void **state)
{
	enum { TOTAL = 8000 };
	static uint64_t sent_at[TOTAL];
	uint64_t now = YIP_NS_PER_S, worst = 0;
	uint8_t pkt[1300];
	uint32_t highest = 0;
	unsigned inversions = 0, delivered = 0;
	const struct yip_peer *b = B->dev.peers[0];

	(void)state;
	/* A pattern with gaps in several lanes of a group at once (seq 3336,
	 * 3340, 3352, 3356 and 3360, none rebuilt), each waited for in turn
	 * until the order counted its wait from the earliest source held. */
	loss.state = 1;
	ping(now, 1);
	pair_forget(B);
	for (uint32_t i = 0; i < TOTAL + 100; i++, now += 100 * 1000) {
		if (i < TOTAL) {
			sent_at[i] = now;
			yip_device_tx(&A->dev, now, pkt,
			              udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		}
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pump_lossy(0, now, 5);
		pump_lossy(1, now, 5);
		for (unsigned j = 0; j < B->ndelivered; j++) {
			uint32_t seq;

			memcpy(&seq, B->delivered[j].buf + 28, sizeof(seq));
			assert_true(seq < TOTAL);
			if (seq < highest)
				inversions++;
			else
				highest = seq;
			/* Not ARQ's (those take a round trip and a grace): what waited. */
			if (now - sent_at[seq] < 8 * YIP_NS_PER_MS + 5 * YIP_NS_PER_MS &&
			    now - sent_at[seq] > worst)
				worst = now - sent_at[seq];
			delivered++;
		}
		pair_forget(B);
	}
	print_message(
	    "delivered %u of %u; out of order %u; fec %llu (late %llu), unrecovered %llu, "
	    "arq %llu; longest wait %.1f ms\n",
	    delivered, TOTAL, inversions, (unsigned long long)b->stats.fec_recovered,
	    (unsigned long long)b->stats.fec_late, (unsigned long long)b->stats.fec_unrecovered,
	    (unsigned long long)b->stats.arq_recovered, (double)worst / 1e6);
	assert_true(b->stats.fec_recovered > 200);
	/* Only what comes after the order stopped waiting comes out of order:
	 * a resend (of a packet FEC could not rebuild, or of one lost before
	 * the loss estimate rose), one at a time, never overtaking what the
	 * order holds; and a rebuild the order had passed over. Nothing is held
	 * back much longer than the wait, however many lanes have a gap. */
	assert_true(inversions <= b->stats.arq_recovered + b->stats.fec_late);
	assert_true(worst <= YIP_ORDER_WAIT_NS + YIP_NS_PER_MS);
}

/* ---- GSO trains ----------------------------------------------------------------- */

/*
 * Cuts what a node sends into GSO trains as the event loop does (udp.c:
 * equal sizes but a shorter last one, at most 64, never two datagrams with
 * the same non-zero tag) and loses whole trains with probability percent.
 */
struct train_loss {
	struct pair_loss rng;
	unsigned percent;
	bool lost;   /* the current train's fate */
	size_t size; /* its first datagram's length, 0: none yet */
	unsigned n, trains, dgrams;
	uint32_t tags[64];
};

static bool keep_trains(void *arg, const struct pair_dgram *d, unsigned i)
{
	struct train_loss *t = arg;
	bool joins = t->size != 0 && t->n < 64 && d->len <= t->size;

	(void)i;
	for (unsigned j = 0; joins && d->train != 0 && j < t->n; j++)
		joins = t->tags[j] != d->train;
	if (!joins) {
		t->size = d->len;
		t->n = 0;
		t->trains++;
		t->lost = pair_lose(&t->rng.state, t->percent);
	} else if (d->len < t->size) {
		t->size = 1; /* a shorter one ends the train */
	}
	t->tags[t->n++] = d->train;
	t->dgrams++;
	return !t->lost;
}

/*
 * A lost GSO train costs each FEC block at most one symbol: bulk blocks are
 * interleaved over lanes, so consecutive datagrams belong to different
 * blocks and trains stay several datagrams long. 5 % of the trains lost
 * whole: FEC rebuilds as it does for independent loss, and trains average
 * more than 3 datagrams (a block per train allowed one, 1.3 on average).
 */
static void test_train_loss(void **state)
{
	enum { TOTAL = 12000 };
	static uint8_t times[TOTAL];
	struct train_loss t = {.rng = {.state = 99}, .percent = 5};
	uint64_t now = YIP_NS_PER_S;
	uint8_t pkt[1300];
	unsigned delivered = 0;
	const struct yip_peer *b = B->dev.peers[0];

	(void)state;
	memset(times, 0, sizeof(times));
	ping(now, 1);
	pair_forget(B);
	for (uint32_t i = 0; i < TOTAL + 200; i++, now += 20 * 1000) {
		if (i < TOTAL)
			yip_device_tx(&A->dev, now, pkt,
			              udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		/* The loop sends a batch at a time: every 16 packets here. */
		if (i % 16 == 15 || i >= TOTAL) {
			t.size = 0; /* a new batch starts a new train */
			pair_pump(&P, 0, now, keep_trains, &t);
		}
		pump_lossy(1, now, 0);
		delivered += count_once(times, TOTAL);
	}
	print_message("trains %u of %u datagrams (%.2f each); delivered %u of %u; fec %llu, "
	              "unrecovered %llu, arq %llu; bulk %u+%u, burst estimate %.2f\n",
	              t.trains, t.dgrams, (double)t.dgrams / t.trains, delivered, TOTAL,
	              (unsigned long long)b->stats.fec_recovered,
	              (unsigned long long)b->stats.fec_unrecovered,
	              (unsigned long long)b->stats.arq_recovered,
	              A->dev.peers[0]->fec.params[FLOW_BULK].k,
	              A->dev.peers[0]->fec.params[FLOW_BULK].r, A->dev.peers[0]->fec.burst);
	assert_true(t.dgrams > 3 * t.trains);
	assert_true(b->stats.fec_recovered > 200);
	/* What FEC could not rebuild is a few in a thousand, as with independent loss. */
	assert_true(b->stats.fec_unrecovered * 200 < TOTAL);
	assert_int_equal(delivered, TOTAL);
}

/* ---- loss recovery's memory ------------------------------------------------------- */

static uint64_t recovery_mem(const struct pair_node *n)
{
	struct yip_peer_info info;

	assert_true(yip_device_peer_info(&n->dev, 0, 0, &info));
	return info.recovery_mem;
}

/* A link with a fixed one-way delay and random loss: a FIFO of datagrams. */
#define DELAY_SLOTS 8192

struct delay_line {
	struct pair_loss rng;
	unsigned lose;
	uint64_t delay, now;
	struct held *q; /* DELAY_SLOTS */
	unsigned head, n;
};

static bool keep_delayed(void *arg, const struct pair_dgram *d, unsigned i)
{
	struct delay_line *l = arg;
	struct held *h;

	(void)i;
	if (pair_lose(&l->rng.state, l->lose))
		return false;
	assert_true(l->n < DELAY_SLOTS);
	h = &l->q[(l->head + l->n++) % DELAY_SLOTS];
	h->at = l->now + l->delay;
	h->len = d->len;
	memcpy(h->buf, d->buf, d->len);
	return false;
}

/* Hands node `to` what is due; B's deliveries are counted as they come. */
static unsigned line_release(struct delay_line *l, struct pair_node *to,
                             const struct pair_node *from, uint64_t now, uint8_t *times,
                             uint32_t total)
{
	unsigned n = 0;

	while (l->n > 0 && l->q[l->head].at <= now) {
		pair_rx(to, now, &from->addr, l->q[l->head].buf, l->q[l->head].len);
		l->head = (l->head + 1) % DELAY_SLOTS;
		l->n--;
		if (to == B && times != NULL)
			n += count_once(times, total);
	}
	return n;
}

/*
 * Nothing is allocated for loss recovery until a peer carries traffic, and
 * it is all given back after the peer has been idle for 10 s. In between,
 * at about 1 Gbit/s with a 20 ms round trip and 1 % loss, the ARQ history
 * grows until it holds what a NACK can still ask for: no NACKed bulk packet
 * is missing from it, and every lost packet is delivered in the end.
 */
static void test_recovery_memory(void **state)
{
	enum { TOTAL = 60000 };
	static uint8_t times[TOTAL];
	static struct held qa[DELAY_SLOTS], qb[DELAY_SLOTS];
	struct delay_line ab = {
	    .rng = {.state = 3}, .lose = 1, .delay = 10 * YIP_NS_PER_MS, .q = qa};
	struct delay_line ba = {
	    .rng = {.state = 5}, .lose = 1, .delay = 10 * YIP_NS_PER_MS, .q = qb};
	const struct yip_peer *a = A->dev.peers[0], *b = B->dev.peers[0];
	uint64_t now = YIP_NS_PER_S, full_a, full_b;
	uint8_t pkt[1300];
	unsigned delivered = 0;

	(void)state;
	memset(times, 0, sizeof(times));
	assert_int_equal(recovery_mem(A), 0); /* configured, never used */
	assert_int_equal(recovery_mem(B), 0);
	ping(now, 1);
	pair_forget(B);
	/* 1200-byte packets every 10 us, 0.6 s. */
	for (uint32_t i = 0; i < TOTAL; i++, now += 10 * 1000) {
		yip_device_tx(&A->dev, now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		if (i % 10 == 0) {
			yip_device_timers(&A->dev, now);
			yip_device_timers(&B->dev, now);
		}
		ab.now = ba.now = now;
		pair_pump(&P, 0, now, keep_delayed, &ab);
		pair_pump(&P, 1, now, keep_delayed, &ba);
		delivered += line_release(&ab, B, A, now, times, TOTAL);
		line_release(&ba, A, B, now, times, TOTAL);
		delivered += count_once(times, TOTAL);
	}
	full_a = recovery_mem(A);
	full_b = recovery_mem(B);
	for (int t = 0; t < 400; t++, now += YIP_NS_PER_MS) {
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		ab.now = ba.now = now;
		pair_pump(&P, 0, now, keep_delayed, &ab);
		pair_pump(&P, 1, now, keep_delayed, &ba);
		delivered += line_release(&ab, B, A, now, times, TOTAL);
		line_release(&ba, A, B, now, times, TOTAL);
		delivered += count_once(times, TOTAL);
	}
	print_message(
	    "at full rate: A holds %llu KiB (history %u KiB), B %llu KiB; rtt %.1f ms; "
	    "delivered %u of %u, fec %llu, arq %llu, nacks %llu (B sent %llu), history misses "
	    "%llu, "
	    "late %llu\n",
	    (unsigned long long)full_a >> 10, a->fec.retx.cap >> 10,
	    (unsigned long long)full_b >> 10, (double)a->fec.srtt / 1e6, delivered, TOTAL,
	    (unsigned long long)b->stats.fec_recovered, (unsigned long long)b->stats.arq_recovered,
	    (unsigned long long)a->stats.nacks_received, (unsigned long long)b->stats.nacks_sent,
	    (unsigned long long)a->stats.arq_history_miss, (unsigned long long)a->stats.arq_late);
	assert_true(a->fec.srtt > 15 * YIP_NS_PER_MS && a->fec.srtt < 30 * YIP_NS_PER_MS);
	/* 120 MB/s for 2.5 x 20 ms + 40 ms: about 11 MB, a power of two above it. */
	assert_int_equal(a->fec.retx.cap, 16u << 20);
	assert_int_equal(a->stats.arq_history_miss, 0);
	assert_true(b->stats.arq_recovered > 0);
	/* The delay never grew: every loss counts as the link's. */
	assert_int_equal(a->stats.arq_congested, 0);
	assert_int_equal(a->stats.loss_congested, 0);
	assert_true(a->fec.loss > 0.005);
	assert_int_equal(delivered, TOTAL);
	/* Idle for 10 s: everything is given back on both sides. */
	for (int t = 0; t < 11; t++, now += YIP_NS_PER_S) {
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		settle(now);
	}
	assert_int_equal(recovery_mem(A), 0);
	assert_int_equal(recovery_mem(B), 0);
	/* And it comes back when traffic does. */
	ping(now, 2);
	assert_true(recovery_mem(A) > 0);
}

/* Runs n packets A to B through the delay lines, 1200 bytes every 20 us,
 * and a small one back every 1 ms (acknowledgements, as TCP sends them). */
static void run_lines(struct delay_line *ab, struct delay_line *ba, uint64_t *now, uint32_t n)
{
	uint8_t pkt[1300];

	for (uint32_t i = 0; i < n; i++, *now += 20 * 1000) {
		yip_device_tx(&A->dev, *now, pkt, udp4(pkt, "10.0.0.1", "10.0.0.2", 1200, i));
		if (i % 50 == 0)
			yip_device_tx(&B->dev, *now, pkt, udp4(pkt, "10.0.0.2", "10.0.0.1", 40, i));
		if (i % 10 == 0) {
			yip_device_timers(&A->dev, *now);
			yip_device_timers(&B->dev, *now);
		}
		ab->now = ba->now = *now;
		pair_pump(&P, 0, *now, keep_delayed, ab);
		pair_pump(&P, 1, *now, keep_delayed, ba);
		line_release(ab, B, A, *now, NULL, 0);
		line_release(ba, A, B, *now, NULL, 0);
		pair_forget(B); /* what arrives is not counted here */
	}
}

/*
 * Loss that comes with a queue is congestion: the path's RTT has grown from
 * 20 ms to 60 ms when A->B starts losing 3 %. The loss is the inner
 * protocol's signal to slow down, so A neither resends what B misses nor
 * raises its redundancy for it (both counted); on the same path without
 * the queue it does both (test_recovery_memory).
 */
static void test_congestion_loss(void **state)
{
	static struct held qa[DELAY_SLOTS], qb[DELAY_SLOTS];
	struct delay_line ab = {
	    .rng = {.state = 7}, .lose = 0, .delay = 10 * YIP_NS_PER_MS, .q = qa};
	struct delay_line ba = {
	    .rng = {.state = 9}, .lose = 0, .delay = 10 * YIP_NS_PER_MS, .q = qb};
	const struct yip_peer *a = A->dev.peers[0], *b = B->dev.peers[0];
	uint64_t now = YIP_NS_PER_S;

	(void)state;
	ping(now, 1);
	pair_forget(B);
	run_lines(&ab, &ba, &now, 20000); /* 0.4 s clean at 20 ms: the base RTT */
	assert_true(a->fec.rtt_min > 15 * YIP_NS_PER_MS && a->fec.rtt_min < 25 * YIP_NS_PER_MS);
	assert_false(protect_queueing(a, now));
	ab.delay = 50 * YIP_NS_PER_MS; /* a queue of 40 ms builds A->B */
	run_lines(&ab, &ba, &now, 5000);
	ab.lose = 3; /* and overflows */
	run_lines(&ab, &ba, &now, 30000);
	print_message(
	    "queueing: rtt %.1f ms over a base of %.1f ms; nacks %llu, resent %llu, "
	    "not resent %llu; loss windows held back %llu, estimate %.4f; B lost %llu\n",
	    (double)a->fec.rtt_last / 1e6, (double)a->fec.rtt_min / 1e6,
	    (unsigned long long)a->stats.nacks_received, (unsigned long long)a->stats.arq_sent,
	    (unsigned long long)a->stats.arq_congested, (unsigned long long)a->stats.loss_congested,
	    a->fec.loss, (unsigned long long)b->stats.lost);
	assert_true(protect_queueing(a, now));
	assert_true(b->stats.lost > 300);
	assert_true(a->stats.nacks_received > 100);
	assert_true(a->stats.arq_congested > 100);
	assert_int_equal(a->stats.arq_sent, 0);
	assert_true(a->stats.loss_congested > 10);
	assert_true(a->fec.loss < 0.002); /* bulk stays without redundancy */
	/* The queue drains: the same loss is the link's again. */
	ab.delay = 10 * YIP_NS_PER_MS;
	run_lines(&ab, &ba, &now, 30000);
	assert_false(protect_queueing(a, now));
	assert_true(a->stats.arq_sent > 0);
	assert_true(a->fec.loss > 0.01);
	/* The queue builds again on this lossy link: the estimate keeps the
	 * link's own loss (it would sink if only lower samples counted). */
	{
		double before = a->fec.loss;

		ab.delay = 50 * YIP_NS_PER_MS;
		run_lines(&ab, &ba, &now, 30000);
		assert_true(protect_queueing(a, now));
		print_message("lossy link behind a queue: estimate %.4f, was %.4f\n", a->fec.loss,
		              before);
		assert_true(a->fec.loss > before * 0.8);
	}
	/* A sample says nothing of the queue a second later: a one-way flow's
	 * sender gets no new ones, and must not take its loss for a queue's
	 * on the strength of its last (docs/protocol.md, "Congestion"). */
	now += 2 * YIP_NS_PER_S;
	assert_false(protect_queueing(a, now));
}

/* Inner length of packet seq in the two byte-exact tests below. */
typedef size_t (*len_of_fn)(uint32_t seq);

static size_t len_mixed(uint32_t seq)
{
	return 100 + (seq * 397) % 1300;
}

static size_t len_alternating(uint32_t seq)
{
	return seq % 2 ? 1400 : 1000;
}

/*
 * Sends n numbered packets A -> B with the given loss, each filled with a
 * pattern derived from its number, and checks every packet B delivers byte
 * for byte. Returns how many were checked.
 */
static unsigned stream_exact(uint32_t n, len_of_fn len_of, unsigned percent)
{
	uint64_t now = 2 * YIP_NS_PER_S;
	uint8_t pkt[1500];
	unsigned checked = 0;

	for (uint32_t i = 0; i < n; i++, now += 200 * 1000) {
		size_t len = len_of(i);

		udp4(pkt, "10.0.0.1", "10.0.0.2", len, i);
		for (size_t k = 32; k < len; k++)
			pkt[k] = (uint8_t)(i * 7 + k);
		yip_device_tx(&A->dev, now, pkt, len);
		yip_device_timers(&A->dev, now);
		yip_device_timers(&B->dev, now);
		pump_lossy(0, now, percent);
		pump_lossy(1, now, 0);
		for (unsigned j = 0; j < B->ndelivered; j++) {
			uint32_t seq;

			memcpy(&seq, B->delivered[j].buf + 28, sizeof(seq));
			assert_int_equal(B->delivered[j].len, len_of(seq));
			for (size_t k = 32; k < B->delivered[j].len; k++)
				assert_int_equal(B->delivered[j].buf[k], (uint8_t)(seq * 7 + k));
			checked++;
		}
		pair_forget(B);
	}
	return checked;
}

/* Forces A's redundancy as if the link had reported 10 % loss. */
static void as_if_lossy(void)
{
	A->dev.peers[0]->fec.loss = 0.10;
	for (int c = 0; c < FLOW_CLASSES; c++)
		fec_policy((enum flow_class)c, 0.10, 1, 0, false, &A->dev.peers[0]->fec.params[c]);
}

/* Packets of every size share blocks; what FEC rebuilds is byte-identical. */
static void test_mixed_sizes_rebuilt_exactly(void **state)
{
	unsigned checked;

	(void)state;
	ping(YIP_NS_PER_S, 1);
	pair_forget(B);
	as_if_lossy();
	checked = stream_exact(3000, len_mixed, 10);
	print_message("checked %u packets byte for byte; fec rebuilt %llu\n", checked,
	              (unsigned long long)B->dev.peers[0]->stats.fec_recovered);
	assert_true(B->dev.peers[0]->stats.fec_recovered > 100);
	assert_true(checked >= 2970);
}

/*
 * A peer with a larger MTU: B (MTU 1280) receives FEC-protected 1000- and
 * 1400-byte packets from A (1420) over a lossy link. B cannot keep symbols
 * that large (nor accept repairs that long), so those blocks are not rebuilt
 * here, but every packet that arrives (or is resent by ARQ) is delivered
 * byte-exact.
 */
static void test_larger_peer_mtu(void **state)
{
	unsigned checked;
	char err[256];

	(void)state;
	P.opts.mtu[1] = 1280;
	if (pair_node_reset(&P, 1, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	ping(YIP_NS_PER_S, 1);
	pair_forget(B);
	as_if_lossy();
	checked = stream_exact(2000, len_alternating, 10);
	print_message("checked %u packets; fec rebuilt %llu, arq %llu\n", checked,
	              (unsigned long long)B->dev.peers[0]->stats.fec_recovered,
	              (unsigned long long)B->dev.peers[0]->stats.arq_recovered);
	assert_true(checked >= 1900);
}

/* ---- peers set and removed at run time (yip_device_peer_set, yip_device_peer_remove) ---- */

static void set_cidr(struct yip_cidr *c, const char *ip, unsigned plen)
{
	memset(c, 0, sizeof(*c));
	c->family = AF_INET;
	c->plen = (uint8_t)plen;
	inet_pton(AF_INET, ip, c->addr);
}

/* A packet from A to B and one back; both must arrive. */
static void ping_counted(uint64_t now, uint8_t marker)
{
	uint64_t a = A->packets, b = B->packets;

	ping(now, marker);
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
	ping_counted(now, 1);
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
	ping_counted(now, 6);
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
	ping_counted(now, 1);
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
	ping_counted(now + YIP_NS_PER_S, 3);
	pb = yip_device_peer(&A->dev, P.n[1].dev.public_key);
	assert_true(yip_peer_established(pb, now + YIP_NS_PER_S));
	assert_int_equal(pb->stats.handshakes, 1);
}

/*
 * TAP: the MAC table names a peer by its slot, and removing a peer moves
 * the last one into its slot. B's learned address must not pass to the
 * peer that takes B's slot, and that peer's own addresses must follow it.
 */
static void test_tap_remove_renumbers(void **state)
{
	const struct pair_opts o = {.timing = &timing, .out_cap = MAXQ, .tap = true};
	struct yip_peer_config pc = {0};
	struct yip_peer *pb, *pc_peer;
	uint8_t frame[60] = {0}, mac_b[6] = {0x02, 0, 0, 0, 0, 0xb},
	        mac_c[6] = {0x02, 0, 0, 0, 0, 0xc};
	uint64_t now = YIP_NS_PER_S;
	struct pair T;
	struct yip_device *a;
	char err[256];

	(void)state;
	assert_int_equal(pair_init(&T, &o, err, sizeof(err)), 0);
	a = &T.n[0].dev;
	/* B sends a broadcast frame from mac_b: A learns it as B's. */
	memset(frame, 0xff, 6);
	memcpy(frame + 6, mac_b, 6);
	frame[12] = 0x08;
	for (int i = 0; i < 3; i++, now += 50 * YIP_NS_PER_MS) {
		yip_device_tx(&T.n[1].dev, now, frame, sizeof(frame));
		pair_settle(&T, now);
	}
	pb = yip_device_peer(a, T.n[1].dev.public_key);
	assert_non_null(pb);
	assert_int_equal(mac_lookup(a->macs, mac_b, now), pb->slot + 1);
	/* C, a peer set at run time (beyond the configured ones), owns mac_c. */
	randombytes_buf(pc.public_key, YIP_KEY_LEN);
	assert_int_equal(yip_device_peer_set(a, now, &pc, YIP_PEER_SET_ALL, err, sizeof(err)), 0);
	pc_peer = yip_device_peer(a, pc.public_key);
	assert_non_null(pc_peer);
	assert_int_equal(mac_learn(a->macs, mac_c, (uint32_t)pc_peer->slot + 1, now), MAC_OK);
	assert_int_equal(mac_count(a->macs, (uint32_t)pc_peer->slot + 1, now), 1);
	/* B goes; C moves into its slot. */
	assert_int_equal(yip_device_peer_remove(a, pb), 0);
	assert_int_equal(pc_peer->slot, 0);
	assert_int_equal(mac_lookup(a->macs, mac_b, now), 0);
	assert_int_equal(mac_lookup(a->macs, mac_c, now), 1);
	assert_int_equal(mac_count(a->macs, 1, now), 1);
	assert_int_equal(mac_count(a->macs, 2, now), 0);
	pair_free(&T);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_handshake_and_data, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ping_rounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cipher_negotiation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rekey_without_loss, setup, teardown),
	    cmocka_unit_test(test_key_slots),
	    cmocka_unit_test_setup_teardown(test_replayed_init_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handshake_under_load, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cookie_answers_capped, setup, teardown),
	    cmocka_unit_test(test_cookie_nonces_and_sources),
	    cmocka_unit_test_setup_teardown(test_forged_inits_do_not_lock_out, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replayed_inits_do_not_lock_out, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_old_init_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replay_after_restart_moves_nothing, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_forged_resp_spoils_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_init_budget_per_source, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_glare, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_roaming_and_spoofing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replayed_data_and_garbage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handshake_retry_and_give_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fec_under_loss, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_corrupt_repair_never_delivers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loss_estimator, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_burst_estimate, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lanes_follow_bursts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arq_timing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arq_at_most_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arq_late_original, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arq_previous_key_original, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arq_then_fec_rebuild, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recovery_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_congestion_loss, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fec_delivers_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_train_loss, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mixed_sizes_rebuilt_exactly, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_larger_peer_mtu, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_set_and_remove, setup, teardown),
	    cmocka_unit_test(test_tap_remove_renumbers),
	    cmocka_unit_test_setup_teardown(test_remove_configured, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
