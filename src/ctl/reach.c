/*
 * The ping and netcheck requests (docs/control.md): their replies, built
 * from a snapshot and the engine's ping rounds, and read back for people.
 */
#include "ctl/reach.h"
#include "ctl/fields.h"

#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/hex.h"

/* ---- The daemon's side ---- */

int yip_ctl_resolve_peer(const struct yip_ctl_snapshot *s, const char *target, char *err,
                         size_t errlen)
{
	uint8_t key[YIP_KEY_LEN], a6[16], a4[4];
	size_t n = strlen(target);
	int family = 0;

	if (n == 2 * YIP_KEY_LEN && yip_hex_decode(key, YIP_KEY_LEN, target) == 0) {
		for (size_t i = 0; i < s->n_peers; i++)
			if (memcmp(s->peers[i].public_key, key, YIP_KEY_LEN) == 0)
				return (int)i;
		snprintf(err, errlen, "no such peer: %s is not a peer's public key", target);
		return -1;
	}
	if (inet_pton(AF_INET6, target, a6) == 1)
		family = AF_INET6;
	else if (inet_pton(AF_INET, target, a4) == 1)
		family = AF_INET;
	if (family == AF_INET6)
		for (size_t i = 0; i < s->n_peers; i++)
			if (memcmp(s->peers[i].address, a6, YIP_ADDR_LEN) == 0)
				return (int)i;
	if (family != 0) {
		for (size_t i = 0; i < s->n_peers; i++)
			for (size_t j = 0; j < s->peers[i].n_allowed_ips; j++)
				if (yip_cidr_contains(&s->peers[i].allowed_ips[j], family,
				                      family == AF_INET6 ? a6 : a4))
					return (int)i;
		snprintf(err, errlen, "no such peer: no peer has the address %s", target);
		return -1;
	}
	for (size_t i = 0; i < s->n_peers; i++)
		if (s->peers[i].has_cert && strcmp(s->peers[i].cert.name, target) == 0)
			return (int)i;
	snprintf(err, errlen,
	         "no such peer: '%s' is neither a peer's public key (64 hex digits), member name "
	         "nor address",
	         target);
	return -1;
}

