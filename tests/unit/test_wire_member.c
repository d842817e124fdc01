/*
 * The membership objects byte by byte (src/wire/member.h): each encoder
 * against the layout in docs/protocol.md written out by hand, round trips,
 * and every refusal of the decoders. Signatures are not looked at here
 * (test_member.c does).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "wire/member.h"

/* ---- building expected bytes ---------------------------------------------------- */

struct buf {
	uint8_t b[WIRE_REVOCATIONS_MAX];
	size_t n;
};

static void add(struct buf *x, const void *p, size_t k)
{
	memcpy(x->b + x->n, p, k);
	x->n += k;
}

static void add8(struct buf *x, uint8_t v)
{
	add(x, &v, 1);
}

static void add_fill(struct buf *x, uint8_t v, size_t k)
{
	memset(x->b + x->n, v, k);
	x->n += k;
}

static void add64(struct buf *x, uint64_t v)
{
	uint8_t b[8];

	wire_put64(b, v);
	add(x, b, 8);
}

static void add_str(struct buf *x, const char *s)
{
	add8(x, (uint8_t)strlen(s));
	add(x, s, strlen(s));
}

/* Patches the length field once the object is complete. */
static void finish(struct buf *x)
{
	wire_put32(x->b + 2, (uint32_t)x->n);
}

static void hdr(struct buf *x, uint8_t kind)
{
	x->n = 0;
	add8(x, kind);
	add8(x, 1);
	add_fill(x, 0, 4);
}

static union yip_sockaddr v4(const char *ip, uint16_t port)
{
	union yip_sockaddr a = {.in4 = {.sin_family = AF_INET, .sin_port = htons(port)}};

	assert_int_equal(inet_pton(AF_INET, ip, &a.in4.sin_addr), 1);
	return a;
}

static union yip_sockaddr v6(const char *ip, uint16_t port)
{
	union yip_sockaddr a = {.in6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)}};

	assert_int_equal(inet_pton(AF_INET6, ip, &a.in6.sin6_addr), 1);
	return a;
}

static struct yip_cidr cidr4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t plen)
{
	struct yip_cidr p = {.family = AF_INET, .plen = plen, .addr = {a, b, c, d}};

	return p;
}

/* The small certificate of cert_layout. */
static void small_cert(struct wire_cert *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->network, "n");
	strcpy(c->name, "A");
	memset(c->key, 0x11, sizeof(c->key));
	memset(c->sign_key, 0x22, sizeof(c->sign_key));
	c->not_before = 1;
	c->not_after = 2;
	c->n_prefixes = 1;
	c->prefixes[0] = cidr4(10, 0, 0, 0, 8);
	c->n_groups = 1;
	strcpy(c->groups[0], "g");
	memset(c->sig, 0x33, sizeof(c->sig));
}

static void small_cert_bytes(struct buf *x)
{
	hdr(x, WIRE_OBJ_CERT);
	add_str(x, "n");
	add_str(x, "A");
	add_fill(x, 0x11, 32);
	add_fill(x, 0x22, 32);
	add64(x, 1);
	add64(x, 2);
	add8(x, 1);
	add(x, "\x04\x08\x0a\x00\x00\x00", 6);
	add8(x, 1);
	add_str(x, "g");
	add_fill(x, 0x33, 64);
	finish(x);
}

/* Every proper prefix of an object and the object plus a byte are refused. */
#define CHECK_CUTS(get, obj, len, ...)                                                             \
	do {                                                                                       \
		uint8_t longer_[WIRE_OBJ_MAX + 1];                                                 \
		for (size_t cut_ = 0; cut_ < (len); cut_++)                                        \
			assert_false(get(__VA_ARGS__, (obj), cut_));                               \
		memcpy(longer_, (obj), (len));                                                     \
		longer_[(len)] = 0;                                                                \
		wire_put32(longer_ + 2, (uint32_t)(len) + 1);                                      \
		assert_false(get(__VA_ARGS__, longer_, (len) + 1));                                \
	} while (0)

/* ---- certificates ------------------------------------------------------------------ */

