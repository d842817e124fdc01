#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "membership/internal.h"

/* ---- validity windows ------------------------------------------------------------ */

/* not_before - skew <= now < not_after + skew, without overflow. */
static enum member_verdict window(uint64_t not_before, uint64_t not_after, uint64_t now)
{
	if (not_before > MEMBER_SKEW_S && now < not_before - MEMBER_SKEW_S)
		return MEMBER_NOT_YET_VALID;
	if (not_after <= UINT64_MAX - MEMBER_SKEW_S && now >= not_after + MEMBER_SKEW_S)
		return MEMBER_EXPIRED;
	return MEMBER_OK;
}

static bool network_eq(const char *mine, const char *want)
{
	return want != NULL && strcmp(mine, want) == 0;
}

/* ---- certificates ------------------------------------------------------------------ */

enum member_verdict member_cert_parse(struct member_cert *c, const uint8_t *in, size_t len)
{
	if (len > sizeof(c->raw) || !wire_cert_get(&c->f, in, len)) {
		c->len = 0;
		return MEMBER_MALFORMED;
	}
	memmove(c->raw, in, len);
	c->len = len;
	return MEMBER_OK;
}

int member_cert_sign(struct member_cert *c, const struct wire_cert *fields,
                     const uint8_t ca_secret[MEMBER_SIGN_SECRET])
{
	size_t n = wire_cert_put(c->raw, sizeof(c->raw), fields);

	if (n == 0 || sig_put(c->raw, n, ca_secret) != 0)
		return -1;
	return member_cert_parse(c, c->raw, n) == MEMBER_OK ? 0 : -1;
}

/* The checks that cost no signature: network and validity window. */
static enum member_verdict cert_cheap(const struct member_cert *c, const char *network,
                                      uint64_t now_unix)
{
	if (!network_eq(c->f.network, network))
		return MEMBER_WRONG_NETWORK;
	return window(c->f.not_before, c->f.not_after, now_unix);
}

enum member_verdict member_cert_check(const struct member_cert *c,
                                      const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                      const char *network, uint64_t now_unix)
{
	enum member_verdict v;

	if (c->len == 0)
		return MEMBER_MALFORMED;
	v = cert_cheap(c, network, now_unix);
	if (v != MEMBER_OK)
		return v;
	return sig_ok(c->raw, c->len, ca_public) ? MEMBER_OK : MEMBER_WRONG_CA;
}

enum member_verdict member_cert_admit(const struct member_cert *c,
                                      const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                      const char *network, const struct member_revocations *revs,
                                      const uint8_t presented_key[YIP_KEY_LEN], uint64_t now_unix)
{
	enum member_verdict v;

	/* Whoever sends a certificate chooses its bytes: everything that costs
	 * no Ed25519 verification comes first, the signature last. */
	if (c->len == 0)
		return MEMBER_MALFORMED;
	v = cert_cheap(c, network, now_unix);
	if (v != MEMBER_OK)
		return v;
	if (sodium_memcmp(c->f.key, presented_key, YIP_KEY_LEN) != 0)
		return MEMBER_KEY_MISMATCH;
	if (member_is_revoked(revs, c))
		return MEMBER_REVOKED;
	return sig_ok(c->raw, c->len, ca_public) ? MEMBER_OK : MEMBER_WRONG_CA;
}

/* ---- certificate requests ------------------------------------------------------- */

int member_request_make(struct member_request *r, const uint8_t yip_private[YIP_KEY_LEN])
{
	struct wire_request f;
	uint8_t secret[MEMBER_SIGN_SECRET];
	int rc = -1;

	memset(&f, 0, sizeof(f));
	if (yip_key_public(f.key, yip_private) != 0)
		return -1;
	member_sign_keypair(yip_private, f.sign_key, secret);
	wire_request_put(r->raw, &f);
	if (sig_put(r->raw, WIRE_REQUEST_LEN, secret) == 0 &&
	    member_request_parse(r, r->raw, WIRE_REQUEST_LEN) == MEMBER_OK)
		rc = 0;
	sodium_memzero(secret, sizeof(secret));
	return rc;
}

enum member_verdict member_request_parse(struct member_request *r, const uint8_t *in, size_t len)
{
	if (len != sizeof(r->raw) || !wire_request_get(&r->f, in, len)) {
		r->len = 0;
		return MEMBER_MALFORMED;
	}
	memmove(r->raw, in, len);
	r->len = len;
	return MEMBER_OK;
}

