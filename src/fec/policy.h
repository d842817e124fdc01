/*
 * The redundancy control law: from the loss the receiver reports (rate and
 * mean burst length), choose per traffic class the block size K, the number
 * of repair symbols R and how long a block may stay open. See
 * docs/protocol.md, "Adaptive redundancy".
 */
#ifndef YIP_FEC_POLICY_H
#define YIP_FEC_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "flow/flow.h"

struct fec_params {
	uint8_t k;        /* sources per block (the block may close earlier) */
	uint8_t r;        /* repairs per block; 0 = no FEC */
	uint8_t lanes;    /* blocks a group interleaves (see FEC_BULK_LANES) */
	uint32_t hold_us; /* longest a block stays open */
};

/* Loss below this is treated as a clean link (no redundancy but the interactive floor). */
#define FEC_CLEAN_LOSS 0.002

/*
 * Probability that a block of n symbols loses more than r of them when
 * symbols are lost at rate p in bursts of mean length burst (>= 1).
 */
double fec_block_failure(unsigned n, unsigned r, double p, double burst);

/*
 * Chooses the parameters for class c given the estimated loss rate, mean
 * burst and the path's base round trip in seconds (its least recent RTT,
 * without a queue's delay; 0 when not measured yet). interleave: bulk
 * blocks go over FEC_BULK_LANES (the caller's judgement of whether loss is
 * bursty, which may look further back than burst: see FEC_BURSTY).
 */
void fec_policy(enum flow_class c, double loss, double burst, double rtt, bool interleave,
                struct fec_params *out);

/*
 * How many of a block's r repairs to send when it closed with only n
 * sources (its hold time ran out first): the fewest that meet the class's
 * target for a block that short, at least 1, at most r. lanes: its
 * group's.
 */
unsigned fec_repairs_for(enum flow_class c, double loss, double burst, double rtt, unsigned n,
                         unsigned r, unsigned lanes);

/*
 * Loss whose runs average this long or longer is bursty: whole GSO trains
 * lost at once, a queue that overflowed.
 */
#define FEC_BURSTY 1.5

/*
 * Bulk blocks are sent interleaved over FEC_BULK_LANES while loss is
 * bursty: packet i of a group goes to block i mod FEC_BULK_LANES.
 * Consecutive datagrams then belong to different blocks and may share a
 * GSO train, whose loss costs each block one symbol; a loss run that long
 * is independent loss to each. The price is time: a block's sources are
 * spread over lanes x K packets, and a lost one is rebuilt only after the
 * group's last, while the sources behind it wait to be delivered in order.
 * Under loss that comes in single datagrams (burst below FEC_BURSTY) a
 * group is one block, rebuilt four times sooner.
 */
#define FEC_BULK_LANES 4

#endif
