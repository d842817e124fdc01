/*
 * The TLS 1.3 client's state machine; the key schedule (RFC 8446 7.1) and
 * record protection (5.2) it runs on are keys.c's, shared with the server
 * (server.c). See tls.h for the API and what it leaves out.
 */
#include "tls/tls.h"
#include "tls/internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "crypto/crypto.h"
#include "crypto/mlkem.h"
#include "wire/reality.h"

#define HASH_MAX TLS_HASH_MAX

enum state {
	ST_WAIT_SH,
	ST_WAIT_EE,
	ST_WAIT_CERT,
	ST_WAIT_CV,
	ST_WAIT_FIN, /* then c->rl.phase says connected, closed or failed */
};

struct tls_client {
	enum state state;
	char sni[256];
	bool has_sni;
	tls_rand_fn *rand;
	void *rand_ctx;
	tls_verify_fn *verify;
	void *verify_ctx;

	struct tls_suite suite;
	EVP_MD_CTX *transcript;
	EVP_PKEY *leaf;

	uint8_t x25519_priv[TLS_X25519_LEN], x25519_pub[TLS_X25519_LEN];
	/* The X25519MLKEM768 share's secrets, wiped once the server has answered. */
	uint8_t mlkem_dk[MLKEM768_DK_LEN], hybrid_priv[TLS_X25519_LEN];
	/* The hello's choices, kept for a second hello after a HelloRetryRequest,
	 * and that retry's group and EC key. */
	struct tls_ch hello;
	uint8_t ech[TLS_ECH_GREASE_MAX];
	uint16_t retry_group;
	EVP_PKEY *ec;
	bool ccs_sent;
	uint8_t hs_secret[HASH_MAX], c_hs[HASH_MAX], s_hs[HASH_MAX];
	struct tls_rl rl;
	uint8_t alpn[255];
	size_t alpn_len;

	/* QUIC mode (c->rl.quic) */
	tls_secret_fn *secret;
	void *secret_ctx;
	enum tls_level rx_level, tx_level, out_level;
	uint8_t quic_tp[TLS_QUIC_TP_MAX];
	size_t quic_tp_len, peer_tp_len;
	bool has_peer_tp;
	uint8_t peer_tp[TLS_QUIC_TP_MAX];

	size_t ch_len;
	uint8_t ch[TLS_CH_MAX];
	uint8_t hs[TLS_HS_BUF];
	uint8_t out[TLS_OUT_BUF];
};

const char *tls_err_name(unsigned err)
{
	static const char *const names[TLS_ERRS] = {
	    "none",     "decode",      "unexpected", "version",   "parameter", "mlkem",
	    "hrr",      "unsupported", "cert",       "signature", "finished",  "record_mac",
	    "overflow", "alert",       "internal",   "quic_tp",
	};

	return err < TLS_ERRS ? names[err] : "?";
}

/* ---- records ---- */

/* Queues a handshake message, protected once there are keys. QUIC: it
 * goes out bare at the current level. */
static bool out_record(struct tls_client *c, uint8_t type, const uint8_t *p, size_t n)
{
	if (!c->rl.quic)
		return tls_rl_put(&c->rl, type, p, n, 0);
	if (c->rl.out_n > 0 && c->out_level != c->tx_level)
		return false;
	c->out_level = c->tx_level;
	return tls_rl_out(&c->rl, p, n);
}

/* ---- the handshake ---- */

static void transcript_add(struct tls_client *c, const uint8_t *msg, size_t n)
{
	(void)EVP_DigestUpdate(c->transcript, msg, n);
}

static const char *ec_group_name(uint16_t group)
{
	return group == TLS_GROUP_P256 ? "P-256" : "P-384";
}

