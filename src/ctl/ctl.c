/* The control protocol: requests, snapshots of the engine, and JSON replies. */
#include "ctl/ctl.h"
#include "ctl/reach.h"

#include <arpa/inet.h>
#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/hex.h"

/* ---- Requests ---- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

int yip_ctl_parse_request(const char *line, size_t len, struct yip_ctl_request *req, char *err,
                          size_t errlen)
{
	const char *word[3];
	size_t wlen[3], n = 0, i = 0;

	memset(req, 0, sizeof(*req));
	if (len >= YIP_CTL_MAX_REQUEST) {
		snprintf(err, errlen, "request longer than %d bytes", YIP_CTL_MAX_REQUEST - 1);
		return -1;
	}
	if (len > 0 && line[len - 1] == '\r')
		len--;
	for (size_t j = 0; j < len; j++) {
		unsigned char c = (unsigned char)line[j];

		if ((c < 0x20 && c != '\t') || c >= 0x7f) {
			snprintf(err, errlen, "request holds byte 0x%02x", c);
			return -1;
		}
	}
	while (i < len) {
		size_t start;

		while (i < len && is_blank(line[i]))
			i++;
		if (i == len)
			break;
		if (n == 3) {
			snprintf(err, errlen, "too many words in request");
			return -1;
		}
		start = i;
		while (i < len && !is_blank(line[i]))
			i++;
		word[n] = line + start;
		wlen[n++] = i - start;
	}
	if (n == 0) {
		snprintf(err, errlen, "empty request (expected show, show <peer> or stats)");
		return -1;
	}
	if (wlen[0] == 4 && memcmp(word[0], "show", 4) == 0) {
		char hex[2 * YIP_KEY_LEN + 1];

		req->cmd = YIP_CTL_SHOW;
		if (n == 1)
			return 0;
		if (n > 2) {
			snprintf(err, errlen, "show takes at most one peer public key");
			return -1;
		}
		if (wlen[1] != 2 * YIP_KEY_LEN) {
			snprintf(err, errlen, "peer public key must be %d hex digits",
			         2 * YIP_KEY_LEN);
			return -1;
		}
		memcpy(hex, word[1], wlen[1]);
		hex[wlen[1]] = '\0';
		if (yip_hex_decode(req->peer, YIP_KEY_LEN, hex) != 0) {
			snprintf(err, errlen, "peer public key must be %d hex digits",
			         2 * YIP_KEY_LEN);
			return -1;
		}
		req->has_peer = true;
		return 0;
	}
	if (wlen[0] == 7 && memcmp(word[0], "members", 7) == 0) {
		req->cmd = YIP_CTL_MEMBERS;
		if (n > 1) {
			snprintf(err, errlen, "members takes no arguments");
			return -1;
		}
		return 0;
	}
	if (wlen[0] == 6 && memcmp(word[0], "reload", 6) == 0) {
		req->cmd = YIP_CTL_RELOAD;
		if (n > 1) {
			snprintf(err, errlen, "reload takes no arguments");
			return -1;
		}
		return 0;
	}
	if (wlen[0] == 7 && memcmp(word[0], "metrics", 7) == 0) {
		req->cmd = YIP_CTL_METRICS;
		if (n > 1) {
			snprintf(err, errlen, "metrics takes no arguments");
			return -1;
		}
		return 0;
	}
	if (wlen[0] == 5 && memcmp(word[0], "stats", 5) == 0) {
		req->cmd = YIP_CTL_STATS;
		if (n > 1) {
			snprintf(err, errlen, "stats takes no arguments");
			return -1;
		}
		return 0;
	}
	if (wlen[0] == 3 && memcmp(word[0], "log", 3) == 0) {
		char name[16];

		req->cmd = YIP_CTL_LOG;
		if (n == 1)
			return 0;
		if (n > 2 || wlen[1] >= sizeof(name)) {
			snprintf(err, errlen,
			         "log takes at most a level (error, warn, info, debug)");
			return -1;
		}
		memcpy(name, word[1], wlen[1]);
		name[wlen[1]] = '\0';
		if (yip_log_level_parse(name, &req->level) != 0) {
			snprintf(err, errlen,
			         "unknown log level '%s' (expected error, warn, info or debug)",
			         name);
			return -1;
		}
		req->has_level = true;
		return 0;
	}
	if (wlen[0] == 4 && memcmp(word[0], "ping", 4) == 0) {
		req->cmd = YIP_CTL_PING;
		if (n < 2 || wlen[1] > YIP_CTL_TARGET_MAX ||
		    (n == 3 && (wlen[2] != 4 || memcmp(word[2], "poll", 4) != 0))) {
			snprintf(err, errlen,
			         "usage: ping <peer> [poll] (a peer of at most %d bytes)",
			         YIP_CTL_TARGET_MAX);
			return -1;
		}
		memcpy(req->target, word[1], wlen[1]);
		req->target[wlen[1]] = '\0';
		req->poll = n == 3;
		return 0;
	}
	if (wlen[0] == 8 && memcmp(word[0], "netcheck", 8) == 0) {
		req->cmd = YIP_CTL_NETCHECK;
		if (n > 2 || (n == 2 && (wlen[1] != 5 || memcmp(word[1], "probe", 5) != 0))) {
			snprintf(err, errlen, "usage: netcheck [probe]");
			return -1;
		}
		req->poll = n == 2;
		return 0;
	}
	snprintf(err, errlen,
	         "unknown request '%.*s' (expected show, show <peer>, stats, members, reload, log, "
	         "metrics, ping or netcheck)",
	         (int)(wlen[0] > 32 ? 32 : wlen[0]), word[0]);
	return -1;
}

/* ---- What the engine does not keep ---- */

