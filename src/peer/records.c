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
#include <stdlib.h>
#include <string.h>

#include "gossip/gossip.h"
#include "route/route.h"
#include "util/clock.h"
#include "util/log.h"

/* The largest gossip message: a Ctrl datagram of it (33 bytes more) and
 * IPv6 and UDP headers fit a 1280-byte path. */
#define GOSSIP_MTU 1180
/* Addresses with no route looked up in the records, at most, a second. */
#define LOOKUPS_PER_S 20

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
	/* Kept while it says the same and is younger than YIP_RECORD_RESIGN_S. */
	if (same && unix_now + YIP_RECORD_LIFETIME_S - YIP_RECORD_RESIGN_S < ms->record.f.expires)
		return &ms->record;
	member_sign_keypair(dev->private_key, spub, ssec);
	if (member_record_sign(&ms->record, &ms->cert, frame_wall(dev) / YIP_NS_PER_MS,
	                       unix_now + YIP_RECORD_LIFETIME_S, eps, n, ssec) != 0) {
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
		p = peer_new(dev, key, false, err, sizeof(err));
		if (p == NULL) {
			log_limited(YIP_LOG_DEBUG, 0, "member %s: %s", r->cert.f.name, err);
			return NULL;
		}
		p->added = now;
		members_intro_take(p, now);
	}
	if (!p->configured && peer_set_member(p, &r->cert) != 0)
		return p;
	for (unsigned i = 0; i < r->f.n_endpoints; i++)
		path_add(p, now, YIP_PATH_DIRECT, &r->f.endpoints[i], -1, 0, YIP_ORIGIN_SERVER);
	if (call && !session_usable(p, now))
		handshake_start(p, now);
	return p;
}

struct yip_peer *records_peer(struct yip_device *dev, uint64_t now, const uint8_t key[YIP_KEY_LEN])
{
	struct yip_members *ms = dev->members;
	const struct gossip_blob *b;

	if (ms == NULL || ms->gossip == NULL ||
	    (b = gossip_get(ms->gossip, WIRE_OBJ_RECORD, key)) == NULL ||
	    records_check(dev, b->bytes, b->len, b->id, b->version, &ms->scratch) != MEMBER_OK)
		return NULL;
	return records_connect(dev, now, &ms->scratch, false);
}

/* ---- gossip (docs/gossip.md, "Using the engine") ------------------------------------ */

/* The network id of root-set and revocation-list items: BLAKE2b-256 of the name. */
static void network_id(const struct yip_members *ms, uint8_t id[GOSSIP_ID_LEN])
{
	crypto_generichash(id, GOSSIP_ID_LEN, (const uint8_t *)ms->network, strlen(ms->network),
	                   NULL, 0);
}

static bool g_accept(void *ctx, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                     const uint8_t *bytes, size_t len)
{
	struct yip_device *dev = ctx;
	struct yip_members *ms = dev->members;
	uint8_t nid[GOSSIP_ID_LEN];
	bool ok = false;

	switch (kind) {
	case WIRE_OBJ_RECORD: {
		struct member_record *r = &ms->scratch;

		ok = records_check(dev, bytes, len, id, version, r) == MEMBER_OK;
		break;
	}
	case WIRE_OBJ_ROOTS: {
		struct member_roots *r = malloc(sizeof(*r));

		network_id(ms, nid);
		ok = r != NULL && memcmp(id, nid, GOSSIP_ID_LEN) == 0 &&
		     member_roots_parse(r, bytes, len) == MEMBER_OK && r->f.serial == version &&
		     member_roots_check(r, ms->ca, ms->network,
		                        ms->has_roots ? ms->roots.f.serial : 0) == MEMBER_OK;
		free(r);
		break;
	}
	case WIRE_OBJ_REVOCATIONS: {
		struct member_revocations *r = malloc(sizeof(*r));

		network_id(ms, nid);
		ok = r != NULL && memcmp(id, nid, GOSSIP_ID_LEN) == 0 &&
		     member_revocations_parse(r, bytes, len) == MEMBER_OK &&
		     r->f.serial == version &&
		     member_revocations_check(r, ms->ca, ms->network,
		                              ms->revs ? ms->revs->f.serial : 0) == MEMBER_OK;
		free(r);
		break;
	}
	default:
		break;
	}
	return ok;
}

