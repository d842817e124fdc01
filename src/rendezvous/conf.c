/*
 * yip-rendezvous's settings and key file (see conf.h). Lines are parsed
 * from a copy that is wiped afterwards, because a key file's line holds the
 * private key.
 */
#include "rendezvous/conf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config/lines.h"
#include "util/hex.h"

#define MAX_MSG 384

static const char *const key_names[] = {
#define X(name, str) str,
    RDV_CONF_KEYS(X)
#undef X
};

/* ", listen, alt_port, ...": every key, for the unknown-key message (skip
 * the first two characters). Built from the same list, so it cannot miss one. */
static const char key_list[] =
#define X(name, str) ", " str
    RDV_CONF_KEYS(X)
#undef X
    ;

_Static_assert(sizeof("unknown key '' (the keys are )") + 64 + sizeof(key_list) <= MAX_MSG,
               "the unknown-key message fits its buffer");

void rdv_conf_default(struct rdv_conf *c)
{
	struct rdv_config e;

	memset(c, 0, sizeof(*c));
	c->listen.in4.sin_family = AF_INET;
	c->listen.in4.sin_port = htons(RDV_DEFAULT_PORT);
	rdv_config_default(&e);
	c->relay = e.relay;
	c->relay_rate = e.relay_rate;
	c->relay_burst = e.relay_burst;
	c->max_nodes = e.max_nodes;
}

int rdv_conf_key(const char *name)
{
	for (int i = 0; i < RDV_CONF_COUNT; i++)
		if (strcmp(name, key_names[i]) == 0)
			return i;
	return -1;
}

/* Replaces control characters, so a message cannot mess up a terminal or a log. */
static void sanitize(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = '?';
}

static int __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	sanitize(err);
	return -1;
}

/* Decimal digits only, at most 19 of them (so the value fits), no sign. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 19)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

int rdv_conf_bytes(const char *s, uint64_t max, uint64_t *out)
{
	size_t len = strlen(s);
	unsigned shift = 0;
	uint64_t v;

	if (len > 0) {
		switch (s[len - 1]) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		}
	}
	if (parse_u64(s, len - (shift != 0), &v) != 0 || v > max >> shift)
		return -1;
	*out = v << shift;
	return 0;
}

static int set_bytes(uint64_t *out, const char *what, uint64_t min, const char *value, char *err,
                     size_t errlen)
{
	if (rdv_conf_bytes(value, RDV_CONF_MAX_RATE, out) != 0)
		return fail(err, errlen,
		            "expected %s: digits with an optional K, M or G (at most 16G), got "
		            "'%.64s'",
		            what, value);
	if (*out < min)
		return fail(err, errlen, "%s must be at least %llu", what, (unsigned long long)min);
	return 0;
}

static int set_path(char *out, size_t cap, const char *value, char *err, size_t errlen)
{
	if (strlen(value) >= cap)
		return fail(err, errlen, "path longer than %zu characters", cap - 1);
	snprintf(out, cap, "%s", value);
	return 0;
}

/* HOST:PORT, resolved when the server starts. */
static int set_hostport(char *out, size_t cap, const char *value, const char *what, char *err,
                        size_t errlen)
{
	const char *colon = strrchr(value, ':');
	uint64_t v;

	if (strlen(value) >= cap || colon == NULL || colon == value ||
	    parse_u64(colon + 1, strlen(colon + 1), &v) != 0 || v == 0 || v > 65535)
		return fail(err, errlen, "expected HOST:PORT (%s), got '%.64s'", what, value);
	snprintf(out, cap, "%s", value);
	return 0;
}

/* A DNS name as an SNI carries it: labels of letters, digits and '-'. */
static bool dns_name_ok(const char *s)
{
	size_t n = strlen(s), label = 0;

	if (n == 0 || n > 253 || s[0] == '.' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		           (ch >= '0' && ch <= '9') || ch == '-') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return true;
}

bool rdv_conf_repeatable(enum rdv_conf_key key)
{
	return key == RDV_CONF_REALITY_SHORT_ID || key == RDV_CONF_REALITY_SERVER_NAME;
}

