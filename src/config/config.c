/*
 * yipd configuration parser.
 *
 * The format is line based: key=value pairs, '#' comments, blank lines and
 * repeated [peer] blocks. Every message names "file:line:" so that a mistake
 * can be found without guessing. The parser works on a copy of one line at a
 * time and wipes that copy afterwards, because one of the lines holds the
 * private key.
 */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sodium.h>

#include "config/lines.h"
#include "reality/reality.h"
#include "util/file.h"
#include "util/hex.h"

#define MAX_FILE_SIZE (16 * 1024 * 1024) /* far above YIP_MAX_PEERS worth of text */
#define MAX_MSG       512

enum key_scope { SCOPE_INTERFACE, SCOPE_PEER };

enum key_id {
	KEY_LOCAL_PRIVATE,
	KEY_LOCAL_PUBLIC,
	KEY_LISTEN,
	KEY_LISTEN_TLS,
	KEY_LISTEN_QUIC,
	KEY_QUIC_CC,
	KEY_TLS_CERT,
	KEY_TLS_KEY,
	KEY_TLS_SNI,
	KEY_DEVICE,
	KEY_DEVICE_KIND,
	KEY_ADDRESS,
	KEY_MTU,
	KEY_FEC,
	KEY_OFFLOAD,
	KEY_CIPHER,
	KEY_IO,
	KEY_WORKERS,
	KEY_RENDEZVOUS,
	KEY_RENDEZVOUS_KEY,
	KEY_NAT_KEEPALIVE,
	KEY_RELAY,
	KEY_OBF_PSK,
	KEY_OBF_JUNK,
	KEY_OBF_COVER_MS,
	KEY_USER,
	KEY_SANDBOX,
	KEY_CA,
	KEY_CERT,
	KEY_ROOTS,
	KEY_REVOCATIONS,
	KEY_STATE_DIR,
	KEY_LOG_FORMAT,
	KEY_LOG_LEVEL,
	KEY_PUBLIC_KEY,
	KEY_ENDPOINT,
	KEY_ALLOWED_IPS,
	KEY_PERSISTENT_KEEPALIVE,
	KEY_PEER_TLS_SNI,
	KEY_METRICS_LISTEN,
	KEY_METRICS_REMOTE,
	KEY_METRICS_PEERS,
	KEY_COUNT
};

struct parser {
	struct yip_config *cfg;
	const char *name;
	bool resolve;
	unsigned int line;
	bool in_peer;
	unsigned int seen[KEY_COUNT]; /* line a key was first set on, 0 if not yet */
	size_t cap_addresses, cap_peers, cap_allowed; /* cap_allowed: current peer */
	uint8_t local_public[YIP_KEY_LEN];            /* as written, checked at the end */
	char *err;
	size_t errlen;
};

struct key_def {
	const char *name;
	enum key_scope scope;
	bool repeatable;
	int (*parse)(struct parser *p, char *value); /* may cut up value */
};

/*
 * Writes "name:line: message" to the error buffer. Control characters that a
 * broken file may have put into the message are replaced, so that printing
 * the message cannot mess up a terminal or a log.
 */
static void __attribute__((format(printf, 3, 0)))
vreport(struct parser *p, unsigned int line, const char *fmt, va_list ap)
{
	char msg[MAX_MSG];
	size_t i;

	if (p->err == NULL || p->errlen == 0)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (line > 0)
		snprintf(p->err, p->errlen, "%s:%u: %s", p->name, line, msg);
	else
		snprintf(p->err, p->errlen, "%s: %s", p->name, msg);
	for (i = 0; p->err[i] != '\0'; i++) {
		unsigned char c = (unsigned char)p->err[i];

		if (c < 0x20 || c == 0x7f)
			p->err[i] = '?';
	}
}

/* Reports an error on the current line; always returns -1. */
static int __attribute__((format(printf, 2, 3))) fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(p, p->line, fmt, ap);
	va_end(ap);
	return -1;
}

