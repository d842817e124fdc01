/*
 * Unit tests for the configuration parser: good files, and a table of broken
 * files with the exact "name:line: message" each must produce.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "util/hex.h"

/* X25519 key pairs from RFC 7748, section 6.1. */
#define ALICE_PRIV "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
#define ALICE_PUB  "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
#define BOB_PRIV   "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
#define BOB_PUB    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
#define CAROL_PUB  "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
#define DAVE_PUB   "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0"
#define EVE_PUB    "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0"
#define ZERO_KEY   "0000000000000000000000000000000000000000000000000000000000000000"

#define PRIV_LINE "local_private=" ALICE_PRIV "\n"

static int parse(const char *text, bool resolve, struct yip_config *cfg, char *err, size_t errlen)
{
	return yip_config_parse(text, strlen(text), "t.conf", resolve, cfg, err, errlen);
}

static void assert_key(const uint8_t key[YIP_KEY_LEN], const char *hex)
{
	char text[2 * YIP_KEY_LEN + 1];

	yip_hex_encode(text, key, YIP_KEY_LEN);
	assert_string_equal(text, hex);
}

static void assert_cidr(const struct yip_cidr *c, const char *want)
{
	char text[YIP_ADDRSTRLEN];

	yip_cidr_format(c, text, sizeof(text));
	assert_string_equal(text, want);
}

static void assert_sockaddr(const union yip_sockaddr *a, const char *want)
{
	char text[YIP_ADDRSTRLEN];

	yip_sockaddr_format(a, text, sizeof(text));
	assert_string_equal(text, want);
}

