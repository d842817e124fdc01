/*
 * Known-answer and property tests for src/crypto. Vectors:
 *   X25519             RFC 7748 section 6.1
 *   ChaCha20-Poly1305  RFC 8439 section 2.8.2
 *   BLAKE2b-512        RFC 7693 appendix A
 * HMAC, HKDF and address answers were computed once with Python's hashlib and
 * hmac modules (an implementation independent of libsodium) and are pinned.
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

static void unhex(uint8_t *out, size_t len, const char *hex)
{
	size_t i;
	unsigned int v;

	assert_int_equal(strlen(hex), 2 * len);
	for (i = 0; i < len; i++) {
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static void assert_hex(const uint8_t *got, size_t len, const char *hex)
{
	uint8_t want[256];

	assert_true(len <= sizeof(want));
	unhex(want, len, hex);
	assert_memory_equal(got, want, len);
}

static int setup(void **state)
{
	(void)state;
	return yip_crypto_init();
}

static const char rfc7748_a[] = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
static const char rfc7748_a_pub[] =
    "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
static const char rfc7748_b[] = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";
static const char rfc7748_b_pub[] =
    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
static const char rfc7748_k[] = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";

static void test_x25519_rfc7748(void **state)
{
	uint8_t a[32], b[32], a_pub[32], b_pub[32], k1[32], k2[32];

	(void)state;
	unhex(a, 32, rfc7748_a);
	unhex(b, 32, rfc7748_b);
	assert_int_equal(yip_key_public(a_pub, a), 0);
	assert_int_equal(yip_key_public(b_pub, b), 0);
	assert_hex(a_pub, 32, rfc7748_a_pub);
	assert_hex(b_pub, 32, rfc7748_b_pub);
	assert_int_equal(yip_dh(k1, a, b_pub), 0);
	assert_int_equal(yip_dh(k2, b, a_pub), 0);
	assert_hex(k1, 32, rfc7748_k);
	assert_hex(k2, 32, rfc7748_k);
}

static void test_x25519_rejects(void **state)
{
	uint8_t zero[32] = {0}, priv[32], pub[32], out[32];

	(void)state;
	assert_int_equal(yip_key_public(pub, zero), -1);
	yip_key_generate(priv);
	/* Clamped as RFC 7748 describes. */
	assert_int_equal(priv[0] & 7, 0);
	assert_int_equal(priv[31] & 0xc0, 0x40);
	/* The zero point is of low order: the shared secret would be all zeros. */
	memset(out, 0xaa, sizeof(out));
	assert_int_equal(yip_dh(out, priv, zero), -1);
	assert_true(sodium_is_zero(out, sizeof(out)));
}

static const char rfc8439_pt[] = "Ladies and Gentlemen of the class of '99: If I could offer you "
                                 "only one tip for the future, sunscreen would be it.";
static const char rfc8439_aad[] = "50515253c0c1c2c3c4c5c6c7";
static const char rfc8439_nonce[] = "070000004041424344454647";
static const char rfc8439_ct[] =
    "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69"
    "da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad67594"
    "5585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116"
    "1ae10b594f09e26a7e902ecbd0600691"; /* tag */

