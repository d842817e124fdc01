/*
 * Tests for the Noise_IK_25519_ChaChaPoly_BLAKE2b handshake: published test
 * vectors, a handshake between two random engines, and malformed input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "crypto/crypto.h"
#include "noise/noise.h"

#define MAX_MSG 256

/* hex -> bytes; returns the length. */
static size_t unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t i, len = strlen(hex) / 2;
	unsigned int v;

	assert_int_equal(strlen(hex) % 2, 0);
	assert_true(len <= cap);
	for (i = 0; i < len; i++) {
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return len;
}

/*
 * Test vectors for Noise_IK_25519_ChaChaPoly_BLAKE2b (data only):
 *  - cacophony: haskell-cryptography/cacophony, vectors/cacophony.txt
 *    (commit 8ee9d41e34a1a596cfa3ab12aa4069ff87dc1247)
 *  - noise-c:   rweather/noise-c, tests/vector/noise-c-basic.txt
 *    (commit cfe25410979a87391bb9ac8d4d4bef64e9f268c6)
 * Message 0 is msg1, 1 is msg2; then transport messages alternate
 * initiator -> responder, responder -> initiator, with nonces 0, 0, 1, 1.
 */
struct vector {
	const char *name;
	const char *prologue;
	const char *init_static;
	const char *init_ephemeral;
	const char *resp_static;
	const char *resp_ephemeral;
	const char *init_remote_static; /* = public key of resp_static */
	const char *handshake_hash;
	const char *payload[6];
	const char *ciphertext[6];
};

/* Both vectors share keys and payloads; only the prologue differs. */
#define VEC_INIT_STATIC    "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1"
#define VEC_INIT_EPHEMERAL "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a"
#define VEC_RESP_STATIC    "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893"
#define VEC_RESP_EPHEMERAL "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b"
#define VEC_REMOTE_STATIC  "31e0303fd6418d2f8c0e78b91f22e8caed0fbe48656dcf4767e4834f701b8f62"
#define VEC_PAYLOADS                                                                               \
	{                                                                                          \
		"4c756477696720766f6e204d69736573", "4d757272617920526f746862617264",              \
		    "462e20412e20486179656b", "4361726c204d656e676572",                            \
		    "4a65616e2d426170746973746520536179",                                          \
		    "457567656e2042f6686d20766f6e2042617765726b",                                  \
	}
/* Split() does not depend on the prologue, so the transport messages agree. */
#define VEC_TRANSPORT                                                                              \
	"cd54383060e7a28434cca27fb1cc524cfbabeb18181589df219d07",                                  \
	    "a856d3bf0246bfc476c655009cd1ed677b8dcc5b349ae8ef2a05f2",                              \
	    "49063084b2c51f098337cb8a13739ac848f907e67cfb2cc8a8b60586467aa02fc7",                  \
	    "8b9709d23b47e4639df7678d7a21741eba4ef1e9c60383001c7435549c20f9d56f30e935d3"

static const struct vector vectors[] = {
    {
        .name = "cacophony",
        .prologue = "4a6f686e2047616c74", /* "John Galt" */
        .init_static = VEC_INIT_STATIC,
        .init_ephemeral = VEC_INIT_EPHEMERAL,
        .resp_static = VEC_RESP_STATIC,
        .resp_ephemeral = VEC_RESP_EPHEMERAL,
        .init_remote_static = VEC_REMOTE_STATIC,
        .handshake_hash = "1c8fa891cb414fedba6daa7c6f4ae0a6d98e5f9768cc9cecd27e805614943ee9"
                          "c8a1b27fbfb76dc197255c8aa69f6b4285c423840b8bedf45e652ca64f797d81",
        .payload = VEC_PAYLOADS,
        .ciphertext =
            {
                "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944"
                "ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd"
                "2f88f1db7e1fb0e99c64419097af91cee64e470f4b6fcd9298ce0b56fe20f86e"
                "13bf70439c538e3602a7127af71a29cc",
                "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843"
                "9f069b267a06b3de3ecb1043bcb098e9af91d9c64748d998c7b47890871571",
                VEC_TRANSPORT,
            },
    },
    {
        .name = "noise-c",
        .prologue = "50726f6c6f677565313233", /* "Prologue123" */
        .init_static = VEC_INIT_STATIC,
        .init_ephemeral = VEC_INIT_EPHEMERAL,
        .resp_static = VEC_RESP_STATIC,
        .resp_ephemeral = VEC_RESP_EPHEMERAL,
        .init_remote_static = VEC_REMOTE_STATIC,
        .handshake_hash = "00e51d2aac81a9b8ebe441d6af3e1c8efc0f030cc608332edcb42588ff6a0ce2"
                          "6415ddc106e95277a5e6d54132f1e5245976b89caf96d262f1fe5a7f0c55c078",
        .payload = VEC_PAYLOADS,
        .ciphertext =
            {
                "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944"
                "ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd"
                "232fe541af156ec6d0657602902a8c3ee64e470f4b6fcd9298ce0b56fe20f86e"
                "60d9d933ec6e103ffb09e6001d6abb64",
                "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843"
                "9f069b267a06b3de3ecb1043bcb09807c6cd101f3826192a65f11ef3fe4317",
                VEC_TRANSPORT,
            },
    },
};

