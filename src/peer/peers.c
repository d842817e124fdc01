/*
 * The peer table and membership.
 *
 * Peers live on the heap, one allocation each, and dev->peers lists them:
 * the configured ones first, then the dynamic ones a CA-gated node adds at
 * run time for members it admits and roots it is told of. Adding a peer
 * makes room for it in the index, key and timer tables, so the data path
 * never allocates; its keys take key slots per handshake (session.c), its
 * queue and loss-recovery buffers come when first used. Removing a peer
 * wipes its keys and takes it out of every table that can point at it.
 *
 * Membership (docs/membership.md): the CA key, our certificate, the root
 * set and the revocation list, and what a peer's certificate says; the
 * admission check of a certificate presented in a handshake.
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

/* ---- introductions waiting for a certificate -------------------------------------- */

static struct yip_intro *intro_find(struct yip_members *ms, const uint8_t key[YIP_KEY_LEN],
                                    uint64_t now)
{
	for (unsigned i = 0; ms->intros != NULL && i < MEMBERS_INTROS; i++) {
		struct yip_intro *in = &ms->intros[i];

		if (in->at != 0 && now - in->at < MEMBERS_INTRO_NS &&
		    memcmp(in->key, key, YIP_KEY_LEN) == 0)
			return in;
	}
	return NULL;
}

bool members_ask_allowed(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;

	if (yip_bucket_take(&ms->ask_bucket, now, MEMBERS_ASK_RATE, MEMBERS_ASK_BURST))
		return true;
	ms->asks_refused++;
	return false;
}

void members_intro_hold(struct yip_device *dev, uint64_t now, const uint8_t key[YIP_KEY_LEN],
                        const union yip_sockaddr *cands, unsigned n, int server, uint32_t relay_id,
                        uint8_t nat)
{
	struct yip_members *ms = dev->members;
	struct yip_intro *in;

	if (ms->intros == NULL && (ms->intros = calloc(MEMBERS_INTROS, sizeof(*in))) == NULL)
		return;
	/* The member's own entry, else the oldest (a free one is oldest: at 0). */
	in = intro_find(ms, key, now);
	if (in == NULL) {
		in = &ms->intros[0];
		for (unsigned i = 1; i < MEMBERS_INTROS; i++)
			if (ms->intros[i].at < in->at)
				in = &ms->intros[i];
	}
	memset(in, 0, sizeof(*in));
	memcpy(in->key, key, YIP_KEY_LEN);
	in->at = now != 0 ? now : 1;
	in->n_cands = (uint8_t)(n < WIRE_MAX_CANDS ? n : WIRE_MAX_CANDS);
	memcpy(in->cands, cands, in->n_cands * sizeof(*cands));
	in->server = server;
	in->relay_id = relay_id;
	in->nat = nat;
	ms->intros_held++;
}

void members_intro_take(struct yip_peer *p, uint64_t now)
{
	struct yip_members *ms = p->dev->members;
	struct yip_intro *in;

	if (ms == NULL || (in = intro_find(ms, p->public_key, now)) == NULL)
		return;
	p->intro_at = now;
	p->nat = in->nat;
	if (in->n_cands > 0) {
		p->reflexive = in->cands[0];
		p->has_reflexive = true;
	}
	for (unsigned i = 0; i < in->n_cands; i++)
		path_add(p, now, YIP_PATH_DIRECT, &in->cands[i], -1, 0, YIP_ORIGIN_SERVER);
	if (in->server >= 0)
		path_add(p, now, YIP_PATH_RELAY, NULL, in->server, in->relay_id, YIP_ORIGIN_RELAY);
	memset(in, 0, sizeof(*in));
	ms->intros_used++;
}

