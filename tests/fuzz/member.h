/*
 * Shared by the fuzzers of the membership objects (fuzz_member_*.c): a
 * fixed CA key to re-sign what a decoder accepts, so that the checks after
 * the signature (network, time, serials, revocation) are reached too, and
 * helpers every target uses.
 */
#ifndef YIP_TESTS_FUZZ_MEMBER_H
#define YIP_TESTS_FUZZ_MEMBER_H

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "membership/member.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

struct fuzz_ca {
	uint8_t pub[32], sec[64];
};

/* The CA (seed 0x01 * 32), libsodium initialised. */
static inline const struct fuzz_ca *fuzz_ca(void)
{
	static struct fuzz_ca ca;
	static int ready;

	if (!ready) {
		uint8_t seed[32];

		CHECK(sodium_init() >= 0);
		memset(seed, 0x01, sizeof(seed));
		member_ca_keypair(seed, ca.pub, ca.sec);
		ready = 1;
	}
	return &ca;
}

/* A time derived from the input's last bytes, so windows are crossed. */
static inline uint64_t fuzz_time(const uint8_t *data, size_t size)
{
	uint64_t t = 0;

	for (size_t i = size > 8 ? size - 8 : 0; i < size; i++)
		t = t << 8 | data[i];
	return t;
}

/* A line emitter that looks at what it gets: lines are NUL-terminated text. */
static inline void fuzz_emit(void *arg, const char *line)
{
	size_t *total = arg;

	*total += strlen(line);
}

#endif