void yip_ctl_config_init(struct yip_ctl_config *c, const char *device, uint16_t listen_port)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->device, sizeof(c->device), "%s", device);
	c->listen_port = listen_port;
}

/* ---- Snapshots ---- */

/* A CA-gated node's membership, copied (the engine's pointers do not last). */
static void snapshot_members(struct yip_ctl_membership *m, const struct yip_device *dev)
{
	struct yip_members_info mi;

	if (!yip_device_members_info(dev, &mi))
		return;
	m->present = true;
	snprintf(m->network, sizeof(m->network), "%s", mi.network);
	m->cert = mi.cert->f;
	m->cert_verdict = mi.cert_verdict;
	m->now_unix = yip_now_wall() / YIP_NS_PER_S;
	m->has_roots = mi.has_roots;
	m->roots_serial = mi.roots_serial;
	m->has_revocations = mi.has_revocations;
	m->revocations_serial = mi.revocations_serial;
	m->n_revoked = mi.n_revoked;
	m->no_cert = mi.no_cert;
	memcpy(m->refused, mi.refused, sizeof(m->refused));
	m->admitted = mi.admitted;
	m->removed = mi.removed;
	m->intros_held = mi.intros_held;
	m->intros_used = mi.intros_used;
	m->asks_refused = mi.asks_refused;
	m->roots_older = mi.roots_older;
	m->revocations_older = mi.revocations_older;
	m->gossip = mi.gossip;
	m->gossip_items = mi.gossip_items;
	m->gossip_neighbours = mi.gossip_neighbours;
	m->gossip_active = mi.gossip_active;
	m->gossip_tx_msgs = mi.gossip_tx_msgs;
	m->gossip_tx_bytes = mi.gossip_tx_bytes;
	m->gossip_rx_msgs = mi.gossip_rx_msgs;
	m->gossip_rx_bytes = mi.gossip_rx_bytes;
	m->gossip_accepted = mi.gossip_accepted;
	m->gossip_drops = mi.gossip_drops;
}

int yip_ctl_snapshot_take(struct yip_ctl_snapshot *s, const struct yip_ctl_config *c,
                          const struct yip_device *dev, uint64_t now)
{
	struct yip_device_info di;
	size_t n_allowed = 0;

	memset(s, 0, sizeof(*s));
	yip_device_info(dev, &di);
	snprintf(s->device, sizeof(s->device), "%s", c ? c->device : "");
	s->listen_port = c ? c->listen_port : 0;
	memcpy(s->public_key, di.public_key, YIP_KEY_LEN);
	memcpy(s->address, di.address, YIP_ADDR_LEN);
	s->fec = di.fec;
	s->obf = di.obf;
	s->nat = di.nat;
	memcpy(s->drops, di.drops, sizeof(s->drops));
	yip_device_totals(dev, &s->totals);
	snapshot_members(&s->members, dev);
	for (size_t i = 0; i < di.n_servers && i < YIP_MAX_RENDEZVOUS; i++)
		if (yip_device_server_info(dev, i, now, &s->servers[s->n_servers]))
			s->n_servers++;
	if (di.n_peers == 0)
		return 0;
	s->peers = calloc(di.n_peers, sizeof(*s->peers));
	if (s->peers == NULL)
		return -1;
	for (size_t i = 0; i < di.n_peers; i++) {
		struct yip_peer_info pi;

		if (yip_device_peer_info(dev, i, now, &pi))
			n_allowed += pi.n_allowed;
	}
	if (n_allowed > 0 && (s->allowed = calloc(n_allowed, sizeof(*s->allowed))) == NULL) {
		yip_ctl_snapshot_free(s);
		return -1;
	}
	n_allowed = 0;
	for (size_t i = 0; i < di.n_peers; i++) {
		struct yip_peer_info pi;
		struct yip_ctl_peer *o = &s->peers[s->n_peers];

		if (!yip_device_peer_info(dev, i, now, &pi))
			break;
		memcpy(o->public_key, pi.public_key, YIP_KEY_LEN);
		memcpy(o->address, pi.address, YIP_ADDR_LEN);
		o->has_endpoint = pi.has_endpoint;
		if (pi.has_endpoint)
			o->endpoint = pi.endpoint;
		if (pi.n_allowed > 0) {
			memcpy(s->allowed + n_allowed, pi.allowed,
			       pi.n_allowed * sizeof(*s->allowed));
			o->allowed_ips = s->allowed + n_allowed;
			o->n_allowed_ips = pi.n_allowed;
			n_allowed += pi.n_allowed;
		}
		o->dynamic = pi.dynamic;
		o->root = pi.root;
		o->handshaking = pi.handshaking;
		if (pi.cert != NULL) {
			o->has_cert = true;
			o->cert = pi.cert->f;
		}
		o->established = pi.established;
		o->unanswered_s = pi.unanswered / 1000000000ULL;
		o->hint = pi.hint;
		o->latest_handshake = pi.stats.last_handshake_wall / 1000000000ULL;
		o->cipher = pi.cipher >= 0 ? yip_cipher_name((unsigned)pi.cipher) : NULL;
		o->rtt_ms = pi.srtt ? (double)pi.srtt / 1e6 : -1.0;
		o->loss_estimate = pi.loss;
		o->stats = pi.stats;
		o->recovery_mem = pi.recovery_mem;
		memcpy(o->fec, pi.fec, sizeof(o->fec));
		o->has_path = pi.has_path;
		memcpy(o->path, pi.path, sizeof(o->path));
		o->path_age_s = pi.path_age / 1000000000ULL;
		o->path_link = pi.path_link;
		o->relayed_why = pi.relayed_why;
		o->nat = pi.nat;
		o->n_paths = pi.n_paths;
		memcpy(o->paths, pi.paths, sizeof(o->paths));
		s->n_peers++;
	}
	return 0;
}

