#include "aqm/shape.h"

#include <stdlib.h>
#include <string.h>

#include "config/config.h"

#define RX_SMALL 256 /* received packets this small are never used as a congestion signal */

int shape_init(struct shape *s, bool tap)
{
	memset(s, 0, sizeof(*s));
	s->tap = tap;
	s->txq.mem = malloc((size_t)TXQ_SLOTS * TUN_BUF);
	s->buf = malloc(YIP_MAX_MTU);
	if (s->txq.mem == NULL || s->buf == NULL) {
		shape_free(s);
		return -1;
	}
	return 0;
}

void shape_free(struct shape *s)
{
	free(s->txq.mem);
	free(s->buf);
	s->txq.mem = s->buf = NULL;
}

void shape_set_rtt(struct shape *s, uint64_t rtt)
{
	codel_set(&s->txq.codel, rtt);
	codel_set(&s->rx_codel, rtt);
}

static uint8_t *txq_at(struct txq *q, unsigned i)
{
	return q->mem + (size_t)(i % TXQ_SLOTS) * TUN_BUF;
}

uint8_t *shape_txq_slot(struct shape *s)
{
	struct txq *q = &s->txq;

	return q->count == TXQ_SLOTS ? NULL : txq_at(q, q->head + q->count);
}

void shape_txq_push(struct shape *s, uint64_t now, const uint8_t *buf, size_t n)
{
	struct txq *q = &s->txq;
	unsigned i = (q->head + q->count) % TXQ_SLOTS;
	uint8_t *slot = txq_at(q, i);

	if (slot != buf)
		memcpy(slot, buf, n);
	q->len[i] = (uint32_t)n;
	q->queued[i] = now;
	q->count++;
	q->bytes += n;
}

uint8_t *shape_txq_pop(struct shape *s, uint64_t now, size_t *n, bool *congested)
{
	struct txq *q = &s->txq;
	unsigned i = q->head;

	if (q->count == 0)
		return NULL;
	*n = q->len[i];
	q->head = (i + 1) % TXQ_SLOTS;
	q->count--;
	q->bytes -= *n;
	/* A standing queue: the reads behind this one fill at least one more read. */
	*congested = codel_signal(&q->codel, now, now - q->queued[i], q->bytes >= TUN_BUF);
	return txq_at(q, i);
}

bool shape_mark_ce(uint8_t *pkt, size_t n)
{
	if (n >= 20 && pkt[0] >> 4 == 4 && (pkt[1] & 3) != 0) {
		size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;

		if (ihl < 20 || ihl > n)
			return false;
		pkt[1] |= 3;
		pkt[10] = pkt[11] = 0;
		uint16_t c = (uint16_t)~offload_csum_fold(offload_csum_add(0, pkt, ihl));
		pkt[10] = (uint8_t)(c >> 8);
		pkt[11] = (uint8_t)c;
		return true;
	}
	if (n >= 40 && pkt[0] >> 4 == 6 && (pkt[1] & 0x30) != 0) {
		pkt[1] |= 0x30;
		return true;
	}
	return false;
}

bool shape_tx_signal(struct shape *s, uint8_t *pkt, size_t n)
{
	if (s->tap)
		return true;
	if (shape_mark_ce(pkt, n)) {
		s->tx_marks++;
		return false;
	}
	s->tx_drops++;
	return true;
}

void shape_clamp(const struct shape *s, uint8_t *pkt, size_t n, unsigned mtu)
{
	if (!s->tap)
		offload_mss_clamp(pkt, n, mtu);
}

bool shape_is_syn(const uint8_t *pkt, size_t len)
{
	size_t off;

	if (len >= 40 && pkt[0] >> 4 == 4 && pkt[9] == 6)
		off = (size_t)(pkt[0] & 0x0f) * 4;
	else if (len >= 60 && pkt[0] >> 4 == 6 && pkt[6] == 6)
		off = 40;
	else
		return false;
	return off + 14 <= len && (pkt[off + 13] & 0x02);
}

const uint8_t *shape_rx(struct shape *s, const uint8_t *pkt, size_t len, unsigned mtu)
{
	if (s->tap || len > YIP_MAX_MTU)
		return pkt;
	if (shape_is_syn(pkt, len)) {
		/* Its MSS option must fit our tunnel (routed LAN hosts would
		 * otherwise send segments the tunnel has to refuse). */
		memcpy(s->buf, pkt, len);
		offload_mss_clamp(s->buf, len, mtu);
		return s->buf;
	}
	if (len <= RX_SMALL)
		return pkt;
	if (s->rx_sojourn > codel_hard_limit(&s->rx_codel)) {
		/* Far past anything a window-limited sender (CUBIC, BBR) keeps
		 * queued: a sender that answers no signal would fill the whole
		 * socket buffer with delay. Bulk packets are dropped until the
		 * queue is back under the limit. */
		s->rx_drops++;
		return NULL;
	}
	if (codel_signal(&s->rx_codel, s->rx_now, s->rx_sojourn, true)) {
		/* Datagrams are waiting in the socket longer than CoDel's target:
		 * tell the sending TCP, by a CE mark or by this one loss. */
		memcpy(s->buf, pkt, len);
		if (!shape_mark_ce(s->buf, len)) {
			s->rx_drops++;
			return NULL;
		}
		s->rx_marks++;
		return s->buf;
	}
	return pkt;
}
