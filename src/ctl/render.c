/*
 * Control replies rendered for people (yipctl). The input is whatever came
 * over the socket, so every field is checked for presence and type, numbers
 * are converted without undefined behaviour, and strings are printed with
 * control characters replaced.
 */
#include "ctl/ctl.h"
#include "ctl/fields.h"

#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

void yip_ctl_format_duration(char *out, size_t outlen, uint64_t secs)
{
	static const struct {
		uint64_t secs;
		const char *name;
	} units[] = {
	    {365ULL * 24 * 3600, "year"},
	    {24 * 3600, "day"},
	    {3600, "hour"},
	    {60, "minute"},
	    {1, "second"},
	};
	size_t off = 0;

	if (outlen == 0)
		return;
	out[0] = '\0';
	if (secs == 0) {
		snprintf(out, outlen, "0 seconds");
		return;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t n = secs / units[i].secs;
		int w;

		if (n == 0)
			continue;
		secs %= units[i].secs;
		w = snprintf(out + off, outlen - off, "%s%" PRIu64 " %s%s", off ? ", " : "", n,
		             units[i].name, n == 1 ? "" : "s");
		if (w < 0 || (size_t)w >= outlen - off)
			return;
		off += (size_t)w;
	}
}

void yip_ctl_format_bytes(char *out, size_t outlen, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(out, outlen, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(out, outlen, "%.2f %s", v, units[u]);
}

/* ---- Reading fields defensively ---- */

/* The allowed IPs as "a, b" (sep ", ") or "(none)". */
static void put_allowed(FILE *out, const cJSON *peer, const char *sep)
{
	const cJSON *ips = field(peer, "allowed_ips"), *ip;
	bool any = false;

	if (cJSON_IsArray(ips)) {
		cJSON_ArrayForEach(ip, ips)
		{
			if (!cJSON_IsString(ip) || ip->valuestring == NULL)
				continue;
			if (any)
				fputs(sep, out);
			put_clean(out, ip->valuestring);
			any = true;
		}
	}
	if (!any)
		fputs("(none)", out);
}

static void put_handshake(FILE *out, const cJSON *peer, uint64_t now_s)
{
	uint64_t hs = u64_field(peer, "latest_handshake");
	char d[128];

	if (hs == 0) {
		fputs("never", out);
		return;
	}
	yip_ctl_format_duration(d, sizeof(d), hs < now_s ? now_s - hs : 0);
	fprintf(out, "%s ago", d);
}

static void put_rtt(FILE *out, const cJSON *peer)
{
	double rtt;

	if (num_field(peer, "rtt_ms", &rtt) && isfinite(rtt) && rtt >= 0)
		fprintf(out, "%.3f ms", rtt);
	else
		fputs("unknown", out);
}

/* ", over TLS (TLSv1.3, SNI www.example.com)": the link of a current path, if not UDP. */
static void put_link(FILE *out, const cJSON *l)
{
	const char *kind = str_field(l, "kind");

	if (kind == NULL || strcmp(kind, "udp") == 0)
		return;
	fputs(", over ", out);
	put_clean(out, kind);
	if (str_field(l, "tls_version") == NULL)
		return;
	fputs(" (", out);
	put_clean(out, str_field(l, "tls_version"));
	fputs(", SNI ", out);
	put_str_or(out, str_field(l, "sni"), "none");
	fputs(cJSON_IsTrue(field(l, "accepted")) ? ", accepted)" : ", dialed)", out);
}

/* The current path, since when, why it is relayed, and the candidates. */
static void put_paths(FILE *out, const cJSON *p)
{
	const cJSON *cands = field(p, "candidates"), *c;
	const char *path = str_field(p, "path"), *why = str_field(p, "relayed_why");
	char age[64];

	if (path == NULL && !cJSON_IsArray(cands))
		return; /* a daemon from before paths */
	fputs("\n  path: ", out);
	put_str_or(out, path, "(none yet)");
	if (path != NULL) {
		yip_ctl_format_duration(age, sizeof(age), u64_field(p, "path_age"));
		fprintf(out, " (for %s)", age);
		put_link(out, field(p, "link"));
	}
	if (why != NULL) {
		fputs("\n  relayed because: ", out);
		put_str_or(out, why, "?");
	}
	if (!cJSON_IsArray(cands) || cJSON_GetArraySize(cands) == 0)
		return;
	fputs("\n  candidates:", out);
	cJSON_ArrayForEach(c, cands)
	{
		double rtt;

		fputs("\n    ", out);
		put_str_or(out, str_field(c, "path"), "?");
		fputs(" (", out);
		put_str_or(out, str_field(c, "origin"), "?");
		fputs(cJSON_IsTrue(field(c, "validated")) ? ", works" : ", not answered", out);
		if (num_field(c, "rtt_ms", &rtt) && isfinite(rtt))
			fprintf(out, ", %.3f ms", rtt);
		fputc(')', out);
	}
}

/* Our NAT mapping and the rendezvous servers, if any. */
static void put_rendezvous(FILE *out, const cJSON *root)
{
	const cJSON *servers = field(root, "rendezvous"), *r;

	if (!cJSON_IsArray(servers) || cJSON_GetArraySize(servers) == 0)
		return;
	fputs("\n  nat: ", out);
	put_str_or(out, str_field(root, "nat"), "unknown");
	cJSON_ArrayForEach(r, servers)
	{
		fputs("\n  rendezvous: ", out);
		put_str_or(out, str_field(r, "server"), "?");
		fputs(" (", out);
		put_str_or(out, str_field(r, "state"), "?");
		if (str_field(r, "refused") != NULL) {
			fputs(": ", out);
			put_str_or(out, str_field(r, "refused"), "?");
		}
		if (str_field(r, "seen_as") != NULL) {
			fputs(", sees us as ", out);
			put_str_or(out, str_field(r, "seen_as"), "?");
		}
		fputs(cJSON_IsTrue(field(r, "relay")) ? ", relays" : "", out);
		put_link(out, field(r, "link"));
		if (str_field(r, "link_reason") != NULL) {
			fputs(": ", out);
			put_clean(out, str_field(r, "link_reason"));
		}
		if (str_field(r, "dial_error") != NULL) {
			fputs("; dial failed: ", out);
			put_clean(out, str_field(r, "dial_error"));
		}
		fputc(')', out);
	}
}

/* A CA-gated node's membership, under the interface. */
static void put_membership(FILE *out, const cJSON *root)
{
	const cJSON *m = field(root, "membership"), *c = field(m, "cert"), *r = field(m, "refused"),
	            *e;
	double days;

	if (!cJSON_IsObject(m))
		return;
	fputs("\n  network: ", out);
	put_str_or(out, str_field(m, "network"), "?");
	fputs(" (member \"", out);
	put_str_or(out, str_field(c, "name"), "?");
	if (num_field(c, "expires_in_days", &days) && isfinite(days))
		fprintf(out, "\", certificate expires in %.0f days)", days);
	else
		fputs("\")", out);
	if (str_field(m, "warning") != NULL) {
		fputs("\n  WARNING: ", out);
		put_clean(out, str_field(m, "warning"));
	}
	fprintf(out, "\n  roots serial: %" PRIu64 ", revocations serial: %" PRIu64,
	        u64_field(m, "roots_serial"), u64_field(m, "revocations_serial"));
	fprintf(out,
	        "\n  members admitted: %" PRIu64 ", removed: %" PRIu64
	        "; introductions of unknown keys held: %" PRIu64 ", used: %" PRIu64
	        ", asks refused: %" PRIu64,
	        u64_field(m, "admitted"), u64_field(m, "removed"), u64_field(m, "intros_held"),
	        u64_field(m, "intros_used"), u64_field(m, "asks_refused"));
	e = field(m, "gossip");
	if (cJSON_IsObject(e))
		fprintf(out,
		        "\n  gossip: %" PRIu64 " items, %" PRIu64 " neighbours (%" PRIu64
		        " active), %" PRIu64 " messages sent, %" PRIu64 " received, %" PRIu64
		        " dropped",
		        u64_field(e, "items"), u64_field(e, "neighbours"), u64_field(e, "active"),
		        u64_field(e, "tx_messages"), u64_field(e, "rx_messages"),
		        u64_field(e, "drops"));
	fputs("\n  refused:", out);
	if (cJSON_IsObject(r)) {
		bool any = false;

		cJSON_ArrayForEach(e, r)
		{
			if (e->string == NULL || !cJSON_IsNumber(e) || e->valuedouble <= 0)
				continue;
			fputs(any ? ", " : " ", out);
			put_clean(out, e->string);
			fprintf(out, " %" PRIu64, to_u64(e->valuedouble));
			any = true;
		}
		if (!any)
			fputs(" none", out);
	}
}

/* yipctl reload: "+1 ~1 -0" (peers added, changed, removed), then a line per change. */
static void reload_view(FILE *out, const cJSON *root)
{
	const cJSON *r = field(root, "reload"), *lines = field(r, "changes"), *l;
	uint64_t more = u64_field(r, "unlisted");

	fprintf(out, "+%" PRIu64 " ~%" PRIu64 " -%" PRIu64 "\n", u64_field(r, "added"),
	        u64_field(r, "changed"), u64_field(r, "removed"));
	if (cJSON_IsArray(lines))
		cJSON_ArrayForEach(l, lines)
		{
			if (!cJSON_IsString(l))
				continue;
			fputs("  ", out);
			put_clean(out, l->valuestring);
			fputc('\n', out);
		}
	if (more > 0)
		fprintf(out, "  (and %" PRIu64 " more)\n", more);
}

/* yipctl members: one block per member. */
static void members_view(FILE *out, const cJSON *root, uint64_t now_s)
{
	const cJSON *ms = field(root, "members"), *m, *a;

	(void)now_s;
	fputs("network: ", out);
	put_str_or(out, str_field(root, "network"), "(unknown)");
	fputc('\n', out);
	if (!cJSON_IsArray(ms))
		return;
	cJSON_ArrayForEach(m, ms)
	{
		const cJSON *con = field(m, "connected");
		double days;
		bool first = true;

		fputs("\nmember: ", out);
		put_str_or(out, str_field(m, "name"), "(certificate not seen yet)");
		if (cJSON_IsTrue(field(m, "self")))
			fputs(" (this node)", out);
		if (cJSON_IsTrue(field(m, "root")))
			fputs(" (root)", out);
		fputs("\n  key: ", out);
		put_str_or(out, str_field(m, "public_key"), "?");
		fputs("\n  addresses: ", out);
		put_str_or(out, str_field(m, "address"), "?");
		cJSON_ArrayForEach(a, field(m, "addresses"))
		{
			if (cJSON_IsString(a) && a->valuestring) {
				fputs(", ", out);
				put_clean(out, a->valuestring);
			}
		}
		fputs("\n  groups: ", out);
		cJSON_ArrayForEach(a, field(m, "groups"))
		{
			if (cJSON_IsString(a) && a->valuestring) {
				fputs(first ? "" : ", ", out);
				put_clean(out, a->valuestring);
				first = false;
			}
		}
		if (first)
			fputs("(none)", out);
		if (num_field(m, "expires_in_days", &days) && isfinite(days))
			fprintf(out, "\n  certificate: %s %.0f days",
			        days >= 0 ? "expires in" : "expired", fabs(days));
		if (cJSON_IsBool(con)) {
			fprintf(out, "\n  connected: %s", cJSON_IsTrue(con) ? "yes" : "no");
			if (cJSON_IsTrue(con)) {
				fputs(", ", out);
				put_str_or(out, str_field(m, "path"), "?");
			} else {
				fputs(" (", out);
				put_str_or(out, str_field(m, "why_not"), "?");
				fputc(')', out);
			}
		}
		fputc('\n', out);
	}
}

/* ---- Views ---- */

static void show_peer(FILE *out, const cJSON *p, uint64_t now_s)
{
	const cJSON *est = field(p, "established"), *fec = field(p, "fec");
	char rx[32], tx[32], rep[32], wire[32], mem[32];
	double loss;

	fputs("peer: ", out);
	put_str_or(out, str_field(p, "public_key"), "(unknown)");
	fputs("\n  endpoint: ", out);
	put_str_or(out, str_field(p, "endpoint"), "(none)");
	put_paths(out, p);
	fputs("\n  allowed ips: ", out);
	put_allowed(out, p, ", ");
	fputs("\n  address: ", out);
	put_str_or(out, str_field(p, "address"), "(unknown)");
	fprintf(out, "\n  established: %s",
	        cJSON_IsBool(est) ? (cJSON_IsTrue(est) ? "yes" : "no") : "unknown");
	if (str_field(p, "handshake_hint") != NULL)
		fprintf(out, "\n  handshake: no answer for %" PRIu64 " s (%s)",
		        u64_field(p, "handshake_unanswered_s"), str_field(p, "handshake_hint"));
	fputs("\n  latest handshake: ", out);
	put_handshake(out, p, now_s);
	fputs("\n  cipher: ", out);
	put_str_or(out, str_field(p, "cipher"), "(no session)");
	fputs("\n  rtt: ", out);
	put_rtt(out, p);
	yip_ctl_format_bytes(rx, sizeof(rx), u64_field(p, "rx_bytes"));
	yip_ctl_format_bytes(tx, sizeof(tx), u64_field(p, "tx_bytes"));
	fprintf(out, "\n  transfer: %s received, %s sent (%" PRIu64 " / %" PRIu64 " packets)", rx,
	        tx, u64_field(p, "rx_packets"), u64_field(p, "tx_packets"));
	if (!num_field(p, "loss_estimate", &loss) || !isfinite(loss))
		loss = 0;
	/* Two directions: the estimate is of our datagrams the peer missed (from
	 * its reports); the count is of the peer's datagrams we never got. */
	fprintf(out,
	        "\n  loss: sending %.2f%% (peer's reports), receiving %" PRIu64 " packets lost",
	        loss * 100, u64_field(p, "lost"));
	fprintf(out,
	        "\n  recovery: fec %" PRIu64 " recovered, %" PRIu64 " unrecovered; arq %" PRIu64
	        " recovered, %" PRIu64 " resent",
	        u64_field(p, "fec_recovered"), u64_field(p, "fec_unrecovered"),
	        u64_field(p, "arq_recovered"), u64_field(p, "arq_sent"));
	yip_ctl_format_bytes(rep, sizeof(rep), u64_field(p, "repair_bytes"));
	yip_ctl_format_bytes(wire, sizeof(wire), u64_field(p, "wire_bytes"));
	yip_ctl_format_bytes(mem, sizeof(mem), u64_field(p, "recovery_mem"));
	fprintf(out, "\n  redundancy: %s of %s sent on the wire; %s held for loss recovery", rep,
	        wire, mem);
	fputs("\n  fec k/r:", out);
	for (int c = 0; c < FLOW_CLASSES; c++) {
		const char *name = flow_class_name((enum flow_class)c);
		const cJSON *kr = field(fec, name);

		fprintf(out, "%s %s ", c ? "," : "", name);
		if (cJSON_IsObject(kr)) {
			fprintf(out, "%" PRIu64 "/%" PRIu64, u64_field(kr, "k"),
			        u64_field(kr, "r"));
			if (u64_field(kr, "lanes") > 1)
				fprintf(out, " in %" PRIu64 " lanes", u64_field(kr, "lanes"));
		} else
			fputs("?", out);
	}
	fputc('\n', out);
}

static void show(FILE *out, const cJSON *root, uint64_t now_s)
{
	const cJSON *fec = field(root, "fec"), *obf = field(root, "obf"),
	            *peers = field(root, "peers"), *p;
	double port;

	fputs("interface: ", out);
	put_str_or(out, str_field(root, "device"), "(unknown)");
	fputs("\n  public key: ", out);
	put_str_or(out, str_field(root, "public_key"), "(unknown)");
	fputs("\n  address: ", out);
	put_str_or(out, str_field(root, "address"), "(unknown)");
	if (num_field(root, "listen_port", &port))
		fprintf(out, "\n  listening port: %" PRIu64, to_u64(port));
	fprintf(out, "\n  fec: %s",
	        cJSON_IsBool(fec) ? (cJSON_IsTrue(fec) ? "on" : "off") : "unknown");
	if (cJSON_IsBool(obf))
		fprintf(out, "\n  obfuscation: %s", cJSON_IsTrue(obf) ? "on (obf_psk)" : "off");
	put_rendezvous(out, root);
	put_membership(out, root);
	fputc('\n', out);
	if (!cJSON_IsArray(peers))
		return;
	cJSON_ArrayForEach(p, peers)
	{
		if (!cJSON_IsObject(p))
			continue;
		fputc('\n', out);
		show_peer(out, p, now_s);
	}
}

static void peers_view(FILE *out, const cJSON *root, uint64_t now_s)
{
	const cJSON *peers = field(root, "peers"), *p;

	if (!cJSON_IsArray(peers))
		return;
	cJSON_ArrayForEach(p, peers)
	{
		if (!cJSON_IsObject(p))
			continue;
		put_str_or(out, str_field(p, "public_key"), "(unknown)");
		fputc('\t', out);
		put_str_or(out, str_field(p, "endpoint"), "(none)");
		fputc('\t', out);
		put_allowed(out, p, ",");
		fputc('\t', out);
		put_handshake(out, p, now_s);
		fputc('\t', out);
		put_rtt(out, p);
		fputc('\n', out);
	}
}

/* The loop's counters, if the daemon sent them: one "name: value" line each. */
static void datapath_view(FILE *out, const cJSON *dp)
{
	const cJSON *d;

	if (!cJSON_IsObject(dp))
		return;
	fputs("\n  datapath:\n", out);
	cJSON_ArrayForEach(d, dp)
	{
		size_t len = d->string ? strlen(d->string) : 0;

		fputs("    ", out);
		put_str_or(out, d->string, "?");
		fprintf(out, ":%*s", len < 20 ? (int)(20 - len) : 1, "");
		if (cJSON_IsString(d))
			put_str_or(out, d->valuestring, "?");
		else if (cJSON_IsBool(d))
			fputs(cJSON_IsTrue(d) ? "on" : "off", out);
		else if (cJSON_IsNumber(d))
			fprintf(out, "%" PRIu64, to_u64(d->valuedouble));
		else
			fputs("?", out);
		fputc('\n', out);
	}
}

static void stats_view(FILE *out, const cJSON *root)
{
	const cJSON *drops = field(root, "drops"), *d;
	uint64_t total = 0;

	fputs("interface: ", out);
	put_str_or(out, str_field(root, "device"), "(unknown)");
	fputs("\n  drops:\n", out);
	if (!cJSON_IsObject(drops))
		return;
	cJSON_ArrayForEach(d, drops)
	{
		uint64_t n = cJSON_IsNumber(d) ? to_u64(d->valuedouble) : 0;
		size_t len = d->string ? strlen(d->string) : 0;

		fputs("    ", out);
		put_str_or(out, d->string, "?");
		fprintf(out, ":%*s%" PRIu64 "\n", len < 20 ? (int)(20 - len) : 1, "", n);
		total = n > UINT64_MAX - total ? UINT64_MAX : total + n;
	}
	fprintf(out, "    total:%*s%" PRIu64 "\n", 15, "", total);
	datapath_view(out, field(root, "datapath"));
}

/* Newline and two spaces per level. */
static void newline(FILE *out, unsigned depth)
{
	fputc('\n', out);
	for (unsigned i = 0; i < depth; i++)
		fputs("  ", out);
}

/*
 * Re-indents a document that has already been validated, keeping every token
 * exactly as received (numbers are not round-tripped through a double).
 */
static void pretty(FILE *out, const char *s, size_t len)
{
	unsigned depth = 0;
	bool in_str = false, esc = false;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (in_str) {
			fputc(c >= 0x20 && c != 0x7f ? c : '?', out);
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			break;
		case '"':
			in_str = true;
			fputc(c, out);
			break;
		case '{':
		case '[': {
			size_t j = i + 1;

			while (j < len && strchr(" \t\r\n", s[j]) != NULL && s[j] != '\0')
				j++;
			fputc(c, out);
			if (j < len && (s[j] == '}' || s[j] == ']')) {
				fputc(s[j], out);
				i = j;
			} else {
				newline(out, ++depth);
			}
			break;
		}
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			newline(out, depth);
			fputc(c, out);
			break;
		case ',':
			fputc(c, out);
			newline(out, depth);
			break;
		case ':':
			fputs(": ", out);
			break;
		default:
			if (c >= 0x20 && c < 0x7f)
				fputc(c, out);
		}
	}
	fputc('\n', out);
}

