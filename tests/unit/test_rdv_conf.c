/*
 * yip-rendezvous's settings and key file (src/rendezvous/conf.c): defaults,
 * every key, byte counts with suffixes, the checks across settings, and a
 * table of broken files with the exact "name:line: message" each gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "config/lines.h"
#include "rendezvous/conf.h"
#include "util/hex.h"

/* X25519 key pair from RFC 7748, section 6.1. */
#define ALICE_PRIV "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
#define ALICE_PUB  "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
#define BOB_PUB    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"

static int parse(struct rdv_conf *c, const char *text, char *err, size_t errlen)
{
	rdv_conf_default(c);
	return rdv_conf_parse(c, text, strlen(text), "r.conf", err, errlen);
}

static void assert_addr(const union yip_sockaddr *a, const char *want)
{
	char s[YIP_ADDRSTRLEN];

	yip_sockaddr_format(a, s, sizeof(s));
	assert_string_equal(s, want);
}

static void defaults(void **state)
{
	struct rdv_conf c;
	struct rdv_config e;
	char err[256];

	(void)state;
	rdv_conf_default(&c);
	assert_addr(&c.listen, "0.0.0.0:7000");
	assert_int_equal(rdv_conf_alt_port(&c), 7001);
	assert_true(c.relay);
	assert_int_equal(c.relay_rate, 128ULL << 20);
	assert_int_equal(c.relay_burst, 8ULL << 20);
	assert_int_equal(c.max_nodes, 100000);
	/* Without a key file the settings are not complete. */
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no key file"));
	rdv_config_default(&e);
	e.relay = false;
	rdv_conf_engine(&c, &e);
	assert_true(e.relay);
	assert_int_equal(e.alt_port, 7001);
	assert_int_equal(e.init_rate, 20); /* not ours to change */
}

static void every_key(void **state)
{
	struct rdv_conf c;
	char err[256];

	(void)state;
	assert_int_equal(parse(&c,
	                       "# a rendezvous server\n"
	                       "listen = [::]:9000\n"
	                       "alt_port=9100   # the second port\n"
	                       "key=/etc/yip/rendezvous.key\n"
	                       "\n"
	                       "relay=off\r\n"
	                       "relay_rate=10M\n"
	                       "relay_burst=1g\n"
	                       "max_nodes=5000\n"
	                       "user=yip-rdv\n"
	                       "sandbox=log\n",
	                       err, sizeof(err)),
	                 0);
	assert_addr(&c.listen, "[::]:9000");
	assert_int_equal(rdv_conf_alt_port(&c), 9100);
	assert_string_equal(c.key_file, "/etc/yip/rendezvous.key");
	assert_false(c.relay);
	assert_int_equal(c.relay_rate, 10ULL << 20);
	assert_int_equal(c.relay_burst, 1ULL << 30);
	assert_int_equal(c.max_nodes, 5000);
	assert_int_equal(c.line[RDV_CONF_MAX_NODES], 9);
	assert_string_equal(c.user, "yip-rdv");
	assert_int_equal(c.sandbox, YIP_SANDBOX_LOG);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);
}

/* ca and network make a members-only server; each needs the other, and
 * revocations needs both. */
