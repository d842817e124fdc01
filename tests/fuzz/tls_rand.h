/*
 * The fixed randomness of fuzz_tls_client, shared with tls_seeds.c so the
 * recorded server flights of the seed corpus match the client's hello.
 */
#ifndef YIP_FUZZ_TLS_RAND_H
#define YIP_FUZZ_TLS_RAND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint64_t tls_rand_state;

static void tls_rand_reset(void)
{
	tls_rand_state = 0x5eed;
}

static void tls_rand(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	while (n > 0) {
		uint64_t z = (tls_rand_state += 0x9e3779b97f4a7c15ULL);
		size_t k = n < 8 ? n : 8;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		memcpy(out, &z, k);
		out += k;
		n -= k;
	}
}

#endif
