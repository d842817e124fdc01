/*
 * The REALITY seal (src/reality): a hello sealed by the TLS client engine's
 * seal callback is authenticated by the front and gives both sides the
 * same keys; the same hello again is a replay; a hello changed by one
 * byte anywhere outside the seal, the wrong front key, an unknown short
 * id, a clock past the window, an SNI not in the set, a hello without a
 * 32-byte session id, and bytes that are no hello are each refused with
 * their own verdict. The front's certificate checks out with the keys of
 * its connection and with no other's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <openssl/ec.h>
#include <openssl/evp.h>

#include "crypto/crypto.h"
#include "reality/reality.h"
#include "tls/tls.h"
#include "wire/reality.h"
#include "wire/tls.h"

#define TESTRAND_SEED 0x4ea1u
#include "testrand.h"

#define SNI  "www.example.com"
#define NOW  1796000000u
#define MONO 5000000000ull

static uint8_t front_priv[32], front_pub[32];
static const uint8_t short_id[8] = {0xab, 0xcd, 0x12, 0, 0, 0, 0, 0};

static void test_rand(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	fill_random(out, n);
}

static struct reality_server *server(void)
{
	struct reality_server_config cfg = {
	    .names = {"other.example", SNI}, .n_names = 2, .n_ids = 2};

	memcpy(cfg.priv, front_priv, 32);
	memcpy(cfg.ids[1], short_id, 8);
	cfg.ids[0][0] = 0x77;
	return reality_server_new(&cfg);
}

/* A sealed hello from the TLS client engine: its handshake message into out. */
static size_t sealed_hello(uint8_t *out, struct reality_client *rc, const char *sni,
                           const uint8_t *pub, uint32_t unix_s)
{
	struct tls_client_config cfg = {.sni = sni,
	                                .rand = test_rand,
	                                .verify = reality_client_verify,
	                                .verify_ctx = rc,
	                                .seal = reality_client_seal,
	                                .seal_ctx = rc};
	struct tls_client *c;
	const uint8_t *h;
	size_t len;

	memset(rc, 0, sizeof(*rc));
	memcpy(rc->front_pub, pub, 32);
	memcpy(rc->short_id, short_id, 8);
	rc->unix_s = unix_s;
	c = tls_client_new(&cfg);
	assert_non_null(c);
	assert_true(rc->sealed);
	h = tls_client_hello(c, &len);
	assert_true(len > 0 && len <= TLS_CH_MAX);
	memcpy(out, h, len);
	tls_client_free(c);
	return len;
}

static void test_sealed_hello_authenticates(void **state)
{
	struct reality_server *s = server();
	struct reality_client rc;
	struct reality_keys k;
	uint8_t h[TLS_CH_MAX];
	size_t len = sealed_hello(h, &rc, SNI, front_pub, NOW);

	(void)state;
	assert_int_equal(reality_check(s, MONO, NOW + 30, h, len, &k), REALITY_AUTHENTICATED);
	assert_memory_equal(k.auth, rc.keys.auth, sizeof(k.auth));
	assert_memory_equal(k.cert, rc.keys.cert, sizeof(k.cert));
	/* The same hello again, from anyone: a replay. */
	assert_int_equal(reality_check(s, MONO, NOW + 31, h, len, &k), REALITY_REPLAY);
	/* The SNI is matched without regard to case, as DNS names are. */
	len = sealed_hello(h, &rc, "WWW.Example.COM", front_pub, NOW);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_AUTHENTICATED);
	reality_server_free(s);
}

static void test_altered_hello_refused(void **state)
{
	struct reality_server *s = server();
	struct reality_client rc;
	struct reality_keys k;
	uint8_t h[TLS_CH_MAX], a[TLS_CH_MAX];
	size_t len = sealed_hello(h, &rc, SNI, front_pub, NOW), at = wire_reality_sid_at(h, len);
	unsigned refused = 0, tried = 0;

	(void)state;
	assert_int_equal(at, 39);
	/* Every byte past the header, one at a time (a stride keeps it quick). */
	for (size_t i = TLS_HS_HDR; i < len; i += 7) {
		enum reality_verdict v;

		if (i >= at && i < at + WIRE_REALITY_SID)
			continue;
		memcpy(a, h, len);
		a[i] ^= 0x01;
		v = reality_check(s, MONO + i * 1000000000ull, NOW, a, len, &k);
		tried++;
		refused += v != REALITY_AUTHENTICATED;
	}
	assert_int_equal(refused, tried);
	/* A flipped bit of the seal itself. */
	memcpy(a, h, len);
	a[at + 3] ^= 0x80;
	assert_int_equal(reality_check(s, MONO, NOW, a, len, &k), REALITY_SEAL);
	/* The unchanged hello still authenticates: none of those was remembered. */
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_AUTHENTICATED);
	reality_server_free(s);
}

