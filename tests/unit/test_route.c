/* Unit tests for the longest-prefix-match table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "route/route.h"

/* Distinct values to store; only their addresses matter. */
static int va, vb, vc, vd, ve;

/* "addr/len" as a yip_cidr, without depending on addr.c. */
static struct yip_cidr cidr(const char *s)
{
	struct yip_cidr c;
	char buf[64];
	char *slash;

	memset(&c, 0, sizeof(c));
	assert_true(strlen(s) < sizeof(buf));
	strcpy(buf, s);
	slash = strchr(buf, '/');
	assert_non_null(slash);
	*slash = '\0';
	c.family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(c.family, buf, c.addr), 1);
	c.plen = (uint8_t)atoi(slash + 1);
	return c;
}

/*
 * Looks up addr from a heap copy of exactly the family's length, so that
 * AddressSanitizer catches reads past the end of a 4-byte IPv4 address.
 */
static void *lookup_exact(const struct route_table *t, int family, const uint8_t *addr)
{
	size_t len = family == AF_INET ? 4 : 16;
	uint8_t *copy = malloc(len);
	void *value;

	assert_non_null(copy);
	memcpy(copy, addr, len);
	value = route_lookup(t, family, copy);
	free(copy);
	return value;
}

/* Looks up a textual address of either family. */
static void *lookup(const struct route_table *t, const char *s)
{
	uint8_t addr[16];
	int family = strchr(s, ':') ? AF_INET6 : AF_INET;

	assert_int_equal(inet_pton(family, s, addr), 1);
	return lookup_exact(t, family, addr);
}

static void insert(struct route_table *t, const char *s, void *value)
{
	struct yip_cidr c = cidr(s);

	assert_int_equal(route_insert(t, &c, value), 0);
}

static int remove_prefix(struct route_table *t, const char *s)
{
	struct yip_cidr c = cidr(s);

	return route_remove(t, &c);
}

static void test_nested(void **state)
{
	struct route_table *t = route_table_new(16);

	(void)state;
	assert_non_null(t);
	assert_null(lookup(t, "10.1.2.3"));
	/* Insert out of order so both "above" and "below" splices happen. */
	insert(t, "10.1.0.0/16", &vb);
	insert(t, "10.1.2.0/24", &vc);
	insert(t, "10.0.0.0/8", &va);
	assert_ptr_equal(lookup(t, "10.1.2.3"), &vc);
	assert_ptr_equal(lookup(t, "10.1.3.3"), &vb);
	assert_ptr_equal(lookup(t, "10.2.0.1"), &va);
	assert_null(lookup(t, "11.0.0.1"));
	assert_null(lookup(t, "9.255.255.255"));
	route_table_free(t);
}

static void test_default_and_hosts(void **state)
{
	struct route_table *t = route_table_new(16);

	(void)state;
	insert(t, "0.0.0.0/0", &va);
	insert(t, "192.168.1.7/32", &vb);
	insert(t, "::/0", &vc);
	insert(t, "fd00::1/128", &vd);
	assert_ptr_equal(lookup(t, "1.2.3.4"), &va);
	assert_ptr_equal(lookup(t, "255.255.255.255"), &va);
	assert_ptr_equal(lookup(t, "192.168.1.7"), &vb);
	assert_ptr_equal(lookup(t, "192.168.1.6"), &va);
	assert_ptr_equal(lookup(t, "192.168.1.8"), &va);
	assert_ptr_equal(lookup(t, "fd00::1"), &vd);
	assert_ptr_equal(lookup(t, "fd00::"), &vc);
	assert_ptr_equal(lookup(t, "fd00::3"), &vc);
	assert_ptr_equal(lookup(t, "2001:db8::1"), &vc);
	route_table_free(t);
}

static void test_family_isolation(void **state)
{
	struct route_table *t = route_table_new(16);
	uint8_t zero[16] = {0};

	(void)state;
	/* The first four bytes of the IPv6 prefix spell the IPv4 one. */
	insert(t, "10.0.0.0/8", &va);
	insert(t, "a00::/8", &vb);
	assert_ptr_equal(lookup(t, "10.1.1.1"), &va);
	assert_ptr_equal(lookup(t, "a01::1"), &vb);
	assert_null(lookup(t, "::ffff:10.1.1.1"));
	assert_int_equal(remove_prefix(t, "10.0.0.0/8"), 0);
	assert_null(lookup(t, "10.1.1.1"));
	assert_ptr_equal(lookup(t, "a01::1"), &vb);

	insert(t, "0.0.0.0/0", &vc);
	assert_null(lookup(t, "::"));
	assert_null(route_lookup(t, AF_UNSPEC, zero));
	route_table_free(t);
}

