/*
 * The files of the gossip module, bottom to top. Each file calls only the
 * files listed above it (scripts/layering.py checks the order).
 *
 *   blob.c       item versions: bytes and their hashes, reference counts
 *   store.c      the items held: index, tombstones, rejected versions, the
 *                anti-entropy tree and its settled root, pending announcements
 *   nbr.c        neighbours: the table, reply budgets, sending and counting
 *   fetch.c      getting items: wants, pulls, reassembly; serving pulls
 *   gossip.c     the API, message dispatch, anti-entropy, announcements,
 *                the neighbours wanted, timers
 *
 * Not part of the module's interface (that is gossip.h).
 */
#ifndef YIP_GOSSIP_INTERNAL_H
#define YIP_GOSSIP_INTERNAL_H

#include "gossip/gossip.h"
#include "util/u64map.h"

#define NIL UINT32_MAX

#define MAX_CANDS    4  /* sources remembered per wanted item */
#define SERVE_MAX    32 /* pull records queued per neighbour; also the requester's bound */
#define MAX_MEMOS    1024
#define MAX_BACKOFF  64
#define MAX_STANDING 64  /* credits of neighbours gone down remembered */
#define CREDIT_MAX   256 /* a neighbour's credit: it serves what it announces */
#define CREDIT_GOOD  128 /* ... at or above this, in good standing */

static inline uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ---- blob.c ----------------------------------------------------------------- */

/* A zeroed blob of len bytes to be filled piece by piece; blob_seal checks
 * its bytes against chash and fills in its hashes. */
struct gossip_blob *blob_empty(uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                               size_t len);
bool blob_seal(struct gossip_blob *b, uint64_t chash);

/* ---- store.c -------------------------------------------------------------- */

enum { E_FREE, E_LIVE, E_TOMB };
enum {
	EF_YOUNG = 1,     /* changed less than settle_ns ago: in the settle queue */
	EF_OWN = 2,       /* put by the owner */
	EF_ANNOUNCED = 4, /* ann_ms is set */
};

/* One (kind, id) held: its current version, live or removed. */
struct entry {
	struct gossip_blob *blob;
	uint32_t next;    /* next entry in its L1 bucket, or in the free list */
	uint32_t member;  /* index in store.members, or NIL */
	uint32_t pending; /* index in store.pend, or NIL */
	uint32_t ann_ms;  /* last announced, ms since the engine started (wrapping) */
	uint8_t state;
	uint8_t flags;
};

/* A change not yet in the settled root: what the entry contributed before. */
struct settle {
	uint32_t e;
	bool had; /* whether it contributed */
	uint64_t prev;
	uint64_t due;
};

struct tomb {
	uint32_t e;
	const struct gossip_blob *b; /* the version removed */
	uint64_t until;
};

/* An item waiting to be announced; known: neighbour slots that hold it. */
struct pend {
	uint32_t e;
	uint64_t known;
};

/* A version the owner's accept refused: not fetched again until `until`. */
struct memo {
	uint64_t key;
	uint8_t kind;
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t version, chash, until;
};

/* A FIFO of fixed-size records that grows by doubling. */
struct ring {
	void *v;
	size_t size, cap, head, n;
};

struct store {
	struct entry *e;
	uint32_t cap, free_head;
	size_t n_live, n_tomb;
	uint32_t *idx; /* open addressing: entry index + 1, 0 = empty */
	size_t idx_mask, idx_used;

	/* The tree of current live items: level 1 here, deeper levels on demand. */
	uint64_t l1_hash[WIRE_GOSSIP_FANOUT];
	uint32_t l1_count[WIRE_GOSSIP_FANOUT];
	uint32_t l1_head[WIRE_GOSSIP_FANOUT];
	uint64_t cur_root, set_root;
	uint32_t cur_count, set_count;

	struct ring settle; /* struct settle, by due time */
	struct ring tombs;  /* struct tomb, by until */

	uint32_t *members; /* live entries of member_kind, except self */
	size_t n_members, cap_members;

	struct pend *pend;
	size_t n_pend, cap_pend;

	struct memo *memos; /* ring of MAX_MEMOS */
	size_t memo_head, n_memos, cap_memos;
	struct u64map memo_map;

	uint8_t sip[16]; /* key of the table hashes */
};

struct gossip;

uint64_t key_hash(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN]);