static void members_only(void **state)
{
	struct rdv_conf c;
	char err[256];

	(void)state;
	assert_int_equal(parse(&c,
	                       "key = k\nca = " ALICE_PUB "\nnetwork = lab-1\n"
	                       "revocations = /etc/yip/revoked.txt\n",
	                       err, sizeof(err)),
	                 0);
	assert_true(c.has_ca);
	assert_int_equal(c.ca[0], 0x85);
	assert_string_equal(c.network, "lab-1");
	assert_string_equal(c.revocations_file, "/etc/yip/revoked.txt");
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);

	assert_int_equal(parse(&c, "key = k\nca = " ALICE_PUB "\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ca is set but network is not"));
	assert_int_equal(parse(&c, "key = k\nnetwork = lab\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "network is set but ca is not"));
	assert_int_equal(parse(&c, "key = k\nrevocations = r\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "revocations needs ca and network"));

	assert_int_equal(parse(&c, "ca = 1234\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "r.conf:1:"));
	assert_non_null(strstr(err, "CA's public key"));
	assert_int_equal(parse(&c, "network = Not Valid\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "network name"));
}

static void bytes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(rdv_conf_bytes("0", 100, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(rdv_conf_bytes("64K", UINT64_MAX, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(rdv_conf_bytes("3m", UINT64_MAX, &v), 0);
	assert_int_equal(v, 3ULL << 20);
	assert_int_equal(rdv_conf_bytes("16G", RDV_CONF_MAX_RATE, &v), 0);
	assert_int_equal(v, RDV_CONF_MAX_RATE);
	assert_int_equal(rdv_conf_bytes("17G", RDV_CONF_MAX_RATE, &v), -1);
	assert_int_equal(rdv_conf_bytes("9999999999999999999", UINT64_MAX, &v), 0);
	assert_int_equal(v, 9999999999999999999ULL);
	assert_int_equal(rdv_conf_bytes("9999999999999999999K", UINT64_MAX, &v), -1);
	assert_int_equal(rdv_conf_bytes("18446744073709551615", UINT64_MAX, &v),
	                 -1); /* 20 digits */
	for (const char *const *s =
	         (const char *const[]){"", "K", "-1", "1.5M", "1MB", " 1", "1T", "0x10", NULL};
	     *s != NULL; s++)
		assert_int_equal(rdv_conf_bytes(*s, UINT64_MAX, &v), -1);
}

static void obf_psk(void **state)
{
	struct rdv_conf c;
	struct rdv_config e;
	char err[256];

	(void)state;
	rdv_conf_default(&c);
	assert_false(c.obf);
	assert_int_equal(parse(&c,
	                       "key=k\nobf_psk=000102030405060708090a0b0c0d0e0f"
	                       "101112131415161718191a1b1c1d1e1f\n",
	                       err, sizeof(err)),
	                 0);
	assert_true(c.obf);
	assert_int_equal(c.obf_psk[31], 0x1f);
	memset(&e, 0, sizeof(e));
	rdv_conf_engine(&c, &e);
	assert_true(e.obf);
	assert_memory_equal(e.obf_psk, c.obf_psk, 32);
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_OBF_PSK, "00", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "64 hex digits"));
	assert_int_equal(
	    rdv_conf_set(&c, RDV_CONF_OBF_PSK,
	                 "0000000000000000000000000000000000000000000000000000000000000000", err,
	                 sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "all zeros"));
}

/* The second port: the next one by default, none with 0, never the listen port. */
static void alt_port(void **state)
{
	struct rdv_conf c;
	char err[256];

	(void)state;
	assert_int_equal(parse(&c, "listen=127.0.0.1:65535\nkey=k\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "set alt_port"));
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_ALT_PORT, "0", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_alt_port(&c), 0);
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_ALT_PORT, "65535", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_string_equal(err, "alt_port 65535 is the listen port; it must be another");
}

/* What the command line does: set on top of a file, the last word wins. */
static void set_over_file(void **state)
{
	struct rdv_conf c;
	char err[256];

	(void)state;
	assert_int_equal(parse(&c, "relay=off\nmax_nodes=7\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_RELAY, "on", err, sizeof(err)), 0);
	assert_true(c.relay);
	assert_int_equal(c.max_nodes, 7);
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_RELAY, "yes", err, sizeof(err)), -1);
	assert_string_equal(err, "expected 'on' or 'off', got 'yes'");
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_SANDBOX, "maybe", err, sizeof(err)), -1);
	assert_string_equal(err, "expected 'on', 'log' or 'off', got 'maybe'");
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_USER, "../x", err, sizeof(err)), -1);
	assert_int_equal(rdv_conf_key("relay_burst"), RDV_CONF_RELAY_BURST);
	assert_int_equal(rdv_conf_key("relay-burst"), -1);
}

static void broken_files(void **state)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
	    {"listen=1.2.3.4\n", "r.conf:1: listen: "},
	    {"listen=1.2.3.4:0\n", "r.conf:1: listen: bad port '0'"},
	    {"listen=host.example:7000\n", "r.conf:1: listen: "},
	    {"\n\nrelay=maybe\n", "r.conf:3: relay: expected 'on' or 'off', got 'maybe'"},
	    {"relay_rate=0\n", "r.conf:1: relay_rate: bytes per second must be at least 1"},
	    {"relay_rate=20G\n", "r.conf:1: relay_rate: expected bytes per second: digits with an "
	                         "optional K, M or G (at most 16G), got '20G'"},
	    {"relay_burst=1000\n", "r.conf:1: relay_burst: bytes must be at least 65536"},
	    {"max_nodes=0\n", "r.conf:1: max_nodes: expected a number from 1 to 10000000, got '0'"},
	    {"alt_port=70000\n", "r.conf:1: alt_port: expected a port number (0 for none), got "
	                         "'70000'"},
	    {"relay=on\nrelay=off\n", "r.conf:2: duplicate key 'relay' (first set on line 1)"},
	    {"relay\n", "r.conf:1: expected key=value, but the line has no '='"},
	    {"=on\n", "r.conf:1: missing key before '='"},
	    {"relay=\n", "r.conf:1: empty value for 'relay'"},
	    {"Relay=on\n", "r.conf:1: unknown key 'Relay' (the keys are listen, alt_port, key, "
	                   "relay, relay_rate, relay_burst, max_nodes, obf_psk, user, sandbox, "
	                   "ca, network, revocations, listen_tcp, tls_cert, tls_key, decoy, "
	                   "listen_quic, reality_dest, reality_private_key, reality_short_id, "
	                   "reality_server_name)"},
	    {"relay=on#x\n", "r.conf:1: relay: expected 'on' or 'off', got 'on#x'"},
	    {"relay=on\nmax_nodes=\x01\n",
	     "r.conf:2: max_nodes: expected a number from 1 to 10000000, got '?'"},
	};
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rdv_conf c;

		assert_int_equal(parse(&c, cases[i].text, err, sizeof(err)), -1);
		if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
			fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err, cases[i].err);
	}
}

/* The unknown-key message lists every key of RDV_CONF_KEYS, in order, and
 * nothing else. */
static void unknown_key_lists_every_key(void **state)
{
	static const char *const keys[] = {
#define X(name, str) str,
	    RDV_CONF_KEYS(X)
#undef X
	};
	const char *prefix = "r.conf:1: unknown key 'nope' (the keys are ";
	struct rdv_conf c;
	char err[512], *p, *end;
	size_t n = 0;

	(void)state;
	assert_int_equal(parse(&c, "nope=1\n", err, sizeof(err)), -1);
	assert_int_equal(strncmp(err, prefix, strlen(prefix)), 0);
	p = err + strlen(prefix);
	end = strrchr(p, ')');
	assert_non_null(end);
	assert_string_equal(end, ")");
	*end = '\0';
	for (char *k = strtok(p, ","); k != NULL; k = strtok(NULL, ",")) {
		if (n > 0) {
			assert_int_equal(k[0], ' ');
			k++;
		}
		assert_true(n < RDV_CONF_COUNT);
		assert_string_equal(k, keys[n]);
		assert_int_equal(rdv_conf_key(k), (int)n);
		n++;
	}
	assert_int_equal(n, RDV_CONF_COUNT);
}

static void long_and_nul_lines(void **state)
{
	static char text[LINES_MAX + 2];
	struct rdv_conf c;
	char err[256];

	(void)state;
	memset(text, 'a', sizeof(text) - 1);
	assert_int_equal(parse(&c, text, err, sizeof(err)), -1);
	assert_string_equal(err, "r.conf:1: line is longer than 4096 characters");
	rdv_conf_default(&c);
	assert_int_equal(rdv_conf_parse(&c, "relay=on\nx\0y=1\n", 15, "r.conf", err, sizeof(err)),
	                 -1);
	assert_string_equal(err, "r.conf:2: line contains a NUL byte");
}

static void keyfile(void **state)
{
	uint8_t priv[YIP_KEY_LEN];
	char err[256], hex[2 * YIP_KEY_LEN + 1];
	const char *good = "private=" ALICE_PRIV "\npublic=" ALICE_PUB "\n";

	(void)state;
	assert_int_equal(rdv_keyfile_parse(good, strlen(good), "k", priv, err, sizeof(err)), 0);
	yip_hex_encode(hex, priv, YIP_KEY_LEN);
	assert_string_equal(hex, ALICE_PRIV);
	/* private= alone is enough; comments and blank lines are fine */
	good = "# made by --genkey\n\n  private = " ALICE_PRIV "  \n";
	assert_int_equal(rdv_keyfile_parse(good, strlen(good), "k", priv, err, sizeof(err)), 0);
}

static void broken_keyfiles(void **state)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
	    {"", "k: no private= line (make a key file with yip-rendezvous --genkey)"},
	    {"public=" ALICE_PUB "\n", "k: no private= line"},
	    {"private=" ALICE_PRIV "\npublic=" BOB_PUB "\n", "k:2: public does not match private"},
	    {"private=" ALICE_PRIV "\nprivate=" ALICE_PRIV "\n",
	     "k:2: duplicate private= (first on line 1)"},
	    {"private=abc\n", "k:1: private: expected 64 hex digits, got 3"},
	    {"private=" ALICE_PUB "zz\n", "k:1: private: expected 64 hex digits, got 66"},
	    {"private=7707g d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a\n",
	     "k:1: private: expected 64 hex digits"},
	    {"private=x707" ALICE_PRIV "\n", "k:1: private: expected 64 hex digits"},
	    {"private=g7076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a\n",
	     "k:1: private: character 1 is not a hex digit"},
	    {"private=0000000000000000000000000000000000000000000000000000000000000000\n",
	     "k:1: private is all zeros"},
	    {ALICE_PRIV "\n", "k:1: expected key=value, but the line has no '='"},
	    {"local_private=" ALICE_PRIV "\n", "k:1: unknown key 'local_private'"},
	};
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t priv[YIP_KEY_LEN];

		assert_int_equal(rdv_keyfile_parse(cases[i].text, strlen(cases[i].text), "k", priv,
		                                   err, sizeof(err)),
		                 -1);
		if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
			fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err, cases[i].err);
		/* The message never repeats the key. */
		assert_null(strstr(err, "7076d0a7"));
	}
}

