#include "mac/mac.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mac_key(const uint8_t mac[6])
{
	uint64_t k = 0;

	for (int i = 0; i < 6; i++)
		k = k << 8 | mac[i];
	return k + 1;
}

static size_t mac_slot(uint64_t key)
{
	/* Multiplicative hash: MACs of one vendor differ only in their low bytes. */
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 40) & (MAC_TABLE_SIZE - 1);
}

static int live(const struct mac_entry *e, uint64_t now)
{
	return e->key != 0 && now - e->seen < MAC_AGE_NS;
}

static void count(struct mac_table *t, uint32_t owner, int d)
{
	if (owner >= 1 && owner <= t->n_peers)
		t->owned[owner] = (uint16_t)(t->owned[owner] + d);
}

static void clear(struct mac_table *t, struct mac_entry *e)
{
	count(t, e->owner, -1);
	memset(e, 0, sizeof(*e));
}

int mac_table_init(struct mac_table *t, size_t n_peers)
{
	memset(t->e, 0, sizeof(t->e));
	t->n_peers = n_peers;
	t->swept = 0;
	t->owned = calloc(n_peers + 1, sizeof(*t->owned));
	return t->owned != NULL ? 0 : -1;
}

void mac_table_free(struct mac_table *t)
{
	free(t->owned);
	t->owned = NULL;
}

/* Clears aged entries, so that the owners' counts are of live ones. */
static void sweep(struct mac_table *t, uint64_t now)
{
	t->swept = now;
	for (size_t i = 0; i < MAC_TABLE_SIZE; i++)
		if (t->e[i].key != 0 && !live(&t->e[i], now))
			clear(t, &t->e[i]);
}

static int quota_left(const struct mac_table *t, uint32_t owner)
{
	if (owner == MAC_LOCAL)
		return 1;
	return owner >= 1 && owner <= t->n_peers && t->owned[owner] < MAC_PER_PEER;
}

enum mac_result mac_learn(struct mac_table *t, const uint8_t mac[6], uint32_t owner, uint64_t now)
{
	uint64_t key = mac_key(mac);
	size_t i = mac_slot(key);
	struct mac_entry *e, *room = NULL;

	for (int n = 0; n < MAC_PROBE; n++, i = (i + 1) & (MAC_TABLE_SIZE - 1)) {
		e = &t->e[i];
		if (e->key == key) {
			if (e->owner == owner) {
				e->seen = now;
				return MAC_OK;
			}
			/* Someone else's: a live one stays theirs, unless this
			 * side claims it (the local host is where it is). */
			if (live(e, now) && owner != MAC_LOCAL)
				return MAC_TAKEN;
			clear(t, e);
			room = e;
			break;
		}
		if (room == NULL && !live(e, now))
			room = e;
	}
	if (!quota_left(t, owner) && now - t->swept >= MAC_SWEEP_NS)
		sweep(t, now);
	if (room == NULL || !quota_left(t, owner))
		return MAC_FULL;
	if (room->key != 0)
		clear(t, room); /* an aged entry */
	room->key = key;
	room->seen = now;
	room->owner = owner;
	count(t, owner, 1);
	return MAC_OK;
}

uint32_t mac_lookup(const struct mac_table *t, const uint8_t mac[6], uint64_t now)
{
	uint64_t key = mac_key(mac);
	size_t i = mac_slot(key);

	for (int n = 0; n < MAC_PROBE; n++, i = (i + 1) & (MAC_TABLE_SIZE - 1)) {
		const struct mac_entry *e = &t->e[i];

		if (e->key == key)
			return live(e, now) ? e->owner : 0;
	}
	return 0;
}

void mac_forget(struct mac_table *t, uint32_t owner)
{
	for (size_t i = 0; i < MAC_TABLE_SIZE; i++)
		if (t->e[i].key != 0 && t->e[i].owner == owner)
			clear(t, &t->e[i]);
}

void mac_rename(struct mac_table *t, uint32_t from, uint32_t to)
{
	for (size_t i = 0; i < MAC_TABLE_SIZE; i++)
		if (t->e[i].key != 0 && t->e[i].owner == from) {
			count(t, from, -1);
			t->e[i].owner = to;
			count(t, to, 1);
		}
}

size_t mac_count(const struct mac_table *t, uint32_t owner, uint64_t now)
{
	size_t n = 0;

	for (size_t i = 0; i < MAC_TABLE_SIZE; i++)
		n += live(&t->e[i], now) && (owner == 0 || t->e[i].owner == owner) ? 1 : 0;
	return n;
}