struct yip_peer *peer_new(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN], bool dynamic,
                          char *err, size_t errlen)
{
	struct yip_cidr self = {.family = AF_INET6, .plen = 128};
	struct yip_peer *p;

	if (index_key_find(dev, pub) != NULL || memcmp(pub, dev->public_key, YIP_KEY_LEN) == 0) {
		snprintf(err, errlen, "already a peer");
		return NULL;
	}
	if (dynamic && dev->n_peers - dev->n_static >= dev->max_dynamic) {
		snprintf(err, errlen, "peer table full (%zu dynamic peers)", dev->max_dynamic);
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
	p->dynamic = dynamic;
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
	/* The last peer takes its slot (static peers are never freed before
	 * the device is, so they keep theirs). */
	if (p->slot < dev->n_peers && dev->peers[p->slot] == p) {
		dev->peers[p->slot] = dev->peers[last];
		dev->peers[p->slot]->slot = p->slot;
		dev->n_peers--;
	}
	if (p->queue != NULL)
		sodium_memzero(p->queue, (size_t)YIP_QUEUE_LEN * dev->pkt_max);
	free(p->queue);
	protect_free(p);
	recover_free(p);
	free(p->member);
	sodium_memzero(p, sizeof(*p));
	free(p);
}

/* ---- membership --------------------------------------------------------------------- */

uint64_t members_unix(struct yip_device *dev)
{
	return frame_wall(dev) / YIP_NS_PER_S;
}

bool members_on(const struct yip_device *dev)
{
	return dev->members != NULL && dev->members->has_cert;
}

enum member_verdict members_admit(struct yip_device *dev, const uint8_t key[YIP_KEY_LEN],
                                  const uint8_t *cert, size_t len, struct member_cert *out)
{
	struct yip_members *ms = dev->members;
	enum member_verdict v;

	if (len == 0) {
		ms->no_cert++;
		return MEMBER_MALFORMED;
	}
	v = member_cert_parse(out, cert, len);
	if (v == MEMBER_OK)
		v = member_cert_admit(out, ms->ca, ms->network, ms->revs, key, members_unix(dev));
	if (v != MEMBER_OK)
		ms->refused[v]++;
	return v;
}

int peer_set_member(struct yip_peer *p, const struct member_cert *c)
{
	struct yip_device *dev = p->dev;
	struct yip_cidr self = {.family = AF_INET6, .plen = 128};
	char err[96];

	if (p->member == NULL) {
		p->member = calloc(1, sizeof(*p->member));
		if (p->member == NULL)
			return -1;
		if (p->dynamic)
			dev->members->admitted++; /* its first valid certificate */
	} else if (p->member->cert.len == c->len &&
	           memcmp(p->member->cert.raw, c->raw, c->len) == 0) {
		return 0; /* the same certificate again */
	}
	p->member->cert = *c;
	if (!p->dynamic)
		return 0; /* a configured peer's allowed IPs are its configuration's */
	/* The certificate's prefixes replace what the peer held before. */
	route_remove_value(dev->routes, p);
	memcpy(self.addr, p->address, YIP_ADDR_LEN);
	if (route_add(dev, &self, p, err, sizeof(err)) != 0)
		log_warn("member %s: %s", c->f.name, err);
	p->n_allowed = 0;
	for (unsigned i = 0; i < c->f.n_prefixes && i < YIP_PEER_ALLOWED; i++) {
		if (route_add(dev, &c->f.prefixes[i], p, err, sizeof(err)) != 0) {
			/* Another peer holds it (a configured one, or a member whose
			 * certificate overlaps): the first keeps it. */
			log_warn("member %s: %s", c->f.name, err);
			continue;
		}
		p->allowed[p->n_allowed++] = c->f.prefixes[i];
	}
	return 0;
}

void members_release(struct yip_device *dev)
{
	struct yip_members *ms = dev->members;

	if (ms == NULL)
		return;
	if (ms->gossip != NULL)
		gossip_free(ms->gossip);
	free(ms->revs);
	if (ms->intros != NULL)
		sodium_memzero(ms->intros, MEMBERS_INTROS * sizeof(*ms->intros));
	free(ms->intros);
	sodium_memzero(ms, sizeof(*ms));
	free(ms);
	dev->members = NULL;
}
