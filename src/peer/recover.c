/*
 * Loss recovery, receiving side: reassembly of FEC blocks, loss statistics
 * for the reports, and the table of missing counters that drives NACKs.
 *
 * A source is kept in its block while the block may need it. One of the
 * interactive class is delivered the moment it arrives; those of the bulk
 * and default classes are delivered in the order they were sent: while a
 * source sent earlier is missing, the later ones are held until it is
 * rebuilt or passed over after YIP_ORDER_WAIT_NS (order_run). Repairs say
 * how many sources the block has (K); as soon as K symbols of a block are
 * in, the missing sources are rebuilt, checked against the replay window of
 * the keys they were sent under (a rebuilt packet is delivered at most
 * once, and never if the original came first) and delivered, in order
 * where their class is.
 *
 * Memory: the block table (struct yip_rx_state) comes with the first block,
 * symbol buffers in chunks of YIP_RX_CHUNK as blocks need them (up to
 * YIP_RX_SLOTS), the table of missing counters with the first gap; all are
 * released after YIP_RECOVERY_IDLE_NS without use.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

#define BLOCK_TTL_NS 500000000ULL       /* an incomplete block is given up after this */
#define MISS_TTL_NS  (1 * YIP_NS_PER_S) /* a missing counter is forgotten after this */
#define MAX_GAP      256                /* larger jumps are not tracked counter by counter */

_Static_assert(YIP_RX_SLOTS % YIP_RX_CHUNK == 0, "whole chunks");
_Static_assert(FEC_BULK_LANES == WIRE_FEC_MAX_LANES, "the lanes an idx can carry");

static void resolve(struct yip_peer *p, const struct yip_keypair *kp, uint64_t counter);

static uint8_t *slot_buf(const struct yip_peer *p, uint16_t slot)
{
	return p->fec.pool[slot / YIP_RX_CHUNK] + (size_t)(slot % YIP_RX_CHUNK) * p->dev->sym_cap;
}

/* One more chunk of symbol buffers; false if there can be none. */
static bool pool_grow(struct yip_peer *p)
{
	struct yip_fec *f = &p->fec;
	unsigned c = f->n_chunks;

	if (c == YIP_RX_SLOTS / YIP_RX_CHUNK)
		return false;
	f->pool[c] = malloc((size_t)YIP_RX_CHUNK * p->dev->sym_cap);
	if (f->pool[c] == NULL)
		return false;
	f->n_chunks++;
	for (unsigned i = YIP_RX_CHUNK; i-- > 0;)
		f->rx->free_slots[f->n_free++] = (uint16_t)(c * YIP_RX_CHUNK + i);
	return true;
}

/* Where a block's state lives: each class has its own range of slots. */
static unsigned block_slot(uint16_t id)
{
	unsigned n = wire_block_num(id);

	switch (wire_block_class(id)) {
	case FLOW_BULK:
		return n % 32;
	case FLOW_DEFAULT:
		return 32 + n % 24;
	default:
		return 56 + n % 8;
	}
}

_Static_assert(YIP_RX_BLOCKS == 64, "block_slot's ranges");

/*
 * Classes whose sources come out in the order they were sent. Interactive
 * blocks are single packets whose repairs follow at once: nothing to wait
 * for.
 */
static bool ordered(unsigned cls)
{
	return cls == FLOW_BULK || cls == FLOW_DEFAULT;
}

static void slot_free(struct yip_peer *p, uint16_t slot)
{
	p->fec.rx->free_slots[p->fec.n_free++] = slot;
}

/* Frees what a block no longer needs: once it is done, its repairs and the
 * sources already delivered. */
static void block_trim(struct yip_peer *p, struct yip_rx_block *b)
{
	uint64_t spent = b->have_src & b->delivered;

	if (!b->done)
		return;
	for (unsigned j = 0; j < FEC_MAX_R; j++)
		if (b->have_rep & (1U << j))
			slot_free(p, b->slot_rep[j]);
	b->have_rep = 0;
	for (unsigned i = 0; spent; i++, spent >>= 1)
		if (spent & 1) {
			slot_free(p, b->slot_src[i]);
			b->have_src &= ~(1ULL << i);
		}
}

