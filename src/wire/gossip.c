#include "wire/gossip.h"

#include <string.h>

#include "wire/cursor.h"

static uint32_t level_nodes(uint8_t level)
{
	return (uint32_t)1 << (6 * level); /* 64^level */
}

static bool entry_ok(const uint8_t *p)
{
	return wire_get32(p + 49) <= WIRE_GOSSIP_MAX_ITEM;
}

static bool pull_ok(const uint8_t *p)
{
	uint32_t off = wire_get32(p + 49);

	return off <= WIRE_GOSSIP_MAX_ITEM && off % WIRE_GOSSIP_UNIT == 0;
}

/* A list of n records of size bytes each, exactly filling what is left of
 * the input, each passing ok (NULL: any). */
static const uint8_t *get_list(struct cur *k, unsigned n, size_t size, bool (*ok)(const uint8_t *))
{
	const uint8_t *p;

	cur_check(k, cur_left(k) == (size_t)n * size);
	p = cur_take(k, (size_t)n * size);
	for (unsigned i = 0; p != NULL && ok != NULL && i < n; i++)
		cur_check(k, ok(p + (size_t)i * size));
	return p;
}

bool wire_gossip_get(struct wire_gossip *m, const uint8_t *in, size_t len)
{
	struct cur k = cur_in(in, len);
	size_t rest;

	if (len < 1)
		return false;
	memset(m, 0, sizeof(*m));
	m->type = cur_get8(&k);
	switch (m->type) {
	case WIRE_GOSSIP_SUMMARY:
		m->flags = cur_get8(&k);
		m->count = cur_get32(&k);
		m->settled = cur_get64(&k);
		m->current = cur_get64(&k);
		return cur_end(&k) && (m->flags & ~WIRE_GOSSIP_WISHED) == 0;
	case WIRE_GOSSIP_TREE:
		m->level = cur_get8(&k);
		m->index = cur_get32(&k);
		m->first = cur_get8(&k);
		m->n = cur_get8(&k);
		m->list = get_list(&k, m->n, WIRE_GOSSIP_CHILD, NULL);
		return cur_end(&k) && m->level < WIRE_GOSSIP_DEPTH &&
		       m->index < level_nodes(m->level) && m->n > 0 &&
		       (unsigned)m->first + m->n <= WIRE_GOSSIP_FANOUT;
	case WIRE_GOSSIP_DIGEST:
		m->flags = cur_get8(&k);
		m->level = cur_get8(&k);
		m->index = cur_get32(&k);
		m->n = cur_get8(&k);
		m->list = get_list(&k, m->n, WIRE_GOSSIP_ENTRY, entry_ok);
		return cur_end(&k) && (m->flags & ~WIRE_GOSSIP_REPLY) == 0 && m->level >= 1 &&
		       m->level <= WIRE_GOSSIP_DEPTH && m->index < level_nodes(m->level);
	case WIRE_GOSSIP_ANNOUNCE:
	case WIRE_GOSSIP_PULL:
		m->n = cur_get8(&k);
		cur_check(&k, m->n > 0);
		if (m->type == WIRE_GOSSIP_ANNOUNCE)
			m->list = get_list(&k, m->n, WIRE_GOSSIP_ENTRY, entry_ok);
		else
			m->list = get_list(&k, m->n, WIRE_GOSSIP_PULL_LEN, pull_ok);
		return cur_end(&k);
	case WIRE_GOSSIP_ITEM:
		m->kind = cur_get8(&k);
		m->id = cur_take(&k, WIRE_GOSSIP_ID_LEN);
		m->version = cur_get64(&k);
		m->chash = cur_get64(&k);
		m->total = cur_get32(&k);
		m->offset = cur_get32(&k);
		m->data = cur_rest(&k, &rest);
		cur_check(&k, rest <= WIRE_GOSSIP_MAX_ITEM);
		m->len = (uint32_t)rest;
		/* Inside the item, on the unit grid, and a whole number of units
		 * unless it is the item's last piece; no empty piece but of an
		 * empty item. */
		return cur_end(&k) && m->total <= WIRE_GOSSIP_MAX_ITEM &&
		       m->offset % WIRE_GOSSIP_UNIT == 0 && m->offset <= m->total &&
		       m->len <= m->total - m->offset && (m->len > 0 || m->total == 0) &&
		       (m->offset + m->len == m->total || m->len % WIRE_GOSSIP_UNIT == 0);
	default:
		return false;
	}
}

