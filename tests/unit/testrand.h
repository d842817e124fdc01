/*
 * A seeded splitmix64 for unit tests: repeatable random data, so a failure
 * reproduces. Define TESTRAND_SEED before including.
 */
#ifndef YIP_TESTS_TESTRAND_H
#define YIP_TESTS_TESTRAND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint64_t rng_state = TESTRAND_SEED;

static inline uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline unsigned rnd(unsigned n)
{
	return (unsigned)(rng() % n);
}

static inline void fill_random(uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t v = rng();

		memcpy(p, &v, 8);
		p += 8;
		n -= 8;
	}
	if (n > 0) {
		uint64_t v = rng();

		memcpy(p, &v, n);
	}
}

#endif
