/*
 * src/membership: keys, every verdict of every check, revocation, serials,
 * domain separation of the signatures, the text form and its errors, and
 * the descriptions in words.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/member.h"
#include "util/hex.h"

#define NOW   1700000000ULL /* 2023-11-14T22:13:20Z */
#define DAY   86400ULL
#define SKEW  MEMBER_SKEW_S
#define NET   "example"
#define OTHER "other-net"

/* RFC 7748's test private keys (never use them). */
static const char *const alice_hex =
    "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
static const char *const bob_hex =
    "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";

struct keys {
	uint8_t ca_pub[32], ca_sec[64];       /* the network's CA */
	uint8_t rogue_pub[32], rogue_sec[64]; /* another CA */
	uint8_t alice[32], alice_pub[32], alice_spub[32], alice_ssec[64];
	uint8_t bob[32], bob_pub[32], bob_spub[32], bob_ssec[64];
};

static struct keys K;

static int setup(void **state)
{
	uint8_t seed[32];

	(void)state;
	if (sodium_init() < 0)
		return -1;
	memset(seed, 0x01, sizeof(seed));
	member_ca_keypair(seed, K.ca_pub, K.ca_sec);
	memset(seed, 0x02, sizeof(seed));
	member_ca_keypair(seed, K.rogue_pub, K.rogue_sec);
	if (yip_hex_decode(K.alice, 32, alice_hex) != 0 || yip_hex_decode(K.bob, 32, bob_hex) != 0)
		return -1;
	yip_key_public(K.alice_pub, K.alice);
	yip_key_public(K.bob_pub, K.bob);
	member_sign_keypair(K.alice, K.alice_spub, K.alice_ssec);
	member_sign_keypair(K.bob, K.bob_spub, K.bob_ssec);
	return 0;
}

static struct yip_cidr cidr(const char *s)
{
	struct yip_cidr c;
	char err[64];

	assert_int_equal(yip_cidr_parse(s, true, &c, err, sizeof(err)), 0);
	return c;
}

static union yip_sockaddr ep(const char *s)
{
	union yip_sockaddr a;
	char err[64];

	assert_int_equal(yip_endpoint_parse(s, 0, false, &a, NULL, err, sizeof(err)), 0);
	return a;
}

/* Alice's certificate in NET, valid [NOW - 1 day, NOW + 364 days). */
static void alice_fields(struct wire_cert *f)
{
	memset(f, 0, sizeof(*f));
	strcpy(f->network, NET);
	strcpy(f->name, "alice laptop");
	memcpy(f->key, K.alice_pub, 32);
	memcpy(f->sign_key, K.alice_spub, 32);
	f->not_before = NOW - DAY;
	f->not_after = NOW + 364 * DAY;
	f->n_prefixes = 2;
	f->prefixes[0] = cidr("10.1.0.5/32");
	f->prefixes[1] = cidr("fd00:1::/64");
	f->n_groups = 1;
	strcpy(f->groups[0], "admins");
}

static void alice_cert(struct member_cert *c, const uint8_t *ca_sec)
{
	struct wire_cert f;

	alice_fields(&f);
	assert_int_equal(member_cert_sign(c, &f, ca_sec), 0);
}

/* ---- keys ------------------------------------------------------------------------ */

static void sign_keys(void **state)
{
	uint8_t pub[32], sec[64], msg[3] = "abc", sig[64];

	(void)state;
	/* Deterministic, per member, and not the yip key itself. */
	member_sign_keypair(K.alice, pub, sec);
	assert_memory_equal(pub, K.alice_spub, 32);
	assert_memory_equal(sec, K.alice_ssec, 64);
	assert_memory_not_equal(K.alice_spub, K.bob_spub, 32);
	assert_memory_not_equal(K.alice_spub, K.alice_pub, 32);
	assert_memory_not_equal(K.alice_ssec, K.alice, 32);
	/* A working Ed25519 pair. */
	crypto_sign_detached(sig, NULL, msg, sizeof(msg), sec);
	assert_int_equal(crypto_sign_verify_detached(sig, msg, sizeof(msg), pub), 0);
	/* The derivation as docs/membership.md gives it. */
	{
		uint8_t seed[32], p2[32], s2[64];
		const char *label = "yip record signing key v1";

		crypto_generichash(seed, 32, (const uint8_t *)label, strlen(label), K.alice, 32);
		crypto_sign_seed_keypair(p2, s2, seed);
		assert_memory_equal(p2, pub, 32);
	}
}

/* ---- certificates ------------------------------------------------------------------ */

static void cert_round_trip(void **state)
{
	struct member_cert c, d;

	(void)state;
	alice_cert(&c, K.ca_sec);
	assert_int_equal(member_cert_parse(&d, c.raw, c.len), MEMBER_OK);
	assert_int_equal(d.len, c.len);
	assert_memory_equal(d.raw, c.raw, c.len);
	assert_string_equal(d.f.name, "alice laptop");
	assert_int_equal(member_cert_check(&d, K.ca_pub, NET, NOW), MEMBER_OK);
	assert_int_equal(member_cert_admit(&d, K.ca_pub, NET, NULL, K.alice_pub, NOW), MEMBER_OK);
}

