/*
 * Loss reports. While data arrives from a peer, we tell it every 20 ms
 * (when there is loss or an open NACK) or every 100 ms (a clean link) what
 * we saw: datagrams received against the advance of its counter, the loss
 * runs, what FEC rebuilt or could not, the counters we still miss, and a
 * timestamp echo for its RTT. An idle link sends none. The sender turns the
 * reports into a smoothed loss rate and burst length, re-runs the control
 * law (fec/policy.c) for every class, and resends NACKed bulk packets.
 * The layout is struct wire_report (src/wire/wire.h).
 */
#include "peer/internal.h"

#include <string.h>

#include "util/clock.h"
#include "util/log.h"

#define REPORT_FAST_NS (20 * YIP_NS_PER_MS)
#define REPORT_SLOW_NS (100 * YIP_NS_PER_MS)
#define LOSS_RECENT_NS (1 * YIP_NS_PER_S)
#define LOG_EVERY_NS   (5 * YIP_NS_PER_S)

static uint32_t now_us(uint64_t now)
{
	return (uint32_t)(now / 1000);
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
	uint64_t span = f->highest - f->rep_highest, next_nack;
	struct wire_report r = {
	    .received = f->rep_received,
	    .span = (uint32_t)(span > UINT32_MAX ? UINT32_MAX : span),
	    .bursts = f->rep_bursts,
	    .burst_sum = f->rep_burst_sum,
	    .recovered = f->rep_recovered,
	    .unrecovered = f->rep_unrecovered,
	    .ts_us = now_us(now),
	};
	uint8_t buf[WIRE_REPORT_MAX];
	size_t len;

	/* Each of the peer's timestamps is echoed once: a second echo of the
	 * same one would give the peer another sample of a round trip whose
	 * first half is as old as that timestamp. A one-way flow's sender gets
	 * none of our data and sends no reports of its own: echoed in every one
	 * of ours, its last timestamp would pin its RTT to one sample, however
	 * stretched, for the whole flow. */
	if (f->peer_ts_at) {
		r.echo_ts_us = f->peer_ts;
		r.echo_delay_us = (uint32_t)((now - f->peer_ts_at) / 1000);
		f->peer_ts_at = 0;
	}
	r.n_nacks = (uint8_t)recover_nacks_due(p, now, r.nacks, WIRE_REPORT_MAX_NACKS, &next_nack);
	len = wire_report_put(buf, &r);
	frame_send(p, now, WIRE_REPORT, 0, 0, NULL, 0, buf, len);

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

static void loss_sample(struct yip_peer *p, uint64_t now, uint32_t received, uint32_t span)
{
	struct yip_fec *f = &p->fec;
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
	if (protect_queueing(p, now)) {
		/* A full queue's loss: redundancy would only add to the queue.
		 * The estimate keeps what the link lost without a queue, in
		 * both directions: letting only the lower samples through
		 * would drag it below the link's own loss. */
		if (sample > f->loss)
			p->stats.loss_congested++;
	} else {
		f->loss += (sample - f->loss) * (sample > f->loss ? 0.5 : 0.2);
	}
	if (sample > 0)
		f->loss_seen = now;
	f->acc_span = f->acc_received = 0;
}

/* The base RTT is the least sample of this epoch and the previous one: it
 * follows a path that got longer within 20 s, and is not raised by a
 * queue that lasts less than 10 s. */
#define RTT_EPOCH_NS (10 * YIP_NS_PER_S)

static void rtt_sample(struct yip_fec *f, uint64_t now, uint64_t rtt)
{
	if (f->rtt_epoch == 0 || now - f->rtt_epoch >= RTT_EPOCH_NS) {
		f->rtt_min_prev = f->rtt_min;
		f->rtt_min = rtt;
		f->rtt_epoch = now;
	} else if (rtt < f->rtt_min) {
		f->rtt_min = rtt;
	}
	f->rtt_last = rtt;
	f->rtt_last_at = now;
	f->srtt = f->srtt ? (f->srtt * 7 + rtt) / 8 : rtt;
}

/*
 * Whether bulk blocks are interleaved (fec/policy.h, FEC_BURSTY): loss
 * counts as bursty until the reports have shown SINGLE_EVIDENCE loss runs
 * whose mean is short, and for BURSTY_HOLD_NS after the runs were last
 * long: interleaving is what keeps them short (a lost train costs each
 * block one symbol), and single blocks would let the next lost train take
 * a whole run from one block. Measured: with whole GSO trains lost from the
 * start, single blocks cost the inner TCP its slow start (41-60 Mbit/s at
 * 20 ms RTT against 770-1070 interleaved).
 */
#define BURSTY_HOLD_NS  (30 * YIP_NS_PER_S)
#define SINGLE_EVIDENCE 256

static bool interleave(const struct yip_fec *f, uint64_t now)
{
	return f->burst >= FEC_BURSTY || f->loss_runs < SINGLE_EVIDENCE ||
	       (f->bursty_at != 0 && now - f->bursty_at < BURSTY_HOLD_NS);
}

void report_receive(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                    const uint8_t *plain, size_t len)
{
	struct yip_fec *f = &p->fec;
	struct wire_report r;
	bool inter;

	if (!wire_report_get(&r, plain, len)) {
		yip_device_drop(p->dev, YIP_DROP_BAD_REPORT);
		return;
	}
	/* RTT from the echo of our own timestamp, minus the time it sat at the peer. */
	if (r.echo_ts_us != 0) {
		uint32_t rtt_us = now_us(now) - r.echo_ts_us - r.echo_delay_us;

		if (rtt_us < 10 * 1000 * 1000) {
			rtt_sample(f, now, (uint64_t)rtt_us * 1000);
			/* The device's largest RTT (CoDel's interval) follows the
			 * peer that holds it, down too, until another's is larger. */
			if (f->srtt > p->dev->rtt_max || p->dev->rtt_max_peer == p) {
				p->dev->rtt_max = f->srtt;
				p->dev->rtt_max_peer = p;
			}
		}
	}
	/* Loss after the RTT: whether the path is queueing decides what it means. */
	if (r.span > 0)
		loss_sample(p, now, r.received, r.span);
	if (r.bursts > 0) {
		double mean = (double)r.burst_sum / r.bursts;

		f->burst = f->burst * 0.75 + (mean < 1 ? 1 : mean) * 0.25;
		f->loss_runs += f->loss_runs < SINGLE_EVIDENCE ? r.bursts : 0;
		if (f->burst >= FEC_BURSTY)
			f->bursty_at = now;
	}
	inter = interleave(f, now);
	for (int c = 0; c < FLOW_CLASSES; c++)
		fec_policy((enum flow_class)c, f->loss, f->burst, (double)protect_base_rtt(p) / 1e9,
		           inter, &f->params[c]);
	f->peer_ts = r.ts_us;
	f->peer_ts_at = now;
	for (unsigned i = 0; i < r.n_nacks; i++)
		protect_retransmit(p, now, kp, r.nacks[i]);
}
