/*
 * CoDel: no signal for a queue that drains or stays under target, the first
 * signal one interval after a standing queue begins, then signals closer
 * together (interval / sqrt(n), n at most 4), a quick return resuming near
 * the old rate, and parameters that follow the RTT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "aqm/codel.h"

#define MS 1000000ULL
#define US 1000ULL

/* Dequeues one packet every step ns from t0 to t1 with the given sojourn;
 * records the times of the signals. Returns how many. */
static unsigned run(struct codel *c, uint64_t t0, uint64_t t1, uint64_t step, uint64_t sojourn,
                    bool backlog, uint64_t *at, unsigned max)
{
	unsigned n = 0;

	for (uint64_t t = t0; t < t1; t += step)
		if (codel_signal(c, t, sojourn, backlog) && n < max)
			at[n++] = t;
	return n;
}

static void test_parameters_follow_rtt(void **state)
{
	struct codel c = {0};

	(void)state;
	codel_set(&c, 100 * US); /* a LAN */
	assert_int_equal(c.interval, 10 * MS + 200 * US);
	assert_int_equal(c.target, MS + 20 * US);
	assert_int_equal(codel_hard_limit(&c), 100 * MS + 20 * MS + 400 * US);
	codel_set(&c, 20 * MS);
	assert_int_equal(c.interval, 50 * MS);
	assert_int_equal(c.target, 5 * MS);
	assert_int_equal(codel_hard_limit(&c), 200 * MS);
	codel_set(&c, 300 * MS); /* capped */
	assert_int_equal(c.interval, 100 * MS);
	assert_int_equal(c.target, 10 * MS);
	codel_set(&c, 0);
	assert_int_equal(c.interval, 10 * MS);
	assert_int_equal(c.target, MS);
}

static void test_short_queues_are_left_alone(void **state)
{
	struct codel c = {0};
	uint64_t at[8];

	(void)state;
	codel_set(&c, 0);
	/* Under target for a whole second. */
	assert_int_equal(run(&c, 0, 1000 * MS, 10 * US, 900 * US, true, at, 8), 0);
	/* Far over target, but the queue drains each time (no backlog). */
	assert_int_equal(run(&c, 1000 * MS, 2000 * MS, 10 * US, 50 * MS, false, at, 8), 0);
	/* Bursts: 9 ms over target, then one packet under it, again and again. */
	for (uint64_t t = 2000 * MS; t < 3000 * MS; t += 10 * MS) {
		assert_int_equal(run(&c, t, t + 9 * MS, 10 * US, 5 * MS, true, at, 8), 0);
		assert_false(codel_signal(&c, t + 9 * MS, 100 * US, true));
	}
}

static void test_standing_queue_is_signalled_faster_and_faster(void **state)
{
	struct codel c = {0};
	uint64_t at[64];
	unsigned n;

	(void)state;
	codel_set(&c, 0); /* interval 10 ms, target 1 ms */
	n = run(&c, 0, 200 * MS, 10 * US, 3 * MS, true, at, 64);
	assert_true(n >= 10);
	/* The first signal comes one interval after the queue began to stand. */
	assert_true(at[0] >= 10 * MS && at[0] <= 10 * MS + 10 * US);
	/* Then the n-th gap is interval / sqrt(n), n at most 4: gaps shrink to
	 * half the interval and stay there. */
	for (unsigned i = 1; i < n; i++) {
		double want = 10.0 * MS / sqrt((double)(i < 4 ? i : 4));
		double gap = (double)(at[i] - at[i - 1]);

		assert_true(fabs(gap - want) <= 20.0 * US);
		if (i > 1)
			assert_true(at[i] - at[i - 1] <= at[i - 1] - at[i - 2]);
	}
	/* 200 ms standing: 1 + 3 gaps of 10, 7.1, 5.8 ms and then one every 5 ms. */
	assert_int_equal(n, 4 + (unsigned)((190.0 - 10.0 - 7.07 - 5.77) / 5.0));
	/* The queue drains: signals stop at once. */
	assert_false(codel_signal(&c, 200 * MS, 100 * US, true));
	assert_false(c.dropping);
	assert_int_equal(run(&c, 200 * MS, 400 * MS, 10 * US, 100 * US, true, at, 64), 0);
}

static void test_quick_return_resumes_near_the_old_rate(void **state)
{
	struct codel c = {0};
	uint64_t at[64], first[64];
	unsigned n1, n2;

	(void)state;
	codel_set(&c, 0);
	n1 = run(&c, 0, 100 * MS, 10 * US, 3 * MS, true, first, 64);
	assert_true(n1 > 3);
	assert_false(codel_signal(&c, 100 * MS, 100 * US, true)); /* brief relief */
	n2 = run(&c, 100 * MS + 10 * US, 200 * MS, 10 * US, 3 * MS, true, at, 64);
	assert_true(n2 > 0);
	/* It re-enters after a fresh interval, but with the count it had, so the
	 * second signal follows far sooner than a cold start's 10 / sqrt(2) ms. */
	assert_true(c.drop_count > 2);
	assert_true(n2 >= 2);
	assert_true(at[1] - at[0] < 7 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parameters_follow_rtt),
	    cmocka_unit_test(test_short_queues_are_left_alone),
	    cmocka_unit_test(test_standing_queue_is_signalled_faster_and_faster),
	    cmocka_unit_test(test_quick_return_resumes_near_the_old_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
