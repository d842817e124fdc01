/*
 * Getting items, and giving them.
 *
 * A want is an item some neighbour announced at a version newer than
 * ours. It remembers up to MAX_CANDS sources (one version each: a liar
 * holds one slot at most) and fetches the newest version from one of the
 * sources that announced it, a range of at most pull_window bytes at a
 * time, with at most SERVE_MAX records and pull_window bytes outstanding
 * per neighbour. A fetch that makes no progress for a timeout (from the
 * neighbour's measured round trip and what is queued before it) is asked
 * again; a source that fails twice is forgotten. Pieces of a large item
 * are gathered in a blob with a bitmap of 64-byte units; the whole is
 * checked against the announced content hash, then offered to the
 * owner's accept, only once complete.
 *
 * Serving: each PULL record for a version we hold joins the neighbour's
 * queue of SERVE_MAX, which sends pieces as the neighbour's and the total
 * reply budgets allow.
 */
#include <stdlib.h>
#include <string.h>

#include "gossip/internal.h"

#define NS_PER_S  1000000000ULL
#define NS_PER_MS 1000000ULL

/* ---- lists ------------------------------------------------------------------ */

static void ready_push(struct gossip *g, struct want *w, bool front)
{
	w->at = NIL;
	w->prev = w->next = NULL;
	if (g->ready == NULL) {
		g->ready = g->ready_tail = w;
	} else if (front) {
		w->next = g->ready;
		g->ready->prev = w;
		g->ready = w;
	} else {
		w->prev = g->ready_tail;
		g->ready_tail->next = w;
		g->ready_tail = w;
	}
}

static uint32_t range_of(const struct want *w)
{
	return w->req_end - w->req_off;
}

/* Takes w out of the ready list or its neighbour's in-flight list. */
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
		if (w->prev)
			w->prev->next = w->next;
		else
			g->ready = w->next;
		if (w->next)
			w->next->prev = w->prev;
		else
			g->ready_tail = w->prev;
	}
	w->prev = w->next = NULL;
	w->at = NIL;
}

/* Back to the ready list, ahead of new wants, to be fetched again. */
static void requeue(struct gossip *g, struct want *w)
{
	detach(g, w);
	w->cur = -1;
	w->sent = false;
	ready_push(g, w, true);
}

/* ---- wants -------------------------------------------------------------------- */

static struct want *want_find(const struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	struct want *w = u64map_get(&g->wmap, key_hash(g, kind, id));

	return w != NULL && w->kind == kind && memcmp(w->id, id, GOSSIP_ID_LEN) == 0 ? w : NULL;
}

static void asm_drop(struct gossip *g, struct want *w)
{
	if (w->asm_b == NULL)
		return;
	g->asm_bytes -= w->asm_b->len;
	gossip_blob_unref(w->asm_b);
	free(w->units);
	w->asm_b = NULL;
	w->units = NULL;
}

static void want_free(struct gossip *g, struct want *w)
{
	detach(g, w);
	asm_drop(g, w);
	(void)u64map_del(&g->wmap, w->key);
	g->n_wants--;
	free(w);
}

