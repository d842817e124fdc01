/*
 * Path probing between peers: PROBE and PROBE_OK, sealed under the peer's
 * session, find which candidate paths work (and open NAT mappings on the
 * way: a probe out is also a punch), measure their round trip, keep the
 * current one alive, and move off it when it dies. The rules are in
 * docs/nat.md ("Paths"); path.c keeps the table.
 *
 *  - Discovery: while the current path is a relay or some direct candidate
 *    has not answered, every sendable direct candidate gets a probe each
 *    round: every 200 ms for 2 s, then every second until 30 s, then with
 *    backoff up to a minute. New candidates (an INTRO) start it over.
 *  - Liveness: while data flows, the current path must answer within 3 s;
 *    when idle, a probe every 5 s and an answer within 15 s. A dead path
 *    gives way to the best live one, else the relay. A peer with a single
 *    configured path and no rendezvous server is not probed at all.
 *  - Choice: direct beats relay; between direct paths, one whose round
 *    trip is under 0.8 times the current one's and at least 1 ms less.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>

#include "util/clock.h"

#define FAST_EVERY  (200 * YIP_NS_PER_MS)
#define FAST_ROUNDS 10
#define SLOW_EVERY  (1 * YIP_NS_PER_S)
#define SLOW_ROUNDS 40
#define MAX_EVERY   (60 * YIP_NS_PER_S)
#define ACTIVE_DEAD (3 * YIP_NS_PER_S)  /* no answer while data flows */
#define IDLE_PROBE  (5 * YIP_NS_PER_S)  /* probe an idle current path this often */
#define IDLE_DEAD   (15 * YIP_NS_PER_S) /* no answer while idle */
#define ALIVE       (5 * YIP_NS_PER_S)  /* an alternative heard from this recently is live */

/* Many-ports probing (docs/nat.md). */
#define MANY_SOCKETS  256  /* mappings the symmetric side makes */
#define MANY_ROUNDS   3    /* probes from each of them, a second apart */
#define MANY_PROBES   1024 /* random ports the other side tries */
#define MANY_TICK     (50 * YIP_NS_PER_MS)
#define MANY_PER_TICK 12                  /* ~240 probes a second */
#define MANY_FOR      (15 * YIP_NS_PER_S) /* one attempt */
#define MANY_BACKOFF                                                                               \
	(10 * YIP_NS_PER_S) /* before the next, doubling: an attempt                               \
	                     * misses about 1 time in 55 (e^-4) */
#define MANY_MAX_WAIT (3600 * YIP_NS_PER_S)

struct yip_many_ports {
	bool from_sockets; /* we map per destination: probe from many sockets */
	uint64_t started, next;
	unsigned rounds, sent;
};

/*
 * The extra sockets are the device's, shared by every attempt under way: a
 * NAT that maps per destination gives each socket a new mapping towards
 * each peer, so one set serves them all. They are opened by the first
 * attempt and closed when the last ends, except those a path uses.
 */
struct yip_many_pool {
	unsigned users, n_socks;
	uint32_t socks[MANY_SOCKETS]; /* their links */
};

static uint32_t ts_us(uint64_t now)
{
	return (uint32_t)(now / 1000);
}

static void probe(struct yip_peer *p, uint64_t now, int i)
{
	struct yip_path *t = &p->paths[i];
	struct wire_ctrl c = {.kind = WIRE_CTRL_PROBE, .ts_us = ts_us(now)};

	randombytes_buf(&t->probe_nonce, sizeof(t->probe_nonce));
	c.nonce = t->probe_nonce;
	t->probe_at = now;
	t->unanswered++;
	frame_send_ctrl(p, now, &c, i, NULL, 0);
}

/* Whether path a is better than path b by the rules above. */
static bool better(const struct yip_path *a, const struct yip_path *b)
{
	if (a->kind != b->kind)
		return a->kind == YIP_PATH_DIRECT;
	if (a->kind == YIP_PATH_RELAY || a->rtt == 0 || b->rtt == 0)
		return false;
	return a->rtt * 5 < b->rtt * 4 && b->rtt - a->rtt >= YIP_NS_PER_MS;
}