/* Delivers held source i of a block (it must be held, and not delivered yet). */
static void src_deliver(struct yip_peer *p, uint64_t now, struct yip_rx_block *b, unsigned i)
{
	const uint8_t *s = slot_buf(p, b->slot_src[i]);

	b->delivered |= 1ULL << i;
	frame_deliver(p, now, s + WIRE_SYM_HDR, b->src_len[i] - WIRE_SYM_HDR);
}

/* Delivers every source a block still holds back, in order. */
static void block_flush(struct yip_peer *p, uint64_t now, struct yip_rx_block *b)
{
	uint64_t held = b->have_src & ~b->delivered;

	for (unsigned i = 0; held; i++, held >>= 1)
		if (held & 1)
			src_deliver(p, now, b, i);
}

/* Gives a block up: what it held back is delivered, what it could not
 * rebuild is counted as unrecovered. */
static void block_retire(struct yip_peer *p, uint64_t now, struct yip_rx_block *b)
{
	if (b->used && !b->done && b->k > 0) {
		unsigned have = (unsigned)__builtin_popcountll(b->have_src);

		if (have < b->k)
			p->stats.fec_unrecovered += b->k - have;
	}
	block_flush(p, now, b);
	b->done = true;
	block_trim(p, b);
	b->used = false;
}

/*
 * Every symbol buffer is free or held by a block, and one block holds at
 * most FEC_MAX_K + FEC_MAX_R: when none is free, another block holds some.
 */
_Static_assert(FEC_MAX_K + FEC_MAX_R < YIP_RX_CHUNK * 2, "a block cannot hold two chunks");

/*
 * A free symbol buffer: a new chunk while there may be more, else the
 * oldest other block is given up for its buffers. -1 if there is none
 * (out of memory with fewer than two chunks).
 */
static int slot_take(struct yip_peer *p, uint64_t now, const struct yip_rx_block *keep)
{
	struct yip_fec *f = &p->fec;

	if (f->n_free == 0 && !pool_grow(p) && f->n_chunks >= 2) {
		struct yip_rx_block *oldest = NULL;

		for (unsigned i = 0; i < YIP_RX_BLOCKS; i++) {
			struct yip_rx_block *b = &f->rx->blocks[i];

			if (b != keep && b->used && (b->have_src || b->have_rep) &&
			    (oldest == NULL || b->first < oldest->first))
				oldest = b;
		}
		block_retire(p, now, oldest);
	}
	if (f->n_free == 0)
		return -1;
	return f->rx->free_slots[--f->n_free];
}

static struct yip_rx_block *block_find(struct yip_peer *p, uint16_t id)
{
	struct yip_rx_block *b;

	if (p->fec.rx == NULL)
		return NULL;
	b = &p->fec.rx->blocks[block_slot(id)];
	return b->used && b->id == id ? b : NULL;
}

/* The block with this id, made if need be; NULL only without memory for the
 * block table. */
static struct yip_rx_block *block_get(struct yip_peer *p, uint64_t now, uint16_t id, unsigned lanes,
                                      uint32_t kp_index)
{
	struct yip_rx_block *b;

	if (p->fec.rx == NULL && (p->fec.rx = calloc(1, sizeof(*p->fec.rx))) == NULL)
		return NULL;
	b = &p->fec.rx->blocks[block_slot(id)];
	if (b->used && b->id == id)
		return b;
	block_retire(p, now, b);
	memset(b, 0, sizeof(*b));
	b->used = true;
	b->id = id;
	b->first = now;
	b->lanes = (uint8_t)lanes;
	b->kp_index = kp_index;
	return b;
}

/* ---- the order of a class's sources ------------------------------------------------ */

/* How far block number n lies ahead of m (negative: behind). */
static int block_ahead(unsigned n, unsigned m)
{
	int d = (int)((n - m) & WIRE_BLOCK_MASK);

	return d >= (int)(WIRE_BLOCK_MASK + 1) / 2 ? d - (int)(WIRE_BLOCK_MASK + 1) : d;
}

