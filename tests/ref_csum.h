/*
 * The Internet checksum the slow, obvious way, for tests of the offload code:
 * the folded ones-complement sum of init and the big-endian 16-bit words of
 * p (an odd last byte padded with zero). Shared by the unit tests and the
 * fuzzers, so both judge the fast code against the same reference.
 */
#ifndef YIP_TESTS_REF_CSUM_H
#define YIP_TESTS_REF_CSUM_H

#include <stddef.h>
#include <stdint.h>

static inline uint16_t ref_sum(uint32_t init, const uint8_t *p, size_t n)
{
	uint64_t s = init;

	for (size_t i = 0; i < n; i += 2)
		s += (uint32_t)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

#endif