void yip_ctl_snapshot_free(struct yip_ctl_snapshot *s)
{
	free(s->peers);
	free(s->allowed);
	s->allowed = NULL;
	s->peers = NULL;
	s->n_peers = 0;
}

/* ---- JSON ---- */

/* Counters are written as exact integers, not through a double. */
static bool add_u64(cJSON *o, const char *name, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cJSON_AddRawToObject(o, name, buf) != NULL;
}

/* A finite number rounded to 1/scale; anything else becomes 0. */
static double rounded(double v, double scale)
{
	if (!isfinite(v))
		return 0;
	return round(v * scale) / scale;
}

static bool add_hex(cJSON *o, const char *name, const uint8_t *b, size_t len)
{
	char hex[2 * YIP_KEY_LEN + 1];

	if (len > YIP_KEY_LEN)
		return false;
	yip_hex_encode(hex, b, len);
	return cJSON_AddStringToObject(o, name, hex) != NULL;
}

static bool add_addr6(cJSON *o, const char *name, const uint8_t addr[YIP_ADDR_LEN])
{
	char s[INET6_ADDRSTRLEN];

	if (inet_ntop(AF_INET6, addr, s, sizeof(s)) == NULL)
		return false;
	return cJSON_AddStringToObject(o, name, s) != NULL;
}

static bool add_drops(cJSON *o, const struct yip_ctl_snapshot *s)
{
	cJSON *d = cJSON_AddObjectToObject(o, "drops");

	if (d == NULL)
		return false;
	for (int i = 0; i < YIP_DROP_COUNT; i++)
		if (!add_u64(d, yip_drop_name((enum yip_drop)i), s->drops[i]))
			return false;
	return true;
}

static bool add_str_or_null(cJSON *o, const char *name, const char *v)
{
	return (v != NULL ? cJSON_AddStringToObject(o, name, v) : cJSON_AddNullToObject(o, name)) !=
	       NULL;
}

/* The link a current path uses: {"kind": "tls", "tls_version": ..., "sni": ...}, or null. */
static bool add_link(cJSON *o, const struct yip_ctl_link *l)
{
	cJSON *j;

	if (l->kind == NULL)
		return cJSON_AddNullToObject(o, "link") != NULL;
	j = cJSON_AddObjectToObject(o, "link");
	if (j == NULL || cJSON_AddStringToObject(j, "kind", l->kind) == NULL)
		return false;
	if (l->version == NULL)
		return true;
	return add_str_or_null(j, "tls_version", l->version) &&
	       add_str_or_null(j, "cipher", l->cipher) && add_str_or_null(j, "sni", l->sni) &&
	       add_str_or_null(j, "alpn", l->alpn) &&
	       cJSON_AddBoolToObject(j, "accepted", l->accepted) != NULL;
}