static void test_minimal(void **state)
{
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (parse(PRIV_LINE, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_key(cfg.private_key, ALICE_PRIV);
	assert_key(cfg.public_key, ALICE_PUB);
	assert_int_equal(cfg.listen.sa.sa_family, AF_UNSPEC);
	assert_false(cfg.listen_port_given);
	assert_string_equal(cfg.device, YIP_DEFAULT_DEVICE);
	assert_int_equal(cfg.device_kind, YIP_DEVICE_TUN);
	assert_int_equal(cfg.mtu, 0); /* auto */
	assert_false(cfg.offload_off);
	assert_int_equal(cfg.ciphers, 0); /* auto */
	assert_int_equal(cfg.io, YIP_IO_EPOLL);
	assert_int_equal(cfg.workers, 0); /* auto */
	assert_int_equal(cfg.n_addresses, 0);
	assert_int_equal(cfg.n_peers, 0);
	yip_config_free(&cfg);
	/* The key is wiped and a second free does nothing. */
	assert_int_equal(cfg.private_key[0] | cfg.private_key[31], 0);
	assert_null(cfg.peers);
	yip_config_free(&cfg);
}

static const char full_config[] = "# Alice, two peers\n"
                                  "local_private=" ALICE_PRIV "\n"
                                  "local_public=" ALICE_PUB "\n"
                                  "listen=[::]:51820\n"
                                  "device=yip-test.1\n"
                                  "device_kind=tun\n"
                                  "address=10.9.0.1/24\n"
                                  "address=fd9e::1/64\n"
                                  "address=10.10.0.1\n"
                                  "mtu=1380\n"
                                  "offload=off\n"
                                  "cipher=chacha20-poly1305\n"
                                  "io=uring-busy\n"
                                  "workers=3\n"
                                  "\n"
                                  "[peer]\n"
                                  "public_key=" BOB_PUB "\n"
                                  "endpoint=192.0.2.7:51820\n"
                                  "allowed_ips=10.9.0.2/32, 192.168.50.0/24\n"
                                  "allowed_ips=2001:db8:1::/48\n"
                                  "persistent_keepalive=25\n"
                                  "\n"
                                  "[peer]\n"
                                  "public_key=" CAROL_PUB "\n"
                                  "endpoint=[2001:db8::7]:443\n"
                                  "allowed_ips=10.9.0.3\n"
                                  "persistent_keepalive=off\n";

static void test_full(void **state)
{
	struct yip_config cfg;
	const struct yip_peer_config *bob, *carol;
	char err[256];

	(void)state;
	if (parse(full_config, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_key(cfg.public_key, ALICE_PUB);
	assert_sockaddr(&cfg.listen, "[::]:51820");
	assert_true(cfg.listen_port_given);
	assert_string_equal(cfg.device, "yip-test.1");
	assert_int_equal(cfg.mtu, 1380);
	assert_true(cfg.offload_off);
	assert_int_equal(cfg.ciphers, YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305));
	assert_int_equal(cfg.io, YIP_IO_URING_BUSY);
	assert_int_equal(cfg.workers, 3);
	assert_int_equal(cfg.n_addresses, 3);
	/* Interface addresses keep their host bits. */
	assert_cidr(&cfg.addresses[0], "10.9.0.1/24");
	assert_cidr(&cfg.addresses[1], "fd9e::1/64");
	assert_cidr(&cfg.addresses[2], "10.10.0.1/32");

	assert_int_equal(cfg.n_peers, 2);
	bob = &cfg.peers[0];
	carol = &cfg.peers[1];
	assert_key(bob->public_key, BOB_PUB);
	assert_int_equal(bob->line, 16);
	assert_true(bob->has_endpoint);
	assert_sockaddr(&bob->endpoint, "192.0.2.7:51820");
	assert_int_equal(bob->n_allowed_ips, 3);
	assert_cidr(&bob->allowed_ips[0], "10.9.0.2/32");
	assert_cidr(&bob->allowed_ips[1], "192.168.50.0/24");
	assert_cidr(&bob->allowed_ips[2], "2001:db8:1::/48");
	assert_int_equal(bob->persistent_keepalive, 25);

	assert_key(carol->public_key, CAROL_PUB);
	assert_int_equal(carol->line, 23);
	assert_sockaddr(&carol->endpoint, "[2001:db8::7]:443");
	assert_int_equal(carol->n_allowed_ips, 1);
	assert_cidr(&carol->allowed_ips[0], "10.9.0.3/32");
	assert_int_equal(carol->persistent_keepalive, 0);
	yip_config_free(&cfg);
}

/* Comments, blank lines, odd spacing, CRLF line ends and a byte order mark. */
static void test_whitespace_and_comments(void **state)
{
	static const char text[] = "\xef\xbb\xbf# leading comment\r\n"
	                           "\r\n"
	                           "   # indented comment\n"
	                           "\t local_private \t=\t " ALICE_PRIV " \t# trailing comment\r\n"
	                           "listen = 0.0.0.0\n"
	                           "mtu=1280#1\n"; /* "#" after a non-space is kept */
	static const char text_ok[] =
	    "\xef\xbb\xbf# leading comment\r\n"
	    "\r\n"
	    "   # indented comment\n"
	    "\t local_private \t=\t " ALICE_PRIV " \t# trailing comment\r\n"
	    "listen = 0.0.0.0\n"
	    "  [peer]   # Bob\n"
	    "public_key =" BOB_PUB "\n"
	    "allowed_ips = 10.0.0.0/8 ,fd00:1::/32,\t192.0.2.1 # several\n"
	    "\n"
	    "persistent_keepalive\t=  0"; /* no final newline */
	struct yip_config cfg;
	char err[256];

	(void)state;
	assert_int_equal(parse(text, false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:6: mtu '1280#1': expected a number or 'auto'");

	if (parse(text_ok, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_key(cfg.public_key, ALICE_PUB);
	assert_sockaddr(&cfg.listen, "0.0.0.0:443");
	assert_false(cfg.listen_port_given);
	assert_int_equal(cfg.n_peers, 1);
	assert_int_equal(cfg.peers[0].line, 6);
	assert_int_equal(cfg.peers[0].n_allowed_ips, 3);
	assert_cidr(&cfg.peers[0].allowed_ips[1], "fd00:1::/32");
	assert_cidr(&cfg.peers[0].allowed_ips[2], "192.0.2.1/32");
	assert_false(cfg.peers[0].has_endpoint);
	yip_config_free(&cfg);
}

static void test_listen_variants(void **state)
{
	static const struct {
		const char *value, *want;
		bool port_given;
	} cases[] = {
	    {"192.0.2.1:9000", "192.0.2.1:9000", true},
	    {"192.0.2.1", "192.0.2.1:443", false},
	    {"[2001:db8::1]:9000", "[2001:db8::1]:9000", true},
	    {"[2001:db8::1]", "[2001:db8::1]:443", false},
	    {"::", "[::]:443", false},
	};
	struct yip_config cfg;
	char text[256], err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), PRIV_LINE "listen=%s\n", cases[i].value);
		if (parse(text, false, &cfg, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].value, err);
		assert_sockaddr(&cfg.listen, cases[i].want);
		assert_int_equal(cfg.listen_port_given, cases[i].port_given);
		yip_config_free(&cfg);
	}
}

static void test_hostname_endpoint(void **state)
{
	static const char text[] = PRIV_LINE "[peer]\n"
	                                     "public_key=" BOB_PUB "\n"
	                                     "endpoint=localhost:51820\n";
	struct yip_config cfg;
	char err[256], out[YIP_ADDRSTRLEN];

	(void)state;
	if (parse(text, true, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(cfg.peers[0].has_endpoint);
	yip_sockaddr_format(&cfg.peers[0].endpoint, out, sizeof(out));
	if (strcmp(out, "127.0.0.1:51820") != 0 && strcmp(out, "[::1]:51820") != 0)
		fail_msg("localhost resolved to %s", out);
	yip_config_free(&cfg);

	/* Without resolving (as the fuzzer runs) a host name is an error. */
	assert_int_equal(parse(text, false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:4: endpoint: 'localhost' is not an IP address "
	                         "(host names are not allowed here)");
}

struct bad_case {
	const char *text;
	size_t len; /* 0: strlen(text) */
	const char *err;
};

static const struct bad_case bad_cases[] = {
    {PRIV_LINE "mtu 1400\n", 0, "t.conf:2: expected key=value, but the line has no '='"},
    {PRIV_LINE " = 1400\n", 0, "t.conf:2: missing key before '='"},
    {PRIV_LINE "mtu=\n", 0, "t.conf:2: empty value for 'mtu'"},
    {PRIV_LINE "mtu =   # nothing\n", 0, "t.conf:2: empty value for 'mtu'"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nendpiont=192.0.2.1:1\n", 0,
     "t.conf:4: unknown key 'endpiont' (did you mean 'endpoint'?)"},
    {PRIV_LINE "MTU=1400\n", 0, "t.conf:2: unknown key 'MTU' (did you mean 'mtu'?)"},
    {PRIV_LINE "[peer]\nAllowedIPs=10.0.0.0/8\n", 0,
     "t.conf:3: unknown key 'AllowedIPs' (did you mean 'allowed_ips'?)"},
    {PRIV_LINE "colour=blue\n", 0, "t.conf:2: unknown key 'colour'"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nmtu=1400\n", 0,
     "t.conf:4: 'mtu' is an interface key and must come before the first [peer] block"},
    {"[peer]\nlocal_private=" ALICE_PRIV "\n", 0, "t.conf:2: 'local_private' is an interface key"},
    {PRIV_LINE "public_key=" BOB_PUB "\n", 0, "t.conf:2: 'public_key' belongs in a [peer] block"},
    {PRIV_LINE "endpoint=192.0.2.1:1\n", 0, "t.conf:2: 'endpoint' belongs in a [peer] block"},
    {PRIV_LINE "mtu=1400\n\nmtu=1500\n", 0, "t.conf:4: duplicate key 'mtu' (first set on line 2)"},
    {PRIV_LINE PRIV_LINE, 0, "t.conf:2: duplicate key 'local_private' (first set on line 1)"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nendpoint=192.0.2.1:1\nendpoint=192.0.2.1:2\n", 0,
     "t.conf:5: duplicate key 'endpoint' (first set on line 4)"},
    {"local_private=abcd\n", 0, "t.conf:1: local_private: expected 64 hex digits, got 4"},
    {"local_private=" ALICE_PRIV "00\n", 0,
     "t.conf:1: local_private: expected 64 hex digits, got 66"},
    {"local_private=" ALICE_PRIV "#x\n", 0,
     "t.conf:1: local_private: expected 64 hex digits, got 66"},
    {"local_private=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2g\n", 0,
     "t.conf:1: local_private: character 64 is not a hex digit"},
    {"local_private=" ZERO_KEY "\n", 0, "t.conf:1: local_private is all zeros"},
    {PRIV_LINE "[peer]\npublic_key=" ZERO_KEY "\n", 0, "t.conf:3: public_key is all zeros"},
    {PRIV_LINE "[peer]\npublic_key=xyz\n", 0,
     "t.conf:3: public_key: expected 64 hex digits, got 3"},
    {PRIV_LINE "local_public=" BOB_PUB "\n", 0,
     "t.conf:2: local_public does not match local_private"},
    {PRIV_LINE "address=10.0.0.0/33\n", 0, "t.conf:2: address: prefix length 33 > 32"},
    {PRIV_LINE "address=10.0.0.300/24\n", 0,
     "t.conf:2: address: '10.0.0.300' is not an IPv4 or IPv6 address"},
    {PRIV_LINE "address=10.0.0.1/\n", 0, "t.conf:2: address: missing prefix length after '/'"},
    {PRIV_LINE "address=fd00::1/0064\n", 0, "t.conf:2: address: bad prefix length '0064'"},
    {PRIV_LINE "address=fd00::1/129\n", 0, "t.conf:2: address: prefix length 129 > 128"},
    {PRIV_LINE "address=10.0.0.1/24\naddress=10.0.0.1/16\n", 0,
     "t.conf:3: address '10.0.0.1/16' is listed twice"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nallowed_ips=10.0.0.1/24\n", 0,
     "t.conf:4: allowed_ips: host bits set in '10.0.0.1/24' (did you mean 10.0.0.0/24?)"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nallowed_ips=10.0.0.0/8,,10.1.0.0/16\n", 0,
     "t.conf:4: allowed_ips: empty entry in the list"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nallowed_ips=fd00::/129\n", 0,
     "t.conf:4: allowed_ips: prefix length 129 > 128"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nendpoint=192.0.2.1\n", 0,
     "t.conf:4: endpoint: missing port in '192.0.2.1'"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nendpoint=192.0.2.1:70000\n", 0,
     "t.conf:4: endpoint: bad port '70000' (expected a number from 1 to 65535)"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nendpoint=2001:db8::1\n", 0,
     "t.conf:4: endpoint: missing port in '2001:db8::1' (write IPv6 as [address]:port)"},
    {PRIV_LINE "listen=example.com:443\n", 0,
     "t.conf:2: listen: 'example.com' is not an IP address (host names are not allowed here)"},
    {PRIV_LINE "listen=192.0.2.1:0\n", 0, "t.conf:2: listen: bad port '0'"},
    {PRIV_LINE "mtu=1000\n", 0, "t.conf:2: mtu 1000 is out of range (1280..9000)"},
    {PRIV_LINE "mtu=9001\n", 0, "t.conf:2: mtu 9001 is out of range (1280..9000)"},
    {PRIV_LINE "mtu=-1\n", 0, "t.conf:2: mtu '-1': expected a number or 'auto'"},
    {PRIV_LINE "offload=yes\n", 0, "t.conf:2: offload 'yes': expected 'on' or 'off'"},
    {PRIV_LINE "cipher=aes\n", 0,
     "t.conf:2: cipher 'aes': expected 'auto', 'chacha20-poly1305' or 'aes-256-gcm'"},
    {PRIV_LINE "io=poll\n", 0, "t.conf:2: io 'poll': expected 'epoll', 'uring' or 'uring-busy'"},
    {PRIV_LINE "workers=0\n", 0, "t.conf:2: workers '0': expected 1 to 16, or 'auto'"},
    {PRIV_LINE "workers=17\n", 0, "t.conf:2: workers '17': expected 1 to 16, or 'auto'"},
    {PRIV_LINE "device=averyveryverylongname\n", 0,
     "t.conf:2: device name 'averyveryverylongname' is too long (at most 15 characters)"},
    {PRIV_LINE "device=yip/0\n", 0,
     "t.conf:2: device name 'yip/0' may only contain letters, digits"},
    {PRIV_LINE "device_kind=tup\n", 0,
     "t.conf:2: device_kind 'tup' is not valid (valid values: tun, tap)"},
    {PRIV_LINE "device_kind=tunnel\n", 0,
     "t.conf:2: device_kind 'tunnel' is not valid (valid values: tun, tap)"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\npersistent_keepalive=65536\n", 0,
     "t.conf:4: persistent_keepalive '65536': expected seconds from 0 to 65535, or 'off'"},
    {PRIV_LINE "[Interface]\n", 0, "t.conf:2: unknown section '[Interface]'"},
    {PRIV_LINE "[Peer]\n", 0, "t.conf:2: unknown section '[Peer]' (did you mean '[peer]'?)"},
    {PRIV_LINE "[peers]\n", 0, "t.conf:2: unknown section '[peers]' (the only section is [peer])"},
    {"", 0, "t.conf: missing local_private"},
    {"# only a comment\nmtu=1400\n", 0, "t.conf: missing local_private"},
    {PRIV_LINE "[peer]\nendpoint=192.0.2.1:1\n[peer]\npublic_key=" BOB_PUB "\n", 0,
     "t.conf:2: [peer] block has no public_key"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\n[peer]\n\n", 0,
     "t.conf:4: [peer] block has no public_key"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\n[peer]\npublic_key=" BOB_PUB "\n", 0,
     "t.conf:4: peer public_key is the same as the [peer] on line 2"},
    {PRIV_LINE "[peer]\npublic_key=" ALICE_PUB "\n", 0,
     "t.conf:2: peer public_key is our own public key"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nallowed_ips=10.0.0.0/24\n"
               "[peer]\npublic_key=" CAROL_PUB "\nallowed_ips=10.1.0.0/16,10.0.0.0/24\n",
     0, "t.conf:5: allowed_ips 10.0.0.0/24 is also in the [peer] on line 2"},
    {PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nallowed_ips=fd00::/8\nallowed_ips=fd00::/8\n", 0,
     "t.conf:2: allowed_ips fd00::/8 is listed twice in this [peer]"},
    {PRIV_LINE "mtu=1400\0\n", sizeof(PRIV_LINE "mtu=1400\0\n") - 1,
     "t.conf:2: line contains a NUL byte"},
    {"\0", 1, "t.conf:1: line contains a NUL byte"},
    {PRIV_LINE "rendezvous=192.0.2.9:7000\n", 0,
     "t.conf:2: rendezvous has no rendezvous_key (the server's public key"},
    {PRIV_LINE "rendezvous=192.0.2.9:7000\nrendezvous=192.0.2.10:7000\n", 0,
     "t.conf:3: the rendezvous on line 2 has no rendezvous_key yet"},
    {PRIV_LINE "rendezvous_key=" BOB_PUB "\n", 0,
     "t.conf:2: rendezvous_key must follow the rendezvous= it belongs to"},
    {PRIV_LINE "rendezvous=192.0.2.9\nrendezvous_key=" BOB_PUB "\n", 0,
     "t.conf:2: rendezvous: missing port in '192.0.2.9'"},
    {PRIV_LINE "rendezvous=192.0.2.9:7000\nrendezvous_key=abc\n", 0,
     "t.conf:3: rendezvous_key: expected 64 hex digits, got 3"},
    {PRIV_LINE "rendezvous=192.0.2.9:7000\nrendezvous_key=" BOB_PUB "\nrendezvous_key=" BOB_PUB
               "\n",
     0, "t.conf:4: rendezvous_key must follow the rendezvous= it belongs to"},
    {PRIV_LINE "rendezvous=192.0.2.1:7\nrendezvous_key=" BOB_PUB "\n"
               "rendezvous=192.0.2.2:7\nrendezvous_key=" CAROL_PUB "\n"
               "rendezvous=192.0.2.3:7\nrendezvous_key=" DAVE_PUB "\n"
               "rendezvous=192.0.2.4:7\nrendezvous_key=" EVE_PUB "\n"
               "rendezvous=192.0.2.5:7\nrendezvous_key=" ALICE_PUB "\n",
     0,
     "t.conf:11: too many rendezvous servers (at most 4 distinct rendezvous_key; a server "
     "over udp, quic and tls counts once)"},
    {PRIV_LINE "nat_keepalive=0\n", 0,
     "t.conf:2: nat_keepalive '0': expected seconds from 1 to 3600, or 'off'"},
    {PRIV_LINE "relay=maybe\n", 0, "t.conf:2: relay 'maybe': expected 'on' or 'off'"},
    /* An endpoint the socket of listen= cannot send to. */
    {PRIV_LINE "listen=0.0.0.0:51820\n[peer]\npublic_key=" BOB_PUB
               "\n\nendpoint=[2001:db8::7]:51820\n",
     0,
     "t.conf:6: endpoint [2001:db8::7]:51820 is IPv6, but the socket of listen=0.0.0.0:51820 "
     "sends IPv4 only"},
    {PRIV_LINE "listen=[2001:db8::1]:51820\n[peer]\npublic_key=" BOB_PUB
               "\nendpoint=192.0.2.7:51820\n",
     0, "t.conf:5: endpoint 192.0.2.7:51820 is IPv4, but the socket of listen=[2001:db8::1]:51820"},
    {PRIV_LINE "rendezvous=[2001:db8::9]:7000\nrendezvous_key=" BOB_PUB
               "\nlisten=192.0.2.1:51820\n",
     0, "t.conf:2: rendezvous [2001:db8::9]:7000 is IPv6, but the socket of listen=192.0.2.1"},
    {PRIV_LINE "user=-root\n", 0, "t.conf:2: user: '-root' is not a user name"},
    {PRIV_LINE "user=a/b\n", 0, "t.conf:2: user: 'a/b' is not a user name"},
    {PRIV_LINE "user=abcdefghijklmnopqrstuvwxyzabcdefg\n", 0,
     "t.conf:2: user: a user name has 1 to 32 characters"},
    {PRIV_LINE "sandbox=yes\n", 0, "t.conf:2: sandbox 'yes': expected 'on', 'log' or 'off'"},
    {PRIV_LINE "log_format=xml\n", 0, "t.conf:2: log_format 'xml': expected 'text' or 'json'"},
    {PRIV_LINE "log_level=loud\n", 0,
     "t.conf:2: log_level 'loud': expected 'error', 'warn', 'info' or 'debug'"},
};

/* The families that do reach: dual-stack listen, mapped addresses, same family. */
static void test_listen_families(void **state)
{
	static const struct {
		const char *listen, *endpoint;
	} ok[] = {
	    {"", "[2001:db8::7]:1"},
	    {"", "192.0.2.7:1"},
	    {"listen=[::]:51820\n", "192.0.2.7:1"},
	    {"listen=[::]:51820\n", "[2001:db8::7]:1"},
	    {"listen=0.0.0.0:51820\n", "[::ffff:192.0.2.7]:1"},
	    {"listen=[::ffff:192.0.2.1]:51820\n", "192.0.2.7:1"},
	    {"listen=[2001:db8::1]:51820\n", "[2001:db8::7]:1"},
	};
	struct yip_config cfg;
	char text[512], err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(text, sizeof(text),
		         PRIV_LINE "%s[peer]\npublic_key=" BOB_PUB "\nendpoint=%s\n", ok[i].listen,
		         ok[i].endpoint);
		if (yip_config_parse(text, strlen(text), "t.conf", false, &cfg, err, sizeof(err)) !=
		    0)
			fail_msg("case %zu: %s", i, err);
		yip_config_free(&cfg);
	}
}

/* user= and sandbox=: the defaults, and what is kept. */
static void test_user_and_sandbox(void **state)
{
	static const char text[] = PRIV_LINE "user=yip-daemon_1.x\nsandbox=log\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (yip_config_parse(PRIV_LINE, strlen(PRIV_LINE), "t.conf", false, &cfg, err,
	                     sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.sandbox, YIP_SANDBOX_ON);
	assert_string_equal(cfg.user, "");
	yip_config_free(&cfg);
	if (yip_config_parse(text, strlen(text), "t.conf", false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.sandbox, YIP_SANDBOX_LOG);
	assert_string_equal(cfg.user, "yip-daemon_1.x");
	yip_config_free(&cfg);
}

/* log_format= and log_level=: the defaults (text; level not set: info), and what is kept. */
static void test_log_keys(void **state)
{
	static const char text[] = PRIV_LINE "log_format=json\nlog_level=warn\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (yip_config_parse(PRIV_LINE, strlen(PRIV_LINE), "t.conf", false, &cfg, err,
	                     sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.log_format, YIP_LOG_TEXT);
	assert_false(cfg.log_level_set);
	yip_config_free(&cfg);
	if (yip_config_parse(text, strlen(text), "t.conf", false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.log_format, YIP_LOG_JSON);
	assert_true(cfg.log_level_set);
	assert_int_equal(cfg.log_level, YIP_LOG_WARN);
	yip_config_free(&cfg);
}

static void test_bad_configs(void **state)
{
	struct yip_config cfg;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *t = &bad_cases[i];
		size_t len = t->len != 0 ? t->len : strlen(t->text);

		memset(err, 0, sizeof(err));
		if (yip_config_parse(t->text, len, "t.conf", false, &cfg, err, sizeof(err)) != -1)
			fail_msg("case %zu was accepted; expected '%s'", i, t->err);
		if (strncmp(err, t->err, strlen(t->err)) != 0)
			fail_msg("case %zu: got '%s', expected '%s'", i, err, t->err);
		/* Everything was freed and wiped. */
		assert_null(cfg.peers);
		assert_null(cfg.addresses);
		assert_int_equal(cfg.private_key[0], 0);
	}
}

static void test_rendezvous(void **state)
{
	const char *text = PRIV_LINE "rendezvous=192.0.2.9:7000\nrendezvous_key=" BOB_PUB "\n"
	                             "rendezvous=[2001:db8::9]:7001\nrendezvous_key=" CAROL_PUB "\n"
	                             "nat_keepalive=15\nrelay=off\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.n_rendezvous, 2);
	assert_sockaddr(&cfg.rendezvous[0].addr, "192.0.2.9:7000");
	assert_key(cfg.rendezvous[0].public_key, BOB_PUB);
	assert_sockaddr(&cfg.rendezvous[1].addr, "[2001:db8::9]:7001");
	assert_key(cfg.rendezvous[1].public_key, CAROL_PUB);
	assert_int_equal(cfg.nat_keepalive, 15);
	assert_true(cfg.relay_off);
	yip_config_free(&cfg);
	/* Defaults */
	assert_int_equal(parse(PRIV_LINE, false, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.n_rendezvous, 0);
	assert_int_equal(cfg.nat_keepalive, YIP_DEFAULT_NAT_KEEPALIVE);
	assert_false(cfg.relay_off);
	yip_config_free(&cfg);
	assert_int_equal(parse(PRIV_LINE "nat_keepalive=off\n", false, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nat_keepalive, 0);
	yip_config_free(&cfg);
}

/* obf_psk and the two settings that need it. */
static void test_obf(void **state)
{
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (parse(PRIV_LINE "obf_psk=" BOB_PUB "\nobf_junk=4\nobf_cover_ms=500\n", false, &cfg, err,
	          sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(cfg.obf);
	assert_key(cfg.obf_psk, BOB_PUB);
	assert_int_equal(cfg.obf_junk, 4);
	assert_int_equal(cfg.obf_cover_ms, 500);
	yip_config_free(&cfg);
	assert_int_equal(parse(PRIV_LINE, false, &cfg, err, sizeof(err)), 0);
	assert_false(cfg.obf);
	assert_int_equal(cfg.obf_junk, 0);
	assert_int_equal(cfg.obf_cover_ms, 0);
	yip_config_free(&cfg);
	assert_int_equal(parse(PRIV_LINE "obf_psk=" ZERO_KEY "\n", false, &cfg, err, sizeof(err)),
	                 -1);
	assert_string_equal(err, "t.conf:2: obf_psk is all zeros");
	assert_int_equal(parse(PRIV_LINE "obf_psk=abcd\n", false, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "t.conf:2: "));
	assert_int_equal(parse(PRIV_LINE "obf_junk=3\n", false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:2: obf_junk needs obf_psk");
	assert_int_equal(parse(PRIV_LINE "obf_cover_ms=100\n", false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:2: obf_cover_ms needs obf_psk");
	assert_int_equal(
	    parse(PRIV_LINE "obf_psk=" BOB_PUB "\nobf_junk=17\n", false, &cfg, err, sizeof(err)),
	    -1);
	assert_string_equal(err, "t.conf:3: obf_junk '17': expected 0 to 16");
	assert_int_equal(
	    parse(PRIV_LINE "obf_psk=" BOB_PUB "\nobf_cover_ms=5\n", false, &cfg, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "t.conf:3: obf_cover_ms '5': expected milliseconds"));
	assert_int_equal(parse(PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\nobf_psk=" BOB_PUB "\n",
	                       false, &cfg, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "t.conf:4: "));
}

static void test_no_suggestion_for_distant_key(void **state)
{
	struct yip_config cfg;
	char err[256];

	(void)state;
	assert_int_equal(parse(PRIV_LINE "colour=blue\n", false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:2: unknown key 'colour'");
}

/* A growing text buffer for generated configurations. */
struct text {
	char *data;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3))) append(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->cap - t->len < 256) {
		t->cap = t->cap * 2 + 4096;
		t->data = realloc(t->data, t->cap);
		assert_non_null(t->data);
	}
	va_start(ap, fmt);
	n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < t->cap - t->len);
	t->len += (size_t)n;
}

static void expect_error(const char *text, const char *want)
{
	struct yip_config cfg;
	char err[256];

	assert_int_equal(parse(text, false, &cfg, err, sizeof(err)), -1);
	if (strcmp(err, want) != 0)
		fail_msg("got '%s', expected '%s'", err, want);
}

static void expect_ok(const char *text)
{
	struct yip_config cfg;
	char err[256];

	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	yip_config_free(&cfg);
}

static char *addresses(unsigned int n)
{
	struct text t = {NULL, 0, 0};
	unsigned int i;

	append(&t, PRIV_LINE);
	for (i = 0; i < n; i++)
		append(&t, "address=10.%u.%u.1/24\n", i >> 8, i & 0xff);
	return t.data;
}

static char *allowed_ips(unsigned int n)
{
	struct text t = {NULL, 0, 0};
	unsigned int i;

	append(&t, PRIV_LINE "[peer]\npublic_key=" BOB_PUB "\n");
	for (i = 0; i < n; i++)
		append(&t, "allowed_ips=10.%u.%u.0/24\n", i >> 8, i & 0xff);
	return t.data;
}

/* Each peer takes three lines, so peer i (from 0) starts on line 2 + 3i. */
static char *peers(unsigned int n)
{
	struct text t = {NULL, 0, 0};
	unsigned int i;

	append(&t, PRIV_LINE);
	for (i = 0; i < n; i++)
		append(&t, "[peer]\npublic_key=%060x%04x\nallowed_ips=10.%u.%u.0/24\n", 1U, i,
		       i >> 8, i & 0xff);
	return t.data;
}

#define PEER_BOB "[peer]\npublic_key=" BOB_PUB "\n"

/* endpoint=tls://, udp:// and their errors. */
static void test_tls_endpoint(void **state)
{
	static const char text[] =
	    PRIV_LINE "listen=0.0.0.0:51820\n" PEER_BOB "endpoint=tls://[2001:db8::7]:443\n"
	              "[peer]\npublic_key=" CAROL_PUB "\n"
	              "endpoint=udp://192.0.2.8:51820\n"
	              "[peer]\npublic_key=" DAVE_PUB "\n"
	              "endpoint=192.0.2.9:51820\n";
	static const char named[] = PRIV_LINE PEER_BOB "endpoint=tls://localhost:8443\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	/* A TLS link dials a TCP socket of its own: listen's family does not bind it. */
	assert_int_equal(cfg.peers[0].transport, YIP_TRANSPORT_TLS);
	assert_sockaddr(&cfg.peers[0].endpoint, "[2001:db8::7]:443");
	assert_null(cfg.peers[0].endpoint_name);
	assert_null(cfg.peers[0].tls_sni);
	assert_int_equal(cfg.peers[1].transport, YIP_TRANSPORT_UDP);
	assert_sockaddr(&cfg.peers[1].endpoint, "192.0.2.8:51820");
	assert_int_equal(cfg.peers[2].transport, YIP_TRANSPORT_UDP);
	assert_null(cfg.tls_sni);
	yip_config_free(&cfg);
	/* A name keeps HOST:PORT as written, without the scheme. */
	if (parse(named, true, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.peers[0].transport, YIP_TRANSPORT_TLS);
	assert_string_equal(cfg.peers[0].endpoint_name, "localhost:8443");
	assert_int_equal(ntohs(cfg.peers[0].endpoint.in4.sin_port), 8443);
	yip_config_free(&cfg);
	expect_ok(PRIV_LINE PEER_BOB "endpoint=TLS://192.0.2.7:443\n");
	/* quic:// (docs/transports.md), with tls_sni and listen_quic. */
	if (parse(PRIV_LINE "listen_quic=192.0.2.1:443\nquic_cc=cubic\n" PEER_BOB
	                    "endpoint=quic://192.0.2.7:4433\ntls_sni=a.example\n",
	          true, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.peers[0].transport, YIP_TRANSPORT_QUIC);
	assert_sockaddr(&cfg.peers[0].endpoint, "192.0.2.7:4433");
	assert_string_equal(cfg.peers[0].tls_sni, "a.example");
	assert_true(cfg.has_listen_quic);
	assert_sockaddr(&cfg.listen_quic, "192.0.2.1:443");
	assert_int_equal(cfg.quic_cc, YIP_QUIC_CC_CUBIC);
	yip_config_free(&cfg);
	/* The default is bbr2; bbr and bbr2 are the other names. */
	if (parse(PRIV_LINE PEER_BOB, true, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.quic_cc, YIP_QUIC_CC_BBR2);
	yip_config_free(&cfg);
	if (parse(PRIV_LINE "quic_cc=bbr\n" PEER_BOB, true, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.quic_cc, YIP_QUIC_CC_BBR);
	yip_config_free(&cfg);
	if (parse(PRIV_LINE "quic_cc=bbr2\n" PEER_BOB, true, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.quic_cc, YIP_QUIC_CC_BBR2);
	yip_config_free(&cfg);
	expect_error(PRIV_LINE "quic_cc=none\n",
	             "t.conf:2: quic_cc 'none': expected bbr, bbr2 or cubic");
	expect_error(PRIV_LINE "listen_quic=[::]\n",
	             "t.conf:2: listen_quic: missing port in '[::]' (expected address:port)");

	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://gw.example.net\n",
	             "t.conf:4: endpoint: 'tls://gw.example.net' has no port (a URL needs one: "
	             "tls://HOST:PORT)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://[2001:db8::7]\n",
	             "t.conf:4: endpoint: 'tls://[2001:db8::7]' has no port (a URL needs one: "
	             "tls://HOST:PORT)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://2001:db8::7\n",
	             "t.conf:4: endpoint: 'tls://2001:db8::7' has no port (a URL needs one: "
	             "tls://HOST:PORT)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=udp://192.0.2.7\n",
	             "t.conf:4: endpoint: 'udp://192.0.2.7' has no port (a URL needs one: "
	             "udp://HOST:PORT)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=https://192.0.2.7:443\n",
	             "t.conf:4: endpoint: unknown scheme 'https://' in 'https://192.0.2.7:443' "
	             "(known: udp://HOST:PORT, tls://HOST:PORT, quic://HOST:PORT, or a bare "
	             "HOST:PORT for udp)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=://192.0.2.7:443\n",
	             "t.conf:4: endpoint: unknown scheme '://' in '://192.0.2.7:443' (known: "
	             "udp://HOST:PORT, tls://HOST:PORT, quic://HOST:PORT, or a bare HOST:PORT for "
	             "udp)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://\n",
	             "t.conf:4: endpoint: missing address in ''");
	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://192.0.2.7:0\n",
	             "t.conf:4: endpoint: bad port '0' (expected a number from 1 to 65535)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://gw.example.net:443\n",
	             "t.conf:4: endpoint: 'gw.example.net' is not an IP address (host names are "
	             "not allowed here)");
	/* udp:// is a bare HOST:PORT: listen's family still binds it. */
	expect_error(PRIV_LINE "listen=0.0.0.0:51820\n" PEER_BOB "endpoint=udp://[2001:db8::7]:1\n",
	             "t.conf:5: endpoint [2001:db8::7]:1 is IPv6, but the socket of "
	             "listen=0.0.0.0:51820 sends IPv4 only: it could never be reached (listen on "
	             "[::] for both)");
}

/* listen_tls, tls_cert and tls_key. */
static void test_listen_tls(void **state)
{
	static const char text[] =
	    PRIV_LINE "listen_tls=[::]:443\n"
	              "tls_cert=/etc/yip/tls.crt\ntls_key=/etc/yip/tls.key\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(cfg.has_listen_tls);
	assert_sockaddr(&cfg.listen_tls, "[::]:443");
	assert_string_equal(cfg.tls_cert_path, "/etc/yip/tls.crt");
	assert_string_equal(cfg.tls_key_path, "/etc/yip/tls.key");
	yip_config_free(&cfg);
	/* Without tls_cert and tls_key: a self-signed certificate (the daemon's). */
	if (parse(PRIV_LINE "listen_tls=192.0.2.1:8443\n", false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(cfg.has_listen_tls);
	assert_sockaddr(&cfg.listen_tls, "192.0.2.1:8443");
	assert_null(cfg.tls_cert_path);
	assert_null(cfg.tls_key_path);
	yip_config_free(&cfg);
	assert_int_equal(parse(PRIV_LINE, false, &cfg, err, sizeof(err)), 0);
	assert_false(cfg.has_listen_tls);
	yip_config_free(&cfg);

	expect_error(PRIV_LINE "listen_tls=0.0.0.0\n",
	             "t.conf:2: listen_tls: missing port in '0.0.0.0' (expected address:port)");
	expect_error(PRIV_LINE "listen_tls=[::]\n",
	             "t.conf:2: listen_tls: missing port in '[::]' (expected address:port)");
	expect_error(PRIV_LINE "listen_tls=example.com:443\n",
	             "t.conf:2: listen_tls: 'example.com' is not an IP address (host names are not "
	             "allowed here)");
	expect_error(PRIV_LINE "listen_tls=[::]:443\nlisten_tls=[::]:8443\n",
	             "t.conf:3: duplicate key 'listen_tls' (first set on line 2)");
	expect_error(PRIV_LINE "tls_cert=/c\ntls_key=/k\n",
	             "t.conf:2: tls_cert is the certificate listen_tls and listen_quic present: "
	             "without either nothing accepts TLS or QUIC links");
	expect_error(PRIV_LINE "tls_key=/k\n",
	             "t.conf:2: tls_key is the certificate listen_tls and listen_quic present: "
	             "without either nothing accepts TLS or QUIC links");
	expect_error(PRIV_LINE "listen_tls=[::]:443\ntls_cert=/c\n",
	             "t.conf:3: tls_cert needs tls_key (the certificate's private key, PEM)");
	expect_error(PRIV_LINE "listen_tls=[::]:443\ntls_key=/k\n",
	             "t.conf:3: tls_key needs tls_cert (the certificate it belongs to, PEM)");
	expect_error(PRIV_LINE PEER_BOB "tls_cert=/c\n",
	             "t.conf:4: 'tls_cert' is an interface key and must come before the first "
	             "[peer] block");
}

/* tls_sni: the top-level default, a [peer]'s own, and the names it takes. */
static void test_tls_sni(void **state)
{
	static const char text[] =
	    PRIV_LINE "tls_sni=www.example.com\n" PEER_BOB "endpoint=tls://192.0.2.7:443\n"
	              "tls_sni=cdn-1.example.net\n"
	              "[peer]\npublic_key=" CAROL_PUB "\n"
	              "tls_sni=a.b\nendpoint=tls://192.0.2.8:443\n";
	static const char *const good[] = {
	    "localhost", "a", "xn--bcher-kva.example", "A-1.example.COM", "1.example", "x.y2k",
	};
	static const struct {
		const char *name, *why;
	} bad[] = {
	    {"192.0.2.7", "'192.0.2.7' is an IP address; the SNI names a host"},
	    {"10.1", "'10.1' is an IP address"},
	    {"[::1]", "'[::1]' is not a host name (letters, digits, '-' and '.')"},
	    {"a_b.example", "'a_b.example' is not a host name (letters, digits"},
	    {"-a.example", "'-a.example' is not a host name (each dot-separated label"},
	    {"a-.example", "'a-.example' is not a host name (each dot-separated label"},
	    {"a..example", "'a..example' is not a host name (each dot-separated label"},
	    {".example", "'.example' is not a host name (each dot-separated label"},
	    {"example.", "'example.' is not a host name (each dot-separated label"},
	};
	struct yip_config cfg;
	char buf[512], err[256], reason[256];

	(void)state;
	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(cfg.tls_sni, "www.example.com");
	assert_string_equal(cfg.peers[0].tls_sni, "cdn-1.example.net");
	assert_string_equal(cfg.peers[1].tls_sni, "a.b");
	yip_config_free(&cfg);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (yip_config_sni_check(good[i], reason, sizeof(reason)) != 0)
			fail_msg("%s: %s", good[i], reason);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), PRIV_LINE "tls_sni=%s\n", bad[i].name);
		assert_int_equal(parse(buf, false, &cfg, err, sizeof(err)), -1);
		snprintf(reason, sizeof(reason), "t.conf:2: tls_sni: %s", bad[i].why);
		if (strncmp(err, reason, strlen(reason)) != 0)
			fail_msg("%s: got '%s'", bad[i].name, err);
	}
	/* Lengths: labels up to 63, names up to 253. */
	memset(buf, 'a', 63);
	strcpy(buf + 63, ".example");
	assert_int_equal(yip_config_sni_check(buf, reason, sizeof(reason)), 0);
	memset(buf, 'a', 64);
	strcpy(buf + 64, ".example");
	assert_int_equal(yip_config_sni_check(buf, reason, sizeof(reason)), -1);
	for (size_t i = 0; i < 253; i++)
		buf[i] = i % 2 == 0 ? 'a' : '.';
	buf[253] = '\0';
	assert_int_equal(yip_config_sni_check(buf, reason, sizeof(reason)), 0);
	buf[253] = 'a';
	buf[254] = '\0';
	assert_int_equal(yip_config_sni_check(buf, reason, sizeof(reason)), -1);
	assert_string_equal(reason, "a host name has 1 to 253 characters");

	expect_error(PRIV_LINE PEER_BOB "endpoint=192.0.2.7:443\ntls_sni=www.example.com\n",
	             "t.conf:5: tls_sni in a [peer] is for its TLS or QUIC link: it needs "
	             "endpoint=tls://HOST:PORT or quic://HOST:PORT in the same block");
	expect_error(PRIV_LINE PEER_BOB "tls_sni=www.example.com\n[peer]\npublic_key=" CAROL_PUB
	                                "\n",
	             "t.conf:4: tls_sni in a [peer] is for its TLS or QUIC link: it needs "
	             "endpoint=tls://HOST:PORT or quic://HOST:PORT in the same block");
	expect_error(PRIV_LINE PEER_BOB "endpoint=udp://192.0.2.7:443\ntls_sni=a.example\n",
	             "t.conf:5: tls_sni in a [peer] is for its TLS or QUIC link: it needs "
	             "endpoint=tls://HOST:PORT or quic://HOST:PORT in the same block");
	expect_error(PRIV_LINE "tls_sni=a.example\ntls_sni=b.example\n",
	             "t.conf:3: duplicate key 'tls_sni' (first set on line 2)");
	expect_error(PRIV_LINE PEER_BOB "endpoint=tls://192.0.2.7:443\ntls_sni=a.example\n"
	                                "tls_sni=b.example\n",
	             "t.conf:6: duplicate key 'tls_sni' (first set on line 5)");
	/* Each [peer] has its own. */
	expect_ok(PRIV_LINE "tls_sni=top.example\n" PEER_BOB
	                    "endpoint=tls://192.0.2.7:443\ntls_sni=a.example\n"
	                    "[peer]\npublic_key=" CAROL_PUB "\nendpoint=tls://192.0.2.8:443\n"
	                    "tls_sni=b.example\n");
}

/* One server over udp and over tls; the limits on lines and on servers. */
/* rendezvous=reality://HOST:PORT?pbk=&sid=&sni=: a TLS link to a REALITY front. */
static void test_rendezvous_reality(void **state)
{
	static const char text[] = PRIV_LINE
	    "listen=0.0.0.0:51820\n"
	    "rendezvous=reality://192.0.2.9:443?pbk=" CAROL_PUB "&sid=abcd12&sni=www.example.com\n"
	    "rendezvous_key=" BOB_PUB "\n"
	    "rendezvous=REALITY://192.0.2.10:443?sni=a.example&sid=&pbk=" CAROL_PUB "\n"
	    "rendezvous_key=" DAVE_PUB "\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.n_rendezvous, 2);
	assert_int_equal(cfg.rendezvous[0].transport, YIP_TRANSPORT_TLS);
	assert_true(cfg.rendezvous[0].reality);
	assert_sockaddr(&cfg.rendezvous[0].addr, "192.0.2.9:443");
	assert_key(cfg.rendezvous[0].reality_pub, CAROL_PUB);
	assert_int_equal(cfg.rendezvous[0].reality_sid[0], 0xab);
	assert_int_equal(cfg.rendezvous[0].reality_sid[3], 0);
	assert_string_equal(cfg.rendezvous[0].reality_sni, "www.example.com");
	assert_key(cfg.rendezvous[0].public_key, BOB_PUB);
	assert_true(cfg.rendezvous[1].reality);
	assert_string_equal(cfg.rendezvous[1].reality_sni, "a.example");
	assert_int_equal(cfg.rendezvous[1].reality_sid[0], 0);
	yip_config_free(&cfg);

	expect_error(
	    PRIV_LINE "rendezvous=reality://192.0.2.9:443\n",
	    "t.conf:2: rendezvous: reality://HOST:PORT needs ?pbk=KEY&sid=HEX&sni=NAME (the "
	    "front's yip-rendezvous --reality-genkey public key, one of its short ids and "
	    "server names)");
	expect_error(PRIV_LINE "rendezvous=reality://192.0.2.9?pbk=" CAROL_PUB "&sid=ab&sni=a.b\n",
	             "t.conf:2: rendezvous: '192.0.2.9' has no port (a URL needs one: "
	             "reality://HOST:PORT)");
	expect_error(PRIV_LINE "rendezvous=reality://192.0.2.9:443?pbk=abcd&sid=ab&sni=a.b\n",
	             "t.conf:2: rendezvous: pbk= is the front's public key, 64 hex digits "
	             "(yip-rendezvous --reality-genkey)");
	expect_error(
	    PRIV_LINE "rendezvous=reality://192.0.2.9:443?pbk=" CAROL_PUB "&sid=abc&sni=a.b\n",
	    "t.conf:2: rendezvous: sid= is a short id of the front, 0 to 16 hex digits (an "
	    "even number)");
	expect_error(PRIV_LINE "rendezvous=reality://192.0.2.9:443?pbk=" CAROL_PUB
	                       "&sid=ab&sni=a_b\n",
	             "t.conf:2: rendezvous: sni= is the real site's DNS name, got 'a_b'");
	expect_error(PRIV_LINE "rendezvous=reality://192.0.2.9:443?pbk=" CAROL_PUB "&sid=ab\n",
	             "t.conf:2: rendezvous: reality:// needs pbk=, sid= and sni= (missing sni)");
	expect_error(
	    PRIV_LINE "rendezvous=reality://192.0.2.9:443?pbk=" CAROL_PUB
	              "&sid=ab&sni=a.b&sid=cd\n",
	    "t.conf:2: rendezvous: 'sid' in the reality:// query is unknown or given twice "
	    "(the query takes pbk, sid and sni)");
	expect_error(PRIV_LINE "rendezvous=reality://192.0.2.9:443?pbk=" CAROL_PUB
	                       "&sid=ab&sni=a.b&x\n",
	             "t.conf:2: rendezvous: 'x' in the reality:// query is no NAME=VALUE");
	expect_error(PRIV_LINE PEER_BOB "endpoint=reality://192.0.2.9:443?pbk=" CAROL_PUB "\n",
	             "t.conf:4: endpoint: reality:// names a REALITY front, a rendezvous server "
	             "(rendezvous=reality://...); a peer is reached by tls://");
}

static void test_rendezvous_tls(void **state)
{
	static const char text[] =
	    PRIV_LINE "listen=0.0.0.0:51820\n"
	              "rendezvous=192.0.2.9:7000\nrendezvous_key=" BOB_PUB "\n"
	              "rendezvous=tls://[2001:db8::9]:443\n"
	              "rendezvous_key=" BOB_PUB "\n"
	              "rendezvous=udp://192.0.2.10:7000\n"
	              "rendezvous_key=" CAROL_PUB "\n";
	static const char *const keys[] = {BOB_PUB, CAROL_PUB, DAVE_PUB, EVE_PUB};
	struct yip_config cfg;
	struct text t = {NULL, 0, 0};
	char err[256];

	(void)state;
	if (parse(text, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.n_rendezvous, 3);
	assert_int_equal(cfg.rendezvous[0].transport, YIP_TRANSPORT_UDP);
	assert_int_equal(cfg.rendezvous[1].transport, YIP_TRANSPORT_TLS);
	assert_sockaddr(&cfg.rendezvous[1].addr, "[2001:db8::9]:443");
	assert_key(cfg.rendezvous[1].public_key, BOB_PUB);
	assert_int_equal(cfg.rendezvous[2].transport, YIP_TRANSPORT_UDP);
	/* Bob by UDP and by TLS is one server (0), Carol the next (1). */
	assert_int_equal(yip_config_server_of_line(&cfg, 0), 0);
	assert_int_equal(yip_config_server_of_line(&cfg, 1), 0);
	assert_int_equal(yip_config_server_of_line(&cfg, 2), 1);
	yip_config_free(&cfg);

	/* Four servers, each over all three: twelve lines. */
	append(&t, PRIV_LINE);
	for (unsigned i = 0; i < YIP_MAX_RENDEZVOUS; i++)
		append(&t,
		       "rendezvous=192.0.2.%u:7000\nrendezvous_key=%s\n"
		       "rendezvous=quic://192.0.2.%u:443\nrendezvous_key=%s\n"
		       "rendezvous=tls://192.0.2.%u:443\nrendezvous_key=%s\n",
		       i + 1, keys[i], i + 1, keys[i], i + 1, keys[i]);
	if (parse(t.data, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.n_rendezvous, YIP_MAX_RENDEZVOUS_LINES);
	for (unsigned i = 0; i < YIP_MAX_RENDEZVOUS_LINES; i++) {
		static const uint8_t order[] = {YIP_TRANSPORT_UDP, YIP_TRANSPORT_QUIC,
		                                YIP_TRANSPORT_TLS};

		assert_int_equal(yip_config_server_of_line(&cfg, i), i / 3);
		assert_int_equal(cfg.rendezvous[i].transport, order[i % 3]);
	}
	yip_config_free(&cfg);
	append(&t, "rendezvous=tls://192.0.2.99:443\n");
	expect_error(t.data,
	             "t.conf:26: too many rendezvous lines (at most 12: 4 servers, each over "
	             "udp, quic and tls)");
	free(t.data);

	expect_error(PRIV_LINE "rendezvous=192.0.2.9:7000\nrendezvous_key=" BOB_PUB "\n"
	                       "rendezvous=192.0.2.10:7000\nrendezvous_key=" BOB_PUB "\n",
	             "t.conf:5: rendezvous_key: the rendezvous on line 2 is the same server over "
	             "udp too (name a server at most once over each of udp, quic and tls)");
	expect_error(PRIV_LINE "rendezvous=tls://192.0.2.9:443\nrendezvous_key=" BOB_PUB "\n"
	                       "rendezvous=192.0.2.9:7000\nrendezvous_key=" BOB_PUB "\n"
	                       "rendezvous=tls://192.0.2.10:443\nrendezvous_key=" BOB_PUB "\n",
	             "t.conf:7: rendezvous_key: the rendezvous on line 2 is the same server over "
	             "tls too (name a server at most once over each of udp, quic and tls)");
	expect_error(PRIV_LINE "rendezvous=quic://192.0.2.9:443\nrendezvous_key=" BOB_PUB "\n"
	                       "rendezvous=QUIC://192.0.2.10:443\nrendezvous_key=" BOB_PUB "\n",
	             "t.conf:5: rendezvous_key: the rendezvous on line 2 is the same server over "
	             "quic too (name a server at most once over each of udp, quic and tls)");
	expect_error(PRIV_LINE "rendezvous=tls://192.0.2.9\nrendezvous_key=" BOB_PUB "\n",
	             "t.conf:2: rendezvous: 'tls://192.0.2.9' has no port (a URL needs one: "
	             "tls://HOST:PORT)");
	expect_error(PRIV_LINE "rendezvous=quic://192.0.2.9\nrendezvous_key=" BOB_PUB "\n",
	             "t.conf:2: rendezvous: 'quic://192.0.2.9' has no port (a URL needs one: "
	             "quic://HOST:PORT)");
	expect_error(PRIV_LINE "rendezvous=dtls://192.0.2.9:443\nrendezvous_key=" BOB_PUB "\n",
	             "t.conf:2: rendezvous: unknown scheme 'dtls://' in 'dtls://192.0.2.9:443' "
	             "(known: udp://HOST:PORT, tls://HOST:PORT, quic://HOST:PORT, "
	             "reality://HOST:PORT?..., or a bare HOST:PORT for udp)");
	expect_error(PRIV_LINE "rendezvous=tls://192.0.2.9:443\n",
	             "t.conf:2: rendezvous has no rendezvous_key (the server's public key, from "
	             "yip-rendezvous --genkey)");
	/* A tls:// server dials its own TCP socket, a quic:// one its own UDP
	 * socket; a udp:// one must suit listen. */
	expect_ok(PRIV_LINE "rendezvous=tls://[2001:db8::9]:443\nrendezvous_key=" BOB_PUB
	                    "\nlisten=192.0.2.1:51820\n");
	expect_ok(PRIV_LINE "rendezvous=quic://[2001:db8::9]:443\nrendezvous_key=" BOB_PUB
	                    "\nlisten=192.0.2.1:51820\n");
	expect_error(PRIV_LINE "rendezvous=udp://[2001:db8::9]:7000\nrendezvous_key=" BOB_PUB
	                       "\nlisten=192.0.2.1:51820\n",
	             "t.conf:2: rendezvous [2001:db8::9]:7000 is IPv6, but the socket of "
	             "listen=192.0.2.1:51820 sends IPv4 only: it could never be reached (listen on "
	             "[::] for both)");
}

/* Exactly at each limit is fine; one more is an error on the line that crossed it. */
/* metrics_listen, metrics_remote, metrics_peers (docs/configuration.md). */
static void test_metrics(void **state)
{
	static const char *const ok[] = {
	    PRIV_LINE "metrics_listen=127.0.0.1:9586\n",
	    PRIV_LINE "metrics_listen=127.1.2.3:1\n",
	    PRIV_LINE "metrics_listen=[::1]:9586\nmetrics_peers=on\n",
	    PRIV_LINE "metrics_listen=[::ffff:127.0.0.1]:9586\n",
	    PRIV_LINE "metrics_listen=0.0.0.0:9586\nmetrics_remote=on\n",
	    PRIV_LINE "metrics_remote=on\nmetrics_listen=[::]:9586\n",
	};
	static const char *const refused[] = {
	    PRIV_LINE "metrics_listen=0.0.0.0:9586\n",
	    PRIV_LINE "metrics_listen=198.18.0.1:9586\nmetrics_remote=off\n",
	    PRIV_LINE "metrics_listen=[::]:9586\n",
	    PRIV_LINE "metrics_listen=[::ffff:10.0.0.1]:9586\n",
	};
	const char want[] = "t.conf:2: metrics address ";
	struct yip_config cfg;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (parse(ok[i], false, &cfg, err, sizeof(err)) != 0)
			fail_msg("%s: %s", ok[i], err);
		assert_true(cfg.has_metrics_listen);
		yip_config_free(&cfg);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(parse(refused[i], false, &cfg, err, sizeof(err)), -1);
		if (strncmp(err, want, sizeof(want) - 1) != 0 ||
		    strstr(err, "metrics_remote = on") == NULL)
			fail_msg("%s: got '%s'", refused[i], err);
	}
	if (parse(PRIV_LINE, false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_false(cfg.has_metrics_listen || cfg.metrics_remote || cfg.metrics_peers);
	yip_config_free(&cfg);
	expect_error(PRIV_LINE "metrics_remote=yes\n",
	             "t.conf:2: metrics_remote 'yes': expected 'on' or 'off'");
	assert_int_equal(
	    parse(PRIV_LINE "metrics_listen=127.0.0.1\n", false, &cfg, err, sizeof(err)), -1);
}

/* A CA-gated network's keys (docs/configuration.md). */
static void test_membership(void **state)
{
	static const char text[] = PRIV_LINE "ca=" BOB_PUB "\ncert=/etc/yip/node.crt\n"
	                                     "roots=/etc/yip/roots.txt\nstate_dir=/tmp/st\n";
	static const char obf[] = PRIV_LINE "obf_psk=" BOB_PUB "\nca=" BOB_PUB "\ncert=/c\n";
	struct yip_config cfg;
	char err[256];

	(void)state;
	if (yip_config_parse(text, strlen(text), "t.conf", false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(cfg.has_ca);
	assert_key(cfg.ca_public, BOB_PUB);
	assert_string_equal(cfg.cert_path, "/etc/yip/node.crt");
	assert_string_equal(cfg.roots_path, "/etc/yip/roots.txt");
	assert_null(cfg.revocations_path);
	assert_string_equal(cfg.state_dir, "/tmp/st");
	assert_int_equal(cfg.n_peers, 0); /* no [peer] blocks needed */
	yip_config_free(&cfg);
	/* A CA-gated network may be obfuscated (certificates fit the envelopes). */
	if (yip_config_parse(obf, strlen(obf), "t.conf", false, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(cfg.has_ca && cfg.obf);
	yip_config_free(&cfg);
	expect_error(PRIV_LINE "ca=" BOB_PUB "\n",
	             "t.conf:2: ca needs cert (this node's certificate, from yip-ca sign-cert)");
	expect_error(PRIV_LINE "roots=/r\n",
	             "t.conf:2: roots is for a CA-gated network: set ca too");
	expect_error(PRIV_LINE "state_dir=/s\n",
	             "t.conf:2: state_dir is for a CA-gated network: set ca too");
	expect_error(PRIV_LINE "device_kind=tap\nca=" BOB_PUB "\ncert=/c\n",
	             "t.conf:3: ca: a CA-gated network needs device_kind=tun: certificates grant "
	             "IP prefixes, which TAP mode does not check inside Ethernet frames");
	expect_error(PRIV_LINE "ca=zz\n", "t.conf:2: ca: expected 64 hex digits, got 2");
	expect_error(PRIV_LINE "ca=" BOB_PUB "\ncert=/c\ncert=/d\n",
	             "t.conf:4: duplicate key 'cert' (first set on line 3)");
}

static void test_limits(void **state)
{
	char *text;

	(void)state;
	text = addresses(YIP_MAX_ADDRESSES);
	expect_ok(text);
	free(text);
	text = addresses(YIP_MAX_ADDRESSES + 1);
	expect_error(text, "t.conf:66: too many address entries (at most 64)");
	free(text);

	text = allowed_ips(YIP_MAX_ALLOWED_PER_PEER);
	expect_ok(text);
	free(text);
	text = allowed_ips(YIP_MAX_ALLOWED_PER_PEER + 1);
	expect_error(text, "t.conf:260: too many allowed_ips in this [peer] block (at most 256)");
	free(text);

	text = peers(YIP_MAX_PEERS);
	expect_ok(text);
	free(text);
	text = peers(YIP_MAX_PEERS + 1);
	expect_error(text, "t.conf:3074: too many [peer] blocks (at most 1024)");
	free(text);
}

static void test_long_line(void **state)
{
	char *text = malloc(5000);

	(void)state;
	assert_non_null(text);
	/* 4096 characters is the longest line allowed. */
	memset(text, '#', 4096);
	strcpy(text + 4096, "\n" PRIV_LINE);
	expect_ok(text);
	memset(text, '#', 4097);
	strcpy(text + 4097, "\n" PRIV_LINE);
	expect_error(text, "t.conf:1: line is longer than 4096 characters");
	free(text);
}

static void test_small_error_buffer(void **state)
{
	struct yip_config cfg;
	char err[8];

	(void)state;
	assert_int_equal(parse("x", false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:");
	assert_int_equal(parse("x", false, &cfg, NULL, 0), -1);
}

static void test_control_characters_replaced(void **state)
{
	struct yip_config cfg;
	char err[256];

	(void)state;
	assert_int_equal(parse(PRIV_LINE "\x1b[2Jkey=1\n", false, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:2: unknown key '?[2Jkey'");
}

static void test_load(void **state)
{
	char path[] = "/tmp/yip-test-config-XXXXXX";
	struct yip_config cfg;
	char err[512];
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, full_config, strlen(full_config)), (ssize_t)strlen(full_config));
	close(fd);
	if (yip_config_load(path, &cfg, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.n_peers, 2);
	yip_config_free(&cfg);

	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "mtu=1\n", 6), 6);
	close(fd);
	assert_int_equal(yip_config_load(path, &cfg, err, sizeof(err)), -1);
	assert_true(strncmp(err, path, strlen(path)) == 0);
	assert_string_equal(err + strlen(path), ":1: mtu 1 is out of range (1280..9000)");
	unlink(path);

	assert_int_equal(yip_config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ": cannot open: No such file or directory"));
	assert_null(cfg.peers);
}

/* What a reload may not change: named, and nothing else counted. */
static void test_fixed_changes(void **state)
{
	static const char base[] =
	    PRIV_LINE "listen=198.18.0.1:51820\naddress=10.0.0.1/24\n"
	              "[peer]\npublic_key=" BOB_PUB "\nallowed_ips=10.0.0.2/32\n";
	static const struct {
		const char *text;
		size_t n;
		const char *first;
	} cases[] = {
	    /* Peers and addresses are a reload's to change. */
	    {PRIV_LINE "listen=198.18.0.1:51820\naddress=10.0.0.9/24\n"
	               "[peer]\npublic_key=" CAROL_PUB "\nendpoint=192.0.2.1:1\n",
	     0, NULL},
	    {PRIV_LINE "listen=198.18.0.1:51821\naddress=10.0.0.1/24\n", 1, "listen"},
	    {"local_private=" BOB_PRIV "\nlisten=198.18.0.1:51820\n", 1, "local_private"},
	    {PRIV_LINE "listen=198.18.0.1:51820\nmtu=1300\nfec=off\n", 2, "mtu"},
	    {PRIV_LINE "listen=198.18.0.1:51820\ndevice=yip7\n", 1, "device"},
	    {PRIV_LINE "listen=198.18.0.1:51820\nobf_psk=" CAROL_PUB "\n", 1, "obf_psk"},
	    {PRIV_LINE
	     "listen=198.18.0.1:51820\nrendezvous=192.0.2.7:7000\nrendezvous_key=" DAVE_PUB "\n",
	     1, "rendezvous"},
	};
	struct yip_config a, b;
	const char *keys[4];
	char err[256];

	(void)state;
	if (parse(base, false, &a, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n;

		if (parse(cases[i].text, false, &b, err, sizeof(err)) != 0)
			fail_msg("case %zu: %s", i, err);
		n = yip_config_fixed_changes(&a, &b, keys, 4);
		if (n != cases[i].n)
			fail_msg("case %zu: %zu changes, want %zu", i, n, cases[i].n);
		if (n > 0)
			assert_string_equal(keys[0], cases[i].first);
		yip_config_free(&b);
	}
	/* The running copy has its private key wiped: still compared by the public key. */
	if (parse(base, false, &b, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	memset(a.private_key, 0, sizeof(a.private_key));
	assert_int_equal(yip_config_fixed_changes(&a, &b, keys, 4), 0);
	yip_config_free(&a);
	yip_config_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_listen_families),
	    cmocka_unit_test(test_user_and_sandbox),
	    cmocka_unit_test(test_log_keys),
	    cmocka_unit_test(test_membership),
	    cmocka_unit_test(test_metrics),
	    cmocka_unit_test(test_minimal),
	    cmocka_unit_test(test_obf),
	    cmocka_unit_test(test_full),
	    cmocka_unit_test(test_whitespace_and_comments),
	    cmocka_unit_test(test_listen_variants),
	    cmocka_unit_test(test_hostname_endpoint),
	    cmocka_unit_test(test_bad_configs),
	    cmocka_unit_test(test_rendezvous),
	    cmocka_unit_test(test_rendezvous_tls),
	    cmocka_unit_test(test_rendezvous_reality),
	    cmocka_unit_test(test_tls_endpoint),
	    cmocka_unit_test(test_listen_tls),
	    cmocka_unit_test(test_tls_sni),
	    cmocka_unit_test(test_no_suggestion_for_distant_key),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_long_line),
	    cmocka_unit_test(test_small_error_buffer),
	    cmocka_unit_test(test_control_characters_replaced),
	    cmocka_unit_test(test_load),
	    cmocka_unit_test(test_fixed_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
