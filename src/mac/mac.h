/*
 * The L2 learning table for TAP mode: which peer a MAC address was last seen
 * behind. Bounded (a fixed array allocated once), entries age out, and a
 * full table replaces its stalest entry. Lookups and learning are O(1) on
 * average (open addressing with a short probe).
 */
#ifndef YIP_MAC_MAC_H
#define YIP_MAC_MAC_H

#include <stddef.h>
#include <stdint.h>

#define MAC_TABLE_SIZE 4096 /* a power of two */
#define MAC_PROBE      8
#define MAC_AGE_NS     (300ULL * 1000000000ULL)

struct mac_entry {
	uint64_t key;  /* the 6-byte MAC + 1 (0 = empty) */
	uint64_t seen; /* monotonic ns */
	void *owner;
};

struct mac_table {
	struct mac_entry e[MAC_TABLE_SIZE];
};

/* Records that mac was seen behind owner at time now. */
void mac_learn(struct mac_table *t, const uint8_t mac[6], void *owner, uint64_t now);

/* The owner of mac, or NULL if unknown or aged out. */
void *mac_lookup(const struct mac_table *t, const uint8_t mac[6], uint64_t now);

/* Forgets every entry of owner (a peer going away). */
void mac_forget(struct mac_table *t, void *owner);

/* Number of live entries at time now (for status and tests). */
size_t mac_count(const struct mac_table *t, uint64_t now);

#endif
