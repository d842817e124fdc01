/*
 * The TLS 1.3 key schedule (RFC 8446 7.1, HKDF from libcrypto), record
 * protection (5.2, 5.3) and what else the client and the server share
 * (internal.h).
 */
#include "tls/internal.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

bool tls_suite_set(struct tls_suite *s, uint16_t cipher)
{
	switch (cipher) {
	case 0x1301:
		s->md = EVP_sha256();
		s->aead = EVP_aes_128_gcm();
		s->keylen = 16;
		break;
	case 0x1302:
		s->md = EVP_sha384();
		s->aead = EVP_aes_256_gcm();
		s->keylen = 32;
		break;
	case 0x1303:
		s->md = EVP_sha256();
		s->aead = EVP_chacha20_poly1305();
		s->keylen = 32;
		break;
	default:
		return false;
	}
	s->cipher = cipher;
	s->hlen = (size_t)EVP_MD_get_size(s->md);
	return true;
}

/* HKDF-Extract (prk = out, hlen bytes) or HKDF-Expand (out, n bytes). */
static bool hkdf(const struct tls_suite *s, int mode, uint8_t *out, size_t n, const uint8_t *salt,
                 size_t salt_len, const uint8_t *key, size_t key_len, const uint8_t *info,
                 size_t info_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	EVP_KDF_CTX *k = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM p[6], *q = p;
	bool ok;

	*q++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	                                        (char *)EVP_MD_get0_name(s->md), 0);
	*q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, key_len);
	if (salt)
		*q++ =
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
	if (info)
		*q++ =
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
	*q = OSSL_PARAM_construct_end();
	ok = k && EVP_KDF_derive(k, out, n, p) == 1;
	EVP_KDF_CTX_free(k);
	EVP_KDF_free(kdf);
	return ok;
}

bool tls_key_extract(const struct tls_suite *s, uint8_t *prk, const uint8_t *salt,
                     const uint8_t *ikm, size_t ikm_len)
{
	return hkdf(s, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, prk, s->hlen, salt, s->hlen, ikm, ikm_len,
	            NULL, 0);
}

bool tls_key_expand_label(const struct tls_suite *s, uint8_t *out, size_t n, const uint8_t *secret,
                          const char *label, const uint8_t *ctx, size_t ctx_len)
{
	uint8_t info[2 + 1 + 6 + 32 + 1 + TLS_HASH_MAX];
	size_t ll = strlen(label), i = 0;

	info[i++] = (uint8_t)(n >> 8);
	info[i++] = (uint8_t)n;
	info[i++] = (uint8_t)(6 + ll);
	memcpy(info + i, "tls13 ", 6);
	memcpy(info + i + 6, label, ll);
	i += 6 + ll;
	info[i++] = (uint8_t)ctx_len;
	if (ctx_len)
		memcpy(info + i, ctx, ctx_len);
	i += ctx_len;
	return hkdf(s, EVP_KDF_HKDF_MODE_EXPAND_ONLY, out, n, NULL, 0, secret, s->hlen, info, i);
}

bool tls_key_transcript(const EVP_MD_CTX *t, uint8_t *out)
{
	EVP_MD_CTX *copy = EVP_MD_CTX_new();
	bool ok =
	    copy && EVP_MD_CTX_copy_ex(copy, t) == 1 && EVP_DigestFinal_ex(copy, out, NULL) == 1;

	EVP_MD_CTX_free(copy);
	return ok;
}

bool tls_key_derive(const struct tls_suite *s, const EVP_MD_CTX *t, uint8_t *out,
                    const uint8_t *secret, const char *label)
{
	uint8_t h[TLS_HASH_MAX];

	return tls_key_transcript(t, h) &&
	       tls_key_expand_label(s, out, s->hlen, secret, label, h, s->hlen);
}

bool tls_key_derive_empty(const struct tls_suite *s, uint8_t *out, const uint8_t *secret)
{
	uint8_t h[TLS_HASH_MAX];

	return EVP_Digest(NULL, 0, h, NULL, s->md, NULL) == 1 &&
	       tls_key_expand_label(s, out, s->hlen, secret, "derived", h, s->hlen);
}

