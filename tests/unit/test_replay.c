/*
 * Replay window: a table of counter sequences with the expected verdicts,
 * then a long random run against an obviously correct reference.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "replay/replay.h"

#define W    ((uint64_t)REPLAY_WINDOW)
#define B    ((uint64_t)REPLAY_BITS)
#define MAXU UINT64_MAX

struct step {
	uint64_t ctr;
	bool accept;
};

struct replay_case {
	const char *name;
	struct step steps[12];
	size_t n;
};

#define CASE(nm, ...)                                                                              \
	{                                                                                          \
		.name = nm, .steps = {__VA_ARGS__},                                                \
		.n = sizeof((struct step[]){__VA_ARGS__}) / sizeof(struct step),                   \
	}
#define OK(c)                                                                                      \
	{                                                                                          \
		(c), true                                                                          \
	}
#define BAD(c)                                                                                     \
	{                                                                                          \
		(c), false                                                                         \
	}

/*
 * With top = highest + 1, the window is top - W .. top - 1: after
 * highest = W + 10 the oldest acceptable counter is 11.
 */
static const struct replay_case cases[] = {
    CASE("in order", OK(0), OK(1), OK(2), OK(3), OK(4)),
    CASE("counter 0", OK(0), BAD(0), OK(1), BAD(0)),
    CASE("zero after others", OK(5), OK(0), BAD(0), BAD(5)),
    CASE("reordered in window", OK(5), OK(3), OK(4), OK(1), OK(0), OK(2), BAD(3), BAD(5), OK(6)),
    CASE("duplicates", OK(7), BAD(7), OK(8), BAD(7), BAD(8)),
    CASE("oldest edge", OK(W + 10), OK(11), BAD(10), BAD(11), BAD(W + 10), OK(W + 9)),
    CASE("edge at highest = W", OK(W), OK(1), BAD(0)),
    CASE("edge at highest = W - 1", OK(W - 1), OK(0), BAD(0)),
    CASE("edge after step", OK(W - 1), OK(W), BAD(0), OK(1), BAD(1)),
    /* 1 + 3B shares bit positions with 1, 2, 3: the jump must clear them. */
    CASE("big jump clears", OK(1), OK(2), OK(3), OK(3 * B + 100), BAD(1), BAD(3), OK(3 * B + 1),
         OK(3 * B + 2), OK(3 * B + 3), BAD(3 * B + 3)),
    CASE("jump of exactly one ring", OK(5), OK(5 + B), BAD(5), OK(4 + B), OK(6 + B)),
    CASE("partial jump keeps bits", OK(70), OK(70 + 2048), BAD(70), OK(71), BAD(71)),
    /* Crossing from ring word 63 back to word 0. */
    CASE("ring index wrap", OK(B - 2), OK(B - 1), OK(B), OK(B + 1), BAD(B - 1), BAD(B), BAD(63),
         OK(66), BAD(65), OK(64 + B)),
    CASE("max rejected when fresh", BAD(MAXU), OK(MAXU - 1), BAD(MAXU)),
    CASE("near max", OK(MAXU - 1), BAD(MAXU), OK(MAXU - 2), BAD(MAXU - 1), OK(MAXU - W),
         BAD(MAXU - W - 1), BAD(0)),
    CASE("from 0 to near max", OK(0), OK(MAXU - 5), BAD(0), OK(MAXU - 6), OK(MAXU - 1),
         OK(MAXU - 4)),
};

static void test_table(void **state)
{
	struct replay_window w, before;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct replay_case *c = &cases[i];

		replay_init(&w);
		for (j = 0; j < c->n; j++) {
			bool check, got;

			before = w;
			check = replay_check(&w, c->steps[j].ctr);
			assert_memory_equal(&w, &before, sizeof(w)); /* check is read-only */
			got = replay_update(&w, c->steps[j].ctr);
			if (got != c->steps[j].accept || check != got)
				fail_msg("case \"%s\" step %zu (ctr %llu): got %d, want %d",
				         c->name, j, (unsigned long long)c->steps[j].ctr, got,
				         c->steps[j].accept);
			if (!got) /* a rejected counter changes nothing */
				assert_memory_equal(&w, &before, sizeof(w));
		}
	}
}

