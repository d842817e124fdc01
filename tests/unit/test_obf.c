/*
 * The obfuscation layer (src/obf): round trips of every datagram type, the
 * frame layout against its definition recomputed here from libsodium's
 * primitives, every single-bit change to the parts the layer authenticates
 * refused, lengths, padding buckets, and the spread of handshake lengths.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sodium.h>
#include <string.h>

#include "obf/obf.h"
#include "wire/wire.h"

#define TESTRAND_SEED 0x0bf0bf0bf0bf0bfULL
#include "testrand.h"

#define CAP 4096

static struct obf_keys K, K2;

static int setup(void **state)
{
	uint8_t psk[OBF_PSK_LEN], psk2[OBF_PSK_LEN];

	(void)state;
	if (sodium_init() < 0)
		return -1;
	for (unsigned i = 0; i < OBF_PSK_LEN; i++) {
		psk[i] = (uint8_t)i;
		psk2[i] = (uint8_t)(i + 1);
	}
	obf_keys_init(&K, psk);
	obf_keys_init(&K2, psk2);
	return 0;
}

/* A plain session datagram of len bytes: a header, then random "ciphertext". */
static void session_dgram(uint8_t *d, size_t len, uint8_t type)
{
	struct wire_hdr h = {type, 0, 0, (uint32_t)rng(), rng()};

	fill_random(d, len);
	wire_hdr_put(d, &h);
}

static void keys_follow_their_definition(void **state)
{
	uint8_t psk[OBF_PSK_LEN] = {0}, want[32];
	struct obf_keys k;

	(void)state;
	psk[0] = 7;
	obf_keys_init(&k, psk);
	crypto_generichash(want, 32, (const uint8_t *)"yip-obf-v1 hp", 13, psk, sizeof(psk));
	assert_memory_equal(k.hp, want, 32);
	crypto_generichash(want, 16, (const uint8_t *)"yip-obf-v1 tag", 14, psk, sizeof(psk));
	assert_memory_equal(k.tag, want, 16);
	crypto_generichash(want, 32, (const uint8_t *)"yip-obf-v1 env", 14, psk, sizeof(psk));
	assert_memory_equal(k.env, want, 32);
	crypto_generichash(want, 32, (const uint8_t *)"yip-obf-v1 pad", 14, psk, sizeof(psk));
	assert_memory_equal(k.pad, want, 32);
	obf_keys_wipe(&k);
	assert_true(sodium_is_zero((const uint8_t *)&k, sizeof(k)));
}

/* The frame byte by byte, recomputed from the definition in obf.h. */
static void frame_layout(void **state)
{
	uint8_t d[CAP], plain[100], m[64], zero[64] = {0}, tin[64], t[8];
	size_t len = 100, n, pad = obf_frame_pad(len);

	(void)state;
	session_dgram(plain, len, WIRE_DATA);
	memcpy(d, plain, len);
	n = obf_frame_seal(&K, OBF_SESSION, d, len, pad);
	assert_int_equal(pad, 128 - 109);
	assert_int_equal(n, 128);
	/* The body is untouched; the header is masked with M[0..16). */
	assert_memory_equal(d + 16, plain + 16, len - 16);
	crypto_stream_chacha20_ietf_xor_ic(m, zero, 64, plain + 20, wire_get32(plain + 16), K.hp);
	for (int i = 0; i < 16; i++)
		assert_int_equal(d[i], plain[i] ^ m[i]);
	assert_int_equal(d[n - 9], pad ^ m[48]);
	/* The pad: ChaCha20 under the pad key, counter 0, nonce S[4..16). */
	{
		uint8_t ks[255] = {0};

		crypto_stream_chacha20_ietf_xor_ic(ks, ks, pad, plain + 20, 0, K.pad);
		assert_memory_equal(d + len, ks, pad);
	}
	memcpy(tin, d, 32);
	memcpy(tin + 32, d + len, pad + 1);
	tin[32 + pad + 1] = OBF_SESSION;
	crypto_shorthash_siphash24(t, tin, 32 + pad + 2, K.tag);
	assert_memory_equal(d + n - 8, t, 8);
}