static void cert_verdicts(void **state)
{
	struct member_cert c, bad;
	struct wire_cert f;
	uint64_t nb, na;

	(void)state;
	alice_cert(&c, K.ca_sec);
	nb = c.f.not_before;
	na = c.f.not_after;
	/* Malformed: garbage, and a signed certificate cut short. */
	assert_int_equal(member_cert_parse(&bad, (const uint8_t *)"hello", 5), MEMBER_MALFORMED);
	assert_int_equal(member_cert_parse(&bad, c.raw, c.len - 1), MEMBER_MALFORMED);
	assert_int_equal(member_cert_check(&bad, K.ca_pub, NET, NOW), MEMBER_MALFORMED);
	/* Another CA, and one byte altered (a name, still well formed). */
	assert_int_equal(member_cert_check(&c, K.rogue_pub, NET, NOW), MEMBER_WRONG_CA);
	alice_cert(&bad, K.rogue_sec);
	assert_int_equal(member_cert_check(&bad, K.ca_pub, NET, NOW), MEMBER_WRONG_CA);
	bad = c;
	bad.raw[6 + 1 + strlen(NET) + 1] = 'A';
	assert_int_equal(member_cert_parse(&bad, bad.raw, bad.len), MEMBER_OK);
	assert_int_equal(member_cert_check(&bad, K.ca_pub, NET, NOW), MEMBER_WRONG_CA);
	bad = c;
	bad.raw[bad.len - 1] ^= 1; /* the signature */
	assert_int_equal(member_cert_check(&bad, K.ca_pub, NET, NOW), MEMBER_WRONG_CA);
	/* Another network; NULL is no network. */
	assert_int_equal(member_cert_check(&c, K.ca_pub, OTHER, NOW), MEMBER_WRONG_NETWORK);
	assert_int_equal(member_cert_check(&c, K.ca_pub, NULL, NOW), MEMBER_WRONG_NETWORK);
	/* The window and its skew, to the second. */
	assert_int_equal(member_cert_check(&c, K.ca_pub, NET, nb - SKEW), MEMBER_OK);
	assert_int_equal(member_cert_check(&c, K.ca_pub, NET, nb - SKEW - 1), MEMBER_NOT_YET_VALID);
	assert_int_equal(member_cert_check(&c, K.ca_pub, NET, 0), MEMBER_NOT_YET_VALID);
	assert_int_equal(member_cert_check(&c, K.ca_pub, NET, na + SKEW - 1), MEMBER_OK);
	assert_int_equal(member_cert_check(&c, K.ca_pub, NET, na + SKEW), MEMBER_EXPIRED);
	assert_int_equal(member_cert_check(&c, K.ca_pub, NET, UINT64_MAX), MEMBER_EXPIRED);
	/* The window at the ends of time does not overflow. */
	alice_fields(&f);
	f.not_before = 0;
	f.not_after = UINT64_MAX;
	assert_int_equal(member_cert_sign(&bad, &f, K.ca_sec), 0);
	assert_int_equal(member_cert_check(&bad, K.ca_pub, NET, 0), MEMBER_OK);
	assert_int_equal(member_cert_check(&bad, K.ca_pub, NET, UINT64_MAX), MEMBER_OK);
	/* The order: the checks that cost no Ed25519 verification first (a
	 * stranger chooses the bytes), the signature last. */
	assert_int_equal(member_cert_check(&c, K.rogue_pub, OTHER, 0), MEMBER_WRONG_NETWORK);
	assert_int_equal(member_cert_check(&c, K.rogue_pub, NET, 0), MEMBER_NOT_YET_VALID);
	assert_int_equal(member_cert_check(&c, K.rogue_pub, NET, UINT64_MAX), MEMBER_EXPIRED);
	assert_int_equal(member_cert_check(&c, K.ca_pub, OTHER, 0), MEMBER_WRONG_NETWORK);
	assert_int_equal(member_cert_admit(&c, K.rogue_pub, NET, NULL, K.bob_pub, NOW),
	                 MEMBER_KEY_MISMATCH);
	assert_int_equal(member_cert_admit(&c, K.rogue_pub, NET, NULL, K.alice_pub, NOW),
	                 MEMBER_WRONG_CA);
	/* A certificate for another key than the one presented. */
	assert_int_equal(member_cert_admit(&c, K.ca_pub, NET, NULL, K.bob_pub, NOW),
	                 MEMBER_KEY_MISMATCH);
	assert_int_equal(member_cert_admit(&c, K.ca_pub, NET, NULL, K.bob_pub, na + SKEW),
	                 MEMBER_EXPIRED);
	/* Invalid fields are not signed. */
	alice_fields(&f);
	f.prefixes[0] = cidr("10.1.0.0/16");
	f.prefixes[0].addr[3] = 5;
	assert_int_equal(member_cert_sign(&bad, &f, K.ca_sec), -1);
}

static void verdict_names(void **state)
{
	(void)state;
	assert_string_equal(member_verdict_name(MEMBER_OK), "ok");
	assert_string_equal(member_verdict_name(MEMBER_WRONG_CA), "wrong_ca");
	assert_string_equal(member_verdict_name(MEMBER_KEY_MISMATCH), "key_mismatch");
	assert_string_equal(member_verdict_name(MEMBER_VERDICT_COUNT), "?");
	for (int v = 0; v < MEMBER_VERDICT_COUNT; v++) {
		assert_non_null(member_verdict_name(v));
		assert_non_null(member_verdict_text(v));
		for (int w = v + 1; w < MEMBER_VERDICT_COUNT; w++)
			assert_string_not_equal(member_verdict_name(v), member_verdict_name(w));
	}
	assert_string_equal(member_kind_name(WIRE_OBJ_ROOTS), "root set");
	assert_string_equal(member_kind_label(WIRE_OBJ_REVOCATIONS), "REVOCATION LIST");
	assert_null(member_kind_name(0));
}

/* ---- revocation ----------------------------------------------------------------- */

static struct member_revocations *revoke(const char *network, uint64_t serial,
                                         const uint8_t *entries, size_t n, const uint8_t *ca_sec)
{
	struct member_revocations *r = malloc(sizeof(*r));

	assert_non_null(r);
	assert_int_equal(member_revocations_sign(r, network, serial, NOW, entries, n, ca_sec), 0);
	return r;
}

static void entry(uint8_t *e, uint8_t what, const uint8_t *id)
{
	e[0] = what;
	memcpy(e + 1, id, 32);
}