/*
 * Reference: a hash set of every counter ever accepted, plus the highest.
 * UINT64_MAX marks an empty slot (it is never accepted).
 */
#define REF_SLOTS (1u << 18)

struct ref {
	uint64_t slot[REF_SLOTS];
	uint64_t top;
};

static struct ref ref;

static size_t ref_find(uint64_t ctr)
{
	size_t i = (size_t)((ctr * 0x9e3779b97f4a7c15ULL) >> 46) & (REF_SLOTS - 1);

	while (ref.slot[i] != MAXU && ref.slot[i] != ctr)
		i = (i + 1) & (REF_SLOTS - 1);
	return i;
}

static bool ref_update(uint64_t ctr)
{
	size_t i;

	if (ctr == MAXU)
		return false;
	if (ctr < ref.top && ref.top - ctr > W)
		return false;
	i = ref_find(ctr);
	if (ref.slot[i] == ctr)
		return false;
	ref.slot[i] = ctr;
	if (ctr >= ref.top)
		ref.top = ctr + 1;
	return true;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64: deterministic, so a failure reproduces. */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Mostly near the edge of the window, sometimes forward jumps of all sizes. */
static uint64_t pick(uint64_t top)
{
	uint64_t r = rng() % 100, span;

	if (r < 60) /* around the window: behind, at the edge, a little ahead */
		span = W + 200;
	else if (r < 95)
		span = 300; /* recent counters: lots of duplicates */
	else if (r < 99)
		return top + rng() % (3 * B); /* forward jump */
	else if (rng() % 2)
		return MAXU - rng() % 3; /* the very top, UINT64_MAX included */
	else
		return top + (rng() >> (rng() % 64)); /* anything; may wrap to old ones */
	if (top < span)
		return rng() % (span + 64);
	return top - span + rng() % (span + 64);
}

static void random_run(uint64_t start, unsigned long ops)
{
	static struct replay_window w;
	unsigned long i;

	memset(ref.slot, 0xff, sizeof(ref.slot));
	ref.top = 0;
	replay_init(&w);
	if (start) {
		/* Seed both with start - 1 so the run begins high up. */
		assert_true(replay_update(&w, start - 1));
		assert_true(ref_update(start - 1));
	}
	for (i = 0; i < ops; i++) {
		uint64_t ctr = pick(ref.top);
		bool want, check;

		if (ref.top > 64 && rng() % 4 == 0) /* bias toward recent replays */
			ctr = ref.top - 1 - rng() % 64;
		check = replay_check(&w, ctr);
		want = ref_update(ctr);
		if (replay_update(&w, ctr) != want || check != want)
			fail_msg("op %lu ctr %llu: want %d", i, (unsigned long long)ctr, want);
	}
}

static void test_random_vs_reference(void **state)
{
	(void)state;
	rng_state = 1;
	random_run(0, 100000);
	/* Near the top, where ctr + W would overflow and jumps hit UINT64_MAX. */
	rng_state = 2;
	random_run(MAXU - 50000000ULL, 100000);
}

/* replay_too_old: exactly the counters behind the window, nothing else. */
static void test_too_old(void **state)
{
	static struct replay_window w;

	(void)state;
	replay_init(&w);
	assert_false(replay_too_old(&w, 0)); /* nothing seen yet */
	assert_true(replay_update(&w, W + 10));
	assert_true(replay_too_old(&w, 10));
	assert_false(replay_too_old(&w, 11));     /* the oldest one in the window */
	assert_false(replay_too_old(&w, W + 10)); /* seen, but not too old */
	assert_false(replay_too_old(&w, W + 11)); /* ahead */
	assert_false(replay_too_old(&w, MAXU));
	for (uint64_t c = 0; c < 2 * W; c++)
		assert_true(replay_too_old(&w, c) == (!replay_check(&w, c) && c < 11));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_random_vs_reference),
	    cmocka_unit_test(test_too_old),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