int yip_ctl_render(FILE *out, enum yip_ctl_view v, const char *json, size_t len, uint64_t now_s,
                   char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	const cJSON *e;
	size_t used;

	if (!cJSON_IsObject(root) || end == NULL || end < json || end > json + len) {
		snprintf(err, errlen, "the reply is not a JSON object");
		cJSON_Delete(root);
		return -1;
	}
	used = (size_t)(end - json);
	for (size_t i = used; i < len; i++) {
		if (strchr(" \t\r\n", json[i]) == NULL || json[i] == '\0') {
			snprintf(err, errlen, "the reply has data after its JSON document");
			cJSON_Delete(root);
			return -1;
		}
	}
	e = field(root, "error");
	if (e != NULL) {
		size_t n = 0;

		if (cJSON_IsString(e) && e->valuestring) {
			for (const char *s = e->valuestring; *s && n + 1 < errlen; s++, n++) {
				unsigned char c = (unsigned char)*s;

				err[n] = c >= 0x20 && c < 0x7f ? (char)c : '?';
			}
			if (errlen > 0)
				err[n] = '\0';
		}
		if (n == 0) /* not a string, or an empty one */
			snprintf(err, errlen, "the daemon reported an error");
		cJSON_Delete(root);
		return -1;
	}
	switch (v) {
	case YIP_CTL_VIEW_SHOW:
		show(out, root, now_s);
		break;
	case YIP_CTL_VIEW_PEERS:
		peers_view(out, root, now_s);
		break;
	case YIP_CTL_VIEW_STATS:
		stats_view(out, root);
		break;
	case YIP_CTL_VIEW_JSON:
		pretty(out, json, used);
		break;
	case YIP_CTL_VIEW_MEMBERS:
		members_view(out, root, now_s);
		break;
	case YIP_CTL_VIEW_RELOAD:
		reload_view(out, root);
		break;
	case YIP_CTL_VIEW_LOG:
		e = field(root, "log_level");
		fputs("log level: ", out);
		put_clean(out, cJSON_IsString(e) && e->valuestring ? e->valuestring : "?");
		fputc('\n', out);
		break;
	}
	cJSON_Delete(root);
	return 0;
}
