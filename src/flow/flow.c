#include "flow/flow.h"

#include <string.h>

#define FLOW_IDLE_NS      (30ULL * 1000000000ULL) /* an idle flow is forgotten */
#define FLOW_MIN_PACKETS  4                       /* before the heuristics decide */
#define FLOW_SWITCH_AFTER 64                      /* disagreeing packets before a change */
#define BULK_SIZE         1000                    /* average bytes */
#define SMALL_SIZE        320
#define INTERACTIVE_GAP   2000 /* microseconds: under 500 packets/s */

const char *flow_class_name(enum flow_class c)
{
	static const char *const names[] = {"default", "interactive", "bulk"};

	return c < FLOW_CLASSES ? names[c] : "?";
}

static int dscp_class(uint8_t dscp)
{
	if (dscp >= 40) /* CS5, EF (46), CS6, CS7 */
		return FLOW_INTERACTIVE;
	if (dscp == 8 || dscp == 10 || dscp == 12 || dscp == 14) /* CS1, AF11-13 */
		return FLOW_BULK;
	return -1;
}

/* FNV-1a over the bytes that name a flow. */
static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* Returns the flow key and the DSCP, or 0 if the packet cannot be parsed. */
static uint64_t flow_key(const uint8_t *pkt, size_t len, uint8_t *dscp)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t l4;
	uint8_t proto;

	if (len >= 20 && pkt[0] >> 4 == 4) {
		*dscp = pkt[1] >> 2;
		proto = pkt[9];
		l4 = (size_t)(pkt[0] & 15) * 4;
		h = hash_bytes(h, pkt + 12, 8);
	} else if (len >= 40 && pkt[0] >> 4 == 6) {
		*dscp = (uint8_t)(((pkt[0] & 15) << 2) | pkt[1] >> 6);
		proto = pkt[6];
		l4 = 40; /* extension headers are not followed: their flows share a key */
		h = hash_bytes(h, pkt + 8, 32);
	} else {
		return 0;
	}
	h = hash_bytes(h, &proto, 1);
	if ((proto == 6 || proto == 17) && len >= l4 + 4)
		h = hash_bytes(h, pkt + l4, 4); /* ports */
	return h ? h : 1;
}

static struct flow_entry *lookup(struct flow_table *t, uint64_t key, uint64_t now)
{
	size_t i = (size_t)key & (FLOW_TABLE_SIZE - 1);
	struct flow_entry *victim = NULL;

	/* A short probe; the stalest entry seen is replaced when the flow is new. */
	for (int n = 0; n < 8; n++, i = (i + 1) & (FLOW_TABLE_SIZE - 1)) {
		struct flow_entry *e = &t->e[i];

		if (e->key == key)
			return e;
		if (e->key == 0 || now - e->last_ns > FLOW_IDLE_NS) {
			victim = e;
			break;
		}
		if (victim == NULL || e->last_ns < victim->last_ns)
			victim = e;
	}
	memset(victim, 0, sizeof(*victim));
	victim->key = key;
	victim->cls = FLOW_DEFAULT;
	return victim;
}

static uint8_t heuristic(const struct flow_entry *e)
{
	if (e->avg_size >= BULK_SIZE)
		return FLOW_BULK;
	if (e->avg_size <= SMALL_SIZE && e->avg_gap_us >= INTERACTIVE_GAP)
		return FLOW_INTERACTIVE;
	return FLOW_DEFAULT;
}

enum flow_class flow_classify(struct flow_table *t, const uint8_t *pkt, size_t len, uint64_t now)
{
	struct flow_entry *e;
	uint8_t dscp = 0, want;
	uint64_t key = flow_key(pkt, len, &dscp);
	int by_dscp = dscp_class(dscp);

	if (key == 0)
		return FLOW_DEFAULT;
	if (by_dscp >= 0)
		return (enum flow_class)by_dscp;
	e = lookup(t, key, now);
	if (e->packets == 0) {
		e->avg_size = (uint32_t)len;
		e->avg_gap_us =
		    INTERACTIVE_GAP * 4; /* a new flow looks sparse until shown otherwise */
	} else {
		uint64_t gap = (now - e->last_ns) / 1000;

		if (gap > 1000000)
			gap = 1000000;
		/* EWMA with weight 1/8. */
		e->avg_size = (uint32_t)(((uint64_t)e->avg_size * 7 + len) / 8);
		e->avg_gap_us = (uint32_t)(((uint64_t)e->avg_gap_us * 7 + gap) / 8);
	}
	e->last_ns = now;
	if (e->packets < UINT16_MAX)
		e->packets++;
	if (e->packets < FLOW_MIN_PACKETS)
		return (enum flow_class)e->cls;
	want = heuristic(e);
	if (e->packets == FLOW_MIN_PACKETS) {
		e->cls = want;
	} else if (want == e->cls) {
		e->against = 0;
	} else if (++e->against >= FLOW_SWITCH_AFTER) {
		/* Sticky: only a sustained change of behaviour moves a flow. */
		e->cls = want;
		e->against = 0;
	}
	return (enum flow_class)e->cls;
}
