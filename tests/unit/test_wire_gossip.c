/*
 * Gossip messages byte by byte (src/wire/gossip.h): every encoder against
 * the layout written out by hand, every decoder's refusals, and the round
 * trip through wire_gossip_put.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "wire/gossip.h"

static void round_trip(const uint8_t *msg, size_t len)
{
	uint8_t out[2048];
	struct wire_gossip m;

	assert_true(wire_gossip_get(&m, msg, len));
	assert_int_equal(wire_gossip_put(out, sizeof(out), &m), len);
	assert_memory_equal(out, msg, len);
	/* One byte short of room: refused, not truncated. */
	assert_int_equal(wire_gossip_put(out, len - 1, &m), 0);
}

static void summary_layout(void **state)
{
	static const uint8_t want[WIRE_GOSSIP_SUMMARY_LEN] = {
	    1,    1,                                        /* type, flags: WISHED */
	    0x04, 0x03, 0x02, 0x01,                         /* count */
	    0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, /* settled */
	    0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, /* current */
	};
	uint8_t b[WIRE_GOSSIP_SUMMARY_LEN + 1];
	struct wire_gossip m;

	(void)state;
	assert_int_equal(wire_gossip_summary_put(b, WIRE_GOSSIP_WISHED, 0x01020304,
	                                         0x1112131415161718ULL, 0x2122232425262728ULL),
	                 sizeof(want));
	assert_memory_equal(b, want, sizeof(want));
	assert_true(wire_gossip_get(&m, b, sizeof(want)));
	assert_int_equal(m.type, WIRE_GOSSIP_SUMMARY);
	assert_int_equal(m.flags, WIRE_GOSSIP_WISHED);
	assert_int_equal(m.count, 0x01020304);
	assert_true(m.settled == 0x1112131415161718ULL && m.current == 0x2122232425262728ULL);
	round_trip(b, sizeof(want));
	/* A byte more or less; an unknown flag. */
	assert_false(wire_gossip_get(&m, b, sizeof(want) - 1));
	b[sizeof(want)] = 0;
	assert_false(wire_gossip_get(&m, b, sizeof(want) + 1));
	b[1] = 2;
	assert_false(wire_gossip_get(&m, b, sizeof(want)));
}

static void tree_layout(void **state)
{
	uint8_t b[WIRE_GOSSIP_TREE_HDR + 3 * WIRE_GOSSIP_CHILD];
	struct wire_gossip m;
	uint64_t h;
	uint16_t c;
	size_t len;

	(void)state;
	len = wire_gossip_tree_hdr_put(b, 2, 4000, 61, 3);
	len += wire_gossip_child_put(b + len, 0x0102030405060708ULL, 7);
	len += wire_gossip_child_put(b + len, 0, 70000); /* saturates */
	len += wire_gossip_child_put(b + len, 9, 0);
	assert_int_equal(len, sizeof(b));
	assert_memory_equal(b, "\x02\x02\xa0\x0f\x00\x00\x3d\x03", 8);
	assert_memory_equal(b + 8, "\x08\x07\x06\x05\x04\x03\x02\x01\x07\x00", 10);
	assert_memory_equal(b + 18 + 8, "\xff\xff", 2);
	assert_true(wire_gossip_get(&m, b, len));
	assert_true(m.level == 2 && m.index == 4000 && m.first == 61 && m.n == 3);
	wire_gossip_child_at(&m, 0, &h, &c);
	assert_true(h == 0x0102030405060708ULL && c == 7);
	wire_gossip_child_at(&m, 1, &h, &c);
	assert_true(h == 0 && c == 65535);
	round_trip(b, len);
	/* Past the 64th child; a count that is not the length; no children;
	 * level 3 has no children; an index beyond 64^level. */
	b[6] = 62;
	assert_false(wire_gossip_get(&m, b, len));
	b[6] = 61;
	assert_false(wire_gossip_get(&m, b, len - 1));
	assert_false(wire_gossip_get(&m, b, len + 0 - WIRE_GOSSIP_CHILD));
	wire_gossip_tree_hdr_put(b, 0, 0, 0, 0);
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_TREE_HDR));
	wire_gossip_tree_hdr_put(b, 3, 0, 0, 1);
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_TREE_HDR + WIRE_GOSSIP_CHILD));
	wire_gossip_tree_hdr_put(b, 1, 64, 0, 1);
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_TREE_HDR + WIRE_GOSSIP_CHILD));
	wire_gossip_tree_hdr_put(b, 0, 1, 0, 1);
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_TREE_HDR + WIRE_GOSSIP_CHILD));
	wire_gossip_tree_hdr_put(b, 1, 63, 0, 1);
	assert_true(wire_gossip_get(&m, b, WIRE_GOSSIP_TREE_HDR + WIRE_GOSSIP_CHILD));
}