static void g_send(void *ctx, const uint8_t nbr[GOSSIP_ID_LEN], const uint8_t *msg, size_t len)
{
	struct yip_device *dev = ctx;
	struct yip_peer *p = index_key_find(dev, nbr);
	uint8_t buf[1 + GOSSIP_MTU];

	if (p == NULL || len > GOSSIP_MTU)
		return;
	buf[0] = WIRE_CTRL_GOSSIP;
	memcpy(buf + 1, msg, len);
	frame_send_ctrl_bytes(p, dev->members->gossip_now, buf, 1 + len, -1, NULL, 0);
}

/* Callbacks must not call back into the engine: wishes wait in a queue. */
static void g_want(void *ctx, const uint8_t id[GOSSIP_ID_LEN], bool want)
{
	struct yip_device *dev = ctx;
	struct yip_members *ms = dev->members;

	if (!want || ms->n_want == RECORDS_WANT_QUEUE)
		return;
	memcpy(ms->want[ms->n_want++], id, GOSSIP_ID_LEN);
}

static void g_stored(void *ctx, const struct gossip_blob *b)
{
	struct yip_device *dev = ctx;
	struct yip_members *ms = dev->members;

	if (b->kind == WIRE_OBJ_ROOTS)
		ms->gossip_roots = true;
	else if (b->kind == WIRE_OBJ_REVOCATIONS)
		ms->gossip_revs = true;
	else if (b->kind == WIRE_OBJ_RECORD && index_key_find(dev, b->id) != NULL &&
	         ms->n_want < RECORDS_WANT_QUEUE)
		memcpy(ms->want[ms->n_want++], b->id, GOSSIP_ID_LEN); /* refresh its paths */
}

int records_gossip_start(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;
	struct gossip_conf c;

	gossip_conf_default(&c);
	memcpy(c.self, dev->public_key, GOSSIP_ID_LEN);
	c.mtu = GOSSIP_MTU;
	c.member_kind = WIRE_OBJ_RECORD;
	/* What revokes members goes first, whatever else is being fetched. */
	gossip_conf_urgent(&c, WIRE_OBJ_ROOTS);
	gossip_conf_urgent(&c, WIRE_OBJ_REVOCATIONS);
	c.ctx = dev;
	c.accept = g_accept;
	c.send = g_send;
	c.want = g_want;
	c.stored = g_stored;
	ms->gossip_now = now;
	ms->gossip = gossip_new(&c, now);
	return ms->gossip != NULL ? 0 : -1;
}

/* Puts one of our own items; false if gossip holds that version or newer. */
static bool put(struct yip_device *dev, uint64_t now, uint8_t kind, const uint8_t *id,
                uint64_t version, const uint8_t *bytes, size_t len)
{
	struct gossip_blob *b = gossip_blob_new(kind, id, version, bytes, len);
	int rc;

	if (b == NULL)
		return false;
	rc = gossip_put(dev->members->gossip, now, b, 0);
	gossip_blob_unref(b);
	return rc == 0;
}

void records_gossip_rx(struct yip_peer *p, uint64_t now, const uint8_t *msg, size_t len)
{
	struct yip_device *dev = p->dev;
	struct yip_members *ms = dev->members;

	if (ms == NULL || ms->gossip == NULL) {
		yip_device_drop(dev, YIP_DROP_BAD_CTRL); /* we do not gossip */
		return;
	}
	records_session(p, now);
	ms->gossip_now = now;
	gossip_rx(ms->gossip, now, p->public_key, msg, len);
	ms->gossip_at = now; /* its timers and our side of its wishes, at the next tick */
	schedule(dev, now);
}