int store_init(struct gossip *g);
void store_free(struct gossip *g);
/* The entry of (kind, id), live or tombstone, or NIL. */
uint32_t store_find(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN]);
static inline struct entry *ent(const struct gossip *g, uint32_t i);
/* Is (version, chash) newer than what entry i holds (or NIL)? */
bool store_newer(const struct gossip *g, uint32_t i, uint64_t version, uint64_t chash);
/* Stores b (a reference is taken) as the current version; -1 if the item
 * limit is reached. Schedules the settle; queues an announcement unless quiet,
 * with known as the neighbours that hold it. */
int store_set(struct gossip *g, uint64_t now, struct gossip_blob *b, bool quiet, bool own,
              uint64_t known);
int store_remove(struct gossip *g, uint64_t now, uint32_t i);
/* Settles due changes and forgets expired tombstones; returns the next deadline. */
uint64_t store_timers(struct gossip *g, uint64_t now);
/* Hashes and counts of the 64 children of node (level, index), level < 3. */
void store_children(const struct gossip *g, uint8_t level, uint32_t index, uint64_t hash[64],
                    uint32_t count[64]);
/* Up to max live entries under node (level, index), level 1..3; returns how many
 * exist (may exceed max). */
size_t store_under(const struct gossip *g, uint8_t level, uint32_t index, uint32_t *out,
                   size_t max);
/* Rejected versions. */
void memo_add(struct gossip *g, uint64_t now, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN],
              uint64_t version, uint64_t chash);
bool memo_has(struct gossip *g, uint64_t now, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN],
              uint64_t version, uint64_t chash);
/* Up to max entries put by the owner and changed less than settle_ns ago. */
size_t store_own_young(const struct gossip *g, uint32_t *out, size_t max);
/* Forgets that neighbour slot holds any pending item (it went away). */
void pend_forget(struct gossip *g, uint32_t slot);
void pend_drop(struct gossip *g, uint32_t e);
void pend_know(struct gossip *g, uint32_t e, uint32_t slot);
size_t store_memory(const struct gossip *g);

/* ---- nbr.c ------------------------------------------------------------------ */

struct bucket {
	uint64_t tokens; /* bytes */
	uint64_t at;     /* when last refilled */
};

struct serve {
	struct gossip_blob *b;
	uint32_t off, end;
};

struct want;

/* A link of a wanted item's source in that neighbour's queue of ready wants. */
struct qlink {
	struct qlink *prev, *next;
	struct want *w;
};

struct wq {
	struct qlink *head, *tail;
};

struct nbr {
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t key;
	uint32_t slot;
	bool wished;  /* we want it */
	bool inbound; /* it wants us, and counts among our neighbours */
	size_t mtu;
	uint64_t up_at;
	uint64_t wished_rx;  /* last SUMMARY flagged WISHED from it */
	uint64_t summary_tx; /* last SUMMARY to it */
	struct bucket tokens;
	struct serve *serve; /* ring of SERVE_MAX, allocated on first use */
	unsigned serve_head, serve_n;
	uint64_t serve_at; /* when the budget allows the next piece */
	struct want *fl;   /* wants being fetched from it */
	unsigned n_fl;
	uint32_t fl_bytes;
	uint64_t fl_next;  /* earliest deadline among them */
	struct wq q[2];    /* ready wants it is a source of: [0] urgent kinds, [1] others */
	size_t charged[2]; /* wants charged to it (it announced them first), by queue */
	size_t asm_bytes;  /* bytes being reassembled from it */
	unsigned credit;   /* 0..CREDIT_MAX: lost when it does not serve, regained when it does */
	uint64_t srtt;
	struct gossip_peer_stats st;
};

/* Buffer for one message to n, at most n->mtu bytes. */
uint8_t *msg_buf(struct gossip *g);
struct nbr *nbr_find(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN]);
struct nbr *nbr_add(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], size_t mtu);
void nbr_free(struct gossip *g, struct nbr *n);
bool nbr_active(const struct gossip *g, const struct nbr *n, uint64_t now);
/* Sends len bytes of g's message buffer to n. charged: a reply, paid from n's
 * and the total budget; false (nothing sent) if they cannot pay. */
bool nbr_send(struct gossip *g, struct nbr *n, uint64_t now, size_t len, bool charged);
/* When both budgets will hold len bytes. */
uint64_t nbr_budget_at(const struct gossip *g, const struct nbr *n, uint64_t now, size_t len);
void count_drop(struct gossip *g, struct nbr *n, enum gossip_drop d);
/* Builds ANNOUNCE messages of entries (indices into the store) and sends them.
 * Returns false if a charged message could not be paid (counted). */
