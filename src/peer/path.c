/*
 * Where a peer's datagrams go. A peer has candidate paths: its configured
 * endpoint, the addresses a rendezvous server told us (its reflexive and
 * local addresses), addresses it wrote to us from, and a relay through each
 * rendezvous server that introduced us. One of them is current; every
 * authenticated datagram tells which path it came by, and the choice of
 * the current one follows rules short enough to state here:
 *
 *  - with no current path, the first one a datagram comes back on is taken;
 *  - a direct path beats a relay as soon as a datagram comes back on it;
 *  - a datagram (other than a probe) from a new direct address moves the
 *    current direct path there: the peer roamed, or its NAT re-mapped;
 *  - otherwise the probing code (punch.c) switches when a path is better
 *    by a clear margin, or when the current one stops answering.
 *
 * This file keeps the table and makes those choices; it sends nothing.
 */
#include "peer/internal.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

static bool path_matches(const struct yip_path *t, int kind, const union yip_sockaddr *addr,
                         uint32_t link, int server, uint32_t relay_id)
{
	if (t->kind != kind)
		return false;
	if (kind == YIP_PATH_DIRECT)
		return t->link == link && yip_sockaddr_eq(&t->addr, addr);
	return t->server == server && t->relay_id == relay_id;
}

static int find(const struct yip_peer *p, int kind, const union yip_sockaddr *addr, uint32_t link,
                int server, uint32_t relay_id)
{
	for (unsigned i = 0; i < p->n_paths; i++)
		if (path_matches(&p->paths[i], kind, addr, link, server, relay_id))
			return (int)i;
	return -1;
}

int path_find(const struct yip_peer *p, int kind, const union yip_sockaddr *addr, int server,
              uint32_t relay_id)
{
	return find(p, kind, addr, YIP_LINK_MAIN, server, relay_id);
}

int path_from(const struct yip_peer *p, const struct yip_from *from)
{
	if (from->server >= 0)
		return find(p, YIP_PATH_RELAY, &from->addr, YIP_LINK_MAIN, from->server,
		            from->relay_id);
	return find(p, YIP_PATH_DIRECT, &from->addr, from->link, -1, 0);
}

/* The slot a new path may take when the table is full: the oldest one that
 * is neither current nor validated. */
static int evictable(const struct yip_peer *p)
{
	int best = -1;

	for (unsigned i = 0; i < p->n_paths; i++) {
		const struct yip_path *t = &p->paths[i];

		if ((int)i == p->path || t->validated)
			continue;
		if (best < 0 || t->added < p->paths[best].added)
			best = (int)i;
	}
	return best;
}

static int add(struct yip_peer *p, uint64_t now, int kind, const union yip_sockaddr *addr,
               uint32_t link, int server, uint32_t relay_id, int origin)
{
	int i = find(p, kind, addr, link, server, relay_id);
	struct yip_path *t;

	if (i >= 0)
		return i;
	if (p->n_paths < YIP_MAX_PATHS)
		i = (int)p->n_paths++;
	else if ((i = evictable(p)) < 0)
		return -1;
	t = &p->paths[i];
	memset(t, 0, sizeof(*t));
	t->kind = (uint8_t)kind;
	t->origin = (uint8_t)origin;
	t->server = (int8_t)server;
	t->relay_id = relay_id;
	if (kind == YIP_PATH_DIRECT) {
		t->addr = *addr;
		t->link = link;
	}
	t->added = now;
	return i;
}

int path_add(struct yip_peer *p, uint64_t now, int kind, const union yip_sockaddr *addr, int server,
             uint32_t relay_id, int origin)
{
	return add(p, now, kind, addr, YIP_LINK_MAIN, server, relay_id, origin);
}

int path_add_link(struct yip_peer *p, uint64_t now, const union yip_sockaddr *addr, uint32_t link)
{
	return add(p, now, YIP_PATH_DIRECT, addr, link, -1, 0, YIP_ORIGIN_CONFIG);
}

int path_note(struct yip_peer *p, uint64_t now, const struct yip_from *from)
{
	if (from->server >= 0)
		return add(p, now, YIP_PATH_RELAY, &from->addr, YIP_LINK_MAIN, from->server,
		           from->relay_id, YIP_ORIGIN_RELAY);
	return add(p, now, YIP_PATH_DIRECT, &from->addr, from->link, -1, 0, YIP_ORIGIN_PEER);
}

void path_format(const struct yip_peer *p, int i, char *out, size_t len)
{
	const struct yip_path *t = &p->paths[i];
	char a[YIP_ADDRSTRLEN];

	if (t->kind == YIP_PATH_DIRECT) {
		const struct yip_link *lk = link_of(p->dev, t->link);

		yip_sockaddr_format(&t->addr, a, sizeof(a));
		if (t->link == YIP_LINK_MAIN)
			snprintf(out, len, "direct %s", a);
		else if (lk == NULL || lk->ops->kind == YIP_LINK_UDP)
			snprintf(out, len, "direct %s (extra socket %u)", a, (unsigned)t->link);
		else
			snprintf(out, len, "direct %s (%s link %u)", a,
			         yip_link_kind_name(lk->ops->kind), (unsigned)t->link);
	} else {
		yip_sockaddr_format(&p->dev->servers[t->server].peer.endpoint, a, sizeof(a));
		snprintf(out, len, "relayed via %s", a);
	}
}