/* Source idx of block number num in a class with the given lanes: its group
 * and its place there. */
static void place_of(unsigned lanes, unsigned num, unsigned idx, unsigned *group, unsigned *pos)
{
	*group = num - num % lanes;
	*pos = idx * lanes + num % lanes;
}

/* Whether a place comes before another one (serially, in block numbers). */
static bool place_before(unsigned g1, unsigned pos1, unsigned g2, unsigned pos2)
{
	int d = block_ahead(g1, g2);

	return d < 0 || (d == 0 && pos1 < pos2);
}

/* When source i of a block came (arrived, or was rebuilt). */
static uint64_t src_time(const struct yip_rx_block *b, unsigned i)
{
	return b->first + ((uint64_t)b->src_at[i] << YIP_RX_AT_SHIFT);
}

static void src_stamp(struct yip_rx_block *b, unsigned i, uint64_t now)
{
	uint64_t at = (now - b->first) >> YIP_RX_AT_SHIFT;

	b->src_at[i] = (uint16_t)(at < UINT16_MAX ? at : UINT16_MAX);
}

/* A source held back: its place in the order and when it came. */
struct held_src {
	unsigned group, pos, lanes;
	uint64_t at;
};

/* The earliest source a class's blocks hold back at or after its order:
 * false if they hold none. */
static bool order_next_held(const struct yip_peer *p, unsigned cls, struct held_src *h)
{
	const struct yip_rx_order *o = &p->fec.order[cls];
	struct held_src best = {0, 0, 1, 0};
	bool found = false;

	for (unsigned s = 0; p->fec.rx != NULL && s < YIP_RX_BLOCKS; s++) {
		const struct yip_rx_block *b = &p->fec.rx->blocks[s];
		uint64_t held = b->have_src & ~b->delivered;

		if (!b->used || wire_block_class(b->id) != cls)
			continue;
		for (unsigned i = 0; held; i++, held >>= 1) {
			unsigned g, pos;

			if (!(held & 1))
				continue;
			place_of(b->lanes, wire_block_num(b->id), i, &g, &pos);
			if (place_before(g, pos, o->group, o->pos))
				continue; /* behind the order: it goes out as it comes */
			if (!found || place_before(g, pos, best.group, best.pos)) {
				found = true;
				best = (struct held_src){g, pos, b->lanes, src_time(b, i)};
			}
			break; /* a block's later sources come later still */
		}
	}
	*h = best;
	return found;
}

/* Moves a class's order to the earliest source its blocks hold back; false
 * if they hold none. */
static bool order_skip(struct yip_peer *p, unsigned cls)
{
	struct yip_rx_order *o = &p->fec.order[cls];
	struct held_src h;

	if (!order_next_held(p, cls, &h))
		return false;
	o->group = (uint16_t)h.group;
	o->pos = (uint16_t)h.pos;
	o->lanes = (uint8_t)h.lanes;
	return true;
}

/*
 * Delivers a class's held sources as far as they go in order. A missing
 * source holds the later ones back until it is rebuilt or, after
 * YIP_ORDER_WAIT_NS, is passed over (ARQ or the inner protocol recover it
 * later; it is delivered whenever it comes).
 *
 * The wait counts from when the earliest source held behind the gap came,
 * not from when the order reached the gap: after one gap is filled or
 * passed, what is held behind the next may have waited most of its time
 * already. So no source is held much longer than YIP_ORDER_WAIT_NS,
 * however many gaps (in as many lanes) lie before it, and a resend, which
 * comes a NACK grace and a round trip after its loss, finds nothing held
 * back that it would overtake.
 */