/* The ECDH secret (the x coordinate) of c->ec and the server's point. */
static bool ec_shared(struct tls_client *c, const uint8_t *pub, size_t len, uint8_t *out,
                      size_t *out_len)
{
	OSSL_PARAM p[3];
	EVP_PKEY_CTX *from = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL), *dc = NULL;
	EVP_PKEY *peer = NULL;
	size_t want = c->retry_group == TLS_GROUP_P256 ? 65 : 97;
	bool ok;

	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
	                                        (char *)ec_group_name(c->retry_group), 0);
	p[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)pub, len);
	p[2] = OSSL_PARAM_construct_end();
	*out_len = HASH_MAX;
	ok = len == want && pub[0] == 4 && from && EVP_PKEY_fromdata_init(from) == 1 &&
	     EVP_PKEY_fromdata(from, &peer, EVP_PKEY_PUBLIC_KEY, p) == 1 &&
	     (dc = EVP_PKEY_CTX_new(c->ec, NULL)) != NULL && EVP_PKEY_derive_init(dc) == 1 &&
	     EVP_PKEY_derive_set_peer_ex(dc, peer, 1) == 1 &&
	     EVP_PKEY_derive(dc, out, out_len) == 1;
	EVP_PKEY_CTX_free(dc);
	EVP_PKEY_CTX_free(from);
	EVP_PKEY_free(peer);
	return ok;
}

/*
 * A HelloRetryRequest for P-256 or P-384 (offered in supported_groups, no
 * share sent): the second hello, the first's choices with that group's
 * share alone and the server's cookie, after Chrome's ChangeCipherSpec
 * (none in QUIC).
 * The transcript starts with message_hash(first hello) (RFC 8446 4.4.1).
 * The EC key comes from libcrypto's RNG, not the caller's.
 */
static enum tls_err on_retry(struct tls_client *c, const struct tls_sh *sh, const uint8_t *msg,
                             size_t n)
{
	static const uint8_t ccs[] = {TLS_CT_CCS, 3, 3, 0, 1, 1};
	uint8_t pub[97], h[TLS_HS_HDR + HASH_MAX], rec[TLS_REC_HDR];
	size_t pub_len = 0;

	/* A second HelloRetryRequest, or one for a group this client sent a
	 * share for (or never offered). */
	if (c->retry_group ||
	    (sh->share_group != TLS_GROUP_P256 && sh->share_group != TLS_GROUP_P384))
		return TLS_ERR_HRR;
	if (sh->share != NULL || !tls_suite_set(&c->suite, sh->cipher))
		return TLS_ERR_PARAMETER;
	c->retry_group = sh->share_group;
	c->ec = EVP_EC_gen(ec_group_name(c->retry_group));
	if (c->ec == NULL ||
	    EVP_PKEY_get_octet_string_param(c->ec, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, pub,
	                                    sizeof(pub), &pub_len) != 1)
		return TLS_ERR_INTERNAL;
	tls_hs_put(h, 254, c->suite.hlen); /* message_hash */
	if (EVP_DigestInit_ex(c->transcript, c->suite.md, NULL) != 1 ||
	    EVP_Digest(c->ch, c->ch_len, h + TLS_HS_HDR, NULL, c->suite.md, NULL) != 1)
		return TLS_ERR_INTERNAL;
	transcript_add(c, h, TLS_HS_HDR + c->suite.hlen);
	transcript_add(c, msg, n);
	c->hello.retry_group = c->retry_group;
	c->hello.retry_share = pub;
	c->hello.retry_share_len = pub_len;
	c->hello.cookie = sh->cookie;
	c->hello.cookie_len = sh->cookie_len;
	c->ch_len = tls_ch_put(c->ch, sizeof(c->ch), &c->hello);
	c->hello.retry_share = NULL;
	c->hello.cookie = NULL;
	if (c->ch_len == 0)
		return TLS_ERR_PARAMETER; /* a cookie too long for the hello */
	transcript_add(c, c->ch, c->ch_len);
	if (c->rl.quic) /* at the Initial level again, no ChangeCipherSpec */
		return out_record(c, TLS_CT_HANDSHAKE, c->ch, c->ch_len) ? TLS_ERR_NONE
		                                                         : TLS_ERR_INTERNAL;
	tls_rec_put(rec, TLS_CT_HANDSHAKE, 0x0303, (uint16_t)c->ch_len);
	if (!tls_rl_out(&c->rl, ccs, sizeof(ccs)) || !tls_rl_out(&c->rl, rec, TLS_REC_HDR) ||
	    !tls_rl_out(&c->rl, c->ch, c->ch_len))
		return TLS_ERR_INTERNAL;
	c->ccs_sent = true;
	return TLS_ERR_NONE;
}

