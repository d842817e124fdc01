/*
 * The peer table.
 *
 * Peers live on the heap, one allocation each, and dev->peers lists them:
 * the configured ones first, then the dynamic ones a CA-gated node adds at
 * run time for members it admits and roots it is told of. Adding a peer
 * makes room for it in the index, key and timer tables, so the data path
 * never allocates; its keys take key slots per handshake (session.c), its
 * queue and loss-recovery buffers come when first used. Removing a peer
 * wipes its keys and takes it out of every table that can point at it.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/gossip.h"
#include "route/route.h"
#include "util/clock.h"
#include "util/log.h"

static int route_add(struct yip_device *dev, const struct yip_cidr *c, struct yip_peer *p,
                     char *err, size_t errlen)
{
	char s[YIP_ADDRSTRLEN];
	int rc = route_insert(dev->routes, c, p);

	if (rc == 0)
		return 0;
	yip_cidr_format(c, s, sizeof(s));
	snprintf(err, errlen, "%s: %s", s,
	         rc == -2 ? "claimed by two peers" : "too many allowed_ips prefixes");
	return -1;
}

int peer_route_add(struct yip_peer *p, const struct yip_cidr *c, char *err, size_t errlen)
{
	return route_add(p->dev, c, p, err, errlen);
}

/* Routes p's key-derived address and the n prefixes at c to it, in place
 * of whatever it had; stops at the first that fails. */
