/*
 * Getting items, and giving them.
 *
 * A want is an item some neighbour announced at a version newer than
 * ours. It remembers up to MAX_CANDS sources (one version each: a liar
 * holds one slot at most) and fetches one version from one of them, a
 * range of at most pull_window bytes at a time. While it waits it is in
 * the queue of every one of its sources, so any of them can serve it;
 * dispatch goes round the neighbours, one want from each in turn, urgent
 * kinds (conf.urgent) first, so one neighbour's wants never stand in
 * front of another's.
 *
 * What one neighbour can hold is bounded by its credit, which it loses
 * when it does not serve what it announced (a pull timed out, a "don't
 * have", bytes that are not what it announced, an item accept refused)
 * and regains when it serves: in good standing (credit >= CREDIT_GOOD) it
 * may have SERVE_MAX pulls outstanding, max_wants / WANT_SHARE wants
 * charged to it (a want counts against the source that announced it
 * first) and URGENT_SHARE urgent ones, and a quarter of max_assembly in
 * items being reassembled; below, these shrink down to 1 pull, WANT_MIN
 * wants, 1 urgent want and one item, and the wants over its quota are
 * dropped. The version fetched is the newest among the sources with room
 * ranked highest (in good standing, then not failed since they last
 * served this want, then holding the version being gathered): a newer
 * version claimed by one that does not serve, or is busy, waits. A
 * fetch that makes no progress for a timeout (from the neighbour's
 * measured round trip and what is queued before it) goes back to the end
 * of the queues; a source that fails twice in a row is forgotten. The
 * last 1/URGENT_RESERVE of the want table is for urgent kinds. Pieces of a
 * large item are gathered in a blob with a bitmap of 64-byte units; the
 * whole is checked against the announced content hash, then offered to
 * the owner's accept, only once complete.
 *
 * Serving: each PULL record for a version we hold joins the neighbour's
 * queue of SERVE_MAX, which sends pieces as the neighbour's and the total
 * reply budgets allow.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/internal.h"

#define NS_PER_S  1000000000ULL
#define NS_PER_MS 1000000ULL

#define CREDIT_MISS    32 /* pulls not served (timed out at once), a "don't have", an item refused */
#define CREDIT_LIE     CREDIT_MAX /* bytes that are not what it announced: all */
#define CREDIT_SERVED  8          /* a range or an item served */
#define WANT_SHARE     8   /* in good standing, max_wants / WANT_SHARE wants charged to one */
#define WANT_MIN       8   /* ... and at credit 0 */
#define URGENT_SHARE   16  /* urgent wants charged to one in good standing (1 at credit 0) */
#define URGENT_RESERVE 16  /* 1/16 of max_wants is for urgent kinds only */
#define ASM_SHARE      4   /* max_assembly / ASM_SHARE from one in good standing */
#define TAKE_TRIES     8   /* queued wants looked at per neighbour per turn */
#define TRIM_MAX       256 /* wants dropped at once from a neighbour over its quota */

/* ---- credit and what it allows ------------------------------------------------ */

/* full in good standing; below, from lo (credit 0) up to full. */
static size_t by_credit(const struct nbr *n, size_t lo, size_t full)
{
	if (n->credit >= CREDIT_GOOD || full <= lo)
		return full;
	return lo + (full - lo) * n->credit / CREDIT_GOOD;
}

static size_t quota(const struct gossip *g, const struct nbr *n, unsigned u)
{
	size_t share = g->c.max_wants / WANT_SHARE;

	if (u == 0)
		return by_credit(n, 1, URGENT_SHARE);
	return by_credit(n, WANT_MIN, share > WANT_MIN ? share : WANT_MIN);
}

static bool has_room(const struct gossip *g, const struct nbr *n)
{
	return n->n_fl < by_credit(n, 1, SERVE_MAX) &&
	       (n->n_fl == 0 || n->fl_bytes < g->c.pull_window);
}

static bool good(const struct gossip *g, const struct cand *c)
{
	return g->nbrs[c->nbr]->credit >= CREDIT_GOOD;
}

static void credit_lose(struct nbr *n, unsigned d)
{
	n->credit = n->credit > d ? n->credit - d : 0;
}

static void credit_gain(struct nbr *n)
{
	n->credit = n->credit + CREDIT_SERVED < CREDIT_MAX ? n->credit + CREDIT_SERVED : CREDIT_MAX;
}

