/* The REALITY seal, its check and the front's certificate (see reality.h). */
#include "reality/reality.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <sodium.h>
#include <openssl/x509.h>

#include "crypto/crypto.h"
#include "util/bucket.h"
#include "util/hex.h"

#define LABEL       "yip reality v1"
#define SALT_LEN    20 /* random[0..20) */
#define CACHE_PROBE 32
#define HELLO_MAX   (TLS_HS_HDR + TLS_REC_PLAIN)

_Static_assert(TLS_RANDOM_LEN - SALT_LEN == YIP_AEAD_NONCE, "the nonce is the rest of random");
_Static_assert(WIRE_REALITY_PLAIN + YIP_AEAD_TAG == WIRE_REALITY_SID, "the seal fills the id");
_Static_assert((REALITY_CACHE & (REALITY_CACHE - 1)) == 0, "a power of two");

struct seen {
	uint8_t tag[YIP_AEAD_TAG];
	uint32_t unix_s; /* the seal's time; 0: a free slot */
};

struct reality_server {
	uint8_t priv[REALITY_KEY_LEN];
	char names[REALITY_NAMES_MAX][256];
	size_t n_names;
	uint8_t ids[REALITY_IDS_MAX][WIRE_REALITY_SHORT_ID];
	size_t n_ids;
	struct yip_bucket budget;
	uint8_t aad[HELLO_MAX]; /* the hello with its session id zeroed */
	struct seen *cache;     /* REALITY_CACHE, allocated by the first sealed hello */
};

static const char *const verdict_names[REALITY_VERDICTS] = {
    [REALITY_AUTHENTICATED] = "authenticated",
    [REALITY_NOT_HELLO] = "not_hello",
    [REALITY_NO_TLS13] = "no_tls13",
    [REALITY_SNI] = "server_name",
    [REALITY_NO_SEAL] = "no_seal",
    [REALITY_NO_SHARE] = "no_x25519",
    [REALITY_BUSY] = "busy",
    [REALITY_SEAL] = "seal",
    [REALITY_PLAIN] = "plaintext",
    [REALITY_SHORT_ID] = "short_id",
    [REALITY_CLOCK] = "clock",
    [REALITY_REPLAY] = "replay",
};

const char *reality_verdict_name(unsigned v)
{
	return v < REALITY_VERDICTS ? verdict_names[v] : "?";
}

/* The seal's keys from the X25519 result and the hello's random. */
static void derive(struct reality_keys *keys, const uint8_t dh[REALITY_KEY_LEN],
                   const uint8_t *random)
{
	uint8_t ck[YIP_HASH_LEN], k1[YIP_HASH_LEN], k2[YIP_HASH_LEN];

	yip_hash2(ck, (const uint8_t *)LABEL, sizeof(LABEL) - 1, random, SALT_LEN);
	yip_hkdf(k1, k2, NULL, ck, dh, REALITY_KEY_LEN);
	memcpy(keys->auth, k1, REALITY_KEY_LEN);
	memcpy(keys->cert, k2, REALITY_KEY_LEN);
	sodium_memzero(ck, sizeof(ck));
	sodium_memzero(k1, sizeof(k1));
	sodium_memzero(k2, sizeof(k2));
}

/* The random of a hello whose session id is at sid. */
static const uint8_t *hello_random(const uint8_t *hello)
{
	return hello + TLS_HS_HDR + 2;
}

bool reality_seal(uint8_t *hello, size_t len, const uint8_t x25519_priv[REALITY_KEY_LEN],
                  const uint8_t front_pub[REALITY_KEY_LEN],
                  const uint8_t short_id[WIRE_REALITY_SHORT_ID], uint32_t unix_s,
                  struct reality_keys *keys)
{
	struct wire_reality_seal seal = {.version = WIRE_REALITY_VERSION, .unix_s = unix_s};
	uint8_t dh[REALITY_KEY_LEN], plain[WIRE_REALITY_PLAIN], sid[WIRE_REALITY_SID];
	size_t at = wire_reality_sid_at(hello, len);
	const uint8_t *random = hello_random(hello);