/*
 * X25519MLKEM768's secret (draft-ietf-tls-ecdhe-mlkem): the server's share
 * is an ML-KEM-768 ciphertext, then an X25519 public key; the secret is
 * ML-KEM's 32 bytes, then X25519's. A ciphertext decapsulates to some
 * secret whatever its bytes (implicit rejection): a wrong one shows as a
 * Finished that does not verify.
 */
static enum tls_err hybrid_shared(struct tls_client *c, const struct tls_sh *sh,
                                  uint8_t shared[MLKEM_SS_LEN + TLS_X25519_LEN])
{
	if (sh->share_len != MLKEM768_CT_LEN + TLS_X25519_LEN)
		return TLS_ERR_MLKEM;
	if (!tls_suite_set(&c->suite, sh->cipher))
		return TLS_ERR_PARAMETER;
	if (mlkem768_decaps(shared, sh->share, c->mlkem_dk) != 0)
		return TLS_ERR_INTERNAL;
	if (yip_dh(shared + MLKEM_SS_LEN, c->hybrid_priv, sh->share + MLKEM768_CT_LEN) != 0) {
		OPENSSL_cleanse(shared, MLKEM_SS_LEN + TLS_X25519_LEN);
		return TLS_ERR_MLKEM; /* a low-order point */
	}
	return TLS_ERR_NONE;
}

/* A fresh X25519MLKEM768 share: an ML-KEM-768 encapsulation key, then an
 * X25519 public key (neither the plain X25519 share's). */
static bool hybrid_share(struct tls_client *c, uint8_t share[TLS_MLKEMX_LEN])
{
	uint8_t seed[MLKEM_SEED_LEN];
	bool ok;

	c->rand(c->rand_ctx, seed, sizeof(seed));
	ok = mlkem768_keygen(share, c->mlkem_dk, seed) == 0;
	OPENSSL_cleanse(seed, sizeof(seed));
	c->rand(c->rand_ctx, c->hybrid_priv, sizeof(c->hybrid_priv));
	(void)yip_key_public(share + MLKEM768_EK_LEN, c->hybrid_priv);
	return ok;
}

static enum tls_err on_server_hello(struct tls_client *c, const uint8_t *msg, size_t n)
{
	uint8_t shared[MLKEM_SS_LEN + TLS_X25519_LEN];
	size_t shared_len = TLS_X25519_LEN;
	struct tls_sh sh;
	bool ok;

	if (!tls_sh_get(&sh, msg + TLS_HS_HDR, n - TLS_HS_HDR))
		return TLS_ERR_DECODE;
	if (sh.version != 0x0304)
		return TLS_ERR_VERSION;
	/* The session id echoed: 32 bytes over TCP, none in QUIC. */
	if (sh.sid_len != c->ch[TLS_HS_HDR + 34] ||
	    (sh.sid_len > 0 && memcmp(sh.sid, c->ch + TLS_HS_HDR + 35, sh.sid_len)))
		return TLS_ERR_PARAMETER;
	if (sh.hrr)
		return on_retry(c, &sh, msg, n);
	if (c->retry_group) {
		/* After a retry: the suite and group it named. */
		if (sh.cipher != c->suite.cipher || sh.share_group != c->retry_group ||
		    !ec_shared(c, sh.share, sh.share_len, shared, &shared_len))
			return TLS_ERR_PARAMETER;
	} else {
		if (sh.share_group == TLS_GROUP_MLKEM768X) {
			enum tls_err e = hybrid_shared(c, &sh, shared);

			if (e != TLS_ERR_NONE)
				return e;
			shared_len = sizeof(shared);
		} else if (sh.share_group != TLS_GROUP_X25519 || sh.share_len != TLS_X25519_LEN ||
		           !tls_suite_set(&c->suite, sh.cipher) ||
		           yip_dh(shared, c->x25519_priv, sh.share) != 0)
			return TLS_ERR_PARAMETER;
		if (EVP_DigestInit_ex(c->transcript, c->suite.md, NULL) != 1)
			return TLS_ERR_INTERNAL;
		transcript_add(c, c->ch, c->ch_len);
	}
	transcript_add(c, msg, n);
	ok = tls_key_handshake(&c->suite, c->transcript, shared, shared_len, c->hs_secret, c->c_hs,
	                       c->s_hs) &&
	     (c->rl.quic ? c->secret(c->secret_ctx, TLS_LEVEL_HANDSHAKE, c->suite.cipher, c->s_hs,
	                             c->c_hs, c->suite.hlen)
	                 : tls_dir_set(&c->suite, &c->rl.rx, c->s_hs, 0));
	c->rx_level = TLS_LEVEL_HANDSHAKE;
	OPENSSL_cleanse(shared, sizeof(shared));
	OPENSSL_cleanse(c->x25519_priv, sizeof(c->x25519_priv));
	OPENSSL_cleanse(c->mlkem_dk, sizeof(c->mlkem_dk));
	OPENSSL_cleanse(c->hybrid_priv, sizeof(c->hybrid_priv));
	EVP_PKEY_free(c->ec);
	c->ec = NULL;
	if (!ok)
		return TLS_ERR_INTERNAL;
	c->state = ST_WAIT_EE;
	return TLS_ERR_NONE;
}