/* ---- queues -------------------------------------------------------------------- */

static unsigned qi(const struct want *w)
{
	return w->urgent ? 0 : 1;
}

static struct wq *queue_of(const struct gossip *g, const struct want *w, uint32_t slot)
{
	return &g->nbrs[slot]->q[qi(w)];
}

static void q_link(struct wq *q, struct qlink *l, bool front)
{
	if (q->head == NULL) {
		l->prev = l->next = NULL;
		q->head = q->tail = l;
	} else if (front) {
		l->prev = NULL;
		l->next = q->head;
		q->head->prev = l;
		q->head = l;
	} else {
		l->next = NULL;
		l->prev = q->tail;
		q->tail->next = l;
		q->tail = l;
	}
}

static void q_unlink(struct wq *q, struct qlink *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		q->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		q->tail = l->prev;
	l->prev = l->next = NULL;
}

/* The index of the source whose link l is. */
static unsigned cand_of(const struct qlink *l)
{
	return (unsigned)((const struct cand *)(const void *)((const char *)l -
	                                                      offsetof(struct cand, l)) -
	                  l->w->c);
}

static void cand_queue(struct gossip *g, struct want *w, struct cand *c, bool front)
{
	if (c->queued)
		return;
	c->l.w = w;
	q_link(queue_of(g, w, c->nbr), &c->l, front);
	c->queued = true;
}

static void cand_unqueue(struct gossip *g, struct want *w, struct cand *c)
{
	if (!c->queued)
		return;
	q_unlink(queue_of(g, w, c->nbr), &c->l);
	c->queued = false;
}

/* c was moved in memory: its neighbours in its queue point to it again. */
static void cand_moved(struct gossip *g, struct want *w, struct cand *c)
{
	struct wq *q;

	if (!c->queued)
		return;
	q = queue_of(g, w, c->nbr);
	if (c->l.prev)
		c->l.prev->next = &c->l;
	else
		q->head = &c->l;
	if (c->l.next)
		c->l.next->prev = &c->l;
	else
		q->tail = &c->l;
}

static uint32_t range_of(const struct want *w)
{
	return w->req_end - w->req_off;
}

/* Takes w out of its neighbour's in-flight list, or out of every queue. */
static void detach(struct gossip *g, struct want *w)
{
	if (w->at != NIL) {
		struct nbr *n = g->nbrs[w->at];

		if (w->prev)
			w->prev->next = w->next;
		else
			n->fl = w->next;
		if (w->next)
			w->next->prev = w->prev;
		n->n_fl--;
		n->fl_bytes -= range_of(w);
	} else {
		for (unsigned k = 0; k < w->n; k++)
			cand_unqueue(g, w, &w->c[k]);
	}
	w->prev = w->next = NULL;
	w->at = NIL;
}

/* Ready again, in the queue of every source: at the front after progress,
 * at the back after a failure. */
static void requeue(struct gossip *g, struct want *w, bool front)
{
	detach(g, w);
	w->cur = -1;
	w->sent = false;
	for (unsigned k = 0; k < w->n; k++)
		cand_queue(g, w, &w->c[k], front);
}

/* ---- wants -------------------------------------------------------------------- */

static struct want *want_find(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	struct want *w = u64map_get(&g->wmap, key_hash(g, kind, id));

	return w != NULL && w->kind == kind && memcmp(w->id, id, GOSSIP_ID_LEN) == 0 ? w : NULL;
}

static void charge(struct gossip *g, struct want *w, uint32_t slot)
{
	w->charged = slot;
	g->nbrs[slot]->charged[qi(w)]++;
}

static void uncharge(struct gossip *g, struct want *w)
{
	if (w->charged != NIL)
		g->nbrs[w->charged]->charged[qi(w)]--;
	w->charged = NIL;
}

static void asm_charge(struct gossip *g, struct want *w, uint32_t slot)
{
	if (w->asm_nbr == slot)
		return;
	if (w->asm_nbr != NIL)
		g->nbrs[w->asm_nbr]->asm_bytes -= w->asm_b->len;
	w->asm_nbr = slot;
	if (slot != NIL)
		g->nbrs[slot]->asm_bytes += w->asm_b->len;
}

static void asm_drop(struct gossip *g, struct want *w)
{
	if (w->asm_b == NULL)
		return;
	asm_charge(g, w, NIL);
	g->asm_bytes -= w->asm_b->len;
	gossip_blob_unref(w->asm_b);
	free(w->units);
	w->asm_b = NULL;
	w->units = NULL;
}