bool tls_key_handshake(const struct tls_suite *s, const EVP_MD_CTX *t, const uint8_t *shared,
                       size_t shared_len, uint8_t *hs_secret, uint8_t *c_hs, uint8_t *s_hs)
{
	static const uint8_t zero[TLS_HASH_MAX];
	uint8_t early[TLS_HASH_MAX], salt[TLS_HASH_MAX];
	bool ok = tls_key_extract(s, early, zero, zero, s->hlen) &&
	          tls_key_derive_empty(s, salt, early) &&
	          tls_key_extract(s, hs_secret, salt, shared, shared_len) &&
	          tls_key_derive(s, t, c_hs, hs_secret, "c hs traffic") &&
	          tls_key_derive(s, t, s_hs, hs_secret, "s hs traffic");

	OPENSSL_cleanse(early, sizeof(early));
	OPENSSL_cleanse(salt, sizeof(salt));
	return ok;
}

bool tls_key_app(const struct tls_suite *s, const EVP_MD_CTX *t, const uint8_t *hs_secret,
                 uint8_t *c_ap, uint8_t *s_ap)
{
	static const uint8_t zero[TLS_HASH_MAX];
	uint8_t salt[TLS_HASH_MAX], master[TLS_HASH_MAX];
	bool ok = tls_key_derive_empty(s, salt, hs_secret) &&
	          tls_key_extract(s, master, salt, zero, s->hlen) &&
	          tls_key_derive(s, t, c_ap, master, "c ap traffic") &&
	          tls_key_derive(s, t, s_ap, master, "s ap traffic");

	OPENSSL_cleanse(master, sizeof(master));
	OPENSSL_cleanse(salt, sizeof(salt));
	return ok;
}

bool tls_key_finished(const struct tls_suite *s, const EVP_MD_CTX *t, uint8_t *out,
                      const uint8_t *base_key)
{
	uint8_t key[TLS_HASH_MAX], h[TLS_HASH_MAX];
	unsigned len = 0;
	bool ok = tls_key_expand_label(s, key, s->hlen, base_key, "finished", NULL, 0) &&
	          tls_key_transcript(t, h) &&
	          HMAC(s->md, key, (int)s->hlen, h, s->hlen, out, &len) != NULL;

	OPENSSL_cleanse(key, sizeof(key));
	return ok && len == s->hlen;
}

size_t tls_key_cv_signed(const struct tls_suite *s, const EVP_MD_CTX *t,
                         uint8_t out[TLS_CV_SIGNED_MAX])
{
	static const char context[] = "TLS 1.3, server CertificateVerify";

	memset(out, 0x20, 64);
	memcpy(out + 64, context, sizeof(context));
	if (!tls_key_transcript(t, out + 64 + sizeof(context)))
		return 0;
	return 64 + sizeof(context) + s->hlen;
}

/* ---- records ---- */

bool tls_dir_set(const struct tls_suite *s, struct tls_dir *d, const uint8_t *secret, int enc)
{
	uint8_t key[32];
	bool ok;

	if (d->secret != secret)
		memcpy(d->secret, secret, s->hlen);
	ok = tls_key_expand_label(s, key, s->keylen, secret, "key", NULL, 0) &&
	     tls_key_expand_label(s, d->iv, TLS_IV_LEN, secret, "iv", NULL, 0) &&
	     EVP_CipherInit_ex(d->ctx, s->aead, NULL, key, NULL, enc) == 1;
	OPENSSL_cleanse(key, sizeof(key));
	d->seq = 0;
	d->on = ok;
	return ok;
}

bool tls_dir_next(const struct tls_suite *s, struct tls_dir *d, int enc)
{
	uint8_t next[TLS_HASH_MAX];
	bool ok = tls_key_expand_label(s, next, s->hlen, d->secret, "traffic upd", NULL, 0) &&
	          tls_dir_set(s, d, next, enc);

	OPENSSL_cleanse(next, sizeof(next));
	return ok;
}

static void nonce(const struct tls_dir *d, uint8_t n[TLS_IV_LEN])
{
	memcpy(n, d->iv, TLS_IV_LEN);
	for (unsigned i = 0; i < 8; i++)
		n[TLS_IV_LEN - 1 - i] ^= (uint8_t)(d->seq >> (8 * i));
}

