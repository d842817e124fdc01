/*
 * A map from non-zero 64-bit keys to pointers: open addressing with linear
 * probing in a power-of-two table that grows when half full; deletion
 * shifts later entries back, so there are no tombstones. Keys should be
 * random or hashed (they are used as they are to pick a slot).
 */
#ifndef YIP_UTIL_U64MAP_H
#define YIP_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
	uint64_t key; /* 0 = empty */
	void *val;
};

struct u64map {
	struct u64map_slot *slots;
	size_t mask, count;
};

/* An empty map with room for about `hint` entries before it grows. 0 or -1 (no memory). */
int u64map_init(struct u64map *m, size_t hint);
void u64map_free(struct u64map *m);

/* The value under key, or NULL. */
void *u64map_get(const struct u64map *m, uint64_t key);

/* Adds or replaces. 0, or -1 if key is 0 or the map cannot grow. */
int u64map_put(struct u64map *m, uint64_t key, void *val);

/* Removes key if present; returns its value or NULL. */
void *u64map_del(struct u64map *m, uint64_t key);

/* Makes the table smaller if it is larger than u64map_init would make it
 * for `hint` entries or twice the entries it holds, whichever is more (a
 * table never shrinks by itself). 0, or -1 if there is no memory (the map
 * stays as it was). */
int u64map_shrink(struct u64map *m, size_t hint);

#endif