static void want_free(struct gossip *g, struct want *w)
{
	detach(g, w);
	uncharge(g, w);
	asm_drop(g, w);
	(void)u64map_del(&g->wmap, w->key);
	g->n_wants--;
	free(w);
}

static bool urgent_kind(const struct gossip *g, uint8_t kind)
{
	return (g->c.urgent[kind / 8] >> (kind % 8)) & 1;
}

/* A new want announced by n (first source c), charged to n; NULL if n or
 * the table is over its bound. */
static struct want *want_new(struct gossip *g, struct nbr *n, uint8_t kind,
                             const uint8_t id[GOSSIP_ID_LEN], const struct cand *c)
{
	bool urgent = urgent_kind(g, kind);
	size_t cap = urgent ? g->c.max_wants : g->c.max_wants - g->c.max_wants / URGENT_RESERVE;
	struct want *w;

	if (g->n_wants >= cap || n->charged[urgent ? 0 : 1] >= quota(g, n, urgent ? 0 : 1) ||
	    (w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->key = key_hash(g, kind, id);
	if (u64map_get(&g->wmap, w->key) != NULL || u64map_put(&g->wmap, w->key, w) != 0) {
		free(w);
		return NULL;
	}
	w->kind = kind;
	memcpy(w->id, id, GOSSIP_ID_LEN);
	w->urgent = urgent;
	w->cur = -1;
	w->at = NIL;
	w->asm_nbr = NIL;
	w->c[0] = *c;
	w->n = 1;
	g->n_wants++;
	charge(g, w, n->slot);
	cand_queue(g, w, &w->c[0], false);
	return w;
}

static bool cand_newer(const struct cand *a, const struct cand *b)
{
	return a->version > b->version || (a->version == b->version && a->chash > b->chash);
}

static bool cand_same(const struct cand *a, uint64_t version, uint64_t chash)
{
	return a->version == version && a->chash == chash;
}

/* What a source offers, leaving its place in its queue as it is. */
static void cand_set(struct cand *dst, const struct cand *src)
{
	dst->nbr = src->nbr;
	dst->fails = src->fails;
	dst->len = src->len;
	dst->version = src->version;
	dst->chash = src->chash;
}

/* Forgets candidate k. If it was being fetched, w goes back to the queues;
 * if none is left, w is freed (false). */
static bool cand_remove(struct gossip *g, struct want *w, unsigned k)
{
	bool was_cur = (int)k == w->cur;
	uint32_t slot = w->c[k].nbr;

	cand_unqueue(g, w, &w->c[k]);
	if (w->asm_nbr == slot)
		asm_charge(g, w, NIL);
	memmove(&w->c[k], &w->c[k + 1], (w->n - k - 1) * sizeof(w->c[0]));
	w->n--;
	for (unsigned j = k; j < w->n; j++)
		cand_moved(g, w, &w->c[j]);
	if (w->cur > (int)k)
		w->cur--;
	if (w->n == 0) {
		want_free(g, w);
		return false;
	}
	if (w->charged == slot) {
		uncharge(g, w);
		charge(g, w, w->c[0].nbr); /* the oldest source left */
	}
	if (was_cur)
		requeue(g, w, false);
	return true;
}

void fetch_offer(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip_entry *e)
{
	uint32_t i = store_find(g, e->kind, e->id);
	struct cand c = {.nbr = n->slot, .len = e->len, .version = e->version, .chash = e->chash};
	struct want *w;
	unsigned k, worst = 0;

	if (!store_newer(g, i, e->version, e->chash) ||
	    memo_has(g, now, e->kind, e->id, e->version, e->chash))
		return;
	if ((w = want_find(g, e->kind, e->id)) == NULL) {
		if (want_new(g, n, e->kind, e->id, &c) == NULL)
			count_drop(g, n, GOSSIP_DROP_QUEUE_FULL);
		return;
	}
	for (k = 0; k < w->n && w->c[k].nbr != n->slot; k++)
		;
	if (k < w->n) {
		if (cand_same(&w->c[k], e->version, e->chash))
			return;
		if ((int)k == w->cur) {
			/* Its version changed under the fetch: it does not have
			 * what it announced (or no longer). */
			credit_lose(n, CREDIT_MISS);
			requeue(g, w, false);
		}
		c.fails = w->c[k].fails; /* a new claim does not wipe its failures */
		cand_set(&w->c[k], &c);
		return;
	}
	if (w->n < MAX_CANDS) {
		w->c[w->n++] = c;
		if (w->at == NIL)
			cand_queue(g, w, &w->c[w->n - 1], false);
		return;
	}
	for (k = 1; k < w->n; k++)
		if (cand_newer(&w->c[worst], &w->c[k]))
			worst = k;
	if (cand_newer(&c, &w->c[worst]) && (int)worst != w->cur) {
		uint32_t old = w->c[worst].nbr;

		cand_unqueue(g, w, &w->c[worst]);
		if (w->asm_nbr == old)
			asm_charge(g, w, NIL);
		cand_set(&w->c[worst], &c);
		if (w->charged == old) {
			uncharge(g, w);
			charge(g, w, w->c[0].nbr);
		}
		if (w->at == NIL)
			cand_queue(g, w, &w->c[worst], false);
	}
}

void fetch_settled(struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	struct want *w = want_find(g, kind, id);
	uint32_t i = store_find(g, kind, id);

	if (w == NULL)
		return;
	for (unsigned k = 0; k < w->n;) {
		if (store_newer(g, i, w->c[k].version, w->c[k].chash)) {
			k++;
			continue;
		}
		if (!cand_remove(g, w, k))
			return;
	}
	if (w->asm_b != NULL && !store_newer(g, i, w->asm_b->version, w->asm_chash))
		asm_drop(g, w);
}

/* ---- receiving items ---------------------------------------------------------------- */

static uint64_t timeout(const struct gossip *g, const struct nbr *n)
{
	uint64_t base = n->srtt ? min64(2 * n->srtt + 100 * NS_PER_MS, g->c.pull_timeout_ns)
	                        : g->c.pull_timeout_ns;

	/* Plus the time the neighbour's budget needs for what we asked of it. */
	return base + (uint64_t)n->fl_bytes * NS_PER_S / g->c.reply_rate;
}

static void complete(struct gossip *g, struct nbr *n, uint64_t now, struct want *w)
{
	struct gossip_blob *b = w->asm_b;
	struct cand c = w->c[w->cur];
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t known = 0;
	bool ok;

	/* The blob leaves the want: it is the item now, or nothing. */
	asm_charge(g, w, NIL);
	g->asm_bytes -= b->len;
	free(w->units);
	w->asm_b = NULL;
	w->units = NULL;
	if (!blob_seal(b, c.chash)) {
		gossip_blob_unref(b);
		count_drop(g, n, GOSSIP_DROP_CORRUPT);
		credit_lose(n, CREDIT_LIE);
		(void)cand_remove(g, w, (unsigned)w->cur); /* that source lied */
		return;
	}
	g->st.verified++;
	ok = g->c.accept(g->c.ctx, b->kind, b->id, b->version, b->bytes, b->len);
	if (!ok) {
		count_drop(g, n, GOSSIP_DROP_REJECTED);
		credit_lose(n, CREDIT_MISS);
		memo_add(g, now, b->kind, b->id, b->version, b->chash);
		gossip_blob_unref(b);
		for (unsigned k = 0; k < w->n;)
			if (cand_same(&w->c[k], c.version, c.chash)) {
				if (!cand_remove(g, w, k))
					return;
			} else {
				k++;
			}
		if (w->at != NIL)
			requeue(g, w, false);
		return;
	}
	credit_gain(n);
	if (g->c.share != NULL) {
		struct gossip_blob *s = g->c.share(g->c.ctx, b);

		if (s != b) {
			gossip_blob_unref(b);
			b = s;
		}
	}
	for (unsigned k = 0; k < w->n; k++)
		if (cand_same(&w->c[k], c.version, c.chash) && w->c[k].nbr < 64)
			known |= (uint64_t)1 << w->c[k].nbr;
	if (store_set(g, now, b, false, false, known) != 0) {
		count_drop(g, n, GOSSIP_DROP_FULL);
	} else {
		g->st.accepted++;
		if (g->c.stored != NULL)
			g->c.stored(g->c.ctx, b);
	}
	gossip_blob_unref(b);
	/* Still wanted only if some source has a newer version yet. */
	requeue(g, w, true);
	memcpy(id, w->id, GOSSIP_ID_LEN);
	fetch_settled(g, w->kind, id);
}

/* Marks units [from, to) received; returns the bytes newly covered, 0 if none. */
static uint32_t units_mark(struct want *w, uint32_t off, uint32_t len)
{
	uint32_t got = 0, total = w->asm_b->len;

	for (uint32_t u = off / WIRE_GOSSIP_UNIT; u * WIRE_GOSSIP_UNIT < off + len; u++) {
		uint32_t ulen = total - u * WIRE_GOSSIP_UNIT;

		if (w->units[u / 8] & (1u << (u % 8)))
			continue;
		w->units[u / 8] |= (uint8_t)(1u << (u % 8));
		got += ulen < WIRE_GOSSIP_UNIT ? ulen : WIRE_GOSSIP_UNIT;
	}
	return got;
}

static bool units_all(const struct want *w, uint32_t off, uint32_t end)
{
	for (uint32_t u = off / WIRE_GOSSIP_UNIT; u * WIRE_GOSSIP_UNIT < end; u++)
		if (!(w->units[u / 8] & (1u << (u % 8))))
			return false;
	return true;
}

void fetch_rx_item(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m)
{
	struct want *w = want_find(g, m->kind, m->id);
	const struct cand *c;

	if (w == NULL || w->at != n->slot || w->cur < 0 || !w->sent) {
		count_drop(g, n, GOSSIP_DROP_UNSOLICITED);
		return;
	}
	c = &w->c[w->cur];
	if (!cand_same(c, m->version, m->chash) || c->len != m->total) {
		count_drop(g, n, GOSSIP_DROP_UNSOLICITED);
		return;
	}
	if (w->asm_b == NULL) {
		size_t ubytes = (m->total / WIRE_GOSSIP_UNIT + 8) / 8;

		if ((w->asm_b = blob_empty(m->kind, m->id, m->version, m->total)) == NULL ||
		    (w->units = calloc(1, ubytes)) == NULL) {
			gossip_blob_unref(w->asm_b);
			w->asm_b = NULL;
			return; /* no memory: the timeout asks again */
		}
		w->asm_chash = m->chash;
		g->asm_bytes += m->total;
		asm_charge(g, w, n->slot);
	}
	if (m->total > 0 && units_mark(w, m->offset, m->len) == 0) {
		count_drop(g, n, GOSSIP_DROP_UNSOLICITED); /* a piece we already have */
		return;
	}
	memcpy(w->asm_b->bytes + m->offset, m->data, m->len);
	if (w->sent_at != 0) {
		uint64_t rtt = now - w->sent_at;

		n->srtt = n->srtt ? (7 * n->srtt + rtt) / 8 : rtt;
		n->st.srtt_ns = n->srtt;
		w->sent_at = 0; /* one sample per request */
	}
	w->deadline = now + timeout(g, n);
	n->fl_next = min64(n->fl_next, w->deadline);
	if (m->total == 0 || units_all(w, 0, m->total)) {
		complete(g, n, now, w);
		return;
	}
	if (units_all(w, w->req_off, w->req_end)) {
		/* This range is in: the source serves. The next range from
		 * the dispatcher, ahead of wants not started. */
		credit_gain(n);
		w->c[w->cur].fails = 0;
		requeue(g, w, true);
	}
}

/* ---- asking --------------------------------------------------------------------------- */

/* The first byte not yet received of w's item (0 if nothing is gathered). */
static uint32_t first_missing(const struct want *w)
{
	uint32_t u = 0;

	if (w->asm_b == NULL)
		return 0;
	while (u * WIRE_GOSSIP_UNIT < w->asm_b->len && (w->units[u / 8] & (1u << (u % 8))))
		u++;
	return u * WIRE_GOSSIP_UNIT;
}

/* How far a source of w is trusted now: in good standing, then not failed
 * since it last served w, then holding the version already being gathered. */
static unsigned rank(const struct gossip *g, const struct want *w, const struct cand *c)
{
	return (good(g, c) ? 4u : 0u) + (c->fails == 0 ? 2u : 0u) +
	       (w->asm_b != NULL && cand_same(c, w->asm_b->version, w->asm_chash) ? 1u : 0u);
}

/* Is source k (with room) the one to fetch w from now? Among k and the
 * sources that have room too, the version is the newest of those ranked
 * highest, from any source of that rank. So a version claimed by a source
 * that does not serve, or cannot now, does not hold up one that can. */
static bool pick_ok(const struct gossip *g, const struct want *w, unsigned k)
{
	int t = -1;
	unsigned tr = 0;

	for (unsigned j = 0; j < w->n; j++) {
		unsigned r = rank(g, w, &w->c[j]);

		if (j != k && !has_room(g, g->nbrs[w->c[j].nbr]))
			continue;
		if (t < 0 || r > tr || (r == tr && cand_newer(&w->c[j], &w->c[t]))) {
			t = (int)j;
			tr = r;
		}
	}
	return cand_same(&w->c[k], w->c[t].version, w->c[t].chash) && rank(g, w, &w->c[k]) == tr;
}

/* Fetches w from n, its source k: out of the queues, into n's in-flight
 * list. False if there is no room to gather it yet. */
static bool assign(struct gossip *g, struct want *w, unsigned k, struct nbr *n)
{
	const struct cand *c = &w->c[k];
	uint32_t off, end;

	if (w->asm_b != NULL && !cand_same(c, w->asm_b->version, w->asm_chash))
		asm_drop(g, w); /* gathered for another version */
	if (c->len > n->mtu - WIRE_GOSSIP_ITEM_HDR) {
		/* In pieces: room in all, and in n's share unless it is n's
		 * first (a neighbour may always gather one item). */
		if (w->asm_b == NULL && g->asm_bytes + c->len > g->c.max_assembly)
			return false;
		if (w->asm_nbr != n->slot && n->asm_bytes > 0 &&
		    n->asm_bytes + c->len > by_credit(n, 0, g->c.max_assembly / ASM_SHARE))
			return false;
	}
	off = first_missing(w);
	end = c->len - off > g->c.pull_window ? off + g->c.pull_window : c->len;
	detach(g, w);
	if (w->asm_b != NULL)
		asm_charge(g, w, n->slot);
	w->cur = (int8_t)k;
	w->req_off = off;
	w->req_end = end;
	w->sent = false;
	w->at = n->slot;
	w->prev = NULL;
	w->next = n->fl;
	if (n->fl)
		n->fl->prev = w;
	n->fl = w;
	n->n_fl++;
	n->fl_bytes += range_of(w);
	return true;
}

/* Sends one or more PULLs for n's wants not yet asked for. */
static void send_pulls(struct gossip *g, struct nbr *n, uint64_t now)
{
	size_t per = (n->mtu - WIRE_GOSSIP_LIST_HDR) / WIRE_GOSSIP_PULL_LEN, k = 0,
	       len = WIRE_GOSSIP_LIST_HDR;
	uint8_t *buf = msg_buf(g);
	uint64_t to = timeout(g, n);

	if (per > 255)
		per = 255;
	for (struct want *w = n->fl; w != NULL; w = w->next) {
		struct wire_gossip_pull p = {.kind = w->kind,
		                             .version = w->c[w->cur].version,
		                             .chash = w->c[w->cur].chash,
		                             .offset = w->req_off,
		                             .length = range_of(w)};

		if (w->sent)
			continue;
		memcpy(p.id, w->id, GOSSIP_ID_LEN);
		len += wire_gossip_pull_put(buf + len, &p);
		w->sent = true;
		w->sent_at = now;
		w->deadline = now + to;
		n->fl_next = min64(n->fl_next, w->deadline);
		g->st.pulls++;
		if (++k == per) {
			wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_PULL, (uint8_t)k);
			(void)nbr_send(g, n, now, len, false);
			k = 0;
			len = WIRE_GOSSIP_LIST_HDR;
		}
	}
	if (k > 0) {
		wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_PULL, (uint8_t)k);
		(void)nbr_send(g, n, now, len, false);
	}
}

