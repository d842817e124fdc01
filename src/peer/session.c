/*
 * Key slots. A peer has up to three sessions: previous (receive-only for a
 * while after a rekey), current (send and receive) and next (made by an
 * Init we answered; it becomes current when the peer first uses it, which
 * proves the peer got our Resp). Each has a receiver index in the device's
 * index table while it is valid.
 */
#include "peer/internal.h"

#include <sodium.h>

void session_clear(struct yip_device *dev, struct yip_keypair *kp)
{
	if (kp->valid)
		index_del(dev, kp->local_index);
	sodium_memzero(kp, sizeof(*kp));
}

/* Moves a keypair between slots; its index keeps pointing at the same peer. */
static void session_move(struct yip_device *dev, struct yip_keypair *dst, struct yip_keypair *src)
{
	session_clear(dev, dst);
	*dst = *src;
	sodium_memzero(src, sizeof(*src));
}

uint64_t session_rekey_age(const struct yip_peer *p)
{
	const struct yip_timing *t = &p->dev->t;

	/* The side that initiated a session rekeys it first; the other only
	 * as a fallback, so the two do not race each other. */
	return p->cur.initiator ? t->rekey_after : t->rekey_after + t->rekey_after / 2;
}

void session_install(struct yip_peer *p, struct yip_keypair *kp, uint64_t now, uint64_t wall)
{
	kp->valid = true;
	kp->created = now;
	kp->send_counter = 0;
	replay_init(&kp->replay);
	p->stats.handshakes++;
	p->stats.last_handshake_wall = wall;
	schedule_peer(p, now + session_rekey_age(p));
}

void session_retire_current(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;

	session_move(dev, &p->prev, &p->cur);
	p->prev_retire = now + dev->t.prev_overlap;
	schedule_peer(p, p->prev_retire);
}

void session_promote(struct yip_peer *p, uint64_t now)
{
	session_retire_current(p, now);
	session_move(p->dev, &p->cur, &p->next);
}

struct yip_keypair *session_for_index(struct yip_peer *p, uint32_t index)
{
	if (p->cur.valid && p->cur.local_index == index)
		return &p->cur;
	if (p->next.valid && p->next.local_index == index)
		return &p->next;
	if (p->prev.valid && p->prev.local_index == index)
		return &p->prev;
	return NULL;
}

bool session_usable(const struct yip_peer *p, uint64_t now)
{
	const struct yip_keypair *kp = &p->cur;

	return kp->valid && now - kp->created < p->dev->t.reject_after &&
	       kp->send_counter < YIP_REJECT_AFTER_MESSAGES;
}

bool session_rekey_due(const struct yip_peer *p, uint64_t now)
{
	if (!p->cur.valid || p->hs_pending)
		return false;
	return now - p->cur.created >= session_rekey_age(p) ||
	       p->cur.send_counter >= YIP_REKEY_AFTER_MESSAGES;
}

uint64_t session_timers(struct yip_peer *p, uint64_t now)
{
	struct yip_keypair *kps[] = {&p->prev, &p->cur, &p->next};
	uint64_t next = UINT64_MAX;

	if (p->prev.valid && now >= p->prev_retire)
		session_clear(p->dev, &p->prev);
	else if (p->prev.valid)
		next = p->prev_retire;
	for (size_t i = 0; i < 3; i++) {
		if (!kps[i]->valid)
			continue;
		if (now - kps[i]->created >= p->dev->t.reject_after)
			session_clear(p->dev, kps[i]);
		else
			next = min64(next, kps[i]->created + p->dev->t.reject_after);
	}
	return next;
}