/* Reports an error on a given line (0: the whole file); always returns -1. */
static int __attribute__((format(printf, 3, 4)))
fail_at(struct parser *p, unsigned int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(p, line, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Makes room for one more element in array, which holds n of capacity *cap.
 * Returns the (possibly moved) array, or NULL if out of memory, in which case
 * the old array is still valid. Doubling keeps appends cheap; the limits in
 * config.h keep the sizes small.
 */
static void *grow(void *array, size_t n, size_t *cap, size_t elem_size)
{
	size_t new_cap;
	void *bigger;

	if (n < *cap)
		return array;
	new_cap = *cap == 0 ? 4 : *cap * 2;
	bigger = realloc(array, new_cap * elem_size);
	if (bigger != NULL)
		*cap = new_cap;
	return bigger;
}

/* Decimal digits only, no sign; at most 9 digits so the value fits. */
static int parse_number(const char *s, unsigned long *out)
{
	size_t len = strlen(s);

	if (len == 0 || len > 9 || strspn(s, "0123456789") != len)
		return -1;
	*out = strtoul(s, NULL, 10);
	return 0;
}

/* Decodes a 64-digit hex key, explaining what is wrong with a bad one. */
static int parse_key(struct parser *p, const char *what, const char *value,
                     uint8_t key[YIP_KEY_LEN])
{
	char reason[MAX_MSG];

	if (lines_hex_key(what, value, key, reason, sizeof(reason)) != 0)
		return fail(p, "%s", reason);
	return 0;
}

static int parse_local_private(struct parser *p, char *value)
{
	struct yip_config *cfg = p->cfg;

	if (parse_key(p, "local_private", value, cfg->private_key) < 0)
		return -1;
	if (yip_key_public(cfg->public_key, cfg->private_key) < 0)
		return fail(p, "local_private is not a usable X25519 private key");
	return 0;
}

static int parse_local_public(struct parser *p, char *value)
{
	return parse_key(p, "local_public", value, p->local_public);
}

static int parse_listen(struct parser *p, char *value)
{
	char reason[MAX_MSG];

	if (yip_endpoint_parse(value, YIP_DEFAULT_PORT, false, &p->cfg->listen,
	                       &p->cfg->listen_port_given, reason, sizeof(reason)) < 0)
		return fail(p, "listen: %s", reason);
	return 0;
}

/* A TCP address to accept TLS links on: as listen=, but the port is required. */
static int parse_listen_tls(struct parser *p, char *value)
{
	char reason[MAX_MSG];

	if (yip_endpoint_parse(value, 0, false, &p->cfg->listen_tls, NULL, reason, sizeof(reason)) <
	    0)
		return fail(p, "listen_tls: %s", reason);
	p->cfg->has_listen_tls = true;
	return 0;
}

/* A UDP address to accept QUIC links on: as listen_tls, a port required. */
static int parse_listen_quic(struct parser *p, char *value)
{
	char reason[MAX_MSG];

	if (yip_endpoint_parse(value, 0, false, &p->cfg->listen_quic, NULL, reason,
	                       sizeof(reason)) < 0)
		return fail(p, "listen_quic: %s", reason);
	p->cfg->has_listen_quic = true;
	return 0;
}

/* The congestion control inside QUIC links (ngtcp2 has no "none"). */
static int parse_quic_cc(struct parser *p, char *value)
{
	if (strcmp(value, "bbr") == 0)
		p->cfg->quic_cc = YIP_QUIC_CC_BBR;
	else if (strcmp(value, "bbr2") == 0)
		p->cfg->quic_cc = YIP_QUIC_CC_BBR2;
	else if (strcmp(value, "cubic") == 0)
		p->cfg->quic_cc = YIP_QUIC_CC_CUBIC;
	else
		return fail(p, "quic_cc '%s': expected bbr, bbr2 or cubic", value);
	return 0;
}

static int parse_device(struct parser *p, char *value)
{
	size_t len = strlen(value);

	if (len >= IFNAMSIZ)
		return fail(p, "device name '%s' is too long (at most %d characters)", value,
		            IFNAMSIZ - 1);
	if (strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	    len)
		return fail(p,
		            "device name '%s' may only contain letters, digits, '_', '.' and '-'",
		            value);
	if (strcmp(value, ".") == 0 || strcmp(value, "..") == 0)
		return fail(p, "device name '%s' is not allowed", value);
	memcpy(p->cfg->device, value, len + 1);
	return 0;
}

static int parse_device_kind(struct parser *p, char *value)
{
	if (strcmp(value, "tun") == 0) {
		p->cfg->device_kind = YIP_DEVICE_TUN;
		return 0;
	}
	if (strcmp(value, "tap") == 0) {
		p->cfg->device_kind = YIP_DEVICE_TAP;
		return 0;
	}
	return fail(p, "device_kind '%s' is not valid (valid values: tun, tap)", value);
}

/*
 * An interface address keeps its host bits: "10.9.0.1/24" means the address
 * 10.9.0.1 on a /24, unlike allowed_ips where host bits are a mistake. So the
 * address and the length are parsed separately here.
 */
static int parse_interface_address(const char *value, struct yip_cidr *out, char *reason,
                                   size_t reasonlen)
{
	char ip[INET6_ADDRSTRLEN];
	const char *slash = strchr(value, '/');
	size_t iplen = slash != NULL ? (size_t)(slash - value) : strlen(value);
	unsigned long plen;

	if (iplen >= sizeof(ip)) {
		snprintf(reason, reasonlen, "'%s' is not an IPv4 or IPv6 address", value);
		return -1;
	}
	memcpy(ip, value, iplen);
	ip[iplen] = '\0';
	if (yip_cidr_parse(ip, true, out, reason, reasonlen) < 0)
		return -1;
	if (slash == NULL)
		return 0;
	if (slash[1] == '\0') {
		snprintf(reason, reasonlen, "missing prefix length after '/'");
		return -1;
	}
	if (strlen(slash + 1) > 3 || parse_number(slash + 1, &plen) < 0) {
		snprintf(reason, reasonlen, "bad prefix length '%s'", slash + 1);
		return -1;
	}
	if (plen > out->plen) {
		snprintf(reason, reasonlen, "prefix length %lu > %u", plen,
		         (unsigned int)out->plen);
		return -1;
	}
	out->plen = (uint8_t)plen;
	return 0;
}

static int parse_address(struct parser *p, char *value)
{
	struct yip_config *cfg = p->cfg;
	char reason[MAX_MSG];
	struct yip_cidr c;
	void *array;
	size_t i;

	if (parse_interface_address(value, &c, reason, sizeof(reason)) < 0)
		return fail(p, "address: %s", reason);
	for (i = 0; i < cfg->n_addresses; i++) {
		if (cfg->addresses[i].family == c.family &&
		    memcmp(cfg->addresses[i].addr, c.addr, sizeof(c.addr)) == 0)
			return fail(p, "address '%s' is listed twice", value);
	}
	if (cfg->n_addresses >= YIP_MAX_ADDRESSES)
		return fail(p, "too many address entries (at most %d)", YIP_MAX_ADDRESSES);
	array = grow(cfg->addresses, cfg->n_addresses, &p->cap_addresses, sizeof(c));
	if (array == NULL)
		return fail(p, "out of memory");
	cfg->addresses = array;
	cfg->addresses[cfg->n_addresses++] = c;
	return 0;
}

static int parse_mtu(struct parser *p, char *value)
{
	unsigned long mtu;

	if (strcmp(value, "auto") == 0) {
		p->cfg->mtu = 0;
		return 0;
	}
	if (parse_number(value, &mtu) < 0)
		return fail(p, "mtu '%s': expected a number or 'auto'", value);
	if (mtu < YIP_MIN_MTU || mtu > YIP_MAX_MTU)
		return fail(p, "mtu %lu is out of range (%d..%d)", mtu, YIP_MIN_MTU, YIP_MAX_MTU);
	p->cfg->mtu = (unsigned int)mtu;
	return 0;
}

/* An on/off switch; *off is set for "off". */
static int parse_switch(struct parser *p, const char *key, const char *value, bool *off)
{
	if (strcmp(value, "on") == 0)
		*off = false;
	else if (strcmp(value, "off") == 0)
		*off = true;
	else
		return fail(p, "%s '%s': expected 'on' or 'off'", key, value);
	return 0;
}

static int parse_fec(struct parser *p, char *value)
{
	return parse_switch(p, "fec", value, &p->cfg->fec_off);
}

/* metrics_listen: the TCP address of the Prometheus endpoint, a port required. */
static int parse_metrics_listen(struct parser *p, char *value)
{
	char reason[MAX_MSG];

	if (yip_endpoint_parse(value, 0, false, &p->cfg->metrics_listen, NULL, reason,
	                       sizeof(reason)) < 0)
		return fail(p, "metrics_listen: %s", reason);
	p->cfg->has_metrics_listen = true;
	return 0;
}

static int parse_metrics_remote(struct parser *p, char *value)
{
	bool off = true;

	if (parse_switch(p, "metrics_remote", value, &off) < 0)
		return -1;
	p->cfg->metrics_remote = !off;
	return 0;
}

static int parse_metrics_peers(struct parser *p, char *value)
{
	bool off = true;

	if (parse_switch(p, "metrics_peers", value, &off) < 0)
		return -1;
	p->cfg->metrics_peers = !off;
	return 0;
}

static int parse_cipher(struct parser *p, char *value)
{
	if (strcmp(value, "auto") == 0)
		p->cfg->ciphers = 0;
	else if (strcmp(value, yip_cipher_name(YIP_CIPHER_CHACHA20_POLY1305)) == 0)
		p->cfg->ciphers = YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305);
	else if (strcmp(value, yip_cipher_name(YIP_CIPHER_AES256_GCM)) == 0)
		p->cfg->ciphers = YIP_CIPHER_BIT(YIP_CIPHER_AES256_GCM);
	else
		return fail(p, "cipher '%s': expected 'auto', 'chacha20-poly1305' or 'aes-256-gcm'",
		            value);
	return 0;
}

static int parse_offload(struct parser *p, char *value)
{
	return parse_switch(p, "offload", value, &p->cfg->offload_off);
}

static int parse_io(struct parser *p, char *value)
{
	if (strcmp(value, "epoll") == 0)
		p->cfg->io = YIP_IO_EPOLL;
	else if (strcmp(value, "uring") == 0)
		p->cfg->io = YIP_IO_URING;
	else if (strcmp(value, "uring-busy") == 0)
		p->cfg->io = YIP_IO_URING_BUSY;
	else
		return fail(p, "io '%s': expected 'epoll', 'uring' or 'uring-busy'", value);
	return 0;
}

static int parse_workers(struct parser *p, char *value)
{
	unsigned long n;

	if (strcmp(value, "auto") == 0) {
		p->cfg->workers = 0;
		return 0;
	}
	if (parse_number(value, &n) < 0 || n < 1 || n > YIP_MAX_WORKERS)
		return fail(p, "workers '%s': expected 1 to %d, or 'auto'", value, YIP_MAX_WORKERS);
	p->cfg->workers = (unsigned)n;
	return 0;
}

static const char *transport_name(uint8_t transport)
{
	return transport == YIP_TRANSPORT_TLS    ? "tls"
	       : transport == YIP_TRANSPORT_QUIC ? "quic"
	                                         : "udp";
}

/* Whether HOST:PORT text has its port, read as yip_endpoint_parse reads it. */
static bool has_port(const char *s)
{
	const char *colon;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		return close == NULL || close[1] != '\0'; /* anything else the parser reports */
	}
	colon = strchr(s, ':');
	return colon != NULL && strchr(colon + 1, ':') == NULL;
}

