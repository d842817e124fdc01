/*
 * The gossip engine: spreads versioned items among nodes joined by
 * encrypted sessions (docs/gossip.md has the design, docs/protocol.md
 * "Gossip" the messages). It does no I/O and reads no clock: the owner
 * passes the time in, hands it what neighbours send, and it answers
 * through callbacks. It never interprets an item's bytes: the owner's
 * accept callback decides whether an item from a neighbour is valid.
 *
 * An item is (kind, id) at a version, with up to GOSSIP_MAX_ITEM bytes.
 * A higher version supersedes; at equal versions the higher content hash
 * wins, so two nodes holding different bytes under one version still
 * converge. An item the owner removes leaves a tombstone that keeps it
 * from coming back from a neighbour unless the neighbour's version is
 * newer.
 *
 * Neighbours are named by their 32-byte member id (the peer's static
 * public key in yipd). The engine asks for the neighbours it wants (the
 * want callback); the owner connects them and reports sessions up and
 * down; the engine gossips over the neighbours that chose it or that it
 * chose.
 *
 * Every API call that takes `now` may create work: call gossip_timers
 * after it (cheap when nothing is due) and again at the deadline it returns.
 *
 * Callbacks run in the middle of the engine's work and must not call any
 * function of this API on the same engine: record what happened and act
 * after the call returns (docs/gossip.md, "Using the engine").
 */
#ifndef YIP_GOSSIP_GOSSIP_H
#define YIP_GOSSIP_GOSSIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/gossip.h"

#define GOSSIP_ID_LEN   WIRE_GOSSIP_ID_LEN
#define GOSSIP_MAX_ITEM WIRE_GOSSIP_MAX_ITEM
#define GOSSIP_MIN_MTU  WIRE_GOSSIP_MIN_MTU

/*
 * One version of one item. Immutable once made and shared by reference:
 * the engine keeps a reference for as long as it holds or sends it.
 * Single-threaded reference counts: a blob is used by one thread at a time.
 */
struct gossip_blob {
	uint32_t refs;
	uint32_t len;
	uint8_t kind;
	uint8_t id[GOSSIP_ID_LEN];
	uint32_t pos;     /* position in the anti-entropy tree (18 bits) */
	uint64_t version; /* higher supersedes */
	uint64_t chash;   /* BLAKE2b-64 of bytes: the content's name */
	uint64_t ihash;   /* BLAKE2b-64 of (kind, id, version, chash): its tree hash */
	uint8_t bytes[];
};

/* A blob holding a copy of bytes (refs 1), or NULL (len too large, no memory). */
struct gossip_blob *gossip_blob_new(uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                                    const uint8_t *bytes, size_t len);
void gossip_blob_ref(struct gossip_blob *b);
void gossip_blob_unref(struct gossip_blob *b);

/*
 * Why a message or an item was dropped. Every drop increments exactly one
 * counter, globally and for the neighbour it came from.
 */
#define GOSSIP_DROP_REASONS(X)                                                                     \
	X(MALFORMED, "malformed")         /* not one well-formed gossip message */                 \
	X(NOT_NEIGHBOUR, "not_neighbour") /* from a peer whose session is not up */                \
	X(UNSOLICITED, "unsolicited")     /* item bytes we did not ask that neighbour for */       \
	X(CORRUPT, "corrupt")             /* reassembled bytes do not match the announced hash */  \
	X(REJECTED, "rejected")           /* the owner's accept callback refused the item */       \
	X(RATE_LIMITED, "rate_limited")   /* a reply not sent: the neighbour is over its budget */ \
	X(QUEUE_FULL, "queue_full")       /* a request or a want over its queue's bound */         \
	X(FULL, "full")                   /* an item over the item limit */                        \
	X(UNAVAILABLE, "unavailable")     /* a request for a version we do not hold */

enum gossip_drop {
#define X(name, str) GOSSIP_DROP_##name,
	GOSSIP_DROP_REASONS(X)
#undef X
	    GOSSIP_DROP_COUNT
};

const char *gossip_drop_name(enum gossip_drop d);

struct gossip_conf {
	uint8_t self[GOSSIP_ID_LEN]; /* this node's member id: never wished for */
	size_t mtu;                  /* largest message, in bytes (>= GOSSIP_MIN_MTU) */
	uint8_t member_kind;         /* items of this kind are member records; id = member */
	uint8_t urgent[32];          /* kinds fetched first, a bit each (gossip_conf_urgent) */
	unsigned degree;             /* neighbours to want (6) */
	unsigned max_neighbours;     /* neighbours to gossip with at most (32) */
	size_t max_items;            /* live items held at most (1 << 20) */
	size_t max_tombstones;       /* removed items remembered at most (4096) */
	size_t max_wants;            /* items being fetched at most (8192) */
	size_t max_assembly;         /* bytes of partly received items at most (1 MiB) */

	uint64_t batch_ns;        /* announcements wait this long to be batched (100 ms) */
	uint64_t announce_ns;     /* one item is announced at most this often (1 s) */
	uint64_t ae_ns;           /* one anti-entropy round this often (2 s, +-25 %) */
	uint64_t settle_ns;       /* a change joins the settled hash after this (10 s) */
	uint64_t keepalive_ns;    /* a chosen neighbour hears from us this often (20 s) */
	uint64_t active_ns;       /* a neighbour that chose us counts this long (60 s) */
	uint64_t refresh_ns;      /* one wanted neighbour is replaced this often (60 s) */
	uint64_t connect_ns;      /* a wanted neighbour not up by then is given up (10 s) */
	uint64_t backoff_ns;      /* ... and not wanted again for this long (300 s) */
	uint64_t tombstone_ns;    /* a removed item is remembered this long (600 s) */
	uint64_t reject_ns;       /* a rejected version is not fetched again for (60 s) */
	uint64_t pull_timeout_ns; /* a fetch without progress for this long moves on (1 s) */