void records_session(struct yip_peer *p, uint64_t now)
{
	struct yip_members *ms = p->dev->members;
	bool up;

	if (ms == NULL || ms->gossip == NULL || p->is_server)
		return;
	up = session_usable(p, now);
	if (up == p->gossip_up)
		return;
	p->gossip_up = up;
	ms->gossip_now = now;
	if (up)
		gossip_peer_up(ms->gossip, now, p->public_key, 0);
	else
		gossip_peer_down(ms->gossip, now, p->public_key);
	ms->gossip_at = now;
	schedule(p->dev, now);
}

const uint8_t *records_gossip_item(struct yip_device *dev, uint8_t kind, size_t *len)
{
	struct yip_members *ms = dev->members;
	const struct gossip_blob *b;
	uint8_t nid[GOSSIP_ID_LEN];

	if (ms == NULL || ms->gossip == NULL)
		return NULL;
	network_id(ms, nid);
	b = gossip_get(ms->gossip, kind, nid);
	if (b == NULL)
		return NULL;
	*len = b->len;
	return b->bytes;
}

/*
 * Removing records that a walk picks (expired, revoked): gossip_each must not
 * see the store change under it, so their ids are collected first, then
 * removed. The list grows as they are found, to as many as the store holds
 * (GOSSIP_ID_LEN bytes each, a fraction of the records themselves), and is
 * freed at the end; it is made only when a sweep or a new revocation list
 * finds something, never per packet. Should it fail to grow, what was
 * collected is removed and the walk is made again for the rest.
 */
struct record_walk {
	struct yip_device *dev;
	uint8_t (*ids)[GOSSIP_ID_LEN];
	size_t n, cap;
	bool more; /* one found did not fit: walk again */
};

static void collect(struct record_walk *w, const uint8_t id[GOSSIP_ID_LEN])
{
	if (w->n == w->cap) {
		size_t cap = w->cap != 0 ? 2 * w->cap : 64;
		uint8_t(*ids)[GOSSIP_ID_LEN] = realloc(w->ids, cap * GOSSIP_ID_LEN);

		if (ids == NULL) {
			w->more = true;
			return;
		}
		w->ids = ids;
		w->cap = cap;
	}
	memcpy(w->ids[w->n++], id, GOSSIP_ID_LEN);
}

static void find_revoked(void *arg, const struct gossip_blob *b)
{
	struct record_walk *w = arg;
	struct yip_members *ms = w->dev->members;

	if (b->kind != WIRE_OBJ_RECORD || w->more)
		return;
	if (member_revocations_has(ms->revs, WIRE_REVOKED_KEY, b->id) ||
	    (member_record_parse(&ms->scratch, b->bytes, b->len) == MEMBER_OK &&
	     member_is_revoked(ms->revs, &ms->scratch.cert)))
		collect(w, b->id);
}

static void find_expired(void *arg, const struct gossip_blob *b)
{
	struct record_walk *w = arg;
	struct yip_members *ms = w->dev->members;

	if (b->kind != WIRE_OBJ_RECORD || w->more)
		return;
	if (member_record_parse(&ms->scratch, b->bytes, b->len) != MEMBER_OK ||
	    members_unix(w->dev) >= ms->scratch.f.expires + MEMBER_SKEW_S ||
	    members_unix(w->dev) >= ms->scratch.cert.f.not_after + MEMBER_SKEW_S)
		collect(w, b->id);
}

/* Removes every record find picks; how many. Each walk but the last removes
 * at least one (what it collected is live), so the walks end. */
