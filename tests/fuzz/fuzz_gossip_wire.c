/*
 * The gossip message decoder (src/wire/gossip.h) on arbitrary bytes.
 * Whatever it accepts must stay inside the input, have every list record
 * within its limits, and encode back to the same bytes, so a decoder that
 * reads past its bounds (ASan), accepts two encodings of one message or
 * misreads a field (the round trip) fails.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/gossip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static int inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

static uint8_t out[WIRE_GOSSIP_MAX_MTU + WIRE_GOSSIP_ITEM_HDR];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_gossip m;

	if (!wire_gossip_get(&m, data, size))
		return 0;
	CHECK(m.type >= WIRE_GOSSIP_SUMMARY && m.type <= WIRE_GOSSIP_ITEM);
	switch (m.type) {
	case WIRE_GOSSIP_TREE:
		CHECK(m.n > 0 && m.first + m.n <= WIRE_GOSSIP_FANOUT);
		CHECK(inside(m.list, (size_t)m.n * WIRE_GOSSIP_CHILD, data, size));
		break;
	case WIRE_GOSSIP_DIGEST:
	case WIRE_GOSSIP_ANNOUNCE:
		CHECK(m.n == 0 || inside(m.list, (size_t)m.n * WIRE_GOSSIP_ENTRY, data, size));
		for (unsigned i = 0; i < m.n; i++) {
			struct wire_gossip_entry e;

			wire_gossip_entry_at(&m, i, &e);
			CHECK(e.len <= WIRE_GOSSIP_MAX_ITEM);
		}
		break;
	case WIRE_GOSSIP_PULL:
		CHECK(inside(m.list, (size_t)m.n * WIRE_GOSSIP_PULL_LEN, data, size));
		for (unsigned i = 0; i < m.n; i++) {
			struct wire_gossip_pull p;

			wire_gossip_pull_at(&m, i, &p);
			CHECK(p.offset <= WIRE_GOSSIP_MAX_ITEM && p.offset % WIRE_GOSSIP_UNIT == 0);
		}
		break;
	case WIRE_GOSSIP_ITEM:
		CHECK(inside(m.id, WIRE_GOSSIP_ID_LEN, data, size));
		CHECK(m.len == 0 || inside(m.data, m.len, data, size));
		CHECK(m.total <= WIRE_GOSSIP_MAX_ITEM && m.offset + m.len <= m.total);
		break;
	default:
		break;
	}
	CHECK(wire_gossip_put(out, sizeof(out), &m) == size);
	CHECK(memcmp(out, data, size) == 0);
	return 0;
}
