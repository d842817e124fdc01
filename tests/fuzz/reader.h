/* Reading a fuzzer's input byte by byte; past the end every byte is 0. */
#ifndef YIP_TESTS_FUZZ_READER_H
#define YIP_TESTS_FUZZ_READER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct reader {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t next(struct reader *rd)
{
	uint8_t v = 0;

	if (rd->n > 0) {
		v = *rd->p++;
		rd->n--;
	}
	return v;
}

/* Little-endian wider values; one statement per byte, so the order in which
 * the input is read does not depend on the compiler. */
static inline uint16_t next16(struct reader *rd)
{
	uint16_t lo = next(rd);

	return (uint16_t)(lo | next(rd) << 8);
}

static inline uint32_t next32(struct reader *rd)
{
	uint32_t lo = next16(rd);

	return lo | (uint32_t)next16(rd) << 16;
}

static inline uint64_t next64(struct reader *rd)
{
	uint64_t lo = next32(rd);

	return lo | (uint64_t)next32(rd) << 32;
}

/* Copies up to n input bytes to p, zero-filling what the input lacks. */
static inline void fill(struct reader *rd, uint8_t *p, size_t n)
{
	size_t k = rd->n < n ? rd->n : n;

	if (k > 0) {
		memcpy(p, rd->p, k);
		rd->p += k;
		rd->n -= k;
	}
	memset(p + k, 0, n - k);
}

#endif
