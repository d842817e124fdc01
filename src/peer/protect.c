/*
 * Loss recovery, sending side. Every packet leaves at once; packets of one
 * traffic class are also folded into the open FEC block of that class. A
 * block closes after K packets or when it has been open for the class's hold
 * time, and its R repair symbols follow: for interactive traffic at once,
 * otherwise one after each later packet of the class (so one burst of loss
 * does not take a block's sources and its repairs together), and the rest
 * when the drain time passes. Bulk packets are also kept briefly so a NACK
 * can have them sent again.
 */
#include "peer/internal.h"

#include <stdlib.h>
#include <string.h>

#define DRAIN_NS  1000000ULL    /* unsent repairs go out at most this long after close */
#define RETX_TTL  1000000000ULL /* a NACK older than this finds nothing */
#define NS_PER_US 1000ULL

static uint8_t *rep_buf(const struct yip_peer *p, const struct yip_tx_block *b, unsigned j)
{
	return b->rep + (size_t)j * p->dev->sym_cap;
}

int protect_init(struct yip_peer *p)
{
	struct yip_fec *f = &p->fec;
	size_t cap = p->dev->sym_cap;

	fec_init();
	for (int c = 0; c < FLOW_CLASSES; c++) {
		fec_policy((enum flow_class)c, 0, 1, &f->params[c]);
		for (int i = 0; i < 2; i++) {
			f->tx[c][i].rep = calloc(FEC_MAX_R, cap);
			if (f->tx[c][i].rep == NULL)
				return -1;
		}
	}
	f->burst = 1;
	f->pool = calloc(YIP_RX_SLOTS, cap);
	f->missing = calloc(YIP_MISS_SLOTS, sizeof(*f->missing));
	f->retx = calloc(YIP_RETX_SLOTS, sizeof(*f->retx));
	f->retx_data = calloc(YIP_RETX_SLOTS, p->dev->pkt_max);
	if (!f->pool || !f->missing || !f->retx || !f->retx_data)
		return -1;
	for (unsigned i = 0; i < YIP_RX_SLOTS; i++)
		f->free_slots[i] = (uint16_t)(YIP_RX_SLOTS - 1 - i);
	f->n_free = YIP_RX_SLOTS;
	return 0;
}

void protect_free(struct yip_peer *p)
{
	struct yip_fec *f = &p->fec;

	for (int c = 0; c < FLOW_CLASSES; c++)
		for (int i = 0; i < 2; i++)
			free(f->tx[c][i].rep);
	free(f->pool);
	free(f->missing);
	free(f->retx);
	free(f->retx_data);
	memset(f, 0, sizeof(*f));
}

static void send_repair(struct yip_peer *p, uint64_t now, struct yip_tx_block *b)
{
	uint8_t pre[WIRE_REPAIR_PRE];
	unsigned j = b->sent++;

	wire_repair_put(pre, b->n, b->r);
	frame_send(p, now, WIRE_REPAIR, (uint8_t)j, b->id, pre, sizeof(pre), rep_buf(p, b, j),
	           b->len);
	p->stats.repair_sent++;
	p->stats.repair_bytes += WIRE_DATA_MIN + sizeof(pre) + b->len;
}

static void drain_all(struct yip_peer *p, uint64_t now, struct yip_tx_block *b)
{
	while (b->sent < b->r && b->n > 0)
		send_repair(p, now, b);
}

/* Closes the open block of a class; its repairs start to flow. */
static void close_block(struct yip_peer *p, uint64_t now, int cls)
{
	struct yip_tx_block *open = &p->fec.tx[cls][0], *old = &p->fec.tx[cls][1];
	struct yip_tx_block tmp;

	drain_all(p, now, old); /* the block before it must be complete first */
	tmp = *old;
	*old = *open;
	*open = tmp;
	open->open = false;
	old->open = false;
	old->sent = 0;
	old->drain_at = now + DRAIN_NS;
	if (cls == FLOW_INTERACTIVE) {
		drain_all(p, now, old); /* latency first: repairs right behind the packet */
	} else {
		send_repair(p, now, old);
		schedule_peer(p, old->drain_at);
	}
}