static int setup(void **state)
{
	(void)state;
	return yip_crypto_init();
}

static void run_vector(const struct vector *v)
{
	struct noise_hs ini, res;
	uint8_t is[32], is_pub[32], ie[32], rs[32], rs_pub[32], re[32], want_rs[32], got_rs[32];
	uint8_t prologue[64], payload[MAX_MSG], want[MAX_MSG], out[MAX_MSG], back[MAX_MSG];
	uint8_t i_send[32], i_recv[32], r_send[32], r_recv[32], i_h[64], r_h[64];
	size_t plen, wlen, prolen, m;

	print_message("vector %s\n", v->name);
	unhex(is, sizeof(is), v->init_static);
	unhex(ie, sizeof(ie), v->init_ephemeral);
	unhex(rs, sizeof(rs), v->resp_static);
	unhex(re, sizeof(re), v->resp_ephemeral);
	unhex(want_rs, sizeof(want_rs), v->init_remote_static);
	prolen = unhex(prologue, sizeof(prologue), v->prologue);
	assert_int_equal(yip_key_public(is_pub, is), 0);
	assert_int_equal(yip_key_public(rs_pub, rs), 0);
	assert_memory_equal(rs_pub, want_rs, 32);

	noise_hs_init(&ini, true, prologue, prolen, is, is_pub, rs_pub);
	noise_hs_set_ephemeral(&ini, ie);
	noise_hs_init(&res, false, prologue, prolen, rs, rs_pub, NULL);
	noise_hs_set_ephemeral(&res, re);

	/* msg1 */
	plen = unhex(payload, sizeof(payload), v->payload[0]);
	wlen = unhex(want, sizeof(want), v->ciphertext[0]);
	assert_int_equal(noise_write_msg1(&ini, payload, plen, out, sizeof(out)), (int)wlen);
	assert_memory_equal(out, want, wlen);
	assert_int_equal(noise_read_msg1_static(&res, out, wlen, got_rs), 0);
	assert_memory_equal(got_rs, is_pub, 32);
	assert_int_equal(noise_read_msg1_payload(&res, out, wlen, back, sizeof(back)), (int)plen);
	assert_memory_equal(back, payload, plen);

	/* msg2 */
	plen = unhex(payload, sizeof(payload), v->payload[1]);
	wlen = unhex(want, sizeof(want), v->ciphertext[1]);
	assert_int_equal(noise_write_msg2(&res, payload, plen, out, sizeof(out)), (int)wlen);
	assert_memory_equal(out, want, wlen);
	assert_int_equal(noise_read_msg2(&ini, out, wlen, back, sizeof(back)), (int)plen);
	assert_memory_equal(back, payload, plen);

	noise_split(&ini, i_send, i_recv, i_h);
	noise_split(&res, r_send, r_recv, r_h);
	unhex(want, sizeof(want), v->handshake_hash);
	assert_memory_equal(i_h, want, 64);
	assert_memory_equal(r_h, want, 64);

	/* Transport: even messages go initiator -> responder. */
	for (m = 2; m < 6; m++) {
		bool from_ini = (m % 2) == 0;
		uint64_t nonce = (m - 2) / 2;

		plen = unhex(payload, sizeof(payload), v->payload[m]);
		wlen = unhex(want, sizeof(want), v->ciphertext[m]);
		assert_int_equal(wlen, plen + YIP_AEAD_TAG);
		yip_aead_seal(out, from_ini ? i_send : r_send, nonce, NULL, 0, payload, plen);
		assert_memory_equal(out, want, wlen);
		assert_int_equal(
		    yip_aead_open(back, from_ini ? r_recv : i_recv, nonce, NULL, 0, out, wlen), 0);
		assert_memory_equal(back, payload, plen);
	}
}