static enum tls_err on_encrypted_extensions(struct tls_client *c, const uint8_t *body, size_t n)
{
	struct tls_ee ee;

	if (!tls_ee_get(&ee, body, n))
		return TLS_ERR_DECODE;
	/* RFC 8446 4.2: an extension not offered aborts. ALPS answered would
	 * want this client's own settings in an EncryptedExtensions of its
	 * own, which it does not send yet. */
	if (ee.unsolicited || ee.alps || (!c->rl.quic && ee.quic_tp))
		return TLS_ERR_UNSUPPORTED;
	if (c->rl.quic) {
		/* RFC 9001 8.1, 8.2: h3 chosen, and the server's parameters. */
		if (!ee.alpn || ee.alpn_len != 2 || memcmp(ee.alpn, "h3", 2) != 0)
			return TLS_ERR_PARAMETER;
		if (!ee.quic_tp)
			return TLS_ERR_QUIC_TP;
		if (!tls_quic_tp_ok(ee.quic_tp, ee.quic_tp_len))
			return TLS_ERR_DECODE;
		if (ee.quic_tp_len > 0)
			memcpy(c->peer_tp, ee.quic_tp, ee.quic_tp_len);
		c->peer_tp_len = ee.quic_tp_len;
		c->has_peer_tp = true;
		memcpy(c->alpn, ee.alpn, ee.alpn_len);
		c->alpn_len = ee.alpn_len;
	} else if (ee.alpn) {
		if (!(ee.alpn_len == 2 && memcmp(ee.alpn, "h2", 2) == 0) &&
		    !(ee.alpn_len == 8 && memcmp(ee.alpn, "http/1.1", 8) == 0))
			return TLS_ERR_PARAMETER;
		memcpy(c->alpn, ee.alpn, ee.alpn_len);
		c->alpn_len = ee.alpn_len;
	}
	c->state = ST_WAIT_CERT;
	return TLS_ERR_NONE;
}

static enum tls_err on_certificate(struct tls_client *c, const uint8_t *body, size_t n)
{
	struct tls_chain chain;
	const uint8_t *p;
	size_t ctx_len;
	X509 *x;

	if (!tls_cert_get(&chain, &ctx_len, body, n))
		return TLS_ERR_DECODE;
	if (ctx_len != 0)
		return TLS_ERR_PARAMETER;
	if (!c->verify(c->verify_ctx, &chain, c->has_sni ? c->sni : NULL))
		return TLS_ERR_CERT;
	p = chain.der[0];
	x = d2i_X509(NULL, &p, (long)chain.len[0]);
	if (x == NULL || p != chain.der[0] + chain.len[0]) {
		X509_free(x);
		return TLS_ERR_CERT;
	}
	c->leaf = X509_get_pubkey(x);
	X509_free(x);
	if (c->leaf == NULL)
		return TLS_ERR_CERT;
	c->state = ST_WAIT_CV;
	return TLS_ERR_NONE;
}

static enum tls_err on_certificate_verify(struct tls_client *c, const uint8_t *body, size_t n)
{
	uint8_t signed_[TLS_CV_SIGNED_MAX];
	size_t signed_len;
	int type = EVP_PKEY_get_base_id(c->leaf);
	const EVP_MD *md;
	EVP_MD_CTX *m;
	EVP_PKEY_CTX *pc = NULL;
	const uint8_t *sig;
	size_t sig_len;
	uint16_t scheme;
	bool pss = false, ok;

