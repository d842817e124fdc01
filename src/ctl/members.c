#include "ctl/members.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>

#include "util/hex.h"

static bool add_u64(cJSON *o, const char *name, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cJSON_AddRawToObject(o, name, buf) != NULL;
}

static bool add_hex32(cJSON *o, const char *name, const uint8_t *b)
{
	char hex[65];

	yip_hex_encode(hex, b, 32);
	return cJSON_AddStringToObject(o, name, hex) != NULL;
}

/* name: the ISO date; name_unix: the seconds. */
static bool add_time(cJSON *o, const char *name, uint64_t t)
{
	char s[MEMBER_TIME_LEN], n[48];

	member_format_time(s, t);
	snprintf(n, sizeof(n), "%s_unix", name);
	return cJSON_AddStringToObject(o, name, s) != NULL && add_u64(o, n, t);
}

static cJSON *head(uint8_t kind, size_t len)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	if (cJSON_AddStringToObject(o, "kind", member_kind_name(kind)) == NULL ||
	    cJSON_AddNumberToObject(o, "format", WIRE_OBJ_VERSION) == NULL ||
	    cJSON_AddNumberToObject(o, "bytes", (double)len) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* public_key, address (derived from it), signing_key. */
static bool add_keys(cJSON *o, const uint8_t *key, const uint8_t *sign_key)
{
	uint8_t a[YIP_ADDR_LEN];
	char s[INET6_ADDRSTRLEN];

	yip_addr_from_public(a, key);
	inet_ntop(AF_INET6, a, s, sizeof(s));
	return add_hex32(o, "public_key", key) &&
	       cJSON_AddStringToObject(o, "address", s) != NULL &&
	       add_hex32(o, "signing_key", sign_key);
}

static bool add_addrs(cJSON *o, const char *name, const union yip_sockaddr *a, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(o, name);

	if (arr == NULL)
		return false;
	for (size_t i = 0; i < n; i++) {
		char s[YIP_ADDRSTRLEN];
		cJSON *str;

		yip_sockaddr_format(&a[i], s, sizeof(s));
		str = cJSON_CreateString(s);
		if (str == NULL || !cJSON_AddItemToArray(arr, str)) {
			cJSON_Delete(str);
			return false;
		}
	}
	return true;
}

static bool add_string_item(cJSON *arr, const char *s)
{
	cJSON *str = cJSON_CreateString(s);

	if (str == NULL || !cJSON_AddItemToArray(arr, str)) {
		cJSON_Delete(str);
		return false;
	}
	return true;
}

/* Whole days from now to t, rounded towards minus infinity. */
static double days_until(uint64_t t, uint64_t now)
{
	return t >= now ? (double)((t - now) / 86400) : -(double)((now - t + 86399) / 86400);
}

static bool cert_fields(cJSON *o, const struct member_cert *c, uint64_t now)
{
	char v[96], p[YIP_ADDRSTRLEN];
	uint8_t hash[MEMBER_HASH_LEN];
	cJSON *arr;

	member_format_validity(v, sizeof(v), c->f.not_before, c->f.not_after, now);
	member_cert_hash(c, hash);
	if (cJSON_AddStringToObject(o, "network", c->f.network) == NULL ||
	    cJSON_AddStringToObject(o, "name", c->f.name) == NULL ||
	    !add_keys(o, c->f.key, c->f.sign_key) || !add_time(o, "not_before", c->f.not_before) ||
	    !add_time(o, "not_after", c->f.not_after) ||
	    cJSON_AddNumberToObject(o, "expires_in_days", days_until(c->f.not_after, now)) ==
	        NULL ||
	    cJSON_AddStringToObject(o, "validity", v) == NULL ||
	    (arr = cJSON_AddArrayToObject(o, "prefixes")) == NULL)
		return false;
	for (unsigned i = 0; i < c->f.n_prefixes; i++) {
		yip_cidr_format(&c->f.prefixes[i], p, sizeof(p));
		if (!add_string_item(arr, p))
			return false;
	}
	if ((arr = cJSON_AddArrayToObject(o, "groups")) == NULL)
		return false;
	for (unsigned i = 0; i < c->f.n_groups; i++)
		if (!add_string_item(arr, c->f.groups[i]))
			return false;
	return add_hex32(o, "hash", hash);
}

static cJSON *done(cJSON *o, bool ok)
{
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *yip_ctl_cert_json(const struct member_cert *c, uint64_t now)
{
	cJSON *o = head(WIRE_OBJ_CERT, c->len);

	return o ? done(o, cert_fields(o, c, now)) : NULL;
}

cJSON *yip_ctl_request_json(const struct member_request *r)
{
	cJSON *o = head(WIRE_OBJ_REQUEST, r->len);

	return o ? done(o, add_keys(o, r->f.key, r->f.sign_key)) : NULL;
}

cJSON *yip_ctl_roots_json(const struct member_roots *r)
{
	cJSON *o = head(WIRE_OBJ_ROOTS, r->len), *arr;
	bool ok;

	if (o == NULL)
		return NULL;
	ok = cJSON_AddStringToObject(o, "network", r->f.network) != NULL &&
	     add_u64(o, "serial", r->f.serial) && add_time(o, "issued_at", r->f.issued_at) &&
	     (arr = cJSON_AddArrayToObject(o, "roots")) != NULL;
	for (unsigned i = 0; ok && i < r->f.n_roots; i++) {
		const struct wire_root *e = &r->f.roots[i];
		cJSON *x = cJSON_CreateObject();
		uint8_t a[YIP_ADDR_LEN];
		char s[INET6_ADDRSTRLEN];

		if (x == NULL || !cJSON_AddItemToArray(arr, x)) {
			cJSON_Delete(x);
			ok = false;
			break;
		}
		yip_addr_from_public(a, e->key);
		inet_ntop(AF_INET6, a, s, sizeof(s));
		ok = add_hex32(x, "public_key", e->key) &&
		     cJSON_AddStringToObject(x, "address", s) != NULL &&
		     add_addrs(x, "endpoints", e->addrs, e->n_addrs);
	}
	return done(o, ok);
}

cJSON *yip_ctl_revocations_json(const struct member_revocations *r)
{
	cJSON *o = head(WIRE_OBJ_REVOCATIONS, r->len), *arr;
	const uint8_t *e = member_revocations_entries(r);
	bool ok;

	if (o == NULL)
		return NULL;
	ok = cJSON_AddStringToObject(o, "network", r->f.network) != NULL &&
	     add_u64(o, "serial", r->f.serial) && add_time(o, "issued_at", r->f.issued_at) &&
	     (arr = cJSON_AddArrayToObject(o, "revoked")) != NULL;
	for (unsigned i = 0; ok && i < r->f.n; i++, e += WIRE_REVOKED_ENTRY) {
		cJSON *x = cJSON_CreateObject();

		if (x == NULL || !cJSON_AddItemToArray(arr, x)) {
			cJSON_Delete(x);
			ok = false;
			break;
		}
		ok = cJSON_AddStringToObject(
		         x, "what", e[0] == WIRE_REVOKED_KEY ? "key" : "certificate") != NULL &&
		     add_hex32(x, e[0] == WIRE_REVOKED_KEY ? "public_key" : "hash", e + 1);
	}
	return done(o, ok);
}

cJSON *yip_ctl_record_json(const struct member_record *r, uint64_t now)
{
	cJSON *o = head(WIRE_OBJ_RECORD, r->len), *c;
	char s[MEMBER_TIME_LEN];
	bool ok;

	if (o == NULL)
		return NULL;
	member_format_time(s, r->f.seq / 1000);
	ok = add_u64(o, "seq", r->f.seq) && cJSON_AddStringToObject(o, "signed_at", s) != NULL &&
	     add_time(o, "expires", r->f.expires) &&
	     add_addrs(o, "endpoints", r->f.endpoints, r->f.n_endpoints);
	if (ok) {
		c = yip_ctl_cert_json(&r->cert, now);
		ok = c != NULL && cJSON_AddItemToObject(o, "certificate", c);
		if (!ok)
			cJSON_Delete(c);
	}
	return done(o, ok);
}
