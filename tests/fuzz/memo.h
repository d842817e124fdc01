/*
 * For the fuzzers that run real handshakes (fuzz_noise, fuzz_session,
 * fuzz_client, fuzz_rendezvous, fuzz_members): two things that make an
 * input cheaper without changing what the engine computes.
 *
 *   - libsodium's randombytes is replaced by a fixed generator that
 *     memo_reset() rewinds at the start of every input. An input then does
 *     the same thing every time it runs, as libFuzzer wants (a crash
 *     reproduces from its input alone; a new feature belongs to the input
 *     that found it), and nothing passes from one input to the next
 *     through the generator.
 *   - yip_dh and yip_key_public (X25519, most of a handshake's cost) are
 *     answered from a table of earlier results for the same arguments.
 *     With the generator rewound, every input's setup handshakes use the
 *     same ephemeral keys, so after the first input their X25519s are all
 *     in the table; so is a Noise message's ephemeral that a mutation left
 *     alone. The table is filled by the real functions and X25519 is a
 *     pure function, so the engine gets the same bytes and return values (failures are
 *     not remembered: they go to the real function every time).
 *
 * The fuzzer is linked with --wrap=yip_dh and --wrap=yip_key_public
 * (CMakeLists.txt), which sends the engine's calls to __wrap_yip_dh and
 * __wrap_yip_key_public below; calls inside src/crypto/crypto.c itself are
 * not redirected. Include this header in exactly one file of the fuzzer.
 */
#ifndef YIP_TESTS_FUZZ_MEMO_H
#define YIP_TESTS_FUZZ_MEMO_H

#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/crypto.h"

/* ---- randomness ---- */

static uint64_t memo_rng;

/* splitmix64: a fixed, well-mixed sequence; nothing here needs secrecy. */
static uint64_t memo_next(void)
{
	uint64_t z = (memo_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const char *memo_rng_name(void)
{
	return "yip-fuzz-fixed";
}

static uint32_t memo_rng_random(void)
{
	return (uint32_t)(memo_next() >> 32);
}

static void memo_rng_buf(void *const buf, const size_t size)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < size; i += 8) {
		uint64_t v = memo_next();

		memcpy(p + i, &v, size - i < 8 ? size - i : 8);
	}
}

static randombytes_implementation memo_rng_impl = {
    .implementation_name = memo_rng_name,
    .random = memo_rng_random,
    .buf = memo_rng_buf,
};

/* Call first thing in every input: installs the generator (before
 * sodium_init, as libsodium requires) and rewinds it. */
static inline void memo_reset(void)
{
	static bool installed;

	if (!installed) {
		if (randombytes_set_implementation(&memo_rng_impl) != 0)
			__builtin_trap();
		installed = true;
	}
	memo_rng = 0x796970;
}

/* ---- remembered X25519 ---- */

#define MEMO_SLOTS 4096

struct memo_slot {
	bool used;
	uint8_t kind; /* 1: yip_key_public(priv), 2: yip_dh(priv, pub) */
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN], out[YIP_KEY_LEN];
};

static struct memo_slot memo_table[MEMO_SLOTS];

static struct memo_slot *memo_find(uint8_t kind, const uint8_t priv[YIP_KEY_LEN],
                                   const uint8_t pub[YIP_KEY_LEN], bool *hit)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ kind;
	struct memo_slot *s;

	for (size_t i = 0; i < YIP_KEY_LEN; i++)
		h = (h ^ priv[i]) * 0x100000001b3ULL;
	for (size_t i = 0; pub != NULL && i < YIP_KEY_LEN; i++)
		h = (h ^ pub[i]) * 0x100000001b3ULL;
	s = &memo_table[h % MEMO_SLOTS];
	*hit = s->used && s->kind == kind && memcmp(s->priv, priv, YIP_KEY_LEN) == 0 &&
	       (pub == NULL || memcmp(s->pub, pub, YIP_KEY_LEN) == 0);
	return s;
}

int __real_yip_dh(uint8_t out[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN],
                  const uint8_t pub[YIP_KEY_LEN]);
int __wrap_yip_dh(uint8_t out[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN],
                  const uint8_t pub[YIP_KEY_LEN]);
int __real_yip_key_public(uint8_t pub[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN]);
int __wrap_yip_key_public(uint8_t pub[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN]);

/* Only successes are remembered; a failing call goes to the real function. */
static void memo_store(struct memo_slot *s, uint8_t kind, const uint8_t *priv, const uint8_t *pub,
                       const uint8_t *out)
{
	s->used = true;
	s->kind = kind;
	memcpy(s->priv, priv, YIP_KEY_LEN);
	if (pub != NULL)
		memcpy(s->pub, pub, YIP_KEY_LEN);
	memcpy(s->out, out, YIP_KEY_LEN);
}

int __wrap_yip_dh(uint8_t out[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN],
                  const uint8_t pub[YIP_KEY_LEN])
{
	uint8_t a[YIP_KEY_LEN], b[YIP_KEY_LEN]; /* out may alias priv or pub */
	bool hit;
	struct memo_slot *s;
	int ret;

	memcpy(a, priv, sizeof(a));
	memcpy(b, pub, sizeof(b));
	s = memo_find(2, a, b, &hit);
	if (hit) {
		memcpy(out, s->out, YIP_KEY_LEN);
		return 0;
	}
	ret = __real_yip_dh(out, a, b);
	if (ret == 0)
		memo_store(s, 2, a, b, out);
	return ret;
}

int __wrap_yip_key_public(uint8_t pub[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN])
{
	uint8_t a[YIP_KEY_LEN];
	bool hit;
	struct memo_slot *s;
	int ret;

	memcpy(a, priv, sizeof(a));
	s = memo_find(1, a, NULL, &hit);
	if (hit) {
		memcpy(pub, s->out, YIP_KEY_LEN);
		return 0;
	}
	ret = __real_yip_key_public(pub, a);
	if (ret == 0)
		memo_store(s, 1, a, NULL, pub);
	return ret;
}

#endif
