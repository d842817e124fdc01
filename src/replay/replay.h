/*
 * Sliding anti-replay window over 64-bit counters (RFC 6479 style ring of
 * 64-bit words). Accepts any counter not seen before that is within
 * REPLAY_WINDOW of the highest counter seen.
 */
#ifndef YIP_REPLAY_REPLAY_H
#define YIP_REPLAY_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#define REPLAY_BITS   4096               /* ring size, a power of two */
#define REPLAY_WINDOW (REPLAY_BITS - 64) /* counters accepted behind the highest */

struct replay_window {
	uint64_t top; /* highest counter accepted + 1; 0 = nothing yet */
	uint64_t bits[REPLAY_BITS / 64];
};

void replay_init(struct replay_window *w);

/* True if ctr would be accepted (not a duplicate, not too old). Does not change w. */
bool replay_check(const struct replay_window *w, uint64_t ctr);

/* Marks ctr as seen. Returns false (and changes nothing) if it is a replay or too old. */
bool replay_update(struct replay_window *w, uint64_t ctr);

/* True if ctr has fallen out of the window: nothing can say any more
 * whether it was seen, and replay_check refuses it. */
bool replay_too_old(const struct replay_window *w, uint64_t ctr);

#endif
