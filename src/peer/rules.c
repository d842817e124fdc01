/*
 * The timer rules: what the engine does when time passes. yip_device_timers
 * runs them; each peer's run returns its next deadline and the peer waits in
 * the timer heap (timer.c) until then.
 *
 * For a peer:
 *   - Keys past their lifetime are wiped; previous keys go prev_overlap
 *     after a rekey (session.c).
 *   - Rekey: a current session is renewed by a new handshake once it is
 *     rekey_after old on the side that initiated it (one and a half times
 *     that on the other, so the two do not race), but only if data went
 *     either way within rekey_after: an idle session is left to expire.
 *   - Dead peer: data sent and nothing authenticated back for dead_after
 *     starts a new handshake.
 *   - Passive keepalive: data received and nothing sent back for keepalive
 *     sends an empty datagram, so the peer knows its data arrived.
 *   - Cover (obf_cover_ms): while a session is idle, a keepalive at random
 *     intervals, half to one and a half times the setting.
 *   - Persistent keepalive: a peer with one configured gets a datagram
 *     that often even when idle, and a handshake when it has no session.
 *   - Loss recovery, loss reports, path probes and the handshake's own
 *     retries (from retry_base, doubling to retry_max, given up after
 *     rekey_attempt: the packets that waited are dropped and the
 *     rendezvous servers are asked for the peer) run their own timers.
 *   - A peer that carried traffic in the last 10 s is looked at at least
 *     once a second.
 * For a rendezvous server's session: keys expire, handshakes retry, and it
 *   is rekeyed on time whether or not anything is said over it; the
 *   servers' own timers (registrations, lookups) are rendezvous.c's.
 * On a CA-gated node: every MEMBERS_SWEEP_NS the members members_expels
 *   names (revoked, expired, idle) are removed, and at once when a new
 *   revocation list is adopted; gossip gets its turn when it is due or
 *   asked for something.
 * Nothing due again at once runs before the next tick: a deadline that
 * stays in the past waits a millisecond instead of spinning the loop.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdio.h>

#include "util/clock.h"
#include "util/log.h"

/* How often to look for members whose certificates expired or were revoked. */
#define MEMBERS_SWEEP_NS (5 * YIP_NS_PER_S)