int rdv_conf_set(struct rdv_conf *c, enum rdv_conf_key key, const char *value, char *err,
                 size_t errlen)
{
	char reason[MAX_MSG];
	uint64_t v;

	switch (key) {
	case RDV_CONF_LISTEN:
		/* Numeric only: a server binds an address of its own, no name to resolve. */
		if (yip_endpoint_parse(value, 0, false, &c->listen, NULL, reason, sizeof(reason)) !=
		    0)
			return fail(err, errlen, "%s", reason);
		return 0;
	case RDV_CONF_ALT_PORT:
		if (parse_u64(value, strlen(value), &v) != 0 || v > 65535)
			return fail(err, errlen, "expected a port number (0 for none), got '%.64s'",
			            value);
		c->alt_port = (uint16_t)v;
		c->alt_port_set = true;
		return 0;
	case RDV_CONF_KEY:
		return set_path(c->key_file, sizeof(c->key_file), value, err, errlen);
	case RDV_CONF_RELAY:
		if (strcmp(value, "on") == 0)
			c->relay = true;
		else if (strcmp(value, "off") == 0)
			c->relay = false;
		else
			return fail(err, errlen, "expected 'on' or 'off', got '%.64s'", value);
		return 0;
	case RDV_CONF_RELAY_RATE:
		return set_bytes(&c->relay_rate, "bytes per second", 1, value, err, errlen);
	case RDV_CONF_RELAY_BURST:
		return set_bytes(&c->relay_burst, "bytes", RDV_CONF_MIN_BURST, value, err, errlen);
	case RDV_CONF_MAX_NODES:
		if (parse_u64(value, strlen(value), &v) != 0 || v < 1 || v > RDV_CONF_NODES_LIMIT)
			return fail(err, errlen, "expected a number from 1 to %d, got '%.64s'",
			            RDV_CONF_NODES_LIMIT, value);
		c->max_nodes = (size_t)v;
		return 0;
	case RDV_CONF_OBF_PSK:
		if (strlen(value) != 2 * YIP_KEY_LEN ||
		    yip_hex_decode(c->obf_psk, YIP_KEY_LEN, value) != 0)
			return fail(err, errlen, "expected 64 hex digits (32 bytes)");
		if (sodium_is_zero(c->obf_psk, YIP_KEY_LEN))
			return fail(err, errlen, "must not be all zeros");
		c->obf = true;
		return 0;
	case RDV_CONF_USER:
		if (yip_config_user_check(value, reason, sizeof(reason)) != 0)
			return fail(err, errlen, "%s", reason);
		snprintf(c->user, sizeof(c->user), "%s", value);
		return 0;
	case RDV_CONF_SANDBOX:
		if (yip_config_sandbox_mode(value, &c->sandbox) != 0)
			return fail(err, errlen, "expected 'on', 'log' or 'off', got '%.64s'",
			            value);
		return 0;
	case RDV_CONF_CA:
		if (strlen(value) != 2 * MEMBER_SIGN_PUBLIC ||
		    yip_hex_decode(c->ca, MEMBER_SIGN_PUBLIC, value) != 0)
			return fail(err, errlen,
			            "expected the CA's public key, 64 hexadecimal digits (yip-ca "
			            "pubkey prints it), got '%.80s'",
			            value);
		c->has_ca = true;
		return 0;
	case RDV_CONF_NETWORK:
		if (!wire_network_ok(value))
			return fail(
			    err, errlen,
			    "expected a network name (1 to %d of a-z 0-9 . _ -), got '%.80s'",
			    WIRE_NETWORK_MAX, value);
		snprintf(c->network, sizeof(c->network), "%s", value);
		return 0;
	case RDV_CONF_REVOCATIONS:
		return set_path(c->revocations_file, sizeof(c->revocations_file), value, err,
		                errlen);
	case RDV_CONF_LISTEN_TCP:
		if (yip_endpoint_parse(value, 0, false, &c->listen_tcp, NULL, reason,
		                       sizeof(reason)) != 0)
			return fail(err, errlen, "%s", reason);
		c->has_tcp = true;
		return 0;
	case RDV_CONF_LISTEN_QUIC:
		if (yip_endpoint_parse(value, 0, false, &c->listen_quic, NULL, reason,
		                       sizeof(reason)) != 0)
			return fail(err, errlen, "%s", reason);
		c->has_quic = true;
		return 0;
	case RDV_CONF_TLS_CERT:
		return set_path(c->tls_cert, sizeof(c->tls_cert), value, err, errlen);
	case RDV_CONF_TLS_KEY:
		return set_path(c->tls_key, sizeof(c->tls_key), value, err, errlen);
	case RDV_CONF_DECOY:
		return set_hostport(c->decoy, sizeof(c->decoy), value,
		                    "the decoy web server, e.g. 127.0.0.1:8080", err, errlen);
	case RDV_CONF_REALITY_DEST:
		return set_hostport(c->reality_dest, sizeof(c->reality_dest), value,
		                    "the real web site, e.g. www.example.com:443", err, errlen);
	case RDV_CONF_REALITY_PRIVATE_KEY:
		return set_path(c->reality_key_file, sizeof(c->reality_key_file), value, err,
		                errlen);
	case RDV_CONF_REALITY_SHORT_ID:
		if (c->n_reality_ids == REALITY_IDS_MAX)
			return fail(err, errlen, "at most %d short ids", REALITY_IDS_MAX);
		if (!reality_short_id_parse(c->reality_ids[c->n_reality_ids], value))
			return fail(err, errlen,
			            "expected 0 to 16 hexadecimal digits, an even number, got "
			            "'%.64s'",
			            value);
		for (size_t i = 0; i < c->n_reality_ids; i++)
			if (memcmp(c->reality_ids[i], c->reality_ids[c->n_reality_ids],
			           WIRE_REALITY_SHORT_ID) == 0)
				return fail(err, errlen, "short id '%.64s' is given twice", value);
		c->n_reality_ids++;
		return 0;
	case RDV_CONF_REALITY_SERVER_NAME:
		if (c->n_reality_names == REALITY_NAMES_MAX)
			return fail(err, errlen, "at most %d server names", REALITY_NAMES_MAX);
		if (!dns_name_ok(value))
			return fail(
			    err, errlen,
			    "expected a DNS name (letters, digits, '-' and '.', at most 253), "
			    "got '%.64s'",
			    value);
		snprintf(c->reality_names[c->n_reality_names++], sizeof(c->reality_names[0]), "%s",
		         value);
		return 0;
	case RDV_CONF_COUNT:
		break;
	}
	return fail(err, errlen, "unknown setting");
}

