/*
 * The TAP-mode MAC learning table: learning, aging, an address bound to
 * whoever it was seen from first while it is live (another peer's claim is
 * refused, this side's wins), the per-peer quota, no eviction of live
 * entries when a peer makes up addresses, and the bound on the table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mac/mac.h"

#define PEERS 20

static struct mac_table *t;

static void mac_of(uint8_t m[6], uint32_t n)
{
	m[0] = 0x02, m[1] = 0x00;
	m[2] = (uint8_t)(n >> 24), m[3] = (uint8_t)(n >> 16);
	m[4] = (uint8_t)(n >> 8), m[5] = (uint8_t)n;
}

static int setup(void **state)
{
	(void)state;
	t = calloc(1, sizeof(*t));
	return t != NULL && mac_table_init(t, PEERS) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	mac_table_free(t);
	free(t);
	return 0;
}

static void test_learn_bind_and_move(void **state)
{
	uint8_t m[6];

	(void)state;
	mac_of(m, 1);
	assert_int_equal(mac_lookup(t, m, 1), 0);
	assert_int_equal(mac_learn(t, m, 1, 1), MAC_OK);
	assert_int_equal(mac_lookup(t, m, 2), 1);
	/* Peer 2 claims peer 1's live address: refused, and it stays peer 1's. */
	assert_int_equal(mac_learn(t, m, 2, 3), MAC_TAKEN);
	assert_int_equal(mac_lookup(t, m, 4), 1);
	assert_int_equal(mac_learn(t, m, 1, 5), MAC_OK); /* refreshed */
	/* Once it aged out (the host really moved), peer 2 may have it. */
	assert_int_equal(mac_learn(t, m, 2, 5 + MAC_AGE_NS - 1), MAC_TAKEN);
	assert_int_equal(mac_learn(t, m, 2, 5 + MAC_AGE_NS), MAC_OK);
	assert_int_equal(mac_lookup(t, m, 6 + MAC_AGE_NS), 2);
	assert_int_equal(mac_count(t, 0, 6 + MAC_AGE_NS), 1);
	assert_int_equal(mac_count(t, 1, 6 + MAC_AGE_NS), 0);
	mac_forget(t, 2);
	assert_int_equal(mac_lookup(t, m, 7 + MAC_AGE_NS), 0);
}

static void test_local_wins(void **state)
{
	uint8_t host[6], gw[6];

	(void)state;
	/* A host on this side spoke first: no peer may claim it. */
	mac_of(host, 10);
	assert_int_equal(mac_learn(t, host, MAC_LOCAL, 1), MAC_OK);
	assert_int_equal(mac_learn(t, host, 3, 2), MAC_TAKEN);
	assert_int_equal(mac_lookup(t, host, 3), MAC_LOCAL);
	/* A peer claimed this side's gateway before it spoke: the gateway takes it back. */
	mac_of(gw, 11);
	assert_int_equal(mac_learn(t, gw, 3, 1), MAC_OK);
	assert_int_equal(mac_learn(t, gw, MAC_LOCAL, 2), MAC_OK);
	assert_int_equal(mac_lookup(t, gw, 3), MAC_LOCAL);
	assert_int_equal(mac_learn(t, gw, 3, 4), MAC_TAKEN);
	assert_int_equal(mac_count(t, 3, 4), 0);
}

static void test_aging(void **state)
{
	uint8_t m[6];

	(void)state;
	mac_of(m, 7);
	mac_learn(t, m, 1, 1000);
	assert_int_equal(mac_lookup(t, m, 1000 + MAC_AGE_NS - 1), 1);
	assert_int_equal(mac_lookup(t, m, 1000 + MAC_AGE_NS), 0);
	assert_int_equal(mac_count(t, 0, 1000 + MAC_AGE_NS), 0);
}

/*
 * Peer 1 makes up four times the table's worth of addresses: it ends with
 * at most its quota, every address the other peers learned before is still
 * theirs, and they can still learn new ones.
 */
static void test_quota_and_no_churn(void **state)
{
	uint64_t now = 1;
	uint8_t m[6];
	size_t kept = 0, others = 0;

	(void)state;
	for (uint32_t p = 2; p <= PEERS; p++)
		for (uint32_t i = 0; i < 50; i++) {
			mac_of(m, p << 16 | i);
			if (mac_learn(t, m, p, now) == MAC_OK)
				others++;
		}
	assert_true(others > (PEERS - 1) * 50 * 9 / 10);
	for (uint32_t i = 0; i < 4 * MAC_TABLE_SIZE; i++) {
		mac_of(m, 0x01000000u | i);
		assert_int_not_equal(mac_learn(t, m, 1, ++now), MAC_TAKEN);
	}
	assert_true(mac_count(t, 1, now) <= MAC_PER_PEER);
	assert_true(mac_count(t, 1, now) >= MAC_PER_PEER / 2);
	for (uint32_t p = 2; p <= PEERS; p++)
		for (uint32_t i = 0; i < 50; i++) {
			mac_of(m, p << 16 | i);
			kept += mac_lookup(t, m, now) == p;
		}
	assert_int_equal(kept, others);
	mac_of(m, 0x00ff0001);
	assert_int_equal(mac_learn(t, m, 2, now), MAC_OK);
	/* Once its addresses age out, peer 1 can learn again. */
	now += MAC_AGE_NS + MAC_SWEEP_NS;
	mac_of(m, 0x02000000);
	assert_int_equal(mac_learn(t, m, 1, now), MAC_OK);
	assert_int_equal(mac_count(t, 1, now), 1);
}

static void test_capacity_bounded(void **state)
{
	uint8_t m[6];
	size_t learned = 0;

	(void)state;
	/* Every peer at its quota, this side with more: the table stays bounded. */
	for (uint32_t p = 1; p <= PEERS; p++)
		for (uint32_t i = 0; i < MAC_PER_PEER; i++) {
			mac_of(m, p << 16 | i);
			learned += mac_learn(t, m, p, 10 + i) == MAC_OK;
		}
	for (uint32_t i = 0; i < MAC_TABLE_SIZE; i++) {
		mac_of(m, 0x7f000000u | i);
		mac_learn(t, m, MAC_LOCAL, 10 + i);
	}
	assert_true(mac_count(t, 0, 20) <= MAC_TABLE_SIZE);
	for (uint32_t p = 1; p <= PEERS; p++)
		assert_true(mac_count(t, p, 20) <= MAC_PER_PEER);
	assert_true(learned > MAC_TABLE_SIZE / 2);
}

/* A peer renumbered takes its entries and their count along; an owner past
 * the table's peers is never learned. */
static void test_rename_and_range(void **state)
{
	uint8_t m[6];

	(void)state;
	mac_of(m, 7);
	assert_int_equal(mac_learn(t, m, 3, 1), MAC_OK);
	mac_rename(t, 3, 5);
	assert_int_equal(mac_lookup(t, m, 2), 5);
	assert_int_equal(mac_count(t, 3, 2), 0);
	assert_int_equal(mac_count(t, 5, 2), 1);
	mac_of(m, 8);
	assert_int_equal(mac_learn(t, m, PEERS + 1, 3), MAC_FULL);
	assert_int_equal(mac_lookup(t, m, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_learn_bind_and_move, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_local_wins, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_aging, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_quota_and_no_churn, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_capacity_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rename_and_range, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
