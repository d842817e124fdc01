/*
 * ML-KEM-768 (src/crypto/mlkem.c) against an independent implementation:
 * the answers below were computed by @noble/post-quantum 0.2.1 (npm, pure
 * JavaScript) under Debian's nodejs, with tests/unit/mlkem_vectors.mjs
 * (npm install @noble/post-quantum@0.2.1; node mlkem_vectors.mjs). Each
 * row: d, z, m, SHA3-256 of ek, of dk and of ct, the shared secret, a byte
 * of ct flipped, and the secret decapsulating that altered ct gives
 * (implicit rejection). Plus round trips with fresh randomness and the
 * modulus check on encapsulation keys.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "crypto/mlkem.h"

static const struct {
	const char *d, *z, *m, *ek_sha3, *dk_sha3, *ct_sha3, *ss;
	unsigned flip;
	const char *ss_rejected;
} vectors[] = {
    {"8a535d5f2f052d68e8fbd166dda20555835fd7e39bd03f2d65ba657c7f9c61e7",
     "3bf9de19037419203a9877b550ba565c9c3888fe469e30275021a26c514bcf97",
     "60906c15a8ea9d3d7f71eec4c7c1304eba5e2c09da0e869e723eef5ec71df710",
     "81ebfece4cbcd035ef764d87501749fb4e6c9409afd9ee7fe79a7ea0dca5d159",
     "22f7cfbef74598a0bf051ba746bf7ee6ae88866187acf8ac82578107aea495f2",
     "d16b53faa6562f72828d9f495af26bb278b0fac4d50dca71aa6831e431300072",
     "1aec39e8dadf9fb0d2e11dd1a972bf3bbe07bb18a019333ce1025a021f204c03", 0,
     "85e09bafb9839d07def684f8c97241d3bb5839ac0df30f7b4939f62b606c741c"},
    {"7ae67b25bc5d93c6de53216001b0426b7c8f37a10170201b694ca511279f9b0b",
     "a6163151a1a902063b3fa0a1ec8173389c318c0e063e615da222f0eb67f04a7d",
     "c10ab654c9594899c6a2ee26e20b05d4587cdbf392ba4e98380816bb0b6cc707",
     "95ba667c44daa5b782562cf588c6ffd84c3d14f81bfb3c2026dafd811af5767c",
     "a97af2449cca19bafc20502d2d2e108df032a1f8c048de14131fbe439991f62e",
     "f71e5c95f3fb1cd69d43c0a06b7a7bad65d17d5176a7f32ca10bff831433e976",
     "ebbf27a557c2f03ed59e9602049b31c12d86fbe507d365b76b797a76fb3c465d", 100,
     "149527d354ff5ef80dc5a33c0c32466a3990baee8e24b83cdb311d05b99db85c"},
    {"cf3a25726887ffddb20a544c64c5bc4807a03a47ef79c03c195a9f46c036263a",
     "0b60f4b23a499485e754f57969867882f084d4d4be0996601525f145cbdc34a1",
     "e17497c2b76c6e487a1b8fc74f55000c6cfebdd4e584655ecb386d0911592446",
     "ee115eb7521993c386fc1bb9440e1a95eecaa586bac514f8d363d7f24e7cbb3a",
     "b78ed3ca1e0927caec7d9e1d6ed5b3db4327b90d384e49ff36722046270b22b2",
     "3b82f3df576b7a83ce06f1020f13d11ead014703c7bddbf8c788595824b1299d",
     "a51331808c19ffdac4bde1ee6ee7178639c3fc627bee4c726ac9661d30cd49ac", 200,
     "7be635b37d10550038d3760a3000a9a37152c2cca07dadb2bbdd025bee58f2e3"},
    {"eaddf5edcc5994d3b3e9d790d2061619c31a80471a38b1632da328cd6e74a42e",
     "c31f903100e30906dce98472ed820999bcf9803d313c2934d9bec978833cc84e",
     "20d6babc52806c590be1228c75803d898d0057e21245953ec8b952663e8d7514",
     "1cfa70834e4b42798d93f6c5be1a846affd3219e6de690c1f4dbda45bac4de2b",
     "095de9fb448deac2a8e8d218d5e2b6fa41a262216c4ebc26314be6aa191b8bf9",
     "4658f71f0baa1183fc9edbe8aca1de53856fd658843bed651d9b62ee75077d16",
     "6a2561f9cce26ff045c42fc94d1e152671f5633b48741e0e103877ea3fe38a63", 300,
     "970c0ce54bdab0bfd16b23595c16f2ec293b457beee0322c860021cd73996de8"},
};

static void unhex(uint8_t *out, size_t len, const char *hex)
{
	unsigned int v;

	assert_int_equal(strlen(hex), 2 * len);
	for (size_t i = 0; i < len; i++) {
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static void assert_sha3(const uint8_t *p, size_t len, const char *hex)
{
	uint8_t got[32], want[32];

	assert_int_equal(EVP_Digest(p, len, got, NULL, EVP_sha3_256(), NULL), 1);
	unhex(want, 32, hex);
	assert_memory_equal(got, want, 32);
}

static void test_known_answers(void **state)
{
	(void)state;
	for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
		uint8_t seed[64], m[32], ek[MLKEM768_EK_LEN], dk[MLKEM768_DK_LEN];
		uint8_t ct[MLKEM768_CT_LEN], ss[32], ss2[32], want[32];

		unhex(seed, 32, vectors[v].d);
		unhex(seed + 32, 32, vectors[v].z);
		unhex(m, 32, vectors[v].m);
		assert_int_equal(mlkem768_keygen(ek, dk, seed), 0);
		assert_sha3(ek, sizeof(ek), vectors[v].ek_sha3);
		assert_sha3(dk, sizeof(dk), vectors[v].dk_sha3);
		assert_int_equal(mlkem768_encaps(ct, ss, ek, m), 0);
		assert_sha3(ct, sizeof(ct), vectors[v].ct_sha3);
		unhex(want, 32, vectors[v].ss);
		assert_memory_equal(ss, want, 32);
		assert_int_equal(mlkem768_decaps(ss2, ct, dk), 0);
		assert_memory_equal(ss2, want, 32);
		ct[vectors[v].flip] ^= 1;
		assert_int_equal(mlkem768_decaps(ss2, ct, dk), 0);
		unhex(want, 32, vectors[v].ss_rejected);
		assert_memory_equal(ss2, want, 32);
	}
}

/* Fresh keys and messages: both ends agree; a wrong key does not. */
static void test_round_trips(void **state)
{
	(void)state;
	for (int r = 0; r < 20; r++) {
		uint8_t seed[64], m[32], ek[MLKEM768_EK_LEN], dk[MLKEM768_DK_LEN];
		uint8_t dk2[MLKEM768_DK_LEN], ek2[MLKEM768_EK_LEN], ct[MLKEM768_CT_LEN];
		uint8_t ss[32], ss2[32];

		randombytes_buf(seed, sizeof(seed));
		randombytes_buf(m, sizeof(m));
		assert_int_equal(mlkem768_keygen(ek, dk, seed), 0);
		assert_int_equal(mlkem768_encaps(ct, ss, ek, m), 0);
		assert_int_equal(mlkem768_decaps(ss2, ct, dk), 0);
		assert_memory_equal(ss, ss2, 32);
		seed[0] ^= 1;
		assert_int_equal(mlkem768_keygen(ek2, dk2, seed), 0);
		assert_int_equal(mlkem768_decaps(ss2, ct, dk2), 0);
		assert_memory_not_equal(ss, ss2, 32);
	}
}

/* FIPS 203's modulus check: a coefficient of q or more in ek is refused. */
static void test_modulus_check(void **state)
{
	uint8_t seed[64] = {1}, m[32] = {2}, ek[MLKEM768_EK_LEN], dk[MLKEM768_DK_LEN];
	uint8_t ct[MLKEM768_CT_LEN], ss[32];

	(void)state;
	assert_int_equal(mlkem768_keygen(ek, dk, seed), 0);
	ek[0] = 0xff;
	ek[1] |= 0x0f; /* the first coefficient is 4095 */
	assert_int_equal(mlkem768_encaps(ct, ss, ek, m), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_answers),
	    cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_modulus_check),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