uint16_t rdv_conf_alt_port(const struct rdv_conf *c)
{
	uint16_t port = ntohs(c->listen.sa.sa_family == AF_INET ? c->listen.in4.sin_port
	                                                        : c->listen.in6.sin6_port);

	if (c->alt_port_set)
		return c->alt_port;
	return port == 65535 ? 0 : (uint16_t)(port + 1);
}

/* listen_tcp's front: the REALITY front's settings, or the TLS front's. */
static int check_fronts(const struct rdv_conf *c, char *err, size_t errlen)
{
	if (c->reality_dest[0] != '\0' || c->reality_key_file[0] != '\0' || c->n_reality_ids > 0 ||
	    c->n_reality_names > 0) {
		if (!c->has_tcp)
			return fail(err, errlen,
			            "the reality_ settings are the REALITY front's: "
			            "they need listen_tcp");
		if (c->reality_dest[0] == '\0' || c->reality_key_file[0] == '\0' ||
		    c->n_reality_ids == 0 || c->n_reality_names == 0)
			return fail(err, errlen,
			            "the REALITY front needs reality_dest, reality_private_key "
			            "(yip-rendezvous --reality-genkey makes one), at least one "
			            "reality_short_id and at least one reality_server_name");
		if (c->decoy[0] != '\0')
			return fail(err, errlen,
			            "decoy is the TLS front's; the REALITY front's "
			            "visitors go to reality_dest");
		if (!c->has_quic && (c->tls_cert[0] != '\0' || c->tls_key[0] != '\0'))
			return fail(err, errlen,
			            "tls_cert and tls_key are the TLS front's and the QUIC "
			            "listener's; the REALITY front shows the real site's "
			            "certificate to visitors and its own to nodes");
		return 0;
	}
	if (c->has_tcp && (c->tls_cert[0] == '\0' || c->tls_key[0] == '\0'))
		return fail(err, errlen,
		            "listen_tcp needs tls_cert and tls_key (PEM files: the certificate "
		            "chain the front shows, leaf first, and its private key)");
	if (!c->has_tcp && c->decoy[0] != '\0')
		return fail(
		    err, errlen,
		    "tls_cert, tls_key and decoy are the TLS front's: they need listen_tcp");
	if (!c->has_tcp && !c->has_quic && (c->tls_cert[0] != '\0' || c->tls_key[0] != '\0'))
		return fail(err, errlen,
		            "tls_cert and tls_key are the TLS front's and the QUIC listener's: "
		            "they need listen_tcp or listen_quic");
	return 0;
}

