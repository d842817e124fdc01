/*
 * The engine's top: the API, message dispatch, anti-entropy, batched
 * announcements, the neighbours wanted, timers (docs/gossip.md).
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/internal.h"

#define NS_PER_MS    1000000ULL
#define NS_PER_S     1000000000ULL
#define WISH_TICK    NS_PER_S /* how often the neighbours wanted are reviewed */
#define MAX_REPLY    512      /* our entries compared against one DIGEST */
#define MAX_OWN_PUSH 64       /* own recent items announced to a neighbour coming up */

static const char *const drop_names[] = {
#define X(name, str) str,
    GOSSIP_DROP_REASONS(X)
#undef X
};

const char *gossip_drop_name(enum gossip_drop d)
{
	return (unsigned)d < GOSSIP_DROP_COUNT ? drop_names[d] : "?";
}

static uint64_t default_rand(void *ctx)
{
	uint64_t v;

	(void)ctx;
	randombytes_buf(&v, sizeof(v));
	return v;
}

void gossip_conf_default(struct gossip_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = 1200;
	c->degree = 6;
	c->max_neighbours = 32;
	c->max_items = 1 << 20;
	c->max_tombstones = 4096;
	c->max_wants = 8192;
	c->max_assembly = 1 << 20;
	c->batch_ns = 100 * NS_PER_MS;
	c->announce_ns = NS_PER_S;
	c->ae_ns = 2 * NS_PER_S;
	c->settle_ns = 10 * NS_PER_S;
	c->keepalive_ns = 20 * NS_PER_S;
	c->active_ns = 60 * NS_PER_S;
	c->refresh_ns = 60 * NS_PER_S;
	c->connect_ns = 10 * NS_PER_S;
	c->backoff_ns = 300 * NS_PER_S;
	c->tombstone_ns = 600 * NS_PER_S;
	c->reject_ns = 60 * NS_PER_S;
	c->pull_timeout_ns = NS_PER_S;
	c->reply_rate = 32768;
	c->reply_burst = 32768;
	c->total_rate = 262144;
	c->total_burst = 131072;
	c->pull_window = 16384;
}

void gossip_conf_urgent(struct gossip_conf *c, uint8_t kind)
{
	c->urgent[kind / 8] |= (uint8_t)(1u << (kind % 8));
}

struct gossip *gossip_new(const struct gossip_conf *c, uint64_t now)
{
	struct gossip *g;