/*
 * The scheme of an endpoint= or rendezvous= value: "tls://HOST:PORT",
 * "quic://HOST:PORT", "udp://HOST:PORT" (the same as a bare HOST:PORT), or none. Sets
 * *transport and *rest, the HOST:PORT after the scheme. A URL has no
 * default port.
 */
static int parse_scheme(struct parser *p, const char *what, const char *value, uint8_t *transport,
                        const char **rest, bool *reality)
{
	const char *sep = strstr(value, "://");
	size_t len;

	*transport = YIP_TRANSPORT_UDP;
	*rest = value;
	*reality = false;
	if (sep == NULL)
		return 0;
	len = (size_t)(sep - value);
	if (len == 3 && strncasecmp(value, "tls", 3) == 0) {
		*transport = YIP_TRANSPORT_TLS;
	} else if (len == 7 && strncasecmp(value, "reality", 7) == 0) {
		*transport = YIP_TRANSPORT_TLS;
		*reality = true;
	} else if (len == 4 && strncasecmp(value, "quic", 4) == 0)
		*transport = YIP_TRANSPORT_QUIC;
	else if (len != 3 || strncasecmp(value, "udp", 3) != 0)
		return fail(p,
		            "%s: unknown scheme '%.*s://' in '%s' (known: udp://HOST:PORT, "
		            "tls://HOST:PORT, quic://HOST:PORT, %sor a bare HOST:PORT for udp)",
		            what, (int)(len < 32 ? len : 32), value, value,
		            strcmp(what, "rendezvous") == 0 ? "reality://HOST:PORT?..., " : "");
	*rest = sep + 3;
	if ((*rest)[0] != '\0' && !*reality && !has_port(*rest))
		return fail(p, "%s: '%s' has no port (a URL needs one: %s://HOST:PORT)", what,
		            value, transport_name(*transport));
	return 0;
}

/*
 * The query of a reality:// URL, cut off rest (which then ends at its
 * HOST:PORT): pbk (the front's public key, 64 hex digits), sid (its short
 * id, 0 to 16 hex digits) and sni (the real site's name), each once.
 */
static int parse_reality(struct parser *p, char *rest, struct yip_rendezvous_config *r)
{
	char *q = strchr(rest, '?');
	bool pbk = false, sid = false;

	if (q == NULL)
		return fail(p,
		            "rendezvous: reality://HOST:PORT needs ?pbk=KEY&sid=HEX&sni=NAME "
		            "(the front's yip-rendezvous --reality-genkey public key, one of its "
		            "short ids and server names)");
	*q++ = '\0';
	if (!has_port(rest))
		return fail(
		    p, "rendezvous: '%s' has no port (a URL needs one: reality://HOST:PORT)", rest);
	while (*q != '\0') {
		char *amp = strchr(q, '&'), *eq;

		if (amp != NULL)
			*amp = '\0';
		eq = strchr(q, '=');
		if (eq == NULL)
			return fail(
			    p, "rendezvous: '%.32s' in the reality:// query is no NAME=VALUE", q);
		*eq++ = '\0';
		if (strcmp(q, "pbk") == 0 && !pbk) {
			if (strlen(eq) != 2 * YIP_KEY_LEN ||
			    yip_hex_decode(r->reality_pub, YIP_KEY_LEN, eq) != 0)
				return fail(p,
				            "rendezvous: pbk= is the front's public key, %d hex "
				            "digits (yip-rendezvous --reality-genkey)",
				            2 * YIP_KEY_LEN);
			pbk = true;
		} else if (strcmp(q, "sid") == 0 && !sid) {
			if (!reality_short_id_parse(r->reality_sid, eq))
				return fail(
				    p, "rendezvous: sid= is a short id of the front, 0 to 16 hex "
				       "digits (an even number)");
			sid = true;
		} else if (strcmp(q, "sni") == 0 && r->reality_sni[0] == '\0') {
			if (eq[0] == '\0' || strlen(eq) >= sizeof(r->reality_sni) ||
			    strspn(eq, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"
			               "789.-") != strlen(eq))
				return fail(
				    p, "rendezvous: sni= is the real site's DNS name, got '%.64s'",
				    eq);
			snprintf(r->reality_sni, sizeof(r->reality_sni), "%s", eq);
		} else {
			return fail(p,
			            "rendezvous: '%s' in the reality:// query is unknown or given "
			            "twice (the query takes pbk, sid and sni)",
			            q);
		}
		q = amp != NULL ? amp + 1 : q + strlen(q);
	}
	if (!pbk || !sid || r->reality_sni[0] == '\0')
		return fail(p, "rendezvous: reality:// needs pbk=, sid= and sni= (missing %s)",
		            !pbk   ? "pbk"
		            : !sid ? "sid"
		                   : "sni");
	r->reality = true;
	return 0;
}

/*
 * The family a tls://, quic:// or UDP address is resolved to. A UDP one
 * must be reachable from the socket bound to listen; a TLS link dials on a
 * TCP socket of its own, a QUIC link on a UDP socket of its own, of any
 * family.
 */
static int dial_family(const struct parser *p, uint8_t transport)
{
	return transport != YIP_TRANSPORT_UDP ? AF_UNSPEC : yip_listen_family(&p->cfg->listen);
}

static int parse_rendezvous(struct parser *p, char *value)
{
	struct yip_config *cfg = p->cfg;
	struct yip_rendezvous_config *r;
	char reason[MAX_MSG];
	const char *rest;
	uint8_t transport;
	bool reality;

	if (cfg->n_rendezvous > 0 && !cfg->rendezvous[cfg->n_rendezvous - 1].has_key)
		return fail(p,
		            "the rendezvous on line %u has no rendezvous_key yet (give each "
		            "rendezvous= its rendezvous_key= on the next line)",
		            cfg->rendezvous[cfg->n_rendezvous - 1].line);
	if (cfg->n_rendezvous >= YIP_MAX_RENDEZVOUS_LINES)
		return fail(
		    p,
		    "too many rendezvous lines (at most %d: %d servers, each over udp, quic "
		    "and tls)",
		    YIP_MAX_RENDEZVOUS_LINES, YIP_MAX_RENDEZVOUS);
	if (parse_scheme(p, "rendezvous", value, &transport, &rest, &reality) < 0)
		return -1;
	r = &cfg->rendezvous[cfg->n_rendezvous];
	memset(r, 0, sizeof(*r));
	if (reality && parse_reality(p, value + (rest - value), r) < 0)
		return -1;
	if (yip_endpoint_parse_family(rest, 0, p->resolve, dial_family(p, transport), &r->addr,
	                              NULL, reason, sizeof(reason)) < 0)
		return fail(p, "rendezvous: %s", reason);
	r->transport = transport;
	r->line = p->line;
	cfg->n_rendezvous++;
	if (yip_endpoint_is_name(rest) && (r->name = strdup(rest)) == NULL)
		return fail(p, "out of memory");
	return 0;
}