int rdv_conf_check(const struct rdv_conf *c, char *err, size_t errlen)
{
	uint16_t port = ntohs(c->listen.sa.sa_family == AF_INET ? c->listen.in4.sin_port
	                                                        : c->listen.in6.sin6_port);

	if (!c->alt_port_set && port == 65535)
		return fail(err, errlen,
		            "the listen port is 65535, so the second port cannot be the next one: "
		            "set alt_port (0 for none)");
	if (rdv_conf_alt_port(c) == port)
		return fail(err, errlen, "alt_port %u is the listen port; it must be another",
		            port);
	if (c->has_ca != (c->network[0] != '\0'))
		return fail(err, errlen,
		            c->has_ca ? "ca is set but network is not: a members-only server needs "
		                        "both"
		                      : "network is set but ca is not: a members-only server needs "
		                        "both");
	if (c->revocations_file[0] != '\0' && !c->has_ca)
		return fail(err, errlen, "revocations needs ca and network");
	if (check_fronts(c, err, errlen) != 0)
		return -1;
	if ((c->tls_cert[0] == '\0') != (c->tls_key[0] == '\0'))
		return fail(err, errlen,
		            "tls_cert and tls_key go together (or neither, for listen_quic's "
		            "self-signed certificate)");
	if (c->has_quic && yip_sockaddr_eq(&c->listen_quic, &c->listen))
		return fail(err, errlen, "listen_quic is the listen address; it must be another");
	if (c->key_file[0] == '\0')
		return fail(err, errlen,
		            "no key file: give --key FILE or key=FILE in the configuration (make "
		            "one with: yip-rendezvous --genkey > FILE; chmod 600 FILE)");
	return 0;
}

void rdv_conf_engine(const struct rdv_conf *c, struct rdv_config *e)
{
	e->relay = c->relay;
	e->relay_rate = c->relay_rate;
	e->relay_burst = c->relay_burst;
	e->max_nodes = c->max_nodes;
	e->alt_port = rdv_conf_alt_port(c);
	e->obf = c->obf;
	memcpy(e->obf_psk, c->obf_psk, sizeof(e->obf_psk));
}

/* ---- lines ---------------------------------------------------------------------- */

/*
 * Calls fn for each key=value line of text (comments and blank lines
 * skipped) with the line number; stops at the first error. Lines too long,
 * with a NUL, or without '=' are errors here.
 */
struct each {
	int (*fn)(void *arg, unsigned line, char *key, char *value, char *err, size_t errlen);
	void *arg;
	char *reason;
	size_t rlen;
};

static int each_line(void *arg, unsigned line, char *s)
{
	struct each *e = arg;
	char *key, *value;

	if (!lines_pair(s, &key, &value)) {
		snprintf(e->reason, e->rlen, "expected key=value, but the line has no '='");
		return -1;
	}
	return e->fn(e->arg, line, key, value, e->reason, e->rlen);
}

