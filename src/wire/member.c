#include "wire/member.h"

#include <arpa/inet.h>
#include <string.h>

#include "wire/cursor.h"

/* ---- helpers ---------------------------------------------------------------------- */

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

static bool lower_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
	       ch == '-';
}

static bool lower_name_ok(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!lower_name_char(s[i]))
			return false;
	return true;
}

static bool member_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > WIRE_MEMBER_NAME_MAX || s[0] == ' ' || s[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

bool wire_network_ok(const char *s)
{
	return lower_name_ok(s, strnlen(s, WIRE_NETWORK_MAX + 1), WIRE_NETWORK_MAX);
}

bool wire_group_ok(const char *s)
{
	return lower_name_ok(s, strnlen(s, WIRE_GROUP_MAX + 1), WIRE_GROUP_MAX);
}

bool wire_member_name_ok(const char *s)
{
	return member_name_ok(s, strnlen(s, WIRE_MEMBER_NAME_MAX + 1));
}

/* A name field: len u8 | bytes, checked by ok (the two kinds above). */
static void put_name(struct cur *c, const char *s, size_t max, bool (*ok)(const char *))
{
	size_t len = strnlen(s, max + 1);

	cur_check(c, ok(s));
	cur_put8(c, (uint8_t)len);
	cur_put(c, s, len);
}

static void get_name(struct cur *c, char *dst, size_t max, bool lower)
{
	size_t len = cur_get8(c);
	const uint8_t *p = cur_take(c, len);

	dst[0] = '\0';
	if (p == NULL)
		return;
	cur_check(c, lower ? lower_name_ok((const char *)p, len, max)
	                   : member_name_ok((const char *)p, len));
	if (c->ok) {
		memcpy(dst, p, len);
		dst[len] = '\0';
	}
}

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool wire_endpoint_ok(const union yip_sockaddr *a)
{
	static const uint8_t zero[16];

	if (a->sa.sa_family == AF_INET) {
		uint32_t ip = ntohl(a->in4.sin_addr.s_addr);

		return a->in4.sin_port != 0 && ip != 0 && ip != 0xffffffffu && (ip >> 28) != 0xe;
	}
	if (a->sa.sa_family == AF_INET6) {
		const uint8_t *ip = a->in6.sin6_addr.s6_addr;

		if (memcmp(ip, v4_mapped, sizeof(v4_mapped)) == 0) {
			union yip_sockaddr v4 = {
			    .in4 = {.sin_family = AF_INET, .sin_port = a->in6.sin6_port}};

			memcpy(&v4.in4.sin_addr, ip + 12, 4);
			return wire_endpoint_ok(&v4);
		}
		return a->in6.sin6_port != 0 && memcmp(ip, zero, 16) != 0 && ip[0] != 0xff;
	}
	return false;
}

static void put_addr(struct cur *c, const union yip_sockaddr *a)
{
	uint8_t b[WIRE_ADDR_MAX];
	size_t k;

	cur_check(c, wire_endpoint_ok(a));
	k = c->ok ? wire_addr_put(b, a) : 0;
	cur_check(c, k > 0);
	cur_put(c, b, k);
}

static void get_addr(struct cur *c, union yip_sockaddr *a)
{
	cur_addr(c, a);
	if (c->ok)
		cur_check(c, wire_endpoint_ok(a));
}

/* No two of n addresses equal (n is small). */
static bool addrs_distinct(const union yip_sockaddr *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (yip_sockaddr_eq(&a[i], &a[j]))
				return false;
	return true;
}

static size_t cidr_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

static bool cidr_ok(const struct yip_cidr *p)
{
	size_t nb;

	if (p->family != AF_INET && p->family != AF_INET6)
		return false;
	nb = cidr_bytes(p->family);
	if (p->plen > nb * 8)
		return false;
	for (size_t i = 0; i < nb; i++) {
		unsigned keep = p->plen >= (i + 1) * 8 ? 8 : p->plen > i * 8 ? p->plen - i * 8 : 0;
		uint8_t mask = (uint8_t)(0xff00u >> keep);

		if (p->addr[i] & ~mask)
			return false;
	}
	return true;
}

static bool cidr_eq(const struct yip_cidr *a, const struct yip_cidr *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       memcmp(a->addr, b->addr, cidr_bytes(a->family)) == 0;
}

static void put_prefix(struct cur *c, const struct yip_cidr *p)
{
	cur_check(c, cidr_ok(p));
	if (!c->ok)
		return;
	cur_put8(c, p->family == AF_INET ? 4 : 6);
	cur_put8(c, p->plen);
	cur_put(c, p->addr, cidr_bytes(p->family));
}

static void get_prefix(struct cur *c, struct yip_cidr *p)
{
	uint8_t fam = cur_get8(c);

	memset(p, 0, sizeof(*p));
	cur_check(c, fam == 4 || fam == 6);
	if (!c->ok)
		return;
	p->family = fam == 4 ? AF_INET : AF_INET6;
	p->plen = cur_get8(c);
	cur_copy(c, p->addr, cidr_bytes(p->family));
	cur_check(c, cidr_ok(p));
}

/* The header, with a length patched in by hdr_end once it is known. */
static void hdr_begin(struct cur *c, uint8_t kind)
{
	cur_put8(c, kind);
	cur_put8(c, WIRE_OBJ_VERSION);
	cur_put(c, "\0\0\0\0", 4);
}

static size_t hdr_end(struct cur *c, const uint8_t *sig)
{
	cur_put(c, sig, WIRE_SIG_LEN);
	if (!c->ok)
		return 0;
	wire_put32(c->out + 2, (uint32_t)c->n);
	return c->n;
}

/* A decoder's start: kind, version, and a length field equal to len. */
static void hdr_check(struct cur *c, uint8_t kind)
{
	struct wire_obj_hdr h;

	if (!wire_obj_hdr_get(&h, c->in, c->len) || h.kind != kind ||
	    h.version != WIRE_OBJ_VERSION || h.length != c->len)
		c->ok = false;
	c->n = WIRE_OBJ_HDR;
}

/* A decoder's end: the signature, and nothing after it. */
static bool sig_end(struct cur *c, uint8_t *sig)
{
	cur_copy(c, sig, WIRE_SIG_LEN);
	return cur_end(c);
}

bool wire_obj_hdr_get(struct wire_obj_hdr *h, const uint8_t *in, size_t len)
{
	if (len < WIRE_OBJ_HDR)
		return false;
	h->kind = in[0];
	h->version = in[1];
	h->length = wire_get32(in + 2);
	return true;
}

const char *wire_obj_context(uint8_t kind)
{
	switch (kind) {
	case WIRE_OBJ_CERT:
		return WIRE_CTX_CERT;
	case WIRE_OBJ_ROOTS:
		return WIRE_CTX_ROOTS;
	case WIRE_OBJ_REVOCATIONS:
		return WIRE_CTX_REVOCATIONS;
	case WIRE_OBJ_RECORD:
		return WIRE_CTX_RECORD;
	case WIRE_OBJ_REQUEST:
		return WIRE_CTX_REQUEST;
	default:
		return NULL;
	}
}

/* ---- certificate ---------------------------------------------------------------- */

static bool cert_lists_ok(const struct wire_cert *c)
{
	if (c->n_prefixes > WIRE_CERT_PREFIXES || c->n_groups > WIRE_CERT_GROUPS)
		return false;
	for (unsigned i = 0; i < c->n_prefixes; i++)
		for (unsigned j = i + 1; j < c->n_prefixes; j++)
			if (cidr_eq(&c->prefixes[i], &c->prefixes[j]))
				return false;
	for (unsigned i = 0; i < c->n_groups; i++)
		for (unsigned j = i + 1; j < c->n_groups; j++)
			if (strcmp(c->groups[i], c->groups[j]) == 0)
				return false;
	return true;
}

size_t wire_cert_put(uint8_t *out, size_t cap, const struct wire_cert *c)
{
	struct cur k = cur_out(out, cap);

	hdr_begin(&k, WIRE_OBJ_CERT);
	put_name(&k, c->network, WIRE_NETWORK_MAX, wire_network_ok);
	put_name(&k, c->name, WIRE_MEMBER_NAME_MAX, wire_member_name_ok);
	cur_check(&k, !all_zero(c->key, YIP_KEY_LEN) && !all_zero(c->sign_key, WIRE_SIGN_KEY));
	cur_put(&k, c->key, YIP_KEY_LEN);
	cur_put(&k, c->sign_key, WIRE_SIGN_KEY);
	cur_check(&k, c->not_before < c->not_after);
	cur_put64(&k, c->not_before);
	cur_put64(&k, c->not_after);
	cur_check(&k, cert_lists_ok(c));
	if (!k.ok)
		return 0;
	cur_put8(&k, c->n_prefixes);
	for (unsigned i = 0; i < c->n_prefixes; i++)
		put_prefix(&k, &c->prefixes[i]);
	cur_put8(&k, c->n_groups);
	for (unsigned i = 0; i < c->n_groups; i++)
		put_name(&k, c->groups[i], WIRE_GROUP_MAX, wire_group_ok);
	cur_check(&k, k.n + WIRE_SIG_LEN <= WIRE_CERT_MAX);
	return hdr_end(&k, c->sig);
}

bool wire_cert_get(struct wire_cert *c, const uint8_t *in, size_t len)
{
	struct cur cur = cur_in(in, len), *k = &cur;

	memset(c, 0, sizeof(*c));
	cur_check(k, len <= WIRE_CERT_MAX);
	hdr_check(k, WIRE_OBJ_CERT);
	get_name(k, c->network, WIRE_NETWORK_MAX, true);
	get_name(k, c->name, WIRE_MEMBER_NAME_MAX, false);
	cur_copy(k, c->key, YIP_KEY_LEN);
	cur_copy(k, c->sign_key, WIRE_SIGN_KEY);
	c->not_before = cur_get64(k);
	c->not_after = cur_get64(k);
	cur_check(k, !all_zero(c->key, YIP_KEY_LEN) && !all_zero(c->sign_key, WIRE_SIGN_KEY) &&
	                 c->not_before < c->not_after);
	c->n_prefixes = cur_get8(k);
	cur_check(k, c->n_prefixes <= WIRE_CERT_PREFIXES);
	for (unsigned i = 0; k->ok && i < c->n_prefixes; i++)
		get_prefix(k, &c->prefixes[i]);
	c->n_groups = cur_get8(k);
	cur_check(k, c->n_groups <= WIRE_CERT_GROUPS);
	for (unsigned i = 0; k->ok && i < c->n_groups; i++)
		get_name(k, c->groups[i], WIRE_GROUP_MAX, true);
	cur_check(k, cert_lists_ok(c));
	return sig_end(k, c->sig);
}

/* ---- root set ------------------------------------------------------------------- */

static bool roots_distinct(const struct wire_roots *r)
{
	for (unsigned i = 0; i < r->n_roots; i++)
		for (unsigned j = i + 1; j < r->n_roots; j++)
			if (memcmp(r->roots[i].key, r->roots[j].key, YIP_KEY_LEN) == 0)
				return false;
	return true;
}

size_t wire_roots_put(uint8_t *out, size_t cap, const struct wire_roots *r)
{
	struct cur k = cur_out(out, cap);

	hdr_begin(&k, WIRE_OBJ_ROOTS);
	put_name(&k, r->network, WIRE_NETWORK_MAX, wire_network_ok);
	cur_put64(&k, r->serial);
	cur_put64(&k, r->issued_at);
	cur_check(&k, r->n_roots >= 1 && r->n_roots <= WIRE_ROOTS_MAX_ROOTS && roots_distinct(r));
	cur_put8(&k, r->n_roots);
	for (unsigned i = 0; k.ok && i < r->n_roots; i++) {
		const struct wire_root *e = &r->roots[i];

		cur_check(&k, !all_zero(e->key, YIP_KEY_LEN) && e->n_addrs >= 1 &&
		                  e->n_addrs <= WIRE_ROOT_ADDRS &&
		                  addrs_distinct(e->addrs, e->n_addrs));
		cur_put(&k, e->key, YIP_KEY_LEN);
		cur_put8(&k, e->n_addrs);
		for (unsigned j = 0; k.ok && j < e->n_addrs; j++)
			put_addr(&k, &e->addrs[j]);
	}
	return hdr_end(&k, r->sig);
}

bool wire_roots_get(struct wire_roots *r, const uint8_t *in, size_t len)
{
	struct cur k = cur_in(in, len);

	memset(r, 0, sizeof(*r));
	cur_check(&k, len <= WIRE_ROOTS_MAX);
	hdr_check(&k, WIRE_OBJ_ROOTS);
	get_name(&k, r->network, WIRE_NETWORK_MAX, true);
	r->serial = cur_get64(&k);
	r->issued_at = cur_get64(&k);
	r->n_roots = cur_get8(&k);
	cur_check(&k, r->n_roots >= 1 && r->n_roots <= WIRE_ROOTS_MAX_ROOTS);
	for (unsigned i = 0; k.ok && i < r->n_roots; i++) {
		struct wire_root *e = &r->roots[i];

		cur_copy(&k, e->key, YIP_KEY_LEN);
		e->n_addrs = cur_get8(&k);
		cur_check(&k, !all_zero(e->key, YIP_KEY_LEN) && e->n_addrs >= 1 &&
		                  e->n_addrs <= WIRE_ROOT_ADDRS);
		for (unsigned j = 0; k.ok && j < e->n_addrs; j++)
			get_addr(&k, &e->addrs[j]);
		cur_check(&k, addrs_distinct(e->addrs, e->n_addrs));
	}
	cur_check(&k, roots_distinct(r));
	return sig_end(&k, r->sig);
}

/* ---- revocation list ------------------------------------------------------------ */

/* Entries valid and strictly ascending. */
static bool entries_ok(const uint8_t *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *x = e + i * WIRE_REVOKED_ENTRY;

		if ((x[0] != WIRE_REVOKED_KEY && x[0] != WIRE_REVOKED_CERT) ||
		    all_zero(x + 1, WIRE_REVOKED_ENTRY - 1))
			return false;
		if (i > 0 && memcmp(x - WIRE_REVOKED_ENTRY, x, WIRE_REVOKED_ENTRY) >= 0)
			return false;
	}
	return true;
}