enum member_verdict member_request_check(const struct member_request *r)
{
	if (r->len == 0)
		return MEMBER_MALFORMED;
	return sig_ok(r->raw, r->len, r->f.sign_key) ? MEMBER_OK : MEMBER_BAD_SIGNATURE;
}

/* ---- root sets --------------------------------------------------------------------- */

enum member_verdict member_roots_parse(struct member_roots *r, const uint8_t *in, size_t len)
{
	if (len > sizeof(r->raw) || !wire_roots_get(&r->f, in, len)) {
		r->len = 0;
		return MEMBER_MALFORMED;
	}
	memmove(r->raw, in, len);
	r->len = len;
	return MEMBER_OK;
}

int member_roots_sign(struct member_roots *r, const struct wire_roots *fields,
                      const uint8_t ca_secret[MEMBER_SIGN_SECRET])
{
	size_t n = wire_roots_put(r->raw, sizeof(r->raw), fields);

	if (n == 0 || sig_put(r->raw, n, ca_secret) != 0)
		return -1;
	return member_roots_parse(r, r->raw, n) == MEMBER_OK ? 0 : -1;
}

/* The checks a CA-signed list shares: signature, network, serial. */
static enum member_verdict list_check(const uint8_t *raw, size_t len, const char *mine,
                                      uint64_t serial, const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                      const char *network, uint64_t seen_serial)
{
	if (len == 0)
		return MEMBER_MALFORMED;
	if (!sig_ok(raw, len, ca_public))
		return MEMBER_WRONG_CA;
	if (!network_eq(mine, network))
		return MEMBER_WRONG_NETWORK;
	return serial < seen_serial ? MEMBER_OLDER : MEMBER_OK;
}

enum member_verdict member_roots_check(const struct member_roots *r,
                                       const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                       const char *network, uint64_t seen_serial)
{
	return list_check(r->raw, r->len, r->f.network, r->f.serial, ca_public, network,
	                  seen_serial);
}

bool member_roots_newer(const struct member_roots *a, const struct member_roots *b)
{
	return a->f.serial > b->f.serial;
}

/* ---- revocation lists ------------------------------------------------------------- */

enum member_verdict member_revocations_parse(struct member_revocations *r, const uint8_t *in,
                                             size_t len)
{
	if (len > sizeof(r->raw) || !wire_revocations_get(&r->f, in, len)) {
		r->len = 0;
		r->f.n = 0;
		return MEMBER_MALFORMED;
	}
	memmove(r->raw, in, len);
	r->len = len;
	r->f.entries = NULL; /* it pointed into in */
	return MEMBER_OK;
}

const uint8_t *member_revocations_entries(const struct member_revocations *r)
{
	return r->raw + wire_obj_signed_len(r->len) - (size_t)r->f.n * WIRE_REVOKED_ENTRY;
}

static int entry_cmp(const void *a, const void *b)
{
	return memcmp(a, b, WIRE_REVOKED_ENTRY);
}

int member_revocations_sign(struct member_revocations *r, const char *network, uint64_t serial,
                            uint64_t issued_at, const uint8_t *entries, size_t n,
                            const uint8_t ca_secret[MEMBER_SIGN_SECRET])
{
	struct wire_revocations f = {.serial = serial, .issued_at = issued_at};
	uint8_t *sorted = NULL;
	size_t len, kept = 0;
	int rc = -1;

	if (!wire_network_ok(network))
		return -1;
	memcpy(f.network, network, strlen(network) + 1);
	if (n > 0) {
		/* Sorted and merged in a copy; more than the limit may come in. */
		if (n > SIZE_MAX / WIRE_REVOKED_ENTRY)
			return -1;
		if ((sorted = malloc(n * WIRE_REVOKED_ENTRY)) == NULL)
			return -2;
		memcpy(sorted, entries, n * WIRE_REVOKED_ENTRY);
		qsort(sorted, n, WIRE_REVOKED_ENTRY, entry_cmp);
		for (size_t i = 0; i < n; i++)
			if (kept == 0 || entry_cmp(sorted + (kept - 1) * WIRE_REVOKED_ENTRY,
			                           sorted + i * WIRE_REVOKED_ENTRY) != 0)
				memmove(sorted + kept++ * WIRE_REVOKED_ENTRY,
				        sorted + i * WIRE_REVOKED_ENTRY, WIRE_REVOKED_ENTRY);
	}
	if (kept > WIRE_REVOKED_MAX)
		goto out;
	f.n = (uint16_t)kept;
	f.entries = sorted;
	len = wire_revocations_put(r->raw, sizeof(r->raw), &f);
	if (len == 0)
		goto out;
	if (sig_put(r->raw, len, ca_secret) != 0) {
		rc = -2;
		goto out;
	}
	rc = member_revocations_parse(r, r->raw, len) == MEMBER_OK ? 0 : -1;
out:
	free(sorted);
	return rc;
}