static void order_run(struct yip_peer *p, uint64_t now, unsigned cls)
{
	struct yip_rx_order *o = &p->fec.order[cls];
	/* Whether what this run finds held may have waited: the order stood
	 * at a gap (or a group's end) for a while, or delivered a source that
	 * had waited. Then a new wait starts from when that came. */
	bool waited = o->stalled != 0 && now - o->stalled >= (1ULL << YIP_RX_AT_SHIFT);

	while (o->started) {
		const struct yip_rx_block *first = block_find(p, wire_block(cls, o->group));
		unsigned lanes, lane, idx;
		struct yip_rx_block *b;

		/* The group's first block tells its lanes. Without it the order
		 * can only be at the group's start (place 0, lane 0), or past it
		 * by order_skip, which set them. */
		if (first != NULL)
			o->lanes = first->lanes;
		lanes = o->lanes ? o->lanes : 1;
		lane = o->pos % lanes;
		idx = o->pos / lanes;
		b = block_find(p, wire_block(cls, o->group + lane));

		/* The end of the group: the lane's block has no source this far
		 * (its K is known), or a lane has no block at all while lane 0
		 * shows the group had at most one row (fewer sources than lanes). */
		if (idx >= FEC_MAX_K || (b != NULL && b->k && idx >= b->k) ||
		    (b == NULL && lane > 0 && idx == 0 && first != NULL && first->k == 1)) {
			o->group = (uint16_t)((o->group + lanes) & WIRE_BLOCK_MASK);
			o->pos = 0;
			continue;
		}
		if (b != NULL && (b->delivered >> idx & 1)) {
			o->pos++;
			continue;
		}
		if (b != NULL && (b->have_src >> idx & 1)) {
			waited |= src_time(b, idx) + (1ULL << YIP_RX_AT_SHIFT) <= now;
			src_deliver(p, now, b, idx);
			block_trim(p, b);
			o->pos++;
			o->stalled = 0;
			continue;
		}
		if (b != NULL && ((b->done && b->k) || b->passed)) {
			/* FEC is through with the block, or took too long with it: a
			 * block is rebuilt all at once, so its other missing sources
			 * would not come sooner. Passed over. */
			o->pos++;
			continue;
		}
		/* Missing: wait for it, but not for long. */
		if (o->stalled == 0) {
			struct held_src h;

			o->stalled = now;
			if (waited && order_next_held(p, cls, &h) && h.at < now)
				o->stalled = h.at;
			if (now - o->stalled < YIP_ORDER_WAIT_NS) {
				schedule_peer(p, o->stalled + YIP_ORDER_WAIT_NS);
				return;
			}
		}
		if (now - o->stalled < YIP_ORDER_WAIT_NS)
			return;
		o->stalled = 0;
		if (b != NULL)
			b->passed = true;
		if (!order_skip(p, cls))
			o->started = false; /* nothing held: start again with what comes */
	}
}

/* Whether source idx of block number num comes at or after the class's order. */
static bool order_pending(const struct yip_rx_order *o, unsigned lanes, unsigned num, unsigned idx)
{
	unsigned g, pos;

	place_of(lanes, num, idx, &g, &pos);
	return !place_before(g, pos, o->group, o->pos);
}

/* ---- rebuilding ---------------------------------------------------------------------- */