	if (!tls_cv_get(&scheme, &sig, &sig_len, body, n))
		return TLS_ERR_DECODE;
	switch (scheme) {
	case 0x0403:
	case 0x0503:
		md = scheme == 0x0403 ? EVP_sha256() : EVP_sha384();
		if (type != EVP_PKEY_EC)
			return TLS_ERR_PARAMETER;
		break;
	case 0x0804:
	case 0x0805:
	case 0x0806:
		md = scheme == 0x0804   ? EVP_sha256()
		     : scheme == 0x0805 ? EVP_sha384()
		                        : EVP_sha512();
		if (type != EVP_PKEY_RSA)
			return TLS_ERR_PARAMETER;
		pss = true;
		break;
	case 0x0904:
	case 0x0905:
	case 0x0906:
		/* ML-DSA: offered as Chrome offers it, but libcrypto 3.0 cannot verify it. */
		return TLS_ERR_UNSUPPORTED;
	default: /* one not offered (GREASE), or PKCS#1 v1.5, which TLS 1.3 forbids here */
		return TLS_ERR_PARAMETER;
	}
	signed_len = tls_key_cv_signed(&c->suite, c->transcript, signed_);
	if (signed_len == 0)
		return TLS_ERR_INTERNAL;
	m = EVP_MD_CTX_new();
	ok = m && EVP_DigestVerifyInit(m, &pc, md, NULL, c->leaf) == 1 &&
	     (!pss || (EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1 &&
	               EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) == 1)) &&
	     EVP_DigestVerify(m, sig, sig_len, signed_, signed_len) == 1;
	EVP_MD_CTX_free(m);
	if (!ok)
		return TLS_ERR_SIGNATURE;
	c->state = ST_WAIT_FIN;
	return TLS_ERR_NONE;
}

/* The server's Finished is the whole message msg; then this side's. */
static enum tls_err on_finished(struct tls_client *c, const uint8_t *msg, size_t n)
{
	static const uint8_t ccs[] = {TLS_CT_CCS, 3, 3, 0, 1, 1};
	uint8_t want[HASH_MAX], fin[TLS_HS_HDR + HASH_MAX];
	uint8_t c_ap[HASH_MAX], s_ap[HASH_MAX];
	bool ok;

	if (n != TLS_HS_HDR + c->suite.hlen)
		return TLS_ERR_DECODE;
	if (!tls_key_finished(&c->suite, c->transcript, want, c->s_hs))
		return TLS_ERR_INTERNAL;
	if (CRYPTO_memcmp(want, msg + TLS_HS_HDR, c->suite.hlen) != 0)
		return TLS_ERR_FINISHED;
	transcript_add(c, msg, n);
	ok = tls_key_app(&c->suite, c->transcript, c->hs_secret, c_ap, s_ap);
	tls_hs_put(fin, TLS_HS_FINISHED, c->suite.hlen);
	ok = ok && tls_key_finished(&c->suite, c->transcript, fin + TLS_HS_HDR, c->c_hs);
	/* Chrome's middlebox-compatibility ChangeCipherSpec, then Finished
	 * under the handshake key, then the application keys. (After a
	 * retry the ChangeCipherSpec went before the second hello.) */
	if (c->rl.quic) {
		/* Finished at the Handshake level, then the 1-RTT secrets. */
		c->tx_level = TLS_LEVEL_HANDSHAKE;
		ok = ok && out_record(c, TLS_CT_HANDSHAKE, fin, TLS_HS_HDR + c->suite.hlen) &&
		     c->secret(c->secret_ctx, TLS_LEVEL_APP, c->suite.cipher, s_ap, c_ap,
		               c->suite.hlen);
		c->rx_level = TLS_LEVEL_APP;
		c->tx_level = TLS_LEVEL_APP;
	} else {
		ok = ok && (c->ccs_sent || tls_rl_out(&c->rl, ccs, sizeof(ccs))) &&
		     tls_dir_set(&c->suite, &c->rl.tx, c->c_hs, 1) &&
		     out_record(c, TLS_CT_HANDSHAKE, fin, TLS_HS_HDR + c->suite.hlen) &&
		     tls_dir_set(&c->suite, &c->rl.tx, c_ap, 1) &&
		     tls_dir_set(&c->suite, &c->rl.rx, s_ap, 0);
	}
	OPENSSL_cleanse(c_ap, sizeof(c_ap));
	OPENSSL_cleanse(s_ap, sizeof(s_ap));
	OPENSSL_cleanse(c->hs_secret, sizeof(c->hs_secret));
	OPENSSL_cleanse(c->c_hs, sizeof(c->c_hs));
	OPENSSL_cleanse(c->s_hs, sizeof(c->s_hs));
	EVP_PKEY_free(c->leaf);
	c->leaf = NULL;
	if (!ok)
		return TLS_ERR_INTERNAL;
	c->rl.phase = TLS_PHASE_CONNECTED;
	return TLS_ERR_NONE;
}

