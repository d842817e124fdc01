/* Reading a fuzzer's input byte by byte; past the end every byte is 0. */
#ifndef YIP_TESTS_FUZZ_READER_H
#define YIP_TESTS_FUZZ_READER_H

#include <stddef.h>
#include <stdint.h>

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

#endif
