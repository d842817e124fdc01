/*
 * Neighbours: the peers whose sessions are up, what they may make us send
 * (two token buckets: one of the neighbour's, one for all of them), and
 * the one place messages leave the engine.
 */
#include <stdlib.h>
#include <string.h>

#include "gossip/internal.h"

uint8_t *msg_buf(struct gossip *g)
{
	return g->buf;
}

struct nbr *nbr_find(const struct gossip *g, const uint8_t id[GOSSIP_ID_LEN])
{
	struct nbr *n = u64map_get(&g->nmap, key_hash(g, 0, id));

	return n != NULL && memcmp(n->id, id, GOSSIP_ID_LEN) == 0 ? n : NULL;
}

struct nbr *nbr_add(struct gossip *g, uint64_t now, const uint8_t id[GOSSIP_ID_LEN], size_t mtu)
{
	uint64_t key = key_hash(g, 0, id);
	struct nbr *n;
	size_t slot;

	if (u64map_get(&g->nmap, key) != NULL)
		return NULL; /* another id with the same keyed hash: not one we can tell apart */
	for (slot = 0; slot < g->n_slots && g->nbrs[slot] != NULL; slot++)
		;
	if (slot == g->n_slots) {
		size_t cap = g->n_slots ? g->n_slots * 2 : 16;
		struct nbr **v = realloc(g->nbrs, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		memset(v + g->n_slots, 0, (cap - g->n_slots) * sizeof(*v));
		g->nbrs = v;
		g->n_slots = cap;
	}
	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	if (u64map_put(&g->nmap, key, n) != 0) {
		free(n);
		return NULL;
	}
	memcpy(n->id, id, GOSSIP_ID_LEN);
	n->key = key;
	n->slot = (uint32_t)slot;
	n->mtu = mtu == 0 || mtu > g->c.mtu ? g->c.mtu
	         : mtu < GOSSIP_MIN_MTU     ? GOSSIP_MIN_MTU
	                                    : mtu;
	n->up_at = now;
	n->tokens = (struct bucket){g->c.reply_burst, now};
	n->serve_at = UINT64_MAX;
	n->fl_next = UINT64_MAX;
	n->credit = CREDIT_MAX;
	n->st.up = true;
	g->nbrs[slot] = n;
	g->n_up++;
	return n;
}

void nbr_free(struct gossip *g, struct nbr *n)
{
	for (unsigned k = 0; k < n->serve_n; k++)
		gossip_blob_unref(n->serve[(n->serve_head + k) % SERVE_MAX].b);
	free(n->serve);
	(void)u64map_del(&g->nmap, n->key);
	g->nbrs[n->slot] = NULL;
	g->n_up--;
	free(n);
}

bool nbr_active(const struct gossip *g, const struct nbr *n, uint64_t now)
{
	return n->wished || (n->inbound && now - n->wished_rx < g->c.active_ns);
}

static void refill(struct bucket *b, uint64_t now, uint32_t rate, uint32_t burst)
{
	uint64_t fill_ns = (uint64_t)burst * 1000000000ULL / rate;
	uint64_t dt = now > b->at ? now - b->at : 0;

	if (dt >= fill_ns)
		b->tokens = burst;
	else
		b->tokens = min64(burst, b->tokens + dt * rate / 1000000000ULL);
	/* Keep the remainder of a partial token: advance only by what was credited. */
	b->at = dt >= fill_ns ? now : b->at + (dt * rate / 1000000000ULL) * 1000000000ULL / rate;
}

static uint64_t when(const struct bucket *b, uint64_t now, uint32_t rate, size_t len)
{
	if (b->tokens >= len)
		return now;
	return now + ((uint64_t)len - b->tokens) * 1000000000ULL / rate + 1;
}

uint64_t nbr_budget_at(const struct gossip *g, const struct nbr *n, uint64_t now, size_t len)
{
	struct bucket a = n->tokens, t = g->total;

	refill(&a, now, g->c.reply_rate, g->c.reply_burst);
	refill(&t, now, g->c.total_rate, g->c.total_burst);
	uint64_t x = when(&a, now, g->c.reply_rate, len), y = when(&t, now, g->c.total_rate, len);

	return x > y ? x : y;
}

bool nbr_send(struct gossip *g, struct nbr *n, uint64_t now, size_t len, bool charged)
{
	if (charged) {
		refill(&n->tokens, now, g->c.reply_rate, g->c.reply_burst);
		refill(&g->total, now, g->c.total_rate, g->c.total_burst);
		if (n->tokens.tokens < len || g->total.tokens < len)
			return false;
		n->tokens.tokens -= len;
		g->total.tokens -= len;
	}
	g->st.tx_msgs++;
	g->st.tx_bytes += len;
	g->st.tx_by_type[g->buf[0] & 7]++;
	n->st.tx_msgs++;
	n->st.tx_bytes += len;
	g->c.send(g->c.ctx, n->id, g->buf, len);
	return true;
}

void count_drop(struct gossip *g, struct nbr *n, enum gossip_drop d)
{
	g->st.drops[d]++;
	if (n != NULL) {
		n->st.drops++;
		if (d == GOSSIP_DROP_REJECTED)
			n->st.rejected++;
	}
}

bool nbr_announce(struct gossip *g, struct nbr *n, uint64_t now, const uint32_t *es, size_t k,
                  bool charged)
{
	size_t per = (n->mtu - WIRE_GOSSIP_LIST_HDR) / WIRE_GOSSIP_ENTRY;
	uint8_t *buf = msg_buf(g);

	if (per > 255)
		per = 255;
	for (size_t done = 0; done < k;) {
		size_t m = k - done < per ? k - done : per, len = WIRE_GOSSIP_LIST_HDR;

		for (size_t j = 0; j < m; j++) {
			const struct gossip_blob *b = ent(g, es[done + j])->blob;
			struct wire_gossip_entry e = {.kind = b->kind,
			                              .version = b->version,
			                              .chash = b->chash,
			                              .len = b->len};

			memcpy(e.id, b->id, GOSSIP_ID_LEN);
			len += wire_gossip_entry_put(buf + len, &e);
		}
		wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_ANNOUNCE, (uint8_t)m);
		if (!nbr_send(g, n, now, len, charged)) {
			count_drop(g, n, GOSSIP_DROP_RATE_LIMITED);
			return false;
		}
		done += m;
	}
	return true;
}