static size_t remove_records(struct yip_device *dev, uint64_t now,
                             void (*find)(void *arg, const struct gossip_blob *b))
{
	struct yip_members *ms = dev->members;
	struct record_walk w = {.dev = dev};
	size_t removed = 0, before;

	ms->gossip_now = now;
	do {
		before = removed;
		w.n = 0;
		w.more = false;
		gossip_each(ms->gossip, find, &w);
		for (size_t i = 0; i < w.n; i++)
			removed += gossip_remove(ms->gossip, now, WIRE_OBJ_RECORD, w.ids[i]) == 0;
	} while (w.more && removed > before);
	free(w.ids);
	return removed;
}

void records_gossip_expire(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;

	if (ms == NULL || ms->gossip == NULL)
		return;
	if (remove_records(dev, now, find_expired) > 0)
		ms->gossip_at = now;
}

void records_gossip_revoked(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;

	if (ms == NULL || ms->gossip == NULL || ms->revs == NULL)
		return;
	remove_records(dev, now, find_revoked);
}

uint64_t records_gossip_timers(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;
	const struct member_record *own;
	uint8_t nid[GOSSIP_ID_LEN];

	if (!members_on(dev))
		return UINT64_MAX;
	if (ms->gossip == NULL && records_gossip_start(dev, now) != 0)
		return UINT64_MAX;
	ms->gossip_now = now;
	network_id(ms, nid);
	/* Ours: the record (when re-signed), the root set and revocation list (when newer). */
	own = records_own(dev, now);
	if (own != NULL && own->f.seq != ms->record_put &&
	    put(dev, now, WIRE_OBJ_RECORD, dev->public_key, own->f.seq, own->raw, own->len))
		ms->record_put = own->f.seq;
	if (ms->has_roots && ms->roots.f.serial != ms->roots_put) {
		uint8_t(*ids)[GOSSIP_ID_LEN] = malloc(WIRE_ROOTS_MAX_ROOTS * GOSSIP_ID_LEN);

		put(dev, now, WIRE_OBJ_ROOTS, nid, ms->roots.f.serial, ms->roots.raw,
		    ms->roots.len);
		ms->roots_put = ms->roots.f.serial;
		if (ids != NULL) {
			for (unsigned i = 0; i < ms->roots.f.n_roots; i++)
				memcpy(ids[i], ms->roots.f.roots[i].key, GOSSIP_ID_LEN);
			gossip_set_roots(ms->gossip, now, (const uint8_t(*)[GOSSIP_ID_LEN])ids,
			                 ms->roots.f.n_roots);
			free(ids);
		}
	}
	if (ms->revs != NULL && ms->revs->f.serial != ms->revs_put) {
		if (ms->revs->len <= GOSSIP_MAX_ITEM)
			put(dev, now, WIRE_OBJ_REVOCATIONS, nid, ms->revs->f.serial, ms->revs->raw,
			    ms->revs->len);
		ms->revs_put = ms->revs->f.serial;
	}
	/* The members gossip wants us to call (or whose records changed). */
	for (unsigned i = 0; i < ms->n_want; i++) {
		const struct gossip_blob *b = gossip_get(ms->gossip, WIRE_OBJ_RECORD, ms->want[i]);

		if (b != NULL && records_check(dev, b->bytes, b->len, b->id, b->version,
		                               &ms->scratch) == MEMBER_OK)
			records_connect(dev, now, &ms->scratch, gossip_wants(ms->gossip, b->id));
	}
	ms->n_want = 0;
	return gossip_timers(ms->gossip, now);
}

/* ---- unknown addresses ---------------------------------------------------------- */

struct lookup_walk {
	struct yip_device *dev;
	int family;
	const uint8_t *addr;
	uint8_t found[GOSSIP_ID_LEN];
	bool hit;
};

