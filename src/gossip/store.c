/*
 * The items held. One entry per (kind, id): its current version, live or
 * removed (a tombstone, kept tombstone_ns). Entries live in a slab found
 * through an open-addressed index of 32-bit slots, and are chained per
 * level-1 bucket of the anti-entropy tree, so the hashes of deeper levels
 * are computed on demand from one bucket.
 *
 * Two roots are kept: the current one (every live item) and the settled
 * one, in which a change appears only settle_ns after it happened. Two
 * nodes whose sets differ only by changes still spreading agree on one of
 * the two, and skip the descent (docs/gossip.md, "Anti-entropy").
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/internal.h"

#define SHIFT_L1 (WIRE_GOSSIP_POS_BITS - 6)

/* ---- FIFOs ------------------------------------------------------------------ */

static void *ring_at(const struct ring *r, size_t i)
{
	return (uint8_t *)r->v + ((r->head + i) % r->cap) * r->size;
}

static int ring_push(struct ring *r, const void *rec)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		uint8_t *v = malloc(cap * r->size);

		if (v == NULL)
			return -1;
		for (size_t i = 0; i < r->n; i++)
			memcpy(v + i * r->size, ring_at(r, i), r->size);
		free(r->v);
		r->v = v;
		r->cap = cap;
		r->head = 0;
	}
	memcpy(ring_at(r, r->n), rec, r->size);
	r->n++;
	return 0;
}

static void ring_pop(struct ring *r)
{
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

/* ---- hashing and the index ----------------------------------------------------- */

uint64_t key_hash(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	uint8_t in[1 + GOSSIP_ID_LEN], h[crypto_shorthash_BYTES];
	uint64_t v;

	in[0] = kind;
	memcpy(in + 1, id, GOSSIP_ID_LEN);
	crypto_shorthash(h, in, sizeof(in), g->s.sip);
	memcpy(&v, h, sizeof(v));
	return v | 1; /* never 0: the maps' empty key */
}

static bool same_key(const struct gossip_blob *b, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	return b->kind == kind && memcmp(b->id, id, GOSSIP_ID_LEN) == 0;
}

static size_t idx_home(const struct gossip *g, uint32_t i)
{
	const struct gossip_blob *b = g->s.e[i].blob;

	return (size_t)key_hash(g, b->kind, b->id) & g->s.idx_mask;
}

/* The index slot holding (kind, id), or the empty slot where it would go. */
static size_t idx_slot(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	size_t j = (size_t)key_hash(g, kind, id) & g->s.idx_mask;

	while (g->s.idx[j] != 0 && !same_key(g->s.e[g->s.idx[j] - 1].blob, kind, id))
		j = (j + 1) & g->s.idx_mask;
	return j;
}

uint32_t store_find(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	size_t j = idx_slot(g, kind, id);

	return g->s.idx[j] != 0 ? g->s.idx[j] - 1 : NIL;
}

static int idx_grow(struct gossip *g)
{
	struct store *s = &g->s;
	size_t n = (s->idx_mask + 1) * 2;
	uint32_t *old = s->idx, *idx = calloc(n, sizeof(*idx));
	size_t old_n = s->idx_mask + 1;

	if (idx == NULL)
		return -1;
	s->idx = idx;
	s->idx_mask = n - 1;
	for (size_t k = 0; k < old_n; k++)
		if (old[k] != 0) {
			size_t j = idx_home(g, old[k] - 1);

			while (idx[j] != 0)
				j = (j + 1) & s->idx_mask;
			idx[j] = old[k];
		}
	free(old);
	return 0;
}

/* Removes entry i from the index, shifting later slots of its run back. */
static void idx_del(struct gossip *g, uint32_t i)
{
	struct store *s = &g->s;
	const struct gossip_blob *b = s->e[i].blob;
	size_t hole = idx_slot(g, b->kind, b->id), j = hole;

	for (;;) {
		size_t k;

		j = (j + 1) & s->idx_mask;
		if (s->idx[j] == 0)
			break;
		k = idx_home(g, s->idx[j] - 1);
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		if ((hole < j) ? (k <= hole || k > j) : (k <= hole && k > j)) {
			s->idx[hole] = s->idx[j];
			hole = j;
		}
	}
	s->idx[hole] = 0;
	s->idx_used--;
}

/* ---- entries ---------------------------------------------------------------------- */

int store_init(struct gossip *g)
{
	struct store *s = &g->s;

	randombytes_buf(s->sip, sizeof(s->sip));
	s->idx = calloc(16, sizeof(*s->idx));
	s->idx_mask = 15;
	s->free_head = NIL;
	for (unsigned k = 0; k < WIRE_GOSSIP_FANOUT; k++)
		s->l1_head[k] = NIL;
	s->settle.size = sizeof(struct settle);
	s->tombs.size = sizeof(struct tomb);
	if (s->idx == NULL || u64map_init(&s->memo_map, 4) != 0)
		return -1;
	return 0;
}

void store_free(struct gossip *g)
{
	struct store *s = &g->s;

	for (uint32_t i = 0; i < s->cap; i++)
		if (s->e[i].state != E_FREE)
			gossip_blob_unref(s->e[i].blob);
	while (s->tombs.n > 0) {
		gossip_blob_unref((struct gossip_blob *)((struct tomb *)ring_at(&s->tombs, 0))->b);
		ring_pop(&s->tombs);
	}
	free(s->e);
	free(s->idx);
	free(s->settle.v);
	free(s->tombs.v);
	free(s->members);
	free(s->pend);
	free(s->memos);
	u64map_free(&s->memo_map);
}

static uint32_t entry_alloc(struct gossip *g)
{
	struct store *s = &g->s;
	uint32_t i;

	if (s->free_head == NIL) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		struct entry *e = realloc(s->e, (size_t)cap * sizeof(*e));

		if (e == NULL)
			return NIL;
		for (uint32_t k = s->cap; k < cap; k++) {
			e[k].state = E_FREE;
			e[k].next = k + 1 < cap ? k + 1 : NIL;
		}
		s->e = e;
		s->free_head = s->cap;
		s->cap = cap;
	}
	i = s->free_head;
	s->free_head = s->e[i].next;
	return i;
}

