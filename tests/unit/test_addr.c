/* Unit tests for addr: prefixes, endpoints, formatting and comparison. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "addr/addr.h"

struct cidr_case {
	const char *in;
	bool allow_host;
	const char *want; /* formatted result, or NULL if it must fail */
	const char *err;  /* substring of the error when it fails */
};

static const struct cidr_case cidr_cases[] = {
    {"10.0.0.0/8", false, "10.0.0.0/8", NULL},
    {"10.1.2.0/24", false, "10.1.2.0/24", NULL},
    {"0.0.0.0/0", false, "0.0.0.0/0", NULL},
    {"192.168.1.7/32", false, "192.168.1.7/32", NULL},
    {"192.168.1.7", true, "192.168.1.7/32", NULL},
    {"fd00::/8", false, "fd00::/8", NULL},
    {"2001:db8::/32", false, "2001:db8::/32", NULL},
    {"2001:DB8:0:0::1/128", false, "2001:db8::1/128", NULL},
    {"::/0", false, "::/0", NULL},
    {"2001:db8::1", true, "2001:db8::1/128", NULL},
    {"10.0.0.128/25", false, "10.0.0.128/25", NULL},
    {"10.0.0.0/024", false, "10.0.0.0/24", NULL},
    {"10.0.0.0", false, NULL, "no prefix length"},
    {"2001:db8::1", false, NULL, "no prefix length"},
    {"10.0.0.0/33", false, NULL, "prefix length 33 > 32"},
    {"fd00::/129", false, NULL, "prefix length 129 > 128"},
    {"10.0.0.1/24", false, NULL, "host bits set"},
    {"10.0.0.1/24", true, NULL, "did you mean 10.0.0.0/24?"},
    {"fd00::1/8", false, NULL, "host bits set"},
    {"10.0.0.0/", false, NULL, "missing prefix length"},
    {"10.0.0.0/-1", false, NULL, "bad prefix length"},
    {"10.0.0.0/+8", false, NULL, "bad prefix length"},
    {"10.0.0.0/8x", false, NULL, "bad prefix length"},
    {"10.0.0.0/8/8", false, NULL, "bad prefix length"},
    {"10.0.0.0/ 8", false, NULL, "bad prefix length"},
    {"10.0.0.0/0008", false, NULL, "bad prefix length"},
    {"10.0.0/8", false, NULL, "not an IPv4 or IPv6 address"},
    {"10.0.0.256/32", false, NULL, "not an IPv4 or IPv6 address"},
    {" 10.0.0.0/8", false, NULL, "not an IPv4 or IPv6 address"},
    {"/8", false, NULL, "not an IPv4 or IPv6 address"},
    {"host.example/8", false, NULL, "not an IPv4 or IPv6 address"},
    {"fe80::1%eth0/128", false, NULL, "scope ids"},
    {"", true, NULL, "not an IPv4 or IPv6 address"},
    {"1111:2222:3333:4444:5555:6666:7777:8888:9999/128", false, NULL, "not an IPv4 or IPv6"},
};

static void test_cidr_parse_table(void **state)
{
	char err[256], out[YIP_ADDRSTRLEN];
	struct yip_cidr c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cidr_cases) / sizeof(cidr_cases[0]); i++) {
		const struct cidr_case *t = &cidr_cases[i];
		int rc;

		err[0] = '\0';
		rc = yip_cidr_parse(t->in, t->allow_host, &c, err, sizeof(err));
		if (t->want != NULL) {
			if (rc != 0)
				fail_msg("'%s': unexpected error: %s", t->in, err);
			yip_cidr_format(&c, out, sizeof(out));
			assert_string_equal(out, t->want);
		} else {
			if (rc != -1)
				fail_msg("'%s' was accepted", t->in);
			if (strstr(err, t->err) == NULL)
				fail_msg("'%s': error '%s' lacks '%s'", t->in, err, t->err);
		}
	}
}

static struct yip_cidr cidr(const char *s)
{
	struct yip_cidr c;
	char err[128];

