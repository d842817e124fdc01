/*
 * Member records (docs/membership.md): this node's own, signed with its
 * record-signing key and re-signed as its endpoints change or before it
 * expires; checking a record another member published; and turning one
 * into a peer to call (its certificate's prefixes routed to it, its
 * endpoints as candidate paths).
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "util/clock.h"
#include "util/log.h"

/* Adds a to the list if it is one a record may carry and is not there yet. */
static void add_endpoint(union yip_sockaddr *list, size_t *n, const union yip_sockaddr *a)
{
	if (*n == WIRE_RECORD_ENDPOINTS || !wire_endpoint_ok(a))
		return;
	for (size_t i = 0; i < *n; i++)
		if (yip_sockaddr_eq(&list[i], a))
			return;
	list[(*n)++] = *a;
}

/* Where other members may reach us: what the rendezvous servers see, then
 * our own addresses (never the wildcard we listen on). */
static size_t own_endpoints(struct yip_device *dev, union yip_sockaddr *out)
{
	union yip_sockaddr local[WIRE_RECORD_ENDPOINTS];
	size_t n = 0, nl = 0;

	for (size_t i = 0; i < dev->n_servers; i++)
		if (dev->servers[i].has_reflexive)
			add_endpoint(out, &n, &dev->servers[i].reflexive);
	if (dev->io.local_addrs != NULL)
		nl = dev->io.local_addrs(dev->io.ctx, local, WIRE_RECORD_ENDPOINTS);
	for (size_t i = 0; i < nl; i++)
		add_endpoint(out, &n, &local[i]);
	return n;
}

const struct member_record *records_own(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;
	union yip_sockaddr eps[WIRE_RECORD_ENDPOINTS];
	uint8_t spub[MEMBER_SIGN_PUBLIC], ssec[MEMBER_SIGN_SECRET];
	uint64_t unix_now = members_unix(dev);
	size_t n;
	bool same;

	if (!members_on(dev))
		return NULL;
	n = own_endpoints(dev, eps);
	same = ms->has_record && ms->record.f.n_endpoints == n &&
	       ms->record.cert.len == ms->cert.len &&
	       memcmp(ms->record.cert.raw, ms->cert.raw, ms->cert.len) == 0;
	for (size_t i = 0; same && i < n; i++)
		same = yip_sockaddr_eq(&ms->record.f.endpoints[i], &eps[i]);
	/* Kept while it says the same and has more than half its life left. */
	if (same && unix_now + RECORD_LIFETIME_S / 2 < ms->record.f.expires)
		return &ms->record;
	member_sign_keypair(dev->private_key, spub, ssec);
	if (member_record_sign(&ms->record, &ms->cert, frame_wall(dev) / YIP_NS_PER_MS,
	                       unix_now + RECORD_LIFETIME_S, eps, n, ssec) != 0) {
		sodium_memzero(ssec, sizeof(ssec));
		return ms->has_record ? &ms->record : NULL;
	}
	sodium_memzero(ssec, sizeof(ssec));
	ms->has_record = true;
	ms->record_at = now;
	return &ms->record;
}

enum member_verdict records_check(struct yip_device *dev, const uint8_t *bytes, size_t len,
                                  const uint8_t key[YIP_KEY_LEN], uint64_t seq,
                                  struct member_record *out)
{
	struct yip_members *ms = dev->members;
	enum member_verdict v;

	if (!members_on(dev))
		return MEMBER_WRONG_CA;
	v = member_record_parse(out, bytes, len);
	if (v != MEMBER_OK)
		return v;
	/* The record names the member it is about: the item's name and version must agree. */
	if (memcmp(out->cert.f.key, key, YIP_KEY_LEN) != 0 || out->f.seq != seq)
		return MEMBER_MALFORMED;
	return member_record_check(out, ms->ca, ms->network, ms->revs, members_unix(dev));
}

struct yip_peer *records_connect(struct yip_device *dev, uint64_t now,
                                 const struct member_record *r, bool call)
{
	const uint8_t *key = r->cert.f.key;
	struct yip_peer *p;
	char err[96];

	if (memcmp(key, dev->public_key, YIP_KEY_LEN) == 0)
		return NULL; /* our own */
	p = index_key_find(dev, key);
	if (p == NULL) {
		p = peer_new(dev, key, true, err, sizeof(err));
		if (p == NULL) {
			log_debug("member %s: %s", r->cert.f.name, err);
			return NULL;
		}
		p->added = now;
	}
	if (p->dynamic && peer_set_member(p, &r->cert) != 0)
		return p;
	for (unsigned i = 0; i < r->f.n_endpoints; i++)
		path_add(p, now, YIP_PATH_DIRECT, &r->f.endpoints[i], -1, 0, YIP_ORIGIN_SERVER);
	if (call && !session_usable(p, now))
		handshake_start(p, now);
	return p;
}