	if (at == 0 || yip_dh(dh, x25519_priv, front_pub) != 0)
		return false;
	derive(keys, dh, random);
	sodium_memzero(dh, sizeof(dh));
	memcpy(seal.short_id, short_id, WIRE_REALITY_SHORT_ID);
	wire_reality_seal_put(plain, &seal);
	memset(hello + at, 0, WIRE_REALITY_SID);
	yip_aead_seal_nonce(sid, keys->auth, random + SALT_LEN, hello, len, plain, sizeof(plain));
	memcpy(hello + at, sid, WIRE_REALITY_SID);
	return true;
}

/* The serial number the front's certificate carries for keys and spki. */
static void cert_serial(uint8_t serial[REALITY_SERIAL], const struct reality_keys *keys,
                        const uint8_t *spki, size_t spki_len)
{
	uint8_t mac[YIP_HASH_LEN];

	yip_hmac(mac, keys->cert, REALITY_KEY_LEN, spki, spki_len);
	memcpy(serial, mac, REALITY_SERIAL);
	serial[0] = (uint8_t)((serial[0] & 0x3f) | 0x40);
}

/* The SubjectPublicKeyInfo of x, DER, in a buffer of libcrypto's; its length or 0. */
static int spki_of(X509 *x, uint8_t **der)
{
	*der = NULL;
	return i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), der);
}

bool reality_cert_ok(const struct reality_keys *keys, const struct tls_chain *chain)
{
	const unsigned char *p;
	uint8_t want[REALITY_SERIAL], have[REALITY_SERIAL], *spki = NULL;
	const ASN1_INTEGER *sn;
	BIGNUM *bn = NULL;
	bool ok = false;
	X509 *x;
	int n;

	if (chain->n < 1)
		return false;
	p = chain->der[0];
	x = d2i_X509(NULL, &p, (long)chain->len[0]);
	if (x == NULL)
		return false;
	n = spki_of(x, &spki);
	sn = X509_get0_serialNumber(x);
	if (n > 0 && sn != NULL && (bn = ASN1_INTEGER_to_BN(sn, NULL)) != NULL &&
	    BN_num_bytes(bn) == REALITY_SERIAL && BN_bn2bin(bn, have) == REALITY_SERIAL) {
		cert_serial(want, keys, spki, (size_t)n);
		ok = yip_ct_eq(want, have, REALITY_SERIAL);
	}
	BN_free(bn);
	OPENSSL_free(spki);
	X509_free(x);
	return ok;
}

size_t reality_cert_make(uint8_t *out, size_t cap, const struct reality_keys *keys, EVP_PKEY *key,
                         const char *name, uint32_t unix_s)
{
	uint8_t serial[REALITY_SERIAL], *spki = NULL, *der = NULL;
	X509 *x = X509_new();
	X509_NAME *nm = X509_NAME_new();
	BIGNUM *bn = NULL;
	ASN1_INTEGER *sn = NULL;
	size_t ret = 0;
	int n;

	if (x == NULL || nm == NULL || !X509_set_version(x, 2) || !X509_set_pubkey(x, key) ||
	    !X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)name, -1, -1,
	                                0) ||
	    !X509_set_subject_name(x, nm) || !X509_set_issuer_name(x, nm) ||
	    X509_time_adj_ex(X509_getm_notBefore(x), 0, -3600, &(time_t){(time_t)unix_s}) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), 365, 0, &(time_t){(time_t)unix_s}) == NULL)
		goto out;
	n = spki_of(x, &spki);
	if (n <= 0)
		goto out;
	cert_serial(serial, keys, spki, (size_t)n);
	if ((bn = BN_bin2bn(serial, REALITY_SERIAL, NULL)) == NULL ||
	    (sn = BN_to_ASN1_INTEGER(bn, NULL)) == NULL || !X509_set_serialNumber(x, sn) ||
	    X509_sign(x, key, EVP_sha256()) <= 0)
		goto out;
	n = i2d_X509(x, &der);
	if (n > 0 && (size_t)n <= cap) {
		memcpy(out, der, (size_t)n);
		ret = (size_t)n;
	}