static void revocation(void **state)
{
	struct member_cert a, a2, b;
	struct wire_cert f;
	struct member_revocations *r, *r2;
	uint8_t e[4 * WIRE_REVOKED_ENTRY], h[32];

	(void)state;
	alice_cert(&a, K.ca_sec);
	alice_fields(&f);
	f.not_after += DAY; /* a second certificate for the same key */
	assert_int_equal(member_cert_sign(&a2, &f, K.ca_sec), 0);
	memcpy(f.key, K.bob_pub, 32);
	memcpy(f.sign_key, K.bob_spub, 32);
	assert_int_equal(member_cert_sign(&b, &f, K.ca_sec), 0);

	/* By hash: that certificate only. */
	member_cert_hash(&a, h);
	{
		uint8_t want[32];

		crypto_generichash(want, 32, a.raw, a.len, NULL, 0);
		assert_memory_equal(h, want, 32);
	}
	entry(e, WIRE_REVOKED_CERT, h);
	r = revoke(NET, 1, e, 1, K.ca_sec);
	assert_true(member_is_revoked(r, &a));
	assert_false(member_is_revoked(r, &a2));
	assert_false(member_is_revoked(r, &b));
	assert_int_equal(member_cert_admit(&a, K.ca_pub, NET, r, K.alice_pub, NOW), MEMBER_REVOKED);
	assert_int_equal(member_cert_admit(&a2, K.ca_pub, NET, r, K.alice_pub, NOW), MEMBER_OK);
	/* By key: every certificate for it. Duplicates merge, order does not matter. */
	entry(e, WIRE_REVOKED_KEY, K.alice_pub);
	entry(e + 33, WIRE_REVOKED_CERT, h);
	entry(e + 66, WIRE_REVOKED_KEY, K.alice_pub);
	r2 = revoke(NET, 2, e, 3, K.ca_sec);
	assert_int_equal(r2->f.n, 2);
	assert_true(member_is_revoked(r2, &a));
	assert_true(member_is_revoked(r2, &a2));
	assert_false(member_is_revoked(r2, &b));
	assert_true(member_revocations_has(r2, WIRE_REVOKED_KEY, K.alice_pub));
	assert_false(member_revocations_has(r2, WIRE_REVOKED_CERT, K.alice_pub));
	assert_false(member_is_revoked(NULL, &a));
	assert_int_equal(member_cert_admit(&a2, K.ca_pub, NET, r2, K.alice_pub, NOW),
	                 MEMBER_REVOKED);
	/* A revoked key is refused before its certificate's signature is
	 * checked: one under another CA's key says revoked, not wrong_ca. */
	assert_int_equal(member_cert_admit(&a2, K.rogue_pub, NET, r2, K.alice_pub, NOW),
	                 MEMBER_REVOKED);
	/* The entries come out sorted. */
	assert_int_equal(member_revocations_entries(r2)[0], WIRE_REVOKED_KEY);
	assert_int_equal(member_revocations_entries(r2)[33], WIRE_REVOKED_CERT);
	free(r);
	free(r2);
}

static void revocation_lists(void **state)
{
	struct member_revocations *r1, *r2, *copy;
	uint8_t e[WIRE_REVOKED_ENTRY], *many;

	(void)state;
	entry(e, WIRE_REVOKED_KEY, K.bob_pub);
	r1 = revoke(NET, 10, e, 1, K.ca_sec);
	r2 = revoke(NET, 11, NULL, 0, K.ca_sec);
	assert_int_equal(member_revocations_check(r1, K.ca_pub, NET, 0), MEMBER_OK);
	assert_int_equal(member_revocations_check(r1, K.ca_pub, NET, 10), MEMBER_OK);
	assert_int_equal(member_revocations_check(r1, K.ca_pub, NET, 11), MEMBER_OLDER);
	assert_int_equal(member_revocations_check(r1, K.rogue_pub, NET, 0), MEMBER_WRONG_CA);
	assert_int_equal(member_revocations_check(r1, K.ca_pub, OTHER, 0), MEMBER_WRONG_NETWORK);
	assert_true(member_revocations_newer(r2, r1));
	assert_false(member_revocations_newer(r1, r2));
	assert_false(member_revocations_newer(r1, r1));
	/* Parsed from its bytes, and copied: the entries follow the struct. */
	copy = malloc(sizeof(*copy));
	assert_non_null(copy);
	assert_int_equal(member_revocations_parse(copy, r1->raw, r1->len), MEMBER_OK);
	assert_true(member_revocations_has(copy, WIRE_REVOKED_KEY, K.bob_pub));
	memcpy(r2, copy, sizeof(*copy));
	memset(copy, 0, sizeof(*copy));
	assert_true(member_revocations_has(r2, WIRE_REVOKED_KEY, K.bob_pub));
	assert_int_equal(member_revocations_check(r2, K.ca_pub, NET, 0), MEMBER_OK);
	/* Altered after signing. */
	r2->raw[r2->len - 65] ^= 0x01; /* the last byte of the revoked key */
	assert_int_equal(member_revocations_parse(r2, r2->raw, r2->len), MEMBER_OK);
	assert_int_equal(member_revocations_check(r2, K.ca_pub, NET, 0), MEMBER_WRONG_CA);
	assert_int_equal(member_revocations_parse(r2, r2->raw, 10), MEMBER_MALFORMED);
	assert_int_equal(member_revocations_check(r2, K.ca_pub, NET, 0), MEMBER_MALFORMED);

	/* The limit counts distinct entries; a bad entry or network is refused. */
	many = malloc((WIRE_REVOKED_MAX + 1) * WIRE_REVOKED_ENTRY);
	assert_non_null(many);
	for (unsigned i = 0; i <= WIRE_REVOKED_MAX; i++) {
		uint8_t *x = many + i * WIRE_REVOKED_ENTRY;

		x[0] = WIRE_REVOKED_CERT;
		memset(x + 1, 0x42, 32);
		x[1] = (uint8_t)i;
		x[2] = (uint8_t)(i >> 8);
	}
	assert_int_equal(
	    member_revocations_sign(copy, NET, 1, NOW, many, WIRE_REVOKED_MAX + 1, K.ca_sec), -1);
	memcpy(many + WIRE_REVOKED_MAX * WIRE_REVOKED_ENTRY, many, WIRE_REVOKED_ENTRY);
	assert_int_equal(
	    member_revocations_sign(copy, NET, 1, NOW, many, WIRE_REVOKED_MAX + 1, K.ca_sec), 0);
	assert_int_equal(copy->f.n, WIRE_REVOKED_MAX);
	assert_int_equal(copy->len, WIRE_OBJ_HDR + 1 + strlen(NET) + 16 + 2 +
	                                WIRE_REVOKED_MAX * WIRE_REVOKED_ENTRY + 64);
	assert_int_equal(member_revocations_check(copy, K.ca_pub, NET, 0), MEMBER_OK);
	many[0] = 9;
	assert_int_equal(member_revocations_sign(copy, NET, 1, NOW, many, 1, K.ca_sec), -1);
	assert_int_equal(member_revocations_sign(copy, "Bad", 1, NOW, NULL, 0, K.ca_sec), -1);
	free(many);
	free(copy);
	free(r1);
	free(r2);
}