static int routes_set(struct yip_peer *p, const struct yip_cidr *c, size_t n, char *err,
                      size_t errlen)
{
	struct yip_cidr self = {.family = AF_INET6, .plen = 128};

	route_remove_value(p->dev->routes, p);
	memcpy(self.addr, p->address, YIP_ADDR_LEN);
	if (route_add(p->dev, &self, p, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (route_add(p->dev, &c[i], p, err, errlen) != 0)
			return -1;
	return 0;
}

int peer_set_allowed(struct yip_peer *p, const struct yip_cidr *c, size_t n, char *err,
                     size_t errlen)
{
	struct yip_cidr *a = NULL;
	char ignored[8];

	if (n > 0 && (a = malloc(n * sizeof(*a))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (n > 0)
		memcpy(a, c, n * sizeof(*a));
	if (routes_set(p, a, n, err, errlen) != 0) {
		/* What it held fitted before, and fits again. */
		routes_set(p, p->allowed, p->n_allowed, ignored, sizeof(ignored));
		free(a);
		return -1;
	}
	free(p->allowed);
	p->allowed = a;
	p->n_allowed = n;
	return 0;
}

/* The configured direct path (endpoint=) of p, or -1. */
static int config_path(const struct yip_peer *p)
{
	for (unsigned k = 0; k < p->n_paths; k++)
		if (p->paths[k].kind == YIP_PATH_DIRECT &&
		    p->paths[k].origin == YIP_ORIGIN_CONFIG && p->paths[k].link == YIP_LINK_MAIN)
			return (int)k;
	return -1;
}

bool peer_set_endpoint(struct yip_peer *p, uint64_t now, const union yip_sockaddr *addr)
{
	int c = config_path(p), n;

	if (c >= 0 && addr != NULL && yip_sockaddr_eq(&p->paths[c].addr, addr))
		return false;
	if (c >= 0) {
		/* Still answering there: keep it as an address the peer uses
		 * until it stops (a new handshake then tries every path). */
		if (c == p->path && path_alive(p, c, now, p->dev->t.dead_after))
			p->paths[c].origin = YIP_ORIGIN_PEER;
		else
			path_remove(p, c);
	}
	if (addr == NULL)
		return c >= 0;
	n = path_add(p, now, YIP_PATH_DIRECT, addr, -1, 0, YIP_ORIGIN_CONFIG);
	if (n >= 0 && p->path < 0)
		path_use(p, now, n);
	return true;
}

int yip_device_peer_set(struct yip_device *dev, uint64_t now, const struct yip_peer_config *pc,
                        unsigned fields, char *err, size_t errlen)
{
	struct yip_peer *p = index_key_find(dev, pc->public_key);
	bool added = p == NULL;

	if (p != NULL && !p->configured) {
		snprintf(err, errlen, "a member added at run time, not a configured peer");
		return -1;
	}
	if (p == NULL && (p = peer_new(dev, pc->public_key, true, err, errlen)) == NULL)
		return -1;
	if ((fields & YIP_PEER_SET_ALLOWED_IPS) &&
	    peer_set_allowed(p, pc->allowed_ips, pc->n_allowed_ips, err, errlen) != 0) {
		if (added)
			peer_free(p);
		return -1;
	}
	if (fields & YIP_PEER_SET_ENDPOINT) {
		if (peer_set_endpoint(p, now,
		                      pc->has_endpoint && pc->transport == YIP_TRANSPORT_UDP
		                          ? &pc->endpoint
		                          : NULL) &&
		    !added)
			schedule_peer(p, now); /* its timers look at the paths again */
	}
	if (fields & YIP_PEER_SET_KEEPALIVE) {
		p->persistent_keepalive = pc->persistent_keepalive;
		if (p->persistent_keepalive)
			schedule_peer(p, now);
	}
	return 0;
}

int peers_reserve(struct yip_device *dev, size_t n)
{
	if (n > dev->cap_peers) {
		struct yip_peer **t = realloc(dev->peers, n * sizeof(*t));

		if (t == NULL)
			return -1;
		dev->peers = t;
		dev->cap_peers = n;
	}
	if (timer_reserve(dev, n) != 0 || index_reserve(dev, n + dev->n_servers) != 0 ||
	    index_key_reserve(dev, n) != 0)
		return -1;
	return 0;
}

struct yip_peer *peer_new(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN], bool configured,
                          char *err, size_t errlen)
{
	struct yip_cidr self = {.family = AF_INET6, .plen = 128};
	struct yip_peer *p;

	if (index_key_find(dev, pub) != NULL || memcmp(pub, dev->public_key, YIP_KEY_LEN) == 0) {
		snprintf(err, errlen, "already a peer");
		return NULL;
	}
	if (!configured && dev->n_dynamic >= dev->max_dynamic) {
		snprintf(err, errlen, "peer table full (%zu dynamic peers)", dev->max_dynamic);
		return NULL;
	}
	if (configured && dev->n_peers - dev->n_dynamic >= dev->max_configured) {
		snprintf(err, errlen, "peer table full (%zu configured peers)",
		         dev->max_configured);
		return NULL;
	}
	if (dev->n_peers == dev->cap_peers) {
		size_t cap = dev->cap_peers ? 2 * dev->cap_peers : 8;
		struct yip_peer **t = realloc(dev->peers, cap * sizeof(*t));

		if (t == NULL)
			goto oom;
		dev->peers = t;
		dev->cap_peers = cap;
	}
	if (timer_reserve(dev, dev->n_peers + 1) != 0 ||
	    index_reserve(dev, dev->n_peers + 1 + dev->n_servers) != 0)
		goto oom;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto oom;
	p->dev = dev;
	p->configured = configured;
	timer_init_peer(p);
	memcpy(p->public_key, pub, YIP_KEY_LEN);
	wire_mac1_key(p->mac1_key, p->public_key);
	cookie_jar_init(&p->cookie, p->public_key);
	yip_addr_from_public(p->address, p->public_key);
	p->path = -1;
	/* The send queue is allocated when a packet first waits (datapath.c). */
	if (protect_init(p) != 0) {
		protect_free(p);
		free(p);
		goto oom;
	}
	p->slot = dev->n_peers;
	dev->peers[dev->n_peers++] = p;
	dev->n_dynamic += !configured;
	memcpy(self.addr, p->address, YIP_ADDR_LEN);
	if (index_key_add(dev, p) != 0) {
		snprintf(err, errlen, "out of memory");
		peer_free(p);
		return NULL;
	}
	if (route_add(dev, &self, p, err, errlen) != 0) {
		peer_free(p);
		return NULL;
	}
	return p;
oom:
	snprintf(err, errlen, "out of memory");
	return NULL;
}

void peer_free(struct yip_peer *p)
{
	struct yip_device *dev = p->dev;
	size_t last = dev->n_peers - 1;

	/* Its counters go on in the device's totals: metrics never decrease. */
	if (!p->is_server) {
		struct yip_peer_stats *r = &dev->totals.removed;
		const struct yip_peer_stats *st = &p->stats;

		r->rx_bytes += st->rx_bytes;
		r->tx_bytes += st->tx_bytes;
		r->rx_packets += st->rx_packets;
		r->tx_packets += st->tx_packets;
		r->lost += st->lost;
		r->fec_recovered += st->fec_recovered;
		r->fec_unrecovered += st->fec_unrecovered;
		r->fec_late += st->fec_late;
		r->arq_recovered += st->arq_recovered;
		r->arq_sent += st->arq_sent;
		r->nacks_sent += st->nacks_sent;
		r->nacks_received += st->nacks_received;
		r->arq_history_miss += st->arq_history_miss;
		r->arq_late += st->arq_late;
		r->arq_congested += st->arq_congested;
		r->loss_congested += st->loss_congested;
		r->repair_sent += st->repair_sent;
		r->repair_bytes += st->repair_bytes;
		r->wire_bytes += st->wire_bytes;
		r->handshakes += st->handshakes;
		r->roams += st->roams;
	}

	if (p->hs_pending)
		index_del(dev, p->hs_index);
	session_slot_free(dev, p->hs);
	p->hs = NULL;
	session_clear(dev, &p->prev);
	session_clear(dev, &p->cur);
	session_clear(dev, &p->next);
	timer_del(p);
	index_key_del(dev, p);
	if (p->gossip_up && dev->members != NULL && dev->members->gossip != NULL)
		gossip_peer_down(dev->members->gossip, dev->members->gossip_now, p->public_key);
	route_remove_value(dev->routes, p);
	if (dev->rtt_max_peer == p) {
		dev->rtt_max_peer = NULL;
		dev->rtt_max = 0;
	}
	/* The last peer takes its slot; the MAC table names peers by slot. */
	if (p->slot < dev->n_peers && dev->peers[p->slot] == p) {
		if (dev->macs != NULL) {
			mac_forget(dev->macs, (uint32_t)p->slot + 1);
			if (last != p->slot)
				mac_rename(dev->macs, (uint32_t)last + 1, (uint32_t)p->slot + 1);
		}
		dev->peers[p->slot] = dev->peers[last];
		dev->peers[p->slot]->slot = p->slot;
		dev->n_peers--;
		dev->n_dynamic -= !p->configured;
	}
	if (p->queue != NULL)
		sodium_memzero(p->queue, (size_t)YIP_QUEUE_LEN * dev->pkt_max);
	free(p->queue);
	protect_free(p);
	recover_free(p);
	free(p->member);
	free(p->allowed);
	free(p->ping);
	sodium_memzero(p, sizeof(*p));
	free(p);
}

struct yip_peer *yip_device_peer_add(struct yip_device *dev, uint64_t now,
                                     const uint8_t pub[YIP_KEY_LEN], const struct yip_cidr *allowed,
                                     size_t n_allowed, const union yip_sockaddr *endpoints,
                                     size_t n_endpoints, unsigned keepalive, char *err,
                                     size_t errlen)
{
	struct yip_peer *p;

	if (n_allowed > YIP_PEER_ALLOWED) {
		snprintf(err, errlen, "at most %d prefixes", YIP_PEER_ALLOWED);
		return NULL;
	}
	p = peer_new(dev, pub, false, err, errlen);
	if (p == NULL)
		return NULL;
	p->added = now;
	if (peer_set_allowed(p, allowed, n_allowed, err, errlen) != 0) {
		peer_free(p);
		return NULL;
	}
	for (size_t i = 0; i < n_endpoints; i++) {
		int k = path_add(p, now, YIP_PATH_DIRECT, &endpoints[i], -1, 0, YIP_ORIGIN_CONFIG);

		if (k >= 0 && p->path < 0)
			path_use(p, now, k);
	}
	p->persistent_keepalive = keepalive;
	if (keepalive)
		schedule_peer(p, now);
	return p;
}