static void test_vectors(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		run_vector(&vectors[i]);
}

/* Two engines with random keys; fills msg1/msg2 for the failure tests. */
struct pair {
	uint8_t is[32], is_pub[32], rs[32], rs_pub[32];
	struct noise_hs ini, res; /* fresh states */
	struct noise_hs ini_sent; /* initiator after writing msg1 */
	struct noise_hs res_read; /* responder after reading msg1 fully */
	uint8_t msg1[MAX_MSG], msg2[MAX_MSG];
	size_t len1, len2;
};

static const uint8_t prologue[] = "yip test";
static const uint8_t payload1[] = "hello responder";
static const uint8_t payload2[] = "hello initiator";

static void make_pair(struct pair *p)
{
	struct noise_hs tmp;
	uint8_t rs_out[32], buf[MAX_MSG];

	yip_key_generate(p->is);
	yip_key_generate(p->rs);
	assert_int_equal(yip_key_public(p->is_pub, p->is), 0);
	assert_int_equal(yip_key_public(p->rs_pub, p->rs), 0);
	noise_hs_init(&p->ini, true, prologue, sizeof(prologue), p->is, p->is_pub, p->rs_pub);
	noise_hs_init(&p->res, false, prologue, sizeof(prologue), p->rs, p->rs_pub, NULL);

	p->ini_sent = p->ini;
	p->len1 = (size_t)noise_write_msg1(&p->ini_sent, payload1, sizeof(payload1), p->msg1,
	                                   sizeof(p->msg1));
	assert_int_equal(p->len1, NOISE_MSG1_OVERHEAD + sizeof(payload1));

	p->res_read = p->res;
	assert_int_equal(noise_read_msg1_static(&p->res_read, p->msg1, p->len1, rs_out), 0);
	assert_memory_equal(rs_out, p->is_pub, 32);
	assert_int_equal(noise_read_msg1_payload(&p->res_read, p->msg1, p->len1, buf, sizeof(buf)),
	                 (int)sizeof(payload1));
	assert_memory_equal(buf, payload1, sizeof(payload1));

	tmp = p->res_read;
	p->len2 =
	    (size_t)noise_write_msg2(&tmp, payload2, sizeof(payload2), p->msg2, sizeof(p->msg2));
	assert_int_equal(p->len2, NOISE_MSG2_OVERHEAD + sizeof(payload2));
	/* The random ephemeral is now fixed, so msg2 can be rewritten identically. */
	p->res_read.has_e = true;
	memcpy(p->res_read.e_priv, tmp.e_priv, 32);
	noise_hs_wipe(&tmp);
}

static bool all_zero(const void *p, size_t len)
{
	return sodium_is_zero(p, len) == 1;
}

static void test_handshake_random(void **state)
{
	struct pair p;
	struct noise_hs ini, res;
	uint8_t buf[MAX_MSG], back[MAX_MSG];
	uint8_t i_send[32], i_recv[32], r_send[32], r_recv[32], i_h[64], r_h[64];
	int round;

	(void)state;
	for (round = 0; round < 8; round++) {
		make_pair(&p);
		ini = p.ini_sent;
		res = p.res_read;
		assert_int_equal(
		    noise_write_msg2(&res, payload2, sizeof(payload2), buf, sizeof(buf)),
		    (int)p.len2);
		assert_int_equal(noise_read_msg2(&ini, buf, p.len2, back, sizeof(back)),
		                 (int)sizeof(payload2));
		assert_memory_equal(back, payload2, sizeof(payload2));

		noise_split(&ini, i_send, i_recv, i_h);
		noise_split(&res, r_send, r_recv, r_h);
		assert_memory_equal(i_send, r_recv, 32);
		assert_memory_equal(i_recv, r_send, 32);
		assert_memory_not_equal(i_send, i_recv, 32);
		assert_memory_equal(i_h, r_h, 64);
		/* Split wipes the handshake state. */
		assert_true(all_zero(&ini, sizeof(ini)));
		assert_true(all_zero(&res, sizeof(res)));
	}
}