static void rfc8439_key(uint8_t key[32])
{
	int i;

	for (i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
}

/*
 * The RFC's nonce starts 07 00 00 00, which Noise's encoding (four zero
 * bytes, then the counter) cannot express, so check libsodium itself here.
 */
static void test_aead_rfc8439_libsodium(void **state)
{
	const size_t plen = sizeof(rfc8439_pt) - 1;
	uint8_t key[32], aad[12], nonce[12], ct[114 + 16];
	unsigned long long clen;

	(void)state;
	assert_int_equal(plen, 114);
	rfc8439_key(key);
	unhex(aad, sizeof(aad), rfc8439_aad);
	unhex(nonce, sizeof(nonce), rfc8439_nonce);
	crypto_aead_chacha20poly1305_ietf_encrypt(ct, &clen, (const uint8_t *)rfc8439_pt, plen, aad,
	                                          sizeof(aad), NULL, nonce, key);
	assert_int_equal(clen, sizeof(ct));
	assert_hex(ct, sizeof(ct), rfc8439_ct);
}

/*
 * Ours with counter 0x4746454443424140 must equal libsodium with the nonce
 * 00 00 00 00 40 41 42 43 44 45 46 47: the counter is little-endian after
 * four zero bytes.
 */
static void test_aead_nonce_encoding(void **state)
{
	const size_t plen = sizeof(rfc8439_pt) - 1;
	static const uint8_t nonce[12] = {0,    0,    0,    0,    0x40, 0x41,
	                                  0x42, 0x43, 0x44, 0x45, 0x46, 0x47};
	uint8_t key[32], aad[12], want[114 + 16], got[114 + 16];

	(void)state;
	rfc8439_key(key);
	unhex(aad, sizeof(aad), rfc8439_aad);
	crypto_aead_chacha20poly1305_ietf_encrypt(want, NULL, (const uint8_t *)rfc8439_pt, plen,
	                                          aad, sizeof(aad), NULL, nonce, key);
	yip_aead_seal(got, key, 0x4746454443424140ULL, aad, sizeof(aad),
	              (const uint8_t *)rfc8439_pt, plen);
	assert_memory_equal(got, want, sizeof(got));
}

static void test_aead_roundtrip_tamper(void **state)
{
	uint8_t key[32], msg[100], buf[100 + 16], out[100], ad[7] = "header";
	size_t i;

	(void)state;
	randombytes_buf(key, sizeof(key));
	randombytes_buf(msg, sizeof(msg));
	yip_aead_seal(buf, key, 5, ad, sizeof(ad), msg, sizeof(msg));
	assert_int_equal(yip_aead_open(out, key, 5, ad, sizeof(ad), buf, sizeof(buf)), 0);
	assert_memory_equal(out, msg, sizeof(msg));

	/* Wrong nonce, wrong AD, flipped bit anywhere, short input: all rejected. */
	assert_int_equal(yip_aead_open(out, key, 6, ad, sizeof(ad), buf, sizeof(buf)), -1);
	assert_int_equal(yip_aead_open(out, key, 5, ad, sizeof(ad) - 1, buf, sizeof(buf)), -1);
	for (i = 0; i < sizeof(buf); i++) {
		buf[i] ^= 0x01;
		assert_int_equal(yip_aead_open(out, key, 5, ad, sizeof(ad), buf, sizeof(buf)), -1);
		buf[i] ^= 0x01;
	}
	assert_int_equal(yip_aead_open(out, key, 5, ad, sizeof(ad), buf, 15), -1);

	/* In place, and an empty message (tag only). */
	memcpy(buf, msg, sizeof(msg));
	yip_aead_seal(buf, key, 9, NULL, 0, buf, sizeof(msg));
	assert_int_equal(yip_aead_open(buf, key, 9, NULL, 0, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, msg, sizeof(msg));
	yip_aead_seal(buf, key, 0, NULL, 0, NULL, 0);
	assert_int_equal(yip_aead_open(NULL, key, 0, NULL, 0, buf, 16), 0);
}

/*
 * The data ciphers behind struct yip_cipher_key: ChaCha20-Poly1305 is exactly
 * yip_aead_seal; AES-256-GCM is libsodium's with the same nonce layout (four
 * zero bytes, then the counter little-endian) and the precomputed key
 * schedule gives what the one-shot call gives.
 */
static void test_cipher_keys_match_libsodium(void **state)
{
	static const uint8_t nonce[12] = {0,    0,    0,    0,    0x40, 0x41,
	                                  0x42, 0x43, 0x44, 0x45, 0x46, 0x47};
	uint8_t raw[32], msg[1420], want[1420 + 16], got[1420 + 16], ad[16];
	struct yip_cipher_key k;

	(void)state;
	randombytes_buf(raw, sizeof(raw));
	randombytes_buf(msg, sizeof(msg));
	randombytes_buf(ad, sizeof(ad));
	yip_cipher_key_set(&k, YIP_CIPHER_CHACHA20_POLY1305, raw);
	yip_aead_seal(want, raw, 0x4746454443424140ULL, ad, sizeof(ad), msg, sizeof(msg));
	yip_cipher_seal(got, &k, 0x4746454443424140ULL, ad, sizeof(ad), msg, sizeof(msg));
	assert_memory_equal(got, want, sizeof(got));
	assert_string_equal(yip_cipher_name(k.cipher), "chacha20-poly1305");

	if (!yip_cipher_available(YIP_CIPHER_AES256_GCM))
		skip();
	yip_cipher_key_set(&k, YIP_CIPHER_AES256_GCM, raw);
	assert_string_equal(yip_cipher_name(k.cipher), "aes-256-gcm");
	crypto_aead_aes256gcm_encrypt(want, NULL, msg, sizeof(msg), ad, sizeof(ad), NULL, nonce,
	                              raw);
	yip_cipher_seal(got, &k, 0x4746454443424140ULL, ad, sizeof(ad), msg, sizeof(msg));
	assert_memory_equal(got, want, sizeof(got));
	/* Setting a key from its own bytes (the key may point into k). */
	yip_cipher_key_set(&k, YIP_CIPHER_AES256_GCM, k.key);
	yip_cipher_seal(got, &k, 0x4746454443424140ULL, ad, sizeof(ad), msg, sizeof(msg));
	assert_memory_equal(got, want, sizeof(got));
}

/* Both ciphers: round trip, in place, and every kind of tampering refused. */
static void test_cipher_roundtrip_tamper(void **state)
{
	(void)state;
	for (unsigned c = 0; c < YIP_CIPHER_COUNT; c++) {
		uint8_t raw[32], msg[100], buf[100 + 16], out[100], ad[7] = "header";
		struct yip_cipher_key k, other;

		if (!yip_cipher_available(c))
			continue;
		randombytes_buf(raw, sizeof(raw));
		randombytes_buf(msg, sizeof(msg));
		yip_cipher_key_set(&k, c, raw);
		yip_cipher_seal(buf, &k, 5, ad, sizeof(ad), msg, sizeof(msg));
		assert_int_equal(yip_cipher_open(out, &k, 5, ad, sizeof(ad), buf, sizeof(buf)), 0);
		assert_memory_equal(out, msg, sizeof(msg));

		assert_int_equal(yip_cipher_open(out, &k, 6, ad, sizeof(ad), buf, sizeof(buf)), -1);
		assert_int_equal(yip_cipher_open(out, &k, 5, ad, 6, buf, sizeof(buf)), -1);
		for (size_t i = 0; i < sizeof(buf); i++) {
			buf[i] ^= 0x80;
			assert_int_equal(
			    yip_cipher_open(out, &k, 5, ad, sizeof(ad), buf, sizeof(buf)), -1);
			buf[i] ^= 0x80;
		}
		assert_int_equal(yip_cipher_open(out, &k, 5, ad, sizeof(ad), buf, 15), -1);

		/* The other cipher under the same key bytes does not open it. */
		if (yip_cipher_available(c ^ 1)) {
			yip_cipher_key_set(&other, c ^ 1, raw);
			assert_false(yip_cipher_key_eq(&k, &other));
			assert_int_equal(
			    yip_cipher_open(out, &other, 5, ad, sizeof(ad), buf, sizeof(buf)), -1);
		}
		yip_cipher_key_set(&other, c, raw);
		assert_true(yip_cipher_key_eq(&k, &other));

		/* In place, as the data path seals, and an empty message. */
		memcpy(buf, msg, sizeof(msg));
		yip_cipher_seal(buf, &k, 9, ad, sizeof(ad), buf, sizeof(msg));
		assert_int_equal(yip_cipher_open(out, &k, 9, ad, sizeof(ad), buf, sizeof(buf)), 0);
		assert_memory_equal(out, msg, sizeof(msg));
		yip_cipher_seal(buf, &k, 0, NULL, 0, NULL, 0);
		assert_int_equal(yip_cipher_open(NULL, &k, 0, NULL, 0, buf, 16), 0);
	}
}

static void test_blake2b_rfc7693(void **state)
{
	uint8_t out[64], split[64];

	(void)state;
	yip_hash2(out, (const uint8_t *)"abc", 3, NULL, 0);
	assert_hex(out, 64,
	           "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
	           "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
	/* The two inputs are concatenated. */
	yip_hash2(split, (const uint8_t *)"a", 1, (const uint8_t *)"bc", 2);
	assert_memory_equal(split, out, 64);
}

static void test_hmac_kat(void **state)
{
	static const char msg[] = "The quick brown fox jumps over the lazy dog";
	uint8_t out[64];

	(void)state;
	/* hmac.new(b"key", msg, hashlib.blake2b).hexdigest() */
	yip_hmac(out, (const uint8_t *)"key", 3, (const uint8_t *)msg, sizeof(msg) - 1);
	assert_hex(out, 64,
	           "92294f92c0dfb9b00ec9ae8bd94d7e7d8a036b885a499f149dfe2fd2199394aa"
	           "af6b8894a1730cccb2cd050f9bcf5062a38b51b0dab33207f8ef35ae2c9df51b");
}

static void test_hkdf(void **state)
{
	uint8_t ck[64], ikm[32], o1[64], o2[64], o3[64], p1[64], p2[64];
	int i;

	(void)state;
	for (i = 0; i < 64; i++)
		ck[i] = (uint8_t)i;
	for (i = 0; i < 32; i++)
		ikm[i] = (uint8_t)(100 + i);
	yip_hkdf(o1, o2, o3, ck, ikm, sizeof(ikm));
	assert_hex(o1, 64,
	           "2262ed5f40c3324574d00a1e0849a7cc67fb5b6a80211c3c59404bb8e47512b1"
	           "cb95e73840718c5d68ca345f934f39a52f1f31e8f6d3ed521f0664f46feddae4");
	assert_hex(o2, 64,
	           "f6a6559fa2aaab64d3d2666b83fe3f4fed6fae1959537fedd6a39b6f8d411e61"
	           "32593234cc2a750244335da5021c27bf7eacbb65cfa608457de6ecc144b90077");
	assert_hex(o3, 64,
	           "07c82c1301c70e885f4662f1f3f7b7bb9e04d81c94a6e1882f812c02ffb69580"
	           "c93095bb599ad2fced3d3cf38c9c17df4fb3c0029f231247fca69b040e16449e");
	assert_memory_not_equal(o1, o2, 64);

	/* Deterministic; two outputs equal the first two of three. */
	yip_hkdf(p1, p2, NULL, ck, ikm, sizeof(ikm));
	assert_memory_equal(p1, o1, 64);
	assert_memory_equal(p2, o2, 64);

	/* out1 may alias ck, as MixKey uses it. */
	yip_hkdf(ck, p2, NULL, ck, ikm, sizeof(ikm));
	assert_memory_equal(ck, o1, 64);
	assert_memory_equal(p2, o2, 64);

	/* Empty input key material (Split) gives different outputs. */
	yip_hkdf(p1, p2, NULL, o3, NULL, 0);
	assert_memory_not_equal(p1, p2, 64);
}

static void test_tai64n(void **state)
{
	uint8_t a[12], b[12];

	(void)state;
	yip_tai64n(a, 0);
	assert_hex(a, 12, "400000000000000000000000");
	yip_tai64n(a, 1700000000ULL * 1000000000ULL + 123456789ULL);
	assert_hex(a, 12, "400000006553f100075bcd15");

	/* Later times compare greater, across a nanosecond and a second. */
	yip_tai64n(a, 1700000000999999999ULL);
	yip_tai64n(b, 1700000001000000000ULL);
	assert_true(memcmp(a, b, 12) < 0);
	yip_tai64n(b, 1700000000999999998ULL);
	assert_true(memcmp(b, a, 12) < 0);
}

static void test_addr(void **state)
{
	uint8_t pub[32], pub2[32], a1[16], a2[16], a3[16];

	(void)state;
	unhex(pub, 32, rfc7748_a_pub);
	yip_addr_from_public(a1, pub);
	/* Pinned: "fd" + hashlib.blake2b(pub, digest_size=15, key=b"yip-addr-v1"). */
	assert_hex(a1, 16, "fdf09379e7db9d7d3cd08564338769d0");

	yip_addr_from_public(a2, pub);
	assert_memory_equal(a1, a2, 16);

	unhex(pub2, 32, rfc7748_b_pub);
	yip_addr_from_public(a3, pub2);
	assert_int_equal(a3[0], 0xfd);
	assert_memory_not_equal(a1, a3, 16);
}

static void test_ct_eq(void **state)
{
	uint8_t a[40], b[40];

	(void)state;
	randombytes_buf(a, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(yip_ct_eq(a, b, sizeof(a)));
	assert_true(yip_ct_eq(a, b, 0));
	b[39] ^= 0x80;
	assert_false(yip_ct_eq(a, b, sizeof(a)));
	assert_true(yip_ct_eq(a, b, 39));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_x25519_rfc7748),
	    cmocka_unit_test(test_x25519_rejects),
	    cmocka_unit_test(test_aead_rfc8439_libsodium),
	    cmocka_unit_test(test_aead_nonce_encoding),
	    cmocka_unit_test(test_aead_roundtrip_tamper),
	    cmocka_unit_test(test_cipher_keys_match_libsodium),
	    cmocka_unit_test(test_cipher_roundtrip_tamper),
	    cmocka_unit_test(test_blake2b_rfc7693),
	    cmocka_unit_test(test_hmac_kat),
	    cmocka_unit_test(test_hkdf),
	    cmocka_unit_test(test_tai64n),
	    cmocka_unit_test(test_addr),
	    cmocka_unit_test(test_ct_eq),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