/* The best live path other than the current one, or -1. */
static int best_alternative(const struct yip_peer *p, uint64_t now)
{
	int best = -1;

	for (unsigned i = 0; i < p->n_paths; i++) {
		if ((int)i == p->path || !path_alive(p, (int)i, now, ALIVE) ||
		    !path_sendable(p, (int)i))
			continue;
		if (best < 0 || better(&p->paths[i], &p->paths[best]))
			best = (int)i;
	}
	return best;
}

/* The first sendable relay path, or -1. */
static int relay_path(const struct yip_peer *p)
{
	for (unsigned i = 0; i < p->n_paths; i++)
		if (p->paths[i].kind == YIP_PATH_RELAY && path_sendable(p, (int)i))
			return (int)i;
	return -1;
}

static void select_path(struct yip_peer *p, uint64_t now)
{
	int alt = best_alternative(p, now);

	if (alt >= 0 && (p->path < 0 || better(&p->paths[alt], &p->paths[p->path])))
		path_use(p, now, alt);
}

void punch_restart(struct yip_peer *p, uint64_t now)
{
	p->probe_rounds = 0;
	p->probe_next = now;
	schedule_peer(p, now);
}

void punch_ctrl(struct yip_peer *p, uint64_t now, const struct yip_from *from,
                const struct wire_ctrl *c)
{
	struct wire_ctrl ok = {.kind = WIRE_CTRL_PROBE_OK, .nonce = c->nonce, .ts_us = c->ts_us};
	int i;

	if (c->kind != WIRE_CTRL_PROBE && c->kind != WIRE_CTRL_PROBE_OK) {
		yip_device_drop(p->dev, YIP_DROP_BAD_CTRL);
		return;
	}
	path_confirm(p, now, from, true);
	i = path_from(p, from);
	if (i < 0)
		return;
	if (c->kind == WIRE_CTRL_PROBE) {
		/* Answer on the path it came by: that is the one being tested. */
		frame_send_ctrl(p, now, &ok, i, NULL, 0);
		return;
	}
	/* An answer to this path's last probe measures it; any answer shows it works. */
	if (ping_pong(p, now, i, c->nonce)) {
		/* a ping's pong (ping.c): it shows the path works, as above */
	} else if (p->paths[i].probe_nonce != 0 && c->nonce == p->paths[i].probe_nonce) {
		struct yip_path *t = &p->paths[i];
		uint64_t rtt = now - t->probe_at;

		t->rtt = t->rtt ? (t->rtt * 3 + rtt) / 4 : rtt;
		t->unanswered = 0;
		t->probe_nonce = 0;
	}
	select_path(p, now);
}

/* ---- many-ports probing --------------------------------------------------------------- */

/* One side maps per destination and the other does not: the case plain
 * probing cannot open when the second filters by address and port. */
static bool many_worthwhile(unsigned ours, unsigned theirs)
{
	return (ours == WIRE_NAT_APDM && theirs == WIRE_NAT_EIM) ||
	       (ours == WIRE_NAT_EIM && theirs == WIRE_NAT_APDM);
}

/* Whether path t goes through an extra UDP socket (a link of ours other
 * than the main one; one already closed too). */
static bool extra_sock(const struct yip_device *dev, const struct yip_path *t)
{
	const struct yip_link *lk;

	if (t->kind != YIP_PATH_DIRECT || t->link == YIP_LINK_MAIN)
		return false;
	lk = link_of(dev, t->link);
	return lk == NULL || lk->ops->kind == YIP_LINK_UDP;
}

/* Whether some peer's path uses the extra socket of link id sock. */
static bool sock_in_use(const struct yip_device *dev, uint32_t sock)
{
	for (size_t k = 0; k < dev->n_peers; k++) {
		const struct yip_peer *q = dev->peers[k];

		for (unsigned i = 0; i < q->n_paths; i++)
			if (q->paths[i].kind == YIP_PATH_DIRECT && q->paths[i].link == sock)
				return true;
	}
	return false;
}

static struct yip_many_pool *pool_take(struct yip_device *dev)
{
	struct yip_many_pool *pool = dev->many_pool;