static void open_block(struct yip_peer *p, uint64_t now, int cls)
{
	struct yip_tx_block *b = &p->fec.tx[cls][0];
	const struct fec_params *prm = &p->fec.params[cls];

	b->open = true;
	b->k = prm->k;
	b->r = prm->r;
	b->n = 0;
	b->sent = 0;
	b->len = 0;
	b->id = p->fec.next_block++;
	b->opened = now;
	memset(b->rep, 0, (size_t)b->r * p->dev->sym_cap);
	schedule_peer(p, now + prm->hold_us * NS_PER_US);
}

/* Keeps a bulk packet so a NACK for its counter can have it sent again. */
static void retx_keep(struct yip_peer *p, uint64_t now, uint64_t counter, const uint8_t *pkt,
                      size_t len, uint8_t tries)
{
	size_t slot = (size_t)(counter % YIP_RETX_SLOTS);
	struct yip_retx *r = &p->fec.retx[slot];

	r->counter = counter;
	r->sent = now;
	r->len = (uint16_t)len;
	r->tries = tries;
	memcpy(p->fec.retx_data + slot * p->dev->pkt_max, pkt, len);
}

void protect_packet(struct yip_peer *p, uint64_t now, enum flow_class cls, const uint8_t *pkt,
                    size_t len)
{
	struct yip_fec *f = &p->fec;
	struct yip_tx_block *b = &f->tx[cls][0], *old = &f->tx[cls][1];
	uint8_t *sym = p->dev->txsym, *reps[FEC_MAX_R];
	uint64_t counter;

	if (f->params[cls].r == 0 && !b->open) {
		counter = frame_send(p, now, WIRE_DATA, WIRE_FEC_NONE, 0, NULL, 0, pkt, len);
	} else {
		if (!b->open)
			open_block(p, now, cls);
		counter = frame_send(p, now, WIRE_DATA, b->n, b->id, NULL, 0, pkt, len);
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
		if (WIRE_SYM_HDR + len > b->len)
			b->len = (uint16_t)(WIRE_SYM_HDR + len);
		if (b->n >= b->k)
			close_block(p, now, cls);
	}
	/* Interleave the previous block's repairs with this class's traffic. */
	if (old->n > 0 && old->sent < old->r && cls != FLOW_INTERACTIVE)
		send_repair(p, now, old);
	if (cls == FLOW_BULK)
		retx_keep(p, now, counter, pkt, len, 0);
}

void protect_retransmit(struct yip_peer *p, uint64_t now, uint64_t counter)
{
	size_t slot = (size_t)(counter % YIP_RETX_SLOTS);
	struct yip_retx *r = &p->fec.retx[slot];
	uint8_t pre[WIRE_ARQ_PRE];
	uint64_t sent_as;

	if (r->sent == 0 || r->counter != counter || now - r->sent > RETX_TTL ||
	    r->tries >= YIP_ARQ_TRIES)
		return;
	wire_arq_put(pre, counter);
	sent_as = frame_send(p, now, WIRE_DATA, WIRE_FEC_ARQ, 0, pre, sizeof(pre),
	                     p->fec.retx_data + slot * p->dev->pkt_max, r->len);
	p->stats.arq_sent++;
	r->tries++;
	/* Keep it under its new counter too: that one may be NACKed in turn. */
	if (sent_as % YIP_RETX_SLOTS != slot)
		retx_keep(p, now, sent_as, p->fec.retx_data + slot * p->dev->pkt_max, r->len,
		          r->tries);
}

void protect_flush(struct yip_peer *p, uint64_t now)
{
	if (!session_usable(p, now))
		return;
	for (int c = 0; c < FLOW_CLASSES; c++) {
		if (p->fec.tx[c][0].open && p->fec.tx[c][0].n > 0)
			close_block(p, now, c);
		drain_all(p, now, &p->fec.tx[c][1]);
	}
}

uint64_t protect_timers(struct yip_peer *p, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	if (!session_usable(p, now))
		return next;
	for (int c = 0; c < FLOW_CLASSES; c++) {
		struct yip_tx_block *b = &p->fec.tx[c][0], *old = &p->fec.tx[c][1];
		uint64_t close_at = b->opened + p->fec.params[c].hold_us * NS_PER_US;

		if (b->open && now >= close_at)
			close_block(p, now, c);
		else if (b->open && close_at < next)
			next = close_at;
		if (old->sent < old->r && old->n > 0) {
			if (now >= old->drain_at)
				drain_all(p, now, old);
			else if (old->drain_at < next)
				next = old->drain_at;
		}
	}
	return next;
}