static void cert_layout(void **state)
{
	struct wire_cert c, g;
	struct buf want;
	uint8_t out[WIRE_CERT_MAX];
	size_t n;

	(void)state;
	small_cert(&c);
	small_cert_bytes(&want);
	assert_int_equal(want.n, 164);
	n = wire_cert_put(out, sizeof(out), &c);
	assert_int_equal(n, want.n);
	assert_memory_equal(out, want.b, n);
	assert_true(wire_cert_get(&g, out, n));
	assert_string_equal(g.network, "n");
	assert_string_equal(g.name, "A");
	assert_memory_equal(g.key, c.key, 32);
	assert_memory_equal(g.sign_key, c.sign_key, 32);
	assert_true(g.not_before == 1 && g.not_after == 2);
	assert_int_equal(g.n_prefixes, 1);
	assert_int_equal(g.prefixes[0].family, AF_INET);
	assert_int_equal(g.prefixes[0].plen, 8);
	assert_int_equal(g.n_groups, 1);
	assert_string_equal(g.groups[0], "g");
	assert_memory_equal(g.sig, c.sig, 64);
	CHECK_CUTS(wire_cert_get, out, n, &g);
	/* Too small a buffer for the encoder. */
	assert_int_equal(wire_cert_put(out, n - 1, &c), 0);
}

static void cert_largest(void **state)
{
	struct wire_cert c, g;
	uint8_t out[WIRE_CERT_MAX];
	size_t n;

	(void)state;
	small_cert(&c);
	memset(c.network, 'a', WIRE_NETWORK_MAX);
	c.network[WIRE_NETWORK_MAX] = '\0';
	memset(c.name, 'Z', WIRE_MEMBER_NAME_MAX);
	c.name[WIRE_MEMBER_NAME_MAX] = '\0';
	c.n_prefixes = WIRE_CERT_PREFIXES;
	for (unsigned i = 0; i < WIRE_CERT_PREFIXES; i++) {
		c.prefixes[i] = (struct yip_cidr){.family = AF_INET6, .plen = 128};
		c.prefixes[i].addr[0] = 0xfd;
		c.prefixes[i].addr[15] = (uint8_t)i;
	}
	c.n_groups = WIRE_CERT_GROUPS;
	for (unsigned i = 0; i < WIRE_CERT_GROUPS; i++) {
		memset(c.groups[i], 'a' + (int)i, WIRE_GROUP_MAX);
		c.groups[i][WIRE_GROUP_MAX] = '\0';
	}
	n = wire_cert_put(out, sizeof(out), &c);
	assert_int_equal(n, WIRE_CERT_MAX);
	assert_true(n <= 768);
	assert_true(wire_cert_get(&g, out, n));
	assert_int_equal(g.n_prefixes, WIRE_CERT_PREFIXES);
	assert_int_equal(g.n_groups, WIRE_CERT_GROUPS);
	assert_int_equal(memcmp(&g.prefixes, &c.prefixes, sizeof(c.prefixes)), 0);
}

/* An encoder refusal is also a decoder refusal: the same change made to the
 * bytes of the small certificate. */