static void member_add(struct gossip *g, uint32_t i)
{
	struct store *s = &g->s;

	if (s->n_members == s->cap_members) {
		size_t cap = s->cap_members ? s->cap_members * 2 : 16;
		uint32_t *m = realloc(s->members, cap * sizeof(*m));

		if (m == NULL)
			return; /* not offered as a neighbour; the item is still held */
		s->members = m;
		s->cap_members = cap;
	}
	s->e[i].member = (uint32_t)s->n_members;
	s->members[s->n_members++] = i;
}

static void member_del(struct gossip *g, uint32_t i)
{
	struct store *s = &g->s;
	uint32_t k = s->e[i].member, last;

	if (k == NIL)
		return;
	last = s->members[--s->n_members];
	s->members[k] = last;
	s->e[last].member = k;
	s->e[i].member = NIL;
}

static void pend_add(struct gossip *g, uint64_t now, uint32_t i, uint64_t known)
{
	struct store *s = &g->s;

	if (s->e[i].pending != NIL) {
		s->pend[s->e[i].pending].known |= known;
		return;
	}
	if (s->n_pend == s->cap_pend) {
		size_t cap = s->cap_pend ? s->cap_pend * 2 : 16;
		struct pend *p = realloc(s->pend, cap * sizeof(*p));

		if (p == NULL)
			return; /* anti-entropy will carry it */
		s->pend = p;
		s->cap_pend = cap;
	}
	s->e[i].pending = (uint32_t)s->n_pend;
	s->pend[s->n_pend++] = (struct pend){i, known};
	if (g->flush_at == UINT64_MAX)
		g->flush_at = now + g->c.batch_ns;
}

void pend_drop(struct gossip *g, uint32_t i)
{
	struct store *s = &g->s;
	uint32_t k = s->e[i].pending;

	if (k == NIL)
		return;
	s->pend[k] = s->pend[--s->n_pend];
	s->e[s->pend[k].e].pending = k;
	s->e[i].pending = NIL;
}

void pend_know(struct gossip *g, uint32_t i, uint32_t slot)
{
	uint32_t k = g->s.e[i].pending;

	if (k != NIL && slot < 64)
		g->s.pend[k].known |= (uint64_t)1 << slot;
}