static void round_trips(void **state)
{
	static const uint8_t types[] = {WIRE_DATA, WIRE_REPAIR, WIRE_REPORT, WIRE_CTRL};
	uint8_t d[CAP], plain[CAP], out[CAP];
	size_t out_len;

	(void)state;
	for (int i = 0; i < 2000; i++) {
		size_t len = WIRE_DATA_MIN + rnd(1500), n;
		uint8_t type = types[rnd(4)];

		session_dgram(plain, len, type);
		memcpy(d, plain, len);
		n = obf_wrap(&K, d, len, CAP, true);
		assert_true(n >= len + OBF_TRAILER);
		assert_int_equal(obf_open(&K, d, n, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
		                 OBF_OK);
		assert_int_equal(out_len, len);
		assert_memory_equal(out, plain, len);
		/* Another network's key opens nothing. */
		assert_int_equal(obf_open(&K2, d, n, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
		                 OBF_BAD);
	}
}

/* Every handshake, a bare one or one carrying a certificate (up to
 * WIRE_INIT_MAX and WIRE_RESP_MAX), opens again. */
static void handshakes_in_envelopes(void **state)
{
	static const size_t lens[] = {WIRE_INIT_LEN,       WIRE_RESP_LEN,       WIRE_COOKIE_MSG,
	                              WIRE_INIT_LEN + 200, WIRE_RESP_LEN + 200, WIRE_INIT_MAX,
	                              WIRE_RESP_MAX};
	static const uint8_t types[] = {WIRE_INIT, WIRE_RESP, WIRE_COOKIE, WIRE_INIT,
	                                WIRE_RESP, WIRE_INIT, WIRE_RESP};
	uint8_t d[CAP], plain[CAP], out[CAP];
	size_t out_len;

	(void)state;
	for (int i = 0; i < 700; i++) {
		size_t len = lens[i % 7], n;

		fill_random(plain, len);
		plain[0] = types[i % 7];
		memcpy(d, plain, len);
		n = obf_wrap(&K, d, len, CAP, true);
		assert_true(n >= len + OBF_ENV_OVERHEAD && n <= OBF_ENV_MAX);
		assert_int_equal(obf_open(&K, d, n, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
		                 OBF_OK);
		assert_int_equal(out_len, len);
		assert_memory_equal(out, plain, len);
	}
	/* One byte longer than the longest Init is not a handshake we send. */
	fill_random(d, WIRE_INIT_MAX + 1);
	d[0] = WIRE_INIT;
	assert_int_equal(obf_wrap(&K, d, WIRE_INIT_MAX + 1, CAP, true), 0);
}

/* Relayed through a rendezvous server, the longest Init's envelope still
 * fits a 1280-byte IPv6 path (IPv6 and UDP headers: 48 bytes). */
static void longest_handshake_relayed(void **state)
{
	uint8_t d[CAP], plain[CAP], out[CAP];
	size_t n, out_len;

	(void)state;
	for (int i = 0; i < 200; i++) {
		fill_random(plain + WIRE_RELAY_HDR, WIRE_INIT_MAX);
		plain[WIRE_RELAY_HDR] = WIRE_INIT;
		wire_relay_put(plain, WIRE_RELAY_TO_SERVER, 7, 9);
		memcpy(d, plain, WIRE_RELAY_HDR + WIRE_INIT_MAX);
		n = obf_wrap(&K, d, WIRE_RELAY_HDR + WIRE_INIT_MAX, CAP, true);
		assert_true(n > 0 && n + 48 <= 1280);
		/* The server opens its frame; the envelope inside stays closed. */
		assert_int_equal(obf_open(&K, d, n, out, &out_len, WIRE_RELAY_TO_SERVER, false),
		                 OBF_OK);
		assert_int_equal(obf_open(&K, out + WIRE_RELAY_HDR, out_len - WIRE_RELAY_HDR, plain,
		                          &n, -1, false),
		                 OBF_OK);
		assert_int_equal(n, WIRE_INIT_MAX);
	}
}

/* Handshake lengths spread out: over many Inits and Resps no length is
 * common, and both kinds cover the same range above the Init's least. */
static void handshake_lengths_spread(void **state)
{
	static unsigned count[OBF_ENV_MAX + 1];
	uint8_t d[CAP];
	unsigned max = 0, n = 20000;

	(void)state;
	memset(count, 0, sizeof(count));
	for (unsigned i = 0; i < n; i++) {
		size_t len = i % 2 ? WIRE_INIT_LEN : WIRE_RESP_LEN, w;

		memset(d, 0, len);
		d[0] = i % 2 ? WIRE_INIT : WIRE_RESP;
		w = obf_wrap(&K, d, len, CAP, true);
		assert_true(w <= OBF_ENV_MAX);
		count[w]++;
	}
	for (unsigned i = 0; i <= OBF_ENV_MAX; i++)
		max = count[i] > max ? count[i] : max;
	/* Uniform over ~1 050 lengths: ~19 each; no length near 1 % of them. */
	assert_true(max < n / 100);

	/* The longest Init, certificate and all, still spreads over the
	 * lengths from its least to OBF_ENV_MAX: each is about 1/242 of them. */
	memset(count, 0, sizeof(count));
	max = 0;
	for (unsigned i = 0; i < n; i++) {
		size_t w;

		memset(d, 0, WIRE_INIT_MAX);
		d[0] = WIRE_INIT;
		w = obf_wrap(&K, d, WIRE_INIT_MAX, CAP, true);
		assert_true(w >= WIRE_INIT_MAX + OBF_ENV_OVERHEAD && w <= OBF_ENV_MAX);
		count[w]++;
	}
	for (unsigned i = 0; i <= OBF_ENV_MAX; i++)
		max = count[i] > max ? count[i] : max;
	assert_true(max < n / 100);
	assert_true(count[WIRE_INIT_MAX + OBF_ENV_OVERHEAD] > 0 && count[OBF_ENV_MAX] > 0);
}

static void padding_buckets(void **state)
{
	uint8_t d[CAP];

	(void)state;
	assert_int_equal(obf_frame_pad(32), 64 - 41);  /* a keepalive: 64 bytes */
	assert_int_equal(obf_frame_pad(55), 0);        /* exactly a bucket */
	assert_int_equal(obf_frame_pad(56), 127 - 64); /* the next bucket */
	assert_int_equal(obf_frame_pad(246), 1);       /* 255 -> 256 */
	assert_int_equal(obf_frame_pad(247), 0);       /* 256: not padded */
	assert_int_equal(obf_frame_pad(1400), 0);      /* full-size data left alone */
	for (size_t len = WIRE_DATA_MIN; len < 600; len++) {
		size_t w;

		session_dgram(d, len, WIRE_DATA);
		w = obf_wrap(&K, d, len, CAP, true);
		if (len + OBF_TRAILER < OBF_PAD_BELOW)
			assert_int_equal(w % OBF_PAD_BUCKET, 0);
		else
			assert_int_equal(w, len + OBF_TRAILER);
	}
}

/* Every single-bit change to a frame's header, sample, padding, pad length
 * and tag is refused. (Bits of the body after the sample are the session
 * AEAD's to check.) */
static void frame_tamper_refused(void **state)
{
	uint8_t d[CAP], t[CAP], out[CAP], plain[CAP];
	size_t len = 60, n, out_len;

	(void)state;
	session_dgram(plain, len, WIRE_DATA);
	memcpy(d, plain, len);
	n = obf_wrap(&K, d, len, CAP, true);
	assert_int_equal(n, 128);
	for (size_t i = 0; i < n; i++) {
		if (i >= 32 && i < len)
			continue;
		for (int b = 0; b < 8; b++) {
			memcpy(t, d, n);
			t[i] ^= (uint8_t)(1 << b);
			assert_int_equal(
			    obf_open(&K, t, n, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
			    OBF_BAD);
		}
	}
	/* Truncated or extended by a byte: refused. */
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(obf_open(&K, d, cut, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
		                 OBF_BAD);
	d[n] = 0;
	assert_int_equal(obf_open(&K, d, n + 1, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
	                 OBF_BAD);
}

/* An envelope is authenticated whole: every bit of it. */
static void envelope_tamper_refused(void **state)
{
	uint8_t d[CAP], t[CAP], out[CAP];
	size_t n, out_len;

	(void)state;
	memset(d, 0, WIRE_RESP_LEN);
	d[0] = WIRE_RESP;
	n = obf_wrap(&K, d, WIRE_RESP_LEN, 200, true); /* room for 200: short, so quick */
	assert_true(n >= WIRE_RESP_LEN + OBF_ENV_OVERHEAD && n <= 200);
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 8; b++) {
			memcpy(t, d, n);
			t[i] ^= (uint8_t)(1 << b);
			assert_int_equal(
			    obf_open(&K, t, n, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
			    OBF_BAD);
		}
	for (size_t cut = 0; cut < n; cut++)
		assert_int_equal(obf_open(&K, d, cut, out, &out_len, WIRE_RELAY_FROM_SERVER, true),
		                 OBF_BAD);
	assert_int_equal(obf_open(&K, d, n, out, &out_len, -1, false), OBF_OK);
}

/* A relayed datagram: the node wraps both layers, the server opens only
 * its own and forwards the payload as it is, re-wrapped the other way. */
static void relay_both_legs(void **state)
{
	uint8_t d[CAP], plain[CAP], srv[CAP], node[CAP], t[CAP];
	size_t len = 300, n, srv_len, node_len, m;

	(void)state;
	session_dgram(plain + WIRE_RELAY_HDR, len, WIRE_DATA);
	wire_relay_put(plain, WIRE_RELAY_TO_SERVER, 0x1122334455667788ULL, 77);
	memcpy(d, plain, WIRE_RELAY_HDR + len);
	n = obf_wrap(&K, d, WIRE_RELAY_HDR + len, CAP, true);
	assert_int_equal(n, WIRE_RELAY_HDR + len + 2 * OBF_TRAILER);
	/* A node takes no Relay to a server; a server no Relay from one. */
	assert_int_equal(obf_open(&K, d, n, node, &node_len, WIRE_RELAY_FROM_SERVER, true),
	                 OBF_BAD);
	assert_int_equal(obf_open(&K, d, n, srv, &srv_len, WIRE_RELAY_TO_SERVER, false), OBF_OK);
	assert_int_equal(srv_len, n - OBF_TRAILER);
	assert_memory_equal(srv, plain, WIRE_RELAY_HDR);
	/* The server swaps the header and sends it on. */
	wire_relay_put(srv, WIRE_RELAY_FROM_SERVER, 0x99, 5);
	m = obf_wrap(&K, srv, srv_len, CAP, false);
	assert_int_equal(m, n);
	/* The two legs' headers share no mask: they differ beyond the fields that changed. */
	assert_memory_not_equal(srv, d, OBF_HDR);
	assert_int_equal(obf_open(&K, srv, m, node, &node_len, WIRE_RELAY_FROM_SERVER, true),
	                 OBF_OK);
	assert_int_equal(node_len, WIRE_RELAY_HDR + len);
	assert_memory_equal(node + WIRE_RELAY_HDR, plain + WIRE_RELAY_HDR, len);
	assert_int_equal(node[1], WIRE_RELAY_FROM_SERVER);
	/* A bit flipped in the relayed payload is refused by the node. */
	memcpy(t, srv, m);
	t[m - OBF_TRAILER - 1] ^= 1;
	assert_int_equal(obf_open(&K, t, m, node, &node_len, WIRE_RELAY_FROM_SERVER, true),
	                 OBF_BAD);
}

/* Plain datagrams, random bytes and datagrams of the wrong kind: refused. */
static void foreign_refused(void **state)
{
	uint8_t d[CAP], out[CAP];
	size_t out_len, refused = 0;

	(void)state;
	for (int i = 0; i < 5000; i++) {
		size_t len = rnd(1500);

		fill_random(d, len);
		refused +=
		    obf_open(&K, d, len, out, &out_len, WIRE_RELAY_FROM_SERVER, true) == OBF_BAD;
	}
	assert_int_equal(refused, 5000);
	/* A plain keepalive and a plain Init. */
	session_dgram(d, WIRE_DATA_MIN, WIRE_DATA);
	assert_int_equal(obf_open(&K, d, WIRE_DATA_MIN, out, &out_len, -1, true), OBF_BAD);
	memset(d, 0, WIRE_INIT_LEN);
	d[0] = WIRE_INIT;
	assert_int_equal(obf_open(&K, d, WIRE_INIT_LEN, out, &out_len, -1, true), OBF_BAD);
	/* A session frame around a handshake (only envelopes carry those). */
	memset(d, 0, 64);
	d[0] = WIRE_INIT;
	fill_random(d + 16, 48);
	out_len = obf_frame_seal(&K, OBF_SESSION, d, 64, 0);
	assert_int_equal(obf_open(&K, d, out_len, out, &out_len, -1, true), OBF_BAD);
}

static void junk_is_ignored(void **state)
{
	uint8_t d[CAP], out[CAP];
	size_t out_len;

	(void)state;
	for (int i = 0; i < 100; i++) {
		size_t len = obf_junk_len();

		assert_true(len >= OBF_JUNK_MIN && len <= OBF_JUNK_MAX);
		memset(d, 0, len);
		assert_int_equal(obf_wrap(&K, d, len, CAP, true), len);
		assert_int_equal(obf_open(&K, d, len, out, &out_len, -1, true), OBF_IGNORED);
		assert_int_equal(obf_open(&K2, d, len, out, &out_len, -1, true), OBF_BAD);
	}
}

/* The sample's first word is ChaCha20's block counter: its largest value works. */
static void sample_counter_extremes(void **state)
{
	uint8_t d[CAP], plain[CAP], out[CAP];
	size_t n, out_len;

	(void)state;
	session_dgram(plain, 64, WIRE_CTRL);
	memset(plain + 16, 0xff, 4);
	memcpy(d, plain, 64);
	n = obf_wrap(&K, d, 64, CAP, true);
	assert_int_equal(obf_open(&K, d, n, out, &out_len, -1, true), OBF_OK);
	assert_memory_equal(out, plain, 64);
}

static void no_room_no_wrap(void **state)
{
	uint8_t d[CAP];

	(void)state;
	session_dgram(d, 1000, WIRE_DATA);
	assert_int_equal(obf_wrap(&K, d, 1000, 1008, true), 0);
	assert_int_equal(obf_wrap(&K, d, 1000, 1009, true), 1009);
	d[0] = 9; /* no such type */
	assert_int_equal(obf_wrap(&K, d, 100, CAP, true), 0);
	session_dgram(d, 20, WIRE_DATA); /* too short to sample */
	assert_int_equal(obf_wrap(&K, d, 20, CAP, true), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(keys_follow_their_definition),
	    cmocka_unit_test(frame_layout),
	    cmocka_unit_test(round_trips),
	    cmocka_unit_test(handshakes_in_envelopes),
	    cmocka_unit_test(longest_handshake_relayed),
	    cmocka_unit_test(handshake_lengths_spread),
	    cmocka_unit_test(padding_buckets),
	    cmocka_unit_test(frame_tamper_refused),
	    cmocka_unit_test(envelope_tamper_refused),
	    cmocka_unit_test(relay_both_legs),
	    cmocka_unit_test(foreign_refused),
	    cmocka_unit_test(junk_is_ignored),
	    cmocka_unit_test(sample_counter_extremes),
	    cmocka_unit_test(no_room_no_wrap),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
