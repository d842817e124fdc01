/*
 * Reload (SIGHUP, `yipctl reload`): the configuration file read again
 * and the difference applied, as wg syncconf does. Peers are added,
 * removed, and changed in place (endpoint, allowed IPs, keepalive); a
 * peer that did not change keeps its sessions, counters and paths. The
 * kernel's routes and the device's addresses follow through the
 * privileged half (src/privsep), since the daemon itself can no longer
 * change them. Whatever is wrong with the new file is found before
 * anything is applied: a parse error, or a key fixed for the daemon's
 * life (docs/configuration.md, "Reloading").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "loop/internal.h"

#include "util/clock.h"
#include "util/hex.h"
#include "util/log.h"

void yip_loop_reload_setup(struct yip_loop *l, struct yip_config *cfg, struct privsep *ps,
                           bool resolve)
{
	struct loop_reload *r = &l->reload;

	loop_reload_free(r);
	r->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	/* The engine has the key; what the comparison needs is the public one. */
	sodium_memzero(r->cfg.private_key, sizeof(r->cfg.private_key));
	r->ps = ps;
	r->resolve = resolve;
	r->on = true;
}

void loop_reload_free(struct loop_reload *r)
{
	if (r->on)
		yip_config_free(&r->cfg);
	r->on = false;
}

/* "1a2b3c4d" of a key, for messages. */
static const char *short_key(const uint8_t key[YIP_KEY_LEN], char out[9])
{
	char hex[2 * YIP_KEY_LEN + 1];

	yip_hex_encode(hex, key, YIP_KEY_LEN);
	memcpy(out, hex, 8);
	out[8] = '\0';
	return out;
}

static const struct yip_peer_config *find_peer(const struct yip_config *c,
                                               const uint8_t key[YIP_KEY_LEN])
{
	for (size_t i = 0; i < c->n_peers; i++)
		if (memcmp(c->peers[i].public_key, key, YIP_KEY_LEN) == 0)
			return &c->peers[i];
	return NULL;
}

static bool cidr_eq(const struct yip_cidr *a, const struct yip_cidr *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

static bool cidr_in(const struct yip_cidr *c, const struct yip_cidr *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cidr_eq(c, &list[i]))
			return true;
	return false;
}

static bool cidrs_eq(const struct yip_cidr *a, size_t na, const struct yip_cidr *b, size_t nb)
{
	for (size_t i = 0; i < na; i++)
		if (!cidr_in(&a[i], b, nb))
			return false;
	for (size_t i = 0; i < nb; i++)
		if (!cidr_in(&b[i], a, na))
			return false;
	return true;
}

static bool str_eq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Which fields of a configured peer differ between o (in force) and n (enum yip_peer_field). */
static unsigned peer_changes(const struct yip_peer_config *o, const struct yip_peer_config *n)
{
	unsigned f = 0;

	if (o->has_endpoint != n->has_endpoint || o->transport != n->transport ||
	    !str_eq(o->endpoint_name, n->endpoint_name) ||
	    (o->has_endpoint && !yip_sockaddr_eq(&o->endpoint, &n->endpoint)) ||
	    !str_eq(o->tls_sni, n->tls_sni))
		f |= YIP_PEER_SET_ENDPOINT;
	if (!cidrs_eq(o->allowed_ips, o->n_allowed_ips, n->allowed_ips, n->n_allowed_ips))
		f |= YIP_PEER_SET_ALLOWED_IPS;
	if (o->persistent_keepalive != n->persistent_keepalive)
		f |= YIP_PEER_SET_KEEPALIVE;
	return f;
}

/*
 * What the file may not ask of a running daemon, checked before anything
 * is applied: keys fixed for its life, links over TLS or QUIC set up at
 * start (src/loop/tls.c, quic.c), host names it cannot resolve in its
 * sandbox. 0, or -1 with the reason in out->error.
 */
