#include "aqm/codel.h"

#include <math.h>

#define MS           1000000ULL
#define MIN_INTERVAL (10 * MS)
#define MAX_INTERVAL (100 * MS)

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
	uint64_t limit = 4 * c->target;

	return limit > 10 * MS ? limit : 10 * MS;
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
			c->drop_count++;
			c->drop_next = next_signal(c, c->drop_next, c->drop_count);
			return true;
		}
	} else if (over) {
		/* Coming back soon after the last episode: resume near its rate. */
		unsigned delta = c->drop_count - c->last_count;

		c->dropping = true;
		c->drop_count = delta > 1 && now - c->drop_next < 16 * c->interval ? delta : 1;
		c->drop_next = next_signal(c, now, c->drop_count);
		c->last_count = c->drop_count;
		return true;
	}
	return false;
}