static void cert_refusals(void **state)
{
	struct wire_cert c, g;
	struct buf x;
	uint8_t out[WIRE_CERT_MAX];

	(void)state;
#define REFUSED(change)                                                                            \
	do {                                                                                       \
		small_cert(&c);                                                                    \
		change;                                                                            \
		assert_int_equal(wire_cert_put(out, sizeof(out), &c), 0);                          \
	} while (0)
	REFUSED(c.network[0] = '\0');
	REFUSED(strcpy(c.network, "Upper"));
	REFUSED(strcpy(c.network, "sp ace"));
	REFUSED(memset(c.network, 'a', sizeof(c.network))); /* no NUL: 64 bytes */
	REFUSED(c.name[0] = '\0');
	REFUSED(strcpy(c.name, "tab\there"));
	REFUSED(strcpy(c.name, " leading"));
	REFUSED(strcpy(c.name, "trailing "));
	REFUSED(strcpy(c.name, "caf\xc3\xa9"));
	REFUSED(memset(c.key, 0, 32));
	REFUSED(memset(c.sign_key, 0, 32));
	REFUSED(c.not_after = c.not_before);
	REFUSED(c.prefixes[0] = cidr4(10, 0, 0, 1, 8)); /* host bits */
	REFUSED(c.prefixes[0] = cidr4(10, 0, 0, 0, 33));
	REFUSED(c.prefixes[0].family = 7);
	REFUSED(c.n_prefixes = 2; c.prefixes[1] = c.prefixes[0]);
	REFUSED(c.n_prefixes = WIRE_CERT_PREFIXES + 1);
	REFUSED(c.n_groups = 2; strcpy(c.groups[1], "g"));
	REFUSED(c.n_groups = WIRE_CERT_GROUPS + 1);
	REFUSED(strcpy(c.groups[0], "Group"));
	REFUSED(memset(c.groups[0], 'a', WIRE_GROUP_MAX + 1));
#undef REFUSED

	/* The same on the wire, field by field. */
#define BAD(off, val)                                                                              \
	do {                                                                                       \
		small_cert_bytes(&x);                                                              \
		x.b[(off)] = (val);                                                                \
		assert_false(wire_cert_get(&g, x.b, x.n));                                         \
	} while (0)
	small_cert_bytes(&x);
	assert_true(wire_cert_get(&g, x.b, x.n));
	BAD(0, WIRE_OBJ_ROOTS); /* kind */
	BAD(1, 2);              /* version */
	BAD(2, 163);            /* length field */
	BAD(6, 0);              /* network length 0 */
	BAD(7, 'N');            /* network character */
	BAD(8, 0);              /* name length 0 */
	BAD(9, 0x7f);           /* name character */
	BAD(9, ' ');            /* a name of one space */
	BAD(10 + 64 + 8, 0);    /* not_after 0 < not_before 1 */
	BAD(10 + 64 + 16, 9);   /* 9 prefixes */
	BAD(10 + 64 + 17, 5);   /* family */
	BAD(10 + 64 + 18, 6);   /* /6: 10.0.0.0 has a host bit */
	BAD(10 + 64 + 18, 33);  /* /33 */
	BAD(10 + 64 + 23, 9);   /* 9 groups */
	BAD(10 + 64 + 24, 0);   /* group length 0 */
	BAD(10 + 64 + 25, '/'); /* group character */
	small_cert_bytes(&x);
	memset(x.b + 10, 0, 32); /* all-zero member key */
	assert_false(wire_cert_get(&g, x.b, x.n));
#undef BAD
	/* A certificate larger than the cap is refused whatever it holds. */
	assert_false(wire_cert_get(&g, out, WIRE_CERT_MAX + 1));
}

/* ---- root sets --------------------------------------------------------------------- */

static void two_roots(struct wire_roots *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->network, "net");
	r->serial = 0x0102030405060708ULL;
	r->issued_at = 1700000000;
	r->n_roots = 2;
	memset(r->roots[0].key, 0xaa, 32);
	r->roots[0].n_addrs = 1;
	r->roots[0].addrs[0] = v4("192.0.2.1", 51820);
	memset(r->roots[1].key, 0xbb, 32);
	r->roots[1].n_addrs = 2;
	r->roots[1].addrs[0] = v6("2001:db8::1", 443);
	r->roots[1].addrs[1] = v4("198.51.100.7", 1);
	memset(r->sig, 0x44, 64);
}

