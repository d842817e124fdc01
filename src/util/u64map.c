#include "util/u64map.h"

#include <stdlib.h>

static size_t slot_find(const struct u64map *m, uint64_t key)
{
	size_t i = (size_t)(key ^ key >> 32) & m->mask;

	while (m->slots[i].key != 0 && m->slots[i].key != key)
		i = (i + 1) & m->mask;
	return i;
}

int u64map_init(struct u64map *m, size_t hint)
{
	size_t n = 16;

	while (n < hint * 2)
		n *= 2;
	m->slots = calloc(n, sizeof(*m->slots));
	m->mask = n - 1;
	m->count = 0;
	return m->slots != NULL ? 0 : -1;
}

void u64map_free(struct u64map *m)
{
	free(m->slots);
	m->slots = NULL;
	m->mask = m->count = 0;
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (key == 0 || m->slots == NULL)
		return NULL;
	i = slot_find(m, key);
	return m->slots[i].key == key ? m->slots[i].val : NULL;
}

/* Moves every entry into a table made for `hint` entries. */
static int rehash(struct u64map *m, size_t hint)
{
	struct u64map t;

	if (u64map_init(&t, hint) != 0)
		return -1;
	for (size_t i = 0; i <= m->mask; i++)
		if (m->slots[i].key != 0) {
			size_t j = slot_find(&t, m->slots[i].key);

			t.slots[j] = m->slots[i];
			t.count++;
		}
	free(m->slots);
	*m = t;
	return 0;
}

static int grow(struct u64map *m)
{
	return rehash(m, m->mask + 1);
}

int u64map_shrink(struct u64map *m, size_t hint)
{
	size_t want = m->count * 2 > hint ? m->count * 2 : hint, n = 16;

	if (m->slots == NULL)
		return -1;
	while (n < want * 2)
		n *= 2;
	return n < m->mask + 1 ? rehash(m, want) : 0;
}

int u64map_put(struct u64map *m, uint64_t key, void *val)
{
	size_t i;

	if (key == 0 || m->slots == NULL)
		return -1;
	i = slot_find(m, key);
	if (m->slots[i].key == key) {
		m->slots[i].val = val;
		return 0;
	}
	if ((m->count + 1) * 2 > m->mask + 1) {
		if (grow(m) != 0)
			return -1;
		i = slot_find(m, key);
	}
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->count++;
	return 0;
}

void *u64map_del(struct u64map *m, uint64_t key)
{
	size_t i, j;
	void *val;

	if (key == 0 || m->slots == NULL)
		return NULL;
	i = slot_find(m, key);
	if (m->slots[i].key != key)
		return NULL;
	val = m->slots[i].val;
	/* Backward-shift deletion: pull later members of the probe run into the hole. */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & m->mask;
		if (m->slots[j].key == 0)
			break;
		home = (size_t)(m->slots[j].key ^ m->slots[j].key >> 32) & m->mask;
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = 0;
	m->slots[i].val = NULL;
	m->count--;
	return val;
}
