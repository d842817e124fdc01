/* The TAP-mode MAC learning table: learning, moves, aging, capacity. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mac/mac.h"

static void mac_of(uint8_t m[6], uint32_t n)
{
	m[0] = 0x02, m[1] = 0x00;
	m[2] = (uint8_t)(n >> 24), m[3] = (uint8_t)(n >> 16);
	m[4] = (uint8_t)(n >> 8), m[5] = (uint8_t)n;
}

static void test_learn_and_move(void **state)
{
	struct mac_table *t = calloc(1, sizeof(*t));
	int a, b;
	uint8_t m[6];

	(void)state;
	mac_of(m, 1);
	assert_null(mac_lookup(t, m, 1));
	mac_learn(t, m, &a, 1);
	assert_ptr_equal(mac_lookup(t, m, 2), &a);
	mac_learn(t, m, &b, 3); /* the host moved behind another peer */
	assert_ptr_equal(mac_lookup(t, m, 4), &b);
	assert_int_equal(mac_count(t, 4), 1);
	mac_forget(t, &b);
	assert_null(mac_lookup(t, m, 5));
	free(t);
}

static void test_aging(void **state)
{
	struct mac_table *t = calloc(1, sizeof(*t));
	int a;
	uint8_t m[6];

	(void)state;
	mac_of(m, 7);
	mac_learn(t, m, &a, 1000);
	assert_ptr_equal(mac_lookup(t, m, 1000 + MAC_AGE_NS - 1), &a);
	assert_null(mac_lookup(t, m, 1000 + MAC_AGE_NS));
	assert_int_equal(mac_count(t, 1000 + MAC_AGE_NS), 0);
	free(t);
}

static void test_capacity_bounded(void **state)
{
	struct mac_table *t = calloc(1, sizeof(*t));
	int a;
	uint8_t m[6];
	size_t found = 0;

	(void)state;
	/* Four times more hosts than slots: the table stays bounded, the newest win. */
	for (uint32_t i = 0; i < 4 * MAC_TABLE_SIZE; i++) {
		mac_of(m, i);
		mac_learn(t, m, &a, 10 + i);
	}
	assert_true(mac_count(t, 10 + 4 * MAC_TABLE_SIZE) <= MAC_TABLE_SIZE);
	for (uint32_t i = 3 * MAC_TABLE_SIZE; i < 4 * MAC_TABLE_SIZE; i++) {
		mac_of(m, i);
		found += mac_lookup(t, m, 10 + 4 * MAC_TABLE_SIZE) == &a;
	}
	/* Most of the most recent quarter must still be known. */
	assert_true(found > MAC_TABLE_SIZE / 2);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_learn_and_move),
	    cmocka_unit_test(test_aging),
	    cmocka_unit_test(test_capacity_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