/* One want from n's queue u to fetch from n; false if none can go now.
 * Those that cannot go from n now go to the back of its queue. */
static bool take_one(struct gossip *g, struct nbr *n, unsigned u)
{
	struct wq *q = &n->q[u];

	for (unsigned tries = 0; tries < TAKE_TRIES && q->head != NULL; tries++) {
		struct qlink *l = q->head;
		unsigned k = cand_of(l);

		if (pick_ok(g, l->w, k) && assign(g, l->w, k, n))
			return true;
		if (l != q->tail) {
			q_unlink(q, l);
			q_link(q, l, false);
		}
	}
	return false;
}

/* Round the neighbours, one want from each at a time while it has room:
 * urgent kinds first, then the others. */
static void dispatch(struct gossip *g, uint64_t now)
{
	bool any = false;

	if (g->n_wants == 0 || g->n_slots == 0)
		return;
	for (unsigned u = 0; u < 2; u++)
		for (bool more = true; more;) {
			more = false;
			for (size_t i = 0; i < g->n_slots; i++) {
				struct nbr *n = g->nbrs[(g->disp_rr + i) % g->n_slots];

				if (n != NULL && n->q[u].head != NULL && has_room(g, n) &&
				    take_one(g, n, u))
					more = any = true;
			}
		}
	g->disp_rr = (g->disp_rr + 1) % g->n_slots;
	if (!any)
		return;
	for (size_t s = 0; s < g->n_slots; s++)
		if (g->nbrs[s] != NULL && g->nbrs[s]->fl != NULL)
			send_pulls(g, g->nbrs[s], now);
}