size_t wire_revocations_put(uint8_t *out, size_t cap, const struct wire_revocations *r)
{
	struct cur k = cur_out(out, cap);

	hdr_begin(&k, WIRE_OBJ_REVOCATIONS);
	put_name(&k, r->network, WIRE_NETWORK_MAX, wire_network_ok);
	cur_put64(&k, r->serial);
	cur_put64(&k, r->issued_at);
	cur_check(&k, r->n <= WIRE_REVOKED_MAX && (r->n == 0 || r->entries != NULL));
	if (!k.ok)
		return 0;
	cur_check(&k, entries_ok(r->entries, r->n));
	cur_put16(&k, r->n);
	if (r->n > 0)
		cur_put(&k, r->entries, (size_t)r->n * WIRE_REVOKED_ENTRY);
	return hdr_end(&k, r->sig);
}

bool wire_revocations_get(struct wire_revocations *r, const uint8_t *in, size_t len)
{
	struct cur k = cur_in(in, len);

	memset(r, 0, sizeof(*r));
	cur_check(&k, len <= WIRE_REVOCATIONS_MAX);
	hdr_check(&k, WIRE_OBJ_REVOCATIONS);
	get_name(&k, r->network, WIRE_NETWORK_MAX, true);
	r->serial = cur_get64(&k);
	r->issued_at = cur_get64(&k);
	r->n = cur_get16(&k);
	cur_check(&k, r->n <= WIRE_REVOKED_MAX);
	if (!k.ok)
		return false;
	r->entries = cur_take(&k, (size_t)r->n * WIRE_REVOKED_ENTRY);
	cur_check(&k, r->entries != NULL && entries_ok(r->entries, r->n));
	return sig_end(&k, r->sig);
}