static uint64_t peer_timers(struct yip_peer *p, uint64_t now)
{
	const struct yip_timing *t = &p->dev->t;
	uint64_t next = session_timers(p, now);
	bool gave_up;

	/* Rekey a session that is old and still in use. */
	if (p->cur != NULL && !p->hs_pending) {
		uint64_t due = p->cur->created + session_rekey_age(p);
		bool active = (p->last_tx_data && now - p->last_tx_data < t->rekey_after) ||
		              (p->last_rx_data && now - p->last_rx_data < t->rekey_after);

		if (now >= due && active)
			handshake_start(p, now);
		else if (now < due)
			next = min64(next, due);
	}
	/* Dead peer: we sent data and heard nothing back. Try a new handshake. */
	if (p->first_unanswered != 0) {
		if (now - p->first_unanswered >= t->dead_after) {
			p->first_unanswered = 0;
			handshake_start(p, now);
		} else {
			next = min64(next, p->first_unanswered + t->dead_after);
		}
	}
	/* Passive keepalive: the peer sent data and we had nothing to say back. */
	if (p->last_rx_data > p->last_tx && session_usable(p, now)) {
		if (now - p->last_rx_data >= t->keepalive)
			datapath_send(p, now, (const uint8_t *)"", 0);
		else
			next = min64(next, p->last_rx_data + t->keepalive);
	}
	/* obf_cover_ms: while the session is idle, a keepalive at random
	 * intervals (half to one and a half times the setting), so silence and
	 * the rhythm of the traffic say less (docs/obfuscation.md). */
	if (p->dev->obf_cover != 0 && session_usable(p, now) && p->has_endpoint) {
		uint64_t c = p->dev->obf_cover;

		if (p->cover_at == 0)
			p->cover_at = now + c / 2 + randombytes_uniform(1000) * c / 1000;
		if (now >= p->cover_at) {
			if (now - p->last_tx >= c / 2)
				datapath_send(p, now, (const uint8_t *)"", 0);
			p->cover_at = now + c / 2 + randombytes_uniform(1000) * c / 1000;
		}
		next = min64(next, p->cover_at);
	}
	/* Persistent keepalive keeps NAT mappings open even when idle. */
	if (p->persistent_keepalive && p->has_endpoint) {
		uint64_t every = p->persistent_keepalive * YIP_NS_PER_S;

		if (!session_usable(p, now)) {
			handshake_start(p, now); /* the handshake timers take it from here */
		} else {
			if (now - p->last_tx >= every)
				datapath_send(p, now, (const uint8_t *)"", 0);
			next = min64(next, p->last_tx + every);
		}
	}
	next = min64(next, protect_timers(p, now));
	next = min64(next, recover_timers(p, now));
	next = min64(next, report_timers(p, now));
	next = min64(next, punch_timers(p, now));
	next = min64(next, handshake_timers(p, now, &gave_up));
	if (gave_up) {
		datapath_queue_drop(p, YIP_DROP_HANDSHAKE_TIMEOUT);
		rendezvous_lookup(p, now); /* maybe a server knows a way */
	}
	next = min64(next, rendezvous_peer_timers(p, now));
	/* A peer that carried traffic lately is looked at at least once a
	 * second: cheap (only busy peers), and a deadline some receive path
	 * forgot to schedule is late by a second at most. */
	if ((p->last_tx && now - p->last_tx < 10 * YIP_NS_PER_S) ||
	    (p->last_rx_data && now - p->last_rx_data < 10 * YIP_NS_PER_S))
		next = min64(next, now + YIP_NS_PER_S);
	return next;
}

/* A server's session: keys expire, handshakes retry, and it is rekeyed on
 * time whether or not anything is said over it. */
static uint64_t server_session_timers(struct yip_peer *sp, uint64_t now)
{
	uint64_t next = session_timers(sp, now);
	bool gave_up;

	if (sp->cur != NULL && !sp->hs_pending) {
		uint64_t due = sp->cur->created + session_rekey_age(sp);

		if (now >= due)
			handshake_start(sp, now);
		else
			next = min64(next, due);
	}
	return min64(next, handshake_timers(sp, now, &gave_up));
}

/*
 * Takes out the dynamic peers whose certificates are revoked or expired,
 * and members (not roots) silent for MEMBERS_IDLE_NS without a session:
 * they are admitted again when they call. Cheap checks only (times, a
 * hash, binary searches): the signatures were checked at admission.
 */
static void members_sweep(struct yip_device *dev, uint64_t now)
{
	uint64_t unix_now = members_unix(dev);

	/* Backwards: removing a peer moves the last one into its slot. */
	for (size_t i = dev->n_peers; i-- > 0;) {
		struct yip_peer *p = dev->peers[i];
		const char *why = p->configured ? NULL : members_expels(dev, p, now, unix_now);
		char name[WIRE_MEMBER_NAME_MAX + 1] = "";

		if (why == NULL)
			continue;
		if (p->member != NULL)
			snprintf(name, sizeof(name), "%s", p->member->cert.f.name);
		log_info("member \"%s\" (%02x%02x%02x%02x) removed: %s", name, p->public_key[0],
		         p->public_key[1], p->public_key[2], p->public_key[3], why);
		punch_free(p);
		peer_free(p);
		dev->members->removed++;
	}
}

enum member_verdict rules_offer_revocations(struct yip_device *dev, uint64_t now,
                                            const uint8_t *obj, size_t len)
{
	bool adopted;
	enum member_verdict v = members_offer_revocations(dev, obj, len, &adopted);

	if (adopted) {
		members_sweep(dev, now); /* at once: revoked members lose their sessions now */
		records_gossip_revoked(dev, now);
	}
	return v;
}