	if (c->accept == NULL || c->send == NULL || c->mtu < GOSSIP_MIN_MTU ||
	    c->mtu > WIRE_GOSSIP_MAX_MTU || c->degree == 0 || c->max_neighbours < c->degree ||
	    c->reply_rate == 0 || c->total_rate == 0 || c->pull_window < WIRE_GOSSIP_UNIT ||
	    c->max_items == 0 || c->max_wants == 0)
		return NULL;
	if (sodium_init() < 0 || (g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	g->c = *c;
	if (g->c.rand == NULL)
		g->c.rand = default_rand;
	/* A burst must hold one message, or a reply could never go. */
	if (g->c.reply_burst < g->c.mtu)
		g->c.reply_burst = (uint32_t)g->c.mtu;
	if (g->c.total_burst < g->c.reply_burst)
		g->c.total_burst = g->c.reply_burst;
	g->t0 = now;
	g->total = (struct bucket){g->c.total_burst, now};
	g->flush_at = UINT64_MAX;
	g->ae_at = now + jitter(g, g->c.ae_ns);
	g->wish_at = now;
	g->refresh_at = now + jitter(g, g->c.refresh_ns);
	if ((g->buf = malloc(g->c.mtu)) == NULL || store_init(g) != 0 ||
	    u64map_init(&g->nmap, 16) != 0 || u64map_init(&g->wmap, 16) != 0) {
		gossip_free(g);
		return NULL;
	}
	return g;
}

void gossip_free(struct gossip *g)
{
	if (g == NULL)
		return;
	if (g->wmap.slots != NULL)
		fetch_free(g);
	for (size_t s = 0; s < g->n_slots; s++)
		if (g->nbrs[s] != NULL)
			nbr_free(g, g->nbrs[s]);
	if (g->s.idx != NULL)
		store_free(g);
	u64map_free(&g->nmap);
	u64map_free(&g->wmap);
	free(g->nbrs);
	free(g->wishes);
	free(g->roots);
	free(g->buf);
	free(g);
}

/* ---- items ------------------------------------------------------------------ */

int gossip_put(struct gossip *g, uint64_t now, struct gossip_blob *b, unsigned flags)
{
	uint32_t i = store_find(g, b->kind, b->id);

	if (!store_newer(g, i, b->version, b->chash) ||
	    store_set(g, now, b, (flags & GOSSIP_QUIET) != 0, true, 0) != 0)
		return -1;
	fetch_settled(g, b->kind, b->id);
	return 0;
}

int gossip_remove(struct gossip *g, uint64_t now, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN])
{
	uint32_t i = store_find(g, kind, id);

	if (i == NIL || store_remove(g, now, i) != 0)
		return -1;
	fetch_settled(g, kind, id);
	if (kind == g->c.member_kind)
		g->wish_at = now; /* no longer a neighbour to want */
	return 0;
}

const struct gossip_blob *gossip_get(const struct gossip *g, uint8_t kind,
                                     const uint8_t id[GOSSIP_ID_LEN])
{
	uint32_t i = store_find(g, kind, id);

	return i != NIL && ent(g, i)->state == E_LIVE ? ent(g, i)->blob : NULL;
}

void gossip_each(const struct gossip *g, void (*fn)(void *arg, const struct gossip_blob *b),
                 void *arg)
{
	for (uint32_t i = 0; i < g->s.cap; i++)
		if (ent(g, i)->state == E_LIVE)
			fn(arg, ent(g, i)->blob);
}

/* ---- sending summaries, trees, digests ------------------------------------------ */

static void send_summary(struct gossip *g, struct nbr *n, uint64_t now)
{
	size_t len = wire_gossip_summary_put(msg_buf(g), n->wished ? WIRE_GOSSIP_WISHED : 0,
	                                     g->s.cur_count, g->s.set_root, g->s.cur_root);

	n->summary_tx = now;
	g->st.ae_rounds++;
	(void)nbr_send(g, n, now, len, false);
}

/* Our 64 children of node (level, index), in as many messages as n's budget
 * needs. A reply: false if n's budget could not pay (counted). */
static bool send_tree(struct gossip *g, struct nbr *n, uint64_t now, uint8_t level, uint32_t index)
{
	uint64_t hash[WIRE_GOSSIP_FANOUT];
	uint32_t count[WIRE_GOSSIP_FANOUT];
	unsigned per = (unsigned)((n->mtu - WIRE_GOSSIP_TREE_HDR) / WIRE_GOSSIP_CHILD);
	uint8_t *buf = msg_buf(g);

	store_children(g, level, index, hash, count);
	for (unsigned first = 0; first < WIRE_GOSSIP_FANOUT; first += per) {
		unsigned k = WIRE_GOSSIP_FANOUT - first < per ? WIRE_GOSSIP_FANOUT - first : per;
		size_t len =
		    wire_gossip_tree_hdr_put(buf, level, index, (uint8_t)first, (uint8_t)k);

		for (unsigned c = first; c < first + k; c++)
			len += wire_gossip_child_put(buf + len, hash[c], count[c]);
		if (!nbr_send(g, n, now, len, true)) {
			count_drop(g, n, GOSSIP_DROP_RATE_LIMITED);
			return false;
		}
	}
	return true;
}

static size_t digest_room(const struct nbr *n)
{
	size_t per = (n->mtu - WIRE_GOSSIP_DIGEST_HDR) / WIRE_GOSSIP_ENTRY;

	return per > 255 ? 255 : per;
}

/* Our entries under node (level, index) (as many as fit), asking for a reply. */
static bool send_digest(struct gossip *g, struct nbr *n, uint64_t now, uint8_t level,
                        uint32_t index)
{
	uint32_t es[255];
	size_t k = store_under(g, level, index, es, digest_room(n)), len;
	uint8_t *buf = msg_buf(g);

	if (k > digest_room(n))
		k = digest_room(n); /* too many even at the deepest level: the first ones */
	len = wire_gossip_digest_hdr_put(buf, WIRE_GOSSIP_REPLY, level, index, (uint8_t)k);
	for (size_t j = 0; j < k; j++) {
		const struct gossip_blob *b = ent(g, es[j])->blob;
		struct wire_gossip_entry e = {
		    .kind = b->kind, .version = b->version, .chash = b->chash, .len = b->len};

		memcpy(e.id, b->id, GOSSIP_ID_LEN);
		len += wire_gossip_entry_put(buf + len, &e);
	}
	if (!nbr_send(g, n, now, len, true)) {
		count_drop(g, n, GOSSIP_DROP_RATE_LIMITED);
		return false;
	}
	return true;
}

/* Announces our entries under node (level, index), MAX_REPLY at most. */
static bool announce_under(struct gossip *g, struct nbr *n, uint64_t now, uint8_t level,
                           uint32_t index)
{
	uint32_t es[MAX_REPLY];
	size_t k = store_under(g, level, index, es, MAX_REPLY);

	return nbr_announce(g, n, now, es, k < MAX_REPLY ? k : MAX_REPLY, true);
}

/* ---- receiving ---------------------------------------------------------------- */

static size_t n_active(const struct gossip *g, uint64_t now)
{
	size_t k = 0;

	for (size_t s = 0; s < g->n_slots; s++)
		if (g->nbrs[s] != NULL && nbr_active(g, g->nbrs[s], now))
			k++;
	return k;
}

static void on_summary(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m)
{
	if (m->flags & WIRE_GOSSIP_WISHED) {
		/* It chose us: gossip with it too, if there is room. */
		if (!n->wished && !nbr_active(g, n, now))
			n->inbound = n_active(g, now) < g->c.max_neighbours;
		n->wished_rx = now;
	}
	if (m->settled == g->s.set_root || m->current == g->s.cur_root)
		return; /* the same, or only changes in flight differ */
	g->st.ae_descents++;
	(void)send_tree(g, n, now, 0, 0);
}

static void on_tree(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m)
{
	uint64_t hash[WIRE_GOSSIP_FANOUT];
	uint32_t count[WIRE_GOSSIP_FANOUT];
	uint8_t child_level = (uint8_t)(m->level + 1);

	store_children(g, m->level, m->index, hash, count);
	for (unsigned i = 0; i < m->n; i++) {
		unsigned c = m->first + i;
		uint32_t child = m->index * WIRE_GOSSIP_FANOUT + c;
		uint64_t h;
		uint16_t cnt;
		bool ok;

		wire_gossip_child_at(m, i, &h, &cnt);
		if (h == hash[c] && cnt == (count[c] > UINT16_MAX ? UINT16_MAX : count[c]))
			continue;
		/* It holds nothing there: announce ours. Ours are few enough to
		 * list (or the tree goes no deeper): list them, and the other
		 * side answers with what we lack. Else descend. */
		if (cnt == 0)
			ok = announce_under(g, n, now, child_level, child);
		else if (child_level == WIRE_GOSSIP_DEPTH || count[c] <= digest_room(n))
			ok = send_digest(g, n, now, child_level, child);
		else
			ok = send_tree(g, n, now, child_level, child);
		if (!ok)
			return;
	}
}

/* A small table of the entries of a DIGEST, to tell which of ours it lacks. */
struct seen {
	uint64_t key[512];
	uint8_t pos[512];
};

static bool seen_has(const struct seen *t, const struct wire_gossip *m, uint64_t key,
                     const struct gossip_blob *b, bool *older)
{
	for (size_t j = key & 511; t->key[j] != 0; j = (j + 1) & 511) {
		struct wire_gossip_entry e;

		if (t->key[j] != key)
			continue;
		wire_gossip_entry_at(m, t->pos[j], &e);
		if (e.kind != b->kind || memcmp(e.id, b->id, GOSSIP_ID_LEN) != 0)
			continue;
		*older = b->version > e.version || (b->version == e.version && b->chash > e.chash);
		return true;
	}
	return false;
}

static void on_digest(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m)
{
	uint32_t ours[MAX_REPLY], reply[MAX_REPLY];
	size_t k = 0, r = 0;
	struct seen *t = NULL;

	for (unsigned j = 0; j < m->n; j++) {
		struct wire_gossip_entry e;
		uint32_t i;

		wire_gossip_entry_at(m, j, &e);
		i = store_find(g, e.kind, e.id);
		if (store_newer(g, i, e.version, e.chash))
			fetch_offer(g, n, now, &e);
		else if (ent(g, i)->state == E_LIVE && ent(g, i)->blob->version == e.version &&
		         ent(g, i)->blob->chash == e.chash)
			pend_know(g, i, n->slot);
	}
	if (!(m->flags & WIRE_GOSSIP_REPLY))
		return;
	/* Answer with what it lacks or holds older, if its budget can pay for
	 * at least one message; do the work only then. */
	if (nbr_budget_at(g, n, now, WIRE_GOSSIP_LIST_HDR + WIRE_GOSSIP_ENTRY) > now) {
		count_drop(g, n, GOSSIP_DROP_RATE_LIMITED);
		return;
	}
	k = store_under(g, m->level, m->index, ours, MAX_REPLY);
	if (k > MAX_REPLY)
		k = MAX_REPLY;
	if (k == 0)
		return;
	if (m->n > 0) {
		if ((t = calloc(1, sizeof(*t))) == NULL)
			return;
		for (unsigned j = 0; j < m->n; j++) {
			struct wire_gossip_entry e;
			uint64_t key;
			size_t s;

			wire_gossip_entry_at(m, j, &e);
			key = key_hash(g, e.kind, e.id);
			for (s = key & 511; t->key[s] != 0; s = (s + 1) & 511)
				;
			t->key[s] = key;
			t->pos[s] = (uint8_t)j;
		}
	}
	for (size_t j = 0; j < k; j++) {
		const struct gossip_blob *b = ent(g, ours[j])->blob;
		bool older = true;

		if (t == NULL || !seen_has(t, m, key_hash(g, b->kind, b->id), b, &older) || older)
			reply[r++] = ours[j];
	}
	free(t);
	if (r > 0)
		(void)nbr_announce(g, n, now, reply, r, true);
}

static void on_announce(struct gossip *g, struct nbr *n, uint64_t now, const struct wire_gossip *m)
{
	uint32_t reply[255];
	size_t r = 0;

	for (unsigned j = 0; j < m->n; j++) {
		struct wire_gossip_entry e;
		uint32_t i;
		struct entry *x;

		wire_gossip_entry_at(m, j, &e);
		i = store_find(g, e.kind, e.id);
		if (store_newer(g, i, e.version, e.chash)) {
			fetch_offer(g, n, now, &e);
			continue;
		}
		x = ent(g, i);
		if (x->state != E_LIVE)
			continue; /* removed here: not for us to bring back or spread */
		if (x->blob->version == e.version && x->blob->chash == e.chash)
			pend_know(g, i, n->slot);
		else if (x->pending == NIL)
			reply[r++] = i; /* it has an older one: tell it of ours */
	}
	if (r > 0)
		(void)nbr_announce(g, n, now, reply, r, true);
}

void gossip_rx(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], const uint8_t *msg,
               size_t len)
{
	struct nbr *n = nbr_find(g, id);
	struct wire_gossip m;

	if (n == NULL) {
		count_drop(g, NULL, GOSSIP_DROP_NOT_NEIGHBOUR);
		return;
	}
	g->st.rx_msgs++;
	g->st.rx_bytes += len;
	n->st.rx_msgs++;
	n->st.rx_bytes += len;
	if (!wire_gossip_get(&m, msg, len)) {
		count_drop(g, n, GOSSIP_DROP_MALFORMED);
		return;
	}
	switch (m.type) {
	case WIRE_GOSSIP_SUMMARY:
		on_summary(g, n, now, &m);
		break;
	case WIRE_GOSSIP_TREE:
		on_tree(g, n, now, &m);
		break;
	case WIRE_GOSSIP_DIGEST:
		on_digest(g, n, now, &m);
		break;
	case WIRE_GOSSIP_ANNOUNCE:
		on_announce(g, n, now, &m);
		break;
	case WIRE_GOSSIP_PULL:
		fetch_rx_pull(g, n, now, &m);
		break;
	case WIRE_GOSSIP_ITEM:
		fetch_rx_item(g, n, now, &m);
		break;
	}
}