	assert_int_equal(yip_cidr_parse(s, true, &c, err, sizeof(err)), 0);
	return c;
}

static bool contains(const char *prefix, const char *ip)
{
	struct yip_cidr c = cidr(prefix);
	uint8_t addr[16];
	int family = strchr(ip, ':') != NULL ? AF_INET6 : AF_INET;

	assert_int_equal(inet_pton(family, ip, addr), 1);
	return yip_cidr_contains(&c, family, addr);
}

static void test_cidr_contains(void **state)
{
	(void)state;
	assert_true(contains("10.0.0.0/8", "10.255.1.2"));
	assert_false(contains("10.0.0.0/8", "11.0.0.0"));
	assert_true(contains("10.0.0.128/25", "10.0.0.200"));
	assert_false(contains("10.0.0.128/25", "10.0.0.127"));
	assert_true(contains("0.0.0.0/0", "203.0.113.9"));
	assert_true(contains("192.0.2.1", "192.0.2.1"));
	assert_false(contains("192.0.2.1", "192.0.2.2"));
	assert_true(contains("fd00::/8", "fd12:3456::1"));
	assert_false(contains("fd00::/8", "fe80::1"));
	assert_true(contains("::/0", "2001:db8::1"));
	assert_true(contains("2001:db8::/33", "2001:db8:7fff::1"));
	assert_false(contains("2001:db8::/33", "2001:db8:8000::1"));
	/* Families never match each other. */
	assert_false(contains("0.0.0.0/0", "::1"));
	assert_false(contains("::/0", "10.0.0.1"));
}

static void test_cidr_overlaps(void **state)
{
	struct yip_cidr a = cidr("10.0.0.0/8"), b = cidr("10.1.0.0/16"), c = cidr("11.0.0.0/8");
	struct yip_cidr d = cidr("::/0"), e = cidr("0.0.0.0/0"), f = cidr("10.1.2.3");

	(void)state;
	assert_true(yip_cidr_overlaps(&a, &b));
	assert_true(yip_cidr_overlaps(&b, &a));
	assert_false(yip_cidr_overlaps(&a, &c));
	assert_true(yip_cidr_overlaps(&a, &a));
	assert_false(yip_cidr_overlaps(&d, &e));
	assert_true(yip_cidr_overlaps(&e, &a));
	assert_true(yip_cidr_overlaps(&f, &b));
	assert_false(yip_cidr_overlaps(&f, &c));
}

struct endpoint_case {
	const char *in;
	uint16_t default_port;
	const char *want; /* formatted result, or NULL if it must fail */
	int port_given;   /* expected *port_given on success */
	const char *err;
};