/*
 * The server r (the last rendezvous= line) names by its key: at most once
 * over each transport, and at most YIP_MAX_RENDEZVOUS servers in all. Keys
 * are public, so memcmp is fine.
 */
static int check_rendezvous_key(struct parser *p, const struct yip_rendezvous_config *r)
{
	const struct yip_config *cfg = p->cfg;
	size_t servers = 0;
	bool known = false;

	for (size_t i = 0; i + 1 < cfg->n_rendezvous; i++) {
		const struct yip_rendezvous_config *o = &cfg->rendezvous[i];
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first =
			    memcmp(cfg->rendezvous[j].public_key, o->public_key, YIP_KEY_LEN) != 0;
		servers += first;
		if (memcmp(o->public_key, r->public_key, YIP_KEY_LEN) != 0)
			continue;
		if (o->transport == r->transport)
			return fail(
			    p,
			    "rendezvous_key: the rendezvous on line %u is the same server over "
			    "%s too (name a server at most once over each of udp, quic and tls)",
			    o->line, transport_name(r->transport));
		known = true;
	}
	if (!known && servers >= YIP_MAX_RENDEZVOUS)
		return fail(p,
		            "too many rendezvous servers (at most %d distinct rendezvous_key; a "
		            "server over udp, quic and tls counts once)",
		            YIP_MAX_RENDEZVOUS);
	return 0;
}

static int parse_rendezvous_key(struct parser *p, char *value)
{
	struct yip_config *cfg = p->cfg;
	struct yip_rendezvous_config *r;

	if (cfg->n_rendezvous == 0 || cfg->rendezvous[cfg->n_rendezvous - 1].has_key)
		return fail(p, "rendezvous_key must follow the rendezvous= it belongs to");
	r = &cfg->rendezvous[cfg->n_rendezvous - 1];
	if (parse_key(p, "rendezvous_key", value, r->public_key) < 0 ||
	    check_rendezvous_key(p, r) < 0)
		return -1;
	r->has_key = true;
	return 0;
}

static int parse_nat_keepalive(struct parser *p, char *value)
{
	unsigned long secs;

	if (strcmp(value, "off") == 0) {
		p->cfg->nat_keepalive = 0;
		return 0;
	}
	if (parse_number(value, &secs) < 0 || secs < 1 || secs > 3600)
		return fail(p, "nat_keepalive '%s': expected seconds from 1 to 3600, or 'off'",
		            value);
	p->cfg->nat_keepalive = (unsigned)secs;
	return 0;
}

static int parse_relay(struct parser *p, char *value)
{
	return parse_switch(p, "relay", value, &p->cfg->relay_off);
}

static int parse_obf_psk(struct parser *p, char *value)
{
	/* 64 hex digits, not all zeros (lines_hex_key refuses those). */
	if (parse_key(p, "obf_psk", value, p->cfg->obf_psk) < 0)
		return -1;
	p->cfg->obf = true;
	return 0;
}

static int parse_obf_junk(struct parser *p, char *value)
{
	unsigned long n;

	if (parse_number(value, &n) < 0 || n > YIP_MAX_OBF_JUNK)
		return fail(p, "obf_junk '%s': expected 0 to %d", value, YIP_MAX_OBF_JUNK);
	p->cfg->obf_junk = (unsigned)n;
	return 0;
}

static int parse_obf_cover_ms(struct parser *p, char *value)
{
	unsigned long ms;

	if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0) {
		p->cfg->obf_cover_ms = 0;
		return 0;
	}
	if (parse_number(value, &ms) < 0 || ms < 10 || ms > 600000)
		return fail(p,
		            "obf_cover_ms '%s': expected milliseconds from 10 to 600000, or 'off'",
		            value);
	p->cfg->obf_cover_ms = (unsigned)ms;
	return 0;
}

int yip_config_user_check(const char *name, char *reason, size_t reasonlen)
{
	size_t len = strlen(name);

	if (len == 0 || len > YIP_USER_MAX) {
		snprintf(reason, reasonlen, "a user name has 1 to %d characters", YIP_USER_MAX);
		return -1;
	}
	if (name[0] == '-' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	        len) {
		snprintf(reason, reasonlen,
		         "'%s' is not a user name (letters, digits, '_', '.' and '-', not "
		         "starting with '-')",
		         name);
		return -1;
	}
	return 0;
}

int yip_config_sandbox_mode(const char *s, enum yip_sandbox_mode *out)
{
	if (strcmp(s, "on") == 0)
		*out = YIP_SANDBOX_ON;
	else if (strcmp(s, "log") == 0)
		*out = YIP_SANDBOX_LOG;
	else if (strcmp(s, "off") == 0)
		*out = YIP_SANDBOX_OFF;
	else
		return -1;
	return 0;
}

static int parse_user(struct parser *p, char *value)
{
	char reason[MAX_MSG];

	if (yip_config_user_check(value, reason, sizeof(reason)) != 0)
		return fail(p, "user: %s", reason);
	snprintf(p->cfg->user, sizeof(p->cfg->user), "%s", value);
	return 0;
}

static int parse_sandbox(struct parser *p, char *value)
{
	if (yip_config_sandbox_mode(value, &p->cfg->sandbox) != 0)
		return fail(p, "sandbox '%s': expected 'on', 'log' or 'off'", value);
	return 0;
}

static int parse_log_format(struct parser *p, char *value)
{
	if (yip_log_format_parse(value, &p->cfg->log_format) != 0)
		return fail(p, "log_format '%s': expected 'text' or 'json'", value);
	return 0;
}

static int parse_log_level(struct parser *p, char *value)
{
	if (yip_log_level_parse(value, &p->cfg->log_level) != 0)
		return fail(p, "log_level '%s': expected 'error', 'warn', 'info' or 'debug'",
		            value);
	p->cfg->log_level_set = true;
	return 0;
}

static struct yip_peer_config *current_peer(struct parser *p)
{
	return &p->cfg->peers[p->cfg->n_peers - 1];
}

static int parse_public_key(struct parser *p, char *value)
{
	return parse_key(p, "public_key", value, current_peer(p)->public_key);
}

static int parse_endpoint(struct parser *p, char *value)
{
	struct yip_peer_config *peer = current_peer(p);
	char reason[MAX_MSG];
	const char *rest;
	uint8_t transport;
	bool reality;

	if (parse_scheme(p, "endpoint", value, &transport, &rest, &reality) < 0)
		return -1;
	if (reality)
		return fail(p, "endpoint: reality:// names a REALITY front, a rendezvous server "
		               "(rendezvous=reality://...); a peer is reached by tls://");
	/* listen comes first (an interface key): prefer the family it can reach. */
	if (yip_endpoint_parse_family(rest, 0, p->resolve, dial_family(p, transport),
	                              &peer->endpoint, NULL, reason, sizeof(reason)) < 0)
		return fail(p, "endpoint: %s", reason);
	peer->has_endpoint = true;
	peer->transport = transport;
	peer->endpoint_line = p->line;
	if (yip_endpoint_is_name(rest) && (peer->endpoint_name = strdup(rest)) == NULL)
		return fail(p, "out of memory");
	return 0;
}

