/*
 * Loss reports. While data arrives from a peer, we tell it every 20 ms
 * (when there is loss or an open NACK) or every 100 ms (a clean link) what
 * we saw: datagrams received against the advance of its counter, the loss
 * runs, what FEC rebuilt or could not, the counters we still miss, and a
 * timestamp echo for its RTT. An idle link sends none. The sender turns the
 * reports into a smoothed loss rate and burst length, re-runs the control
 * law (fec/policy.c) for every class, and resends NACKed bulk packets.
 *
 * Report plaintext (little-endian):
 *   version u8 (1) | nacks u8 | 0 u16 | received u32 | span u32 | bursts u32
 *   | burst_sum u32 | recovered u32 | unrecovered u32 | ts_us u32
 *   | echo_ts_us u32 | echo_delay_us u32 | nack counter u64 * nacks
 */
#include "peer/internal.h"

#include <string.h>

#include "util/clock.h"
#include "util/log.h"

#define REPORT_FAST_NS (20 * YIP_NS_PER_MS)
#define REPORT_SLOW_NS (100 * YIP_NS_PER_MS)
#define LOSS_RECENT_NS (1 * YIP_NS_PER_S)
#define MISS_TTL_NS    (1 * YIP_NS_PER_S)
#define REPORT_FIXED   40
#define LOG_EVERY_NS   (5 * YIP_NS_PER_S)

static uint32_t now_us(uint64_t now)
{
	return (uint32_t)(now / 1000);
}

/* Collects the missing counters that are due a (first or repeated) NACK. */
static unsigned nacks_due(struct yip_peer *p, uint64_t now, uint64_t *out, uint64_t *next)
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
		if (n == YIP_MAX_NACKS)
			break;
		out[n++] = m->counter;
		m->nacks++;
		m->last_nack = now;
		if (m->nacks < YIP_ARQ_TRIES && (*next == 0 || now + rto < *next))
			*next = now + rto;
	}
	return n;
}

static void log_counters(struct yip_peer *p, uint64_t now)
{
	const struct yip_peer_stats *s = &p->stats;
	const struct fec_params *k = p->fec.params;

	p->fec.last_log = now;
	log_debug("peer %02x%02x%02x%02x: loss %.2f%% burst %.1f rtt %.2f ms | lost %llu fec %llu "
	          "arq %llu unrecovered %llu | redundancy %llu B | K/R default %u/%u "
	          "interactive %u/%u bulk %u/%u",
	          p->public_key[0], p->public_key[1], p->public_key[2], p->public_key[3],
	          p->fec.loss * 100, p->fec.burst, (double)p->fec.srtt / 1e6,
	          (unsigned long long)s->lost, (unsigned long long)s->fec_recovered,
	          (unsigned long long)s->arq_recovered, (unsigned long long)s->fec_unrecovered,
	          (unsigned long long)s->repair_bytes, k[FLOW_DEFAULT].k, k[FLOW_DEFAULT].r,
	          k[FLOW_INTERACTIVE].k, k[FLOW_INTERACTIVE].r, k[FLOW_BULK].k, k[FLOW_BULK].r);
}

static void report_send(struct yip_peer *p, uint64_t now)
{
	struct yip_fec *f = &p->fec;
	uint8_t buf[REPORT_FIXED + 8 * YIP_MAX_NACKS];
	uint64_t nacks[YIP_MAX_NACKS];
	uint64_t next_nack;
	unsigned n = nacks_due(p, now, nacks, &next_nack);
	uint64_t span = f->highest - f->rep_highest;

	memset(buf, 0, REPORT_FIXED);
	buf[0] = 1;
	buf[1] = (uint8_t)n;
	wire_put32(buf + 4, f->rep_received);
	wire_put32(buf + 8, (uint32_t)(span > UINT32_MAX ? UINT32_MAX : span));
	wire_put32(buf + 12, f->rep_bursts);
	wire_put32(buf + 16, f->rep_burst_sum);
	wire_put32(buf + 20, f->rep_recovered);
	wire_put32(buf + 24, f->rep_unrecovered);
	wire_put32(buf + 28, now_us(now));
	if (f->peer_ts_at) {
		wire_put32(buf + 32, f->peer_ts);
		wire_put32(buf + 36, (uint32_t)((now - f->peer_ts_at) / 1000));
	}
	for (unsigned i = 0; i < n; i++)
		wire_put64(buf + REPORT_FIXED + 8 * i, nacks[i]);
	seal_send(p, now, WIRE_REPORT, 0, 0, NULL, 0, buf, REPORT_FIXED + 8 * n);

	f->rep_received = f->rep_bursts = f->rep_burst_sum = 0;
	f->rep_recovered = f->rep_unrecovered = 0;
	f->rep_highest = f->highest;
	f->last_report = now;
	/* Missing counters still pending keep the reports coming, the next one
	 * when a NACK falls due. */
	f->nack_at = next_nack;
	f->report_due = next_nack ? next_nack : 0;
	if (now - f->last_log >= LOG_EVERY_NS)
		log_counters(p, now);
}