size_t tls_dir_seal(struct tls_dir *d, uint8_t *out, size_t cap, uint8_t type, const uint8_t *data,
                    size_t len, size_t pad)
{
	size_t n = len + 1 + pad;
	uint8_t iv[TLS_IV_LEN], *body = out + TLS_REC_HDR;
	int outl;

	if (!d->on || n > TLS_REC_PLAIN + 1 || cap < TLS_REC_HDR + n + TLS_TAG_LEN)
		return 0;
	tls_rec_put(out, TLS_CT_APP, 0x0303, (uint16_t)(n + TLS_TAG_LEN));
	if (len > 0 && data != body)
		memmove(body, data, len);
	body[len] = type;
	memset(body + len + 1, 0, pad);
	nonce(d, iv);
	if (EVP_CipherInit_ex(d->ctx, NULL, NULL, NULL, iv, 1) != 1 ||
	    EVP_CipherUpdate(d->ctx, NULL, &outl, out, TLS_REC_HDR) != 1 ||
	    EVP_CipherUpdate(d->ctx, body, &outl, body, (int)n) != 1 ||
	    EVP_CipherFinal_ex(d->ctx, body + n, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_GET_TAG, TLS_TAG_LEN, body + n) != 1)
		return 0;
	d->seq++;
	return TLS_REC_HDR + n + TLS_TAG_LEN;
}