void wire_gossip_child_at(const struct wire_gossip *m, unsigned i, uint64_t *hash, uint16_t *count)
{
	const uint8_t *p = m->list + (size_t)i * WIRE_GOSSIP_CHILD;

	*hash = wire_get64(p);
	*count = wire_get16(p + 8);
}

static void entry_read(const uint8_t *p, uint8_t *kind, uint8_t id[WIRE_GOSSIP_ID_LEN],
                       uint64_t *version, uint64_t *chash)
{
	*kind = p[0];
	memcpy(id, p + 1, WIRE_GOSSIP_ID_LEN);
	*version = wire_get64(p + 33);
	*chash = wire_get64(p + 41);
}

void wire_gossip_entry_at(const struct wire_gossip *m, unsigned i, struct wire_gossip_entry *e)
{
	const uint8_t *p = m->list + (size_t)i * WIRE_GOSSIP_ENTRY;

	entry_read(p, &e->kind, e->id, &e->version, &e->chash);
	e->len = wire_get32(p + 49);
}

void wire_gossip_pull_at(const struct wire_gossip *m, unsigned i, struct wire_gossip_pull *p)
{
	const uint8_t *q = m->list + (size_t)i * WIRE_GOSSIP_PULL_LEN;

	entry_read(q, &p->kind, p->id, &p->version, &p->chash);
	p->offset = wire_get32(q + 49);
	p->length = wire_get32(q + 53);
}

size_t wire_gossip_summary_put(uint8_t out[WIRE_GOSSIP_SUMMARY_LEN], uint8_t flags, uint32_t count,
                               uint64_t settled, uint64_t current)
{
	out[0] = WIRE_GOSSIP_SUMMARY;
	out[1] = flags;
	wire_put32(out + 2, count);
	wire_put64(out + 6, settled);
	wire_put64(out + 14, current);
	return WIRE_GOSSIP_SUMMARY_LEN;
}

size_t wire_gossip_tree_hdr_put(uint8_t out[WIRE_GOSSIP_TREE_HDR], uint8_t level, uint32_t index,
                                uint8_t first, uint8_t n)
{
	out[0] = WIRE_GOSSIP_TREE;
	out[1] = level;
	wire_put32(out + 2, index);
	out[6] = first;
	out[7] = n;
	return WIRE_GOSSIP_TREE_HDR;
}

size_t wire_gossip_digest_hdr_put(uint8_t out[WIRE_GOSSIP_DIGEST_HDR], uint8_t flags, uint8_t level,
                                  uint32_t index, uint8_t n)
{
	out[0] = WIRE_GOSSIP_DIGEST;
	out[1] = flags;
	out[2] = level;
	wire_put32(out + 3, index);
	out[7] = n;
	return WIRE_GOSSIP_DIGEST_HDR;
}

size_t wire_gossip_list_hdr_put(uint8_t out[WIRE_GOSSIP_LIST_HDR], uint8_t type, uint8_t n)
{
	out[0] = type;
	out[1] = n;
	return WIRE_GOSSIP_LIST_HDR;
}

size_t wire_gossip_child_put(uint8_t out[WIRE_GOSSIP_CHILD], uint64_t hash, uint32_t count)
{
	wire_put64(out, hash);
	wire_put16(out + 8, count > UINT16_MAX ? UINT16_MAX : (uint16_t)count);
	return WIRE_GOSSIP_CHILD;
}

static void entry_write(uint8_t *p, uint8_t kind, const uint8_t id[WIRE_GOSSIP_ID_LEN],
                        uint64_t version, uint64_t chash)
{
	p[0] = kind;
	memcpy(p + 1, id, WIRE_GOSSIP_ID_LEN);
	wire_put64(p + 33, version);
	wire_put64(p + 41, chash);
}

size_t wire_gossip_entry_put(uint8_t out[WIRE_GOSSIP_ENTRY], const struct wire_gossip_entry *e)
{
	entry_write(out, e->kind, e->id, e->version, e->chash);
	wire_put32(out + 49, e->len);
	return WIRE_GOSSIP_ENTRY;
}

size_t wire_gossip_pull_put(uint8_t out[WIRE_GOSSIP_PULL_LEN], const struct wire_gossip_pull *p)
{
	entry_write(out, p->kind, p->id, p->version, p->chash);
	wire_put32(out + 49, p->offset);
	wire_put32(out + 53, p->length);
	return WIRE_GOSSIP_PULL_LEN;
}