/* n lost credit: the wants charged to it over its quota go (those it alone
 * announced), the newest first. */
static void trim(struct gossip *g, struct nbr *n)
{
	for (unsigned u = 0; u < 2; u++) {
		size_t max = quota(g, n, u);
		struct qlink *l = n->q[u].tail, *prev;

		for (unsigned looked = 0; l != NULL && n->charged[u] > max && looked < TRIM_MAX;
		     l = prev, looked++) {
			prev = l->prev;
			if (l->w->charged == n->slot)
				(void)cand_remove(g, l->w, cand_of(l));
		}
	}
}

static void expire(struct gossip *g, struct nbr *n, uint64_t now)
{
	struct want *w = n->fl, *next;
	bool missed = false;

	n->fl_next = UINT64_MAX;
	for (; w != NULL; w = next) {
		next = w->next;
		if (!w->sent)
			continue;
		if (w->deadline > now) {
			n->fl_next = min64(n->fl_next, w->deadline);
			continue;
		}
		missed = true;
		if (++w->c[w->cur].fails >= 2)
			(void)cand_remove(g, w, (unsigned)w->cur);
		else
			requeue(g, w, false);
	}
	/* Once for all that timed out together: they were mostly asked in
	 * one message, and one lost message is one miss. */
	if (missed) {
		credit_lose(n, CREDIT_MISS);
		trim(g, n);
	}
}

