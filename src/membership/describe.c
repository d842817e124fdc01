#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "membership/internal.h"
#include "util/hex.h"

#define LINE 512

static void emitf(member_emit_fn *emit, void *arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void emitf(member_emit_fn *emit, void *arg, const char *fmt, ...)
{
	char line[LINE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	emit(arg, line);
}

static void hex32(char out[65], const uint8_t *k)
{
	yip_hex_encode(out, k, 32);
}

static void key_lines(const char *ind, const uint8_t key[YIP_KEY_LEN],
                      const uint8_t sign_key[WIRE_SIGN_KEY], member_emit_fn *emit, void *arg)
{
	uint8_t a[YIP_ADDR_LEN];
	char h[65], s[INET6_ADDRSTRLEN];

	hex32(h, key);
	emitf(emit, arg, "%smember key:  %s", ind, h);
	yip_addr_from_public(a, key);
	inet_ntop(AF_INET6, a, s, sizeof(s));
	emitf(emit, arg, "%saddress:     %s (derived from the key)", ind, s);
	hex32(h, sign_key);
	emitf(emit, arg, "%ssigning key: %s", ind, h);
}

/* Appends s to a comma-separated list in out. */
static void list_add(char *out, size_t outlen, const char *s)
{
	size_t n = strlen(out);

	snprintf(out + n, outlen - n, "%s%s", n > 0 ? ", " : "", s);
}

static void cert_lines(const char *ind, const struct member_cert *c, uint64_t now,
                       member_emit_fn *emit, void *arg)
{
	char t[MEMBER_TIME_LEN], v[96], list[LINE - 32] = "", h[65];
	uint8_t hash[MEMBER_HASH_LEN];

	emitf(emit, arg, "%snetwork:     %s", ind, c->f.network);
	emitf(emit, arg, "%sname:        %s", ind, c->f.name);
	key_lines(ind, c->f.key, c->f.sign_key, emit, arg);
	member_format_time(t, c->f.not_before);
	emitf(emit, arg, "%svalid from:  %s", ind, t);
	member_format_time(t, c->f.not_after);
	member_format_validity(v, sizeof(v), c->f.not_before, c->f.not_after, now);
	emitf(emit, arg, "%svalid until: %s (%s)", ind, t, v);
	for (unsigned i = 0; i < c->f.n_prefixes; i++) {
		char p[YIP_ADDRSTRLEN];

		yip_cidr_format(&c->f.prefixes[i], p, sizeof(p));
		list_add(list, sizeof(list), p);
	}
	emitf(emit, arg, "%sprefixes:    %s", ind, list[0] ? list : "(none)");
	list[0] = '\0';
	for (unsigned i = 0; i < c->f.n_groups; i++)
		list_add(list, sizeof(list), c->f.groups[i]);
	emitf(emit, arg, "%sgroups:      %s", ind, list[0] ? list : "(none)");
	member_cert_hash(c, hash);
	hex32(h, hash);
	emitf(emit, arg, "%shash:        %s", ind, h);
}

void member_cert_describe(const struct member_cert *c, uint64_t now, member_emit_fn *emit,
                          void *arg)
{
	emitf(emit, arg, "certificate (format %u, %zu bytes)", WIRE_OBJ_VERSION, c->len);
	cert_lines("  ", c, now, emit, arg);
}

void member_request_describe(const struct member_request *r, member_emit_fn *emit, void *arg)
{
	emitf(emit, arg, "certificate request (format %u, %zu bytes)", WIRE_OBJ_VERSION, r->len);
	key_lines("  ", r->f.key, r->f.sign_key, emit, arg);
}

static void addrs_line(char *out, size_t outlen, const union yip_sockaddr *a, size_t n)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char s[YIP_ADDRSTRLEN];

		yip_sockaddr_format(&a[i], s, sizeof(s));
		list_add(out, outlen, s);
	}
}

void member_roots_describe(const struct member_roots *r, member_emit_fn *emit, void *arg)
{
	char t[MEMBER_TIME_LEN], h[65], list[LINE - 80];

	emitf(emit, arg, "root set (format %u, %zu bytes)", WIRE_OBJ_VERSION, r->len);
	emitf(emit, arg, "  network:     %s", r->f.network);
	emitf(emit, arg, "  serial:      %llu", (unsigned long long)r->f.serial);
	member_format_time(t, r->f.issued_at);
	emitf(emit, arg, "  issued:      %s", t);
	emitf(emit, arg, "  roots:       %u", r->f.n_roots);
	for (unsigned i = 0; i < r->f.n_roots; i++) {
		hex32(h, r->f.roots[i].key);
		addrs_line(list, sizeof(list), r->f.roots[i].addrs, r->f.roots[i].n_addrs);
		emitf(emit, arg, "    %s %s", h, list);
	}
}

void member_revocations_describe(const struct member_revocations *r, member_emit_fn *emit,
                                 void *arg)
{
	const uint8_t *e = member_revocations_entries(r);
	char t[MEMBER_TIME_LEN], h[65];

	emitf(emit, arg, "revocation list (format %u, %zu bytes)", WIRE_OBJ_VERSION, r->len);
	emitf(emit, arg, "  network:     %s", r->f.network);
	emitf(emit, arg, "  serial:      %llu", (unsigned long long)r->f.serial);
	member_format_time(t, r->f.issued_at);
	emitf(emit, arg, "  issued:      %s", t);
	emitf(emit, arg, "  revoked:     %u", r->f.n);
	for (unsigned i = 0; i < r->f.n; i++, e += WIRE_REVOKED_ENTRY) {
		hex32(h, e + 1);
		emitf(emit, arg, "    %-11s %s", e[0] == WIRE_REVOKED_KEY ? "key" : "certificate",
		      h);
	}
}

void member_record_describe(const struct member_record *r, uint64_t now, member_emit_fn *emit,
                            void *arg)
{
	char t[MEMBER_TIME_LEN], v[96], list[LINE - 32];

	emitf(emit, arg, "member record (format %u, %zu bytes)", WIRE_OBJ_VERSION, r->len);
	member_format_time(t, r->f.seq / 1000);
	emitf(emit, arg, "  seq:         %llu (signed %s)", (unsigned long long)r->f.seq, t);
	member_format_time(t, r->f.expires);
	member_format_validity(v, sizeof(v), 0, r->f.expires, now);
	emitf(emit, arg, "  expires:     %s (%s)", t, v);
	addrs_line(list, sizeof(list), r->f.endpoints, r->f.n_endpoints);
	emitf(emit, arg, "  endpoints:   %s", list[0] ? list : "(none)");
	emitf(emit, arg, "  certificate:");
	cert_lines("    ", &r->cert, now, emit, arg);
}
