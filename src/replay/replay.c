/*
 * Anti-replay window in the style of RFC 6479: a ring of REPLAY_BITS bits,
 * stored as 64-bit words, where counter c lives at bit c % REPLAY_BITS.
 *
 * With top = highest accepted counter + 1, a counter c is accepted when
 *   - c != UINT64_MAX (reserved: top could not represent it), and
 *   - c >= top (new highest), or top - REPLAY_WINDOW <= c < top and its bit
 *     is clear. "Too old" is therefore top - c > REPLAY_WINDOW, written
 *     this way so that nothing overflows; the window holds exactly the
 *     REPLAY_WINDOW counters top - REPLAY_WINDOW .. top - 1.
 *
 * The ring is one word larger than the window, so the word holding the
 * newest counter never shares a slot with the word of the oldest counter
 * still in the window. When top advances, only the words it moves into are
 * cleared (all of them after a jump of a full ring or more): bits in those
 * words belong to counters that have just fallen out of the window.
 */
#include "replay/replay.h"

#include <string.h>

#define WORD_BITS  64
#define RING_WORDS (REPLAY_BITS / WORD_BITS)

_Static_assert((REPLAY_BITS & (REPLAY_BITS - 1)) == 0, "ring size must be a power of two");
_Static_assert(REPLAY_WINDOW <= REPLAY_BITS - WORD_BITS, "window must leave one word of slack");

static size_t word_index(uint64_t ctr)
{
	return (size_t)((ctr / WORD_BITS) % RING_WORDS);
}

static uint64_t bit_mask(uint64_t ctr)
{
	return 1ULL << (ctr % WORD_BITS);
}

void replay_init(struct replay_window *w)
{
	memset(w, 0, sizeof(*w));
}

bool replay_check(const struct replay_window *w, uint64_t ctr)
{
	if (ctr == UINT64_MAX)
		return false;
	if (ctr >= w->top)
		return true;
	if (w->top - ctr > REPLAY_WINDOW)
		return false;
	return !(w->bits[word_index(ctr)] & bit_mask(ctr));
}

/* Moves top to ctr + 1, clearing the words between the old top's word and ctr's. */
static void advance(struct replay_window *w, uint64_t ctr)
{
	uint64_t cur, next, steps, i;

	/* Before the first counter every bit is still clear from replay_init. */
	if (w->top) {
		cur = (w->top - 1) / WORD_BITS;
		next = ctr / WORD_BITS;
		steps = next - cur;
		if (steps > RING_WORDS)
			steps = RING_WORDS;
		for (i = 1; i <= steps; i++)
			w->bits[(cur + i) % RING_WORDS] = 0;
	}
	w->top = ctr + 1;
}

bool replay_update(struct replay_window *w, uint64_t ctr)
{
	if (!replay_check(w, ctr))
		return false;
	if (ctr >= w->top)
		advance(w, ctr);
	w->bits[word_index(ctr)] |= bit_mask(ctr);
	return true;
}

bool replay_too_old(const struct replay_window *w, uint64_t ctr)
{
	return ctr < w->top && w->top - ctr > REPLAY_WINDOW;
}