static void test_refusals(void **state)
{
	struct reality_server *s = server();
	struct reality_client rc;
	struct reality_keys k;
	uint8_t h[TLS_CH_MAX], wrong_priv[32], wrong_pub[32];
	size_t len;
	static const uint8_t junk[] = {0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5};

	(void)state;
	test_rand(NULL, wrong_priv, 32);
	assert_int_equal(yip_key_public(wrong_pub, wrong_priv), 0);
	len = sealed_hello(h, &rc, SNI, wrong_pub, NOW);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_SEAL);
	len = sealed_hello(h, &rc, "unknown.example", front_pub, NOW);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_SNI);
	len = sealed_hello(h, &rc, NULL, front_pub, NOW);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_SNI);
	len = sealed_hello(h, &rc, SNI, front_pub, NOW - REALITY_WINDOW_S - 1);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_CLOCK);
	len = sealed_hello(h, &rc, SNI, front_pub, NOW + REALITY_WINDOW_S + 1);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_CLOCK);
	len = sealed_hello(h, &rc, SNI, front_pub, NOW + REALITY_WINDOW_S);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_AUTHENTICATED);
	/* An unknown short id. */
	rc.short_id[0] ^= 1;
	{
		struct tls_client_config cfg = {.sni = SNI,
		                                .rand = test_rand,
		                                .verify = tls_verify_any,
		                                .seal = reality_client_seal,
		                                .seal_ctx = &rc};
		struct tls_client *c = tls_client_new(&cfg);
		const uint8_t *p;

		assert_non_null(c);
		p = tls_client_hello(c, &len);
		memcpy(h, p, len);
		tls_client_free(c);
	}
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_SHORT_ID);
	/* A session id whose length says 31: the hello no longer parses. */
	len = sealed_hello(h, &rc, SNI, front_pub, NOW);
	h[38] = 31;
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_NOT_HELLO);
	/* The same hello with no session id at all (its length fixed): no seal. */
	len = sealed_hello(h, &rc, SNI, front_pub, NOW);
	h[38] = 0;
	memmove(h + 39, h + 39 + 32, len - 39 - 32);
	len -= 32;
	h[1] = (uint8_t)((len - 4) >> 16);
	h[2] = (uint8_t)((len - 4) >> 8);
	h[3] = (uint8_t)(len - 4);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_NO_SEAL);
	/* Not a hello at all. */
	assert_int_equal(reality_check(s, MONO, NOW, junk + 5, 5, &k), REALITY_NOT_HELLO);
	assert_int_equal(reality_check(s, MONO, NOW, junk, sizeof(junk), &k), REALITY_NOT_HELLO);
	assert_int_equal(reality_check(s, MONO, NOW, h, 0, &k), REALITY_NOT_HELLO);
	assert_string_equal(reality_verdict_name(REALITY_REPLAY), "replay");
	assert_string_equal(reality_verdict_name(99), "?");
	reality_server_free(s);
}

static void test_budget(void **state)
{
	struct reality_server *s = server();
	struct reality_client rc;
	struct reality_keys k;
	uint8_t h[TLS_CH_MAX];
	size_t len = sealed_hello(h, &rc, SNI, front_pub, NOW);
	unsigned busy = 0;

	(void)state;
	h[len - 1] ^= 1; /* each one does an X25519 and fails */
	for (unsigned i = 0; i < REALITY_RATE + 10; i++)
		busy += reality_check(s, MONO, NOW, h, len, &k) == REALITY_BUSY;
	assert_int_equal(busy, 10);
	/* A second later the budget is back. */
	assert_int_equal(reality_check(s, MONO + 1000000000ull, NOW, h, len, &k), REALITY_SEAL);
	reality_server_free(s);
}