out:
	OPENSSL_free(der);
	OPENSSL_free(spki);
	ASN1_INTEGER_free(sn);
	BN_free(bn);
	X509_NAME_free(nm);
	X509_free(x);
	return ret;
}

bool reality_client_seal(void *ctx, uint8_t *hello, size_t len,
                         const uint8_t x25519_priv[REALITY_KEY_LEN])
{
	struct reality_client *rc = ctx;

	rc->sealed = reality_seal(hello, len, x25519_priv, rc->front_pub, rc->short_id, rc->unix_s,
	                          &rc->keys);
	return rc->sealed;
}

bool reality_client_verify(void *ctx, const struct tls_chain *chain, const char *sni)
{
	struct reality_client *rc = ctx;

	(void)sni;
	rc->spliced = !rc->sealed || !reality_cert_ok(&rc->keys, chain);
	return !rc->spliced;
}

void reality_client_wipe(struct reality_client *rc)
{
	sodium_memzero(&rc->keys, sizeof(rc->keys));
	rc->sealed = false;
}

/* ---- the server ---- */

struct reality_server *reality_server_new(const struct reality_server_config *cfg)
{
	struct reality_server *s;

	if (cfg->n_names == 0 || cfg->n_names > REALITY_NAMES_MAX || cfg->n_ids == 0 ||
	    cfg->n_ids > REALITY_IDS_MAX)
		return NULL;
	for (size_t i = 0; i < cfg->n_names; i++)
		if (cfg->names[i] == NULL || strlen(cfg->names[i]) == 0 ||
		    strlen(cfg->names[i]) > 255)
			return NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	memcpy(s->priv, cfg->priv, REALITY_KEY_LEN);
	for (size_t i = 0; i < cfg->n_names; i++)
		strcpy(s->names[i], cfg->names[i]);
	s->n_names = cfg->n_names;
	memcpy(s->ids, cfg->ids, sizeof(s->ids));
	s->n_ids = cfg->n_ids;
	return s;
}

void reality_server_free(struct reality_server *s)
{
	if (s == NULL)
		return;
	sodium_memzero(s->priv, sizeof(s->priv));
	free(s->cache);
	free(s);
}

static bool offers_tls13(const struct tls_ch_view *v)
{
	for (size_t i = 0; i < v->n_versions; i++)
		if (v->versions[i] == 0x0304)
			return true;
	return false;
}

static bool name_known(const struct reality_server *s, const struct tls_ch_view *v)
{
	if (v->sni == NULL)
		return false;
	for (size_t i = 0; i < s->n_names; i++)
		if (strlen(s->names[i]) == v->sni_len &&
		    strncasecmp(s->names[i], (const char *)v->sni, v->sni_len) == 0)
			return true;
	return false;
}

static bool id_known(const struct reality_server *s, const uint8_t id[WIRE_REALITY_SHORT_ID])
{
	bool found = false;

	for (size_t i = 0; i < s->n_ids; i++)
		found |= yip_ct_eq(s->ids[i], id, WIRE_REALITY_SHORT_ID);
	return found;
}