static int add_allowed_ip(struct parser *p, char *item)
{
	struct yip_peer_config *peer = current_peer(p);
	char reason[MAX_MSG];
	struct yip_cidr c;
	void *array;

	item = lines_trim(item);
	if (item[0] == '\0')
		return fail(p, "allowed_ips: empty entry in the list");
	if (yip_cidr_parse(item, true, &c, reason, sizeof(reason)) < 0)
		return fail(p, "allowed_ips: %s", reason);
	if (peer->n_allowed_ips >= YIP_MAX_ALLOWED_PER_PEER)
		return fail(p, "too many allowed_ips in this [peer] block (at most %d)",
		            YIP_MAX_ALLOWED_PER_PEER);
	array = grow(peer->allowed_ips, peer->n_allowed_ips, &p->cap_allowed, sizeof(c));
	if (array == NULL)
		return fail(p, "out of memory");
	peer->allowed_ips = array;
	peer->allowed_ips[peer->n_allowed_ips++] = c;
	return 0;
}

/* A comma-separated list; value is the parser's line copy, cut up in place. */
static int parse_allowed_ips(struct parser *p, char *value)
{
	char *item = value, *comma;

	for (;;) {
		comma = strchr(item, ',');
		if (comma != NULL)
			*comma = '\0';
		if (add_allowed_ip(p, item) < 0)
			return -1;
		if (comma == NULL)
			return 0;
		item = comma + 1;
	}
}

static int parse_keepalive(struct parser *p, char *value)
{
	unsigned long secs;

	if (strcmp(value, "off") == 0) {
		current_peer(p)->persistent_keepalive = 0;
		return 0;
	}
	if (parse_number(value, &secs) < 0 || secs > 65535)
		return fail(p,
		            "persistent_keepalive '%s': expected seconds from 0 to 65535, or 'off'",
		            value);
	current_peer(p)->persistent_keepalive = (unsigned int)secs;
	return 0;
}

static int parse_ca(struct parser *p, char *value)
{
	if (parse_key(p, "ca", value, p->cfg->ca_public) < 0)
		return -1;
	p->cfg->has_ca = true;
	return 0;
}

/* A file or directory name: kept as written (relative names are the
 * daemon's working directory's). */
static int parse_path(struct parser *p, const char *what, const char *value, char **out)
{
	if (strlen(value) >= 4096)
		return fail(p, "%s: name too long", what);
	if ((*out = strdup(value)) == NULL)
		return fail(p, "out of memory");
	return 0;
}

static int parse_cert(struct parser *p, char *value)
{
	return parse_path(p, "cert", value, &p->cfg->cert_path);
}

static int parse_roots(struct parser *p, char *value)
{
	return parse_path(p, "roots", value, &p->cfg->roots_path);
}

static int parse_revocations(struct parser *p, char *value)
{
	return parse_path(p, "revocations", value, &p->cfg->revocations_path);
}

static int parse_state_dir(struct parser *p, char *value)
{
	return parse_path(p, "state_dir", value, &p->cfg->state_dir);
}

static int parse_tls_cert(struct parser *p, char *value)
{
	return parse_path(p, "tls_cert", value, &p->cfg->tls_cert_path);
}

static int parse_tls_key(struct parser *p, char *value)
{
	return parse_path(p, "tls_key", value, &p->cfg->tls_key_path);
}