/* ---- serving ----------------------------------------------------------------------------- */

static void serve_run(struct gossip *g, struct nbr *n, uint64_t now)
{
	uint32_t piece =
	    (uint32_t)((n->mtu - WIRE_GOSSIP_ITEM_HDR) / WIRE_GOSSIP_UNIT) * WIRE_GOSSIP_UNIT;
	uint8_t *buf = msg_buf(g);

	while (n->serve_n > 0) {
		struct serve *j = &n->serve[n->serve_head];
		const struct gossip_blob *b = j->b;
		uint32_t dlen = j->end - j->off < piece ? j->end - j->off : piece;
		size_t len = WIRE_GOSSIP_ITEM_HDR + dlen;

		wire_gossip_item_hdr_put(buf, b->kind, b->id, b->version, b->chash, b->len, j->off);
		memcpy(buf + WIRE_GOSSIP_ITEM_HDR, b->bytes + j->off, dlen);
		if (!nbr_send(g, n, now, len, true)) {
			n->serve_at = nbr_budget_at(g, n, now, len);
			return;
		}
		j->off += dlen;
		if (j->off >= j->end) {
			gossip_blob_unref(j->b);
			n->serve_head = (n->serve_head + 1) % SERVE_MAX;
			n->serve_n--;
		}
	}
	n->serve_at = UINT64_MAX;
}