/* ---- announcements ---------------------------------------------------------------- */

/* Sends the pending items due now to every active neighbour that does not
 * hold them, in batches; keeps items announced less than announce_ns ago
 * for later. */
static void flush(struct gossip *g, uint64_t now)
{
	uint32_t now_ms = (uint32_t)((now - g->t0) / NS_PER_MS);
	uint32_t gap_ms = (uint32_t)(g->c.announce_ns / NS_PER_MS);
	uint64_t later = UINT64_MAX;
	uint8_t *buf = msg_buf(g);
	size_t due = 0;

	/* Due ones to the front of the pending list. */
	for (size_t k = 0; k < g->s.n_pend; k++) {
		struct pend p = g->s.pend[k];
		const struct entry *e = ent(g, p.e);
		uint32_t since = now_ms - e->ann_ms;

		if ((e->flags & EF_ANNOUNCED) && since < gap_ms) {
			later = min64(later, now + (uint64_t)(gap_ms - since) * NS_PER_MS);
			continue;
		}
		g->s.pend[k] = g->s.pend[due];
		g->s.pend[due] = p;
		ent(g, g->s.pend[k].e)->pending = (uint32_t)k;
		ent(g, p.e)->pending = (uint32_t)due;
		due++;
	}
	for (size_t s = 0; s < g->n_slots && due > 0; s++) {
		struct nbr *n = g->nbrs[s];
		size_t per, k = 0, len = WIRE_GOSSIP_LIST_HDR;

		if (n == NULL || !nbr_active(g, n, now))
			continue;
		per = (n->mtu - WIRE_GOSSIP_LIST_HDR) / WIRE_GOSSIP_ENTRY;
		per = per > 255 ? 255 : per;
		for (size_t j = 0; j < due; j++) {
			const struct gossip_blob *b = ent(g, g->s.pend[j].e)->blob;
			struct wire_gossip_entry e = {.kind = b->kind,
			                              .version = b->version,
			                              .chash = b->chash,
			                              .len = b->len};

			if (s < 64 && (g->s.pend[j].known & ((uint64_t)1 << s)))
				continue;
			memcpy(e.id, b->id, GOSSIP_ID_LEN);
			len += wire_gossip_entry_put(buf + len, &e);
			if (++k == per) {
				wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_ANNOUNCE, (uint8_t)k);
				(void)nbr_send(g, n, now, len, false);
				k = 0;
				len = WIRE_GOSSIP_LIST_HDR;
			}
		}
		if (k > 0) {
			wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_ANNOUNCE, (uint8_t)k);
			(void)nbr_send(g, n, now, len, false);
		}
	}
	while (due > 0) {
		struct entry *e = ent(g, g->s.pend[--due].e);

		e->ann_ms = now_ms;
		e->flags |= EF_ANNOUNCED;
		pend_drop(g, g->s.pend[due].e);
	}
	g->flush_at = g->s.n_pend > 0 ? later : UINT64_MAX;
}