enum member_verdict member_revocations_check(const struct member_revocations *r,
                                             const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                             const char *network, uint64_t seen_serial)
{
	return list_check(r->raw, r->len, r->f.network, r->f.serial, ca_public, network,
	                  seen_serial);
}

bool member_revocations_newer(const struct member_revocations *a,
                              const struct member_revocations *b)
{
	return a->f.serial > b->f.serial;
}

bool member_revocations_has(const struct member_revocations *r, uint8_t what, const uint8_t *id)
{
	uint8_t key[WIRE_REVOKED_ENTRY];

	if (r == NULL || r->len == 0 || r->f.n == 0)
		return false;
	key[0] = what;
	memcpy(key + 1, id, WIRE_REVOKED_ENTRY - 1);
	return bsearch(key, member_revocations_entries(r), r->f.n, WIRE_REVOKED_ENTRY, entry_cmp) !=
	       NULL;
}

bool member_is_revoked(const struct member_revocations *r, const struct member_cert *c)
{
	uint8_t h[MEMBER_HASH_LEN];

	if (member_revocations_has(r, WIRE_REVOKED_KEY, c->f.key))
		return true;
	member_cert_hash(c, h);
	return member_revocations_has(r, WIRE_REVOKED_CERT, h);
}

/* ---- member records ------------------------------------------------------------- */

int member_record_sign(struct member_record *r, const struct member_cert *cert, uint64_t seq,
                       uint64_t expires, const union yip_sockaddr *endpoints, size_t n,
                       const uint8_t sign_secret[MEMBER_SIGN_SECRET])
{
	struct wire_record f = {.seq = seq, .expires = expires};
	uint8_t pub[MEMBER_SIGN_PUBLIC];
	size_t len;

	/* A record the certificate's signing key would not verify is a mistake. */
	crypto_sign_ed25519_sk_to_pk(pub, sign_secret);
	if (cert->len == 0 || memcmp(pub, cert->f.sign_key, MEMBER_SIGN_PUBLIC) != 0 ||
	    n > WIRE_RECORD_ENDPOINTS)
		return -1;
	f.n_endpoints = (uint8_t)n;
	if (n > 0)
		memcpy(f.endpoints, endpoints, n * sizeof(*endpoints));
	len = wire_record_put(r->raw, sizeof(r->raw), cert->raw, cert->len, &f);
	if (len == 0 || sig_put(r->raw, len, sign_secret) != 0)
		return -1;
	return member_record_parse(r, r->raw, len) == MEMBER_OK ? 0 : -1;
}

enum member_verdict member_record_parse(struct member_record *r, const uint8_t *in, size_t len)
{
	size_t cert_len;

	if (len > sizeof(r->raw) || !wire_record_get(&r->f, &r->cert.f, &cert_len, in, len)) {
		r->len = 0;
		r->cert.len = 0;
		return MEMBER_MALFORMED;
	}
	memmove(r->raw, in, len);
	r->len = len;
	memcpy(r->cert.raw, r->raw + WIRE_OBJ_HDR, cert_len);
	r->cert.len = cert_len;
	return MEMBER_OK;
}

enum member_verdict member_record_check(const struct member_record *r,
                                        const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                        const char *network, const struct member_revocations *revs,
                                        uint64_t now_unix)
{
	enum member_verdict v;

	if (r->len == 0)
		return MEMBER_MALFORMED;
	v = member_cert_check(&r->cert, ca_public, network, now_unix);
	if (v != MEMBER_OK)
		return v;
	if (member_is_revoked(revs, &r->cert))
		return MEMBER_REVOKED;
	if (!sig_ok(r->raw, r->len, r->cert.f.sign_key))
		return MEMBER_BAD_SIGNATURE;
	if (r->f.expires <= UINT64_MAX - MEMBER_SKEW_S && now_unix >= r->f.expires + MEMBER_SKEW_S)
		return MEMBER_EXPIRED;
	return MEMBER_OK;
}

bool member_record_newer(const struct member_record *a, const struct member_record *b)
{
	return memcmp(a->cert.f.key, b->cert.f.key, YIP_KEY_LEN) == 0 && a->f.seq > b->f.seq;
}
