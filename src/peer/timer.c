/*
 * The peers' deadlines: a binary min-heap of peers keyed by the earliest
 * time each wants its timers run. A tick pops only the peers that are due,
 * so its cost follows the busy peers, not the configured ones; an idle peer
 * costs nothing until its own (keepalive, rekey, expiry) deadline.
 *
 * A peer is in the heap while it has a deadline (timer_at != UINT64_MAX);
 * heap_pos is its slot there.
 */
#include "peer/internal.h"

#include <stdlib.h>

#define NOT_IN_HEAP SIZE_MAX

static void put(struct yip_device *dev, size_t i, struct yip_peer *p)
{
	dev->heap[i] = p;
	p->heap_pos = i;
}

static void sift_up(struct yip_device *dev, size_t i)
{
	struct yip_peer *p = dev->heap[i];

	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (dev->heap[up]->timer_at <= p->timer_at)
			break;
		put(dev, i, dev->heap[up]);
		i = up;
	}
	put(dev, i, p);
}

static void sift_down(struct yip_device *dev, size_t i)
{
	struct yip_peer *p = dev->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= dev->heap_len)
			break;
		if (c + 1 < dev->heap_len && dev->heap[c + 1]->timer_at < dev->heap[c]->timer_at)
			c++;
		if (p->timer_at <= dev->heap[c]->timer_at)
			break;
		put(dev, i, dev->heap[c]);
		i = c;
	}
	put(dev, i, p);
}

int timer_reserve(struct yip_device *dev, size_t n)
{
	struct yip_peer **h;

	if (n <= dev->heap_cap)
		return 0;
	/* Doubling: peers added one by one cost a few moves, not one each. */
	if (n < 2 * dev->heap_cap)
		n = 2 * dev->heap_cap;
	h = realloc(dev->heap, n * sizeof(*h));
	if (h == NULL)
		return -1;
	dev->heap = h;
	dev->heap_cap = n;
	return 0;
}

void timer_init_peer(struct yip_peer *p)
{
	p->timer_at = UINT64_MAX;
	p->heap_pos = NOT_IN_HEAP;
}

void timer_set(struct yip_peer *p, uint64_t when)
{
	struct yip_device *dev = p->dev;

	if (when >= p->timer_at)
		return;
	p->timer_at = when;
	if (p->heap_pos == NOT_IN_HEAP) {
		/* timer_reserve made room for every peer of the device. */
		put(dev, dev->heap_len++, p);
	}
	sift_up(dev, p->heap_pos);
}

void timer_del(struct yip_peer *p)
{
	struct yip_device *dev = p->dev;
	size_t i = p->heap_pos;

	if (i == NOT_IN_HEAP)
		return;
	p->heap_pos = NOT_IN_HEAP;
	p->timer_at = UINT64_MAX;
	if (i == --dev->heap_len)
		return;
	put(dev, i, dev->heap[dev->heap_len]);
	sift_down(dev, i);
	sift_up(dev, i);
}

struct yip_peer *timer_pop_due(struct yip_device *dev, uint64_t now)
{
	struct yip_peer *p;

	if (dev->heap_len == 0 || dev->heap[0]->timer_at > now)
		return NULL;
	p = dev->heap[0];
	timer_del(p);
	return p;
}

uint64_t timer_next(const struct yip_device *dev)
{
	return dev->heap_len ? dev->heap[0]->timer_at : UINT64_MAX;
}

void timer_free(struct yip_device *dev)
{
	free(dev->heap);
	dev->heap = NULL;
	dev->heap_len = dev->heap_cap = 0;
}