static void entry_lists(void **state)
{
	struct wire_gossip_entry e = {.kind = 9, .version = 0x0a0b, .chash = 0xff, .len = 65536}, f;
	uint8_t b[WIRE_GOSSIP_DIGEST_HDR + 2 * WIRE_GOSSIP_ENTRY];
	struct wire_gossip m;
	size_t len;

	(void)state;
	for (int i = 0; i < WIRE_GOSSIP_ID_LEN; i++)
		e.id[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(wire_gossip_entry_put(b, &e), WIRE_GOSSIP_ENTRY);
	assert_int_equal(b[0], 9);
	assert_memory_equal(b + 1, e.id, WIRE_GOSSIP_ID_LEN);
	assert_memory_equal(b + 33, "\x0b\x0a\x00\x00\x00\x00\x00\x00\xff\0\0\0\0\0\0\0", 16);
	assert_memory_equal(b + 49, "\x00\x00\x01\x00", 4);

	/* ANNOUNCE: 4 | n | entries. */
	len = wire_gossip_list_hdr_put(b, WIRE_GOSSIP_ANNOUNCE, 2);
	len += wire_gossip_entry_put(b + len, &e);
	len += wire_gossip_entry_put(b + len, &e);
	assert_memory_equal(b, "\x04\x02", 2);
	assert_true(wire_gossip_get(&m, b, len));
	assert_int_equal(m.n, 2);
	wire_gossip_entry_at(&m, 1, &f);
	assert_true(f.kind == e.kind && f.version == e.version && f.chash == e.chash);
	assert_true(f.len == e.len && memcmp(f.id, e.id, sizeof(e.id)) == 0);
	round_trip(b, len);
	assert_false(wire_gossip_get(&m, b, len - 1));
	b[1] = 0; /* an empty announcement is not one */
	assert_false(wire_gossip_get(&m, b, 2));
	b[1] = 2;
	b[2 + 49] = 1; /* length 262145: one past the item limit */
	b[2 + 49 + 2] = 4;
	assert_false(wire_gossip_get(&m, b, len));

	/* DIGEST: 3 | flags | level | index | n | entries; empty is allowed. */
	len = wire_gossip_digest_hdr_put(b, WIRE_GOSSIP_REPLY, 3, 262143, 1);
	len += wire_gossip_entry_put(b + len, &e);
	assert_memory_equal(b, "\x03\x01\x03\xff\xff\x03\x00\x01", 8);
	assert_true(wire_gossip_get(&m, b, len));
	assert_true(m.flags == WIRE_GOSSIP_REPLY && m.level == 3 && m.index == 262143);
	round_trip(b, len);
	wire_gossip_digest_hdr_put(b, 0, 1, 5, 0);
	assert_true(wire_gossip_get(&m, b, WIRE_GOSSIP_DIGEST_HDR));
	round_trip(b, WIRE_GOSSIP_DIGEST_HDR);
	wire_gossip_digest_hdr_put(b, 0, 0, 0, 0); /* the root is not listed */
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_DIGEST_HDR));
	wire_gossip_digest_hdr_put(b, 0, 3, 262144, 0);
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_DIGEST_HDR));
	wire_gossip_digest_hdr_put(b, 2, 1, 0, 0);
	assert_false(wire_gossip_get(&m, b, WIRE_GOSSIP_DIGEST_HDR));
}