static int check(struct loop_reload *r, struct yip_config *n, struct yip_ctl_reload *out)
{
	const char *keys[8];
	size_t nk = yip_config_fixed_changes(&r->cfg, n, keys, 8);
	char k[9];

	if (nk > 0) {
		size_t at = (size_t)snprintf(out->error, sizeof(out->error), "reload refused: ");

		for (size_t i = 0; i < nk && i < 8 && at < sizeof(out->error); i++)
			at += (size_t)snprintf(out->error + at, sizeof(out->error) - at, "%s%s",
			                       i ? ", " : "", keys[i]);
		if (at < sizeof(out->error))
			snprintf(
			    out->error + at, sizeof(out->error) - at,
			    "%s cannot change while yipd runs (restart it); nothing was applied",
			    nk > 8 ? " and more" : "");
		return -1;
	}
	for (size_t i = 0; i < r->cfg.n_peers; i++) {
		const struct yip_peer_config *o = &r->cfg.peers[i];

		if (o->transport != YIP_TRANSPORT_UDP && find_peer(n, o->public_key) == NULL) {
			snprintf(
			    out->error, sizeof(out->error),
			    "reload refused: peer %s has a tls:// or quic:// endpoint, which a "
			    "reload cannot remove (restart yipd); nothing was applied",
			    short_key(o->public_key, k));
			return -1;
		}
	}
	for (size_t i = 0; i < n->n_peers; i++) {
		struct yip_peer_config *p = &n->peers[i];
		const struct yip_peer_config *o = find_peer(&r->cfg, p->public_key);

		if ((p->transport != YIP_TRANSPORT_UDP ||
		     (o && o->transport != YIP_TRANSPORT_UDP)) &&
		    (o == NULL || (peer_changes(o, p) & YIP_PEER_SET_ENDPOINT))) {
			snprintf(
			    out->error, sizeof(out->error),
			    "%.200s:%u: reload refused: a peer with a tls:// or quic:// endpoint "
			    "cannot be added or have its endpoint changed by a reload (restart "
			    "yipd); nothing was applied",
			    r->ps->path, p->line);
			return -1;
		}
		/* Without resolving, a host name is known only as it was resolved at start. */
		if (!r->resolve && p->endpoint_name != NULL) {
			if (o == NULL || !str_eq(o->endpoint_name, p->endpoint_name)) {
				snprintf(
				    out->error, sizeof(out->error),
				    "%.200s:%u: reload refused: the endpoint %.100s is a host "
				    "name, and "
				    "this yipd started with none, so its sandbox cannot resolve "
				    "one (restart yipd); nothing was applied",
				    r->ps->path, p->endpoint_line, p->endpoint_name);
				return -1;
			}
			p->has_endpoint = o->has_endpoint;
			p->endpoint = o->endpoint;
		}
	}
	return 0;
}

/* Whether prefix c of config cfg goes to the kernel as a route (configure_device's rule). */
static bool routed(const struct yip_cidr *c)
{
	return c->plen > 0;
}

/* Whether any peer of cfg has prefix c. */
static bool has_route(const struct yip_config *cfg, const struct yip_cidr *c)
{
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (cidr_in(c, cfg->peers[i].allowed_ips, cfg->peers[i].n_allowed_ips))
			return true;
	return false;
}

/*
 * The kernel's side: routes that a has and b does not removed (add
 * false), or routes b has and a does not added; the same for addresses.
 * Failures are logged and counted in *failed; the engine's side stands.
 */
static void kernel_diff(struct loop_reload *r, const struct yip_config *a,
                        const struct yip_config *b, bool add, bool tap, unsigned *failed)
{
	char err[256], s[YIP_ADDRSTRLEN];

	for (size_t i = 0; i < a->n_addresses; i++)
		if (!cidr_in(&a->addresses[i], b->addresses, b->n_addresses) &&
		    privsep_address(r->ps, &a->addresses[i], add, err, sizeof(err)) != 0) {
			log_warn("reload: %s", err);
			(*failed)++;
		}
	if (tap)
		return;
	for (size_t i = 0; i < a->n_peers; i++)
		for (size_t j = 0; j < a->peers[i].n_allowed_ips; j++) {
			const struct yip_cidr *c = &a->peers[i].allowed_ips[j];

			if (!routed(c) || has_route(b, c))
				continue;
			if (privsep_route(r->ps, c, add, err, sizeof(err)) != 0) {
				log_warn("reload: %s", err);
				(*failed)++;
			} else {
				yip_cidr_format(c, s, sizeof(s));
				log_debug("reload: route %s %s", s, add ? "added" : "removed");
			}
		}
}