void pend_forget(struct gossip *g, uint32_t slot)
{
	if (slot >= 64)
		return;
	for (size_t k = 0; k < g->s.n_pend; k++)
		g->s.pend[k].known &= ~((uint64_t)1 << slot);
}

size_t store_own_young(const struct gossip *g, uint32_t *out, size_t max)
{
	const struct store *s = &g->s;
	size_t n = 0;

	for (size_t k = 0; k < s->settle.n && n < max; k++) {
		const struct settle *r = ring_at(&s->settle, k);

		if (r->e != NIL && s->e[r->e].state == E_LIVE && (s->e[r->e].flags & EF_OWN))
			out[n++] = r->e;
	}
	return n;
}

bool store_newer(const struct gossip *g, uint32_t i, uint64_t version, uint64_t chash)
{
	const struct gossip_blob *b;

	if (i == NIL)
		return true;
	b = g->s.e[i].blob;
	return version > b->version || (version == b->version && chash > b->chash);
}

/* The current tree: add or take away an item's hash. */
static void tree_flip(struct gossip *g, const struct gossip_blob *b, int dir)
{
	struct store *s = &g->s;
	unsigned k = b->pos >> SHIFT_L1;

	s->cur_root ^= b->ihash;
	s->l1_hash[k] ^= b->ihash;
	s->cur_count += (uint32_t)dir;
	s->l1_count[k] += (uint32_t)dir;
}

/* Entry i is about to change. Its settled contribution stays what it is
 * now until settle_ns from now, through a record in the settle queue;
 * unless immediate (or no memory for the record): then the old
 * contribution is taken out at once and true is returned, and the caller
 * calls settle_now once the change is made. */
static bool settle_begin(struct gossip *g, uint64_t now, uint32_t i, bool immediate)
{
	struct store *s = &g->s;
	struct entry *e = &s->e[i];
	struct settle r = {i, e->state == E_LIVE, e->state == E_LIVE ? e->blob->ihash : 0,
	                   now + g->c.settle_ns};

	if (e->flags & EF_YOUNG)
		return false; /* the queue already holds what it contributed */
	if (!immediate && ring_push(&s->settle, &r) == 0) {
		e->flags |= EF_YOUNG;
		return false;
	}
	if (r.had) {
		s->set_root ^= r.prev;
		s->set_count--;
	}
	return true;
}

/* Brings entry i's settled contribution up to its current state. */
static void settle_now(struct gossip *g, uint32_t i)
{
	struct store *s = &g->s;
	struct entry *e = &s->e[i];

	if (e->state == E_LIVE) {
		s->set_root ^= e->blob->ihash;
		s->set_count++;
	}
	e->flags &= (uint8_t)~EF_YOUNG;
}

int store_set(struct gossip *g, uint64_t now, struct gossip_blob *b, bool quiet, bool own,
              uint64_t known)
{
	struct store *s = &g->s;
	uint32_t i = store_find(g, b->kind, b->id);
	struct entry *e;
	bool settle;

	if (i == NIL) {
		if (s->n_live >= g->c.max_items)
			return -1;
		if ((s->idx_used + 1) * 2 > s->idx_mask + 1 && idx_grow(g) != 0)
			return -1;
		if ((i = entry_alloc(g)) == NIL)
			return -1;
		/* A new entry holds nothing yet (E_FREE) and contributes nothing. */
		e = &s->e[i];
		*e = (struct entry){.blob = b, .member = NIL, .pending = NIL, .state = E_FREE};
		s->idx[idx_slot(g, b->kind, b->id)] = i + 1;
		s->idx_used++;
		e->next = s->l1_head[b->pos >> SHIFT_L1];
		s->l1_head[b->pos >> SHIFT_L1] = i;
	} else {
		e = &s->e[i];
		if (e->state != E_LIVE && s->n_live >= g->c.max_items)
			return -1;
	}
	gossip_blob_ref(b);
	settle = settle_begin(g, now, i, quiet);
	if (e->state == E_LIVE) {
		tree_flip(g, e->blob, -1);
	} else {
		if (e->state == E_TOMB)
			s->n_tomb--;
		s->n_live++;
	}
	if (e->state != E_FREE)
		gossip_blob_unref(e->blob);
	e->blob = b;
	e->state = E_LIVE;
	tree_flip(g, b, 1);
	if (settle)
		settle_now(g, i);
	if (own)
		e->flags |= EF_OWN;
	else
		e->flags &= (uint8_t)~EF_OWN;
	if (b->kind == g->c.member_kind && e->member == NIL &&
	    memcmp(b->id, g->c.self, GOSSIP_ID_LEN) != 0)
		member_add(g, i);
	if (!quiet)
		pend_add(g, now, i, known);
	return 0;
}