/*
 * Gossip's turn: what its callbacks asked for (a newer root set or
 * revocation list from a neighbour is adopted as from a file), then its
 * timers. Gossip is told of sessions that went down here too.
 */
static void members_gossip(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;
	const uint8_t *obj;
	size_t len;

	if (ms->gossip != NULL && now < ms->gossip_at && !ms->gossip_roots && !ms->gossip_revs &&
	    ms->n_want == 0)
		return;
	if (ms->gossip_roots && (obj = records_gossip_item(dev, WIRE_OBJ_ROOTS, &len)) != NULL)
		yip_device_offer_roots(dev, now, obj, len);
	if (ms->gossip_revs && (obj = records_gossip_item(dev, WIRE_OBJ_REVOCATIONS, &len)) != NULL)
		rules_offer_revocations(dev, now, obj, len);
	ms->gossip_roots = ms->gossip_revs = false;
	for (size_t i = 0; i < dev->n_peers; i++)
		records_session(dev->peers[i], now);
	ms->gossip_at = records_gossip_timers(dev, now);
}

uint64_t yip_device_timers(struct yip_device *dev, uint64_t now)
{
	struct yip_peer *due[64];
	size_t n;
	uint64_t next;

	/* Paths taken while the device was set up, before there was a clock,
	 * date from the first tick (their age is shown, and a path silent for
	 * too long counts as dead). */
	if (!dev->clock_seen) {
		dev->clock_seen = true;
		for (size_t i = 0; i < dev->n_peers; i++)
			if (dev->peers[i]->path >= 0 && dev->peers[i]->path_since == 0)
				dev->peers[i]->path_since = now;
		for (size_t i = 0; i < dev->n_servers; i++)
			if (dev->servers[i].peer.path >= 0 && dev->servers[i].peer.path_since == 0)
				dev->servers[i].peer.path_since = now;
	}
	/* The servers: a handful, on their own deadline. */
	if (now >= dev->next_timer) {
		dev->next_timer = UINT64_MAX; /* their actions may schedule() below */
		next = rendezvous_timers(dev, now);
		for (size_t i = 0; i < dev->n_servers; i++)
			next = min64(next, server_session_timers(&dev->servers[i].peer, now));
		next = min64(next, dev->next_timer);
		dev->next_timer = next > now ? next : now + YIP_NS_PER_MS;
	}
	/* Members whose certificates expired or were revoked lose their sessions. */
	if (dev->members != NULL && now >= dev->members->sweep_at) {
		members_sweep(dev, now);
		records_gossip_expire(dev, now);
		dev->members->sweep_at = now + MEMBERS_SWEEP_NS;
	}
	if (members_on(dev))
		members_gossip(dev, now);
	/* The peers that are due, each once: taken out first, so one that asks
	 * to run again at once waits for the next tick instead of spinning. */
	do {
		struct yip_peer *d;

		for (n = 0; n < sizeof(due) / sizeof(due[0]) && (d = timer_pop_due(dev, now)); n++)
			due[n] = d;
		for (size_t i = 0; i < n; i++) {
			struct yip_peer *p = due[i];

			next = peer_timers(p, now);
			dev->timer_runs++;
			if (p->timer_at <= now) {
				timer_del(p); /* it asked to run again at once: next tick */
				next = 0;
			}
			schedule_peer(p, next > now ? next : now + YIP_NS_PER_MS);
		}
	} while (n == sizeof(due) / sizeof(due[0]));
	next = min64(dev->next_timer, timer_next(dev));
	if (dev->members != NULL)
		next = min64(next, min64(dev->members->sweep_at, dev->members->gossip_at));
	/* What asked to run again at once waits a millisecond, so a deadline
	 * that stays in the past cannot spin the loop. */
	return next > now ? next : now + YIP_NS_PER_MS;
}
