/*
 * Loss recovery, sending side. Every packet leaves at once; packets of one
 * traffic class are also folded into the open FEC block of that class. A
 * block closes after K packets or when it has been open for the class's hold
 * time, and its R repair symbols follow: for interactive traffic at once,
 * otherwise one after each later packet of the class (so one burst of loss
 * does not take a block's sources and its repairs together), and the rest
 * when the drain time passes. Bulk packets are also kept (the ARQ history)
 * so a NACK can have them sent again.
 *
 * Memory: a class's repair buffers are allocated when it first opens a
 * block with repairs, the ARQ history when the first bulk packet is kept;
 * the history grows with the bandwidth-delay product (struct
 * yip_retx_ring); both are released after YIP_RECOVERY_IDLE_NS without
 * use. Growing copies the history once per doubling, never per packet.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

#define DRAIN_NS     1000000ULL    /* unsent repairs go out at most this long after close */
#define RETX_TTL     1000000000ULL /* a NACK older than this finds nothing */
#define NS_PER_US    1000ULL
#define RETX_PER_REC 512 /* bytes of history per record slot (bulk packets are large) */

static uint8_t *rep_buf(const struct yip_peer *p, const struct yip_tx_block *b, unsigned j)
{
	return b->rep + (size_t)j * p->dev->sym_cap;
}

int protect_init(struct yip_peer *p)
{
	struct yip_fec *f = &p->fec;

	fec_init();
	for (int c = 0; c < FLOW_CLASSES; c++)
		fec_policy((enum flow_class)c, 0, 1, 0, true, &f->params[c]);
	f->burst = 1;
	return 0;
}

/* ---- the ARQ history ------------------------------------------------------------- */

static void retx_release(struct yip_peer *p)
{
	struct yip_retx_ring *r = &p->fec.retx;

	if (r->data != NULL)
		sodium_memzero(r->data, r->cap); /* plaintext inner packets */
	free(r->data);
	free(r->rec);
	memset(r, 0, sizeof(*r));
}

static struct yip_retx *retx_at(const struct yip_retx_ring *r, uint32_t i)
{
	return &r->rec[(r->head + i) % r->rec_cap];
}

/* How long a copy must last: until a second NACK for it could have come. */
static uint64_t retx_horizon(const struct yip_peer *p)
{
	uint64_t rtt = p->fec.srtt ? p->fec.srtt : 100 * YIP_NS_PER_MS;

	return rtt * 5 / 2 + 40 * YIP_NS_PER_MS;
}

/*
 * Makes the history cap bytes large, keeping what it holds (packed at the
 * start). Returns false, with the history as it was, if out of memory.
 */
static bool retx_resize(struct yip_peer *p, uint32_t cap)
{
	struct yip_retx_ring *r = &p->fec.retx, n = {0};

	n.cap = cap;
	n.rec_cap = cap / RETX_PER_REC;
	n.data = malloc(cap);
	n.rec = malloc((size_t)n.rec_cap * sizeof(*n.rec));
	if (n.data == NULL || n.rec == NULL) {
		free(n.data);
		free(n.rec);
		return false;
	}
	n.session = r->session;
	/* The newest records that fit, oldest first. */
	uint32_t first = r->count > n.rec_cap ? r->count - n.rec_cap : 0;
	for (uint32_t i = first; i < r->count; i++) {
		const struct yip_retx *o = retx_at(r, i);
		struct yip_retx *c = &n.rec[n.count++];

		*c = *o;
		c->off = n.wpos;
		memcpy(n.data + n.wpos, r->data + o->off, o->len);
		n.wpos += o->len;
		n.bytes += o->len;
	}
	retx_release(p);
	*r = n;
	return true;
}

static void retx_evict(struct yip_peer *p, uint64_t now, bool *young)
{
	struct yip_retx_ring *r = &p->fec.retx;

	if (now - retx_at(r, 0)->sent < retx_horizon(p))
		*young = true;
	r->bytes -= retx_at(r, 0)->len;
	r->evicted = retx_at(r, 0)->counter + 1;
	r->head = (r->head + 1) % r->rec_cap;
	r->count--;
}