	if (pool == NULL) {
		pool = calloc(1, sizeof(*pool));
		if (pool == NULL)
			return NULL;
		while (pool->n_socks < MANY_SOCKETS) {
			int64_t sock = dev->io.link_open(dev->io.ctx);

			if (sock <= 0)
				break;
			pool->socks[pool->n_socks++] = (uint32_t)sock;
		}
		dev->many_pool = pool;
	}
	pool->users++;
	return pool;
}

/* One attempt less; the last one closes every socket no path uses. */
static void pool_give(struct yip_device *dev)
{
	struct yip_many_pool *pool = dev->many_pool;

	if (pool == NULL || --pool->users > 0)
		return;
	for (unsigned i = 0; i < pool->n_socks; i++)
		if (!sock_in_use(dev, pool->socks[i]))
			dev->io.link_close(dev->io.ctx, pool->socks[i]);
	free(pool);
	dev->many_pool = NULL;
}

static void many_start(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;
	struct yip_many_ports *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return;
	m->from_sockets = dev->nat == WIRE_NAT_APDM;
	m->started = m->next = now;
	if (m->from_sockets &&
	    (dev->io.link_open == NULL || dev->io.link_close == NULL || pool_take(dev) == NULL)) {
		free(m);
		p->many_next = now + MANY_MAX_WAIT;
		return;
	}
	p->many = m;
	p->many_tries++;
}

/*
 * Ends an attempt. Of this peer's paths through extra sockets only the
 * current one stays (more than one probe may have got through); the
 * sockets go when no attempt needs them and no path uses them.
 */
static void many_finish(struct yip_peer *p, uint64_t now, bool found)
{
	struct yip_device *dev = p->dev;
	struct yip_many_ports *m = p->many;
	uint32_t keep = p->path >= 0 && p->paths[p->path].kind == YIP_PATH_DIRECT
	                    ? p->paths[p->path].link
	                    : YIP_LINK_MAIN;
	uint64_t wait = MANY_BACKOFF;

	for (unsigned i = p->n_paths; i-- > 0;)
		if (extra_sock(dev, &p->paths[i]) && p->paths[i].link != keep)
			path_remove(p, (int)i);
	if (m->from_sockets)
		pool_give(dev);
	for (unsigned t = 1; t < p->many_tries && wait < MANY_MAX_WAIT; t++)
		wait *= 2;
	if (found || wait > MANY_MAX_WAIT)
		wait = MANY_MAX_WAIT;
	/* +-20 %: the peers of one device do not all try again at once. */
	p->many_next = now + wait - wait / 5 + randombytes_uniform(1001) * (wait / 5 * 2 / 1000);
	free(m);
	p->many = NULL;
	schedule_peer(p, p->many_next);
}

static void many_probe(struct yip_peer *p, uint64_t now, const union yip_sockaddr *to,
                       uint32_t sock)
{
	struct wire_ctrl c = {.kind = WIRE_CTRL_PROBE, .ts_us = ts_us(now)};

	randombytes_buf(&c.nonce, sizeof(c.nonce));
	frame_send_ctrl(p, now, &c, -1, to, sock);
}

static uint64_t many_timers(struct yip_peer *p, uint64_t now)
{
	struct yip_many_ports *m = p->many;

	if (p->path >= 0 && p->paths[p->path].kind == YIP_PATH_DIRECT) {
		many_finish(p, now, true);
		return UINT64_MAX;
	}
	if (now - m->started >= MANY_FOR) {
		many_finish(p, now, false);
		return UINT64_MAX;
	}
	if (now < m->next)
		return m->next;
	if (m->from_sockets) {
		const struct yip_many_pool *pool = p->dev->many_pool;

		/* Each socket's probe makes one mapping towards the peer. */
		if (m->rounds < MANY_ROUNDS) {
			for (unsigned i = 0; i < pool->n_socks; i++)
				many_probe(p, now, &p->reflexive, pool->socks[i]);
			m->rounds++;
		}
		m->next = now + YIP_NS_PER_S;
	} else {
		/* Random ports of the peer's address, from our one mapping. */
		for (unsigned i = 0; i < MANY_PER_TICK && m->sent < MANY_PROBES; i++, m->sent++) {
			union yip_sockaddr to = p->reflexive;
			uint16_t port = (uint16_t)(1024 + randombytes_uniform(65536 - 1024));

			if (to.sa.sa_family == AF_INET)
				to.in4.sin_port = htons(port);
			else
				to.in6.sin6_port = htons(port);
			many_probe(p, now, &to, YIP_LINK_MAIN);
		}
		m->next = now + MANY_TICK;
	}
	return min64(m->next, m->started + MANY_FOR);
}