/* The current path, why it is relayed, and every candidate (docs/nat.md). */
static bool add_paths(cJSON *o, const struct yip_ctl_peer *p)
{
	cJSON *arr;

	if (!add_link(o, &p->link))
		return false;
	if (!add_str_or_null(o, "path", p->has_path ? p->path : NULL) ||
	    !add_u64(o, "path_age", p->has_path ? p->path_age_s : 0) ||
	    !add_str_or_null(o, "relayed_why", p->relayed_why) ||
	    !add_str_or_null(o, "nat", p->nat))
		return false;
	arr = cJSON_AddArrayToObject(o, "candidates");
	if (arr == NULL)
		return false;
	for (unsigned i = 0; i < p->n_paths; i++) {
		const struct yip_path_info *t = &p->paths[i];
		cJSON *c = cJSON_CreateObject();

		if (c == NULL || !cJSON_AddItemToArray(arr, c)) {
			cJSON_Delete(c);
			return false;
		}
		if (cJSON_AddStringToObject(c, "path", t->path) == NULL ||
		    cJSON_AddStringToObject(c, "origin", t->origin) == NULL ||
		    cJSON_AddBoolToObject(c, "validated", t->validated) == NULL)
			return false;
		if ((t->rtt
		         ? cJSON_AddNumberToObject(c, "rtt_ms", rounded((double)t->rtt / 1e6, 1000))
		         : cJSON_AddNullToObject(c, "rtt_ms")) == NULL)
			return false;
	}
	return true;
}

/* Our NAT mapping and each rendezvous server we use. */
static bool add_rendezvous(cJSON *o, const struct yip_ctl_snapshot *s)
{
	char buf[YIP_ADDRSTRLEN];
	cJSON *arr;

	if (!add_str_or_null(o, "nat", s->nat))
		return false;
	arr = cJSON_AddArrayToObject(o, "rendezvous");
	if (arr == NULL)
		return false;
	for (size_t i = 0; i < s->n_servers; i++) {
		const struct yip_server_info *r = &s->servers[i];
		cJSON *c = cJSON_CreateObject();

		if (c == NULL || !cJSON_AddItemToArray(arr, c)) {
			cJSON_Delete(c);
			return false;
		}
		yip_sockaddr_format(&r->addr, buf, sizeof(buf));
		if (cJSON_AddStringToObject(c, "server", buf) == NULL ||
		    cJSON_AddStringToObject(c, "state", r->state) == NULL ||
		    !add_str_or_null(c, "refused", r->refused))
			return false;
		yip_sockaddr_format(&r->reflexive, buf, sizeof(buf));
		if (!add_str_or_null(c, "seen_as", r->has_reflexive ? buf : NULL) ||
		    cJSON_AddBoolToObject(c, "relay", r->relay) == NULL ||
		    !add_u64(c, "registered_age", r->registered_age / 1000000000ULL) ||
		    !add_u64(c, "lookups", r->lookups) || !add_u64(c, "intros", r->intros) ||
		    !add_u64(c, "unknowns", r->unknowns) || !add_u64(c, "asks", r->asks) ||
		    !add_u64(c, "cands_refused", r->cands_refused) ||
		    !add_link(c, &s->server_links[i]) ||
		    !add_str_or_null(c, "link_reason", r->reason) ||
		    !add_str_or_null(c, "dial_error", s->server_dial_error[i]))
			return false;
	}
	return true;
}