size_t wire_gossip_item_hdr_put(uint8_t out[WIRE_GOSSIP_ITEM_HDR], uint8_t kind,
                                const uint8_t id[WIRE_GOSSIP_ID_LEN], uint64_t version,
                                uint64_t chash, uint32_t total, uint32_t offset)
{
	out[0] = WIRE_GOSSIP_ITEM;
	out[1] = kind;
	memcpy(out + 2, id, WIRE_GOSSIP_ID_LEN);
	wire_put64(out + 34, version);
	wire_put64(out + 42, chash);
	wire_put32(out + 50, total);
	wire_put32(out + 54, offset);
	return WIRE_GOSSIP_ITEM_HDR;
}

size_t wire_gossip_put(uint8_t *out, size_t cap, const struct wire_gossip *m)
{
	size_t n = 0, need;

	switch (m->type) {
	case WIRE_GOSSIP_SUMMARY:
		if (cap < WIRE_GOSSIP_SUMMARY_LEN || (m->flags & ~WIRE_GOSSIP_WISHED) != 0)
			return 0;
		return wire_gossip_summary_put(out, m->flags, m->count, m->settled, m->current);
	case WIRE_GOSSIP_TREE:
		need = WIRE_GOSSIP_TREE_HDR + (size_t)m->n * WIRE_GOSSIP_CHILD;
		if (cap < need || m->level >= WIRE_GOSSIP_DEPTH ||
		    m->index >= level_nodes(m->level) || m->n == 0 ||
		    (unsigned)m->first + m->n > WIRE_GOSSIP_FANOUT)
			return 0;
		n = wire_gossip_tree_hdr_put(out, m->level, m->index, m->first, m->n);
		for (unsigned i = 0; i < m->n; i++) {
			uint64_t h;
			uint16_t c;

			wire_gossip_child_at(m, i, &h, &c);
			n += wire_gossip_child_put(out + n, h, c);
		}
		return n;
	case WIRE_GOSSIP_DIGEST:
	case WIRE_GOSSIP_ANNOUNCE:
		need = (m->type == WIRE_GOSSIP_DIGEST ? WIRE_GOSSIP_DIGEST_HDR
		                                      : WIRE_GOSSIP_LIST_HDR) +
		       (size_t)m->n * WIRE_GOSSIP_ENTRY;
		if (cap < need)
			return 0;
		if (m->type == WIRE_GOSSIP_DIGEST) {
			if ((m->flags & ~WIRE_GOSSIP_REPLY) != 0 || m->level < 1 ||
			    m->level > WIRE_GOSSIP_DEPTH || m->index >= level_nodes(m->level))
				return 0;
			n = wire_gossip_digest_hdr_put(out, m->flags, m->level, m->index, m->n);
		} else {
			if (m->n == 0)
				return 0;
			n = wire_gossip_list_hdr_put(out, m->type, m->n);
		}
		for (unsigned i = 0; i < m->n; i++) {
			struct wire_gossip_entry e;

			wire_gossip_entry_at(m, i, &e);
			if (e.len > WIRE_GOSSIP_MAX_ITEM)
				return 0;
			n += wire_gossip_entry_put(out + n, &e);
		}
		return n;
	case WIRE_GOSSIP_PULL:
		need = WIRE_GOSSIP_LIST_HDR + (size_t)m->n * WIRE_GOSSIP_PULL_LEN;
		if (cap < need || m->n == 0)
			return 0;
		n = wire_gossip_list_hdr_put(out, m->type, m->n);
		for (unsigned i = 0; i < m->n; i++) {
			struct wire_gossip_pull p;

			wire_gossip_pull_at(m, i, &p);
			if (p.offset > WIRE_GOSSIP_MAX_ITEM || p.offset % WIRE_GOSSIP_UNIT != 0)
				return 0;
			n += wire_gossip_pull_put(out + n, &p);
		}
		return n;
	case WIRE_GOSSIP_ITEM:
		if (cap < WIRE_GOSSIP_ITEM_HDR || m->len > cap - WIRE_GOSSIP_ITEM_HDR ||
		    m->total > WIRE_GOSSIP_MAX_ITEM || m->offset % WIRE_GOSSIP_UNIT != 0 ||
		    m->offset > m->total || m->len > m->total - m->offset ||
		    (m->len == 0 && m->total != 0) ||
		    (m->offset + m->len != m->total && m->len % WIRE_GOSSIP_UNIT != 0))
			return 0;
		n = wire_gossip_item_hdr_put(out, m->kind, m->id, m->version, m->chash, m->total,
		                             m->offset);
		if (m->len > 0)
			memcpy(out + n, m->data, m->len);
		return n + m->len;
	default:
		return 0;
	}
}