/* Rebuilds the missing sources once K symbols are in. */
static void block_try(struct yip_peer *p, uint64_t now, struct yip_rx_block *b)
{
	uint8_t *src[FEC_MAX_K], *rep[FEC_MAX_R];
	bool have_src[FEC_MAX_K], have_rep[FEC_MAX_R];
	unsigned have = (unsigned)__builtin_popcountll(b->have_src | b->delivered);
	unsigned reps = (unsigned)__builtin_popcount(b->have_rep);
	bool in_order = ordered(wire_block_class(b->id));
	struct yip_keypair *kp;

	if (b->done || b->k == 0)
		return;
	if (have >= b->k) {
		b->done = true; /* nothing was lost */
		block_trim(p, b);
		return;
	}
	if (have + reps < b->k)
		return;
	/* A source delivered and freed early cannot help: every one of them
	 * is still held here, as nothing is freed before the block is done. */
	for (unsigned i = 0; i < b->k; i++) {
		have_src[i] = b->have_src & (1ULL << i);
		if (!have_src[i]) {
			int slot = slot_take(p, now, b);

			if (slot < 0) { /* no memory to rebuild into: given up */
				b->done = true;
				block_trim(p, b);
				return;
			}
			b->slot_src[i] = (uint16_t)slot;
			b->have_src |= 1ULL << i;  /* owns the slot now; filled below */
			b->delivered |= 1ULL << i; /* until it proves to be a packet */
			b->src_len[i] = 0;
		}
		src[i] = slot_buf(p, b->slot_src[i]);
		if (have_src[i] && b->src_len[i] < b->len)
			memset(src[i] + b->src_len[i], 0, b->len - b->src_len[i]);
	}
	for (unsigned j = 0; j < b->r; j++) {
		have_rep[j] = b->have_rep & (1U << j);
		rep[j] = have_rep[j] ? slot_buf(p, b->slot_rep[j]) : NULL;
	}
	b->done = true;
	if (fec_decode(b->k, b->r, b->len, src, have_src, rep, have_rep) < 0) {
		block_trim(p, b);
		return;
	}
	kp = session_for_index(p, b->kp_index);
	for (unsigned i = 0; i < b->k; i++) {
		struct wire_sym sym;

		if (have_src[i])
			continue;
		if (!wire_sym_get(&sym, src[i], b->len) || kp == NULL) {
			yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
			continue;
		}
		if (!replay_update(&kp->replay, sym.counter)) {
			yip_device_drop(p->dev, YIP_DROP_FEC_DUPLICATE);
			continue;
		}
		resolve(p, kp, sym.counter);
		p->stats.fec_recovered++;
		p->fec.rep_recovered++;
		b->src_len[i] = (uint16_t)(WIRE_SYM_HDR + sym.len);
		src_stamp(b, i, now);
		b->delivered &= ~(1ULL << i); /* a packet: to be delivered */
		if (!in_order || !p->fec.order[wire_block_class(b->id)].started) {
			src_deliver(p, now, b, i); /* nothing to keep it in line with */
		} else if (!order_pending(&p->fec.order[wire_block_class(b->id)], b->lanes,
		                          wire_block_num(b->id), i)) {
			p->stats.fec_late++; /* the order stopped waiting for it */
			src_deliver(p, now, b, i);
		}
	}
	block_trim(p, b);
}

void recover_source(struct yip_peer *p, uint64_t now, const struct frame_rx *rx)
{
	unsigned idx = wire_fec_index(rx->h.idx), lanes = wire_fec_lanes(rx->h.idx);
	unsigned cls = wire_block_class(rx->h.block), num = wire_block_num(rx->h.block);
	struct yip_rx_order *o = &p->fec.order[cls];
	struct yip_rx_block *b;
	bool in_order = ordered(cls);
	uint8_t *s;
	int slot;

	/* Lanes the class does not interleave over, or a block whose symbols
	 * disagree on them: from a misbehaving peer. Delivered as it is. */
	if ((lanes > 1 && cls != FLOW_BULK) ||
	    (b = block_get(p, now, rx->h.block, lanes, rx->kp->local_index)) == NULL ||
	    b->lanes != lanes) {
		frame_deliver(p, now, rx->plain, rx->len);
		return;
	}
	if (in_order && !o->started) {
		o->started = true;
		o->lanes = (uint8_t)lanes;
		o->group = (uint16_t)(num - num % lanes);
		o->pos = 0;
		o->stalled = 0;
	}
	/* Kept for the block only while it may still be needed and fits: a
	 * source of a block done, a repeated index or one past K (from a
	 * misbehaving peer), or one larger than our symbol buffers (a peer
	 * with a larger MTU) is delivered as it is. So is one the order has
	 * passed already (it comes late). */
	if (b->done || ((b->have_src | b->delivered) & (1ULL << idx)) || (b->k && idx >= b->k) ||
	    WIRE_SYM_HDR + rx->len > p->dev->sym_cap || (slot = slot_take(p, now, b)) < 0) {
		if (b->k == 0 || idx < b->k)
			b->delivered |= 1ULL << idx; /* the order need not wait for it */
		frame_deliver(p, now, rx->plain, rx->len);
		if (in_order)
			order_run(p, now, cls);
		return;
	}
	p->fec.rx_active = now;
	b->slot_src[idx] = (uint16_t)slot;
	s = slot_buf(p, b->slot_src[idx]);
	wire_sym_put(s, &(struct wire_sym){rx->h.counter, (uint16_t)rx->len});
	memcpy(s + WIRE_SYM_HDR, rx->plain, rx->len);
	b->src_len[idx] = (uint16_t)(WIRE_SYM_HDR + rx->len);
	src_stamp(b, idx, now);
	b->have_src |= 1ULL << idx;
	if (!in_order || !order_pending(o, lanes, num, idx))
		src_deliver(p, now, b, idx); /* no order, or it comes late */
	block_try(p, now, b);
	if (in_order)
		order_run(p, now, cls);
}