/* "+10.0.0.0/24 -10.1.0.0/24": what allowed IPs o has and n has not, and the reverse. */
static void describe_allowed(const struct yip_peer_config *o, const struct yip_peer_config *n,
                             char *out, size_t len)
{
	size_t at = 0;
	char s[YIP_ADDRSTRLEN];

	out[0] = '\0';
	for (size_t i = 0; i < n->n_allowed_ips && at < len; i++)
		if (!cidr_in(&n->allowed_ips[i], o->allowed_ips, o->n_allowed_ips)) {
			yip_cidr_format(&n->allowed_ips[i], s, sizeof(s));
			at += (size_t)snprintf(out + at, len - at, " +%s", s);
		}
	for (size_t i = 0; i < o->n_allowed_ips && at < len; i++)
		if (!cidr_in(&o->allowed_ips[i], n->allowed_ips, n->n_allowed_ips)) {
			yip_cidr_format(&o->allowed_ips[i], s, sizeof(s));
			at += (size_t)snprintf(out + at, len - at, " -%s", s);
		}
}

/* The engine's side of the difference; 0, or -1 with the reason in err (part applied). */
static int engine_diff(struct yip_loop *l, const struct yip_config *a, const struct yip_config *b,
                       struct yip_ctl_reload *out, char *err, size_t errlen)
{
	uint64_t now = yip_now_mono();
	char k[9], what[128];