/* ---- root sets ------------------------------------------------------------------- */

static void roots_fields(struct wire_roots *f, uint64_t serial)
{
	memset(f, 0, sizeof(*f));
	strcpy(f->network, NET);
	f->serial = serial;
	f->issued_at = NOW;
	f->n_roots = 2;
	memcpy(f->roots[0].key, K.alice_pub, 32);
	f->roots[0].n_addrs = 2;
	f->roots[0].addrs[0] = ep("192.0.2.1:51820");
	f->roots[0].addrs[1] = ep("[2001:db8::1]:51820");
	memcpy(f->roots[1].key, K.bob_pub, 32);
	f->roots[1].n_addrs = 1;
	f->roots[1].addrs[0] = ep("198.51.100.2:443");
}

static void root_sets(void **state)
{
	struct wire_roots f;
	struct member_roots r5, r6, p;

	(void)state;
	roots_fields(&f, 5);
	assert_int_equal(member_roots_sign(&r5, &f, K.ca_sec), 0);
	roots_fields(&f, 6);
	f.n_roots = 1;
	assert_int_equal(member_roots_sign(&r6, &f, K.ca_sec), 0);
	assert_int_equal(member_roots_parse(&p, r5.raw, r5.len), MEMBER_OK);
	assert_int_equal(p.f.n_roots, 2);
	assert_true(yip_sockaddr_eq(&p.f.roots[0].addrs[1], &f.roots[0].addrs[1]));
	assert_int_equal(member_roots_check(&p, K.ca_pub, NET, 0), MEMBER_OK);
	assert_int_equal(member_roots_check(&p, K.ca_pub, NET, 5), MEMBER_OK);
	/* Rollback: a set older than one seen. */
	assert_int_equal(member_roots_check(&p, K.ca_pub, NET, 6), MEMBER_OLDER);
	assert_int_equal(member_roots_check(&r6, K.ca_pub, NET, 5), MEMBER_OK);
	assert_true(member_roots_newer(&r6, &r5));
	assert_false(member_roots_newer(&r5, &r6));
	assert_false(member_roots_newer(&r5, &p));
	assert_int_equal(member_roots_check(&p, K.rogue_pub, NET, 0), MEMBER_WRONG_CA);
	assert_int_equal(member_roots_check(&p, K.ca_pub, OTHER, 0), MEMBER_WRONG_NETWORK);
	/* A serial changed after signing: the rollback cannot be forged upwards. */
	p.raw[6 + 1 + strlen(NET)] = 7;
	assert_int_equal(member_roots_parse(&p, p.raw, p.len), MEMBER_OK);
	assert_int_equal(p.f.serial, 7);
	assert_int_equal(member_roots_check(&p, K.ca_pub, NET, 6), MEMBER_WRONG_CA);
	assert_int_equal(member_roots_parse(&p, r5.raw, r5.len + 1), MEMBER_MALFORMED);
	assert_int_equal(member_roots_check(&p, K.ca_pub, NET, 0), MEMBER_MALFORMED);
	f.roots[0].addrs[0] = ep("0.0.0.0:51820");
	assert_int_equal(member_roots_sign(&p, &f, K.ca_sec), -1);
}

/* ---- requests ----------------------------------------------------------------------- */

static void requests(void **state)
{
	struct member_request r, p;
	uint8_t zero[32] = {0};

	(void)state;
	assert_int_equal(member_request_make(&r, K.alice), 0);
	assert_int_equal(r.len, WIRE_REQUEST_LEN);
	assert_memory_equal(r.f.key, K.alice_pub, 32);
	assert_memory_equal(r.f.sign_key, K.alice_spub, 32);
	assert_int_equal(member_request_parse(&p, r.raw, r.len), MEMBER_OK);
	assert_int_equal(member_request_check(&p), MEMBER_OK);
	/* Another signing key put in: the self-signature no longer holds. */
	memcpy(p.raw + 6 + 32, K.bob_spub, 32);
	assert_int_equal(member_request_parse(&p, p.raw, p.len), MEMBER_OK);
	assert_int_equal(member_request_check(&p), MEMBER_BAD_SIGNATURE);
	/* Another yip key, same signing key. */
	assert_int_equal(member_request_parse(&p, r.raw, r.len), MEMBER_OK);
	memcpy(p.raw + 6, K.bob_pub, 32);
	assert_int_equal(member_request_parse(&p, p.raw, p.len), MEMBER_OK);
	assert_int_equal(member_request_check(&p), MEMBER_BAD_SIGNATURE);
	assert_int_equal(member_request_parse(&p, r.raw, r.len - 1), MEMBER_MALFORMED);
	assert_int_equal(member_request_check(&p), MEMBER_MALFORMED);
	assert_int_equal(member_request_make(&p, zero), -1);
}