void punch_free(struct yip_peer *p)
{
	if (p->many != NULL)
		many_finish(p, 0, false);
}

/* Whether some direct candidate is still worth probing. */
static bool discovering(const struct yip_peer *p)
{
	if (p->path < 0 || p->paths[p->path].kind == YIP_PATH_RELAY)
		return true;
	for (unsigned i = 0; i < p->n_paths; i++)
		if (p->paths[i].kind == YIP_PATH_DIRECT && !p->paths[i].validated)
			return true;
	return false;
}

static uint64_t round_every(unsigned rounds)
{
	uint64_t every = SLOW_EVERY;

	if (rounds < FAST_ROUNDS)
		return FAST_EVERY;
	for (unsigned r = FAST_ROUNDS + SLOW_ROUNDS; r < rounds && every < MAX_EVERY; r++)
		every *= 2;
	return every < MAX_EVERY ? every : MAX_EVERY;
}

uint64_t punch_timers(struct yip_peer *p, uint64_t now)
{
	const struct yip_device *dev = p->dev;
	uint64_t next = UINT64_MAX;

	if (p->is_server || !session_usable(p, now) || p->n_paths == 0)
		return next;
	/* A peer with one configured path and no rendezvous is a classic
	 * point-to-point tunnel: nothing to choose and no mapping to hold, so
	 * no probes (an idle tunnel stays silent, as before paths existed). */
	if (dev->n_servers == 0 && p->n_paths <= 1)
		return next;

	/* The current path: keep it alive, and leave it when it dies. */
	if (p->path >= 0) {
		struct yip_path *t = &p->paths[p->path];
		bool active = p->last_tx_data && now - p->last_tx_data < ACTIVE_DEAD;
		uint64_t silent = now - (t->last_rx ? t->last_rx : p->path_since);
		uint64_t dead = active ? ACTIVE_DEAD : IDLE_DEAD;

		if (silent >= dead) {
			int alt = best_alternative(p, now);

			t->validated = false;
			if (alt < 0)
				alt = relay_path(p);
			if (alt >= 0 && alt != p->path)
				path_use(p, now, alt);
			punch_restart(p, now);
		} else {
			uint64_t quiet = active ? YIP_NS_PER_S : IDLE_PROBE;

			if (dev->nat_keepalive && dev->nat_keepalive < quiet)
				quiet = dev->nat_keepalive;
			if (silent >= quiet && now - t->probe_at >= quiet / 2)
				probe(p, now, p->path);
			next = min64(next, now + quiet / 2);
			next = min64(next, (t->last_rx ? t->last_rx : p->path_since) + dead);
		}
	}

	/* Discovery rounds over the direct candidates. */
	if (discovering(p)) {
		if (now >= p->probe_next) {
			for (unsigned i = 0; i < p->n_paths; i++)
				if (p->paths[i].kind == YIP_PATH_DIRECT && (int)i != p->path)
					probe(p, now, (int)i);
			p->probe_next = now + round_every(p->probe_rounds++);
		}
		next = min64(next, p->probe_next);
	}

	/* Still relayed after the fast rounds: try many ports if the NATs call for it. */
	if (p->many == NULL && p->path >= 0 && p->paths[p->path].kind == YIP_PATH_RELAY &&
	    p->has_reflexive && p->probe_rounds >= FAST_ROUNDS && now >= p->many_next &&
	    many_worthwhile(dev->nat, p->nat))
		many_start(p, now);
	if (p->many != NULL)
		next = min64(next, many_timers(p, now));
	else if (p->many_next > now)
		next = min64(next, p->many_next);
	return next;
}
