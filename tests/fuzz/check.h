/*
 * What a fuzzer asserts with: CHECK traps (libFuzzer reports a crash), and
 * inside says whether a decoder's pointer stays within its input.
 */
#ifndef YIP_FUZZ_CHECK_H
#define YIP_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

/* True if [p, p + n) lies inside [base, base + len); an empty range always does. */
static inline int inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	return n == 0 || (p >= base && n <= len && (size_t)(p - base) <= len - n);
}

#endif