/* ---- neighbours ---------------------------------------------------------------------- */

static struct wish *wish_find(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN])
{
	for (size_t k = 0; k < g->n_wishes; k++)
		if (memcmp(g->wishes[k].id, id, GOSSIP_ID_LEN) == 0)
			return &g->wishes[k];
	return NULL;
}

bool gossip_wants(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN])
{
	return wish_find(g, id) != NULL;
}

static bool backed_off(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN], uint64_t now)
{
	for (unsigned k = 0; k < MAX_BACKOFF; k++)
		if (g->backoff[k].until > now && memcmp(g->backoff[k].id, id, GOSSIP_ID_LEN) == 0)
			return true;
	return false;
}

/* Greets a neighbour we want: our summary, and our own recent items. */
static void greet(struct gossip *g, struct nbr *n, uint64_t now)
{
	uint32_t own[MAX_OWN_PUSH];
	size_t k = store_own_young(g, own, MAX_OWN_PUSH);

	send_summary(g, n, now);
	if (k > 0)
		(void)nbr_announce(g, n, now, own, k, false);
}

static void wish_add(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], bool root)
{
	struct wish *v = realloc(g->wishes, (g->n_wishes + 1) * sizeof(*v));
	struct nbr *n;

	if (v == NULL)
		return;
	g->wishes = v;
	memcpy(v[g->n_wishes].id, id, GOSSIP_ID_LEN);
	v[g->n_wishes].since = now;
	v[g->n_wishes].root = root;
	g->n_wishes++;
	if (g->c.want != NULL)
		g->c.want(g->c.ctx, id, true);
	if ((n = nbr_find(g, id)) != NULL && !n->wished) {
		n->wished = true;
		greet(g, n, now);
	}
}