static bool prefix_has(const struct yip_cidr *c, int family, const uint8_t *addr)
{
	unsigned full = c->plen / 8, rest = c->plen % 8;

	if (c->family != family)
		return false;
	if (memcmp(c->addr, addr, full) != 0)
		return false;
	return rest == 0 || ((c->addr[full] ^ addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static void find_addr(void *arg, const struct gossip_blob *b)
{
	struct lookup_walk *w = arg;
	struct member_record *r = &w->dev->members->scratch;
	uint8_t self[YIP_ADDR_LEN];

	if (w->hit || b->kind != WIRE_OBJ_RECORD ||
	    member_record_parse(r, b->bytes, b->len) != MEMBER_OK)
		return;
	if (w->family == AF_INET6) {
		yip_addr_from_public(self, r->cert.f.key);
		w->hit = memcmp(self, w->addr, YIP_ADDR_LEN) == 0;
	}
	for (unsigned i = 0; !w->hit && i < r->cert.f.n_prefixes; i++)
		w->hit = prefix_has(&r->cert.f.prefixes[i], w->family, w->addr);
	if (w->hit)
		memcpy(w->found, b->id, GOSSIP_ID_LEN);
}

bool records_lookup(struct yip_device *dev, uint64_t now, int family, const uint8_t *addr)
{
	struct yip_members *ms = dev->members;
	struct lookup_walk w = {.dev = dev, .family = family, .addr = addr};
	const struct gossip_blob *b;

	if (ms == NULL || ms->gossip == NULL)
		return false;
	if (now - ms->lookup_window >= YIP_NS_PER_S) {
		ms->lookup_window = now;
		ms->lookups = 0;
	}
	if (ms->lookups++ >= LOOKUPS_PER_S)
		return false;
	gossip_each(ms->gossip, find_addr, &w);
	if (!w.hit || (b = gossip_get(ms->gossip, WIRE_OBJ_RECORD, w.found)) == NULL ||
	    records_check(dev, b->bytes, b->len, b->id, b->version, &ms->scratch) != MEMBER_OK)
		return false;
	return records_connect(dev, now, &ms->scratch, true) != NULL;
}

/* ---- the record cache (the daemon keeps it in state_dir) ------------------------- */

enum member_verdict records_offer(struct yip_device *dev, uint64_t now, const uint8_t *obj,
                                  size_t len)
{
	struct yip_members *ms = dev->members;
	struct gossip_blob *b;
	enum member_verdict v;

	if (!members_on(dev))
		return MEMBER_WRONG_CA;
	if (ms->gossip == NULL && records_gossip_start(dev, now) != 0)
		return MEMBER_MALFORMED;
	v = member_record_parse(&ms->scratch, obj, len);
	if (v == MEMBER_OK)
		v = records_check(dev, obj, len, ms->scratch.cert.f.key, ms->scratch.f.seq,
		                  &ms->scratch);
	if (v != MEMBER_OK || memcmp(ms->scratch.cert.f.key, dev->public_key, YIP_KEY_LEN) == 0)
		return v;
	/* Held quietly: gossip calls the members it wants from what it holds. */
	b = gossip_blob_new(WIRE_OBJ_RECORD, ms->scratch.cert.f.key, ms->scratch.f.seq, obj, len);
	if (b == NULL)
		return MEMBER_MALFORMED;
	ms->gossip_now = now;
	gossip_put(ms->gossip, now, b, GOSSIP_QUIET);
	gossip_blob_unref(b);
	ms->gossip_at = now;
	return MEMBER_OK;
}

struct each_walk {
	void (*fn)(void *arg, const uint8_t *obj, size_t len);
	void *arg;
	size_t n;
};

static void each_record(void *arg, const struct gossip_blob *b)
{
	struct each_walk *w = arg;

	if (b->kind != WIRE_OBJ_RECORD)
		return;
	w->fn(w->arg, b->bytes, b->len);
	w->n++;
}

size_t records_each(struct yip_device *dev, void (*fn)(void *arg, const uint8_t *obj, size_t len),
                    void *arg)
{
	struct each_walk w = {.fn = fn, .arg = arg};

	if (dev->members == NULL || dev->members->gossip == NULL)
		return 0;
	gossip_each(dev->members->gossip, each_record, &w);
	return w.n;
}