void recover_repair(struct yip_peer *p, uint64_t now, const struct frame_rx *rx)
{
	unsigned idx = wire_fec_index(rx->h.idx), cls = wire_block_class(rx->h.block);
	unsigned lanes = wire_fec_lanes(rx->h.idx);
	struct wire_repair m;
	struct yip_rx_block *b;
	int slot;

	if (!wire_fec_symbol(rx->h.idx) || (lanes > 1 && cls != FLOW_BULK) ||
	    !wire_repair_get(&m, rx->plain, rx->len) || m.k == 0 || m.k > FEC_MAX_K || m.r == 0 ||
	    m.r > FEC_MAX_R || idx >= m.r) {
		yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
		return;
	}
	b = block_get(p, now, rx->h.block, lanes, rx->kp->local_index);
	if (b == NULL)
		return; /* no memory for the block table: nothing to rebuild with */
	if (b->lanes != lanes) {
		yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
		return;
	}
	if (m.symlen > p->dev->sym_cap) {
		/* A peer with a larger MTU: its blocks of large packets cannot be
		 * rebuilt here. The block ends at K, and what it misses is not
		 * waited for. */
		yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
		if (b->k == 0 && (m.k == FEC_MAX_K || ((b->have_src | b->delivered) >> m.k) == 0))
			b->k = m.k;
		b->done = true;
		block_trim(p, b);
		if (ordered(cls))
			order_run(p, now, cls);
		return;
	}
	if (b->done)
		return; /* nothing left to rebuild: not a drop */
	if (b->k == 0) {
		/* Sources that claim a position past K would be inconsistent. */
		if (m.k < FEC_MAX_K && ((b->have_src | b->delivered) >> m.k) != 0) {
			yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
			return;
		}
		b->k = m.k;
		b->r = m.r;
		b->len = (uint16_t)m.symlen;
	} else if (b->k != m.k || b->r != m.r || b->len != m.symlen) {
		yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
		return;
	}
	if (b->have_rep & (1U << idx))
		return; /* a second copy of a symbol it has: nothing to do */
	slot = slot_take(p, now, b);
	if (slot < 0)
		return;
	p->fec.rx_active = now;
	b->slot_rep[idx] = (uint16_t)slot;
	memcpy(slot_buf(p, b->slot_rep[idx]), m.sym, m.symlen);
	b->have_rep |= (uint16_t)(1U << idx);
	block_try(p, now, b);
	/* K is known now: the order may move past the block's end. */
	if (ordered(cls))
		order_run(p, now, cls);
}

/* True while a block holds symbol buffers. */
static bool blocks_hold(const struct yip_peer *p)
{
	for (unsigned i = 0; p->fec.rx != NULL && i < YIP_RX_BLOCKS; i++)
		if (p->fec.rx->blocks[i].have_src || p->fec.rx->blocks[i].have_rep)
			return true;
	return false;
}

void recover_free(struct yip_peer *p)
{
	struct yip_fec *f = &p->fec;

	free(f->rx); /* slot numbers and bitmaps only: no packet bytes */
	f->rx = NULL;
	for (unsigned c = 0; c < f->n_chunks; c++) {
		sodium_memzero(f->pool[c], (size_t)YIP_RX_CHUNK * p->dev->sym_cap);
		free(f->pool[c]);
		f->pool[c] = NULL;
	}
	f->n_chunks = f->n_free = 0;
	free(f->missing);
	f->missing = NULL;
}