uint64_t report_timers(struct yip_peer *p, uint64_t now)
{
	struct yip_fec *f = &p->fec;
	bool lossy = f->rx_loss_at && now - f->rx_loss_at < LOSS_RECENT_NS;
	uint64_t due;

	if (f->report_due == 0 || p->dev->fec_off)
		return UINT64_MAX;
	due = f->last_report + (lossy ? REPORT_FAST_NS : REPORT_SLOW_NS);
	if (f->nack_at && f->nack_at < due)
		due = f->nack_at;
	if (now < due)
		return due;
	if (!session_usable(p, now)) {
		f->report_due = 0;
		return UINT64_MAX;
	}
	report_send(p, now);
	return f->report_due ? f->report_due : UINT64_MAX;
}

/*
 * Reports are added up until they cover LOSS_WINDOW datagrams (or half a
 * second): a few datagrams say little about a rate. Each window then moves
 * the estimate, faster up than down, so protection rises quickly when loss
 * appears and fades out over a few windows when it is gone.
 */
#define LOSS_WINDOW    128
#define LOSS_WINDOW_NS (500 * YIP_NS_PER_MS)

static void loss_sample(struct yip_fec *f, uint64_t now, uint32_t received, uint32_t span)
{
	double sample;

	if (f->acc_span == 0)
		f->acc_start = now;
	f->acc_span += span;
	f->acc_received += received;
	if (f->acc_span < LOSS_WINDOW && now - f->acc_start < LOSS_WINDOW_NS)
		return;
	sample = f->acc_span > f->acc_received
	             ? (double)(f->acc_span - f->acc_received) / f->acc_span
	             : 0;
	f->loss += (sample - f->loss) * (sample > f->loss ? 0.5 : 0.2);
	if (sample > 0)
		f->loss_seen = now;
	f->acc_span = f->acc_received = 0;
}

void report_receive(struct yip_peer *p, uint64_t now, const uint8_t *b, size_t len)
{
	struct yip_fec *f = &p->fec;
	unsigned n;
	uint32_t received, span, bursts, burst_sum, echo;

	if (len < REPORT_FIXED || b[0] != 1 || b[1] > YIP_MAX_NACKS ||
	    len != REPORT_FIXED + 8 * (size_t)b[1]) {
		yip_device_drop(p->dev, YIP_DROP_BAD_REPORT);
		return;
	}
	n = b[1];
	received = wire_get32(b + 4);
	span = wire_get32(b + 8);
	bursts = wire_get32(b + 12);
	burst_sum = wire_get32(b + 16);
	if (span > 0)
		loss_sample(f, now, received, span);
	if (bursts > 0) {
		double mean = (double)burst_sum / bursts;

		f->burst = f->burst * 0.75 + (mean < 1 ? 1 : mean) * 0.25;
	}
	for (int c = 0; c < FLOW_CLASSES; c++)
		fec_policy((enum flow_class)c, f->loss, f->burst, &f->params[c]);

	/* RTT from the echo of our own timestamp, minus the time it sat at the peer. */
	echo = wire_get32(b + 32);
	if (echo != 0) {
		uint32_t rtt_us = now_us(now) - echo - wire_get32(b + 36);

		if (rtt_us < 10 * 1000 * 1000) {
			uint64_t rtt = (uint64_t)rtt_us * 1000;

			f->srtt = f->srtt ? (f->srtt * 7 + rtt) / 8 : rtt;
		}
	}
	f->peer_ts = wire_get32(b + 28);
	f->peer_ts_at = now;
	for (unsigned i = 0; i < n; i++)
		fec_retransmit(p, now, wire_get64(b + REPORT_FIXED + 8 * i));
}