static enum tls_err on_post_handshake(struct tls_client *c, uint8_t type, const uint8_t *body,
                                      size_t n)
{
	switch (type) {
	case TLS_HS_NEW_SESSION_TICKET:
		return tls_nst_get(body, n) ? TLS_ERR_NONE : TLS_ERR_DECODE;
	case TLS_HS_KEY_UPDATE:
		if (c->rl.quic) /* RFC 9001 6: QUIC has its own key update */
			return TLS_ERR_UNEXPECTED;
		return tls_rl_key_update_in(&c->rl, &c->suite, body, n);
	default:
		return TLS_ERR_UNEXPECTED;
	}
}

/* One whole handshake message. */
static enum tls_err on_message(struct tls_client *c, const uint8_t *msg, size_t n, uint8_t type,
                               const uint8_t *body, size_t body_len)
{
	enum tls_err err;

	if (c->rl.phase == TLS_PHASE_CONNECTED)
		return on_post_handshake(c, type, body, body_len);
	if (type == TLS_HS_CERTIFICATE_REQUEST || type == TLS_HS_COMPRESSED_CERTIFICATE)
		return c->state == ST_WAIT_CERT ? TLS_ERR_UNSUPPORTED : TLS_ERR_UNEXPECTED;
	if (type == TLS_HS_FINISHED && c->state == ST_WAIT_FIN)
		return on_finished(c, msg, n);
	switch (c->state) {
	case ST_WAIT_EE:
		err = type == TLS_HS_ENCRYPTED_EXTENSIONS
		          ? on_encrypted_extensions(c, body, body_len)
		          : TLS_ERR_UNEXPECTED;
		break;
	case ST_WAIT_CERT:
		err = type == TLS_HS_CERTIFICATE ? on_certificate(c, body, body_len)
		                                 : TLS_ERR_UNEXPECTED;
		break;
	case ST_WAIT_CV:
		err = type == TLS_HS_CERTIFICATE_VERIFY ? on_certificate_verify(c, body, body_len)
		                                        : TLS_ERR_UNEXPECTED;
		break;
	default:
		err = TLS_ERR_UNEXPECTED;
		break;
	}
	if (err == TLS_ERR_NONE)
		transcript_add(c, msg, n);
	return err;
}

/* One whole message from the server (tls_msg_fn). */
static enum tls_err on_msg(void *ctx, const uint8_t *msg, size_t n, uint8_t type,
                           const uint8_t *body, size_t body_len, bool *rekeyed)
{
	struct tls_client *c = ctx;
	enum state before = c->state;
	enum tls_phase was = c->rl.phase;
	enum tls_err err;

	if (c->state == ST_WAIT_SH)
		err = type == TLS_HS_SERVER_HELLO ? on_server_hello(c, msg, n) : TLS_ERR_UNEXPECTED;
	else
		err = on_message(c, msg, n, type, body, body_len);
	/* The handshake keys after ServerHello, the application's after Finished. */
	*rekeyed = (before != c->state && c->state == ST_WAIT_EE) || was != c->rl.phase;
	return err;
}

/* What may come in the clear or as a ChangeCipherSpec now: the hello in
 * the clear, ChangeCipherSpec records as middleboxes need them (after a
 * HelloRetryRequest, or after ServerHello until connected), alerts. */
static unsigned allowed(const struct tls_client *c)
{
	bool ccs =
	    c->state == ST_WAIT_SH ? c->retry_group != 0 : c->rl.phase == TLS_PHASE_HANDSHAKE;

	return (c->state == ST_WAIT_SH ? TLS_RL_HS_CLEAR : 0) | (ccs ? TLS_RL_CCS : 0) |
	       TLS_RL_ALERT;
}