uint64_t recover_timers(struct yip_peer *p, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; p->fec.rx != NULL && i < YIP_RX_BLOCKS; i++) {
		struct yip_rx_block *b = &p->fec.rx->blocks[i];

		if (!b->used || (b->done && !b->have_src && !b->have_rep))
			continue;
		if (now - b->first >= BLOCK_TTL_NS)
			block_retire(p, now, b);
		else if (b->first + BLOCK_TTL_NS < next)
			next = b->first + BLOCK_TTL_NS;
	}
	/* A class's order waiting for a missing source: at most so long. */
	for (unsigned c = 0; c < FLOW_CLASSES; c++) {
		struct yip_rx_order *o = &p->fec.order[c];

		if (!o->started || o->stalled == 0)
			continue;
		if (now - o->stalled >= YIP_ORDER_WAIT_NS)
			order_run(p, now, c);
		if (o->started && o->stalled)
			next = min64(next, o->stalled + YIP_ORDER_WAIT_NS);
	}
	/* Idle: the buffers are given back (no block holds any by now). */
	if ((p->fec.rx != NULL || p->fec.n_chunks > 0 || p->fec.missing != NULL) &&
	    !blocks_hold(p)) {
		if (now - p->fec.rx_active >= YIP_RECOVERY_IDLE_NS)
			recover_free(p);
		else
			next = min64(next, p->fec.rx_active + YIP_RECOVERY_IDLE_NS);
	}
	return next;
}

uint64_t recover_memory(const struct yip_peer *p)
{
	return (uint64_t)p->fec.n_chunks * YIP_RX_CHUNK * p->dev->sym_cap +
	       (p->fec.rx != NULL ? sizeof(*p->fec.rx) : 0) +
	       (p->fec.missing != NULL ? YIP_MISS_SLOTS * sizeof(*p->fec.missing) : 0);
}

/* --- missing counters ------------------------------------------------------ */

static void miss_add(struct yip_peer *p, uint64_t now, uint64_t counter)
{
	struct yip_missing *m = &p->fec.missing[counter % YIP_MISS_SLOTS];

	m->counter = counter;
	m->seen = now;
	m->last_nack = 0;
	m->nacks = 0;
}

/* The entry of a counter still missing under the tracked keys kp, or NULL. */
static struct yip_missing *miss_find(struct yip_peer *p, const struct yip_keypair *kp,
                                     uint64_t counter)
{
	struct yip_fec *f = &p->fec;
	struct yip_missing *m;

	if (f->missing == NULL || !f->tracking || f->track_index != kp->local_index)
		return NULL;
	m = &f->missing[counter % YIP_MISS_SLOTS];
	return m->seen && m->counter == counter ? m : NULL;
}

/* The packet sent with this counter under kp arrived after all (late, rebuilt or resent). */
static void resolve(struct yip_peer *p, const struct yip_keypair *kp, uint64_t counter)
{
	struct yip_missing *m = miss_find(p, kp, counter);

	if (m != NULL)
		m->seen = 0;
}

bool recover_arq(struct yip_peer *p, struct yip_keypair *kp, uint64_t counter)
{
	struct yip_missing *m;

	if (replay_update(&kp->replay, counter)) {
		resolve(p, kp, counter);
		return true;
	}
	/* Out of the window, the original and a rebuild are refused as too old;
	 * only the table of missing counters still knows whether it came. */
	if (!replay_too_old(&kp->replay, counter))
		return false; /* it did: the original, a rebuild or a resend */
	m = miss_find(p, kp, counter);
	if (m == NULL)
		return false;
	m->seen = 0;
	return true;
}

/*
 * Every authenticated datagram passes here. Counters are per key set and
 * strictly increasing at the sender, so a jump shows how many datagrams
 * went missing in between (a loss run: its length feeds the burst
 * estimate); a counter below the highest is a late arrival.
 */