static void test_overlaps(void **state)
{
	struct route_table *t = route_table_new(16);

	(void)state;
	insert(t, "10.0.0.0/9", &va);
	insert(t, "10.128.0.0/9", &vb);
	insert(t, "10.0.0.0/8", &vc);
	insert(t, "10.64.0.0/10", &vd);
	insert(t, "10.0.0.0/10", &ve);
	assert_ptr_equal(lookup(t, "10.0.0.1"), &ve);
	assert_ptr_equal(lookup(t, "10.64.0.1"), &vd);
	assert_ptr_equal(lookup(t, "10.127.255.255"), &vd);
	assert_ptr_equal(lookup(t, "10.128.0.0"), &vb);
	assert_int_equal(remove_prefix(t, "10.0.0.0/9"), 0);
	assert_ptr_equal(lookup(t, "10.0.0.1"), &ve);
	assert_int_equal(remove_prefix(t, "10.0.0.0/10"), 0);
	assert_ptr_equal(lookup(t, "10.0.0.1"), &vc);
	assert_ptr_equal(lookup(t, "10.64.0.1"), &vd);
	route_table_free(t);
}

/* Prefixes should arrive with host bits clear; stray ones are ignored, not stored. */
static void test_host_bits_ignored(void **state)
{
	struct route_table *t = route_table_new(4);
	struct yip_cidr c = cidr("10.1.0.0/16");

	(void)state;
	c.addr[3] = 7;
	assert_int_equal(route_insert(t, &c, &va), 0);
	assert_ptr_equal(lookup(t, "10.1.200.1"), &va);
	assert_int_equal(remove_prefix(t, "10.1.0.0/16"), 0);
	assert_null(lookup(t, "10.1.200.1"));
	route_table_free(t);
}

static void test_duplicate(void **state)
{
	struct route_table *t = route_table_new(16);
	struct yip_cidr c = cidr("10.1.0.0/16");

	(void)state;
	insert(t, "10.1.0.0/16", &va);
	assert_int_equal(route_insert(t, &c, &vb), -2);
	assert_ptr_equal(lookup(t, "10.1.2.3"), &va);
	c = cidr("fd00::/8");
	assert_int_equal(route_insert(t, &c, &va), 0);
	assert_int_equal(route_insert(t, &c, &va), -2);
	route_table_free(t);
}

static void test_remove(void **state)
{
	struct route_table *t = route_table_new(16);

	(void)state;
	insert(t, "10.0.0.0/8", &va);
	insert(t, "10.1.0.0/16", &vb);
	insert(t, "10.1.2.0/24", &vc);
	insert(t, "10.2.0.0/16", &vd);
	assert_int_equal(remove_prefix(t, "10.1.2.0/24"), 0);
	assert_ptr_equal(lookup(t, "10.1.2.3"), &vb);
	assert_int_equal(remove_prefix(t, "10.1.2.0/24"), -1);
	/* Absent: a fork between 10.1/16 and 10.2/16, a longer and a shorter prefix. */
	assert_int_equal(remove_prefix(t, "10.0.0.0/14"), -1);
	assert_int_equal(remove_prefix(t, "10.1.2.3/32"), -1);
	assert_int_equal(remove_prefix(t, "0.0.0.0/0"), -1);
	assert_int_equal(remove_prefix(t, "10.0.0.0/8"), 0);
	assert_ptr_equal(lookup(t, "10.1.2.3"), &vb);
	assert_ptr_equal(lookup(t, "10.2.2.3"), &vd);
	assert_null(lookup(t, "10.3.0.1"));
	assert_int_equal(remove_prefix(t, "10.1.0.0/16"), 0);
	assert_int_equal(remove_prefix(t, "10.2.0.0/16"), 0);
	assert_null(lookup(t, "10.2.2.3"));
	/* Everything is gone, so the prefixes can come back. */
	insert(t, "10.1.0.0/16", &va);
	assert_ptr_equal(lookup(t, "10.1.2.3"), &va);
	route_table_free(t);
}