size_t tls_client_recv(struct tls_client *c, const uint8_t *in, size_t len, struct tls_event *ev)
{
	return tls_rl_recv(&c->rl, in, len, ev, allowed(c), on_msg, c);
}

/* The seal callback's session id, kept for a second hello too. */
static bool seal_hello(struct tls_client *c, const struct tls_client_config *cfg)
{
	size_t at = wire_reality_sid_at(c->ch, c->ch_len);

	if (c->rl.quic || at == 0 || !cfg->seal(cfg->seal_ctx, c->ch, c->ch_len, c->x25519_priv))
		return false;
	memcpy(c->hello.sid, c->ch + at, TLS_SID_MAX);
	return true;
}

/* ---- the API ---- */

struct tls_client *tls_client_new(const struct tls_client_config *cfg)
{
	struct tls_client *c;
	uint8_t mlkem[TLS_MLKEMX_LEN], rec[TLS_REC_HDR];

	if (cfg->rand == NULL || cfg->verify == NULL ||
	    (cfg->sni && strlen(cfg->sni) >= sizeof(c->sni)) ||
	    (cfg->quic && (cfg->secret == NULL || cfg->quic_tp_len > TLS_QUIC_TP_MAX ||
	                   (cfg->quic_tp == NULL && cfg->quic_tp_len > 0))))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->rand = cfg->rand;
	c->rand_ctx = cfg->rand_ctx;
	c->verify = cfg->verify;
	c->verify_ctx = cfg->verify_ctx;
	if (cfg->sni) {
		strcpy(c->sni, cfg->sni);
		c->has_sni = true;
	}
	c->transcript = EVP_MD_CTX_new();
	if (!tls_rl_init(&c->rl, c->hs, sizeof(c->hs), c->out, sizeof(c->out)) || !c->transcript) {
		tls_client_free(c);
		return NULL;
	}
	c->rand(c->rand_ctx, c->x25519_priv, TLS_X25519_LEN);
	(void)yip_key_public(c->x25519_pub, c->x25519_priv);
	c->rl.quic = cfg->quic;
	c->secret = cfg->secret;
	c->secret_ctx = cfg->secret_ctx;
	if (c->rl.quic && cfg->quic_tp_len > 0)
		memcpy(c->quic_tp, cfg->quic_tp, cfg->quic_tp_len);
	c->quic_tp_len = cfg->quic_tp_len;
	if (!hybrid_share(c, mlkem)) {
		tls_client_free(c);
		return NULL;
	}
	tls_hello_choose(&c->hello, c->rand, c->rand_ctx, c->has_sni ? c->sni : NULL, c->x25519_pub,
	                 mlkem, c->ech, c->rl.quic);
	c->hello.quic_tp = c->quic_tp;
	c->hello.quic_tp_len = c->quic_tp_len;
	c->ch_len = tls_ch_put(c->ch, sizeof(c->ch), &c->hello);
	c->hello.mlkem = NULL; /* a second hello sends another share */
	if (c->ch_len == 0 || (cfg->seal != NULL && !seal_hello(c, cfg))) {
		tls_client_free(c);
		return NULL;
	}
	c->state = ST_WAIT_SH;
	if (c->rl.quic) {
		(void)tls_rl_out(&c->rl, c->ch, c->ch_len); /* at the Initial level */
		return c;
	}
	/* The first record says TLS 1.0, as Chrome's does. */
	tls_rec_put(rec, TLS_CT_HANDSHAKE, 0x0301, (uint16_t)c->ch_len);
	(void)tls_rl_out(&c->rl, rec, TLS_REC_HDR);
	(void)tls_rl_out(&c->rl, c->ch, c->ch_len);
	return c;
}

void tls_client_free(struct tls_client *c)
{
	if (c == NULL)
		return;
	tls_rl_free(&c->rl);
	EVP_MD_CTX_free(c->transcript);
	EVP_PKEY_free(c->leaf);
	EVP_PKEY_free(c->ec);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}

const uint8_t *tls_client_out(const struct tls_client *c, size_t *len)
{
	*len = c->rl.out_n;
	return c->out;
}

void tls_client_out_done(struct tls_client *c, size_t n)
{
	tls_rl_out_done(&c->rl, n);
}