/* Gives up wish k; with backoff, id is not wanted again for backoff_ns. */
static void wish_del(struct gossip *g, uint64_t now, size_t k, bool backoff)
{
	uint8_t id[GOSSIP_ID_LEN];
	struct nbr *n;

	memcpy(id, g->wishes[k].id, GOSSIP_ID_LEN);
	g->wishes[k] = g->wishes[--g->n_wishes];
	if (backoff) {
		struct backoff *b = &g->backoff[g->backoff_next++ % MAX_BACKOFF];

		memcpy(b->id, id, GOSSIP_ID_LEN);
		b->until = now + g->c.backoff_ns;
	}
	if ((n = nbr_find(g, id)) != NULL) {
		n->wished = false;
		n->inbound = false; /* until it says it wants us */
	}
	if (g->c.want != NULL)
		g->c.want(g->c.ctx, id, false);
}

static bool is_member(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN])
{
	uint32_t i = store_find(g, g->c.member_kind, id);

	return i != NIL && ent(g, i)->state == E_LIVE;
}

/* Keeps degree random members wanted, gives up those that do not come up,
 * and replaces one now and then so the overlay keeps mixing. The roots are
 * wanted while fewer than half of degree wanted members are up, and given
 * up once degree are: a node starting, or cut off, goes to them, but the
 * moment of replacing one member (degree - 1 up) does not, or every node's
 * refresh would reach the roots. */
