/*
 * CoDel (RFC 8289): decides, for each packet leaving a queue, whether the
 * queue has been standing long enough that the sender must be told (by a
 * CE mark or a drop). No I/O and no clock: the caller passes the time and
 * how long the packet waited.
 */
#ifndef YIP_AQM_CODEL_H
#define YIP_AQM_CODEL_H

#include <stdbool.h>
#include <stdint.h>

struct codel {
	uint64_t interval, target; /* ns */
	uint64_t first_above, drop_next;
	unsigned drop_count, last_count;
	bool dropping;
};

/*
 * Sets interval and target from the round trip of the flows the queue
 * serves. The Internet default interval of 100 ms would let a LAN-speed
 * tunnel build 100 ms sawtooth queues first, so it follows the tunnel's
 * own smoothed RTT plus room for the inner endpoints: 10 ms + 2 RTT, at
 * most 100 ms. The target is a tenth of it, at least 1 ms.
 */
void codel_set(struct codel *c, uint64_t rtt_ns);

/*
 * The decision for a packet that waited sojourn ns, dequeued at now.
 * backlog: more than one packet's worth is still queued behind it (a queue
 * that empties is not standing). True: signal congestion with this packet.
 * While the queue stands, the n-th signal follows interval / sqrt(n) after
 * the one before, with n at most 4.
 */
bool codel_signal(struct codel *c, uint64_t now, uint64_t sojourn, bool backlog);

/*
 * A waiting time past which packets are dropped regardless: 2 x interval +
 * 100 ms. Only for senders that answer no signal at all. A BBR flow keeps
 * up to twice the bandwidth-delay product it estimates in flight, plus up
 * to 100 ms worth for ACKs that come in bursts; through a tunnel whose own
 * rate is uneven (a busy CPU) the estimate runs high and that much stands
 * in the queue (measured: 50-150 ms at 20 ms RTT). Dropping everything
 * over a lower limit (4 x target, 20 ms at that RTT) cost BBR 5 % of its
 * segments, and CUBIC in slow start hundreds in a row.
 */
uint64_t codel_hard_limit(const struct codel *c);

#endif