/* Remembers a seal's tag: REALITY_AUTHENTICATED if it is new, else REPLAY or BUSY. */
static enum reality_verdict remember(struct reality_server *s, const uint8_t tag[YIP_AEAD_TAG],
                                     uint32_t seal_s, uint32_t unix_s)
{
	uint32_t h = (uint32_t)tag[0] | (uint32_t)tag[1] << 8 | (uint32_t)tag[2] << 16 |
	             (uint32_t)tag[3] << 24;
	struct seen *free_slot = NULL;

	if (s->cache == NULL && (s->cache = calloc(REALITY_CACHE, sizeof(*s->cache))) == NULL)
		return REALITY_BUSY;
	for (unsigned k = 0; k < CACHE_PROBE; k++) {
		struct seen *e = &s->cache[(h + k) & (REALITY_CACHE - 1)];
		/* A seal older than the window could not pass the clock check again. */
		bool stale = e->unix_s == 0 || (int64_t)unix_s - e->unix_s > REALITY_WINDOW_S;

		if (!stale && memcmp(e->tag, tag, YIP_AEAD_TAG) == 0)
			return REALITY_REPLAY;
		if (stale && free_slot == NULL)
			free_slot = e;
	}
	if (free_slot == NULL)
		return REALITY_BUSY;
	memcpy(free_slot->tag, tag, YIP_AEAD_TAG);
	free_slot->unix_s = seal_s ? seal_s : 1;
	return REALITY_AUTHENTICATED;
}

enum reality_verdict reality_check(struct reality_server *s, uint64_t now, uint32_t unix_s,
                                   const uint8_t *hello, size_t len, struct reality_keys *keys)
{
	struct tls_ch_view v;
	struct wire_reality_seal seal;
	uint8_t dh[REALITY_KEY_LEN], plain[WIRE_REALITY_PLAIN];
	const uint8_t *body;
	size_t body_len, at;
	enum reality_verdict r;
	uint8_t type;
	int64_t skew;

	if (len < TLS_HS_HDR || len > HELLO_MAX ||
	    tls_hs_get(hello, len, &type, &body, &body_len) != len || type != TLS_HS_CLIENT_HELLO ||
	    !tls_ch_get(&v, body, body_len))
		return REALITY_NOT_HELLO;
	if (!offers_tls13(&v))
		return REALITY_NO_TLS13;
	if (!name_known(s, &v))
		return REALITY_SNI;
	at = wire_reality_sid_at(hello, len);
	if (at == 0)
		return REALITY_NO_SEAL;
	if (v.x25519 == NULL)
		return REALITY_NO_SHARE;
	if (!yip_bucket_take(&s->budget, now, REALITY_RATE, REALITY_RATE))
		return REALITY_BUSY;
	if (yip_dh(dh, s->priv, v.x25519) != 0)
		return REALITY_SEAL;
	derive(keys, dh, hello_random(hello));
	sodium_memzero(dh, sizeof(dh));
	memcpy(s->aad, hello, len);
	memset(s->aad + at, 0, WIRE_REALITY_SID);
	if (yip_aead_open_nonce(plain, keys->auth, hello_random(hello) + SALT_LEN, s->aad, len,
	                        hello + at, WIRE_REALITY_SID) != 0) {
		sodium_memzero(keys, sizeof(*keys));
		return REALITY_SEAL;
	}
	if (!wire_reality_seal_get(&seal, plain))
		r = REALITY_PLAIN;
	else if (!id_known(s, seal.short_id))
		r = REALITY_SHORT_ID;
	else if ((skew = (int64_t)unix_s - (int64_t)seal.unix_s) > REALITY_WINDOW_S ||
	         skew < -REALITY_WINDOW_S)
		r = REALITY_CLOCK;
	else
		r = remember(s, hello + at + WIRE_REALITY_PLAIN, seal.unix_s, unix_s);
	sodium_memzero(plain, sizeof(plain));
	if (r != REALITY_AUTHENTICATED)
		sodium_memzero(keys, sizeof(*keys));
	return r;
}

bool reality_short_id_parse(uint8_t id[WIRE_REALITY_SHORT_ID], const char *hex)
{
	size_t n = strlen(hex);

	memset(id, 0, WIRE_REALITY_SHORT_ID);
	if (n % 2 != 0 || n > 2 * WIRE_REALITY_SHORT_ID)
		return false;
	return n == 0 || yip_hex_decode(id, n / 2, hex) == 0;
}