bool nbr_announce(struct gossip *g, struct nbr *n, uint64_t now, const uint32_t *es, size_t k,
                  bool charged);

/* ---- fetch.c ------------------------------------------------------------------ */

struct cand {
	uint32_t nbr; /* slot */
	uint8_t fails;
	bool queued; /* l is in the neighbour's queue (the want is ready) */
	uint32_t len;
	uint64_t version, chash;
	struct qlink l;
};

/* A wanted item. Ready: every source's link is in its neighbour's queue, so
 * it can be fetched from any of them. In flight: at one neighbour, in its
 * in-flight list, and in no queue. */
struct want {
	uint64_t key;
	uint8_t kind;
	uint8_t id[GOSSIP_ID_LEN];
	bool urgent; /* of a kind in conf.urgent */
	struct cand c[MAX_CANDS];
	uint8_t n;
	int8_t cur;       /* candidate being fetched, -1 */
	uint32_t at;      /* slot it is in flight at, or NIL */
	uint32_t charged; /* slot of the source it counts against (the first), or NIL */
	bool sent;        /* the PULL for [req_off, req_end) is out */
	uint64_t deadline, sent_at;
	uint32_t req_off, req_end;
	struct gossip_blob *asm_b; /* being reassembled, or NULL */
	uint64_t asm_chash;        /* ... under this content hash */
	uint32_t asm_nbr;          /* ... counted against this source's slot, or NIL */
	uint8_t *units;            /* of asm_b received, one bit per WIRE_GOSSIP_UNIT */
	struct want *prev, *next;  /* in the neighbour's in-flight list */
};

/* An announced (or digested) version from n: fetch it if newer than ours. */
void fetch_offer(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip_entry *e);
/* Drops candidates at or below what is now held or removed for (kind, id). */
void fetch_settled(struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN]);
void fetch_rx_item(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m);
void fetch_rx_pull(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m);
/* Sends PULLs for ready wants; runs timeouts and the serve queues; returns the next deadline. */
uint64_t fetch_timers(struct gossip *g, uint64_t now);
/* A neighbour came up: its credit, if it went down owing some lately. */
void fetch_nbr_up(struct gossip *g, struct nbr *n);
void fetch_nbr_down(struct gossip *g, struct nbr *n);
void fetch_free(struct gossip *g);
size_t fetch_memory(const struct gossip *g);

/* ---- the engine ------------------------------------------------------------------ */

struct wish {
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t since;
	bool root;
};

struct backoff {
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t until;
};

/* The credit of a neighbour that went down short of CREDIT_MAX. */
struct standing {
	uint8_t id[GOSSIP_ID_LEN];
	unsigned credit;
	bool used;
};

struct gossip {
	struct gossip_conf c;
	uint64_t t0;
	struct store s;

	struct nbr **nbrs; /* by slot; NULL = free */
	size_t n_slots;
	struct u64map nmap; /* key_hash(0, id) -> nbr */
	size_t n_up;

	struct wish *wishes;
	size_t n_wishes;
	struct backoff backoff[MAX_BACKOFF];
	unsigned backoff_next;
	uint8_t (*roots)[GOSSIP_ID_LEN];
	size_t n_roots;

	struct u64map wmap; /* key -> want */
	size_t n_wants, asm_bytes;
	size_t disp_rr; /* the slot dispatch starts at, turning */
	struct standing standing[MAX_STANDING];
	unsigned standing_next;

	struct bucket total;

	uint64_t flush_at; /* UINT64_MAX = nothing pending */
	uint64_t ae_at, wish_at, refresh_at;
	uint32_t ae_rr;

	uint8_t *buf; /* one message, c.mtu bytes */
	struct gossip_stats st;
};

static inline struct entry *ent(const struct gossip *g, uint32_t i)
{
	return &g->s.e[i];
}

static inline uint64_t grand(struct gossip *g)
{
	return g->c.rand(g->c.ctx);
}

/* A uniformly random duration in [d - d/4, d + d/4]. */
static inline uint64_t jitter(struct gossip *g, uint64_t d)
{
	return d - d / 4 + (d / 2 > 0 ? grand(g) % (d / 2 + 1) : 0);
}

#endif
