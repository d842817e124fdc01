/*
 * Membership objects as JSON (src/ctl/members.c): every field of every
 * kind, read back with cJSON, and numbers that stay exact.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/members.h"
#include "util/hex.h"

#define NOW 1700000000ULL
#define DAY 86400ULL

static uint8_t ca_pub[32], ca_sec[64], priv[32], pub[32], spub[32], ssec[64];

static int setup(void **state)
{
	uint8_t seed[32];

	(void)state;
	if (sodium_init() < 0)
		return -1;
	memset(seed, 7, sizeof(seed));
	member_ca_keypair(seed, ca_pub, ca_sec);
	memset(priv, 0x42, sizeof(priv));
	yip_key_public(pub, priv);
	member_sign_keypair(priv, spub, ssec);
	return 0;
}

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsString(f));
	return f->valuestring;
}

static double num(const cJSON *o, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsNumber(f));
	return f->valuedouble;
}

/* The JSON text of o, parsed back (so raw numbers are checked as text too). */
static cJSON *reparse(cJSON *o, char **text)
{
	cJSON *p;

	assert_non_null(o);
	*text = cJSON_PrintUnformatted(o);
	assert_non_null(*text);
	cJSON_Delete(o);
	p = cJSON_Parse(*text);
	assert_non_null(p);
	return p;
}

static void make_cert(struct member_cert *c, uint64_t not_after)
{
	struct wire_cert f;
	char err[64];

	memset(&f, 0, sizeof(f));
	strcpy(f.network, "example");
	strcpy(f.name, "db \"primary\"");
	memcpy(f.key, pub, 32);
	memcpy(f.sign_key, spub, 32);
	f.not_before = NOW - DAY;
	f.not_after = not_after;
	f.n_prefixes = 1;
	assert_int_equal(yip_cidr_parse("10.9.0.0/16", false, &f.prefixes[0], err, sizeof(err)), 0);
	f.n_groups = 2;
	strcpy(f.groups[0], "db");
	strcpy(f.groups[1], "prod");
	assert_int_equal(member_cert_sign(c, &f, ca_sec), 0);
}

static void cert_json(void **state)
{
	struct member_cert c;
	char *text, hex[65];
	uint8_t h[32];
	cJSON *o;

	(void)state;
	make_cert(&c, NOW + 30 * DAY + 5);
	o = reparse(yip_ctl_cert_json(&c, NOW), &text);
	assert_string_equal(str(o, "kind"), "certificate");
	assert_int_equal(num(o, "format"), 1);
	assert_int_equal(num(o, "bytes"), c.len);
	assert_string_equal(str(o, "network"), "example");
	assert_string_equal(str(o, "name"), "db \"primary\"");
	yip_hex_encode(hex, pub, 32);
	assert_string_equal(str(o, "public_key"), hex);
	yip_hex_encode(hex, spub, 32);
	assert_string_equal(str(o, "signing_key"), hex);
	assert_string_equal(str(o, "not_before"), "2023-11-13T22:13:20Z");
	assert_non_null(strstr(text, "\"not_before_unix\":1699913600"));
	assert_int_equal(num(o, "expires_in_days"), 30);
	assert_string_equal(str(o, "validity"), "expires in 30 days");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "prefixes"), 0)->valuestring,
	                    "10.9.0.0/16");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "groups")), 2);
	member_cert_hash(&c, h);
	yip_hex_encode(hex, h, 32);
	assert_string_equal(str(o, "hash"), hex);
	assert_true(strncmp(str(o, "address"), "fd", 2) == 0);
	cJSON_Delete(o);
	cJSON_free(text);

	/* Expired a day and a second ago: -2 whole days (rounded down). */
	o = reparse(yip_ctl_cert_json(&c, NOW + 31 * DAY + 6), &text);
	assert_int_equal(num(o, "expires_in_days"), -2);
	assert_string_equal(str(o, "validity"), "expired 1 day ago");
	cJSON_Delete(o);
	cJSON_free(text);
}