void fetch_rx_pull(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m)
{
	uint32_t newer[255];
	size_t k = 0;

	for (unsigned r = 0; r < m->n; r++) {
		struct wire_gossip_pull p;
		uint32_t i, end, len;
		struct entry *e;

		wire_gossip_pull_at(m, r, &p);
		i = store_find(g, p.kind, p.id);
		e = i != NIL ? ent(g, i) : NULL;
		if (e == NULL || e->state != E_LIVE) {
			count_drop(g, n, GOSSIP_DROP_UNAVAILABLE);
			continue;
		}
		if (e->blob->version != p.version || e->blob->chash != p.chash) {
			/* Ours is newer: say so. Older: we cannot help. */
			if (!store_newer(g, i, p.version, p.chash))
				newer[k++] = i;
			else
				count_drop(g, n, GOSSIP_DROP_UNAVAILABLE);
			continue;
		}
		len = e->blob->len;
		if (p.offset > len || (p.offset == len && len > 0)) {
			count_drop(g, n, GOSSIP_DROP_UNAVAILABLE);
			continue;
		}
		/* To the end, or to a unit boundary: every piece but an item's
		 * last is a whole number of units. */
		end = p.length == 0 || p.length > len - p.offset ? len : p.offset + p.length;
		end = (uint32_t)min64(len, (uint64_t)(end + WIRE_GOSSIP_UNIT - 1) /
		                               WIRE_GOSSIP_UNIT * WIRE_GOSSIP_UNIT);
		if (n->serve_n == SERVE_MAX) {
			count_drop(g, n, GOSSIP_DROP_QUEUE_FULL);
			continue;
		}
		if (n->serve == NULL && (n->serve = malloc(SERVE_MAX * sizeof(*n->serve))) == NULL)
			return;
		gossip_blob_ref(e->blob);
		n->serve[(n->serve_head + n->serve_n++) % SERVE_MAX] =
		    (struct serve){e->blob, p.offset, end};
	}
	if (k > 0)
		(void)nbr_announce(g, n, now, newer, k, true);
	serve_run(g, n, now);
}