static void test_remove_value(void **state)
{
	struct route_table *t = route_table_new(16);

	(void)state;
	insert(t, "10.0.0.0/8", &va);
	insert(t, "10.1.0.0/16", &vb);
	insert(t, "10.1.2.0/24", &va);
	insert(t, "10.1.2.128/25", &vb);
	insert(t, "fd00::/8", &va);
	insert(t, "fd00:1::/32", &vc);
	assert_int_equal(route_remove_value(t, &va), 3);
	assert_int_equal(route_remove_value(t, &va), 0);
	assert_int_equal(route_remove_value(t, NULL), 0);
	assert_ptr_equal(lookup(t, "10.1.2.3"), &vb);
	assert_ptr_equal(lookup(t, "10.1.2.200"), &vb);
	assert_null(lookup(t, "10.2.0.1"));
	assert_null(lookup(t, "fd00::1"));
	assert_ptr_equal(lookup(t, "fd00:1::1"), &vc);
	assert_int_equal(route_remove_value(t, &vb), 2);
	assert_int_equal(route_remove_value(t, &vc), 1);
	assert_null(lookup(t, "10.1.2.200"));
	assert_null(lookup(t, "fd00:1::1"));
	route_table_free(t);
}

static void test_capacity(void **state)
{
	struct route_table *t = route_table_new(3);
	struct yip_cidr c = cidr("10.0.0.3/32");

	(void)state;
	insert(t, "10.0.0.0/32", &va);
	insert(t, "10.0.0.1/32", &va);
	insert(t, "fd00::/8", &va);
	assert_int_equal(route_insert(t, &c, &va), -1);
	/* A duplicate is still reported as one when the table is full. */
	c = cidr("fd00::/8");
	assert_int_equal(route_insert(t, &c, &vb), -2);
	assert_int_equal(remove_prefix(t, "10.0.0.1/32"), 0);
	insert(t, "10.0.0.3/32", &vb);
	assert_ptr_equal(lookup(t, "10.0.0.3"), &vb);
	route_table_free(t);

	t = route_table_new(0);
	assert_non_null(t);
	c = cidr("0.0.0.0/0");
	assert_int_equal(route_insert(t, &c, &va), -1);
	assert_null(lookup(t, "1.2.3.4"));
	route_table_free(t);
}

/* A small deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static void mask(uint8_t *addr, unsigned plen, unsigned bits)
{
	for (unsigned i = plen; i < bits; i++)
		addr[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
}

/*
 * A random prefix near one of a few base addresses, so that prefixes nest
 * and share long runs of bits instead of scattering over the space.
 */