static void review_wishes(struct gossip *g, uint64_t now)
{
	size_t members = 0, up = 0;

	for (size_t k = 0; k < g->n_wishes;) {
		struct wish *w = &g->wishes[k];
		bool is_up = nbr_find(g, w->id) != NULL;

		if (!w->root && !is_member(g, w->id))
			wish_del(g, now, k, false);
		else if (!is_up && now - w->since >= g->c.connect_ns)
			wish_del(g, now, k, true);
		else
			k++;
	}
	for (size_t k = 0; k < g->n_wishes; k++)
		if (!g->wishes[k].root) {
			members++;
			up += nbr_find(g, g->wishes[k].id) != NULL;
		}
	if (now >= g->refresh_at) {
		g->refresh_at = now + jitter(g, g->c.refresh_ns);
		if (members >= g->c.degree && up > 0) {
			size_t pick = grand(g) % up;

			for (size_t k = 0; k < g->n_wishes; k++)
				if (!g->wishes[k].root && nbr_find(g, g->wishes[k].id) != NULL &&
				    pick-- == 0) {
					wish_del(g, now, k, false);
					members--;
					up--;
					break;
				}
		}
	}
	for (unsigned tries = 0;
	     members < g->c.degree && g->s.n_members > 0 && tries < 4 * g->c.degree; tries++) {
		const uint8_t *id = ent(g, g->s.members[grand(g) % g->s.n_members])->blob->id;
		struct wish *w = wish_find(g, id);

		if (w != NULL || backed_off(g, id, now))
			continue;
		wish_add(g, now, id, false);
		members++;
	}
	for (size_t k = 0; k < g->n_roots; k++) {
		struct wish *w = wish_find(g, g->roots[k]);

		if (up < (g->c.degree + 1) / 2 && w == NULL &&
		    memcmp(g->roots[k], g->c.self, GOSSIP_ID_LEN) != 0 &&
		    !backed_off(g, g->roots[k], now))
			wish_add(g, now, g->roots[k], true);
		else if (up >= g->c.degree && w != NULL && w->root)
			wish_del(g, now, (size_t)(w - g->wishes), false);
	}
}

void gossip_set_roots(struct gossip *g, uint64_t now, const uint8_t (*ids)[GOSSIP_ID_LEN], size_t n)
{
	uint8_t(*v)[GOSSIP_ID_LEN] = NULL;

	if (n > 0 && (v = malloc(n * GOSSIP_ID_LEN)) == NULL)
		return;
	if (n > 0)
		memcpy(v, ids, n * GOSSIP_ID_LEN);
	free(g->roots);
	g->roots = v;
	g->n_roots = n;
	for (size_t k = 0; k < g->n_wishes;) {
		bool still = false;

		for (size_t j = 0; j < n && !still; j++)
			still = memcmp(g->wishes[k].id, v[j], GOSSIP_ID_LEN) == 0;
		if (g->wishes[k].root && !still)
			wish_del(g, now, k, false);
		else
			k++;
	}
	g->wish_at = now;
}