static const struct endpoint_case endpoint_cases[] = {
    {"192.0.2.1:51820", 0, "192.0.2.1:51820", 1, NULL},
    {"192.0.2.1:1", 0, "192.0.2.1:1", 1, NULL},
    {"192.0.2.1:65535", 0, "192.0.2.1:65535", 1, NULL},
    {"[2001:db8::1]:443", 0, "[2001:db8::1]:443", 1, NULL},
    {"[::]:8443", 0, "[::]:8443", 1, NULL},
    {"[::ffff:192.0.2.1]:53", 0, "192.0.2.1:53", 1, NULL},
    {"192.0.2.1", 443, "192.0.2.1:443", 0, NULL},
    {"0.0.0.0", 443, "0.0.0.0:443", 0, NULL},
    {"[2001:db8::1]", 443, "[2001:db8::1]:443", 0, NULL},
    {"2001:db8::1", 443, "[2001:db8::1]:443", 0, NULL},
    {"::", 443, "[::]:443", 0, NULL},
    {"[::1]:9000", 443, "[::1]:9000", 1, NULL},
    {"192.0.2.1", 0, NULL, 0, "missing port"},
    {"[2001:db8::1]", 0, NULL, 0, "missing port"},
    {"2001:db8::1", 0, NULL, 0, "[address]:port"},
    {"192.0.2.1:", 0, NULL, 0, "missing port number"},
    {"192.0.2.1:0", 0, NULL, 0, "bad port '0'"},
    {"192.0.2.1:65536", 0, NULL, 0, "bad port '65536'"},
    {"192.0.2.1:123456", 0, NULL, 0, "bad port"},
    {"192.0.2.1:-1", 0, NULL, 0, "bad port"},
    {"192.0.2.1:+80", 0, NULL, 0, "bad port"},
    {"192.0.2.1:80x", 0, NULL, 0, "bad port"},
    {"192.0.2.1: 80", 0, NULL, 0, "bad port"},
    {"[2001:db8::1]:", 0, NULL, 0, "missing port number"},
    {"[2001:db8::1]x", 0, NULL, 0, "unexpected text after ']'"},
    {"[2001:db8::1:80", 0, NULL, 0, "missing ']'"},
    {"[192.0.2.1]:80", 0, NULL, 0, "brackets are only for IPv6"},
    {"[]:80", 0, NULL, 0, "missing address"},
    {":80", 0, NULL, 0, "missing address"},
    {"", 443, NULL, 0, "missing address"},
    {"192.0.2.256:80", 0, NULL, 0, "not an IPv4 or IPv6 address"},
    {"192.0.2:80", 0, NULL, 0, "not an IPv4 or IPv6 address"},
    {"12345:80", 0, NULL, 0, "not an IPv4 or IPv6 address"},
    {"[fe80::1%eth0]:80", 0, NULL, 0, "scope ids"},
    {"[2001:db8::zz]:80", 0, NULL, 0, "not an IPv4 or IPv6 address"},
    {"example.com:80", 0, NULL, 0, "host names are not allowed"},
    {"localhost", 443, NULL, 0, "host names are not allowed"},
};

static void test_endpoint_parse_table(void **state)
{
	char err[256], out[YIP_ADDRSTRLEN];
	union yip_sockaddr sa;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(endpoint_cases) / sizeof(endpoint_cases[0]); i++) {
		const struct endpoint_case *t = &endpoint_cases[i];
		bool given = true;
		int rc;

		err[0] = '\0';
		rc = yip_endpoint_parse(t->in, t->default_port, false, &sa, &given, err,
		                        sizeof(err));
		if (t->want != NULL) {
			if (rc != 0)
				fail_msg("'%s': unexpected error: %s", t->in, err);
			yip_sockaddr_format(&sa, out, sizeof(out));
			assert_string_equal(out, t->want);
			assert_int_equal(given, t->port_given);
		} else {
			if (rc != -1)
				fail_msg("'%s' was accepted", t->in);
			if (strstr(err, t->err) == NULL)
				fail_msg("'%s': error '%s' lacks '%s'", t->in, err, t->err);
			assert_int_equal(sa.sa.sa_family, AF_UNSPEC);
		}
	}
}