/* ---- member record -------------------------------------------------------------- */

size_t wire_record_put(uint8_t *out, size_t cap, const uint8_t *cert, size_t cert_len,
                       const struct wire_record *r)
{
	struct cur k = cur_out(out, cap);
	struct wire_cert c;

	hdr_begin(&k, WIRE_OBJ_RECORD);
	cur_check(&k, wire_cert_get(&c, cert, cert_len));
	cur_put(&k, cert, cert_len);
	cur_put64(&k, r->seq);
	cur_put64(&k, r->expires);
	cur_check(&k, r->n_endpoints <= WIRE_RECORD_ENDPOINTS &&
	                  addrs_distinct(r->endpoints, r->n_endpoints));
	cur_put8(&k, r->n_endpoints);
	for (unsigned i = 0; k.ok && i < r->n_endpoints; i++)
		put_addr(&k, &r->endpoints[i]);
	return hdr_end(&k, r->sig);
}

bool wire_record_get(struct wire_record *r, struct wire_cert *cert, size_t *cert_len,
                     const uint8_t *in, size_t len)
{
	struct cur k = cur_in(in, len);
	struct wire_obj_hdr h;

	memset(r, 0, sizeof(*r));
	cur_check(&k, len <= WIRE_RECORD_MAX);
	hdr_check(&k, WIRE_OBJ_RECORD);
	/* The certificate, decoded in place: its header says where it ends. */
	if (!k.ok || !wire_obj_hdr_get(&h, in + k.n, len - k.n) || h.length > len - k.n ||
	    !wire_cert_get(cert, in + k.n, h.length))
		return false;
	*cert_len = h.length;
	cur_take(&k, h.length);
	r->seq = cur_get64(&k);
	r->expires = cur_get64(&k);
	r->n_endpoints = cur_get8(&k);
	cur_check(&k, r->n_endpoints <= WIRE_RECORD_ENDPOINTS);
	for (unsigned i = 0; k.ok && i < r->n_endpoints; i++)
		get_addr(&k, &r->endpoints[i]);
	cur_check(&k, addrs_distinct(r->endpoints, r->n_endpoints));
	return sig_end(&k, r->sig);
}

