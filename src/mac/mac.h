/*
 * The L2 learning table for TAP mode: which peer a MAC address lives
 * behind, and which addresses live on this side (the frames our own device
 * sends). Bounded (a fixed array allocated once), entries age out, lookups
 * and learning are O(1) on average (open addressing with a short probe).
 *
 * An address belongs to whoever it was seen from first, for as long as it
 * stays live (seen within MAC_AGE_NS): another peer that sends from it is
 * refused (mac_learn says MAC_TAKEN and the frame is dropped), so a peer
 * cannot take over another peer's or a local host's unicast by claiming its
 * address. This side's own addresses win over a peer's claim. Each peer owns
 * at most MAC_PER_PEER live entries, and a full neighbourhood of live
 * entries is never evicted to make room: a peer that makes up addresses
 * churns only its own entries, and what is not learned is flooded, as
 * before it was known.
 */
#ifndef YIP_MAC_MAC_H
#define YIP_MAC_MAC_H

#include <stddef.h>
#include <stdint.h>

#define MAC_TABLE_SIZE 4096 /* a power of two */
#define MAC_PROBE      8
#define MAC_AGE_NS     (300ULL * 1000000000ULL)
#define MAC_PER_PEER   256                     /* live entries one peer may own */
#define MAC_SWEEP_NS   (10ULL * 1000000000ULL) /* aged entries are cleared this often */

/* Owners are numbered: 1..n_peers a peer, MAC_LOCAL this side, 0 none. */
#define MAC_LOCAL UINT32_MAX

struct mac_entry {
	uint64_t key;  /* the 6-byte MAC + 1 (0 = empty) */
	uint64_t seen; /* monotonic ns */
	uint32_t owner;
};

struct mac_table {
	struct mac_entry e[MAC_TABLE_SIZE];
	uint16_t *owned; /* live entries per peer, [1..n_peers] (aged ones until a sweep) */
	size_t n_peers;
	uint64_t swept; /* when aged entries were last cleared */
};

enum mac_result {
	MAC_OK,    /* learned or refreshed */
	MAC_TAKEN, /* the address is live behind someone else: drop the frame */
	MAC_FULL,  /* not learned (the owner's quota, or no room): the frame is fine */
};

/* Allocates the per-peer counts for owners 1..n_peers (others are never
 * learned); 0 or -1. */
int mac_table_init(struct mac_table *t, size_t n_peers);
void mac_table_free(struct mac_table *t);

/* Records that mac was seen from owner (a peer's number, or MAC_LOCAL) at now. */
enum mac_result mac_learn(struct mac_table *t, const uint8_t mac[6], uint32_t owner, uint64_t now);

/* The owner of mac (0 if unknown or aged out). */
uint32_t mac_lookup(const struct mac_table *t, const uint8_t mac[6], uint64_t now);

/* Forgets every entry of owner (a peer going away). */
void mac_forget(struct mac_table *t, uint32_t owner);

/* Every entry of owner from becomes owner to's (a peer renumbered: the peer
 * table moved it into a freed slot); to must own none. */
void mac_rename(struct mac_table *t, uint32_t from, uint32_t to);

/* Number of live entries at time now, in all or (owner != 0) of one owner. */
size_t mac_count(const struct mac_table *t, uint32_t owner, uint64_t now);

#endif