bool tls_dir_open(struct tls_dir *d, uint8_t *rec, size_t body_len, uint8_t *type, uint8_t **plain,
                  size_t *plain_len)
{
	uint8_t iv[TLS_IV_LEN], *body = rec + TLS_REC_HDR;
	size_t n;
	int outl;

	if (body_len < 1 + TLS_TAG_LEN)
		return false;
	n = body_len - TLS_TAG_LEN;
	nonce(d, iv);
	if (EVP_CipherInit_ex(d->ctx, NULL, NULL, NULL, iv, 0) != 1 ||
	    EVP_CipherUpdate(d->ctx, NULL, &outl, rec, TLS_REC_HDR) != 1 ||
	    EVP_CipherUpdate(d->ctx, body, &outl, body, (int)n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(d->ctx, EVP_CTRL_AEAD_SET_TAG, TLS_TAG_LEN, body + n) != 1 ||
	    EVP_CipherFinal_ex(d->ctx, body + n, &outl) != 1)
		return false;
	d->seq++;
	while (n > 0 && body[n - 1] == 0)
		n--;
	*type = n > 0 ? body[n - 1] : 0;
	*plain = body;
	*plain_len = n > 0 ? n - 1 : 0;
	return true;
}

/* ---- the record layer ---- */

/* The alert a failure sends. */
static uint8_t err_alert(enum tls_err err)
{
	static const uint8_t alerts[TLS_ERRS] = {
	    [TLS_ERR_DECODE] = TLS_ALERT_DECODE_ERROR,
	    [TLS_ERR_UNEXPECTED] = TLS_ALERT_UNEXPECTED_MESSAGE,
	    [TLS_ERR_VERSION] = TLS_ALERT_PROTOCOL_VERSION,
	    [TLS_ERR_PARAMETER] = TLS_ALERT_ILLEGAL_PARAMETER,
	    [TLS_ERR_MLKEM] = TLS_ALERT_HANDSHAKE_FAILURE,
	    [TLS_ERR_HRR] = TLS_ALERT_HANDSHAKE_FAILURE,
	    [TLS_ERR_UNSUPPORTED] = TLS_ALERT_HANDSHAKE_FAILURE,
	    [TLS_ERR_CERT] = TLS_ALERT_BAD_CERTIFICATE,
	    [TLS_ERR_SIGNATURE] = TLS_ALERT_DECRYPT_ERROR,
	    [TLS_ERR_FINISHED] = TLS_ALERT_DECRYPT_ERROR,
	    [TLS_ERR_RECORD_MAC] = TLS_ALERT_BAD_RECORD_MAC,
	    [TLS_ERR_OVERFLOW] = TLS_ALERT_RECORD_OVERFLOW,
	    [TLS_ERR_INTERNAL] = TLS_ALERT_INTERNAL_ERROR,
	    [TLS_ERR_QUIC_TP] = TLS_ALERT_MISSING_EXTENSION,
	};

	return (unsigned)err < TLS_ERRS ? alerts[err] : TLS_ALERT_INTERNAL_ERROR;
}

/*
 * Gathers one record into rl->rec from in: the bytes taken in *used; 1
 * with r filled once the record is whole (rl->rec_n back to 0), 0 if more
 * are needed, -1 if its header cannot start a record.
 */
static int rec_take(struct tls_rl *rl, struct tls_rec *r, const uint8_t *in, size_t len,
                    size_t *used)
{
	uint8_t *rec = rl->rec;
	size_t take;
	int h;

	*used = 0;
	if (rl->rec_n < TLS_REC_HDR) {
		take = TLS_REC_HDR - rl->rec_n < len ? TLS_REC_HDR - rl->rec_n : len;
		memcpy(rec + rl->rec_n, in, take);
		rl->rec_n += take;
		*used = take;
	}
	h = tls_rec_get(r, rec, rl->rec_n, TLS_REC_CIPHER);
	if (h <= 0)
		return h;
	take = TLS_REC_HDR + r->len - rl->rec_n;
	if (take > len - *used)
		take = len - *used;
	memcpy(rec + rl->rec_n, in + *used, take);
	rl->rec_n += take;
	*used += take;
	if (rl->rec_n < TLS_REC_HDR + (size_t)r->len)
		return 0;
	rl->rec_n = 0;
	return 1;
}

bool tls_rl_init(struct tls_rl *rl, uint8_t *hs, size_t hs_cap, uint8_t *out, size_t out_cap)
{
	rl->hs = hs;
	rl->hs_cap = hs_cap;
	rl->out = out;
	rl->out_cap = out_cap;
	rl->rx.ctx = EVP_CIPHER_CTX_new();
	rl->tx.ctx = EVP_CIPHER_CTX_new();
	return rl->rx.ctx != NULL && rl->tx.ctx != NULL;
}

void tls_rl_free(struct tls_rl *rl)
{
	EVP_CIPHER_CTX_free(rl->rx.ctx);
	EVP_CIPHER_CTX_free(rl->tx.ctx);
}

bool tls_rl_out(struct tls_rl *rl, const uint8_t *p, size_t n)
{
	if (rl->out_cap - rl->out_n < n)
		return false;
	memcpy(rl->out + rl->out_n, p, n);
	rl->out_n += n;
	return true;
}

void tls_rl_out_done(struct tls_rl *rl, size_t k)
{
	if (k > rl->out_n)
		k = rl->out_n;
	memmove(rl->out, rl->out + k, rl->out_n - k);
	rl->out_n -= k;
}

size_t tls_rl_seal(struct tls_rl *rl, uint8_t *out, size_t cap, uint8_t type, const uint8_t *data,
                   size_t len, size_t pad)
{
	size_t n = tls_dir_seal(&rl->tx, out, cap, type, data, len, pad);

	rl->stats.records_out += n > 0;
	return n;
}

bool tls_rl_put(struct tls_rl *rl, uint8_t type, const uint8_t *p, size_t len, size_t pad)
{
	size_t k;

	if (!rl->tx.on && !rl->sealed_only) {
		uint8_t h[TLS_REC_HDR];

		tls_rec_put(h, type, 0x0303, (uint16_t)len);
		return rl->out_cap - rl->out_n >= TLS_REC_HDR + len &&
		       tls_rl_out(rl, h, TLS_REC_HDR) && tls_rl_out(rl, p, len);
	}
	k = tls_rl_seal(rl, rl->out + rl->out_n, rl->out_cap - rl->out_n, type, p, len, pad);
	rl->out_n += k;
	return k > 0;
}

size_t tls_rl_app(struct tls_rl *rl, uint8_t *out, size_t cap, const uint8_t *data, size_t len,
                  size_t pad)
{
	if (rl->quic || rl->phase != TLS_PHASE_CONNECTED || rl->tx_closed || rl->out_n != 0 ||
	    len + pad > TLS_REC_PLAIN)
		return 0;
	return tls_rl_seal(rl, out, cap, TLS_CT_APP, data, len, pad);
}

bool tls_rl_key_update(struct tls_rl *rl, const struct tls_suite *s, bool request)
{
	uint8_t ku[TLS_HS_HDR + 1];

	tls_hs_put(ku, TLS_HS_KEY_UPDATE, 1);
	ku[TLS_HS_HDR] = request ? 1 : 0;
	if (!tls_rl_put(rl, TLS_CT_HANDSHAKE, ku, sizeof(ku), 0) || !tls_dir_next(s, &rl->tx, 1))
		return false;
	rl->stats.key_updates_out++;
	return true;
}

enum tls_err tls_rl_key_update_in(struct tls_rl *rl, const struct tls_suite *s, const uint8_t *body,
                                  size_t n)
{
	bool requested;

	if (!tls_ku_get(&requested, body, n))
		return TLS_ERR_DECODE;
	rl->stats.key_updates_in++;
	if (!tls_dir_next(s, &rl->rx, 0))
		return TLS_ERR_INTERNAL;
	if (requested && !rl->tx_closed && !tls_rl_key_update(rl, s, false))
		return TLS_ERR_INTERNAL;
	return TLS_ERR_NONE;
}

void tls_rl_alert(struct tls_rl *rl, uint8_t desc)
{
	uint8_t a[2] = {desc == TLS_ALERT_CLOSE_NOTIFY ? 1 : 2, desc};

	if (!rl->tx_closed && rl->quic)
		rl->alert = desc;
	else if (!rl->tx_closed)
		(void)tls_rl_put(rl, TLS_CT_ALERT, a, 2, 0);
	rl->tx_closed = true;
}

void tls_rl_fail(struct tls_rl *rl, struct tls_event *ev, enum tls_err err)
{
	if (rl->phase != TLS_PHASE_FAILED) {
		rl->phase = TLS_PHASE_FAILED;
		rl->err = err;
		rl->stats.fail[err]++;
		if (err != TLS_ERR_ALERT)
			tls_rl_alert(rl, err_alert(err));
	}
	ev->kind = TLS_EV_FAILED;
	ev->err = rl->err;
}

/* Handshake bytes added to hs and each whole message handed to msg: the
 * first error. */
static enum tls_err hs_feed(struct tls_rl *rl, const uint8_t *p, size_t n, tls_msg_fn *msg,
                            void *ctx)
{
	uint8_t *hs = rl->hs;
	size_t used = 0, k;
	enum tls_err err = TLS_ERR_NONE;

	if (n == 0)
		return TLS_ERR_DECODE;
	if (rl->hs_cap - rl->hs_n < n)
		return TLS_ERR_OVERFLOW;
	memcpy(hs + rl->hs_n, p, n);
	rl->hs_n += n;
	while (err == TLS_ERR_NONE) {
		const uint8_t *body;
		size_t body_len;
		uint8_t type;
		bool rekeyed = false;

		k = tls_hs_get(hs + used, rl->hs_n - used, &type, &body, &body_len);
		if (k == 0)
			break;
		err = msg(ctx, hs + used, k, type, body, body_len, &rekeyed);
		used += k;
		/* The keys changed: nothing may follow in this record. */
		if (err == TLS_ERR_NONE && rekeyed && used != rl->hs_n)
			err = TLS_ERR_UNEXPECTED;
	}
	memmove(hs, hs + used, rl->hs_n - used);
	rl->hs_n -= used;
	/* A message header longer than the buffer could ever hold. */
	if (err == TLS_ERR_NONE && rl->hs_n >= TLS_HS_HDR &&
	    ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]) > rl->hs_cap - TLS_HS_HDR)
		err = TLS_ERR_OVERFLOW;
	return err;
}