/* Empty payloads (NULL pointers) on both messages, and h_out = NULL. */
static void test_handshake_empty_payload(void **state)
{
	struct pair p;
	struct noise_hs ini, res;
	uint8_t m1[NOISE_MSG1_OVERHEAD], m2[NOISE_MSG2_OVERHEAD], rs_out[32];
	uint8_t i_send[32], i_recv[32], r_send[32], r_recv[32];

	(void)state;
	make_pair(&p);
	ini = p.ini;
	res = p.res;
	assert_int_equal(noise_write_msg1(&ini, NULL, 0, m1, sizeof(m1)), (int)sizeof(m1));
	assert_int_equal(noise_read_msg1_static(&res, m1, sizeof(m1), rs_out), 0);
	assert_int_equal(noise_read_msg1_payload(&res, m1, sizeof(m1), NULL, 0), 0);
	assert_int_equal(noise_write_msg2(&res, NULL, 0, m2, sizeof(m2)), (int)sizeof(m2));
	assert_int_equal(noise_read_msg2(&ini, m2, sizeof(m2), NULL, 0), 0);
	noise_split(&ini, i_send, i_recv, NULL);
	noise_split(&res, r_send, r_recv, NULL);
	assert_memory_equal(i_send, r_recv, 32);
	assert_memory_equal(i_recv, r_send, 32);
}

static void test_wrong_responder_key(void **state)
{
	struct pair p;
	struct noise_hs ini, res;
	uint8_t other[32], other_pub[32], msg[MAX_MSG], rs_out[32];
	int len;

	(void)state;
	make_pair(&p);
	yip_key_generate(other);
	assert_int_equal(yip_key_public(other_pub, other), 0);
	/* The initiator believes the responder is "other". */
	noise_hs_init(&ini, true, prologue, sizeof(prologue), p.is, p.is_pub, other_pub);
	len = noise_write_msg1(&ini, payload1, sizeof(payload1), msg, sizeof(msg));
	assert_true(len > 0);
	res = p.res;
	assert_int_equal(noise_read_msg1_static(&res, msg, (size_t)len, rs_out), -1);
	assert_true(all_zero(&res, sizeof(res)));

	/* A different prologue fails the same way. */
	noise_hs_init(&ini, true, (const uint8_t *)"other", 5, p.is, p.is_pub, p.rs_pub);
	len = noise_write_msg1(&ini, payload1, sizeof(payload1), msg, sizeof(msg));
	res = p.res;
	assert_int_equal(noise_read_msg1_static(&res, msg, (size_t)len, rs_out), -1);
}

/*
 * Every single-bit flip in msg1 must be caught: in e or the encrypted s by
 * step 1 (e is hashed, so even the bit X25519 ignores counts), in the
 * payload by step 2.
 */
static void test_tamper_msg1(void **state)
{
	struct pair p;
	struct noise_hs res;
	uint8_t msg[MAX_MSG], rs_out[32], buf[MAX_MSG];
	size_t i;
	int bit, r1, r2;

	(void)state;
	make_pair(&p);
	for (i = 0; i < p.len1; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(msg, p.msg1, p.len1);
			msg[i] ^= (uint8_t)(1u << bit);
			res = p.res;
			r1 = noise_read_msg1_static(&res, msg, p.len1, rs_out);
			if (i < 32 + 48) {
				assert_int_equal(r1, -1);
				continue;
			}
			assert_int_equal(r1, 0);
			r2 = noise_read_msg1_payload(&res, msg, p.len1, buf, sizeof(buf));
			assert_int_equal(r2, -1);
			assert_true(all_zero(&res, sizeof(res)));
		}
	}
}

static void test_tamper_msg2(void **state)
{
	struct pair p;
	struct noise_hs ini;
	uint8_t msg[MAX_MSG], buf[MAX_MSG];
	size_t i;
	int bit;

	(void)state;
	make_pair(&p);
	for (i = 0; i < p.len2; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(msg, p.msg2, p.len2);
			msg[i] ^= (uint8_t)(1u << bit);
			ini = p.ini_sent;
			assert_int_equal(noise_read_msg2(&ini, msg, p.len2, buf, sizeof(buf)), -1);
			assert_true(all_zero(&ini, sizeof(ini)));
		}
	}
}