/* The TLS front: listen_tcp needs tls_cert and tls_key; the front's other
 * settings need listen_tcp; a decoy is HOST:PORT. */
static void tls_front(void **state)
{
	struct rdv_conf c;
	char err[384];

	(void)state;
	assert_int_equal(parse(&c,
	                       "key=/k\nlisten_tcp=0.0.0.0:443\ntls_cert=/c.pem\ntls_key=/k.pem\n"
	                       "decoy=localhost:8080\n",
	                       err, sizeof(err)),
	                 0);
	assert_true(c.has_tcp);
	assert_addr(&c.listen_tcp, "0.0.0.0:443");
	assert_string_equal(c.tls_cert, "/c.pem");
	assert_string_equal(c.tls_key, "/k.pem");
	assert_string_equal(c.decoy, "localhost:8080");
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);
	assert_int_equal(
	    parse(&c, "key=/k\nlisten_tcp=0.0.0.0:443\ntls_cert=/c.pem\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "listen_tcp needs tls_cert and tls_key"));
	assert_int_equal(parse(&c, "key=/k\ndecoy=127.0.0.1:80\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "they need listen_tcp"));
	assert_int_equal(parse(&c, "decoy=127.0.0.1\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "r.conf:1: decoy: expected HOST:PORT"));
	assert_int_equal(parse(&c, "decoy=:80\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "decoy=web:0\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "listen_tcp=nowhere\n", err, sizeof(err)), -1);
}

/* The REALITY front: its four settings, the two lists repeatable, and what
 * goes with what. */
static void reality_front(void **state)
{
	static const char base[] =
	    "key=/k\nlisten_tcp=0.0.0.0:443\nreality_dest=www.example.com:443\n"
	    "reality_private_key=/r.key\n";
	struct rdv_conf c;
	char err[384], text[1024];

	(void)state;
	/* The empty short id: a line with nothing after '=' is refused, so it
	 * is given on the command line only (below). */
	snprintf(text, sizeof(text),
	         "%sreality_short_id=abcd\nreality_short_id=0123456789abcdef\n"
	         "reality_server_name=www.example.com\nreality_server_name=Example.ORG\n",
	         base);
	assert_int_equal(parse(&c, text, err, sizeof(err)), 0);
	assert_string_equal(c.reality_dest, "www.example.com:443");
	assert_string_equal(c.reality_key_file, "/r.key");
	assert_int_equal(c.n_reality_ids, 2);
	assert_int_equal(c.reality_ids[0][0], 0xab);
	assert_int_equal(c.reality_ids[0][2], 0);
	assert_int_equal(c.reality_ids[1][7], 0xef);
	assert_int_equal(c.n_reality_names, 2);
	assert_string_equal(c.reality_names[1], "Example.ORG");
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_REALITY_SHORT_ID, "", err, sizeof(err)), 0);
	assert_int_equal(c.n_reality_ids, 3);
	assert_int_equal(rdv_conf_set(&c, RDV_CONF_REALITY_SHORT_ID, "abcd", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "given twice"));
	/* Something missing. */
	assert_int_equal(parse(&c, base, err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at least one reality_short_id"));
	snprintf(text, sizeof(text), "key=/k\nreality_dest=a:443\n");
	assert_int_equal(parse(&c, text, err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "they need listen_tcp"));
	/* With the TLS front's settings. */
	snprintf(text, sizeof(text),
	         "%sreality_short_id=ab\nreality_server_name=a.example\ndecoy=127.0.0.1:80\n",
	         base);
	assert_int_equal(parse(&c, text, err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "decoy is the TLS front's"));
	snprintf(text, sizeof(text),
	         "%sreality_short_id=ab\nreality_server_name=a.example\ntls_cert=/c\ntls_key=/k\n",
	         base);
	assert_int_equal(parse(&c, text, err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the REALITY front shows"));
	/* Bad values. */
	assert_int_equal(parse(&c, "reality_short_id=abc\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "reality_short_id=0123456789abcdef01\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "reality_short_id=zz\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "reality_server_name=a..b\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "reality_server_name=a b\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "reality_server_name=.a\n", err, sizeof(err)), -1);
	assert_int_equal(parse(&c, "reality_dest=nowhere\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "expected HOST:PORT"));
	/* A setting not in the lists is still once only. */
	assert_int_equal(parse(&c, "reality_dest=a:1\nreality_dest=b:1\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "duplicate key"));
}

/* The QUIC listener: tls_cert and tls_key if given (both), else self-signed. */
static void quic_listener(void **state)
{
	struct rdv_conf c;
	char err[384];

	(void)state;
	assert_int_equal(parse(&c, "key=/k\nlisten_quic=0.0.0.0:443\n", err, sizeof(err)), 0);
	assert_true(c.has_quic);
	assert_addr(&c.listen_quic, "0.0.0.0:443");
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);
	assert_int_equal(parse(&c,
	                       "key=/k\nlisten_quic=[::]:443\ntls_cert=/c.pem\ntls_key=/k.pem\n",
	                       err, sizeof(err)),
	                 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), 0);
	assert_int_equal(
	    parse(&c, "key=/k\nlisten_quic=0.0.0.0:443\ntls_key=/k.pem\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "tls_cert and tls_key go together"));
	assert_int_equal(parse(&c, "key=/k\ntls_cert=/c.pem\ntls_key=/k.pem\n", err, sizeof(err)),
	                 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "they need listen_tcp or listen_quic"));
	assert_int_equal(parse(&c, "key=/k\nlisten_quic=0.0.0.0:7000\n", err, sizeof(err)), 0);
	assert_int_equal(rdv_conf_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "listen_quic is the listen address"));
	assert_int_equal(parse(&c, "listen_quic=nowhere\n", err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(defaults),
	    cmocka_unit_test(every_key),
	    cmocka_unit_test(quic_listener),
	    cmocka_unit_test(members_only),
	    cmocka_unit_test(bytes),
	    cmocka_unit_test(alt_port),
	    cmocka_unit_test(obf_psk),
	    cmocka_unit_test(set_over_file),
	    cmocka_unit_test(broken_files),
	    cmocka_unit_test(long_and_nul_lines),
	    cmocka_unit_test(keyfile),
	    cmocka_unit_test(broken_keyfiles),
	    cmocka_unit_test(unknown_key_lists_every_key),
	    cmocka_unit_test(tls_front),
	    cmocka_unit_test(reality_front),
	};

	yip_crypto_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
