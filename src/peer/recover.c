/*
 * Loss recovery, receiving side: reassembly of FEC blocks, loss statistics
 * for the reports, and the table of missing counters that drives NACKs.
 *
 * A source is delivered the moment it arrives (datapath.c) and a copy is kept
 * in its block. Repairs say how many sources the block has (K); as soon as
 * K symbols of a block are in, the missing sources are rebuilt, checked
 * against the replay window of the keys they were sent under (a rebuilt
 * packet is delivered at most once, and never if the original came first)
 * and delivered.
 */
#include "peer/internal.h"

#include <string.h>

#include "util/clock.h"

#define BLOCK_TTL_NS 500000000ULL       /* an incomplete block is given up after this */
#define MISS_TTL_NS  (1 * YIP_NS_PER_S) /* a missing counter is forgotten after this */
#define MAX_GAP      256                /* larger jumps are not tracked counter by counter */

static uint8_t *slot_buf(const struct yip_peer *p, uint16_t slot)
{
	return p->fec.pool + (size_t)slot * p->dev->sym_cap;
}

static void block_release(struct yip_peer *p, struct yip_rx_block *b)
{
	struct yip_fec *f = &p->fec;

	for (unsigned i = 0; i < FEC_MAX_K; i++)
		if (b->have_src & (1ULL << i))
			f->free_slots[f->n_free++] = b->slot_src[i];
	for (unsigned j = 0; j < FEC_MAX_R; j++)
		if (b->have_rep & (1U << j))
			f->free_slots[f->n_free++] = b->slot_rep[j];
	b->have_src = 0;
	b->have_rep = 0;
}

/* Gives a block up: what it could not rebuild is counted as unrecovered. */
static void block_retire(struct yip_peer *p, struct yip_rx_block *b)
{
	if (b->used && !b->done && b->k > 0) {
		unsigned have = (unsigned)__builtin_popcountll(b->have_src);

		if (have < b->k)
			p->stats.fec_unrecovered += b->k - have;
	}
	block_release(p, b);
	b->used = false;
}

/*
 * Every symbol buffer is free or held by a block, and one block holds at
 * most FEC_MAX_K + FEC_MAX_R: when none is free, another block holds some.
 */
_Static_assert(FEC_MAX_K + FEC_MAX_R < YIP_RX_SLOTS, "a block cannot hold every buffer");

/* A free symbol buffer, evicting the oldest other block if there is none. */
static uint16_t slot_take(struct yip_peer *p, const struct yip_rx_block *keep)
{
	struct yip_fec *f = &p->fec;

	if (f->n_free == 0) {
		struct yip_rx_block *oldest = NULL;

		for (unsigned i = 0; i < YIP_RX_BLOCKS; i++) {
			struct yip_rx_block *b = &f->rx[i];

			if (b != keep && b->used && (b->have_src || b->have_rep) &&
			    (oldest == NULL || b->first < oldest->first))
				oldest = b;
		}
		block_retire(p, oldest);
	}
	return f->free_slots[--f->n_free];
}

static struct yip_rx_block *block_get(struct yip_peer *p, uint64_t now, uint16_t id,
                                      uint32_t kp_index)
{
	struct yip_rx_block *b = &p->fec.rx[id % YIP_RX_BLOCKS];

	if (b->used && b->id == id)
		return b;
	block_retire(p, b);
	memset(b, 0, sizeof(*b));
	b->used = true;
	b->id = id;
	b->first = now;
	b->kp_index = kp_index;
	return b;
}

