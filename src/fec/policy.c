#include "fec/policy.h"

#include <math.h>

#include "fec/fec.h"

/*
 * Per class: the block size, how long a block may wait for it, the block
 * failure probability we aim below (at round trips up to rtt_ref, tighter
 * beyond: see class_target), the repair floor kept even on a clean link,
 * and how far ahead of the measured loss we plan (loss x scale + add:
 * estimates lag). Interactive traffic sends every packet as its own
 * block with its repairs right behind it, so a lost packet is rebuilt
 * within microseconds; it keeps one repair even when no loss has been
 * seen, because its first loss would otherwise cost a whole retransmission
 * timeout. Bulk traffic uses the longest blocks (cheapest redundancy) and
 * leaves what FEC misses to ARQ, which a bulk transfer can wait one round
 * trip for: a looser target and a smaller margin (at 5 % loss 64+11, 15 %
 * of the wire bytes, where 32+10 took 24 %; about 6 in 10^5 packets are
 * left to ARQ). On a clean link it carries no redundancy at all.
 */
static const struct {
	uint8_t k;
	uint8_t r_floor;
	uint8_t r_max;
	uint32_t hold_us;
	double target;
	double rtt_ref; /* seconds; 0: the target does not depend on the round trip */
	double scale, add;
} classes[FLOW_CLASSES] = {
    [FLOW_DEFAULT] = {16, 0, 12, 3000, 1e-4, 0, 1.25, 0.005},
    [FLOW_INTERACTIVE] = {1, 1, 4, 0, 2e-3, 0, 1.25, 0.005},
    [FLOW_BULK] = {64, 0, FEC_MAX_R, 5000, 3e-3, 0.010, 1.1, 0.002},
};

/* The tightest target a round trip can ask for. */
#define TARGET_MIN 1e-5

/*
 * The block failure probability a class aims below at this round trip.
 * What bulk FEC misses goes to ARQ, which brings it back a round trip and
 * more later. The inner TCP waits only a fraction of its round trip for a
 * hole to fill before it retransmits and cuts its window, and CUBIC takes
 * longer to grow back the longer the round trip (its window, and so the
 * time to regain it, grows with the bandwidth-delay product). So past
 * rtt_ref every failure costs more, and the target falls with the square
 * of the round trip: 4 times tighter at 20 ms than at 10 ms, 100 times at
 * 100 ms. Measured: at 100 ms and 1 % loss, 64+4 left about 1 block in
 * 600 to ARQ and each was a cut of the inner TCP's window; at 20 ms and
 * 5 %, 64+12 instead of 64+11 halved what FEC could not rebuild and
 * moved the median of 9 interleaved runs from 741 to 894 Mbit/s.
 */
static double class_target(enum flow_class c, double rtt)
{
	double t = classes[c].target, ref = classes[c].rtt_ref;

	if (ref > 0 && rtt > ref) {
		t *= (ref / rtt) * (ref / rtt);
		if (t < TARGET_MIN)
			t = TARGET_MIN;
	}
	return t;
}

/* P(X > r) for X ~ Binomial(n, p). */
static double binomial_tail(unsigned n, unsigned r, double p)
{
	double pmf, cdf = 0;

	if (p <= 0)
		return 0;
	if (p >= 1)
		return r < n ? 1 : 0;
	pmf = pow(1 - p, n); /* P(X = 0) */
	for (unsigned x = 0; x <= r && x <= n; x++) {
		cdf += pmf;
		pmf *= (double)(n - x) / (x + 1) * p / (1 - p);
	}
	return cdf >= 1 ? 0 : 1 - cdf;
}

/*
 * Bursty loss is modelled as loss events at rate p / burst, each taking
 * ceil(burst) consecutive symbols; the block fails when the events take more
 * symbols than it has repairs. With burst = 1 this is plain binomial loss.
 */
double fec_block_failure(unsigned n, unsigned r, double p, double burst)
{
	unsigned len;

	if (burst < 1.5)
		return binomial_tail(n, r, p);
	len = (unsigned)ceil(burst);
	return binomial_tail(n, r / len, p / burst);
}

/* The loss to plan for, and the burst each block of the class sees. */
static void plan(enum flow_class c, unsigned lanes, double *loss, double *burst)
{
	/* Plan for a little more loss than measured: estimates lag. */
	*loss = *loss * classes[c].scale + classes[c].add;
	if (*loss > 0.5)
		*loss = 0.5;
	/* Interleaved blocks take one symbol each of a run up to the lanes long. */
	*burst /= lanes > 0 ? lanes : 1;
	if (*burst < 1)
		*burst = 1;
}

unsigned fec_repairs_for(enum flow_class c, double loss, double burst, double rtt, unsigned n,
                         unsigned r, unsigned lanes)
{
	unsigned want;
	double target;

	if ((unsigned)c >= FLOW_CLASSES)
		c = FLOW_DEFAULT;
	if (r <= 1 || loss < FEC_CLEAN_LOSS)
		return r;
	plan(c, lanes, &loss, &burst);
	target = class_target(c, rtt);
	for (want = 1; want < r; want++)
		if (fec_block_failure(n + want, want, loss, burst) <= target)
			break;
	return want;
}

void fec_policy(enum flow_class c, double loss, double burst, double rtt, bool interleave,
                struct fec_params *out)
{
	unsigned r;
	double target;

	if ((unsigned)c >= FLOW_CLASSES)
		c = FLOW_DEFAULT;
	out->k = classes[c].k;
	out->hold_us = classes[c].hold_us;
	out->lanes = c == FLOW_BULK && interleave ? FEC_BULK_LANES : 1;
	if (loss < FEC_CLEAN_LOSS) {
		out->r = classes[c].r_floor;
		return;
	}
	plan(c, out->lanes, &loss, &burst);
	target = class_target(c, rtt);
	/* The fewest repairs that meet the target; if even the most allowed do
	 * not, halve the block (more overhead, but recovery keeps up). Not for
	 * bursty loss: a burst takes a share of any block, so shorter blocks
	 * only multiply the overhead; there the repairs' spacing and ARQ help. */
	for (;;) {
		for (r = classes[c].r_floor > 1 ? classes[c].r_floor : 1; r < classes[c].r_max; r++)
			if (fec_block_failure(out->k + r, r, loss, burst) <= target)
				break;
		if (r < classes[c].r_max || out->k <= 4 || burst >= 1.5)
			break;
		/* What the round trip adds to the target is worth repairs, not
		 * shorter blocks: those would double the overhead. */
		if (fec_block_failure(out->k + r, r, loss, burst) <= classes[c].target)
			break;
		out->k /= 2;
	}
	out->r = (uint8_t)r;
}