void gossip_peer_up(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], size_t mtu)
{
	struct nbr *n = nbr_find(g, id);

	if (n != NULL) {
		n->mtu = mtu == 0 || mtu > g->c.mtu ? g->c.mtu
		         : mtu < GOSSIP_MIN_MTU     ? GOSSIP_MIN_MTU
		                                    : mtu;
		return;
	}
	if ((n = nbr_add(g, now, id, mtu)) == NULL)
		return;
	fetch_nbr_up(g, n);
	if (wish_find(g, id) != NULL) {
		n->wished = true;
		greet(g, n, now);
	}
}

void gossip_peer_down(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN])
{
	struct nbr *n = nbr_find(g, id);
	struct wish *w = wish_find(g, id);

	if (n == NULL)
		return;
	fetch_nbr_down(g, n);
	pend_forget(g, n->slot);
	nbr_free(g, n);
	if (w != NULL) {
		w->since = now; /* given connect_ns to come back */
		g->wish_at = now;
	}
}

/* ---- anti-entropy and timers ---------------------------------------------------------- */

static void anti_entropy(struct gossip *g, uint64_t now)
{
	size_t active = n_active(g, now), pick;

	g->ae_at = now + jitter(g, g->c.ae_ns);
	if (active > 0) {
		pick = grand(g) % active;
		for (size_t s = 0; s < g->n_slots; s++)
			if (g->nbrs[s] != NULL && nbr_active(g, g->nbrs[s], now) && pick-- == 0) {
				send_summary(g, g->nbrs[s], now);
				break;
			}
	}
	/* Every neighbour we want hears that we want it, keepalive_ns apart at most. */
	for (size_t s = 0; s < g->n_slots; s++) {
		struct nbr *n = g->nbrs[s];

		if (n != NULL && n->wished && now - n->summary_tx >= g->c.keepalive_ns)
			send_summary(g, n, now);
	}
}

uint64_t gossip_timers(struct gossip *g, uint64_t now)
{
	uint64_t next = store_timers(g, now);

	if (g->flush_at <= now)
		flush(g, now);
	if (g->ae_at <= now)
		anti_entropy(g, now);
	if (g->wish_at <= now) {
		review_wishes(g, now);
		g->wish_at = now + WISH_TICK;
	}
	next = min64(next, fetch_timers(g, now));
	next = min64(next, g->flush_at);
	next = min64(next, g->ae_at);
	return min64(next, g->wish_at);
}

/* ---- statistics ------------------------------------------------------------------------ */

void gossip_get_stats(const struct gossip *g, struct gossip_stats *s)
{
	*s = g->st;
	s->items = g->s.n_live;
	s->tombstones = g->s.n_tomb;
	s->wants = g->n_wants;
	s->neighbours = g->n_up;
	s->wished = g->n_wishes;
	s->active = 0;
	s->memory = sizeof(*g) + g->c.mtu + store_memory(g) + fetch_memory(g) +
	            g->n_slots * sizeof(*g->nbrs) + g->n_wishes * sizeof(*g->wishes) +
	            g->n_roots * GOSSIP_ID_LEN + (g->nmap.mask + 1) * sizeof(struct u64map_slot);
	for (size_t k = 0; k < g->n_slots; k++) {
		const struct nbr *n = g->nbrs[k];

		if (n == NULL)
			continue;
		s->memory += sizeof(*n) + (n->serve ? SERVE_MAX * sizeof(*n->serve) : 0);
		if (n->wished || n->inbound)
			s->active++;
	}
}

bool gossip_get_peer_stats(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN],
                           struct gossip_peer_stats *s)
{
	const struct nbr *n = nbr_find(g, id);

	if (n == NULL)
		return false;
	*s = n->st;
	s->wished = n->wished;
	s->active = n->wished || n->inbound;
	s->credit = n->credit;
	return true;
}
