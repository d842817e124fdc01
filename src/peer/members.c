/*
 * Membership (docs/membership.md): the engine's side of a CA-gated network.
 *
 * The state (struct yip_members, members.h) is the CA key, our
 * certificate, the root set and the revocation list we hold, what each
 * peer's certificate says, and the introductions to members we hold nothing
 * of. Here are the rules that read and change it: admitting a certificate
 * presented in a handshake (and a stranger it admits becoming a peer), a
 * peer's certificate setting its routes, adopting root sets (a peer for
 * each root) and revocation lists, and which members must go (revoked,
 * expired, idle). The files above act on what these return: the handshake
 * refuses what admission refuses, and the timer rules (rules.c) remove the
 * members members_expels names and run gossip (records.c), whose member
 * records are the other half of membership.
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

/* A member (not a root) silent this long with no session is forgotten. */
#define MEMBERS_IDLE_NS (600 * YIP_NS_PER_S)
/* Roots are kept connected: a keepalive this often (seconds). */
#define ROOT_KEEPALIVE 25

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
	unsigned n;
	char err[96];

	if (p->member == NULL) {
		p->member = calloc(1, sizeof(*p->member));
		if (p->member == NULL)
			return -1;
		if (!p->configured)
			dev->members->admitted++; /* its first valid certificate */
	} else if (p->member->cert.len == c->len &&
	           memcmp(p->member->cert.raw, c->raw, c->len) == 0) {
		return 0; /* the same certificate again */
	}
	p->member->cert = *c;
	if (p->configured)
		return 0; /* a configured peer's allowed IPs are its configuration's */
	/* The certificate's prefixes replace what the peer held before. */
	route_remove_value(dev->routes, p);
	memcpy(self.addr, p->address, YIP_ADDR_LEN);
	if (peer_route_add(p, &self, err, sizeof(err)) != 0)
		log_limited(YIP_LOG_WARN, 0, "member %s: %s", c->f.name, err);
	free(p->allowed);
	p->allowed = NULL;
	p->n_allowed = 0;
	n = c->f.n_prefixes < YIP_PEER_ALLOWED ? c->f.n_prefixes : YIP_PEER_ALLOWED;
	if (n > 0 && (p->allowed = malloc(n * sizeof(*p->allowed))) == NULL)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		if (peer_route_add(p, &c->f.prefixes[i], err, sizeof(err)) != 0) {
			/* Another peer holds it (a configured one, or a member whose
			 * certificate overlaps): the first keeps it. */
			log_limited(YIP_LOG_WARN, 0, "member %s: %s", c->f.name, err);
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

/* ---- our certificate, root sets, revocation lists ---------------------------------- */

int yip_device_set_cert(struct yip_device *dev, const uint8_t *cert, size_t len)
{
	uint8_t *copy = NULL;

	if (len > WIRE_CTRL_CERT_MAX)
		return -1;
	if (len != 0 && (copy = malloc(len)) == NULL)
		return -1;
	if (len != 0)
		memcpy(copy, cert, len);
	free(dev->member_cert);
	dev->member_cert = copy;
	dev->member_cert_len = len;
	return 0;
}

int yip_device_members_init(struct yip_device *dev, const uint8_t ca[MEMBER_SIGN_PUBLIC],
                            const uint8_t *cert, size_t len, char *err, size_t errlen)
{
	int rc;

	if (dev->max_dynamic == 0) {
		snprintf(err, errlen, "the device was not made for a CA-gated network");
		return -1;
	}
	dev->members = calloc(1, sizeof(*dev->members));
	if (dev->members == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(dev->members->ca, ca, MEMBER_SIGN_PUBLIC);
	rc = yip_device_renew_cert(dev, cert, len, err, errlen);
	if (rc < 0)
		members_release(dev);
	return rc;
}

int yip_device_renew_cert(struct yip_device *dev, const uint8_t *cert, size_t len, char *err,
                          size_t errlen)
{
	struct yip_members *ms = dev->members;
	struct member_cert c;
	enum member_verdict v;

	if (ms == NULL) {
		snprintf(err, errlen, "not a CA-gated node");
		return -1;
	}
	if (member_cert_parse(&c, cert, len) != MEMBER_OK) {
		snprintf(err, errlen, "not a well-formed certificate");
		return -1;
	}
	if (ms->has_cert && strcmp(c.f.network, ms->network) != 0) {
		snprintf(err, errlen, "for network %s, not %s", c.f.network, ms->network);
		return -1;
	}
	v = member_cert_admit(&c, ms->ca, c.f.network, ms->revs, dev->public_key,
	                      members_unix(dev));
	if (v != MEMBER_OK) {
		snprintf(err, errlen, "%s: %s", member_verdict_name(v),
		         v == MEMBER_KEY_MISMATCH ? "it is for another key than local_private's"
		                                  : member_verdict_text(v));
		/* A renewal must be valid; the first certificate is taken anyway
		 * (members will refuse this node, but configured peers work). */
		if (ms->has_cert)
			return -1;
	}
	ms->cert = c;
	if (!ms->has_cert)
		snprintf(ms->network, sizeof(ms->network), "%s", c.f.network);
	ms->has_cert = true;
	/* Members-only rendezvous servers get it too. */
	if (yip_device_set_cert(dev, c.raw, c.len) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return v == MEMBER_OK ? 0 : 1;
}

/* Marks the roots of the set we hold, adding a peer for each we do not know. */
static void roots_apply(struct yip_device *dev, uint64_t now)
{
	const struct wire_roots *r = &dev->members->roots.f;
	char err[96];

	for (size_t i = 0; i < dev->n_peers; i++)
		if (!dev->peers[i]->configured)
			dev->peers[i]->root = false;
	for (unsigned i = 0; i < r->n_roots; i++) {
		const struct wire_root *root = &r->roots[i];
		struct yip_peer *p;

		if (memcmp(root->key, dev->public_key, YIP_KEY_LEN) == 0)
			continue; /* we are a root ourselves */
		p = index_key_find(dev, root->key);
		if (p == NULL) {
			p = yip_device_peer_add(dev, now, root->key, NULL, 0, root->addrs,
			                        root->n_addrs, ROOT_KEEPALIVE, err, sizeof(err));
			if (p == NULL) {
				log_warn("root %02x%02x%02x%02x: %s", root->key[0], root->key[1],
				         root->key[2], root->key[3], err);
				continue;
			}
		} else {
			for (unsigned k = 0; k < root->n_addrs; k++)
				path_add(p, now, YIP_PATH_DIRECT, &root->addrs[k], -1, 0,
				         YIP_ORIGIN_CONFIG);
		}
		p->root = true;
	}
}

enum member_verdict yip_device_offer_roots(struct yip_device *dev, uint64_t now, const uint8_t *obj,
                                           size_t len)
{
	struct yip_members *ms = dev->members;
	struct member_roots *r;
	enum member_verdict v;

	if (!members_on(dev))
		return MEMBER_WRONG_CA;
	r = malloc(sizeof(*r));
	if (r == NULL)
		return MEMBER_MALFORMED;
	v = member_roots_parse(r, obj, len);
	if (v == MEMBER_OK)
		v = member_roots_check(r, ms->ca, ms->network,
		                       ms->has_roots ? ms->roots.f.serial : 0);
	if (v == MEMBER_OLDER)
		ms->roots_older++;
	if (v == MEMBER_OK && !(ms->has_roots && r->f.serial == ms->roots.f.serial)) {
		ms->roots = *r;
		ms->has_roots = true;
		roots_apply(dev, now);
		log_info("root set %llu adopted: %u root%s", (unsigned long long)r->f.serial,
		         r->f.n_roots, r->f.n_roots == 1 ? "" : "s");
	}
	free(r);
	return v;
}

enum member_verdict members_offer_revocations(struct yip_device *dev, const uint8_t *obj,
                                              size_t len, bool *adopted)
{
	struct yip_members *ms = dev->members;
	struct member_revocations *r;
	enum member_verdict v;

	*adopted = false;
	if (!members_on(dev))
		return MEMBER_WRONG_CA;
	r = malloc(sizeof(*r));
	if (r == NULL)
		return MEMBER_MALFORMED;
	v = member_revocations_parse(r, obj, len);
	if (v == MEMBER_OK)
		v = member_revocations_check(r, ms->ca, ms->network,
		                             ms->revs ? ms->revs->f.serial : 0);
	if (v == MEMBER_OLDER)
		ms->revs_older++;
	if (v != MEMBER_OK || (ms->revs != NULL && r->f.serial == ms->revs->f.serial)) {
		free(r);
		return v;
	}
	free(ms->revs);
	ms->revs = r;
	log_info("revocation list %llu adopted: %u entr%s", (unsigned long long)r->f.serial, r->f.n,
	         r->f.n == 1 ? "y" : "ies");
	*adopted = true;
	return MEMBER_OK;
}

const char *members_expels(struct yip_device *dev, const struct yip_peer *p, uint64_t now,
                           uint64_t unix_now)
{
	const struct yip_members *ms = dev->members;
	const struct member_cert *c = p->member ? &p->member->cert : NULL;

	if (ms->revs != NULL &&
	    (member_revocations_has(ms->revs, WIRE_REVOKED_KEY, p->public_key) ||
	     (c != NULL && member_is_revoked(ms->revs, c))))
		return "certificate revoked";
	if (c != NULL && unix_now >= c->f.not_after + MEMBER_SKEW_S)
		return "certificate expired";
	if (!p->root && !session_usable(p, now) && !p->hs_pending &&
	    now - p->added >= MEMBERS_IDLE_NS && now - p->last_rx >= MEMBERS_IDLE_NS)
		return "idle";
	return NULL;
}

struct yip_peer *members_join(struct yip_device *dev, uint64_t now, const uint8_t key[YIP_KEY_LEN],
                              const struct member_cert *c)
{
	struct yip_peer *p;
	char err[96];

	p = peer_new(dev, key, false, err, sizeof(err));
	if (p == NULL) {
		log_limited(YIP_LOG_WARN, 0, "member %s: cannot admit: %s", c->f.name, err);
		return NULL;
	}
	p->added = now;
	members_intro_take(p, now);
	log_info("member \"%s\" (%02x%02x%02x%02x) admitted by its certificate", c->f.name, key[0],
	         key[1], key[2], key[3]);
	return p;
}