void recover_observe(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                     uint64_t counter, bool data, bool reliable)
{
	struct yip_fec *f = &p->fec;

	if (kp != p->cur)
		return;
	if (!f->tracking || f->track_index != kp->local_index) {
		f->tracking = true;
		f->track_index = kp->local_index;
		f->highest = counter;
		f->rep_highest = counter;
		f->rep_received++;
		/* Counters missing under the old keys mean nothing under these. */
		if (f->missing != NULL)
			memset(f->missing, 0, YIP_MISS_SLOTS * sizeof(*f->missing));
	} else if (counter > f->highest) {
		uint64_t gap = reliable ? 0 : counter - f->highest - 1;

		if (gap > 0) {
			/* Loss makes reports come faster: have the timers look again. */
			if (f->rx_loss_at == 0 || now - f->rx_loss_at > 1000000000ULL)
				schedule_peer(p, now);
			f->rx_loss_at = now;
			/* A report goes out when this gap's NACK is due, not a whole
			 * report interval later, nor when a repeated NACK falls due
			 * (a round trip and a half, 100 ms while the peer has not
			 * told us one: loss reports would stop for that long). */
			if (f->nack_at == 0 || f->nack_at <= now ||
			    f->nack_at > now + YIP_NACK_GRACE_NS) {
				f->nack_at = now + YIP_NACK_GRACE_NS;
				schedule_peer(p, f->nack_at);
			}
			f->rep_bursts++;
			f->rep_burst_sum += (uint32_t)(gap < MAX_GAP ? gap : MAX_GAP);
			p->stats.lost += gap;
			f->rx_active = now;
			if (f->missing == NULL)
				f->missing = calloc(YIP_MISS_SLOTS, sizeof(*f->missing));
			for (uint64_t c = counter - (gap < MAX_GAP ? gap : MAX_GAP);
			     f->missing != NULL && c < counter; c++)
				miss_add(p, now, c);
		}
		f->highest = counter;
		f->rep_received++;
	} else {
		f->rep_received++;
		if (p->stats.lost)
			p->stats.lost--;
		resolve(p, kp, counter);
	}
	/* Data (not reports) asks for a report back; an idle link stays quiet. */
	if (data && f->report_due == 0) {
		f->report_due = now + 1; /* report_timers picks the real time */
		schedule_peer(p, now);
	}
}

/*
 * Collects the missing counters that are due a NACK: first NACKs before
 * repeated ones, which only matter when a report was lost (a lost resend
 * leaves a gap of its own, which is NACKed first), and which for a lost
 * repair or report, which no one can resend, are only noise. When more are
 * due than fit, the next report follows within a millisecond.
 */
unsigned recover_nacks_due(struct yip_peer *p, uint64_t now, uint64_t *out, unsigned max,
                           uint64_t *next)
{
	struct yip_fec *f = &p->fec;
	uint64_t rto = (f->srtt ? f->srtt + f->srtt / 2 : 100 * YIP_NS_PER_MS) + YIP_NACK_GRACE_NS;
	unsigned n = 0;

	*next = 0;
	/* A report goes under the current keys: it can only name their counters. */
	if (f->missing == NULL || !f->tracking || p->cur == NULL ||
	    f->track_index != p->cur->local_index)
		return 0;
	for (int repeat = 0; repeat < 2; repeat++) {
		for (unsigned i = 0; i < YIP_MISS_SLOTS; i++) {
			struct yip_missing *m = &f->missing[i];
			uint64_t due;

			if (m->seen == 0 || (m->nacks > 0) != repeat)
				continue;
			if (now - m->seen > MISS_TTL_NS || m->nacks >= YIP_ARQ_TRIES) {
				m->seen = 0;
				continue;
			}
			due = m->nacks ? m->last_nack + rto : m->seen + YIP_NACK_GRACE_NS;
			if (now < due || n == max) {
				if (now >= due)
					due = now + YIP_NS_PER_MS; /* did not fit */
				if (*next == 0 || due < *next)
					*next = due;
				continue;
			}
			out[n++] = m->counter;
			p->stats.nacks_sent++;
			m->nacks++;
			m->last_nack = now;
			if (m->nacks < YIP_ARQ_TRIES && (*next == 0 || now + rto < *next))
				*next = now + rto;
		}
	}
	return n;
}