	uint32_t reply_rate;  /* bytes/s one neighbour's requests may make us send (32 KiB) */
	uint32_t reply_burst; /* ... in one burst (32 KiB) */
	uint32_t total_rate;  /* bytes/s all neighbours' requests together (256 KiB) */
	uint32_t total_burst; /* ... in one burst (128 KiB) */
	uint32_t pull_window; /* bytes requested from one neighbour at once (16 KiB) */

	void *ctx;
	/* Is this item, from a neighbour, valid? The engine stores and
	 * forwards it only if so. */
	bool (*accept)(void *ctx, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
	               const uint8_t *bytes, size_t len);
	/* Sends one message of len <= mtu bytes to neighbour nbr. */
	void (*send)(void *ctx, const uint8_t nbr[GOSSIP_ID_LEN], const uint8_t *msg, size_t len);
	/* Optional: the engine would (or no longer would) like a session with id. */
	void (*want)(void *ctx, const uint8_t id[GOSSIP_ID_LEN], bool want);
	/* Optional: an item from a neighbour was accepted and stored. */
	void (*stored)(void *ctx, const struct gossip_blob *b);
	/* Optional: 64 random bits (default: libsodium's randombytes). */
	uint64_t (*rand)(void *ctx);
	/* Optional: given a new blob about to be stored, returns it or an
	 * identical one (same kind, id, version, bytes) with a reference taken
	 * for the caller, so that many engines in one process share one copy
	 * (the simulation's). The engine drops its reference to b if another
	 * is returned. */
	struct gossip_blob *(*share)(void *ctx, struct gossip_blob *b);
};

/* Fills c with the defaults above; callbacks, self and urgent are left zero. */
void gossip_conf_default(struct gossip_conf *c);

/* Makes kind urgent (yipd: root sets and revocation lists): its wants are
 * fetched before the others', and a share of the want table is kept for
 * them, so a flood of other items cannot hold them up. */
void gossip_conf_urgent(struct gossip_conf *c, uint8_t kind);

struct gossip;

/* A new engine, or NULL (a bad configuration, no memory). */
struct gossip *gossip_new(const struct gossip_conf *c, uint64_t now);
void gossip_free(struct gossip *g);

#define GOSSIP_QUIET 0x01 /* gossip_put: store without announcing (loaded from a cache) */

/*
 * Stores an item of the owner's (its own record, a root set or revocation
 * list it was given, or one loaded from its cache) without asking accept,
 * and announces it unless flags has GOSSIP_QUIET. The engine takes a
 * reference to b. 0, or -1 if a version at least as new is held or
 * remembered as removed, or the item limit is reached.
 */
int gossip_put(struct gossip *g, uint64_t now, struct gossip_blob *b, unsigned flags);

/* Removes an item (expired, revoked), leaving a tombstone. 0, or -1 if not held. */
int gossip_remove(struct gossip *g, uint64_t now, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN]);

/* The item held under (kind, id), or NULL. Valid until the next call that takes now. */
const struct gossip_blob *gossip_get(const struct gossip *g, uint8_t kind,
                                     const uint8_t id[GOSSIP_ID_LEN]);

/* Calls fn for every live item (for the owner's cache), in no particular order. */
void gossip_each(const struct gossip *g, void (*fn)(void *arg, const struct gossip_blob *b),
                 void *arg);

/* The root nodes: wanted as neighbours while fewer than half of degree
 * wanted members are up (a node starting, or cut off), until degree are. */
void gossip_set_roots(struct gossip *g, uint64_t now, const uint8_t (*ids)[GOSSIP_ID_LEN],
                      size_t n);

/* A session with id came up (mtu: its message budget, 0 for the configured
 * one) or went down. */
void gossip_peer_up(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], size_t mtu);
void gossip_peer_down(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN]);

/* One gossip message from neighbour id. */
void gossip_rx(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], const uint8_t *msg,
               size_t len);

/* Runs what is due; returns the time of the next deadline. */
uint64_t gossip_timers(struct gossip *g, uint64_t now);

/* Is id one of the neighbours the engine wants? */
bool gossip_wants(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN]);

struct gossip_stats {
	uint64_t drops[GOSSIP_DROP_COUNT];
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes;
	uint64_t tx_by_type[8]; /* messages sent, by enum wire_gossip_type */
	uint64_t accepted;      /* items from neighbours stored */
	uint64_t verified;      /* calls of accept */
	uint64_t ae_rounds;     /* SUMMARYs sent */
	uint64_t ae_descents;   /* SUMMARYs that differed and were answered with a TREE */
	uint64_t pulls;         /* pull records sent */
	size_t items, tombstones, wants, neighbours, active, wished;
	size_t memory; /* bytes held, counting every blob in full */
};

void gossip_get_stats(const struct gossip *g, struct gossip_stats *s);

struct gossip_peer_stats {
	bool up, wished, active;
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes, drops, rejected;
	uint64_t srtt_ns; /* request to first answer, smoothed; 0 before any */
	unsigned credit;  /* 0..256: lost when it does not serve what it announced (256 = full) */
};

/* False if id is not a neighbour the engine knows. */
bool gossip_get_peer_stats(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN],
                           struct gossip_peer_stats *s);

#endif