static struct yip_cidr random_prefix(void)
{
	static const uint8_t bases[4][16] = {
	    {10, 1, 2, 3},
	    {192, 168, 0, 0},
	    {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
	    {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	};
	struct yip_cidr c;
	unsigned b = rnd() % 4, bits, i;

	memset(&c, 0, sizeof(c));
	c.family = b < 2 ? AF_INET : AF_INET6;
	bits = b < 2 ? 32 : 128;
	memcpy(c.addr, bases[b], bits / 8);
	/* Flip a few random bits, biased towards the low end. */
	for (i = rnd() % 4; i > 0; i--) {
		unsigned pos = bits - 1 - rnd() % (rnd() % 2 ? bits : bits / 4);

		c.addr[pos / 8] ^= (uint8_t)(0x80u >> (pos % 8));
	}
	/* Mostly long prefixes, so that some lookups find nothing; now and then any length. */
	if (rnd() % 64)
		c.plen = (uint8_t)(bits / 4 + rnd() % (bits * 3 / 4 + 1));
	else
		c.plen = (uint8_t)(rnd() % (bits + 1));
	mask(c.addr, c.plen, bits);
	return c;
}

struct naive_entry {
	struct yip_cidr prefix;
	void *value;
};

struct naive {
	struct naive_entry *e;
	size_t n;
};

static bool naive_contains(const struct yip_cidr *c, int family, const uint8_t *addr)
{
	uint8_t a[16] = {0};

	if (c->family != family)
		return false;
	memcpy(a, addr, family == AF_INET ? 4 : 16);
	mask(a, c->plen, family == AF_INET ? 32 : 128);
	return memcmp(a, c->addr, 16) == 0;
}

static ssize_t naive_find(const struct naive *nv, const struct yip_cidr *c)
{
	for (size_t i = 0; i < nv->n; i++)
		if (nv->e[i].prefix.family == c->family && nv->e[i].prefix.plen == c->plen &&
		    memcmp(nv->e[i].prefix.addr, c->addr, 16) == 0)
			return (ssize_t)i;
	return -1;
}

static void *naive_lookup(const struct naive *nv, int family, const uint8_t *addr)
{
	void *best = NULL;
	int best_len = -1;

	for (size_t i = 0; i < nv->n; i++) {
		const struct yip_cidr *c = &nv->e[i].prefix;

		if (c->plen > best_len && naive_contains(c, family, addr)) {
			best = nv->e[i].value;
			best_len = c->plen;
		}
	}
	return best;
}

/*
 * An address inside a stored prefix (half the time), near the base
 * addresses, or anywhere at all: the host part is always random.
 */
static void random_address(const struct naive *nv, int *family, uint8_t addr[16])
{
	struct yip_cidr c;
	unsigned bits;

	if (nv->n > 0 && rnd() % 2)
		c = nv->e[rnd() % nv->n].prefix;
	else
		c = random_prefix();
	if (rnd() % 8 == 0)
		c.plen = 0;
	*family = c.family;
	bits = c.family == AF_INET ? 32 : 128;
	memcpy(addr, c.addr, 16);
	for (unsigned i = c.plen; i < bits; i++)
		if (rnd() % 2)
			addr[i / 8] ^= (uint8_t)(0x80u >> (i % 8));
}

static void compare_lookups(const struct route_table *t, const struct naive *nv, int rounds)
{
	uint8_t addr[16];
	int family;

	for (int i = 0; i < rounds; i++) {
		random_address(nv, &family, addr);
		assert_ptr_equal(lookup_exact(t, family, addr), naive_lookup(nv, family, addr));
	}
}

static void test_random_against_naive(void **state)
{
	/* Many values, so a wrong match rarely returns the right one by chance. */
	enum { MAX = 2000, VALUES = 1000 };
	static int values[VALUES];
	struct route_table *t = route_table_new(MAX);
	struct naive nv = {calloc(MAX, sizeof(struct naive_entry)), 0};
	int round;

	(void)state;
	assert_non_null(t);
	assert_non_null(nv.e);
	for (round = 0; round < 3; round++) {
		/* Fill until full, checking every return code against the model. */
		for (;;) {
			struct yip_cidr c = random_prefix();
			void *v = &values[rnd() % VALUES];
			int ret = route_insert(t, &c, v);

			if (naive_find(&nv, &c) >= 0) {
				assert_int_equal(ret, -2);
				continue;
			}
			if (nv.n == MAX) {
				assert_int_equal(ret, -1);
				break;
			}
			assert_int_equal(ret, 0);
			nv.e[nv.n++] = (struct naive_entry){c, v};
		}
		compare_lookups(t, &nv, 10000);

		/* Remove about half, by prefix, and some that are absent. */
		for (size_t i = 0; i < nv.n;) {
			if (rnd() % 2) {
				assert_int_equal(route_remove(t, &nv.e[i].prefix), 0);
				assert_int_equal(route_remove(t, &nv.e[i].prefix), -1);
				nv.e[i] = nv.e[--nv.n];
			} else {
				i++;
			}
		}
		compare_lookups(t, &nv, 10000);

		/* Then every prefix of one value. */
		void *v = &values[rnd() % VALUES];
		size_t expect = 0;

		for (size_t i = 0; i < nv.n;) {
			if (nv.e[i].value == v) {
				nv.e[i] = nv.e[--nv.n];
				expect++;
			} else {
				i++;
			}
		}
		assert_int_equal(route_remove_value(t, v), expect);
		compare_lookups(t, &nv, 10000);
	}
	free(nv.e);
	route_table_free(t);
}

/* Nodes freed by removal must be reusable, or a long-running daemon would fill up. */
static void test_churn(void **state)
{
	enum { MAX = 8 };
	struct route_table *t = route_table_new(MAX);
	struct yip_cidr held[MAX];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 10000; i++) {
		while (n < MAX) {
			struct yip_cidr c = random_prefix();
			int ret = route_insert(t, &c, &va);

			assert_true(ret == 0 || ret == -2);
			if (ret == 0)
				held[n++] = c;
		}
		size_t k = rnd() % n;

		assert_int_equal(route_remove(t, &held[k]), 0);
		held[k] = held[--n];
	}
	/* Drain completely, then fill with a fresh set again. */
	while (n > 0)
		assert_int_equal(route_remove(t, &held[--n]), 0);
	assert_null(lookup(t, "10.1.2.3"));
	for (int i = 0; i < MAX; i++) {
		struct yip_cidr c = cidr("172.16.0.0/32");

		c.addr[3] = (uint8_t)i;
		assert_int_equal(route_insert(t, &c, &vb), 0);
	}
	assert_ptr_equal(lookup(t, "172.16.0.7"), &vb);
	route_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nested),
	    cmocka_unit_test(test_default_and_hosts),
	    cmocka_unit_test(test_family_isolation),
	    cmocka_unit_test(test_overlaps),
	    cmocka_unit_test(test_host_bits_ignored),
	    cmocka_unit_test(test_duplicate),
	    cmocka_unit_test(test_remove),
	    cmocka_unit_test(test_remove_value),
	    cmocka_unit_test(test_capacity),
	    cmocka_unit_test(test_random_against_naive),
	    cmocka_unit_test(test_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