	/* Removed first, and allowed IPs given up before others take them. */
	for (size_t i = 0; i < a->n_peers; i++) {
		struct yip_peer *p;

		if (find_peer(b, a->peers[i].public_key) != NULL)
			continue;
		p = yip_device_peer(l->dev, a->peers[i].public_key);
		if (p != NULL && yip_device_peer_remove(l->dev, p) != 0) {
			snprintf(err, errlen, "peer %s: cannot remove it",
			         short_key(a->peers[i].public_key, k));
			return -1;
		}
		out->removed++;
		yip_ctl_reload_note(out, "- peer %s", short_key(a->peers[i].public_key, k));
	}
	for (size_t i = 0; i < b->n_peers; i++) {
		const struct yip_peer_config *n = &b->peers[i], *o = find_peer(a, n->public_key);
		struct yip_peer_config keep;
		struct yip_cidr *both;
		size_t nb = 0;
		int rc;

		if (o == NULL || !(peer_changes(o, n) & YIP_PEER_SET_ALLOWED_IPS))
			continue;
		both = calloc(o->n_allowed_ips + 1, sizeof(*both));
		if (both == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		for (size_t j = 0; j < o->n_allowed_ips; j++)
			if (cidr_in(&o->allowed_ips[j], n->allowed_ips, n->n_allowed_ips))
				both[nb++] = o->allowed_ips[j];
		keep = *o;
		keep.allowed_ips = both;
		keep.n_allowed_ips = nb;
		rc = yip_device_peer_set(l->dev, now, &keep, YIP_PEER_SET_ALLOWED_IPS, err, errlen);
		free(both);
		if (rc != 0)
			return -1;
	}
	for (size_t i = 0; i < b->n_peers; i++) {
		const struct yip_peer_config *n = &b->peers[i], *o = find_peer(a, n->public_key);
		unsigned f = o != NULL ? peer_changes(o, n) : YIP_PEER_SET_ALL;

		if (f == 0)
			continue;
		if (yip_device_peer_set(l->dev, now, n, f, err, errlen) != 0)
			return -1;
		short_key(n->public_key, k);
		if (o == NULL) {
			out->added++;
			yip_ctl_reload_note(out, "+ peer %s (line %u)", k, n->line);
			continue;
		}
		out->changed++;
		what[0] = '\0';
		if (f & YIP_PEER_SET_ALLOWED_IPS)
			describe_allowed(o, n, what, sizeof(what));
		yip_ctl_reload_note(out, "~ peer %s (line %u):%s%s%s%s", k, n->line,
		                    f & YIP_PEER_SET_ENDPOINT ? " endpoint" : "",
		                    f & YIP_PEER_SET_ALLOWED_IPS ? " allowed_ips" : "", what,
		                    f & YIP_PEER_SET_KEEPALIVE ? " persistent_keepalive" : "");
	}
	return 0;
}

void loop_reload(struct yip_loop *l, struct yip_ctl_reload *out)
{
	struct loop_reload *r = &l->reload;
	struct yip_config next;
	char err[sizeof(out->error) - 64];
	unsigned failed = 0;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if (!r->on || l->dev == NULL) {
		snprintf(out->error, sizeof(out->error), "this yipd cannot reload");
		return;
	}
	fd = privsep_open_config(r->ps, err, sizeof(err));
	if (fd < 0) {
		snprintf(out->error, sizeof(out->error), "reload: %.400s; nothing was applied",
		         err);
		return;
	}
	rc = yip_config_load_fd(fd, r->ps->path, r->resolve, &next, err, sizeof(err));
	close(fd);
	if (rc != 0) {
		snprintf(out->error, sizeof(out->error),
		         "reload refused: %.400s; nothing was applied", err);
		return;
	}
	if (check(r, &next, out) != 0) {
		yip_config_free(&next);
		return;
	}
	/* Routes and addresses that go, then the engine, then those that come. */
	kernel_diff(r, &r->cfg, &next, false, l->tap, &failed);
	if (engine_diff(l, &r->cfg, &next, out, err, sizeof(err)) != 0) {
		snprintf(out->error, sizeof(out->error),
		         "reload stopped part way (+%u ~%u -%u applied): %.300s; fix it and reload "
		         "again",
		         out->added, out->changed, out->removed, err);
		log_err("%s", out->error);
		yip_config_free(&next);
		return;
	}
	kernel_diff(r, &next, &r->cfg, true, l->tap, &failed);
	for (size_t i = 0; i < next.n_addresses; i++)
		if (!cidr_in(&next.addresses[i], r->cfg.addresses, r->cfg.n_addresses)) {
			char s[YIP_ADDRSTRLEN];

			yip_cidr_format(&next.addresses[i], s, sizeof(s));
			yip_ctl_reload_note(out, "+ address %s", s);
		}
	for (size_t i = 0; i < r->cfg.n_addresses; i++)
		if (!cidr_in(&r->cfg.addresses[i], next.addresses, next.n_addresses)) {
			char s[YIP_ADDRSTRLEN];

			yip_cidr_format(&r->cfg.addresses[i], s, sizeof(s));
			yip_ctl_reload_note(out, "- address %s", s);
		}
	if (next.log_level_set && (!r->cfg.log_level_set || next.log_level != r->cfg.log_level)) {
		yip_log_set_level(next.log_level);
		yip_ctl_reload_note(out, "log_level %s", yip_log_level_name(next.log_level));
	}
	if (failed > 0)
		yip_ctl_reload_note(out, "%u route or address change%s failed: see the log", failed,
		                    failed == 1 ? "" : "s");
	yip_config_free(&r->cfg);
	r->cfg = next;
	sodium_memzero(r->cfg.private_key, sizeof(r->cfg.private_key));
	out->ok = true;
	log_info("reload: +%u ~%u -%u", out->added, out->changed, out->removed);
	for (size_t i = 0; i < out->n_lines; i++)
		log_info("reload: %s", out->lines[i]);
}

void loop_reload_all(struct yip_loop *l, struct yip_ctl_reload *out)
{
	/* The service manager hears of it around the whole of it (RELOADING=1, READY=1). */
	loop_notify_reloading(l);
	loop_reload(l, out);
	if (l->dev != NULL)
		loop_members_reload(&l->members, l->dev);
	loop_notify_ready(l);
}