/* ---- records ----------------------------------------------------------------------- */

static void alice_record(struct member_record *r, const struct member_cert *c, uint64_t expires)
{
	union yip_sockaddr eps[2] = {ep("203.0.113.5:40000"), ep("[2001:db8::5]:51820")};

	assert_int_equal(member_record_sign(r, c, NOW * 1000 + 123, expires, eps, 2, K.alice_ssec),
	                 0);
}

static void records(void **state)
{
	struct member_cert c, rogue;
	struct member_record r, p, older;
	struct member_revocations *rev;
	union yip_sockaddr wild = ep("0.0.0.0:51820");
	uint8_t e[WIRE_REVOKED_ENTRY];

	(void)state;
	alice_cert(&c, K.ca_sec);
	alice_record(&r, &c, NOW + 3600);
	assert_true(r.len <= 400);
	assert_int_equal(member_record_parse(&p, r.raw, r.len), MEMBER_OK);
	assert_memory_equal(p.cert.raw, c.raw, c.len);
	assert_int_equal(p.cert.len, c.len);
	assert_true(p.f.seq == NOW * 1000 + 123 && p.f.expires == NOW + 3600);
	assert_int_equal(p.f.n_endpoints, 2);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW), MEMBER_OK);
	/* The record's own expiry, with the skew. */
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW + 3600 + SKEW - 1),
	                 MEMBER_OK);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW + 3600 + SKEW),
	                 MEMBER_EXPIRED);
	/* Its certificate's verdicts come through. */
	assert_int_equal(member_record_check(&p, K.rogue_pub, NET, NULL, NOW), MEMBER_WRONG_CA);
	assert_int_equal(member_record_check(&p, K.ca_pub, OTHER, NULL, NOW), MEMBER_WRONG_NETWORK);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW - 2 * DAY),
	                 MEMBER_NOT_YET_VALID);
	alice_record(&r, &c, NOW + 400 * DAY);
	assert_int_equal(member_record_check(&r, K.ca_pub, NET, NULL, NOW + 365 * DAY),
	                 MEMBER_EXPIRED);
	alice_cert(&rogue, K.rogue_sec);
	alice_record(&r, &rogue, NOW + 3600);
	assert_int_equal(member_record_check(&r, K.ca_pub, NET, NULL, NOW), MEMBER_WRONG_CA);
	/* Revoked. */
	entry(e, WIRE_REVOKED_KEY, K.alice_pub);
	rev = revoke(NET, 1, e, 1, K.ca_sec);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, rev, NOW), MEMBER_REVOKED);
	free(rev);
	/* Altered after signing: an endpoint, the seq. */
	p.raw[p.len - 64 - 1] ^= 1;
	assert_int_equal(member_record_parse(&p, p.raw, p.len), MEMBER_OK);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW), MEMBER_BAD_SIGNATURE);
	alice_record(&r, &c, NOW + 3600);
	p = r;
	p.raw[6 + c.len] ^= 1;
	assert_int_equal(member_record_parse(&p, p.raw, p.len), MEMBER_OK);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW), MEMBER_BAD_SIGNATURE);
	/* Signed with the CA's key instead of the member's: refused when built, and
	 * a record so signed does not verify. */
	assert_int_equal(member_record_sign(&p, &c, 1, NOW, NULL, 0, K.ca_sec), -1);
	assert_int_equal(member_record_sign(&p, &c, 1, NOW, NULL, 0, K.bob_ssec), -1);
	/* Never a wildcard endpoint. */
	assert_int_equal(member_record_sign(&p, &c, 1, NOW, &wild, 1, K.alice_ssec), -1);
	/* No endpoints is a record. */
	assert_int_equal(member_record_sign(&p, &c, 1, NOW + 60, NULL, 0, K.alice_ssec), 0);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW), MEMBER_OK);
	/* Newer: same member, higher seq. */
	older = p;
	assert_true(member_record_newer(&r, &older));
	assert_false(member_record_newer(&older, &r));
	assert_false(member_record_newer(&r, &r));
	assert_int_equal(member_record_parse(&p, r.raw, 50), MEMBER_MALFORMED);
	assert_int_equal(member_record_check(&p, K.ca_pub, NET, NULL, NOW), MEMBER_MALFORMED);
}

/* ---- domain separation -------------------------------------------------------- */

/* Verifies obj's signature as if it were of another kind (context ctx). */
static bool verifies_as(const uint8_t *obj, size_t len, const char *ctx, const uint8_t *pub)
{
	size_t clen = strlen(ctx) + 1, blen = len - 64;
	uint8_t *m = malloc(clen + blen);
	bool ok;

	assert_non_null(m);
	memcpy(m, ctx, clen);
	memcpy(m + clen, obj, blen);
	ok = crypto_sign_verify_detached(obj + blen, m, clen + blen, pub) == 0;
	free(m);
	return ok;
}