void tls_rl_handshake(struct tls_rl *rl, struct tls_event *ev, const uint8_t *p, size_t n,
                      tls_msg_fn *msg, void *ctx)
{
	bool was_connected = rl->phase == TLS_PHASE_CONNECTED;
	enum tls_err err = hs_feed(rl, p, n, msg, ctx);

	if (err != TLS_ERR_NONE)
		tls_rl_fail(rl, ev, err);
	else if (!was_connected && rl->phase == TLS_PHASE_CONNECTED)
		ev->kind = TLS_EV_CONNECTED;
}

/* An alert's body: close_notify closes, any other fails with TLS_ERR_ALERT
 * (ev->alert the peer's). */
static enum tls_err alert_in(struct tls_rl *rl, const uint8_t *p, size_t n, struct tls_event *ev)
{
	uint8_t level, desc;

	if (!tls_alert_get(&level, &desc, p, n))
		return TLS_ERR_DECODE;
	if (desc != TLS_ALERT_CLOSE_NOTIFY) {
		ev->alert = desc;
		return TLS_ERR_ALERT;
	}
	rl->phase = TLS_PHASE_CLOSED;
	ev->kind = TLS_EV_CLOSED;
	return TLS_ERR_NONE;
}

/* The whole record in rl->rec (r its header) opened with rx if protected:
 * its inner type and plaintext; TLS_ERR_UNEXPECTED (protected before
 * keys), TLS_ERR_RECORD_MAC, or TLS_ERR_OVERFLOW. */