static void roots_layout(void **state)
{
	struct wire_roots r, g;
	struct buf want;
	uint8_t out[WIRE_ROOTS_MAX];
	size_t n;

	(void)state;
	two_roots(&r);
	hdr(&want, WIRE_OBJ_ROOTS);
	add_str(&want, "net");
	add64(&want, 0x0102030405060708ULL);
	add64(&want, 1700000000);
	add8(&want, 2);
	add_fill(&want, 0xaa, 32);
	add8(&want, 1);
	add(&want, "\x04\x6c\xca\xc0\x00\x02\x01", 7); /* family, port 51820, 192.0.2.1 */
	add_fill(&want, 0xbb, 32);
	add8(&want, 2);
	add(&want, "\x06\xbb\x01\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 19);
	add(&want, "\x04\x01\x00\xc6\x33\x64\x07", 7);
	add_fill(&want, 0x44, 64);
	finish(&want);
	n = wire_roots_put(out, sizeof(out), &r);
	assert_int_equal(n, want.n);
	assert_memory_equal(out, want.b, n);
	assert_true(wire_roots_get(&g, out, n));
	assert_string_equal(g.network, "net");
	assert_true(g.serial == r.serial && g.issued_at == r.issued_at);
	assert_int_equal(g.n_roots, 2);
	assert_int_equal(g.roots[1].n_addrs, 2);
	assert_true(yip_sockaddr_eq(&g.roots[1].addrs[0], &r.roots[1].addrs[0]));
	assert_true(yip_sockaddr_eq(&g.roots[1].addrs[1], &r.roots[1].addrs[1]));
	CHECK_CUTS(wire_roots_get, out, n, &g);
}

static void roots_refusals(void **state)
{
	struct wire_roots r, g;
	uint8_t out[WIRE_ROOTS_MAX];
	size_t n;

	(void)state;
#define REFUSED(change)                                                                            \
	do {                                                                                       \
		two_roots(&r);                                                                     \
		change;                                                                            \
		assert_int_equal(wire_roots_put(out, sizeof(out), &r), 0);                         \
	} while (0)
	REFUSED(r.n_roots = 0);
	REFUSED(r.n_roots = WIRE_ROOTS_MAX_ROOTS + 1);
	REFUSED(memset(r.roots[1].key, 0xaa, 32));         /* the same root twice */
	REFUSED(memset(r.roots[0].key, 0, 32));            /* zero key */
	REFUSED(r.roots[0].n_addrs = 0);                   /* a root with no address */
	REFUSED(r.roots[0].n_addrs = WIRE_ROOT_ADDRS + 1); /* too many */
	REFUSED(r.roots[0].addrs[0] = v4("0.0.0.0", 51820));
	REFUSED(r.roots[0].addrs[0] = v6("::", 51820));
	REFUSED(r.roots[0].addrs[0] = v6("::ffff:0.0.0.0", 51820));
	REFUSED(r.roots[0].addrs[0] = v4("192.0.2.1", 0));
	REFUSED(r.roots[0].addrs[0] = v4("239.1.1.1", 5));
	REFUSED(r.roots[0].addrs[0] = v4("255.255.255.255", 5));
	REFUSED(r.roots[0].addrs[0] = v6("ff02::1", 5));
	REFUSED(r.roots[1].addrs[1] = r.roots[1].addrs[0]); /* twice in one root */
	REFUSED(strcpy(r.network, "a/b"));
#undef REFUSED
	/* On the wire: an unspecified address, and zero roots. */
	two_roots(&r);
	n = wire_roots_put(out, sizeof(out), &r);
	assert_true(wire_roots_get(&g, out, n));
	memset(out + 6 + 4 + 16 + 1 + 32 + 1 + 3, 0, 4); /* 192.0.2.1 -> 0.0.0.0 */
	assert_false(wire_roots_get(&g, out, n));
	n = wire_roots_put(out, sizeof(out), &r);
	out[6 + 4 + 16] = 0;
	assert_false(wire_roots_get(&g, out, n));
}

/* ---- revocation lists ------------------------------------------------------------- */

static void revocations_layout(void **state)
{
	uint8_t entries[3 * WIRE_REVOKED_ENTRY], out[1024];
	struct wire_revocations r = {.network = "net", .serial = 7, .issued_at = 9, .n = 3}, g;
	struct buf want;
	size_t n;

	(void)state;
	entries[0] = WIRE_REVOKED_KEY;
	memset(entries + 1, 0x01, 32);
	entries[33] = WIRE_REVOKED_KEY;
	memset(entries + 34, 0x02, 32);
	entries[66] = WIRE_REVOKED_CERT;
	memset(entries + 67, 0x01, 32);
	r.entries = entries;
	memset(r.sig, 0x55, 64);
	hdr(&want, WIRE_OBJ_REVOCATIONS);
	add_str(&want, "net");
	add64(&want, 7);
	add64(&want, 9);
	add(&want, "\x03\x00", 2);
	add(&want, entries, sizeof(entries));
	add_fill(&want, 0x55, 64);
	finish(&want);
	n = wire_revocations_put(out, sizeof(out), &r);
	assert_int_equal(n, want.n);
	assert_memory_equal(out, want.b, n);
	assert_true(wire_revocations_get(&g, out, n));
	assert_int_equal(g.n, 3);
	assert_ptr_equal(g.entries, out + n - 64 - sizeof(entries));
	assert_true(g.serial == 7 && g.issued_at == 9);
	CHECK_CUTS(wire_revocations_get, out, n, &g);

	/* Out of order, a duplicate, an unknown kind of entry, a zero id. */
	memcpy(out + n - 64 - 33, entries, 33);
	assert_false(wire_revocations_get(&g, out, n));
	memcpy(out + n - 64 - 33, entries + 33, 33);
	assert_false(wire_revocations_get(&g, out, n));
	n = wire_revocations_put(out, sizeof(out), &r);
	out[n - 64 - 33] = 3;
	assert_false(wire_revocations_get(&g, out, n));
	entries[66] = WIRE_REVOKED_CERT;
	memset(entries + 67, 0, 32);
	assert_int_equal(wire_revocations_put(out, sizeof(out), &r), 0);
	memset(entries + 67, 0x01, 32);
	entries[0] = WIRE_REVOKED_CERT; /* now out of order */
	assert_int_equal(wire_revocations_put(out, sizeof(out), &r), 0);

	/* An empty list is a list. */
	r.n = 0;
	r.entries = NULL;
	n = wire_revocations_put(out, sizeof(out), &r);
	assert_int_equal(n, 6 + 4 + 16 + 2 + 64);
	assert_true(wire_revocations_get(&g, out, n));
	assert_int_equal(g.n, 0);
}

static void revocations_largest(void **state)
{
	static uint8_t entries[(WIRE_REVOKED_MAX + 1) * WIRE_REVOKED_ENTRY];
	static uint8_t out[WIRE_REVOCATIONS_MAX + 64];
	struct wire_revocations r = {.serial = 1, .n = WIRE_REVOKED_MAX}, g;
	size_t n;

	(void)state;
	memset(r.network, 'z', WIRE_NETWORK_MAX); /* the longest name too */
	for (unsigned i = 0; i <= WIRE_REVOKED_MAX; i++) {
		uint8_t *e = entries + i * WIRE_REVOKED_ENTRY;

		e[0] = WIRE_REVOKED_KEY;
		memset(e + 1, 0x80, 32);
		e[1] = (uint8_t)(i >> 8);
		e[2] = (uint8_t)i;
	}
	r.entries = entries;
	n = wire_revocations_put(out, sizeof(out), &r);
	assert_int_equal(n, WIRE_REVOCATIONS_MAX);
	assert_true(wire_revocations_get(&g, out, n));
	assert_int_equal(g.n, WIRE_REVOKED_MAX);
	r.n = WIRE_REVOKED_MAX + 1;
	assert_int_equal(wire_revocations_put(out, sizeof(out), &r), 0);
	/* A count field over the limit, with the entries there. */
	out[6 + 64 + 16] = (uint8_t)(WIRE_REVOKED_MAX + 1);
	out[6 + 64 + 16 + 1] = (uint8_t)((WIRE_REVOKED_MAX + 1) >> 8);
	assert_false(wire_revocations_get(&g, out, n));
}

/* ---- member records -------------------------------------------------------------- */

static void record_layout(void **state)
{
	struct wire_cert c, gc;
	struct wire_record r = {.seq = 1700000000123ULL, .expires = 1700003600, .n_endpoints = 2},
	                   g;
	struct buf want, cert;
	uint8_t out[WIRE_RECORD_MAX];
	size_t n, clen;

	(void)state;
	small_cert(&c);
	small_cert_bytes(&cert);
	r.endpoints[0] = v4("203.0.113.5", 40000);
	r.endpoints[1] = v6("2001:db8::5", 51820);
	memset(r.sig, 0x66, 64);
	hdr(&want, WIRE_OBJ_RECORD);
	add(&want, cert.b, cert.n);
	add64(&want, r.seq);
	add64(&want, r.expires);
	add8(&want, 2);
	add(&want, "\x04\x40\x9c\xcb\x00\x71\x05", 7);
	add(&want, "\x06\x6c\xca\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x05", 19);
	add_fill(&want, 0x66, 64);
	finish(&want);
	n = wire_record_put(out, sizeof(out), cert.b, cert.n, &r);
	assert_int_equal(n, want.n);
	assert_memory_equal(out, want.b, n);
	assert_true(wire_record_get(&g, &gc, &clen, out, n));
	assert_int_equal(clen, cert.n);
	assert_string_equal(gc.name, "A");
	assert_true(g.seq == r.seq && g.expires == r.expires);
	assert_int_equal(g.n_endpoints, 2);
	assert_true(yip_sockaddr_eq(&g.endpoints[1], &r.endpoints[1]));
	CHECK_CUTS(wire_record_get, out, n, &g, &gc, &clen);

	/* A typical record: one certificate without groups, two endpoints. */
	strcpy(c.network, "example");
	strcpy(c.name, "laptop");
	c.n_groups = 0;
	clen = wire_cert_put(cert.b, sizeof(cert.b), &c);
	n = wire_record_put(out, sizeof(out), cert.b, clen, &r);
	assert_true(n > 0 && n <= 300);

	/* Wildcard, port 0, duplicate endpoints; a broken certificate inside. */
	r.endpoints[1] = v4("0.0.0.0", 51820);
	assert_int_equal(wire_record_put(out, sizeof(out), cert.b, clen, &r), 0);
	r.endpoints[1] = v6("::", 51820);
	assert_int_equal(wire_record_put(out, sizeof(out), cert.b, clen, &r), 0);
	r.endpoints[1] = v4("203.0.113.5", 0);
	assert_int_equal(wire_record_put(out, sizeof(out), cert.b, clen, &r), 0);
	r.endpoints[1] = r.endpoints[0];
	assert_int_equal(wire_record_put(out, sizeof(out), cert.b, clen, &r), 0);
	r.n_endpoints = WIRE_RECORD_ENDPOINTS + 1;
	assert_int_equal(wire_record_put(out, sizeof(out), cert.b, clen, &r), 0);
	r.n_endpoints = 1;
	cert.b[7] = 'X';
	assert_int_equal(wire_record_put(out, sizeof(out), cert.b, clen, &r), 0);
	cert.b[7] = 'e';
	n = wire_record_put(out, sizeof(out), cert.b, clen, &r);
	assert_true(wire_record_get(&g, &gc, &clen, out, n));
	out[6 + 7] = 'X'; /* the certificate's network, inside the record */
	assert_false(wire_record_get(&g, &gc, &clen, out, n));
	out[6 + 7] = 'e';
	memset(out + n - 64 - 4, 0, 4); /* 203.0.113.5 -> 0.0.0.0 */
	assert_false(wire_record_get(&g, &gc, &clen, out, n));
	n = wire_record_put(out, sizeof(out), cert.b, clen, &r);
	out[n - 64 - 6] = 0; /* port 0 */
	out[n - 64 - 5] = 0;
	assert_false(wire_record_get(&g, &gc, &clen, out, n));
	/* The certificate's length field pointing past the record. */
	n = wire_record_put(out, sizeof(out), cert.b, clen, &r);
	wire_put32(out + 6 + 2, (uint32_t)n);
	assert_false(wire_record_get(&g, &gc, &clen, out, n));
}

static void record_largest(void **state)
{
	struct wire_cert c, gc;
	struct wire_record r = {.seq = 1, .expires = 2, .n_endpoints = WIRE_RECORD_ENDPOINTS}, g;
	uint8_t cert[WIRE_CERT_MAX], out[WIRE_RECORD_MAX];
	size_t clen, n;

	(void)state;
	small_cert(&c);
	memset(c.network, 'a', WIRE_NETWORK_MAX);
	memset(c.name, 'b', WIRE_MEMBER_NAME_MAX);
	c.n_prefixes = WIRE_CERT_PREFIXES;
	for (unsigned i = 0; i < WIRE_CERT_PREFIXES; i++) {
		c.prefixes[i] = (struct yip_cidr){.family = AF_INET6, .plen = 128, .addr = {0xfd}};
		c.prefixes[i].addr[1] = (uint8_t)i;
	}
	c.n_groups = WIRE_CERT_GROUPS;
	for (unsigned i = 0; i < WIRE_CERT_GROUPS; i++) {
		memset(c.groups[i], 'a' + (int)i, WIRE_GROUP_MAX);
		c.groups[i][WIRE_GROUP_MAX] = '\0';
	}
	clen = wire_cert_put(cert, sizeof(cert), &c);
	assert_int_equal(clen, WIRE_CERT_MAX);
	for (unsigned i = 0; i < WIRE_RECORD_ENDPOINTS; i++) {
		r.endpoints[i] = v6("2001:db8::1", 1000);
		r.endpoints[i].in6.sin6_addr.s6_addr[14] = (uint8_t)i;
	}
	n = wire_record_put(out, sizeof(out), cert, clen, &r);
	assert_int_equal(n, WIRE_RECORD_MAX);
	assert_true(n < 1100);
	assert_true(wire_record_get(&g, &gc, &clen, out, n));
}

/* ---- certificate requests ------------------------------------------------------- */

static void request_layout(void **state)
{
	struct wire_request r, g;
	struct buf want;
	uint8_t out[WIRE_REQUEST_LEN];

	(void)state;
	memset(r.key, 0x01, 32);
	memset(r.sign_key, 0x02, 32);
	memset(r.sig, 0x03, 64);
	hdr(&want, WIRE_OBJ_REQUEST);
	add_fill(&want, 0x01, 32);
	add_fill(&want, 0x02, 32);
	add_fill(&want, 0x03, 64);
	finish(&want);
	assert_int_equal(want.n, WIRE_REQUEST_LEN);
	wire_request_put(out, &r);
	assert_memory_equal(out, want.b, want.n);
	assert_true(wire_request_get(&g, out, sizeof(out)));
	assert_memory_equal(&g, &r, sizeof(r));
	CHECK_CUTS(wire_request_get, out, sizeof(out), &g);
	memset(out + 6, 0, 32);
	assert_false(wire_request_get(&g, out, sizeof(out)));
	wire_request_put(out, &r);
	out[0] = WIRE_OBJ_CERT;
	assert_false(wire_request_get(&g, out, sizeof(out)));
}

/* ---- shared pieces -------------------------------------------------------------- */

static void names_and_contexts(void **state)
{
	const uint8_t kinds[] = {WIRE_OBJ_CERT, WIRE_OBJ_ROOTS, WIRE_OBJ_REVOCATIONS,
	                         WIRE_OBJ_RECORD, WIRE_OBJ_REQUEST};
	struct wire_obj_hdr h;

	(void)state;
	assert_true(wire_network_ok("my-net.example_1"));
	assert_false(wire_network_ok(""));
	assert_false(wire_network_ok("MyNet"));
	assert_true(wire_member_name_ok("Alice's laptop (2024)"));
	assert_false(wire_member_name_ok("line\nbreak"));
	assert_true(wire_group_ok("admins"));
	assert_false(wire_group_ok("0123456789012345678901234567890123")); /* 34 */
	/* Every kind has its own context, none a prefix of another. */
	for (size_t i = 0; i < sizeof(kinds); i++)
		for (size_t j = 0; j < sizeof(kinds); j++) {
			const char *a = wire_obj_context(kinds[i]), *b = wire_obj_context(kinds[j]);

			assert_non_null(a);
			if (i != j)
				assert_false(strncmp(a, b, strlen(a)) == 0);
		}
	assert_null(wire_obj_context(WIRE_INIT));
	/* Object kinds are not datagram types. */
	for (size_t i = 0; i < sizeof(kinds); i++)
		assert_true(kinds[i] > WIRE_RELAY);
	assert_true(wire_obj_hdr_get(&h, (const uint8_t *)"\xc1\x01\x10\x00\x00\x00", 6));
	assert_true(h.kind == 0xc1 && h.version == 1 && h.length == 16);
	assert_false(wire_obj_hdr_get(&h, (const uint8_t *)"\xc1\x01\x10\x00\x00", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(cert_layout),         cmocka_unit_test(cert_largest),
	    cmocka_unit_test(cert_refusals),       cmocka_unit_test(roots_layout),
	    cmocka_unit_test(roots_refusals),      cmocka_unit_test(revocations_layout),
	    cmocka_unit_test(revocations_largest), cmocka_unit_test(record_layout),
	    cmocka_unit_test(record_largest),      cmocka_unit_test(request_layout),
	    cmocka_unit_test(names_and_contexts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