static void domain_separation(void **state)
{
	static const char *const ctxs[] = {WIRE_CTX_CERT, WIRE_CTX_ROOTS, WIRE_CTX_REVOCATIONS,
	                                   WIRE_CTX_RECORD, WIRE_CTX_REQUEST};
	struct member_cert c, nc;
	struct member_roots r;
	struct member_record rec;
	struct member_request req;
	struct member_revocations *rev;
	struct wire_roots rf;
	struct wire_cert f;
	const struct {
		const uint8_t *raw;
		size_t len;
		const uint8_t *pub;
		const char *ctx;
	} objs[] = {
	    {c.raw, 0, K.ca_pub, WIRE_CTX_CERT},
	    {r.raw, 0, K.ca_pub, WIRE_CTX_ROOTS},
	    {NULL, 0, K.ca_pub, WIRE_CTX_REVOCATIONS},
	    {rec.raw, 0, K.alice_spub, WIRE_CTX_RECORD},
	    {req.raw, 0, K.alice_spub, WIRE_CTX_REQUEST},
	};
	size_t lens[5];

	(void)state;
	alice_cert(&c, K.ca_sec);
	roots_fields(&rf, 1);
	assert_int_equal(member_roots_sign(&r, &rf, K.ca_sec), 0);
	rev = revoke(NET, 1, NULL, 0, K.ca_sec);
	alice_record(&rec, &c, NOW + 60);
	assert_int_equal(member_request_make(&req, K.alice), 0);
	lens[0] = c.len;
	lens[1] = r.len;
	lens[2] = rev->len;
	lens[3] = rec.len;
	lens[4] = req.len;
	/* Each signature verifies under its own context and no other. */
	for (size_t i = 0; i < 5; i++) {
		const uint8_t *raw = i == 2 ? rev->raw : objs[i].raw;

		for (size_t j = 0; j < 5; j++)
			assert_int_equal(verifies_as(raw, lens[i], ctxs[j], objs[i].pub), i == j);
	}
	/* A signature over the bare bytes (no context), as the original made it,
	 * is refused. */
	alice_fields(&f);
	assert_int_equal(member_cert_sign(&nc, &f, K.ca_sec), 0);
	crypto_sign_detached(nc.raw + nc.len - 64, NULL, nc.raw, nc.len - 64, K.ca_sec);
	assert_int_equal(member_cert_parse(&nc, nc.raw, nc.len), MEMBER_OK);
	assert_int_equal(member_cert_check(&nc, K.ca_pub, NET, NOW), MEMBER_WRONG_CA);
	/* A member's signing key is no CA: a certificate Alice signs herself. */
	assert_int_equal(member_cert_sign(&nc, &f, K.alice_ssec), 0);
	assert_int_equal(member_cert_check(&nc, K.alice_spub, NET, NOW), MEMBER_OK);
	assert_int_equal(member_cert_check(&nc, K.ca_pub, NET, NOW), MEMBER_WRONG_CA);
	free(rev);
}

/* ---- text form ------------------------------------------------------------------ */

static char *armor_of(const uint8_t *obj, size_t len)
{
	size_t cap = member_armor_size(len), n;
	char *t = malloc(cap);

	assert_non_null(t);
	n = member_armor(t, cap, obj, len);
	assert_int_equal(n, strlen(t));
	assert_true(strlen(t) < cap);
	return t;
}

static void armor_round_trips(void **state)
{
	static uint8_t out[WIRE_OBJ_MAX];
	struct member_cert c;
	struct member_roots r;
	struct member_request req;
	struct member_record rec;
	struct member_revocations *rev;
	struct wire_roots rf;
	uint8_t *many;
	const uint8_t *objs[5];
	size_t lens[5], n;
	char err[160];

	(void)state;
	alice_cert(&c, K.ca_sec);
	roots_fields(&rf, 1);
	assert_int_equal(member_roots_sign(&r, &rf, K.ca_sec), 0);
	assert_int_equal(member_request_make(&req, K.alice), 0);
	alice_record(&rec, &c, NOW + 60);
	many = calloc(WIRE_REVOKED_MAX, WIRE_REVOKED_ENTRY);
	assert_non_null(many);
	for (unsigned i = 0; i < WIRE_REVOKED_MAX; i++) {
		many[i * 33] = WIRE_REVOKED_KEY;
		many[i * 33 + 1] = (uint8_t)i;
		many[i * 33 + 2] = (uint8_t)(i >> 8);
		many[i * 33 + 3] = 1;
	}
	rev = revoke(NET, 1, many, WIRE_REVOKED_MAX, K.ca_sec); /* the largest object */
	free(many);
	objs[0] = c.raw, lens[0] = c.len;
	objs[1] = r.raw, lens[1] = r.len;
	objs[2] = req.raw, lens[2] = req.len;
	objs[3] = rec.raw, lens[3] = rec.len;
	objs[4] = rev->raw, lens[4] = rev->len;
	for (size_t i = 0; i < 5; i++) {
		char *t = armor_of(objs[i], lens[i]);
		char *line2 = strchr(t, '\n') + 1;

		assert_int_equal(strncmp(t, "-----BEGIN YIP ", 15), 0);
		assert_int_equal(strcspn(line2, "\n"), MEMBER_ARMOR_COLS); /* every object > 48 B */
		assert_int_equal(member_unarmor(t, strlen(t), objs[i][0], out, sizeof(out), &n, err,
		                                sizeof(err)),
		                 0);
		assert_int_equal(n, lens[i]);
		assert_memory_equal(out, objs[i], n);
		assert_int_equal(
		    member_unarmor(t, strlen(t), 0, out, sizeof(out), &n, err, sizeof(err)), 0);
		assert_int_equal(n, lens[i]);
		/* Too small an output buffer. */
		assert_int_equal(
		    member_unarmor(t, strlen(t), 0, out, lens[i] - 4, &n, err, sizeof(err)), -1);
		assert_int_equal(member_armor(t, member_armor_size(lens[i]) - 1, objs[i], lens[i]),
		                 0);
		free(t);
	}
	free(rev);
}