static void test_truncated(void **state)
{
	struct pair p;
	struct noise_hs hs;
	uint8_t rs_out[32], buf[MAX_MSG];
	size_t len;

	(void)state;
	make_pair(&p);
	/* Too short to hold e and s: step 1 refuses without reading past len. */
	for (len = 0; len < NOISE_MSG1_OVERHEAD; len++) {
		hs = p.res;
		assert_int_equal(noise_read_msg1_static(&hs, p.msg1, len, rs_out), -1);
	}
	/* Long enough for step 1 but missing payload bytes: step 2 fails. */
	for (len = NOISE_MSG1_OVERHEAD; len < p.len1; len++) {
		hs = p.res;
		assert_int_equal(noise_read_msg1_static(&hs, p.msg1, len, rs_out), 0);
		assert_int_equal(noise_read_msg1_payload(&hs, p.msg1, len, buf, sizeof(buf)), -1);
	}
	for (len = 0; len < p.len2; len++) {
		hs = p.ini_sent;
		assert_int_equal(noise_read_msg2(&hs, p.msg2, len, buf, sizeof(buf)), -1);
	}
	/* One byte too many fails as well. */
	p.msg2[p.len2] = 0;
	hs = p.ini_sent;
	assert_int_equal(noise_read_msg2(&hs, p.msg2, p.len2 + 1, buf, sizeof(buf)), -1);
}

static void test_buffers_too_small(void **state)
{
	struct pair p;
	struct noise_hs hs;
	uint8_t rs_out[32], buf[MAX_MSG];

	(void)state;
	make_pair(&p);

	hs = p.ini;
	assert_int_equal(noise_write_msg1(&hs, payload1, sizeof(payload1), buf, p.len1 - 1), -1);
	assert_true(all_zero(&hs, sizeof(hs)));

	hs = p.res;
	assert_int_equal(noise_read_msg1_static(&hs, p.msg1, p.len1, rs_out), 0);
	assert_int_equal(noise_read_msg1_payload(&hs, p.msg1, p.len1, buf, sizeof(payload1) - 1),
	                 -1);
	assert_true(all_zero(&hs, sizeof(hs)));

	hs = p.res_read;
	assert_int_equal(noise_write_msg2(&hs, payload2, sizeof(payload2), buf, p.len2 - 1), -1);
	assert_true(all_zero(&hs, sizeof(hs)));

	hs = p.ini_sent;
	assert_int_equal(noise_read_msg2(&hs, p.msg2, p.len2, buf, sizeof(payload2) - 1), -1);
	assert_true(all_zero(&hs, sizeof(hs)));
}

/* Calls out of order, or in the wrong role, fail instead of skipping a step. */
static void test_misuse(void **state)
{
	struct pair p;
	struct noise_hs hs;
	uint8_t rs_out[32], buf[MAX_MSG], zero[32] = {0};

	(void)state;
	make_pair(&p);

	/* write_msg2 straight after step 1 would skip ss. */
	hs = p.res;
	assert_int_equal(noise_read_msg1_static(&hs, p.msg1, p.len1, rs_out), 0);
	assert_int_equal(noise_write_msg2(&hs, NULL, 0, buf, sizeof(buf)), -1);

	hs = p.res;
	assert_int_equal(noise_read_msg1_payload(&hs, p.msg1, p.len1, buf, sizeof(buf)), -1);
	hs = p.res;
	assert_int_equal(noise_write_msg1(&hs, NULL, 0, buf, sizeof(buf)), -1);
	hs = p.ini;
	assert_int_equal(noise_read_msg1_static(&hs, p.msg1, p.len1, rs_out), -1);
	hs = p.ini;
	assert_int_equal(noise_read_msg2(&hs, p.msg2, p.len2, buf, sizeof(buf)), -1);
	hs = p.ini_sent;
	assert_int_equal(noise_write_msg1(&hs, NULL, 0, buf, sizeof(buf)), -1);

	/* A wiped responder must not accept anything (its zero key is public knowledge). */
	noise_hs_wipe(&hs);
	assert_int_equal(noise_read_msg1_static(&hs, p.msg1, p.len1, rs_out), -1);

	/* An initiator without the responder's key cannot write msg1. */
	noise_hs_init(&hs, true, NULL, 0, p.is, p.is_pub, NULL);
	assert_int_equal(noise_write_msg1(&hs, NULL, 0, buf, sizeof(buf)), -1);

	/* A low-order ephemeral in msg1 is refused. */
	memcpy(buf, p.msg1, p.len1);
	memcpy(buf, zero, 32);
	hs = p.res;
	assert_int_equal(noise_read_msg1_static(&hs, buf, p.len1, rs_out), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vectors),
	    cmocka_unit_test(test_handshake_random),
	    cmocka_unit_test(test_handshake_empty_payload),
	    cmocka_unit_test(test_wrong_responder_key),
	    cmocka_unit_test(test_tamper_msg1),
	    cmocka_unit_test(test_tamper_msg2),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_buffers_too_small),
	    cmocka_unit_test(test_misuse),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