/* Rebuilds the missing sources once K symbols are in. */
static void block_try(struct yip_peer *p, uint64_t now, struct yip_rx_block *b)
{
	uint8_t *src[FEC_MAX_K], *rep[FEC_MAX_R];
	bool have_src[FEC_MAX_K], have_rep[FEC_MAX_R];
	unsigned have = (unsigned)__builtin_popcountll(b->have_src);
	unsigned reps = (unsigned)__builtin_popcount(b->have_rep);
	struct yip_keypair *kp;

	if (b->done || b->k == 0)
		return;
	if (have >= b->k) {
		b->done = true; /* nothing was lost */
		block_release(p, b);
		return;
	}
	if (have + reps < b->k)
		return;
	for (unsigned i = 0; i < b->k; i++) {
		have_src[i] = b->have_src & (1ULL << i);
		if (!have_src[i]) {
			b->slot_src[i] = slot_take(p, b);
			b->have_src |= 1ULL << i; /* owns the slot now; filled below */
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
		block_release(p, b);
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
		recover_resolve(p, sym.counter);
		if (frame_deliver(p, now, src[i] + WIRE_SYM_HDR, sym.len)) {
			p->stats.fec_recovered++;
			p->fec.rep_recovered++;
		}
	}
	block_release(p, b);
}

void recover_source(struct yip_peer *p, uint64_t now, const struct frame_rx *rx)
{
	unsigned idx = rx->h.idx;
	struct yip_rx_block *b = block_get(p, now, rx->h.block, rx->kp->local_index);
	uint8_t *s;

	if (b->done || (b->have_src & (1ULL << idx)) || (b->k && idx >= b->k))
		return;
	/* A peer with a larger MTU than ours may send packets our symbol
	 * buffers cannot hold: deliver them (done), but keep no copy. */
	if (WIRE_SYM_HDR + rx->len > p->dev->sym_cap)
		return;
	b->slot_src[idx] = slot_take(p, b);
	s = slot_buf(p, b->slot_src[idx]);
	wire_sym_put(s, &(struct wire_sym){rx->h.counter, (uint16_t)rx->len});
	memcpy(s + WIRE_SYM_HDR, rx->plain, rx->len);
	b->src_len[idx] = (uint16_t)(WIRE_SYM_HDR + rx->len);
	b->have_src |= 1ULL << idx;
	block_try(p, now, b);
}

void recover_repair(struct yip_peer *p, uint64_t now, const struct frame_rx *rx)
{
	unsigned idx = rx->h.idx;
	struct wire_repair m;
	struct yip_rx_block *b;

	if (!wire_repair_get(&m, rx->plain, rx->len) || m.k == 0 || m.k > FEC_MAX_K || m.r == 0 ||
	    m.r > FEC_MAX_R || idx >= m.r || m.symlen > p->dev->sym_cap) {
		yip_device_drop(p->dev, YIP_DROP_BAD_REPAIR);
		return;
	}
	b = block_get(p, now, rx->h.block, rx->kp->local_index);
	if (b->done)
		return; /* nothing left to rebuild: not a drop */
	if (b->k == 0) {
		/* Sources that claim a position past K would be inconsistent. */
		if (m.k < FEC_MAX_K && (b->have_src >> m.k) != 0) {
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
	b->slot_rep[idx] = slot_take(p, b);
	memcpy(slot_buf(p, b->slot_rep[idx]), m.sym, m.symlen);
	b->have_rep |= (uint16_t)(1U << idx);
	block_try(p, now, b);
}

uint64_t recover_timers(struct yip_peer *p, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < YIP_RX_BLOCKS; i++) {
		struct yip_rx_block *b = &p->fec.rx[i];

		if (!b->used || (b->done && !b->have_src && !b->have_rep))
			continue;
		if (now - b->first >= BLOCK_TTL_NS)
			block_retire(p, b);
		else if (b->first + BLOCK_TTL_NS < next)
			next = b->first + BLOCK_TTL_NS;
	}
	return next;
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

void recover_resolve(struct yip_peer *p, uint64_t counter)
{
	struct yip_missing *m = &p->fec.missing[counter % YIP_MISS_SLOTS];

	if (m->seen && m->counter == counter)
		m->seen = 0;
}

/*
 * Every authenticated datagram passes here. Counters are per key set and
 * strictly increasing at the sender, so a jump shows how many datagrams
 * went missing in between (a loss run: its length feeds the burst
 * estimate); a counter below the highest is a late arrival.
 */
void recover_observe(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                     uint64_t counter, bool data)
{
	struct yip_fec *f = &p->fec;

	if (kp != &p->cur)
		return;
	if (!f->tracking || f->track_index != kp->local_index) {
		f->tracking = true;
		f->track_index = kp->local_index;
		f->highest = counter;
		f->rep_highest = counter;
		f->rep_received++;
	} else if (counter > f->highest) {
		uint64_t gap = counter - f->highest - 1;

		if (gap > 0) {
			/* Loss makes reports come faster: have the timers look again. */
			if (f->rx_loss_at == 0 || now - f->rx_loss_at > 1000000000ULL)
				schedule_peer(p, now);
			f->rx_loss_at = now;
			/* A report goes out when this gap's NACK is due, not a whole
			 * report interval later. */
			if (f->nack_at == 0 || f->nack_at <= now) {
				f->nack_at = now + YIP_NACK_GRACE_NS;
				schedule_peer(p, f->nack_at);
			}
			f->rep_bursts++;
			f->rep_burst_sum += (uint32_t)(gap < MAX_GAP ? gap : MAX_GAP);
			p->stats.lost += gap;
			for (uint64_t c = counter - (gap < MAX_GAP ? gap : MAX_GAP); c < counter;
			     c++)
				miss_add(p, now, c);
		}
		f->highest = counter;
		f->rep_received++;
	} else {
		f->rep_received++;
		if (p->stats.lost)
			p->stats.lost--;
		recover_resolve(p, counter);
	}
	/* Data (not reports) asks for a report back; an idle link stays quiet. */
	if (data && f->report_due == 0) {
		f->report_due = now + 1; /* report_timers picks the real time */
		schedule_peer(p, now);
	}
}

/* Collects the missing counters that are due a (first or repeated) NACK. */
unsigned recover_nacks_due(struct yip_peer *p, uint64_t now, uint64_t *out, unsigned max,
                           uint64_t *next)
{
	struct yip_fec *f = &p->fec;
	uint64_t rto = (f->srtt ? f->srtt + f->srtt / 2 : 100 * YIP_NS_PER_MS) + YIP_NACK_GRACE_NS;
	unsigned n = 0;

	*next = 0;
	for (unsigned i = 0; i < YIP_MISS_SLOTS; i++) {
		struct yip_missing *m = &f->missing[i];

		if (m->seen == 0)
			continue;
		if (now - m->seen > MISS_TTL_NS || m->nacks >= YIP_ARQ_TRIES) {
			m->seen = 0;
			continue;
		}
		if (now - m->seen < YIP_NACK_GRACE_NS || (m->nacks && now - m->last_nack < rto)) {
			uint64_t due = m->nacks ? m->last_nack + rto : m->seen + YIP_NACK_GRACE_NS;

			if (*next == 0 || due < *next)
				*next = due;
			continue;
		}
		if (n == max)
			break;
		out[n++] = m->counter;
		m->nacks++;
		m->last_nack = now;
		if (m->nacks < YIP_ARQ_TRIES && (*next == 0 || now + rto < *next))
			*next = now + rto;
	}
	return n;
}