/* ---- certificate request -------------------------------------------------------- */

void wire_request_put(uint8_t out[WIRE_REQUEST_LEN], const struct wire_request *r)
{
	out[0] = WIRE_OBJ_REQUEST;
	out[1] = WIRE_OBJ_VERSION;
	wire_put32(out + 2, WIRE_REQUEST_LEN);
	memcpy(out + WIRE_OBJ_HDR, r->key, YIP_KEY_LEN);
	memcpy(out + WIRE_OBJ_HDR + YIP_KEY_LEN, r->sign_key, WIRE_SIGN_KEY);
	memcpy(out + WIRE_REQUEST_LEN - WIRE_SIG_LEN, r->sig, WIRE_SIG_LEN);
}

bool wire_request_get(struct wire_request *r, const uint8_t *in, size_t len)
{
	struct cur k = cur_in(in, len);

	memset(r, 0, sizeof(*r));
	hdr_check(&k, WIRE_OBJ_REQUEST);
	cur_copy(&k, r->key, YIP_KEY_LEN);
	cur_copy(&k, r->sign_key, WIRE_SIGN_KEY);
	cur_check(&k, !all_zero(r->key, YIP_KEY_LEN) && !all_zero(r->sign_key, WIRE_SIGN_KEY));
	return sig_end(&k, r->sig);
}