static char *finish(cJSON *o, bool ok, size_t *out_len)
{
	if (o != NULL && !ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return yip_ctl_json_line(o, out_len);
}

static bool add_addr(cJSON *o, const char *name, const union yip_sockaddr *a, bool has)
{
	char buf[YIP_ADDRSTRLEN];

	if (!has)
		return cJSON_AddNullToObject(o, name) != NULL;
	yip_sockaddr_format(a, buf, sizeof(buf));
	return cJSON_AddStringToObject(o, name, buf) != NULL;
}

static bool add_ms(cJSON *o, const char *name, uint64_t ns, bool has)
{
	if (!has)
		return cJSON_AddNullToObject(o, name) != NULL;
	return cJSON_AddNumberToObject(o, name, round((double)ns / 1e3) / 1e3) != NULL;
}

static const char *ping_status(int status, bool polled)
{
	if (polled)
		return "polled";
	switch (status) {
	case YIP_PING_SENT:
		return "sent";
	case YIP_PING_NO_SESSION:
		return "no_session";
	case YIP_PING_TOO_SOON:
		return "too_soon";
	case YIP_PING_NO_PATH:
		return "no_path";
	default:
		return "no_peer";
	}
}

char *yip_ctl_ping_reply(const struct yip_ctl_snapshot *s, size_t k, int status, bool polled,
                         const struct yip_ping_info *pi, size_t *out_len)
{
	const struct yip_ctl_peer *p = &s->peers[k];
	cJSON *o = cJSON_CreateObject(), *arr, *c;
	char hex[2 * YIP_KEY_LEN + 1], a[INET6_ADDRSTRLEN];
	bool ok;

	if (o == NULL)
		return NULL;
	yip_hex_encode(hex, p->public_key, YIP_KEY_LEN);
	inet_ntop(AF_INET6, p->address, a, sizeof(a));
	ok = cJSON_AddStringToObject(o, "status", ping_status(status, polled)) != NULL &&
	     cJSON_AddStringToObject(o, "peer", hex) != NULL &&
	     (p->has_cert ? cJSON_AddStringToObject(o, "name", p->cert.name)
	                  : cJSON_AddNullToObject(o, "name")) != NULL &&
	     cJSON_AddStringToObject(o, "address", a) != NULL &&
	     cJSON_AddBoolToObject(o, "established", p->established) != NULL &&
	     cJSON_AddNumberToObject(o, "round", (double)pi->round) != NULL &&
	     add_ms(o, "age_ms", pi->age, pi->round != 0) &&
	     (arr = cJSON_AddArrayToObject(o, "probes")) != NULL;
	for (unsigned i = 0; ok && i < pi->n; i++) {
		const struct yip_ping_probe *pr = &pi->probes[i];

		ok = (c = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, c) &&
		     cJSON_AddStringToObject(c, "via", pr->relay ? "relay" : "direct") != NULL &&
		     add_addr(c, "address", &pr->addr, true) &&
		     (pr->relay ? cJSON_AddNumberToObject(c, "server", pr->server)
		                : cJSON_AddNullToObject(c, "server")) != NULL &&
		     cJSON_AddBoolToObject(c, "answered", pr->answered) != NULL &&
		     add_ms(c, "rtt_ms", pr->rtt, pr->answered);
	}
	ok = ok && (c = cJSON_AddObjectToObject(o, "counters")) != NULL &&
	     cJSON_AddNumberToObject(c, "probes_sent", (double)pi->sent) != NULL &&
	     cJSON_AddNumberToObject(c, "pongs", (double)pi->pongs) != NULL &&
	     cJSON_AddNumberToObject(c, "rounds_refused", (double)pi->refused) != NULL;
	return finish(o, ok, out_len);
}

static const char *nat_verdict(const char *nat)
{
	if (nat == NULL)
		return "unknown";
	if (strcmp(nat, "per destination") == 0)
		return "endpoint-dependent";
	if (strcmp(nat, "endpoint-independent") == 0 || strcmp(nat, "none") == 0)
		return nat;
	return "unknown";
}

char *yip_ctl_netcheck_reply(const struct yip_ctl_snapshot *s, bool probed, size_t *out_len)
{
	cJSON *o = cJSON_CreateObject(), *arr, *c;
	const char *nat = nat_verdict(s->nat);
	const struct yip_server_info *v4 = NULL, *v6 = NULL, *relay = NULL;
	unsigned answered = 0;
	bool ok, udp = false;

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < s->n_servers; i++) {
		const struct yip_server_info *v = &s->servers[i];
		bool reg = strcmp(v->state, "registered") == 0;

		answered += reg;
		if (reg && v->udp && v->has_reflexive) {
			udp = true;
			if (v->reflexive.sa.sa_family == AF_INET && v4 == NULL)
				v4 = v;
			if (v->reflexive.sa.sa_family == AF_INET6 && v6 == NULL)
				v6 = v;
		}
		if (reg && v->relay && (relay == NULL || (v->rtt != 0 && v->rtt < relay->rtt)))
			relay = v;
	}
	ok = cJSON_AddNumberToObject(o, "version", 1) != NULL &&
	     cJSON_AddStringToObject(o, "device", s->device) != NULL &&
	     cJSON_AddBoolToObject(o, "probed", probed) != NULL &&
	     cJSON_AddNumberToObject(o, "servers_configured", (double)s->n_servers) != NULL &&
	     cJSON_AddNumberToObject(o, "servers_answered", answered) != NULL &&
	     cJSON_AddBoolToObject(o, "udp", udp) != NULL &&
	     add_addr(o, "ipv4", v4 ? &v4->reflexive : NULL, v4 != NULL) &&
	     add_addr(o, "ipv6", v6 ? &v6->reflexive : NULL, v6 != NULL) &&
	     cJSON_AddStringToObject(o, "nat", nat) != NULL &&
	     (strcmp(nat, "unknown") == 0
	          ? cJSON_AddNullToObject(o, "mapping_varies_by_dest")
	          : cJSON_AddBoolToObject(o, "mapping_varies_by_dest",
	                                  strcmp(nat, "endpoint-dependent") == 0)) != NULL &&
	     cJSON_AddBoolToObject(o, "relay", relay != NULL) != NULL &&
	     add_addr(o, "preferred_relay", relay ? &relay->addr : NULL, relay != NULL) &&
	     (arr = cJSON_AddArrayToObject(o, "servers")) != NULL;
	for (size_t i = 0; ok && i < s->n_servers; i++) {
		const struct yip_server_info *v = &s->servers[i];
		const char *tr = s->server_links[i].kind;

		ok = (c = cJSON_CreateObject()) != NULL && cJSON_AddItemToArray(arr, c) &&
		     cJSON_AddNumberToObject(c, "index", (double)i) != NULL &&
		     add_addr(c, "address", &v->addr, true) &&
		     cJSON_AddStringToObject(c, "state", v->state) != NULL &&
		     cJSON_AddStringToObject(c, "transport",
		                             tr != NULL ? tr : (v->has_path ? "udp" : "none")) !=
		         NULL &&
		     add_ms(c, "rtt_ms", v->rtt, v->rtt != 0) &&
		     add_addr(c, "reflexive", &v->reflexive, v->has_reflexive) &&
		     (v->alt_port ? cJSON_AddNumberToObject(c, "alt_port", v->alt_port)
		                  : cJSON_AddNullToObject(c, "alt_port")) != NULL &&
		     add_addr(c, "reflexive_alt", &v->reflexive_alt, v->has_reflexive_alt) &&
		     add_ms(c, "alt_rtt_ms", v->alt_rtt, v->alt_rtt != 0) &&
		     cJSON_AddBoolToObject(c, "relay", v->relay) != NULL &&
		     cJSON_AddBoolToObject(c, "pending", v->pending) != NULL;
	}
	return finish(o, ok, out_len);
}