static bool add_peer(cJSON *arr, const struct yip_ctl_peer *p)
{
	cJSON *o = cJSON_CreateObject(), *ips, *fec;
	const struct yip_peer_stats *st = &p->stats;
	char buf[YIP_ADDRSTRLEN];

	if (o == NULL)
		return false;
	if (!cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return false;
	}
	if (!add_hex(o, "public_key", p->public_key, YIP_KEY_LEN))
		return false;
	if (p->has_endpoint) {
		yip_sockaddr_format(&p->endpoint, buf, sizeof(buf));
		if (cJSON_AddStringToObject(o, "endpoint", buf) == NULL)
			return false;
	} else if (cJSON_AddNullToObject(o, "endpoint") == NULL) {
		return false;
	}
	ips = cJSON_AddArrayToObject(o, "allowed_ips");
	if (ips == NULL)
		return false;
	for (size_t i = 0; i < p->n_allowed_ips; i++) {
		cJSON *ip;

		yip_cidr_format(&p->allowed_ips[i], buf, sizeof(buf));
		ip = cJSON_CreateString(buf);
		if (ip == NULL || !cJSON_AddItemToArray(ips, ip)) {
			cJSON_Delete(ip);
			return false;
		}
	}
	if (!add_addr6(o, "address", p->address) ||
	    cJSON_AddBoolToObject(o, "established", p->established) == NULL ||
	    !add_u64(o, "handshake_unanswered_s", p->unanswered_s) ||
	    !add_str_or_null(o, "handshake_hint", p->hint) ||
	    !add_u64(o, "latest_handshake", p->latest_handshake) ||
	    !add_u64(o, "handshakes", p->stats.handshakes) || !add_u64(o, "roams", p->stats.roams))
		return false;
	if ((p->cipher != NULL ? cJSON_AddStringToObject(o, "cipher", p->cipher)
	                       : cJSON_AddNullToObject(o, "cipher")) == NULL)
		return false;
	if (p->rtt_ms >= 0 && isfinite(p->rtt_ms)) {
		if (cJSON_AddNumberToObject(o, "rtt_ms", rounded(p->rtt_ms, 1000)) == NULL)
			return false;
	} else if (cJSON_AddNullToObject(o, "rtt_ms") == NULL) {
		return false;
	}
	if (!add_u64(o, "rx_bytes", st->rx_bytes) || !add_u64(o, "tx_bytes", st->tx_bytes) ||
	    !add_u64(o, "rx_packets", st->rx_packets) ||
	    !add_u64(o, "tx_packets", st->tx_packets) || !add_u64(o, "lost", st->lost) ||
	    !add_u64(o, "fec_recovered", st->fec_recovered) ||
	    !add_u64(o, "fec_unrecovered", st->fec_unrecovered) ||
	    !add_u64(o, "fec_late", st->fec_late) ||
	    !add_u64(o, "arq_recovered", st->arq_recovered) ||
	    !add_u64(o, "arq_sent", st->arq_sent) || !add_u64(o, "nacks_sent", st->nacks_sent) ||
	    !add_u64(o, "nacks_received", st->nacks_received) ||
	    !add_u64(o, "arq_history_miss", st->arq_history_miss) ||
	    !add_u64(o, "arq_late", st->arq_late) ||
	    !add_u64(o, "arq_congested", st->arq_congested) ||
	    !add_u64(o, "loss_congested", st->loss_congested) ||
	    !add_u64(o, "repair_sent", st->repair_sent) ||
	    !add_u64(o, "repair_bytes", st->repair_bytes) ||
	    !add_u64(o, "wire_bytes", st->wire_bytes) ||
	    !add_u64(o, "recovery_mem", p->recovery_mem) ||
	    cJSON_AddNumberToObject(o, "loss_estimate", rounded(p->loss_estimate, 1e6)) == NULL)
		return false;
	fec = cJSON_AddObjectToObject(o, "fec");
	if (fec == NULL)
		return false;
	for (int c = 0; c < FLOW_CLASSES; c++) {
		cJSON *kr = cJSON_AddObjectToObject(fec, flow_class_name((enum flow_class)c));

		if (kr == NULL || cJSON_AddNumberToObject(kr, "k", p->fec[c].k) == NULL ||
		    cJSON_AddNumberToObject(kr, "r", p->fec[c].r) == NULL ||
		    cJSON_AddNumberToObject(kr, "lanes", p->fec[c].lanes) == NULL)
			return false;
	}
	if (p->has_cert || p->root) {
		cJSON *m = cJSON_AddObjectToObject(o, "member");

		if (m == NULL || !add_str_or_null(m, "name", p->has_cert ? p->cert.name : NULL) ||
		    cJSON_AddBoolToObject(m, "root", p->root) == NULL ||
		    cJSON_AddBoolToObject(m, "dynamic", p->dynamic) == NULL)
			return false;
	} else if (cJSON_AddNullToObject(o, "member") == NULL) {
		return false;
	}
	return add_paths(o, p);
}

/* Days until t from now, rounded down; negative once past. */
static double days_until(uint64_t t, uint64_t now)
{
	return t >= now ? (double)((t - now) / 86400) : -(double)((now - t + 86399) / 86400);
}

/* The warning yipctl shows about our certificate, or NULL. */
static const char *cert_warning(const struct yip_ctl_membership *m)
{
	if (m->cert_verdict != MEMBER_OK && m->cert_verdict != MEMBER_EXPIRED)
		return "this node's certificate is not valid (see cert_verdict): members refuse it";
	if (m->now_unix >= m->cert.not_after)
		return "this node's certificate has expired: renew it and send SIGHUP";
	if (m->cert.not_after - m->now_unix <= 7 * 86400)
		return "this node's certificate expires within 7 days: renew it and send SIGHUP";
	return NULL;
}

static bool add_prefixes(cJSON *o, const char *name, const struct yip_cidr *c, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(o, name);
	char buf[YIP_ADDRSTRLEN];

	if (arr == NULL)
		return false;
	for (size_t i = 0; i < n; i++) {
		cJSON *ip;

		yip_cidr_format(&c[i], buf, sizeof(buf));
		ip = cJSON_CreateString(buf);
		if (ip == NULL || !cJSON_AddItemToArray(arr, ip)) {
			cJSON_Delete(ip);
			return false;
		}
	}
	return true;
}