static int each_pair(const char *text, size_t len, const char *name,
                     int (*fn)(void *arg, unsigned line, char *key, char *value, char *err,
                               size_t errlen),
                     void *arg, char *err, size_t errlen)
{
	char reason[MAX_MSG] = "";
	struct each e = {fn, arg, reason, sizeof(reason)};
	unsigned line;
	int rc = lines_each(text, len, each_line, &e, &line, reason, sizeof(reason));

	if (rc != 0)
		fail(err, errlen, "%s:%u: %s", name, line, reason);
	return rc;
}

/* ---- the configuration file ------------------------------------------------------ */

static int conf_pair(void *arg, unsigned line, char *key, char *value, char *err, size_t errlen)
{
	struct rdv_conf *c = arg;
	char reason[MAX_MSG];
	int k;

	if (key[0] == '\0')
		return fail(err, errlen, "missing key before '='");
	k = rdv_conf_key(key);
	if (k < 0)
		return fail(err, errlen, "unknown key '%.64s' (the keys are %s)", key,
		            key_list + 2);
	if (c->line[k] != 0 && !rdv_conf_repeatable((enum rdv_conf_key)k))
		return fail(err, errlen, "duplicate key '%s' (first set on line %u)", key,
		            c->line[k]);
	if (value[0] == '\0')
		return fail(err, errlen, "empty value for '%s'", key);
	if (rdv_conf_set(c, (enum rdv_conf_key)k, value, reason, sizeof(reason)) != 0)
		return fail(err, errlen, "%s: %s", key, reason);
	c->line[k] = line;
	return 0;
}

int rdv_conf_parse(struct rdv_conf *c, const char *text, size_t len, const char *name, char *err,
                   size_t errlen)
{
	return each_pair(text, len, name, conf_pair, c, err, errlen);
}

/* ---- the key file --------------------------------------------------------------- */

struct keyfile {
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	unsigned priv_line, pub_line;
};

static int key_pair(void *arg, unsigned line, char *key, char *value, char *err, size_t errlen)
{
	struct keyfile *k = arg;

	if (strcmp(key, "private") == 0) {
		if (k->priv_line != 0)
			return fail(err, errlen, "duplicate private= (first on line %u)",
			            k->priv_line);
		if (lines_hex_key("private", value, k->priv, err, errlen) != 0)
			return -1;
		k->priv_line = line;
		return 0;
	}
	if (strcmp(key, "public") == 0) {
		if (k->pub_line != 0)
			return fail(err, errlen, "duplicate public= (first on line %u)",
			            k->pub_line);
		if (lines_hex_key("public", value, k->pub, err, errlen) != 0)
			return -1;
		k->pub_line = line;
		return 0;
	}
	return fail(err, errlen,
	            "unknown key '%.64s' (a key file holds private= and public=, as "
	            "yip-rendezvous --genkey prints them)",
	            key);
}

int rdv_keyfile_parse(const char *text, size_t len, const char *name,
                      uint8_t private_key[YIP_KEY_LEN], char *err, size_t errlen)
{
	struct keyfile k;
	uint8_t pub[YIP_KEY_LEN];
	int rc = -1;

	memset(&k, 0, sizeof(k));
	if (each_pair(text, len, name, key_pair, &k, err, errlen) != 0)
		goto out;
	if (k.priv_line == 0) {
		fail(err, errlen,
		     "%s: no private= line (make a key file with yip-rendezvous --genkey)", name);
		goto out;
	}
	if (yip_key_public(pub, k.priv) != 0) {
		fail(err, errlen, "%s:%u: private is not a usable X25519 private key", name,
		     k.priv_line);
		goto out;
	}
	if (k.pub_line != 0 && memcmp(pub, k.pub, YIP_KEY_LEN) != 0) {
		fail(err, errlen, "%s:%u: public does not match private", name, k.pub_line);
		goto out;
	}
	memcpy(private_key, k.priv, YIP_KEY_LEN);
	rc = 0;
out:
	sodium_memzero(&k, sizeof(k));
	return rc;
}
