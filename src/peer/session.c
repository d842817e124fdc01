/*
 * Key slots. A peer has up to three sessions: previous (receive-only for a
 * while after a rekey), current (send and receive) and next (made by an
 * Init we answered; it becomes current when the peer first uses it, which
 * proves the peer got our Resp). Each has a receiver index in the device's
 * index table while it exists, and lives in a key slot; so does the state
 * of a handshake we initiated (struct yip_key_store).
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static bool slot_in_memory(const struct yip_key_store *ks, const union yip_key_slot *s)
{
	return ks->mem != NULL && (uintptr_t)s >= (uintptr_t)ks->mem &&
	       (uintptr_t)s < (uintptr_t)(ks->mem + ks->n);
}

void *session_slot_new(struct yip_device *dev)
{
	struct yip_key_store *ks = &dev->keys;
	union yip_key_slot *s;

	if (ks->free != NULL) {
		s = ks->free;
		ks->free = s->free_next;
	} else if (ks->used < ks->n) {
		s = &ks->mem[ks->used++]; /* first use: lowest first */
	} else if (ks->mem != NULL) {
		/* Sized for every slot every peer can hold: never, short of a bug. */
		ks->refused++;
		return NULL;
	} else {
		s = aligned_alloc(_Alignof(union yip_key_slot), sizeof(*s));
		if (s == NULL)
			return NULL;
	}
	memset(s, 0, sizeof(*s));
	ks->held++;
	return s;
}

struct yip_keypair *session_slot_reuse(void *slot)
{
	union yip_key_slot *s = slot;

	sodium_memzero(s, sizeof(*s));
	return &s->kp;
}

void session_slot_free(struct yip_device *dev, void *slot)
{
	struct yip_key_store *ks = &dev->keys;
	union yip_key_slot *s = slot;

	if (s == NULL)
		return;
	sodium_memzero(s, sizeof(*s));
	ks->held--;
	if (slot_in_memory(ks, s)) {
		s->free_next = ks->free;
		ks->free = s;
	} else {
		free(s);
	}
}

size_t yip_device_key_memory_size(const struct yip_device *dev)
{
	return (dev->max_configured + dev->max_dynamic + dev->n_servers) * YIP_KEY_SLOTS_PER_PEER *
	       sizeof(union yip_key_slot);
}

void yip_device_key_memory(struct yip_device *dev, void *mem, size_t len)
{
	dev->keys.mem = mem;
	dev->keys.n = mem != NULL ? len / sizeof(union yip_key_slot) : 0;
	dev->keys.used = 0;
	dev->keys.free = NULL;
}

void session_clear(struct yip_device *dev, struct yip_keypair **kp)
{
	if (*kp == NULL)
		return;
	index_del(dev, (*kp)->local_index);
	session_slot_free(dev, *kp);
	*kp = NULL;
}

/* Moves a keypair between slots; its index keeps pointing at the same peer. */
static void session_move(struct yip_device *dev, struct yip_keypair **dst, struct yip_keypair **src)
{
	session_clear(dev, dst);
	*dst = *src;
	*src = NULL;
}

uint64_t session_rekey_age(const struct yip_peer *p)
{
	const struct yip_timing *t = &p->dev->t;

	/* The side that initiated a session rekeys it first; the other only
	 * as a fallback, so the two do not race each other. */
	return p->cur != NULL && p->cur->initiator ? t->rekey_after
	                                           : t->rekey_after + t->rekey_after / 2;
}

void session_install(struct yip_peer *p, struct yip_keypair *kp, uint64_t now, uint64_t wall)
{
	kp->created = now;
	kp->send_counter = 0;
	replay_init(&kp->replay);
	p->stats.handshakes++;
	if (!p->is_server)
		p->dev->totals.hs_completed++;
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
	if (p->cur != NULL && p->cur->local_index == index)
		return p->cur;
	if (p->next != NULL && p->next->local_index == index)
		return p->next;
	if (p->prev != NULL && p->prev->local_index == index)
		return p->prev;
	return NULL;
}

bool session_usable(const struct yip_peer *p, uint64_t now)
{
	const struct yip_keypair *kp = p->cur;

	return kp != NULL && now - kp->created < p->dev->t.reject_after &&
	       kp->send_counter < YIP_REJECT_AFTER_MESSAGES;
}

bool session_rekey_due(const struct yip_peer *p, uint64_t now)
{
	if (p->cur == NULL || p->hs_pending)
		return false;
	return now - p->cur->created >= session_rekey_age(p) ||
	       p->cur->send_counter >= YIP_REKEY_AFTER_MESSAGES;
}

uint64_t session_timers(struct yip_peer *p, uint64_t now)
{
	struct yip_keypair **kps[] = {&p->prev, &p->cur, &p->next};
	uint64_t next = UINT64_MAX;

	if (p->prev != NULL && now >= p->prev_retire)
		session_clear(p->dev, &p->prev);
	else if (p->prev != NULL)
		next = p->prev_retire;
	for (size_t i = 0; i < 3; i++) {
		if (*kps[i] == NULL)
			continue;
		if (now - (*kps[i])->created >= p->dev->t.reject_after)
			session_clear(p->dev, kps[i]);
		else
			next = min64(next, (*kps[i])->created + p->dev->t.reject_after);
	}
	return next;
}
