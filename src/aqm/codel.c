#include "aqm/codel.h"

#include <math.h>

#define MS           1000000ULL
#define MIN_INTERVAL (10 * MS)
#define MAX_INTERVAL (100 * MS)
/* What BBR's window allows on top of twice its bandwidth-delay product for
 * ACKs that arrive in bursts (Linux: bbr_extra_acked_max_us). */
#define ACK_AGGREGATION (100 * MS)
/*
 * The signal count stops growing here: signals come at most every
 * interval / sqrt(MAX_COUNT). A loss-based TCP answers the first one or two
 * (each costs it 30-50 % of its window); a sender that does not slow down
 * for sparse loss (BBR) is not slowed by a few more either, and an ever
 * faster drop rate only turns into its retransmissions (measured: 5 % of
 * BBR's segments at 20 ms RTT). Its delay is bounded by its own window and,
 * for senders that answer nothing, by the hard limit.
 */
#define MAX_COUNT 4

void codel_set(struct codel *c, uint64_t rtt_ns)
{
	uint64_t interval = MIN_INTERVAL + 2 * rtt_ns;

	if (interval > MAX_INTERVAL || rtt_ns > MAX_INTERVAL)
		interval = MAX_INTERVAL;
	c->interval = interval;
	c->target = interval / 10 > MS ? interval / 10 : MS;
}

uint64_t codel_hard_limit(const struct codel *c)
{
	return 2 * c->interval + ACK_AGGREGATION;
}

/* Signals come closer together the longer the queue stands: interval/sqrt(n). */
static uint64_t next_signal(const struct codel *c, uint64_t t, unsigned count)
{
	return t + (uint64_t)((double)c->interval / sqrt((double)count));
}

bool codel_signal(struct codel *c, uint64_t now, uint64_t sojourn, bool backlog)
{
	bool over = false;

	if (sojourn < c->target || !backlog) {
		c->first_above = 0;
	} else if (c->first_above == 0) {
		c->first_above = now + c->interval;
	} else if (now >= c->first_above) {
		over = true;
	}
	if (c->dropping) {
		if (!over) {
			c->dropping = false;
		} else if (now >= c->drop_next) {
			if (c->drop_count < MAX_COUNT)
				c->drop_count++;
			c->drop_next = next_signal(c, c->drop_next, c->drop_count);
			return true;
		}
	} else if (over) {
		/* Coming back soon after the last episode: resume near its rate. */
		unsigned delta = c->drop_count - c->last_count;

		c->dropping = true;
		c->drop_count = delta > 1 && now - c->drop_next < 16 * c->interval ? delta : 1;
		if (c->drop_count > MAX_COUNT)
			c->drop_count = MAX_COUNT;
		c->drop_next = next_signal(c, now, c->drop_count);
		c->last_count = c->drop_count;
		return true;
	}
	return false;
}