void path_use(struct yip_peer *p, uint64_t now, int i)
{
	const struct yip_path *t = &p->paths[i];
	char was[YIP_ADDRSTRLEN + 16], is[YIP_ADDRSTRLEN + 16];
	bool had = p->path >= 0;

	if (p->path == i)
		return;
	if (had)
		path_format(p, p->path, was, sizeof(was));
	p->path = i;
	p->path_since = now;
	p->has_endpoint = true;
	p->endpoint =
	    t->kind == YIP_PATH_DIRECT ? t->addr : p->dev->servers[t->server].peer.endpoint;
	/* A configured endpoint taken at start-up is no news; a path that
	 * carried something is. */
	if (p->is_server || !t->validated)
		return;
	path_format(p, i, is, sizeof(is));
	if (had) {
		if (t->kind == YIP_PATH_DIRECT && t->origin == YIP_ORIGIN_PEER)
			p->stats.roams++;
		log_limited(YIP_LOG_INFO, yip_log_key(p->public_key, YIP_KEY_LEN),
		            "peer %02x%02x%02x%02x: path %s (was %s)", p->public_key[0],
		            p->public_key[1], p->public_key[2], p->public_key[3], is, was);
	} else {
		log_limited(YIP_LOG_INFO, yip_log_key(p->public_key, YIP_KEY_LEN),
		            "peer %02x%02x%02x%02x: path %s", p->public_key[0], p->public_key[1],
		            p->public_key[2], p->public_key[3], is);
	}
}

void path_remove(struct yip_peer *p, int i)
{
	if (i == p->path)
		path_clear_current(p);
	memmove(&p->paths[i], &p->paths[i + 1],
	        (p->n_paths - (unsigned)i - 1) * sizeof(p->paths[0]));
	p->n_paths--;
	if (p->path > i)
		p->path--;
}

void path_clear_current(struct yip_peer *p)
{
	p->path = -1;
	p->has_endpoint = false;
}

bool path_alive(const struct yip_peer *p, int i, uint64_t now, uint64_t window)
{
	const struct yip_path *t = &p->paths[i];

	return t->validated && t->last_rx != 0 && now - t->last_rx < window;
}

void path_confirm(struct yip_peer *p, uint64_t now, const struct yip_from *from, bool probe)
{
	int kind = from->server < 0 ? YIP_PATH_DIRECT : YIP_PATH_RELAY;
	int origin = from->server < 0 ? YIP_ORIGIN_PEER : YIP_ORIGIN_RELAY;
	const struct yip_path *cur = p->path >= 0 ? &p->paths[p->path] : NULL;
	int i = add(p, now, kind, &from->addr, kind == YIP_PATH_DIRECT ? from->link : YIP_LINK_MAIN,
	            from->server, from->relay_id, origin);

	if (i < 0)
		return; /* the table is full of validated paths: keep them */
	p->paths[i].validated = true;
	p->paths[i].last_rx = now;
	if (cur == NULL) {
		path_use(p, now, i);
		return;
	}
	if (i == p->path || probe)
		return;
	/* A direct datagram beats a relayed path; a new direct address is a move. */
	if (kind == YIP_PATH_DIRECT &&
	    (cur->kind == YIP_PATH_RELAY || p->paths[i].origin == YIP_ORIGIN_PEER))
		path_use(p, now, i);
}

size_t path_prefix(const struct yip_peer *p, uint8_t *d, const union yip_sockaddr **to)
{
	const struct yip_path *t;
	const struct yip_server *s;

	*to = &p->endpoint;
	if (p->path < 0 || (t = &p->paths[p->path])->kind != YIP_PATH_RELAY)
		return 0;
	s = &p->dev->servers[t->server];
	wire_relay_put(d, WIRE_RELAY_TO_SERVER, s->token, t->relay_id);
	return WIRE_RELAY_HDR;
}

size_t path_prefix_for(const struct yip_peer *p, int i, uint8_t *d, const union yip_sockaddr **to)
{
	const struct yip_path *t = &p->paths[i];
	const struct yip_server *s;

	if (t->kind == YIP_PATH_DIRECT) {
		*to = &t->addr;
		return 0;
	}
	s = &p->dev->servers[t->server];
	*to = &s->peer.endpoint;
	wire_relay_put(d, WIRE_RELAY_TO_SERVER, s->token, t->relay_id);
	return WIRE_RELAY_HDR;
}

bool path_sendable(const struct yip_peer *p, int i)
{
	const struct yip_path *t = &p->paths[i];
	const struct yip_server *s;

	if (t->kind == YIP_PATH_DIRECT)
		return true;
	s = &p->dev->servers[t->server];
	return !p->dev->relay_off && s->state == YIP_SERVER_REGISTERED && s->relay;
}

bool path_reliable(const struct yip_peer *p)
{
	const struct yip_path *t;

	if (p->path < 0 || (t = &p->paths[p->path])->kind != YIP_PATH_DIRECT)
		return false;
	return link_reliable(p->dev, t->link);
}

void path_forget_link(struct yip_peer *p, uint32_t link)
{
	for (unsigned i = p->n_paths; i-- > 0;)
		if (p->paths[i].kind == YIP_PATH_DIRECT && p->paths[i].link == link)
			path_remove(p, (int)i);
}