/*
 * Room for len bytes at r->wpos (moved to 0 when the end is too near):
 * evicts the oldest copies that lie in the way. *young: one of them was
 * younger than the horizon.
 */
static void retx_make_room(struct yip_peer *p, uint64_t now, size_t len, bool *young)
{
	struct yip_retx_ring *r = &p->fec.retx;

	if (r->count == r->rec_cap)
		retx_evict(p, now, young);
	for (;;) {
		uint32_t tail;

		if (r->count == 0) {
			if (r->wpos + len > r->cap)
				r->wpos = 0;
			return;
		}
		tail = retx_at(r, 0)->off;
		if (r->wpos > tail) {
			if (r->wpos + len <= r->cap)
				return;
			r->wpos = 0; /* the end is too short: wrap */
			continue;
		}
		if (r->wpos < tail && r->wpos + len <= tail)
			return;
		retx_evict(p, now, young);
	}
}

/* Keeps a bulk packet so a NACK for its counter can have it sent again. */
static void retx_keep(struct yip_peer *p, uint64_t now, uint64_t counter, uint64_t orig,
                      const uint8_t *pkt, size_t len, uint8_t tries)
{
	struct yip_retx_ring *r = &p->fec.retx;
	struct yip_retx *c;
	bool young = false;

	p->fec.tx_active = now;
	if (r->data == NULL && !retx_resize(p, YIP_RETX_MIN))
		return;
	if (r->session != p->cur->local_index) {
		/* New keys: the kept counters are another session's. */
		r->count = r->head = r->wpos = r->bytes = 0;
		r->evicted = 0;
		r->session = p->cur->local_index;
	}
	if (len > r->cap)
		return;
	/* Nearly full with every copy still young: the rate needs more room. */
	if (r->count > 0 && r->bytes + len > r->cap / 4 * 3 && r->cap < YIP_RETX_MAX &&
	    now - retx_at(r, 0)->sent < retx_horizon(p))
		retx_resize(p, r->cap * 2);
	retx_make_room(p, now, len, &young);
	c = &r->rec[(r->head + r->count) % r->rec_cap];
	*c = (struct yip_retx){counter, orig, now, r->wpos, (uint16_t)len, tries};
	memcpy(r->data + r->wpos, pkt, len);
	r->wpos += (uint32_t)len;
	r->bytes += (uint32_t)len;
	r->count++;
	/* Too small for the rate and round trip: grow (the copy above is kept). */
	if (young && r->cap < YIP_RETX_MAX)
		retx_resize(p, r->cap * 2);
}

/* The kept copy sent with counter, or NULL. */
static struct yip_retx *retx_find(struct yip_retx_ring *r, uint64_t counter)
{
	uint32_t lo = 0, hi = r->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct yip_retx *c = retx_at(r, mid);