/* ---- tombstones ------------------------------------------------------------------- */

/* Forgets entry i (a tombstone) altogether. */
static void entry_free(struct gossip *g, uint32_t i)
{
	struct store *s = &g->s;
	struct entry *e = &s->e[i];
	uint32_t *p = &s->l1_head[e->blob->pos >> SHIFT_L1];

	if (e->flags & EF_YOUNG) {
		/* Settle it now and void its record in the queue. */
		for (size_t k = 0; k < s->settle.n; k++) {
			struct settle *r = ring_at(&s->settle, k);

			if (r->e == i) {
				r->e = NIL;
				break;
			}
		}
		settle_now(g, i);
	}
	while (*p != i)
		p = &s->e[*p].next;
	*p = e->next;
	idx_del(g, i);
	gossip_blob_unref(e->blob);
	e->blob = NULL;
	e->state = E_FREE;
	e->next = s->free_head;
	s->free_head = i;
	s->n_tomb--;
}

static void tomb_pop(struct gossip *g)
{
	struct store *s = &g->s;
	struct tomb *t = ring_at(&s->tombs, 0);
	struct gossip_blob *b = (struct gossip_blob *)t->b;

	/* The record is stale if the item came back (or went again) since. */
	if (s->e[t->e].state == E_TOMB && s->e[t->e].blob == b)
		entry_free(g, t->e);
	ring_pop(&s->tombs);
	gossip_blob_unref(b);
}

static void tomb_push(struct gossip *g, uint64_t now, uint32_t i)
{
	struct store *s = &g->s;
	struct tomb t = {i, s->e[i].blob, now + g->c.tombstone_ns};

	gossip_blob_ref(s->e[i].blob);
	if (ring_push(&s->tombs, &t) != 0) {
		gossip_blob_unref(s->e[i].blob);
		entry_free(g, i); /* no memory to remember it: forget it */
		return;
	}
	while (s->n_tomb > g->c.max_tombstones && s->tombs.n > 0)
		tomb_pop(g);
}

int store_remove(struct gossip *g, uint64_t now, uint32_t i)
{
	struct store *s = &g->s;
	struct entry *e = &s->e[i];
	bool settle;

	if (e->state != E_LIVE)
		return -1;
	settle = settle_begin(g, now, i, false);
	tree_flip(g, e->blob, -1);
	e->state = E_TOMB;
	if (settle)
		settle_now(g, i);
	s->n_live--;
	s->n_tomb++;
	member_del(g, i);
	pend_drop(g, i);
	e->flags &= (uint8_t)~EF_OWN;
	tomb_push(g, now, i);
	return 0;
}

uint64_t store_timers(struct gossip *g, uint64_t now)
{
	struct store *s = &g->s;
	uint64_t next = UINT64_MAX;

	while (s->settle.n > 0) {
		struct settle *r = ring_at(&s->settle, 0);

		if (r->due > now) {
			next = r->due;
			break;
		}
		if (r->e != NIL) {
			if (r->had) {
				s->set_root ^= r->prev;
				s->set_count--;
			}
			settle_now(g, r->e);
		}
		ring_pop(&s->settle);
	}
	while (s->tombs.n > 0) {
		struct tomb *t = ring_at(&s->tombs, 0);

		if (t->until > now) {
			next = min64(next, t->until);
			break;
		}
		tomb_pop(g);
	}
	return next;
}

/* ---- the tree below level 1 ------------------------------------------------------------ */