/* ---- lifecycle and timers ----------------------------------------------------------------- */

static struct standing *standing_find(struct gossip *g, const uint8_t id[GOSSIP_ID_LEN])
{
	for (unsigned k = 0; k < MAX_STANDING; k++)
		if (g->standing[k].used && memcmp(g->standing[k].id, id, GOSSIP_ID_LEN) == 0)
			return &g->standing[k];
	return NULL;
}

void fetch_nbr_up(struct gossip *g, struct nbr *n)
{
	struct standing *s = standing_find(g, n->id);

	n->credit = CREDIT_MAX;
	if (s != NULL) {
		n->credit = s->credit; /* going down and up does not wipe the slate */
		s->used = false;
	}
}

/* Forgets n as a source of every want; remembers its credit if short. */
void fetch_nbr_down(struct gossip *g, struct nbr *n)
{
	struct standing *st = standing_find(g, n->id);

	if (n->credit < CREDIT_MAX) {
		if (st == NULL)
			st = &g->standing[g->standing_next++ % MAX_STANDING];
		memcpy(st->id, n->id, GOSSIP_ID_LEN);
		st->credit = n->credit;
		st->used = true;
	}
	while (n->fl != NULL)
		requeue(g, n->fl, true);
	/* Every want it is a source of is in its queues now, or in flight
	 * elsewhere. */
	for (unsigned u = 0; u < 2; u++)
		while (n->q[u].head != NULL)
			(void)cand_remove(g, n->q[u].head->w, cand_of(n->q[u].head));
	for (size_t s = 0; s < g->n_slots; s++) {
		struct nbr *o = g->nbrs[s];

		if (o == NULL || o == n)
			continue;
		for (struct want *w = o->fl, *next; w != NULL; w = next) {
			next = w->next;
			for (unsigned k = 0; k < w->n;)
				if (w->c[k].nbr != n->slot)
					k++;
				else if (!cand_remove(g, w, k))
					break;
		}
	}
}

uint64_t fetch_timers(struct gossip *g, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (size_t s = 0; s < g->n_slots; s++) {
		struct nbr *n = g->nbrs[s];

		if (n == NULL)
			continue;
		if (n->fl_next <= now)
			expire(g, n, now);
		if (n->serve_n > 0 && n->serve_at <= now)
			serve_run(g, n, now);
	}
	dispatch(g, now);
	for (size_t s = 0; s < g->n_slots; s++) {
		struct nbr *n = g->nbrs[s];

		if (n == NULL)
			continue;
		next = min64(next, n->fl_next);
		if (n->serve_n > 0)
			next = min64(next, n->serve_at);
	}
	return next;
}

void fetch_free(struct gossip *g)
{
	for (size_t s = 0; s < g->n_slots; s++) {
		struct nbr *n = g->nbrs[s];

		if (n == NULL)
			continue;
		while (n->fl != NULL)
			want_free(g, n->fl);
		for (unsigned u = 0; u < 2; u++)
			while (n->q[u].head != NULL)
				want_free(g, n->q[u].head->w);
	}
}

size_t fetch_memory(const struct gossip *g)
{
	return g->n_wants * sizeof(struct want) + g->asm_bytes +
	       (g->wmap.mask + 1) * sizeof(struct u64map_slot);
}