/* Reads text and expects failure with msg in the error. */
static void bad_text(const char *text, uint8_t want, const char *msg)
{
	static uint8_t out[WIRE_OBJ_MAX];
	char err[200] = "";
	size_t n = 99;

	assert_int_equal(
	    member_unarmor(text, strlen(text), want, out, sizeof(out), &n, err, sizeof(err)), -1);
	if (strstr(err, msg) == NULL)
		fail_msg("wanted '%s' in the error for <<%s>>, got '%s'", msg, text, err);
	assert_int_equal(n, 0);
}

/* Base64 of b (len bytes) into out. */
static void b64(char *out, size_t cap, const uint8_t *b, size_t len)
{
	sodium_bin2base64(out, cap, b, len, sodium_base64_VARIANT_ORIGINAL);
}

static void armor_tolerance_and_errors(void **state)
{
	static uint8_t out[WIRE_OBJ_MAX];
	struct member_cert c;
	struct member_request req;
	char *t, text[4096], enc[2048], err[200];
	uint8_t copy[WIRE_CERT_MAX + 8];
	size_t n;

	(void)state;
	alice_cert(&c, K.ca_sec);
	t = armor_of(c.raw, c.len);

	/* Comments, blank lines, indentation, CRLF, a byte order mark, base64
	 * rewrapped with spaces inside. */
	b64(enc, sizeof(enc), c.raw, c.len);
	snprintf(text, sizeof(text),
	         "\xef\xbb\xbf# a certificate\r\n\r\n   # indented comment\r\n"
	         "  -----BEGIN YIP CERTIFICATE-----  \r\n"
	         "\t%.20s %.30s\r\n\r\n%s\r\n-----END YIP CERTIFICATE-----\r\n# after\r\n\r\n",
	         enc, enc + 20, enc + 50);
	assert_int_equal(member_unarmor(text, strlen(text), WIRE_OBJ_CERT, out, sizeof(out), &n,
	                                err, sizeof(err)),
	                 0);
	assert_int_equal(n, c.len);
	assert_memory_equal(out, c.raw, n);
	/* No newline at the end. */
	t[strlen(t) - 1] = '\0';
	assert_int_equal(
	    member_unarmor(t, strlen(t), WIRE_OBJ_CERT, out, sizeof(out), &n, err, sizeof(err)), 0);

	bad_text("", 0, "no -----BEGIN YIP ...----- line");
	bad_text("# only a comment\n\n", 0, "no -----BEGIN YIP ...----- line");
	bad_text("private=0011\n", 0,
	         "line 1: expected a line like -----BEGIN YIP CERTIFICATE-----");
	bad_text("-----BEGIN YIP PASSPORT-----\n", 0, "line 1: unknown object 'YIP PASSPORT'");
	bad_text("-----BEGIN YIP CERTIFICATE-----\nAAAA\n", 0,
	         "no -----END YIP CERTIFICATE----- line");
	bad_text("-----BEGIN YIP CERTIFICATE-----\nAA!A\n-----END YIP CERTIFICATE-----\n", 0,
	         "line 2: not base64 ('!' in column 3)");
	bad_text("#\n-----BEGIN YIP CERTIFICATE-----\nAAAA\n# no comments inside\n", 0,
	         "line 4: not base64 ('#' in column 1)");
	bad_text(
	    "-----BEGIN YIP CERTIFICATE-----\nAAAA\n-----END YIP ROOT SET-----\n", 0,
	    "line 3: '-----END YIP ROOT SET-----' does not close -----BEGIN YIP CERTIFICATE-----");
	bad_text("-----BEGIN YIP CERTIFICATE-----\nAA\x01\x41\n", 0,
	         "not base64 (0x01 in column 3)");
	bad_text("-----BEGIN YIP CERTIFICATE-----\nAAA\n-----END YIP CERTIFICATE-----\n", 0,
	         "the base64 does not decode");
	/* One object per file. */
	snprintf(text, sizeof(text), "%s\n%s", t, t);
	snprintf(err, sizeof(err),
	         "line %zu: more text after -----END YIP CERTIFICATE----- (one object per file)",
	         (c.len + 47) / 48 + 3);
	bad_text(text, 0, err);
	/* What was wanted. */
	bad_text(t, WIRE_OBJ_ROOTS, "this is a certificate, not a root set");
	assert_int_equal(member_request_make(&req, K.alice), 0);
	free(t);
	t = armor_of(req.raw, req.len);
	bad_text(t, WIRE_OBJ_CERT, "this is a certificate request, not a certificate");
	free(t);

	/* The bytes against the label and the header. */
#define ARMORED(bytes, len, label)                                                                 \
	do {                                                                                       \
		b64(enc, sizeof(enc), (bytes), (len));                                             \
		snprintf(text, sizeof(text), "-----BEGIN YIP %s-----\n%s\n-----END YIP %s-----\n", \
		         label, enc, label);                                                       \
	} while (0)
	ARMORED(req.raw, req.len, "CERTIFICATE");
	bad_text(text, 0, "the text says certificate, but its bytes are a certificate request");
	ARMORED((const uint8_t *)"\x01\x02\x03\x04\x05\x06\x07", 7, "ROOT SET");
	bad_text(text, 0, "the text says root set, but its bytes are no yip object");
	ARMORED(c.raw, 4, "CERTIFICATE");
	bad_text(text, 0, "truncated: 4 bytes, too short for any certificate");
	ARMORED(c.raw, 120, "CERTIFICATE");
	snprintf(err, sizeof(err), "truncated: 120 of %zu bytes", c.len);
	bad_text(text, 0, err);
	memcpy(copy, c.raw, c.len);
	copy[c.len] = 0;
	ARMORED(copy, c.len + 1, "CERTIFICATE");
	snprintf(err, sizeof(err),
	         "%zu bytes, but the certificate's header says %zu (trailing bytes)", c.len + 1,
	         c.len);
	bad_text(text, 0, err);
	copy[1] = 2;
	ARMORED(copy, c.len, "CERTIFICATE");
	bad_text(text, 0,
	         "format version 2 of a certificate is not supported (this yip reads version 1)");
#undef ARMORED
	/* A NUL in the text. */
	memcpy(text, "-----BEGIN YIP CERTIFICATE-----\nAA\0A\n", 37);
	n = 99;
	assert_int_equal(member_unarmor(text, 37, 0, out, sizeof(out), &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "line 2: a NUL byte"));
}