size_t tls_client_seal(struct tls_client *c, uint8_t *out, size_t cap, const uint8_t *data,
                       size_t len, size_t pad)
{
	return tls_rl_app(&c->rl, out, cap, data, len, pad);
}

bool tls_client_key_update(struct tls_client *c, bool request)
{
	if (c->rl.quic || c->rl.phase != TLS_PHASE_CONNECTED || c->rl.tx_closed)
		return false;
	return tls_rl_key_update(&c->rl, &c->suite, request);
}

void tls_client_close(struct tls_client *c)
{
	tls_rl_alert(&c->rl, TLS_ALERT_CLOSE_NOTIFY);
}

bool tls_client_connected(const struct tls_client *c)
{
	return c->rl.phase == TLS_PHASE_CONNECTED;
}

enum tls_err tls_client_err(const struct tls_client *c)
{
	return c->rl.err;
}

uint16_t tls_client_cipher(const struct tls_client *c)
{
	return c->suite.cipher;
}

const uint8_t *tls_client_alpn(const struct tls_client *c, size_t *len)
{
	*len = c->alpn_len;
	return c->alpn_len ? c->alpn : NULL;
}

const struct tls_stats *tls_client_stats(const struct tls_client *c)
{
	return &c->rl.stats;
}

const uint8_t *tls_client_hello(const struct tls_client *c, size_t *len)
{
	*len = c->ch_len;
	return c->ch;
}

/* ---- QUIC mode ---- */

void tls_client_quic_recv(struct tls_client *c, enum tls_level level, const uint8_t *in, size_t len,
                          struct tls_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	/* Once failed, that again (what tls_rl_fail says for any err). */
	if (c->rl.phase == TLS_PHASE_FAILED || !c->rl.quic || level != c->rx_level)
		tls_rl_fail(&c->rl, ev, TLS_ERR_UNEXPECTED);
	else if (len > 0)
		tls_rl_handshake(&c->rl, ev, in, len, on_msg, c);
}

const uint8_t *tls_client_quic_out(const struct tls_client *c, enum tls_level *level, size_t *len)
{
	*level = c->out_level;
	*len = c->rl.out_n;
	return c->out;
}

const uint8_t *tls_client_quic_peer_tp(const struct tls_client *c, size_t *len)
{
	*len = c->peer_tp_len;
	return c->has_peer_tp ? c->peer_tp : NULL;
}

uint8_t tls_client_quic_alert(const struct tls_client *c)
{
	return c->rl.alert;
}

/* ---- verification policies ---- */

bool tls_verify_any(void *ctx, const struct tls_chain *chain, const char *sni)
{
	(void)ctx;
	(void)chain;
	(void)sni;
	return true;
}

bool tls_verify_pin(void *ctx, const struct tls_chain *chain, const char *sni)
{
	const uint8_t *p = chain->der[0];
	X509 *x = d2i_X509(NULL, &p, (long)chain->len[0]);
	uint8_t *spki = NULL, h[SHA256_DIGEST_LENGTH];
	int n = x ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &spki) : -1;
	bool ok =
	    n > 0 && SHA256(spki, (size_t)n, h) != NULL && CRYPTO_memcmp(h, ctx, sizeof(h)) == 0;

	(void)sni;
	OPENSSL_free(spki);
	X509_free(x);
	return ok;
}

bool tls_verify_store(void *ctx, const struct tls_chain *chain, const char *sni)
{
	STACK_OF(X509) *rest = sk_X509_new_null();
	X509_STORE_CTX *v = X509_STORE_CTX_new();
	X509 *leaf = NULL;
	bool ok = rest != NULL && v != NULL;

	for (size_t i = 0; ok && i < chain->n; i++) {
		const uint8_t *p = chain->der[i];
		X509 *x = d2i_X509(NULL, &p, (long)chain->len[i]);

		if (x == NULL) {
			ok = false;
		} else if (i == 0) {
			leaf = x;
		} else if (!sk_X509_push(rest, x)) {
			X509_free(x);
			ok = false;
		}
	}
	ok = ok && X509_STORE_CTX_init(v, ctx, leaf, rest) == 1 &&
	     (sni == NULL ||
	      X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(v), sni, 0) == 1) &&
	     X509_verify_cert(v) == 1;
	X509_STORE_CTX_free(v);
	X509_free(leaf);
	sk_X509_pop_free(rest, X509_free);
	return ok;
}