/* ---- yipctl's side ---- */

static void copy_clean(char *out, size_t outlen, const char *s)
{
	size_t i = 0;

	for (; s != NULL && s[i] != '\0' && i + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (outlen > 0)
		out[i] = '\0';
}

static cJSON *parse_object(const char *json, size_t len, char *err, size_t errlen)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const char *e;

	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		snprintf(err, errlen, "the daemon's reply is not a JSON object");
		return NULL;
	}
	e = str_field(root, "error");
	if (e != NULL) {
		copy_clean(err, errlen, *e != '\0' ? e : "(an empty error)");
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

int yip_ctl_ping_parse(const char *json, size_t len, struct yip_ctl_ping_reply *r, char *err,
                       size_t errlen)
{
	cJSON *root = parse_object(json, len, err, errlen);
	const cJSON *probes, *pr;
	const char *name;

	memset(r, 0, sizeof(*r));
	if (root == NULL)
		return -1;
	if (str_field(root, "status") == NULL || str_field(root, "peer") == NULL) {
		snprintf(err, errlen, "the daemon's reply is not a ping reply");
		cJSON_Delete(root);
		return -1;
	}
	copy_clean(r->status, sizeof(r->status), str_field(root, "status"));
	copy_clean(r->peer, sizeof(r->peer), str_field(root, "peer"));
	name = str_field(root, "name");
	if (name != NULL)
		copy_clean(r->name, sizeof(r->name), name);
	else
		snprintf(r->name, sizeof(r->name), "%.8s", r->peer);
	copy_clean(r->address, sizeof(r->address), str_field(root, "address"));
	r->round = u64_field(root, "round");
	probes = field(root, "probes");
	if (cJSON_IsArray(probes))
		cJSON_ArrayForEach(pr, probes)
		{
			struct yip_ctl_pong *g;
			const char *via = str_field(pr, "via");
			double v;

			if (r->n == YIP_MAX_PATHS || !cJSON_IsObject(pr))
				break;
			g = &r->pongs[r->n++];
			g->relay = via != NULL && strcmp(via, "relay") == 0;
			g->server = g->relay && num_field(pr, "server", &v) && v >= 0 && v < 1e6
			                ? (int)v
			                : -1;
			copy_clean(g->address, sizeof(g->address), str_field(pr, "address"));
			g->answered = cJSON_IsTrue(field(pr, "answered")) &&
			              num_field(pr, "rtt_ms", &v) && isfinite(v) && v >= 0;
			g->rtt_ms = g->answered ? v : 0;
		}
	cJSON_Delete(root);
	return 0;
}

void yip_ctl_pong_line(FILE *out, const struct yip_ctl_ping_reply *r, unsigned k)
{
	const struct yip_ctl_pong *g = &r->pongs[k];

	fprintf(out, "pong from %s (%s) via %s %s", r->name, r->address,
	        g->relay ? "relay" : "direct", g->address);
	if (g->relay)
		fprintf(out, " (rendezvous server %d)", g->server);
	fprintf(out, " in %.3f ms\n", g->rtt_ms);
}

void yip_ctl_ping_count(struct yip_ctl_ping_tally *t, const struct yip_ctl_ping_reply *r,
                        unsigned k)
{
	const struct yip_ctl_pong *g = &r->pongs[k];
	unsigned n = t->direct + t->relayed;

	if (!g->answered)
		return;
	if (n == 0 || g->rtt_ms < t->min_ms)
		t->min_ms = g->rtt_ms;
	if (n == 0 || g->rtt_ms > t->max_ms)
		t->max_ms = g->rtt_ms;
	t->sum_ms += g->rtt_ms;
	if (g->relay) {
		t->relayed++;
		return;
	}
	t->direct++;
	if (!t->has_direct) {
		t->has_direct = true;
		snprintf(t->direct_addr, sizeof(t->direct_addr), "%s", g->address);
	}
}

int yip_ctl_ping_summary(FILE *out, const struct yip_ctl_ping_tally *t, const char *name)
{
	unsigned got = t->direct + t->relayed;

	fprintf(out, "%u probes sent in %u rounds, %u pongs (%u direct, %u relayed)", t->probes,
	        t->rounds, got, t->direct, t->relayed);
	if (got > 0)
		fprintf(out, "; rtt min/avg/max %.3f/%.3f/%.3f ms", t->min_ms, t->sum_ms / got,
		        t->max_ms);
	fputc('\n', out);
	if (t->has_direct) {
		fprintf(out, "path to %s: direct %s\n", name, t->direct_addr);
		return 0;
	}
	if (got > 0) {
		fprintf(out, "direct connection to %s not established: only relayed pongs\n", name);
		return 3;
	}
	fprintf(out, "no reply from %s\n", name);
	return 1;
}

static void put_str(FILE *out, const cJSON *o, const char *name, const char *none)
{
	const char *v = str_field(o, name);

	put_clean(out, v != NULL ? v : none);
}

static void put_ms(FILE *out, const cJSON *o, const char *name)
{
	double v;

	if (num_field(o, name, &v) && isfinite(v) && v >= 0)
		fprintf(out, "%.3f ms", v);
	else
		fputs("rtt unknown", out);
}

int yip_ctl_netcheck_render(FILE *out, const char *json, size_t len, char *err, size_t errlen)
{
	cJSON *root = parse_object(json, len, err, errlen);
	const cJSON *servers, *v, *mv;
	const char *nat;

	if (root == NULL)
		return -1;
	fprintf(out, "Report (");
	put_str(out, root, "device", "?");
	fprintf(out, "):\n");
	fprintf(out, "  * UDP: %s (%" PRIu64 "/%" PRIu64 " rendezvous servers answered)\n",
	        cJSON_IsTrue(field(root, "udp")) ? "yes" : "no",
	        u64_field(root, "servers_answered"), u64_field(root, "servers_configured"));
	fprintf(out, "  * IPv4: ");
	if (str_field(root, "ipv4") != NULL) {
		fprintf(out, "yes, ");
		put_str(out, root, "ipv4", "");
	} else {
		fprintf(out, "(no address found)");
	}
	fprintf(out, "\n  * IPv6: ");
	if (str_field(root, "ipv6") != NULL) {
		fprintf(out, "yes, ");
		put_str(out, root, "ipv6", "");
	} else {
		fprintf(out, "(no address found)");
	}
	nat = str_field(root, "nat");
	mv = field(root, "mapping_varies_by_dest");
	fprintf(out, "\n  * NAT mapping: ");
	put_clean(out, nat != NULL ? nat : "unknown");
	if (cJSON_IsBool(mv))
		fprintf(out, " (MappingVariesByDestIP: %s)", cJSON_IsTrue(mv) ? "true" : "false");
	fprintf(out, "\n  * Relay: ");
	if (str_field(root, "preferred_relay") != NULL) {
		fprintf(out, "available, preferred ");
		put_str(out, root, "preferred_relay", "");
	} else {
		fprintf(out, "none available");
	}
	fprintf(out, "\n  * Rendezvous servers:\n");
	servers = field(root, "servers");
	if (cJSON_IsArray(servers))
		cJSON_ArrayForEach(v, servers)
		{
			fprintf(out, "      - ");
			put_str(out, v, "address", "?");
			fprintf(out, "  ");
			put_ms(out, v, "rtt_ms");
			fprintf(out, "  ");
			put_str(out, v, "state", "?");
			fprintf(out, ", over ");
			put_str(out, v, "transport", "?");
			if (str_field(v, "reflexive") != NULL) {
				fprintf(out, ", sees us as ");
				put_str(out, v, "reflexive", "");
			}
			if (str_field(v, "reflexive_alt") != NULL) {
				fprintf(out, " (port %" PRIu64 ": ", u64_field(v, "alt_port"));
				put_str(out, v, "reflexive_alt", "");
				fprintf(out, ")");
			}
			fprintf(out, "%s\n", cJSON_IsTrue(field(v, "relay")) ? ", relays" : "");
		}
	cJSON_Delete(root);
	return 0;
}

int yip_ctl_netcheck_status(const char *json, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	int rc = u64_field(root, "servers_answered") > 0 ? 0 : 1;

	cJSON_Delete(root);
	return rc;
}