static void record_json(void **state)
{
	struct member_cert c;
	struct member_record r;
	union yip_sockaddr eps[1];
	char *text, err[64];
	cJSON *o, *cert;

	(void)state;
	make_cert(&c, NOW + DAY);
	assert_int_equal(
	    yip_endpoint_parse("[2001:db8::7]:4500", 0, false, &eps[0], NULL, err, sizeof(err)), 0);
	assert_int_equal(
	    member_record_sign(&r, &c, 18446744073709551000ULL, NOW + 60, eps, 1, ssec), 0);
	o = reparse(yip_ctl_record_json(&r, NOW), &text);
	assert_string_equal(str(o, "kind"), "member record");
	assert_non_null(strstr(text, "\"seq\":18446744073709551000,"));
	assert_string_equal(str(o, "expires"), "2023-11-14T22:14:20Z");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "endpoints"), 0)->valuestring,
	                    "[2001:db8::7]:4500");
	cert = cJSON_GetObjectItem(o, "certificate");
	assert_string_equal(str(cert, "kind"), "certificate");
	assert_string_equal(str(cert, "name"), "db \"primary\"");
	cJSON_Delete(o);
	cJSON_free(text);
}

static void lists_json(void **state)
{
	struct wire_roots f;
	struct member_roots r;
	struct member_revocations *rev = malloc(sizeof(*rev));
	struct member_request req;
	uint8_t e[2 * WIRE_REVOKED_ENTRY];
	char *text, hex[65], err[64];
	cJSON *o, *x;

	(void)state;
	assert_non_null(rev);
	memset(&f, 0, sizeof(f));
	strcpy(f.network, "example");
	f.serial = 9007199254740993ULL; /* not a double */
	f.issued_at = NOW;
	f.n_roots = 1;
	memcpy(f.roots[0].key, pub, 32);
	f.roots[0].n_addrs = 1;
	assert_int_equal(yip_endpoint_parse("192.0.2.9:51820", 0, false, &f.roots[0].addrs[0], NULL,
	                                    err, sizeof(err)),
	                 0);
	assert_int_equal(member_roots_sign(&r, &f, ca_sec), 0);
	o = reparse(yip_ctl_roots_json(&r), &text);
	assert_string_equal(str(o, "kind"), "root set");
	assert_non_null(strstr(text, "\"serial\":9007199254740993,"));
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "roots"), 0);
	yip_hex_encode(hex, pub, 32);
	assert_string_equal(str(x, "public_key"), hex);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(x, "endpoints"), 0)->valuestring,
	                    "192.0.2.9:51820");
	cJSON_Delete(o);
	cJSON_free(text);

	e[0] = WIRE_REVOKED_CERT;
	memset(e + 1, 0xab, 32);
	e[33] = WIRE_REVOKED_KEY;
	memcpy(e + 34, pub, 32);
	assert_int_equal(member_revocations_sign(rev, "example", 3, NOW, e, 2, ca_sec), 0);
	o = reparse(yip_ctl_revocations_json(rev), &text);
	assert_string_equal(str(o, "kind"), "revocation list");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "revoked")), 2);
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "revoked"), 0);
	assert_string_equal(str(x, "what"), "key");
	assert_string_equal(str(x, "public_key"), hex);
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "revoked"), 1);
	assert_string_equal(str(x, "what"), "certificate");
	assert_string_equal(str(x, "hash"),
	                    "abababababababababababababababababababababababababababababababab");
	cJSON_Delete(o);
	cJSON_free(text);
	free(rev);

	assert_int_equal(member_request_make(&req, priv), 0);
	o = reparse(yip_ctl_request_json(&req), &text);
	assert_string_equal(str(o, "kind"), "certificate request");
	assert_string_equal(str(o, "public_key"), hex);
	assert_int_equal(num(o, "bytes"), WIRE_REQUEST_LEN);
	cJSON_Delete(o);
	cJSON_free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(cert_json),
	    cmocka_unit_test(record_json),
	    cmocka_unit_test(lists_json),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