static unsigned shift_of(uint8_t level)
{
	return WIRE_GOSSIP_POS_BITS - 6 * (unsigned)level;
}

void store_children(const struct gossip *g, uint8_t level, uint32_t index, uint64_t hash[64],
                    uint32_t count[64])
{
	const struct store *s = &g->s;

	if (level == 0) {
		memcpy(hash, s->l1_hash, sizeof(s->l1_hash));
		memcpy(count, s->l1_count, sizeof(s->l1_count));
		return;
	}
	memset(hash, 0, 64 * sizeof(*hash));
	memset(count, 0, 64 * sizeof(*count));
	for (uint32_t i = s->l1_head[index >> (6 * (level - 1))]; i != NIL; i = s->e[i].next) {
		const struct gossip_blob *b = s->e[i].blob;
		unsigned c;

		if (s->e[i].state != E_LIVE || b->pos >> shift_of(level) != index)
			continue;
		c = (b->pos >> shift_of(level + 1)) & 63;
		hash[c] ^= b->ihash;
		count[c]++;
	}
}

size_t store_under(const struct gossip *g, uint8_t level, uint32_t index, uint32_t *out, size_t max)
{
	const struct store *s = &g->s;
	size_t n = 0;

	for (uint32_t i = s->l1_head[index >> (6 * (level - 1))]; i != NIL; i = s->e[i].next) {
		if (s->e[i].state != E_LIVE || s->e[i].blob->pos >> shift_of(level) != index)
			continue;
		if (n < max)
			out[n] = i;
		n++;
	}
	return n;
}

/* ---- rejected versions ------------------------------------------------------------------ */

void memo_add(struct gossip *g, uint64_t now, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN],
              uint64_t version, uint64_t chash)
{
	struct store *s = &g->s;
	uint64_t key = key_hash(g, kind, id);
	struct memo *m = u64map_get(&s->memo_map, key);

	if (m == NULL) {
		if (s->n_memos < MAX_MEMOS) {
			if (s->n_memos == s->cap_memos) {
				size_t cap = s->cap_memos ? s->cap_memos * 2 : 4;
				struct memo *v;

				if (cap > MAX_MEMOS)
					cap = MAX_MEMOS;
				if ((v = realloc(s->memos, cap * sizeof(*v))) == NULL)
					return;
				/* The map holds pointers into the array: refill it. */
				for (size_t k = 0; k < s->n_memos; k++)
					(void)u64map_put(&s->memo_map, v[k].key, &v[k]);
				s->memos = v;
				s->cap_memos = cap;
			}
			m = &s->memos[s->n_memos++];
		} else {
			m = &s->memos[s->memo_head];
			s->memo_head = (s->memo_head + 1) % MAX_MEMOS;
			(void)u64map_del(&s->memo_map, m->key);
		}
		if (u64map_put(&s->memo_map, key, m) != 0)
			return;
	}
	m->key = key;
	m->kind = kind;
	memcpy(m->id, id, GOSSIP_ID_LEN);
	m->version = version;
	m->chash = chash;
	m->until = now + g->c.reject_ns;
}

bool memo_has(struct gossip *g, uint64_t now, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN],
              uint64_t version, uint64_t chash)
{
	const struct memo *m = u64map_get(&g->s.memo_map, key_hash(g, kind, id));

	return m != NULL && m->until > now && m->kind == kind &&
	       memcmp(m->id, id, GOSSIP_ID_LEN) == 0 && m->version == version && m->chash == chash;
}

size_t store_memory(const struct gossip *g)
{
	const struct store *s = &g->s;
	size_t n = (size_t)s->cap * sizeof(*s->e) + (s->idx_mask + 1) * sizeof(*s->idx) +
	           s->settle.cap * s->settle.size + s->tombs.cap * s->tombs.size +
	           s->cap_members * sizeof(*s->members) + s->cap_pend * sizeof(*s->pend) +
	           s->cap_memos * sizeof(*s->memos) +
	           (s->memo_map.mask + 1) * sizeof(struct u64map_slot);

	for (uint32_t i = 0; i < s->cap; i++)
		if (s->e[i].state != E_FREE)
			n += sizeof(struct gossip_blob) + s->e[i].blob->len;
	return n;
}