/* A certificate's name, prefixes, groups and validity. */
static bool add_cert_fields(cJSON *o, const struct wire_cert *c, uint64_t now)
{
	cJSON *groups;

	if (cJSON_AddStringToObject(o, "name", c->name) == NULL ||
	    !add_prefixes(o, "addresses", c->prefixes, c->n_prefixes) ||
	    (groups = cJSON_AddArrayToObject(o, "groups")) == NULL)
		return false;
	for (unsigned i = 0; i < c->n_groups; i++) {
		cJSON *g = cJSON_CreateString(c->groups[i]);

		if (g == NULL || !cJSON_AddItemToArray(groups, g)) {
			cJSON_Delete(g);
			return false;
		}
	}
	return add_u64(o, "not_after", c->not_after) &&
	       cJSON_AddNumberToObject(o, "expires_in_days", days_until(c->not_after, now)) != NULL;
}

/* The node's membership: its certificate, the lists it holds, admissions refused. */
static bool add_membership(cJSON *o, const struct yip_ctl_membership *m)
{
	cJSON *j, *r;
	const char *warn;

	if (!m->present)
		return cJSON_AddNullToObject(o, "membership") != NULL;
	j = cJSON_AddObjectToObject(o, "membership");
	if (j == NULL || cJSON_AddStringToObject(j, "network", m->network) == NULL)
		return false;
	r = cJSON_AddObjectToObject(j, "cert");
	if (r == NULL || !add_cert_fields(r, &m->cert, m->now_unix))
		return false;
	warn = cert_warning(m);
	if (!add_str_or_null(j, "warning", warn) ||
	    cJSON_AddStringToObject(j, "cert_verdict", member_verdict_name(m->cert_verdict)) ==
	        NULL)
		return false;
	if ((m->has_roots ? !add_u64(j, "roots_serial", m->roots_serial)
	                  : cJSON_AddNullToObject(j, "roots_serial") == NULL) ||
	    (m->has_revocations ? !add_u64(j, "revocations_serial", m->revocations_serial)
	                        : cJSON_AddNullToObject(j, "revocations_serial") == NULL) ||
	    !add_u64(j, "revoked_entries", m->n_revoked) || !add_u64(j, "admitted", m->admitted) ||
	    !add_u64(j, "removed", m->removed) || !add_u64(j, "intros_held", m->intros_held) ||
	    !add_u64(j, "intros_used", m->intros_used) ||
	    !add_u64(j, "asks_refused", m->asks_refused) ||
	    !add_u64(j, "roots_refused_older", m->roots_older) ||
	    !add_u64(j, "revocations_refused_older", m->revocations_older))
		return false;
	if (!m->gossip) {
		if (cJSON_AddNullToObject(j, "gossip") == NULL)
			return false;
	} else {
		r = cJSON_AddObjectToObject(j, "gossip");
		if (r == NULL || !add_u64(r, "items", m->gossip_items) ||
		    !add_u64(r, "neighbours", m->gossip_neighbours) ||
		    !add_u64(r, "active", m->gossip_active) ||
		    !add_u64(r, "tx_messages", m->gossip_tx_msgs) ||
		    !add_u64(r, "tx_bytes", m->gossip_tx_bytes) ||
		    !add_u64(r, "rx_messages", m->gossip_rx_msgs) ||
		    !add_u64(r, "rx_bytes", m->gossip_rx_bytes) ||
		    !add_u64(r, "accepted", m->gossip_accepted) ||
		    !add_u64(r, "drops", m->gossip_drops))
			return false;
	}
	r = cJSON_AddObjectToObject(j, "refused");
	if (r == NULL || !add_u64(r, "no_certificate", m->no_cert))
		return false;
	for (int v = MEMBER_MALFORMED; v < MEMBER_VERDICT_COUNT; v++) {
		if (v == MEMBER_OLDER || v == MEMBER_BAD_SIGNATURE)
			continue; /* not a certificate's verdict */
		if (!add_u64(r, member_verdict_name((enum member_verdict)v), m->refused[v]))
			return false;
	}
	return true;
}

/* Why a member is not connected, as far as the node can tell. */
static const char *why_not(const struct yip_ctl_peer *p)
{
	if (p->established)
		return NULL;
	if (p->handshaking)
		return "handshake under way, no answer yet";
	if (p->n_paths == 0)
		return "no address known: it has to call this node";
	return "no session: idle, or no answer to the last handshake (one starts with traffic)";
}

