#include "mac/mac.h"

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

void mac_learn(struct mac_table *t, const uint8_t mac[6], void *owner, uint64_t now)
{
	uint64_t key = mac_key(mac);
	size_t i = mac_slot(key);
	struct mac_entry *victim = NULL;

	for (int n = 0; n < MAC_PROBE; n++, i = (i + 1) & (MAC_TABLE_SIZE - 1)) {
		struct mac_entry *e = &t->e[i];

		if (e->key == key) {
			victim = e;
			break;
		}
		if (!live(e, now)) {
			if (victim == NULL || live(victim, now))
				victim = e;
		} else if (victim == NULL || (live(victim, now) && e->seen < victim->seen)) {
			victim = e;
		}
	}
	victim->key = key;
	victim->seen = now;
	victim->owner = owner;
}

void *mac_lookup(const struct mac_table *t, const uint8_t mac[6], uint64_t now)
{
	uint64_t key = mac_key(mac);
	size_t i = mac_slot(key);

	for (int n = 0; n < MAC_PROBE; n++, i = (i + 1) & (MAC_TABLE_SIZE - 1)) {
		const struct mac_entry *e = &t->e[i];

		if (e->key == key)
			return live(e, now) ? e->owner : NULL;
	}
	return NULL;
}

void mac_forget(struct mac_table *t, void *owner)
{
	for (size_t i = 0; i < MAC_TABLE_SIZE; i++)
		if (t->e[i].owner == owner)
			memset(&t->e[i], 0, sizeof(t->e[i]));
}

size_t mac_count(const struct mac_table *t, uint64_t now)
{
	size_t n = 0;

	for (size_t i = 0; i < MAC_TABLE_SIZE; i++)
		n += live(&t->e[i], now) ? 1 : 0;
	return n;
}