/* ---- descriptions ----------------------------------------------------------------- */

struct lines {
	char text[8192];
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", line);
}

static void want_line(const struct lines *l, const char *s)
{
	if (strstr(l->text, s) == NULL)
		fail_msg("wanted '%s' in:\n%s", s, l->text);
}

static void descriptions(void **state)
{
	struct member_cert c;
	struct member_record rec;
	struct member_roots r;
	struct member_request req;
	struct member_revocations *rev;
	struct wire_roots rf;
	struct lines l;
	char want[160], hex[65], t[MEMBER_TIME_LEN];
	uint8_t e[WIRE_REVOKED_ENTRY], h[32];

	(void)state;
	member_format_time(t, 0);
	assert_string_equal(t, "1970-01-01T00:00:00Z");
	member_format_time(t, NOW);
	assert_string_equal(t, "2023-11-14T22:13:20Z");
	member_format_time(t, UINT64_MAX);
	assert_string_equal(t, "@18446744073709551615");
	member_format_validity(want, sizeof(want), NOW, NOW + 365 * DAY, NOW);
	assert_string_equal(want, "expires in 365 days");
	member_format_validity(want, sizeof(want), NOW, NOW + DAY + 5, NOW);
	assert_string_equal(want, "expires in 1 day");
	member_format_validity(want, sizeof(want), NOW, NOW + 7200, NOW + 1);
	assert_string_equal(want, "expires in 1 hour");
	member_format_validity(want, sizeof(want), NOW, NOW + 10, NOW);
	assert_string_equal(want, "expires in 10 seconds");
	member_format_validity(want, sizeof(want), NOW, NOW + 10, NOW + 10 + 3 * DAY);
	assert_string_equal(want, "expired 3 days ago");
	member_format_validity(want, sizeof(want), NOW + 120, NOW + 1000, NOW);
	assert_string_equal(want, "not valid for another 2 minutes");

	alice_cert(&c, K.ca_sec);
	memset(&l, 0, sizeof(l));
	member_cert_describe(&c, NOW, collect, &l);
	want_line(&l, "certificate (format 1, ");
	want_line(&l, "  network:     example\n");
	want_line(&l, "  name:        alice laptop\n");
	yip_hex_encode(hex, K.alice_pub, 32);
	snprintf(want, sizeof(want), "  member key:  %s\n", hex);
	want_line(&l, want);
	want_line(&l, "  valid from:  2023-11-13T22:13:20Z\n");
	want_line(&l, "  valid until: 2024-11-12T22:13:20Z (expires in 364 days)\n");
	want_line(&l, "  prefixes:    10.1.0.5/32, fd00:1::/64\n");
	want_line(&l, "  groups:      admins\n");
	member_cert_hash(&c, h);
	yip_hex_encode(hex, h, 32);
	snprintf(want, sizeof(want), "  hash:        %s\n", hex);
	want_line(&l, want);
	want_line(&l, "(derived from the key)");

	alice_record(&rec, &c, NOW + 3600);
	memset(&l, 0, sizeof(l));
	member_record_describe(&rec, NOW, collect, &l);
	want_line(&l, "member record (format 1, ");
	want_line(&l, "  seq:         1700000000123 (signed 2023-11-14T22:13:20Z)\n");
	want_line(&l, "  expires:     2023-11-14T23:13:20Z (expires in 1 hour)\n");
	want_line(&l, "  endpoints:   203.0.113.5:40000, [2001:db8::5]:51820\n");
	want_line(&l, "    name:        alice laptop\n");

	roots_fields(&rf, 42);
	assert_int_equal(member_roots_sign(&r, &rf, K.ca_sec), 0);
	memset(&l, 0, sizeof(l));
	member_roots_describe(&r, collect, &l);
	want_line(&l, "  serial:      42\n");
	yip_hex_encode(hex, K.alice_pub, 32);
	snprintf(want, sizeof(want), "    %s 192.0.2.1:51820, [2001:db8::1]:51820\n", hex);
	want_line(&l, want);

	entry(e, WIRE_REVOKED_CERT, h);
	rev = revoke(NET, 3, e, 1, K.ca_sec);
	memset(&l, 0, sizeof(l));
	member_revocations_describe(rev, collect, &l);
	want_line(&l, "  revoked:     1\n");
	yip_hex_encode(hex, h, 32);
	snprintf(want, sizeof(want), "    certificate %s\n", hex);
	want_line(&l, want);
	free(rev);

	assert_int_equal(member_request_make(&req, K.alice), 0);
	memset(&l, 0, sizeof(l));
	member_request_describe(&req, collect, &l);
	yip_hex_encode(hex, K.alice_spub, 32);
	snprintf(want, sizeof(want), "  signing key: %s\n", hex);
	want_line(&l, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sign_keys),         cmocka_unit_test(cert_round_trip),
	    cmocka_unit_test(cert_verdicts),     cmocka_unit_test(verdict_names),
	    cmocka_unit_test(revocation),        cmocka_unit_test(revocation_lists),
	    cmocka_unit_test(root_sets),         cmocka_unit_test(requests),
	    cmocka_unit_test(records),           cmocka_unit_test(domain_separation),
	    cmocka_unit_test(armor_round_trips), cmocka_unit_test(armor_tolerance_and_errors),
	    cmocka_unit_test(descriptions),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