static enum tls_err rec_open(struct tls_rl *rl, const struct tls_rec *r, uint8_t *type,
                             uint8_t **plain, size_t *plain_len)
{
	*type = r->type;
	*plain = rl->rec + TLS_REC_HDR;
	*plain_len = r->len;
	if (r->type == TLS_CT_APP) {
		if (!rl->rx.on)
			return TLS_ERR_UNEXPECTED;
		if (!tls_dir_open(&rl->rx, rl->rec, r->len, type, plain, plain_len))
			return TLS_ERR_RECORD_MAC;
	}
	return *plain_len > TLS_REC_PLAIN ? TLS_ERR_OVERFLOW : TLS_ERR_NONE;
}

/* The whole record in rl->rec (r its header), allow what may come now. */
static void on_record(struct tls_rl *rl, const struct tls_rec *r, struct tls_event *ev,
                      unsigned allow, tls_msg_fn *msg, void *ctx)
{
	uint8_t *p, type;
	size_t n;
	enum tls_err err;

	rl->stats.records_in++;
	if (r->type == TLS_CT_CCS) {
		p = rl->rec + TLS_REC_HDR;
		if (!(allow & TLS_RL_CCS) || r->len != 1 || p[0] != 1 || ++rl->ccs > TLS_CCS_MAX)
			tls_rl_fail(rl, ev, TLS_ERR_UNEXPECTED);
		return;
	}
	err = rec_open(rl, r, &type, &p, &n);
	/* In the clear: an alert or handshake bytes, as allow says. */
	if (err == TLS_ERR_NONE && r->type != TLS_CT_APP &&
	    !(allow & (r->type == TLS_CT_ALERT ? TLS_RL_ALERT : TLS_RL_HS_CLEAR)))
		err = TLS_ERR_UNEXPECTED;
	if (err != TLS_ERR_NONE) {
		tls_rl_fail(rl, ev, err);
		return;
	}
	switch (type) {
	case TLS_CT_ALERT:
		err = alert_in(rl, p, n, ev);
		break;
	case TLS_CT_HANDSHAKE:
		tls_rl_handshake(rl, ev, p, n, msg, ctx);
		return;
	case TLS_CT_APP:
		if (rl->phase != TLS_PHASE_CONNECTED || rl->hs_n != 0) {
			err = TLS_ERR_UNEXPECTED;
			break;
		}
		ev->kind = TLS_EV_DATA;
		ev->data = p;
		ev->len = n;
		return;
	default:
		err = TLS_ERR_UNEXPECTED;
		break;
	}
	if (err != TLS_ERR_NONE)
		tls_rl_fail(rl, ev, err);
}

size_t tls_rl_recv(struct tls_rl *rl, const uint8_t *in, size_t len, struct tls_event *ev,
                   unsigned allow, tls_msg_fn *msg, void *ctx)
{
	struct tls_rec r;
	size_t used;
	int h;

	memset(ev, 0, sizeof(*ev));
	if (rl->phase == TLS_PHASE_FAILED) {
		tls_rl_fail(rl, ev, rl->err);
		return len;
	}
	if (rl->phase == TLS_PHASE_CLOSED) {
		ev->kind = TLS_EV_CLOSED;
		return len;
	}
	if (rl->quic) {
		tls_rl_fail(rl, ev, TLS_ERR_UNEXPECTED);
		return len;
	}
	if (len == 0)
		return 0;
	h = rec_take(rl, &r, in, len, &used);
	if (h == 0)
		return used;
	if (h < 0) {
		tls_rl_fail(rl, ev, TLS_ERR_DECODE);
		return len;
	}
	on_record(rl, &r, ev, allow, msg, ctx);
	return used;
}