static cJSON *json_members(const struct yip_ctl_snapshot *s)
{
	const struct yip_ctl_membership *m = &s->members;
	cJSON *o = cJSON_CreateObject(), *arr, *me;

	if (o == NULL)
		return NULL;
	if (!m->present) {
		cJSON_Delete(o);
		return NULL;
	}
	if (cJSON_AddStringToObject(o, "network", m->network) == NULL ||
	    (arr = cJSON_AddArrayToObject(o, "members")) == NULL)
		goto fail;
	/* This node first. */
	me = cJSON_CreateObject();
	if (me == NULL || !cJSON_AddItemToArray(arr, me)) {
		cJSON_Delete(me);
		goto fail;
	}
	if (!add_hex(me, "public_key", s->public_key, YIP_KEY_LEN) ||
	    !add_addr6(me, "address", s->address) || !add_cert_fields(me, &m->cert, m->now_unix) ||
	    cJSON_AddBoolToObject(me, "self", true) == NULL ||
	    cJSON_AddNullToObject(me, "connected") == NULL)
		goto fail;
	for (size_t i = 0; i < s->n_peers; i++) {
		const struct yip_ctl_peer *p = &s->peers[i];
		cJSON *e;

		if (!p->has_cert && !p->root)
			continue; /* a configured peer that never showed a certificate */
		e = cJSON_CreateObject();
		if (e == NULL || !cJSON_AddItemToArray(arr, e)) {
			cJSON_Delete(e);
			goto fail;
		}
		if (!add_hex(e, "public_key", p->public_key, YIP_KEY_LEN) ||
		    !add_addr6(e, "address", p->address))
			goto fail;
		if (p->has_cert ? !add_cert_fields(e, &p->cert, m->now_unix)
		                : (cJSON_AddNullToObject(e, "name") == NULL ||
		                   !add_prefixes(e, "addresses", NULL, 0)))
			goto fail;
		if (cJSON_AddBoolToObject(e, "self", false) == NULL ||
		    cJSON_AddBoolToObject(e, "root", p->root) == NULL ||
		    cJSON_AddBoolToObject(e, "configured", !p->dynamic) == NULL ||
		    cJSON_AddBoolToObject(e, "connected", p->established) == NULL ||
		    !add_str_or_null(e, "path", p->has_path ? p->path : NULL) ||
		    !add_str_or_null(e, "why_not", why_not(p)))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *json_show(const struct yip_ctl_snapshot *s, const struct yip_ctl_request *req)
{
	cJSON *o = cJSON_CreateObject(), *peers;

	if (o == NULL)
		return NULL;
	if (cJSON_AddStringToObject(o, "device", s->device) == NULL ||
	    !add_hex(o, "public_key", s->public_key, YIP_KEY_LEN) ||
	    cJSON_AddNumberToObject(o, "listen_port", s->listen_port) == NULL ||
	    !add_addr6(o, "address", s->address) ||
	    cJSON_AddBoolToObject(o, "fec", s->fec) == NULL ||
	    cJSON_AddBoolToObject(o, "obf", s->obf) == NULL || !add_rendezvous(o, s) ||
	    !add_drops(o, s) || !add_membership(o, &s->members))
		goto fail;
	peers = cJSON_AddArrayToObject(o, "peers");
	if (peers == NULL)
		goto fail;
	for (size_t i = 0; i < s->n_peers; i++) {
		if (req->has_peer && memcmp(s->peers[i].public_key, req->peer, YIP_KEY_LEN) != 0)
			continue;
		if (!add_peer(peers, &s->peers[i]))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static bool add_datapath(cJSON *o, const struct yip_ctl_datapath *d)
{
	cJSON *j;

	if (!d->present)
		return true;
	j = cJSON_AddObjectToObject(o, "datapath");
	return j != NULL && cJSON_AddStringToObject(j, "io", d->io ? d->io : "?") != NULL &&
	       cJSON_AddNumberToObject(j, "workers", d->workers) != NULL &&
	       cJSON_AddBoolToObject(j, "tun_offload", d->tun_offload) != NULL &&
	       cJSON_AddBoolToObject(j, "udp_gso", d->udp_gso) != NULL &&
	       cJSON_AddBoolToObject(j, "udp_gro", d->udp_gro) != NULL &&
	       add_u64(j, "tso_reads", d->tso_reads) &&
	       add_u64(j, "tso_segments", d->tso_segments) &&
	       add_u64(j, "gro_coalesced", d->gro_coalesced) &&
	       add_u64(j, "udp_trains", d->udp_trains) &&
	       add_u64(j, "udp_train_datagrams", d->udp_train_datagrams) &&
	       add_u64(j, "aqm_marks", d->aqm_marks) && add_u64(j, "aqm_drops", d->aqm_drops) &&
	       add_u64(j, "timer_runs", d->timer_runs) && add_u64(j, "tls_links", d->tls_links) &&
	       add_u64(j, "tls_dialed", d->tls_dialed) &&
	       add_u64(j, "tls_accepted", d->tls_accepted) &&
	       add_u64(j, "tls_opened", d->tls_opened) && add_u64(j, "tls_failed", d->tls_failed) &&
	       add_u64(j, "tls_refused_full", d->tls_refused_full) &&
	       add_u64(j, "tls_refused_busy", d->tls_refused_busy) &&
	       add_u64(j, "tls_bad_frames", d->tls_bad_frames) &&
	       add_u64(j, "quic_decoy_requests", d->quic_decoy_requests) &&
	       add_u64(j, "quic_decoy_refused", d->quic_decoy_refused) &&
	       add_u64(j, "quic_decoy_malformed", d->quic_decoy_malformed) &&
	       add_u64(j, "quic_decoy_errors", d->quic_decoy_errors);
}

static cJSON *json_stats(const struct yip_ctl_snapshot *s)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	if (cJSON_AddStringToObject(o, "device", s->device) == NULL || !add_drops(o, s) ||
	    !add_datapath(o, &s->datapath)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Prints o (then deletes it) with a newline. */

static char *finish(cJSON *o, size_t *out_len)
{
	return yip_ctl_json_line(o, out_len);
}

char *yip_ctl_error_reply(const char *msg, size_t *out_len)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && cJSON_AddStringToObject(o, "error", msg) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return finish(o, out_len);
}

char *yip_ctl_reload_reply(const struct yip_ctl_reload *r, size_t *out_len)
{
	cJSON *o, *rl, *lines;

	if (!r->ok)
		return yip_ctl_error_reply(r->error, out_len);
	o = cJSON_CreateObject();
	rl = cJSON_AddObjectToObject(o, "reload");
	lines = cJSON_AddArrayToObject(rl, "changes");
	if (lines == NULL || !cJSON_AddNumberToObject(rl, "added", r->added) ||
	    !cJSON_AddNumberToObject(rl, "changed", r->changed) ||
	    !cJSON_AddNumberToObject(rl, "removed", r->removed) ||
	    !cJSON_AddNumberToObject(rl, "unlisted", (double)r->more)) {
		cJSON_Delete(o);
		return NULL;
	}
	for (size_t i = 0; i < r->n_lines; i++)
		if (!cJSON_AddItemToArray(lines, cJSON_CreateString(r->lines[i]))) {
			cJSON_Delete(o);
			return NULL;
		}
	return finish(o, out_len);
}

void yip_ctl_reload_note(struct yip_ctl_reload *r, const char *fmt, ...)
{
	va_list ap;

	if (r->n_lines == YIP_CTL_RELOAD_LINES) {
		r->more++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(r->lines[r->n_lines++], sizeof(r->lines[0]), fmt, ap);
	va_end(ap);
}

char *yip_ctl_log_reply(enum yip_log_level level, size_t *out_len)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL &&
	    cJSON_AddStringToObject(o, "log_level", yip_log_level_name(level)) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return finish(o, out_len);
}

char *yip_ctl_reply(const struct yip_ctl_snapshot *s, const char *line, size_t len, size_t *out_len)
{
	struct yip_ctl_request req;
	char err[128];

	if (yip_ctl_parse_request(line, len, &req, err, sizeof(err)) != 0)
		return yip_ctl_error_reply(err, out_len);
	if (req.cmd == YIP_CTL_STATS)
		return finish(json_stats(s), out_len);
	if (req.cmd == YIP_CTL_RELOAD) /* the loop's to answer (src/loop/reload.c) */
		return yip_ctl_error_reply("reload is not answered from a snapshot", out_len);
	if (req.cmd == YIP_CTL_LOG) /* the loop's to answer: it holds the level */
		return yip_ctl_error_reply("log: not answered from a snapshot", out_len);
	if (req.cmd == YIP_CTL_METRICS)
		return yip_ctl_metrics(s, out_len);
	if (req.cmd == YIP_CTL_NETCHECK)
		return yip_ctl_netcheck_reply(s, false, out_len);
	if (req.cmd == YIP_CTL_PING)
		return yip_ctl_error_reply("ping is answered by the running daemon only", out_len);
	if (req.cmd == YIP_CTL_MEMBERS) {
		if (!s->members.present)
			return yip_ctl_error_reply(
			    "not a member of a CA-gated network (no ca in the "
			    "configuration)",
			    out_len);
		return finish(json_members(s), out_len);
	}
	if (req.has_peer) {
		bool found = false;

		for (size_t i = 0; i < s->n_peers && !found; i++)
			found = memcmp(s->peers[i].public_key, req.peer, YIP_KEY_LEN) == 0;
		if (!found)
			return yip_ctl_error_reply("no such peer", out_len);
	}
	return finish(json_show(s, &req), out_len);
}

/* ---- Paths ---- */

const char *yip_ctl_dir(const char *override)
{
	return override != NULL && *override != '\0' ? override : YIP_CTL_DEFAULT_DIR;
}

int yip_ctl_socket_path(char *out, size_t outlen, const char *dir, const char *device)
{
	size_t n = strlen(device);
	int w;

	if (n == 0 || n >= IFNAMSIZ || strchr(device, '/') != NULL || strcmp(device, ".") == 0 ||
	    strcmp(device, "..") == 0)
		return -1;
	w = snprintf(out, outlen, "%s/%s%s", dir, device, YIP_CTL_SUFFIX);
	if (w < 0 || (size_t)w >= outlen ||
	    (size_t)w >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -1;
	return 0;
}