static void test_certificate(void **state)
{
	struct reality_client rc, other;
	struct reality_keys k;
	struct reality_server *s = server();
	EVP_PKEY *key = EVP_EC_gen("P-256");
	uint8_t h[TLS_CH_MAX], der[2048];
	size_t len = sealed_hello(h, &rc, SNI, front_pub, NOW), n;
	struct tls_chain chain = {.n = 1, .der = {der}};

	(void)state;
	assert_non_null(key);
	assert_int_equal(reality_check(s, MONO, NOW, h, len, &k), REALITY_AUTHENTICATED);
	n = reality_cert_make(der, sizeof(der), &k, key, SNI, NOW);
	assert_true(n > 100);
	chain.len[0] = n;
	assert_true(reality_client_verify(&rc, &chain, SNI));
	assert_false(rc.spliced);
	/* Another connection's keys do not take it, nor does a changed byte. */
	(void)sealed_hello(h, &other, SNI, front_pub, NOW);
	assert_false(reality_client_verify(&other, &chain, SNI));
	assert_true(other.spliced);
	der[n / 2] ^= 1;
	assert_false(reality_cert_ok(&rc.keys, &chain));
	der[n / 2] ^= 1;
	chain.len[0] = n - 1;
	assert_false(reality_cert_ok(&rc.keys, &chain));
	chain.n = 0;
	assert_false(reality_cert_ok(&rc.keys, &chain));
	assert_int_equal(reality_cert_make(der, 50, &k, key, SNI, NOW), 0);
	EVP_PKEY_free(key);
	reality_server_free(s);
}

/* A sealed hello is the same hello as an unsealed one from the same
 * randomness but for the 32 bytes of its session id: its fingerprint (JA3,
 * JA4, the extension order, the shares) is the TLS engine's, chromium's. */
static void test_sealed_hello_is_the_same_hello(void **state)
{
	struct reality_client rc;
	uint8_t sealed[TLS_CH_MAX], plain[TLS_CH_MAX];
	uint64_t seed = rng_state;
	struct tls_client_config cfg = {.sni = SNI, .rand = test_rand, .verify = tls_verify_any};
	struct tls_client *c;
	const uint8_t *h;
	size_t len, plain_len, at, differ = 0;

	(void)state;
	len = sealed_hello(sealed, &rc, SNI, front_pub, NOW);
	rng_state = seed;
	c = tls_client_new(&cfg);
	assert_non_null(c);
	h = tls_client_hello(c, &plain_len);
	memcpy(plain, h, plain_len);
	tls_client_free(c);
	assert_int_equal(plain_len, len);
	at = wire_reality_sid_at(sealed, len);
	assert_int_equal(at, wire_reality_sid_at(plain, len));
	assert_memory_equal(sealed, plain, at);
	assert_memory_equal(sealed + at + WIRE_REALITY_SID, plain + at + WIRE_REALITY_SID,
	                    len - at - WIRE_REALITY_SID);
	for (size_t i = 0; i < WIRE_REALITY_SID; i++)
		differ += sealed[at + i] != plain[at + i];
	assert_true(differ > 16); /* the seal replaced the random id */
}

static void test_short_id_and_seal_layout(void **state)
{
	uint8_t id[8], p[WIRE_REALITY_PLAIN];
	struct wire_reality_seal in = {.version = 1, .unix_s = 0x01020304, .short_id = {9}}, out;

	(void)state;
	assert_true(reality_short_id_parse(id, "abcd12"));
	assert_memory_equal(id, short_id, 8);
	assert_true(reality_short_id_parse(id, ""));
	assert_true(reality_short_id_parse(id, "0123456789abcdef"));
	assert_false(reality_short_id_parse(id, "0123456789abcdef00"));
	assert_false(reality_short_id_parse(id, "abc"));
	assert_false(reality_short_id_parse(id, "zz"));
	wire_reality_seal_put(p, &in);
	assert_int_equal(p[4], 1);
	assert_int_equal(p[7], 4);
	assert_true(wire_reality_seal_get(&out, p));
	assert_int_equal(out.unix_s, in.unix_s);
	p[2] = 1;
	assert_false(wire_reality_seal_get(&out, p));
	p[2] = 0;
	p[0] = 2;
	assert_false(wire_reality_seal_get(&out, p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sealed_hello_authenticates),
	    cmocka_unit_test(test_altered_hello_refused),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_budget),
	    cmocka_unit_test(test_certificate),
	    cmocka_unit_test(test_sealed_hello_is_the_same_hello),
	    cmocka_unit_test(test_short_id_and_seal_layout),
	};

	if (yip_crypto_init() != 0)
		return 1;
	test_rand(NULL, front_priv, 32);
	if (yip_key_public(front_pub, front_priv) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