static void test_endpoint_resolve(void **state)
{
	char err[256], out[YIP_ADDRSTRLEN];
	union yip_sockaddr sa;

	(void)state;
	assert_int_equal(
	    yip_endpoint_parse("localhost:51820", 0, true, &sa, NULL, err, sizeof(err)), 0);
	yip_sockaddr_format(&sa, out, sizeof(out));
	if (strcmp(out, "127.0.0.1:51820") != 0 && strcmp(out, "[::1]:51820") != 0)
		fail_msg("localhost resolved to %s", out);
	/* Names that getaddrinfo would read as numbers must not get that far. */
	assert_int_equal(yip_endpoint_parse("0x7f.1:80", 0, true, &sa, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a valid host name"));
	assert_int_equal(yip_endpoint_parse("bad_name:80", 0, true, &sa, NULL, err, sizeof(err)),
	                 -1);
	assert_non_null(strstr(err, "not a valid host name"));
	assert_int_equal(
	    yip_endpoint_parse("no-such-host.invalid:80", 0, true, &sa, NULL, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "cannot resolve 'no-such-host.invalid'"));
}

static union yip_sockaddr endpoint(const char *s)
{
	union yip_sockaddr sa;
	char err[128];

	if (yip_endpoint_parse(s, 0, false, &sa, NULL, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", s, err);
	return sa;
}

static void test_format_round_trip(void **state)
{
	static const char *const inputs[] = {
	    "192.0.2.1:51820",       "[2001:db8::1]:443",         "[::]:1",
	    "255.255.255.255:65535", "[fd00:1:2:3:4:5:6:7]:8443",
	};
	char out[YIP_ADDRSTRLEN];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		union yip_sockaddr a = endpoint(inputs[i]), b;

		yip_sockaddr_format(&a, out, sizeof(out));
		assert_string_equal(out, inputs[i]);
		b = endpoint(out);
		assert_true(yip_sockaddr_eq(&a, &b));
	}
}

static void test_format_small_buffer(void **state)
{
	union yip_sockaddr a = endpoint("[2001:db8::1]:443"), none;
	struct yip_cidr c = cidr("2001:db8::/32");
	char out[8];

	(void)state;
	yip_sockaddr_format(&a, out, sizeof(out));
	assert_string_equal(out, "[2001:d");
	yip_cidr_format(&c, out, sizeof(out));
	assert_string_equal(out, "2001:db");
	memset(&none, 0, sizeof(none));
	yip_sockaddr_format(&none, out, sizeof(out));
	assert_int_equal(strlen(out), 7);
}

static void test_mapped_equality(void **state)
{
	union yip_sockaddr v4 = endpoint("192.0.2.1:51820");
	union yip_sockaddr mapped = endpoint("[::ffff:192.0.2.1]:51820");
	union yip_sockaddr other_port = endpoint("[::ffff:192.0.2.1]:51821");
	union yip_sockaddr other_ip = endpoint("192.0.2.2:51820");
	union yip_sockaddr v6 = endpoint("[2001:db8::1]:51820");
	union yip_sockaddr converted = v4;
	char out[YIP_ADDRSTRLEN];

	(void)state;
	assert_true(yip_sockaddr_eq(&v4, &mapped));
	assert_true(yip_sockaddr_eq(&mapped, &v4));
	assert_true(yip_sockaddr_eq(&v4, &v4));
	assert_false(yip_sockaddr_eq(&v4, &other_port));
	assert_false(yip_sockaddr_eq(&v4, &other_ip));
	assert_false(yip_sockaddr_eq(&v4, &v6));

	yip_sockaddr_to_v6(&converted);
	assert_int_equal(converted.sa.sa_family, AF_INET6);
	assert_int_equal(yip_sockaddr_len(&converted), sizeof(struct sockaddr_in6));
	assert_true(yip_sockaddr_eq(&converted, &v4));
	yip_sockaddr_format(&converted, out, sizeof(out));
	assert_string_equal(out, "192.0.2.1:51820");

	/* Converting an IPv6 address changes nothing. */
	converted = v6;
	yip_sockaddr_to_v6(&converted);
	assert_memory_equal(&converted, &v6, sizeof(v6));
}

static void test_sockaddr_len(void **state)
{
	union yip_sockaddr v4 = endpoint("192.0.2.1:1"), v6 = endpoint("[::1]:1"), none;

	(void)state;
	memset(&none, 0, sizeof(none));
	assert_int_equal(yip_sockaddr_len(&v4), sizeof(struct sockaddr_in));
	assert_int_equal(yip_sockaddr_len(&v6), sizeof(struct sockaddr_in6));
	assert_int_equal(yip_sockaddr_len(&none), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cidr_parse_table),    cmocka_unit_test(test_cidr_contains),
	    cmocka_unit_test(test_cidr_overlaps),       cmocka_unit_test(test_endpoint_parse_table),
	    cmocka_unit_test(test_endpoint_resolve),    cmocka_unit_test(test_format_round_trip),
	    cmocka_unit_test(test_format_small_buffer), cmocka_unit_test(test_mapped_equality),
	    cmocka_unit_test(test_sockaddr_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