		if (c->counter == counter)
			return c;
		if (c->counter < counter)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * Congestion: loss at a full queue is the inner protocol's signal to slow
 * down. Repaired, it would not slow down, keep the queue full and lose
 * more, and repairs and resends would crowd the queue further. So while
 * the newest RTT sample stands a quarter and 5 ms above the base RTT (the
 * least sample of the last 10-20 s), lost bulk packets are not resent and
 * the loss estimate stays where the link's own loss put it (report.c); FEC
 * still rebuilds what the redundancy already sent covers. A path whose loss comes without
 * queueing (a lossy radio link, random drops) keeps every repair.
 */
#define QUEUEING_MIN_NS (5 * YIP_NS_PER_MS)
/* A sample older than this says nothing of the queue now. */
#define QUEUEING_SAMPLE_NS (1 * YIP_NS_PER_S)

uint64_t protect_base_rtt(const struct yip_peer *p)
{
	const struct yip_fec *f = &p->fec;
	uint64_t base = f->rtt_min;

	if (f->rtt_min_prev != 0 && f->rtt_min_prev < base)
		base = f->rtt_min_prev;
	return base;
}

bool protect_queueing(const struct yip_peer *p, uint64_t now)
{
	const struct yip_fec *f = &p->fec;
	uint64_t base = protect_base_rtt(p);

	return base != 0 && f->rtt_last > base + base / 4 + QUEUEING_MIN_NS &&
	       now - f->rtt_last_at < QUEUEING_SAMPLE_NS;
}

void protect_retransmit(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                        uint64_t counter)
{
	struct yip_retx_ring *r = &p->fec.retx;
	uint8_t pre[WIRE_ARQ_PRE], *copy;
	struct yip_retx *c, keep;
	uint64_t sent_as;

	p->stats.nacks_received++;
	/* Only counters of the session we still send under can be resent: the
	 * resend must go under the keys of the original, whose replay window
	 * at the peer then sees it at most once. */
	if (kp == NULL || kp != p->cur || r->count == 0 || r->session != kp->local_index)
		return;
	c = retx_find(r, counter);
	if (c == NULL) {
		/* Older than every copy, while the oldest is younger than a NACK
		 * may be: the history is too short for the rate and round trip.
		 * (Otherwise the counter was no bulk packet, or a NACK came late.) */
		if (counter < retx_at(r, 0)->counter && counter < r->evicted &&
		    now - retx_at(r, 0)->sent < retx_horizon(p))
			p->stats.arq_history_miss++;
		return;
	}
	if (now - c->sent > RETX_TTL || c->tries >= YIP_ARQ_TRIES) {
		p->stats.arq_late++;
		return;
	}
	if (protect_queueing(p, now)) {
		p->stats.arq_congested++;
		return;
	}
	c->tries++;
	keep = *c;
	copy = r->data + c->off;
	wire_arq_put(pre, keep.orig);
	sent_as = frame_send(p, now, WIRE_DATA, WIRE_FEC_ARQ, 0, pre, sizeof(pre), copy, keep.len);
	p->stats.arq_sent++;
	/* Kept under its new counter too: that one may be NACKed in turn. The
	 * resend names the first counter, so the peer delivers it once. Copied
	 * through the scratch buffer: keeping it may move the history. */
	memcpy(p->dev->txsym, copy, keep.len);
	retx_keep(p, now, sent_as, keep.orig, p->dev->txsym, keep.len, keep.tries);
}

/* ---- FEC groups ---------------------------------------------------------------------- */

static void send_repair(struct yip_peer *p, uint64_t now, struct yip_tx_block *b, unsigned lanes)
{
	uint8_t pre[WIRE_REPAIR_PRE];
	unsigned j = b->sent++;

	wire_repair_put(pre, b->n, b->r);
	frame_send(p, now, WIRE_REPAIR, wire_fec_idx(j, lanes), b->id, pre, sizeof(pre),
	           rep_buf(p, b, j), b->len);
	p->stats.repair_sent++;
	p->stats.repair_bytes += WIRE_DATA_MIN + sizeof(pre) + b->len;
}

/* Repairs a closed group still owes. */
static bool group_owes(const struct yip_tx_group *g)
{
	for (unsigned d = 0; d < g->lanes; d++)
		if (g->lane[d].n > 0 && g->lane[d].sent < g->lane[d].send)
			return true;
	return false;
}

/* One round: the next repair of every lane that owes one. Their blocks
 * differ, so the round may leave as one GSO train. */
static void send_round(struct yip_peer *p, uint64_t now, struct yip_tx_group *g)
{
	for (unsigned d = 0; d < g->lanes; d++)
		if (g->lane[d].n > 0 && g->lane[d].sent < g->lane[d].send)
			send_repair(p, now, &g->lane[d], g->lanes);
}

static void drain_all(struct yip_peer *p, uint64_t now, struct yip_tx_group *g)
{
	while (!g->open && group_owes(g))
		send_round(p, now, g);
}

/* Closes the open group of a class; its repairs start to flow. */
static void close_group(struct yip_peer *p, uint64_t now, int cls)
{
	struct yip_fec *f = &p->fec;
	struct yip_tx_group *open = &f->tx[cls][0], *old = &f->tx[cls][1];
	struct yip_tx_group tmp;

	drain_all(p, now, old); /* the group before it must be complete first */
	tmp = *old;
	*old = *open;
	*open = tmp;
	open->open = false;
	old->open = false;
	old->since = 0;
	old->drain_at = now + DRAIN_NS;
	for (unsigned d = 0; d < old->lanes; d++) {
		struct yip_tx_block *b = &old->lane[d];

		b->sent = 0;
		/* Closed short: a shorter block needs fewer repairs. */
		b->send = b->n < b->k
		              ? (uint8_t)fec_repairs_for((enum flow_class)cls, f->loss, f->burst,
		                                         (double)protect_base_rtt(p) / 1e9, b->n,
		                                         b->r, old->lanes)
		              : b->r;
	}
	if (cls == FLOW_INTERACTIVE) {
		drain_all(p, now, old); /* latency first: repairs right behind the packet */
	} else {
		send_round(p, now, old);
		schedule_peer(p, old->drain_at);
	}
}

/* Both groups of a class get repair buffers for their lanes; false if out of memory. */
static bool reps_alloc(struct yip_peer *p, int cls, unsigned lanes)
{
	for (int i = 0; i < 2; i++)
		for (unsigned d = 0; d < lanes; d++) {
			struct yip_tx_block *b = &p->fec.tx[cls][i].lane[d];

			if (b->rep == NULL)
				b->rep = malloc((size_t)FEC_MAX_R * p->dev->sym_cap);
			if (b->rep == NULL)
				return false;
		}
	return true;
}

static void reps_release(struct yip_peer *p)
{
	for (int c = 0; c < FLOW_CLASSES; c++)
		for (int i = 0; i < 2; i++)
			for (unsigned d = 0; d < FEC_BULK_LANES; d++) {
				struct yip_tx_block *b = &p->fec.tx[c][i].lane[d];

				if (b->rep != NULL)
					sodium_memzero(b->rep, (size_t)FEC_MAX_R * p->dev->sym_cap);
				free(b->rep);
				b->rep = NULL;
			}
}

/* Opens a group for a class; false (no group) if its buffers cannot be had. */
static bool open_group(struct yip_peer *p, uint64_t now, int cls)
{
	struct yip_fec *f = &p->fec;
	struct yip_tx_group *g = &f->tx[cls][0];
	const struct fec_params *prm = &f->params[cls];
	unsigned lanes = prm->lanes > 1 ? prm->lanes : 1;

	/* A group of lanes starts at a multiple of them (the receiver finds its
	 * first block by the number): single blocks until then. */
	if (f->next_block[cls] % lanes != 0)
		lanes = 1;

	if (!reps_alloc(p, cls, lanes))
		return false;
	g->open = true;
	g->lanes = (uint8_t)lanes;
	g->n = 0;
	g->opened = now;
	for (unsigned d = 0; d < lanes; d++) {
		struct yip_tx_block *b = &g->lane[d];

		b->k = prm->k;
		b->r = prm->r;
		b->n = b->sent = b->send = 0;
		b->len = 0;
		b->id = wire_block((unsigned)cls, f->next_block[cls] + d);
		memset(b->rep, 0, (size_t)b->r * p->dev->sym_cap);
	}
	f->next_block[cls] = (uint16_t)(f->next_block[cls] + lanes);
	f->tx_active = now;
	schedule_peer(p, now + prm->hold_us * NS_PER_US);
	return true;
}

void protect_packet(struct yip_peer *p, uint64_t now, enum flow_class cls, const uint8_t *pkt,
                    size_t len)
{
	struct yip_fec *f = &p->fec;
	struct yip_tx_group *g = &f->tx[cls][0], *old = &f->tx[cls][1];
	uint8_t *sym = p->dev->txsym, *reps[FEC_MAX_R];
	uint64_t counter;

	if ((f->params[cls].r == 0 && !g->open) || (!g->open && !open_group(p, now, cls))) {
		counter = frame_send(p, now, WIRE_DATA, WIRE_FEC_NONE, 0, NULL, 0, pkt, len);
	} else {
		struct yip_tx_block *b = &g->lane[g->n % g->lanes];

		counter = frame_send(p, now, WIRE_DATA, wire_fec_idx(b->n, g->lanes), b->id, NULL,
		                     0, pkt, len);
		/* The symbol is counter | length | packet: the receiver learns from a
		 * rebuilt symbol which counter it stands for and how long it was.
		 * Assembled in one buffer because ISA-L folds a short vector (the
		 * 10-byte header alone) byte by byte: the copy is cheaper. */
		wire_sym_put(sym, &(struct wire_sym){counter, (uint16_t)len});
		memcpy(sym + WIRE_SYM_HDR, pkt, len);
		for (unsigned j = 0; j < b->r; j++)
			reps[j] = rep_buf(p, b, j);
		fec_encode_add(b->r, b->n, sym, WIRE_SYM_HDR + len, reps);
		b->n++;
		g->n++;
		if (WIRE_SYM_HDR + len > b->len)
			b->len = (uint16_t)(WIRE_SYM_HDR + len);
		if (g->n >= (unsigned)g->lanes * b->k)
			close_group(p, now, cls);
	}
	/* Interleave the previous group's repairs with this class's traffic: a
	 * round after every `lanes` packets, so trains of sources and rounds
	 * alternate. */
	if (cls != FLOW_INTERACTIVE && group_owes(old) && ++old->since % old->lanes == 0)
		send_round(p, now, old);
	if (cls == FLOW_BULK)
		retx_keep(p, now, counter, counter, pkt, len, 0);
}

void protect_flush(struct yip_peer *p, uint64_t now)
{
	if (!session_usable(p, now))
		return;
	for (int c = 0; c < FLOW_CLASSES; c++) {
		if (p->fec.tx[c][0].open && p->fec.tx[c][0].n > 0)
			close_group(p, now, c);
		drain_all(p, now, &p->fec.tx[c][1]);
	}
}

/* True while a class has a group open or repairs left to send. */
static bool blocks_busy(const struct yip_peer *p)
{
	for (int c = 0; c < FLOW_CLASSES; c++)
		if (p->fec.tx[c][0].open || group_owes(&p->fec.tx[c][1]))
			return true;
	return false;
}

void protect_free(struct yip_peer *p)
{
	reps_release(p);
	retx_release(p);
	memset(&p->fec.tx, 0, sizeof(p->fec.tx));
}

uint64_t protect_timers(struct yip_peer *p, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	bool held = p->fec.retx.data != NULL;

	for (int c = 0; c < FLOW_CLASSES; c++)
		held = held || p->fec.tx[c][0].lane[0].rep != NULL;
	/* Idle: what loss recovery held for sending is given back. */
	if (held && !blocks_busy(p)) {
		if (now - p->fec.tx_active >= YIP_RECOVERY_IDLE_NS)
			protect_free(p);
		else
			next = p->fec.tx_active + YIP_RECOVERY_IDLE_NS;
	}
	if (!session_usable(p, now))
		return next;
	for (int c = 0; c < FLOW_CLASSES; c++) {
		struct yip_tx_group *g = &p->fec.tx[c][0], *old = &p->fec.tx[c][1];
		uint64_t close_at = g->opened + p->fec.params[c].hold_us * NS_PER_US;

		if (g->open && now >= close_at)
			close_group(p, now, c);
		else if (g->open && close_at < next)
			next = close_at;
		if (group_owes(old)) {
			if (now >= old->drain_at)
				drain_all(p, now, old);
			else if (old->drain_at < next)
				next = old->drain_at;
		}
	}
	return next;
}

uint64_t protect_memory(const struct yip_peer *p)
{
	const struct yip_retx_ring *r = &p->fec.retx;
	uint64_t bytes = 0;

	if (r->data != NULL)
		bytes += r->cap + (uint64_t)r->rec_cap * sizeof(*r->rec);
	for (int c = 0; c < FLOW_CLASSES; c++)
		for (int i = 0; i < 2; i++)
			for (unsigned d = 0; d < FEC_BULK_LANES; d++)
				if (p->fec.tx[c][i].lane[d].rep != NULL)
					bytes += (uint64_t)FEC_MAX_R * p->dev->sym_cap;
	return bytes;
}
