/*
 * The crypto worker pool: batches sealed and opened on several threads give
 * exactly what the single-threaded AEAD gives, tampered datagrams fail to
 * open, and thousands of batches of every size in a row (so helpers wake
 * late, early and in between) never lose, repeat or mix up a job. Jobs
 * alternate between a ChaCha20-Poly1305 and an AES-256-GCM key (where the
 * CPU has AES), held in the batch's key slots.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sodium.h>
#include <string.h>

#include "crypto/crypto.h"
#include "loop/workers.h"

#define HDR   16
#define BODY  1400
#define SLOTS 256
#define DGRAM (HDR + BODY + YIP_AEAD_TAG)

static struct yip_cipher_key keys[2];
static struct crypto_keys slots;
static uint8_t wire[SLOTS][DGRAM], expect[SLOTS][DGRAM], plain[SLOTS][BODY];
static struct crypto_job jobs[SLOTS];

/* Datagram i of batch b: a header naming it and a body derived from both. */
static void fill(unsigned b, unsigned i, uint8_t *d)
{
	memset(d, 0, HDR);
	memcpy(d, &b, sizeof(b));
	memcpy(d + 4, &i, sizeof(i));
	for (unsigned k = 0; k < BODY; k++)
		d[HDR + k] = (uint8_t)(b * 31 + i * 7 + k);
}

static void seal_job(struct crypto_job *j, uint8_t *d, uint64_t counter,
                     const struct yip_cipher_key *key)
{
	memset(j, 0, sizeof(*j));
	j->ad = d;
	j->adlen = HDR;
	j->in = d + HDR;
	j->len = BODY;
	j->counter = counter;
	j->key = crypto_keys_add(&slots, key);
	assert_non_null(j->key);
}

static void check_batches(unsigned threads)
{
	struct workers w;
	unsigned sizes[] = {1, 7, 8, 9, 63, 64, 65, 200, SLOTS};

	assert_int_equal(workers_start(&w, threads), 0);
	assert_int_equal(w.n_threads, threads - 1);
	for (unsigned b = 0; b < 3000; b++) {
		unsigned n = sizes[b % (sizeof(sizes) / sizeof(sizes[0]))];
		bool open = b % 2 == 1;

		for (unsigned i = 0; i < n; i++) {
			uint64_t counter = (uint64_t)b * SLOTS + i;
			const struct yip_cipher_key *key = &keys[(b + i) % 2];

			fill(b, i, wire[i]);
			memcpy(expect[i], wire[i], HDR);
			yip_cipher_seal(expect[i] + HDR, key, counter, expect[i], HDR,
			                wire[i] + HDR, BODY);
			if (!open) {
				seal_job(&jobs[i], wire[i], counter, key);
				continue;
			}
			/* Open: the wire holds the sealed datagram; every fifth is tampered. */
			memcpy(wire[i], expect[i], DGRAM);
			if (i % 5 == 4)
				wire[i][HDR + i % BODY] ^= 1;
			seal_job(&jobs[i], wire[i], counter, key);
			jobs[i].open = true;
			jobs[i].len = BODY + YIP_AEAD_TAG;
			jobs[i].out = plain[i];
			jobs[i].result = 7;
			jobs[i].skip = i % 11 == 10; /* placeholders are left alone */
		}
		workers_run(&w, jobs, n);
		assert_int_equal(slots.n, n > 1 ? 2 : 1);
		crypto_keys_clear(&slots);
		for (unsigned i = 0; i < n; i++) {
			if (!open) {
				assert_memory_equal(wire[i], expect[i], DGRAM);
			} else if (jobs[i].skip) {
				assert_int_equal(jobs[i].result, 7);
			} else if (i % 5 == 4) {
				assert_int_equal(jobs[i].result, -1);
			} else {
				uint8_t want[HDR + BODY];

				assert_int_equal(jobs[i].result, 0);
				fill(b, i, want);
				assert_memory_equal(plain[i], want + HDR, BODY);
			}
		}
	}
	assert_int_equal(w.batches, 3000);
	workers_stop(&w);
}

/* Slots: one per distinct key, never more than CRYPTO_KEYS, wiped on clear. */
static void test_key_slots(void **state)
{
	struct crypto_keys ks = {0};
	struct yip_cipher_key k;
	const struct yip_cipher_key *first = NULL;
	static const uint8_t zero[sizeof(ks.slot)];

	(void)state;
	for (unsigned i = 0; i < CRYPTO_KEYS + 3; i++) {
		uint8_t raw[YIP_KEY_LEN] = {(uint8_t)i, 1};
		const struct yip_cipher_key *s;

		yip_cipher_key_set(&k, YIP_CIPHER_CHACHA20_POLY1305, raw);
		s = crypto_keys_add(&ks, &k);
		if (i < CRYPTO_KEYS) {
			assert_non_null(s);
			assert_true(yip_cipher_key_eq(s, &k));
			assert_ptr_equal(crypto_keys_add(&ks, &k),
			                 s); /* the same key: the same slot */
		} else {
			assert_null(s);
		}
		if (i == 0)
			first = s;
	}
	assert_int_equal(ks.n, CRYPTO_KEYS);
	/* The same bytes under another cipher are another key. */
	yip_cipher_key_set(&k, YIP_CIPHER_CHACHA20_POLY1305, first->key);
	assert_ptr_equal(crypto_keys_add(&ks, &k), first);
	k.cipher = YIP_CIPHER_AES256_GCM;
	assert_null(crypto_keys_add(&ks, &k));
	crypto_keys_clear(&ks);
	assert_int_equal(ks.n, 0);
	assert_memory_equal(ks.slot, zero, sizeof(zero));
}

static void test_inline(void **state)
{
	(void)state;
	check_batches(1);
}

static void test_two_threads(void **state)
{
	(void)state;
	check_batches(2);
}

static void test_four_threads(void **state)
{
	(void)state;
	check_batches(4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_key_slots),
	    cmocka_unit_test(test_inline),
	    cmocka_unit_test(test_two_threads),
	    cmocka_unit_test(test_four_threads),
	};

	if (sodium_init() < 0)
		return 1;
	for (unsigned i = 0; i < 2; i++) {
		uint8_t raw[YIP_KEY_LEN];

		randombytes_buf(raw, sizeof(raw));
		yip_cipher_key_set(&keys[i],
		                   i == 1 && yip_cipher_available(YIP_CIPHER_AES256_GCM)
		                       ? YIP_CIPHER_AES256_GCM
		                       : YIP_CIPHER_CHACHA20_POLY1305,
		                   raw);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