static bool is_letter_or_digit(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int yip_config_sni_check(const char *name, char *reason, size_t reasonlen)
{
	size_t len = strlen(name), start = 0, last = 0;

	if (len == 0 || len > 253) {
		snprintf(reason, reasonlen, "a host name has 1 to 253 characters");
		return -1;
	}
	for (size_t i = 0; i <= len; i++) {
		if (i < len && name[i] != '.') {
			if (!is_letter_or_digit(name[i]) && name[i] != '-') {
				snprintf(
				    reason, reasonlen,
				    "'%.64s' is not a host name (letters, digits, '-' and '.')",
				    name);
				return -1;
			}
			continue;
		}
		if (i == start || i - start > 63 || name[start] == '-' || name[i - 1] == '-') {
			snprintf(reason, reasonlen,
			         "'%.64s' is not a host name (each dot-separated label has 1 to 63 "
			         "characters and does not start or end with '-')",
			         name);
			return -1;
		}
		last = start;
		start = i + 1;
	}
	/* No top-level domain is all digits: such a name is an IPv4 address. */
	if (strspn(name + last, "0123456789") == len - last) {
		snprintf(
		    reason, reasonlen,
		    "'%.64s' is an IP address; the SNI names a host (leave tls_sni out to send "
		    "none)",
		    name);
		return -1;
	}
	return 0;
}

/* The top-level default, or a [peer]'s own. */
static int parse_tls_sni(struct parser *p, char *value)
{
	char reason[MAX_MSG];
	char **out = p->in_peer ? &current_peer(p)->tls_sni : &p->cfg->tls_sni;

	if (yip_config_sni_check(value, reason, sizeof(reason)) != 0)
		return fail(p, "tls_sni: %s", reason);
	if ((*out = strdup(value)) == NULL)
		return fail(p, "out of memory");
	return 0;
}

static const struct key_def keys[KEY_COUNT] = {
    [KEY_LOCAL_PRIVATE] = {"local_private", SCOPE_INTERFACE, false, parse_local_private},
    [KEY_LOCAL_PUBLIC] = {"local_public", SCOPE_INTERFACE, false, parse_local_public},
    [KEY_LISTEN] = {"listen", SCOPE_INTERFACE, false, parse_listen},
    [KEY_LISTEN_TLS] = {"listen_tls", SCOPE_INTERFACE, false, parse_listen_tls},
    [KEY_LISTEN_QUIC] = {"listen_quic", SCOPE_INTERFACE, false, parse_listen_quic},
    [KEY_QUIC_CC] = {"quic_cc", SCOPE_INTERFACE, false, parse_quic_cc},
    [KEY_TLS_CERT] = {"tls_cert", SCOPE_INTERFACE, false, parse_tls_cert},
    [KEY_TLS_KEY] = {"tls_key", SCOPE_INTERFACE, false, parse_tls_key},
    [KEY_TLS_SNI] = {"tls_sni", SCOPE_INTERFACE, false, parse_tls_sni},
    [KEY_DEVICE] = {"device", SCOPE_INTERFACE, false, parse_device},
    [KEY_DEVICE_KIND] = {"device_kind", SCOPE_INTERFACE, false, parse_device_kind},
    [KEY_ADDRESS] = {"address", SCOPE_INTERFACE, true, parse_address},
    [KEY_MTU] = {"mtu", SCOPE_INTERFACE, false, parse_mtu},
    [KEY_FEC] = {"fec", SCOPE_INTERFACE, false, parse_fec},
    [KEY_OFFLOAD] = {"offload", SCOPE_INTERFACE, false, parse_offload},
    [KEY_CIPHER] = {"cipher", SCOPE_INTERFACE, false, parse_cipher},
    [KEY_IO] = {"io", SCOPE_INTERFACE, false, parse_io},
    [KEY_WORKERS] = {"workers", SCOPE_INTERFACE, false, parse_workers},
    [KEY_RENDEZVOUS] = {"rendezvous", SCOPE_INTERFACE, true, parse_rendezvous},
    [KEY_RENDEZVOUS_KEY] = {"rendezvous_key", SCOPE_INTERFACE, true, parse_rendezvous_key},
    [KEY_NAT_KEEPALIVE] = {"nat_keepalive", SCOPE_INTERFACE, false, parse_nat_keepalive},
    [KEY_RELAY] = {"relay", SCOPE_INTERFACE, false, parse_relay},
    [KEY_OBF_PSK] = {"obf_psk", SCOPE_INTERFACE, false, parse_obf_psk},
    [KEY_METRICS_LISTEN] = {"metrics_listen", SCOPE_INTERFACE, false, parse_metrics_listen},
    [KEY_METRICS_REMOTE] = {"metrics_remote", SCOPE_INTERFACE, false, parse_metrics_remote},
    [KEY_METRICS_PEERS] = {"metrics_peers", SCOPE_INTERFACE, false, parse_metrics_peers},
    [KEY_OBF_JUNK] = {"obf_junk", SCOPE_INTERFACE, false, parse_obf_junk},
    [KEY_OBF_COVER_MS] = {"obf_cover_ms", SCOPE_INTERFACE, false, parse_obf_cover_ms},
    [KEY_USER] = {"user", SCOPE_INTERFACE, false, parse_user},
    [KEY_SANDBOX] = {"sandbox", SCOPE_INTERFACE, false, parse_sandbox},
    [KEY_CA] = {"ca", SCOPE_INTERFACE, false, parse_ca},
    [KEY_CERT] = {"cert", SCOPE_INTERFACE, false, parse_cert},
    [KEY_ROOTS] = {"roots", SCOPE_INTERFACE, false, parse_roots},
    [KEY_REVOCATIONS] = {"revocations", SCOPE_INTERFACE, false, parse_revocations},
    [KEY_STATE_DIR] = {"state_dir", SCOPE_INTERFACE, false, parse_state_dir},
    [KEY_LOG_FORMAT] = {"log_format", SCOPE_INTERFACE, false, parse_log_format},
    [KEY_LOG_LEVEL] = {"log_level", SCOPE_INTERFACE, false, parse_log_level},
    [KEY_PUBLIC_KEY] = {"public_key", SCOPE_PEER, false, parse_public_key},
    [KEY_ENDPOINT] = {"endpoint", SCOPE_PEER, false, parse_endpoint},
    [KEY_ALLOWED_IPS] = {"allowed_ips", SCOPE_PEER, true, parse_allowed_ips},
    [KEY_PERSISTENT_KEEPALIVE] = {"persistent_keepalive", SCOPE_PEER, false, parse_keepalive},
    /* tls_sni is both: the default at the top, a peer's own in its block. */
    [KEY_PEER_TLS_SNI] = {"tls_sni", SCOPE_PEER, false, parse_tls_sni},
};

/* Levenshtein distance, ignoring case; used only to suggest a key name. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t row[32], alen = strlen(a), blen = strlen(b), i, j;

	if (blen >= sizeof(row) / sizeof(row[0]) || alen > 64)
		return SIZE_MAX;
	for (j = 0; j <= blen; j++)
		row[j] = j;
	for (i = 1; i <= alen; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= blen; j++) {
			size_t up = row[j];
			size_t cost = (a[i - 1] | 0x20) == (b[j - 1] | 0x20) ? 0 : 1;
			size_t best = diag + cost;

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[blen];
}

static int unknown_key(struct parser *p, const char *key)
{
	const char *best = NULL;
	size_t best_dist = 4, i;

	for (i = 0; i < KEY_COUNT; i++) {
		size_t d = edit_distance(key, keys[i].name);

		if (d < best_dist) {
			best_dist = d;
			best = keys[i].name;
		}
	}
	if (best != NULL)
		return fail(p, "unknown key '%s' (did you mean '%s'?)", key, best);
	return fail(p, "unknown key '%s'", key);
}

/* A finished [peer] block must have said who the peer is. */
static int close_peer(struct parser *p)
{
	if (!p->in_peer)
		return 0;
	if (p->seen[KEY_PUBLIC_KEY] == 0)
		return fail_at(p, current_peer(p)->line, "[peer] block has no public_key");
	if (p->seen[KEY_PEER_TLS_SNI] != 0 && current_peer(p)->transport != YIP_TRANSPORT_TLS &&
	    current_peer(p)->transport != YIP_TRANSPORT_QUIC)
		return fail_at(p, p->seen[KEY_PEER_TLS_SNI],
		               "tls_sni in a [peer] is for its TLS or QUIC link: it needs "
		               "endpoint=tls://HOST:PORT or quic://HOST:PORT in the same block");
	return 0;
}

static int open_peer(struct parser *p)
{
	struct yip_config *cfg = p->cfg;
	void *array;
	size_t i;

	if (close_peer(p) < 0)
		return -1;
	if (cfg->n_peers >= YIP_MAX_PEERS)
		return fail(p, "too many [peer] blocks (at most %d)", YIP_MAX_PEERS);
	array = grow(cfg->peers, cfg->n_peers, &p->cap_peers, sizeof(cfg->peers[0]));
	if (array == NULL)
		return fail(p, "out of memory");
	cfg->peers = array;
	memset(&cfg->peers[cfg->n_peers], 0, sizeof(cfg->peers[0]));
	cfg->peers[cfg->n_peers].line = p->line;
	cfg->n_peers++;
	p->in_peer = true;
	p->cap_allowed = 0;
	for (i = 0; i < KEY_COUNT; i++) {
		if (keys[i].scope == SCOPE_PEER)
			p->seen[i] = 0;
	}
	return 0;
}

static int parse_section(struct parser *p, const char *s)
{
	if (strcmp(s, "[peer]") == 0)
		return open_peer(p);
	if (strcasecmp(s, "[interface]") == 0)
		return fail(p,
		            "unknown section '%s' (interface keys go at the top of the file, "
		            "before the first [peer])",
		            s);
	if (strcasecmp(s, "[peer]") == 0)
		return fail(p, "unknown section '%s' (did you mean '[peer]'?)", s);
	return fail(p, "unknown section '%s' (the only section is [peer])", s);
}

/* A name two keys share (tls_sni) is the one of the scope the line is in. */
static int find_key(const char *key, bool in_peer)
{
	int id, found = -1;

	for (id = 0; id < KEY_COUNT; id++) {
		if (strcmp(key, keys[id].name) != 0)
			continue;
		if ((keys[id].scope == SCOPE_PEER) == in_peer)
			return id;
		if (found < 0)
			found = id;
	}
	return found;
}

static int parse_pair(struct parser *p, char *key, char *value)
{
	const struct key_def *def;
	int id;

	if (key[0] == '\0')
		return fail(p, "missing key before '='");
	id = find_key(key, p->in_peer);
	if (id < 0)
		return unknown_key(p, key);
	def = &keys[id];
	if (def->scope == SCOPE_INTERFACE && p->in_peer)
		return fail(
		    p, "'%s' is an interface key and must come before the first [peer] block", key);
	if (def->scope == SCOPE_PEER && !p->in_peer)
		return fail(p, "'%s' belongs in a [peer] block", key);
	if (value[0] == '\0')
		return fail(p, "empty value for '%s'", key);
	if (!def->repeatable && p->seen[id] != 0)
		return fail(p, "duplicate key '%s' (first set on line %u)", key, p->seen[id]);
	if (p->seen[id] == 0)
		p->seen[id] = p->line;
	return def->parse(p, value);
}

static int parse_line(void *arg, unsigned line, char *s)
{
	struct parser *p = arg;
	char *key, *value;

	p->line = line;
	if (s[0] == '[')
		return parse_section(p, s);
	/* The line is not quoted: it might be a stray private key. */
	if (!lines_pair(s, &key, &value))
		return fail(p, "expected key=value, but the line has no '='");
	return parse_pair(p, key, value);
}

/* Whole-file check of our own key. */
static int check_interface(struct parser *p)
{
	const struct yip_config *cfg = p->cfg;

	if (p->seen[KEY_LOCAL_PRIVATE] == 0)
		return fail_at(p, 0, "missing local_private");
	if (cfg->n_rendezvous > 0 && !cfg->rendezvous[cfg->n_rendezvous - 1].has_key)
		return fail_at(p, cfg->rendezvous[cfg->n_rendezvous - 1].line,
		               "rendezvous has no rendezvous_key (the server's public key, from "
		               "yip-rendezvous --genkey)");
	if (p->seen[KEY_LOCAL_PUBLIC] != 0 &&
	    memcmp(p->local_public, p->cfg->public_key, YIP_KEY_LEN) != 0)
		return fail_at(p, p->seen[KEY_LOCAL_PUBLIC],
		               "local_public does not match local_private");
	/* A CA-gated network (docs/membership.md). */
	if (cfg->has_ca && cfg->cert_path == NULL)
		return fail_at(p, p->seen[KEY_CA],
		               "ca needs cert (this node's certificate, from yip-ca sign-cert)");
	if (!cfg->has_ca) {
		static const int needs_ca[] = {KEY_CERT, KEY_ROOTS, KEY_REVOCATIONS, KEY_STATE_DIR};

		for (size_t i = 0; i < sizeof(needs_ca) / sizeof(needs_ca[0]); i++)
			if (p->seen[needs_ca[i]] != 0)
				return fail_at(p, p->seen[needs_ca[i]],
				               "%s is for a CA-gated network: set ca too",
				               keys[needs_ca[i]].name);
	}
	/* A certificate grants IP prefixes; TAP mode checks no address inside
	 * a frame and finds no member by MAC (docs/configuration.md, "ca"). */
	if (cfg->has_ca && cfg->device_kind == YIP_DEVICE_TAP)
		return fail_at(p, p->seen[KEY_CA],
		               "ca: a CA-gated network needs device_kind=tun: certificates "
		               "grant IP prefixes, which TAP mode does not check inside "
		               "Ethernet frames");
	return 0;
}

/* Public keys are public, so plain memcmp is fine here. */
static int check_peer_keys(struct parser *p)
{
	const struct yip_config *cfg = p->cfg;
	size_t i, j;

	for (i = 0; i < cfg->n_peers; i++) {
		const struct yip_peer_config *peer = &cfg->peers[i];

		if (memcmp(peer->public_key, cfg->public_key, YIP_KEY_LEN) == 0)
			return fail_at(
			    p, peer->line,
			    "peer public_key is our own public key (from local_private)");
		for (j = 0; j < i; j++) {
			if (memcmp(peer->public_key, cfg->peers[j].public_key, YIP_KEY_LEN) == 0)
				return fail_at(
				    p, peer->line,
				    "peer public_key is the same as the [peer] on line %u",
				    cfg->peers[j].line);
		}
	}
	return 0;
}

struct prefix_ref {
	const struct yip_cidr *cidr;
	unsigned int line; /* of the owning [peer] */
};

static int compare_prefix_refs(const void *va, const void *vb)
{
	const struct prefix_ref *a = va, *b = vb;
	int d;

	if (a->cidr->family != b->cidr->family)
		return a->cidr->family < b->cidr->family ? -1 : 1;
	if (a->cidr->plen != b->cidr->plen)
		return a->cidr->plen < b->cidr->plen ? -1 : 1;
	d = memcmp(a->cidr->addr, b->cidr->addr, sizeof(a->cidr->addr));
	if (d != 0)
		return d;
	return a->line < b->line ? -1 : a->line > b->line;
}

static bool same_prefix(const struct yip_cidr *a, const struct yip_cidr *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/*
 * Each prefix may belong to one peer only, or routing would be ambiguous.
 * Sorting all prefixes finds duplicates in O(n log n) even for big meshes.
 */
static int check_prefixes(struct parser *p)
{
	const struct yip_config *cfg = p->cfg;
	struct prefix_ref *refs;
	char text[YIP_ADDRSTRLEN];
	size_t total = 0, i, j;
	int rc = 0;

	for (i = 0; i < cfg->n_peers; i++)
		total += cfg->peers[i].n_allowed_ips;
	if (total < 2)
		return 0;
	refs = calloc(total, sizeof(*refs));
	if (refs == NULL)
		return fail_at(p, 0, "out of memory");
	for (i = 0, total = 0; i < cfg->n_peers; i++) {
		for (j = 0; j < cfg->peers[i].n_allowed_ips; j++) {
			refs[total].cidr = &cfg->peers[i].allowed_ips[j];
			refs[total++].line = cfg->peers[i].line;
		}
	}
	qsort(refs, total, sizeof(*refs), compare_prefix_refs);
	for (i = 1; i < total && rc == 0; i++) {
		if (!same_prefix(refs[i - 1].cidr, refs[i].cidr))
			continue;
		yip_cidr_format(refs[i].cidr, text, sizeof(text));
		if (refs[i - 1].line == refs[i].line)
			rc = fail_at(p, refs[i].line,
			             "allowed_ips %s is listed twice in this [peer]", text);
		else
			rc = fail_at(p, refs[i].line,
			             "allowed_ips %s is also in the [peer] on line %u", text,
			             refs[i - 1].line);
	}
	free(refs);
	return rc;
}

/* tls_cert and tls_key are what listen_tls presents: both or neither, and only with it. */
static int check_tls(struct parser *p)
{
	unsigned cert = p->seen[KEY_TLS_CERT], key = p->seen[KEY_TLS_KEY];

	if (!p->cfg->has_listen_tls && !p->cfg->has_listen_quic && (cert != 0 || key != 0))
		return fail_at(p, cert != 0 ? cert : key,
		               "%s is the certificate listen_tls and listen_quic present: without "
		               "either nothing accepts TLS or QUIC links",
		               cert != 0 ? "tls_cert" : "tls_key");
	if (cert != 0 && key == 0)
		return fail_at(p, cert,
		               "tls_cert needs tls_key (the certificate's private key, PEM)");
	if (key != 0 && cert == 0)
		return fail_at(p, key,
		               "tls_key needs tls_cert (the certificate it belongs to, PEM)");
	return 0;
}

/* The metrics endpoint answers whoever reaches it: off loopback only when asked. */
static int check_metrics(struct parser *p)
{
	char why[MAX_MSG];

	if (p->cfg->has_metrics_listen &&
	    yip_metrics_listen_check(&p->cfg->metrics_listen, p->cfg->metrics_remote, why,
	                             sizeof(why)) != 0)
		return fail_at(p, p->seen[KEY_METRICS_LISTEN], "%s", why);
	return 0;
}

/* obf_junk and obf_cover_ms shape obfuscated traffic: without obf_psk they mean nothing. */
static int check_obf(struct parser *p)
{
	if (p->cfg->obf)
		return 0;
	if (p->cfg->obf_junk > 0)
		return fail_at(p, p->seen[KEY_OBF_JUNK], "obf_junk needs obf_psk");
	if (p->cfg->obf_cover_ms > 0)
		return fail_at(p, p->seen[KEY_OBF_COVER_MS], "obf_cover_ms needs obf_psk");
	return 0;
}

/*
 * One address the socket bound to listen must be able to send to. A host
 * name resolved before listen= was read (a rendezvous= above it) is
 * resolved again for listen's family.
 */
static int check_family(struct parser *p, const char *what, unsigned line, const char *name,
                        union yip_sockaddr *a)
{
	const union yip_sockaddr *listen = &p->cfg->listen;
	char reason[MAX_MSG], as[YIP_ADDRSTRLEN], ls[YIP_ADDRSTRLEN];
	int fam = yip_listen_family(listen);

	if (yip_listen_reaches(listen, a))
		return 0;
	if (name != NULL && p->resolve) {
		if (yip_endpoint_parse_family(name, 0, true, fam, a, NULL, reason, sizeof(reason)) <
		    0)
			return fail_at(p, line, "%s: %s (listen is %s only)", what, reason,
			               fam == AF_INET ? "IPv4" : "IPv6");
		return 0;
	}
	yip_sockaddr_format(a, as, sizeof(as));
	yip_sockaddr_format(listen, ls, sizeof(ls));
	return fail_at(p, line,
	               "%s %s is %s, but the socket of listen=%s sends %s only: it could never "
	               "be reached (listen on [::] for both)",
	               what, as, fam == AF_INET ? "IPv6" : "IPv4", ls,
	               fam == AF_INET ? "IPv4" : "IPv6");
}

static int check_families(struct parser *p)
{
	struct yip_config *cfg = p->cfg;

	for (size_t i = 0; i < cfg->n_rendezvous; i++)
		if (cfg->rendezvous[i].transport == YIP_TRANSPORT_UDP &&
		    check_family(p, "rendezvous", cfg->rendezvous[i].line, cfg->rendezvous[i].name,
		                 &cfg->rendezvous[i].addr) < 0)
			return -1;
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (cfg->peers[i].has_endpoint && cfg->peers[i].transport == YIP_TRANSPORT_UDP &&
		    check_family(p, "endpoint", cfg->peers[i].endpoint_line,
		                 cfg->peers[i].endpoint_name, &cfg->peers[i].endpoint) < 0)
			return -1;
	return 0;
}

static int finish(struct parser *p)
{
	if (close_peer(p) < 0 || check_interface(p) < 0 || check_peer_keys(p) < 0 ||
	    check_prefixes(p) < 0 || check_tls(p) < 0 || check_obf(p) < 0 || check_metrics(p) < 0 ||
	    check_families(p) < 0)
		return -1;
	return 0;
}

static void set_defaults(struct yip_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen.sa.sa_family = AF_UNSPEC;
	snprintf(cfg->device, sizeof(cfg->device), "%s", YIP_DEFAULT_DEVICE);
	cfg->device_kind = YIP_DEVICE_TUN;
	cfg->mtu = 0; /* auto */
	cfg->nat_keepalive = YIP_DEFAULT_NAT_KEEPALIVE;
}

static int parse_text(struct parser *p, const char *text, size_t len)
{
	char reason[MAX_MSG] = "";
	unsigned at;
	int rc = lines_each(text, len, parse_line, p, &at, reason, sizeof(reason));

	if (rc != 0 && reason[0] != '\0') {
		p->line = at;
		return fail(p, "%s", reason); /* a line no text file holds */
	}
	return rc;
}

int yip_config_parse(const char *text, size_t len, const char *name, bool resolve,
                     struct yip_config *cfg, char *err, size_t errlen)
{
	struct parser p;

	set_defaults(cfg);
	memset(&p, 0, sizeof(p));
	p.cfg = cfg;
	p.name = name;
	p.resolve = resolve;
	p.err = err;
	p.errlen = errlen;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (parse_text(&p, text, len) < 0 || finish(&p) < 0) {
		yip_config_free(cfg);
		sodium_memzero(&p, sizeof(p));
		return -1;
	}
	sodium_memzero(&p, sizeof(p));
	return 0;
}

static int __attribute__((format(printf, 3, 4)))
load_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int yip_config_load_fd(int fd, const char *name, bool resolve, struct yip_config *cfg, char *err,
                       size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	set_defaults(cfg);
	rc = yip_read_fd(fd, MAX_FILE_SIZE, &text, &len);
	if (rc == -EFBIG)
		return load_fail(err, errlen, "%s: file is too large (limit %d bytes)", name,
		                 MAX_FILE_SIZE);
	if (rc < 0)
		return load_fail(err, errlen, "%s: cannot read: %s", name, strerror(-rc));
	rc = yip_config_parse(text, len, name, resolve, cfg, err, errlen);
	sodium_memzero(text, len);
	free(text);
	return rc;
}

int yip_config_load(const char *path, struct yip_config *cfg, char *err, size_t errlen)
{
	int fd, rc;

	set_defaults(cfg);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return load_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	rc = yip_config_load_fd(fd, path, true, cfg, err, errlen);
	close(fd);
	return rc;
}

void yip_config_free(struct yip_config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->n_peers; i++) {
		free(cfg->peers[i].allowed_ips);
		free(cfg->peers[i].endpoint_name);
		free(cfg->peers[i].tls_sni);
	}
	for (i = 0; i < cfg->n_rendezvous; i++)
		free(cfg->rendezvous[i].name);
	free(cfg->tls_cert_path);
	free(cfg->tls_key_path);
	free(cfg->tls_sni);
	free(cfg->cert_path);
	free(cfg->roots_path);
	free(cfg->revocations_path);
	free(cfg->state_dir);
	free(cfg->peers);
	free(cfg->addresses);
	/* Wiping the whole structure clears the private key and makes a second free harmless. */
	sodium_memzero(cfg, sizeof(*cfg));
}

static bool same_server(const struct yip_config *cfg, size_t a, size_t b)
{
	return memcmp(cfg->rendezvous[a].public_key, cfg->rendezvous[b].public_key, YIP_KEY_LEN) ==
	       0;
}

size_t yip_config_server_of_line(const struct yip_config *cfg, size_t i)
{
	size_t n = 0;

	for (size_t j = 0; j <= i; j++) {
		bool seen = false;

		for (size_t m = 0; m < j && !seen; m++)
			seen = same_server(cfg, m, j);
		if (seen)
			continue; /* j's server is counted already */
		if (same_server(cfg, j, i))
			return n;
		n++;
	}
	return n;
}

int yip_metrics_listen_check(const union yip_sockaddr *a, bool remote, char *err, size_t errlen)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char text[YIP_ADDRSTRLEN];
	bool loopback = false;

	if (a->sa.sa_family == AF_INET) {
		loopback = (ntohl(a->in4.sin_addr.s_addr) >> 24) == 127;
	} else if (a->sa.sa_family == AF_INET6) {
		const uint8_t *b = a->in6.sin6_addr.s6_addr;

		loopback = IN6_IS_ADDR_LOOPBACK(&a->in6.sin6_addr) ||
		           (memcmp(b, mapped, sizeof(mapped)) == 0 && b[12] == 127);
	}
	if (loopback || remote)
		return 0;
	yip_sockaddr_format(a, text, sizeof(text));
	snprintf(err, errlen,
	         "metrics address %s is not a loopback address: anyone who reaches it could read "
	         "the metrics; use 127.0.0.1 or [::1], or allow it explicitly with "
	         "metrics_remote = on (yip-rendezvous: --metrics-remote)",
	         text);
	return -1;
}