static void pull_layout(void **state)
{
	struct wire_gossip_pull p = {.kind = 1,
	                             .version = 5,
	                             .chash = 6,
	                             .offset = 128,
	                             .length = 7},
	                        q;
	uint8_t b[WIRE_GOSSIP_LIST_HDR + WIRE_GOSSIP_PULL_LEN];
	struct wire_gossip m;
	size_t len;

	(void)state;
	memset(p.id, 0x33, sizeof(p.id));
	len = wire_gossip_list_hdr_put(b, WIRE_GOSSIP_PULL, 1);
	len += wire_gossip_pull_put(b + len, &p);
	assert_int_equal(len, sizeof(b));
	assert_memory_equal(b, "\x05\x01\x01", 3);
	assert_memory_equal(b + 51, "\x80\x00\x00\x00\x07\x00\x00\x00", 8);
	assert_true(wire_gossip_get(&m, b, len));
	wire_gossip_pull_at(&m, 0, &q);
	assert_true(q.kind == p.kind && q.version == p.version && q.chash == p.chash);
	assert_true(q.offset == p.offset && q.length == p.length);
	assert_memory_equal(q.id, p.id, sizeof(p.id));
	round_trip(b, len);
	/* Off the unit grid; past the largest item. */
	b[51] = 0x81;
	assert_false(wire_gossip_get(&m, b, len));
	wire_gossip_pull_put(b + 2, &(struct wire_gossip_pull){.offset = 262144 + 64});
	assert_false(wire_gossip_get(&m, b, len));
	wire_gossip_pull_put(b + 2, &(struct wire_gossip_pull){.offset = 262144});
	assert_true(wire_gossip_get(&m, b, len));
}

static void item_layout(void **state)
{
	uint8_t b[WIRE_GOSSIP_ITEM_HDR + 200], id[WIRE_GOSSIP_ID_LEN];
	struct wire_gossip m;
	size_t len;

	(void)state;
	memset(id, 0x44, sizeof(id));
	len = wire_gossip_item_hdr_put(b, 7, id, 0x0102, 0x0304, 1000, 128);
	assert_int_equal(len, WIRE_GOSSIP_ITEM_HDR);
	assert_memory_equal(b, "\x06\x07\x44", 3);
	assert_memory_equal(b + 34, "\x02\x01\0\0\0\0\0\0\x04\x03\0\0\0\0\0\0", 16);
	assert_memory_equal(b + 50, "\xe8\x03\x00\x00\x80\x00\x00\x00", 8);
	memset(b + len, 0xee, 192);
	assert_true(wire_gossip_get(&m, b, len + 192));
	assert_true(m.kind == 7 && m.version == 0x0102 && m.chash == 0x0304);
	assert_true(m.total == 1000 && m.offset == 128 && m.len == 192);
	assert_ptr_equal(m.id, b + 2);
	assert_ptr_equal(m.data, b + WIRE_GOSSIP_ITEM_HDR);
	round_trip(b, len + 192);
	/* Not a whole number of units and not the item's end. */
	assert_false(wire_gossip_get(&m, b, len + 100));
	/* The end of the item may be any length. */
	wire_gossip_item_hdr_put(b, 7, id, 1, 2, 1000, 960);
	assert_true(wire_gossip_get(&m, b, len + 40));
	round_trip(b, len + 40);
	assert_false(wire_gossip_get(&m, b, len + 41)); /* past the end */
	/* An empty piece of a non-empty item; an empty item. */
	assert_false(wire_gossip_get(&m, b, len));
	wire_gossip_item_hdr_put(b, 7, id, 1, 2, 0, 0);
	assert_true(wire_gossip_get(&m, b, len));
	round_trip(b, len);
	/* Off the grid; larger than an item may be; offset past the total. */
	wire_gossip_item_hdr_put(b, 7, id, 1, 2, 1000, 100);
	assert_false(wire_gossip_get(&m, b, len + 64));
	wire_gossip_item_hdr_put(b, 7, id, 1, 2, 262145, 0);
	assert_false(wire_gossip_get(&m, b, len + 64));
	wire_gossip_item_hdr_put(b, 7, id, 1, 2, 64, 128);
	assert_false(wire_gossip_get(&m, b, len));
	assert_false(wire_gossip_get(&m, b, len - 1));
}

static void unknown_types(void **state)
{
	uint8_t b[64] = {0};
	struct wire_gossip m;

	(void)state;
	assert_false(wire_gossip_get(&m, b, 0));
	for (unsigned t = 0; t < 256; t++) {
		b[0] = (uint8_t)t;
		if (t < WIRE_GOSSIP_SUMMARY || t > WIRE_GOSSIP_ITEM)
			assert_false(wire_gossip_get(&m, b, sizeof(b)));
	}
	m = (struct wire_gossip){.type = 9};
	assert_int_equal(wire_gossip_put(b, sizeof(b), &m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(summary_layout), cmocka_unit_test(tree_layout),
	    cmocka_unit_test(entry_lists),    cmocka_unit_test(pull_layout),
	    cmocka_unit_test(item_layout),    cmocka_unit_test(unknown_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
