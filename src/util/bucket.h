/*
 * A token bucket: `rate` tokens a second, at most `burst` held. A bucket
 * never used (at == 0) starts full. Time in nanoseconds, refilled in whole
 * milliseconds. Used for the handshake budgets of yipd and yip-rendezvous.
 */
#ifndef YIP_UTIL_BUCKET_H
#define YIP_UTIL_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "util/clock.h"

struct yip_bucket {
	uint64_t tokens, at;
};

/* Takes one token if there is one. */
static inline bool yip_bucket_take(struct yip_bucket *b, uint64_t now, uint64_t rate,
                                   uint64_t burst)
{
	uint64_t add;

	if (b->at == 0) {
		b->tokens = burst;
		b->at = now;
	}
	add = (now - b->at) / YIP_NS_PER_MS * rate / 1000;
	if (add > 0) {
		b->tokens = b->tokens + add > burst ? burst : b->tokens + add;
		b->at = now;
	}
	if (b->tokens == 0)
		return false;
	b->tokens--;
	return true;
}

#endif