static struct want *want_new(struct gossip *g, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	struct want *w;

	if (g->n_wants >= g->c.max_wants || (w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->key = key_hash(g, kind, id);
	if (u64map_get(&g->wmap, w->key) != NULL || u64map_put(&g->wmap, w->key, w) != 0) {
		free(w);
		return NULL;
	}
	w->kind = kind;
	memcpy(w->id, id, GOSSIP_ID_LEN);
	w->cur = -1;
	g->n_wants++;
	ready_push(g, w, false);
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

/* Forgets candidate k. If it was being fetched, w goes back to the ready
 * list; if none is left, w is freed (false). */
static bool cand_remove(struct gossip *g, struct want *w, unsigned k)
{
	bool was_cur = (int)k == w->cur;

	memmove(&w->c[k], &w->c[k + 1], (w->n - k - 1) * sizeof(w->c[0]));
	w->n--;
	if (w->cur > (int)k)
		w->cur--;
	if (was_cur)
		requeue(g, w);
	if (w->n == 0) {
		want_free(g, w);
		return false;
	}
	return true;
}

void fetch_offer(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip_entry *e)
{
	uint32_t i = store_find(g, e->kind, e->id);
	struct cand c = {n->slot, 0, e->len, e->version, e->chash};
	struct want *w;
	unsigned k, worst = 0;

	if (!store_newer(g, i, e->version, e->chash) ||
	    memo_has(g, now, e->kind, e->id, e->version, e->chash))
		return;
	if ((w = want_find(g, e->kind, e->id)) == NULL &&
	    (w = want_new(g, e->kind, e->id)) == NULL) {
		count_drop(g, n, GOSSIP_DROP_QUEUE_FULL);
		return;
	}
	for (k = 0; k < w->n && w->c[k].nbr != n->slot; k++)
		;
	if (k < w->n) {
		if (cand_same(&w->c[k], e->version, e->chash))
			return;
		if ((int)k == w->cur)
			requeue(g, w); /* its version changed under the fetch */
		w->c[k] = c;
		return;
	}
	if (w->n < MAX_CANDS) {
		w->c[w->n++] = c;
		return;
	}
	for (k = 1; k < w->n; k++)
		if (cand_newer(&w->c[worst], &w->c[k]))
			worst = k;
	if (cand_newer(&c, &w->c[worst]) && (int)worst != w->cur)
		w->c[worst] = c;
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
	g->asm_bytes -= b->len;
	free(w->units);
	w->asm_b = NULL;
	w->units = NULL;
	if (!blob_seal(b, c.chash)) {
		gossip_blob_unref(b);
		count_drop(g, n, GOSSIP_DROP_CORRUPT);
		(void)cand_remove(g, w, (unsigned)w->cur); /* that source lied */
		return;
	}
	g->st.verified++;
	ok = g->c.accept(g->c.ctx, b->kind, b->id, b->version, b->bytes, b->len);
	if (!ok) {
		count_drop(g, n, GOSSIP_DROP_REJECTED);
		memo_add(g, now, b->kind, b->id, b->version, b->chash);
		gossip_blob_unref(b);
		for (unsigned k = 0; k < w->n;)
			if (cand_same(&w->c[k], c.version, c.chash)) {
				if (!cand_remove(g, w, k))
					return;
			} else {
				k++;
			}
		if (w->cur < 0 && w->at != NIL)
			requeue(g, w);
		return;
	}
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
	requeue(g, w);
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
	if (units_all(w, w->req_off, w->req_end))
		requeue(g, w); /* this range is in; the next one from the dispatcher */
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

/* Picks a source for w and moves it to that neighbour's in-flight list. */
static bool assign(struct gossip *g, struct want *w)
{
	int best = -1, pick = -1;
	uint32_t off, end;
	struct nbr *n;

	for (unsigned k = 0; k < w->n; k++)
		if (best < 0 || cand_newer(&w->c[k], &w->c[best]))
			best = (int)k;
	if (best < 0)
		return false;
	/* Among sources of the newest version, one with room. */
	for (unsigned k = 0; k < w->n; k++) {
		const struct cand *c = &w->c[k];

		if (!cand_same(c, w->c[best].version, w->c[best].chash))
			continue;
		n = g->nbrs[c->nbr];
		if (n->n_fl >= SERVE_MAX || (n->n_fl > 0 && n->fl_bytes >= g->c.pull_window))
			continue;
		if (pick < 0)
			pick = (int)k; /* the first to announce it: often the nearest */
	}
	if (pick < 0)
		return false;
	n = g->nbrs[w->c[pick].nbr];
	if (w->asm_b != NULL && !cand_same(&w->c[pick], w->asm_b->version, w->asm_chash))
		asm_drop(g, w); /* gathered for another version */
	if (w->asm_b == NULL && w->c[pick].len > n->mtu - WIRE_GOSSIP_ITEM_HDR &&
	    g->asm_bytes + w->c[pick].len > g->c.max_assembly)
		return false; /* wait for room to gather it */
	off = first_missing(w);
	end = w->c[pick].len - off > g->c.pull_window ? off + g->c.pull_window : w->c[pick].len;
	detach(g, w);
	w->cur = (int8_t)pick;
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

static void dispatch(struct gossip *g, uint64_t now)
{
	struct want *w = g->ready, *next;
	bool any = false;

	for (unsigned scanned = 0; w != NULL && scanned < DISPATCH_MAX; w = next, scanned++) {
		next = w->next;
		any |= assign(g, w);
	}
	if (!any)
		return;
	for (size_t s = 0; s < g->n_slots; s++)
		if (g->nbrs[s] != NULL && g->nbrs[s]->fl != NULL)
			send_pulls(g, g->nbrs[s], now);
}

static void expire(struct gossip *g, struct nbr *n, uint64_t now)
{
	struct want *w = n->fl, *next;

	n->fl_next = UINT64_MAX;
	for (; w != NULL; w = next) {
		next = w->next;
		if (!w->sent)
			continue;
		if (w->deadline > now) {
			n->fl_next = min64(n->fl_next, w->deadline);
			continue;
		}
		if (++w->c[w->cur].fails >= 2)
			(void)cand_remove(g, w, (unsigned)w->cur);
		else
			requeue(g, w);
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

/* Forgets n as a source of every want. */
void fetch_nbr_down(struct gossip *g, struct nbr *n)
{
	while (n->fl != NULL)
		requeue(g, n->fl);
	for (struct want *w = g->ready, *next; w != NULL; w = next) {
		next = w->next;
		for (unsigned k = 0; k < w->n;) {
			if (w->c[k].nbr != n->slot) {
				k++;
				continue;
			}
			if (!cand_remove(g, w, k))
				break;
		}
	}
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
	while (g->ready != NULL)
		want_free(g, g->ready);
	for (size_t s = 0; s < g->n_slots; s++)
		if (g->nbrs[s] != NULL)
			while (g->nbrs[s]->fl != NULL)
				want_free(g, g->nbrs[s]->fl);
}

size_t fetch_memory(const struct gossip *g)
{
	return g->n_wants * sizeof(struct want) + g->asm_bytes +
	       (g->wmap.mask + 1) * sizeof(struct u64map_slot);
}
