/*
 * The TLS 1.3 server of a REALITY-style front: its first flight shaped on
 * the target's (server.h), then the client's Finished and application
 * data. The key schedule and record protection are keys.c's.
 */
#include "tls/server.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "crypto/crypto.h"
#include "crypto/mlkem.h"
#include "tls/internal.h"

/* The client's handshake messages after its hello: a Finished, a KeyUpdate. */
#define HS_SMALL (TLS_HS_HDR + TLS_HASH_MAX)
/* Room kept after the flight for alerts, a KeyUpdate's answer, close_notify. */
#define OUT_SPARE 256
/* The share this server sends: an ML-KEM-768 ciphertext, then X25519's key. */
#define SHARE_MAX (MLKEM768_CT_LEN + TLS_X25519_LEN)
/* Signatures made at most for the shortest one (flight()). */
#define SIGN_TRIES 32
/* The output queue: the ServerHello, and two records of the flight (the
 * caller drains it after each). */
#define OUT_FLIGHT (2 * TLS_REC_MAX)

/* Until connected (s->rl.phase), the server waits for the client's Finished. */
struct tls_server {
	struct tls_rl rl;
	struct tls_suite suite;
	uint16_t group;
	/* The client's Finished as it must be, and its application secret. */
	uint8_t fin_want[TLS_HASH_MAX], c_ap[TLS_HASH_MAX];
	/* The flight's handshake stream (stream_n bytes after out's out_cap),
	 * stream_off of them sent; the server's application secret, until
	 * the stream is out. */
	size_t stream_n, stream_off;
	uint8_t s_ap[TLS_HASH_MAX];
	uint8_t hs[HS_SMALL];
	uint8_t
	    out[]; /* rl.out_cap bytes, then the flight's handshake stream while new builds it */
};

/* What new works from: the hello and the template decoded, and the secrets
 * of the key exchange (wiped before new returns). */
struct build {
	const struct tls_server_config *cfg;
	struct tls_ch_view ch;
	const uint8_t *ch_body;
	struct tls_sh sh;
	uint16_t scheme;
	size_t sig_max, stream_max;
	EVP_MD_CTX *transcript;
	uint8_t shared[MLKEM_SS_LEN + TLS_X25519_LEN];
	size_t shared_len;
	uint8_t share[SHARE_MAX];
	uint8_t hs_secret[TLS_HASH_MAX], c_hs[TLS_HASH_MAX], s_hs[TLS_HASH_MAX];
};

/* ---- checking the hello and the template ---- */

static bool has16(const uint16_t *list, size_t n, uint16_t v)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

/* Whether proto is one of the protocols in the client's ALPN list. */
static bool alpn_offered(const struct tls_ch_view *v, const uint8_t *proto, size_t len)
{
	size_t i = 0;

	while (v->alpn != NULL && i < v->alpn_len) {
		size_t n = v->alpn[i];

		if (n > v->alpn_len - i - 1)
			return false;
		if (n == len && memcmp(v->alpn + i + 1, proto, len) == 0)
			return true;
		i += 1 + n;
	}
	return false;
}

/* The signature scheme for key that the client offered, or 0. */
static uint16_t pick_scheme(EVP_PKEY *key, const struct tls_ch_view *v)
{
	char group[32];
	uint16_t scheme = 0;

	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_EC:
		if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group,
		                                   sizeof(group), NULL) != 1)
			return 0;
		if (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)
			scheme = 0x0403;
		else if (strcmp(group, "secp384r1") == 0 || strcmp(group, "P-384") == 0)
			scheme = 0x0503;
		break;
	case EVP_PKEY_RSA:
		scheme = 0x0804;
		break;
	default:
		break;
	}
	return scheme && has16(v->sigalgs, v->n_sigalgs, scheme) ? scheme : 0;
}

/* The config's bounds, the hello and the template: the flight's largest size. */
static enum tls_err check(struct build *b)
{
	const struct tls_server_config *cfg = b->cfg;
	const uint8_t *body;
	size_t body_len, sid_at;
	uint8_t type;

	if (cfg->rand == NULL || cfg->client_hello == NULL || cfg->template_sh == NULL ||
	    cfg->key == NULL || cfg->chain == NULL || cfg->chain_lens == NULL ||
	    cfg->chain_n == 0 || cfg->chain_n > TLS_CHAIN_MAX ||
	    (cfg->alpn != NULL && (cfg->alpn_len == 0 || cfg->alpn_len > 255)))
		return TLS_ERR_PARAMETER;
	if (tls_hs_get(cfg->client_hello, cfg->client_hello_len, &type, &b->ch_body, &body_len) !=
	        cfg->client_hello_len ||
	    type != TLS_HS_CLIENT_HELLO || !tls_ch_get(&b->ch, b->ch_body, body_len))
		return TLS_ERR_DECODE;
	if (tls_hs_get(cfg->template_sh, cfg->template_sh_len, &type, &body, &body_len) !=
	        cfg->template_sh_len ||
	    type != TLS_HS_SERVER_HELLO || cfg->template_sh_len > TLS_REC_PLAIN ||
	    !tls_sh_get(&b->sh, body, body_len))
		return TLS_ERR_DECODE;
	if (!has16(b->ch.versions, b->ch.n_versions, 0x0304) || b->sh.version != 0x0304)
		return TLS_ERR_VERSION;
	if (b->sh.hrr)
		return TLS_ERR_HRR;
	/* legacy_session_id follows the version and the random. */
	sid_at = 2 + TLS_RANDOM_LEN + 1;
	if (b->sh.sid_len != b->ch.sid_len ||
	    (b->sh.sid_len > 0 && memcmp(b->sh.sid, b->ch_body + sid_at, b->sh.sid_len) != 0))
		return TLS_ERR_PARAMETER;
	if (!has16(b->ch.ciphers, b->ch.n_ciphers, b->sh.cipher))
		return TLS_ERR_PARAMETER;
	if (!(b->sh.share_group == TLS_GROUP_X25519 && b->ch.x25519 != NULL &&
	      b->sh.share_len == TLS_X25519_LEN) &&
	    !(b->sh.share_group == TLS_GROUP_MLKEM768X && b->ch.mlkem != NULL &&
	      b->sh.share_len == SHARE_MAX))
		return TLS_ERR_PARAMETER;
	if (cfg->alpn != NULL && !alpn_offered(&b->ch, cfg->alpn, cfg->alpn_len))
		return TLS_ERR_PARAMETER;
	b->scheme = pick_scheme(cfg->key, &b->ch);
	if (b->scheme == 0)
		return TLS_ERR_UNSUPPORTED;
	/* EncryptedExtensions, Certificate, CertificateVerify, Finished at their largest. */
	b->sig_max = (size_t)EVP_PKEY_get_size(cfg->key);
	b->stream_max = TLS_HS_HDR + 2 + 4 + 2 + 1 + cfg->alpn_len;
	b->stream_max += TLS_HS_HDR + 1 + 3;
	for (size_t i = 0; i < cfg->chain_n; i++) {
		if (cfg->chain[i] == NULL || cfg->chain_lens[i] == 0 ||
		    cfg->chain_lens[i] > TLS_HS_BUF)
			return TLS_ERR_PARAMETER;
		b->stream_max += 3 + cfg->chain_lens[i] + 2;
	}
	b->stream_max += TLS_HS_HDR + 4 + b->sig_max + TLS_HS_HDR + TLS_HASH_MAX;
	if (b->stream_max > TLS_HS_BUF || b->sig_max == 0 || b->sig_max > 1024)
		return TLS_ERR_OVERFLOW;
	return TLS_ERR_NONE;
}

/* ---- the first flight ---- */

/* This server's share and the secret: X25519, or ML-KEM-768's then X25519's. */
static enum tls_err exchange(struct build *b)
{
	const struct tls_server_config *cfg = b->cfg;
	uint8_t priv[TLS_X25519_LEN], m[MLKEM_MSG_LEN];
	const uint8_t *peer = b->ch.x25519;
	uint8_t *pub = b->share, *dh = b->shared;
	enum tls_err err = TLS_ERR_NONE;

	b->shared_len = TLS_X25519_LEN;
	if (b->sh.share_group == TLS_GROUP_MLKEM768X) {
		cfg->rand(cfg->rand_ctx, m, sizeof(m));
		if (mlkem768_encaps(b->share, b->shared, b->ch.mlkem, m) != 0)
			err = TLS_ERR_MLKEM;
		peer = b->ch.mlkem + MLKEM768_EK_LEN;
		pub = b->share + MLKEM768_CT_LEN;
		dh = b->shared + MLKEM_SS_LEN;
		b->shared_len = MLKEM_SS_LEN + TLS_X25519_LEN;
	}
	cfg->rand(cfg->rand_ctx, priv, sizeof(priv));
	if (err == TLS_ERR_NONE && (yip_key_public(pub, priv) != 0 || yip_dh(dh, priv, peer) != 0))
		err = TLS_ERR_PARAMETER; /* a low-order point */
	OPENSSL_cleanse(priv, sizeof(priv));
	OPENSSL_cleanse(m, sizeof(m));
	return err;
}

/* The ServerHello record: the template with this server's random and share. */
static void server_hello(struct tls_server *s, struct build *b)
{
	const struct tls_server_config *cfg = b->cfg;
	uint8_t *sh = s->out + TLS_REC_HDR;

	tls_rec_put(s->out, TLS_CT_HANDSHAKE, 0x0303, (uint16_t)cfg->template_sh_len);
	memcpy(sh, cfg->template_sh, cfg->template_sh_len);
	cfg->rand(cfg->rand_ctx, sh + TLS_HS_HDR + 2, TLS_RANDOM_LEN);
	memcpy(sh + (b->sh.share - cfg->template_sh), b->share, b->sh.share_len);
	s->rl.out_n = TLS_REC_HDR + cfg->template_sh_len;
}

static bool transcript_add(struct build *b, const uint8_t *msg, size_t n)
{
	return EVP_DigestUpdate(b->transcript, msg, n) == 1;
}

/* CertificateVerify's signature over the transcript so far. */
static bool sign(const struct tls_server *s, struct build *b, uint8_t *sig, size_t *sig_len)
{
	uint8_t tbs[TLS_CV_SIGNED_MAX];
	size_t tbs_len = tls_key_cv_signed(&s->suite, b->transcript, tbs);
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pc = NULL;
	bool ok;

	*sig_len = b->sig_max;
	ok = tbs_len > 0 && m &&
	     EVP_DigestSignInit(m, &pc, b->scheme == 0x0503 ? EVP_sha384() : EVP_sha256(), NULL,
	                        b->cfg->key) == 1 &&
	     (b->scheme != 0x0804 ||
	      (EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1 &&
	       EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) == 1)) &&
	     EVP_DigestSign(m, sig, sig_len, tbs, tbs_len) == 1;
	EVP_MD_CTX_free(m);
	return ok;
}

/*
 * EncryptedExtensions, Certificate, CertificateVerify and Finished into
 * stream (b->stream_max bytes), each added to the transcript; then the
 * application secrets and the client's Finished as it must be. The
 * stream's length, or 0.
 */
static size_t flight(struct tls_server *s, struct build *b, uint8_t *stream)
{
	const struct tls_server_config *cfg = b->cfg;
	struct tls_chain chain = {.n = cfg->chain_n};
	size_t hlen = s->suite.hlen, n, k, sig_len;
	uint8_t sig[1024];

	for (size_t i = 0; i < cfg->chain_n; i++) {
		chain.der[i] = cfg->chain[i];
		chain.len[i] = cfg->chain_lens[i];
	}
	n = tls_ee_put(stream, b->stream_max, cfg->alpn, cfg->alpn_len);
	k = n > 0 ? tls_cert_put(stream + n, b->stream_max - n, &chain) : 0;
	if (k == 0 || !transcript_add(b, stream, n + k))
		return 0;
	n += k;
	/* An ECDSA signature's DER length varies by a byte or two (a 0 before
	 * r or s with its top bit set): the flight follows records whose sizes
	 * it cannot know yet, so it takes the shortest common length (no such
	 * 0; P-256: 70 bytes, P-384: 102), signing again a bounded number of
	 * times, and fits wherever a target's own signature does. */
	for (unsigned tries = 0;; tries++) {
		if (!sign(s, b, sig, &sig_len))
			return 0;
		if (b->scheme == 0x0804 || tries == SIGN_TRIES ||
		    sig_len <= (b->scheme == 0x0503 ? 102u : 70u))
			break;
	}
	k = tls_cv_put(stream + n, b->stream_max - n, b->scheme, sig, sig_len);
	if (k == 0 || !transcript_add(b, stream + n, k) ||
	    b->stream_max - n - k < TLS_HS_HDR + hlen)
		return 0;
	n += k;
	tls_hs_put(stream + n, TLS_HS_FINISHED, hlen);
	if (!tls_key_finished(&s->suite, b->transcript, stream + n + TLS_HS_HDR, b->s_hs) ||
	    !transcript_add(b, stream + n, TLS_HS_HDR + hlen))
		return 0;
	n += TLS_HS_HDR + hlen;
	if (!tls_key_app(&s->suite, b->transcript, b->hs_secret, s->c_ap, s->s_ap) ||
	    !tls_key_finished(&s->suite, b->transcript, s->fin_want, b->c_hs))
		return 0;
	return n;
}

/* The ServerHello into s->out and the rest of the flight built past
 * out_cap (b->stream_max bytes there), the handshake keys set. */
static enum tls_err start(struct tls_server *s, struct build *b)
{
	const struct tls_server_config *cfg = b->cfg;
	uint8_t *stream = s->out + s->rl.out_cap;
	enum tls_err err;
	size_t n;

	if (!tls_suite_set(&s->suite, b->sh.cipher))
		return TLS_ERR_PARAMETER;
	s->group = b->sh.share_group;
	s->rl.sealed_only = true;
	b->transcript = EVP_MD_CTX_new();
	if (!tls_rl_init(&s->rl, s->hs, sizeof(s->hs), s->out, s->rl.out_cap) || !b->transcript)
		return TLS_ERR_INTERNAL;
	err = exchange(b);
	if (err != TLS_ERR_NONE)
		return err;
	server_hello(s, b);
	if (EVP_DigestInit_ex(b->transcript, s->suite.md, NULL) != 1 ||
	    !transcript_add(b, cfg->client_hello, cfg->client_hello_len) ||
	    !transcript_add(b, s->out + TLS_REC_HDR, cfg->template_sh_len) ||
	    !tls_key_handshake(&s->suite, b->transcript, b->shared, b->shared_len, b->hs_secret,
	                       b->c_hs, b->s_hs) ||
	    !tls_dir_set(&s->suite, &s->rl.tx, b->s_hs, 1) ||
	    !tls_dir_set(&s->suite, &s->rl.rx, b->c_hs, 0))
		return TLS_ERR_INTERNAL;
	n = flight(s, b, stream);
	if (n == 0)
		return TLS_ERR_INTERNAL;
	s->stream_n = n;
	return TLS_ERR_NONE;
}

/* The stream is out: from now on the server's records are application data. */
static bool stream_sent(struct tls_server *s)
{
	bool ok = tls_dir_set(&s->suite, &s->rl.tx, s->s_ap, 1);

	OPENSSL_cleanse(s->s_ap, sizeof(s->s_ap));
	OPENSSL_cleanse(s->out + s->rl.out_cap, s->stream_n);
	return ok;
}

/* ---- records in ---- */

/* One whole handshake message from the client (tls_msg_fn): its
 * Finished, then KeyUpdates. */
static enum tls_err on_message(void *ctx, const uint8_t *msg, size_t n, uint8_t type,
                               const uint8_t *body, size_t body_len, bool *rekeyed)
{
	struct tls_server *s = ctx;

	if (s->rl.phase == TLS_PHASE_HANDSHAKE) {
		*rekeyed = true;
		if (type != TLS_HS_FINISHED)
			return TLS_ERR_UNEXPECTED;
		if (n != TLS_HS_HDR + s->suite.hlen)
			return TLS_ERR_DECODE;
		if (CRYPTO_memcmp(msg + TLS_HS_HDR, s->fin_want, s->suite.hlen) != 0)
			return TLS_ERR_FINISHED;
		if (!tls_dir_set(&s->suite, &s->rl.rx, s->c_ap, 0))
			return TLS_ERR_INTERNAL;
		OPENSSL_cleanse(s->c_ap, sizeof(s->c_ap));
		s->rl.phase = TLS_PHASE_CONNECTED;
		return TLS_ERR_NONE;
	}
	if (type != TLS_HS_KEY_UPDATE)
		return TLS_ERR_UNEXPECTED;
	return tls_rl_key_update_in(&s->rl, &s->suite, body, body_len);
}

/* ---- the API ---- */

struct tls_server *tls_server_new(const struct tls_server_config *cfg, enum tls_err *err)
{
	struct build b;
	struct tls_server *s = NULL;
	enum tls_err e;
	size_t cap = 0;

	memset(&b, 0, sizeof(b));
	b.cfg = cfg;
	e = check(&b);
	if (e == TLS_ERR_NONE) {
		/* The ServerHello record, two of the flight's, room for alerts. */
		cap = TLS_REC_HDR + cfg->template_sh_len + OUT_FLIGHT + OUT_SPARE;
		s = calloc(1, sizeof(*s) + cap + b.stream_max);
		if (s == NULL)
			e = TLS_ERR_INTERNAL;
	}
	if (e == TLS_ERR_NONE) {
		s->rl.out_cap = cap;
		e = start(s, &b);
	}
	EVP_MD_CTX_free(b.transcript);
	OPENSSL_cleanse(&b, sizeof(b));
	if (e != TLS_ERR_NONE) {
		tls_server_free(s);
		s = NULL;
	}
	if (err != NULL)
		*err = e;
	return s;
}

void tls_server_free(struct tls_server *s)
{
	if (s == NULL)
		return;
	tls_rl_free(&s->rl);
	OPENSSL_cleanse(s, sizeof(*s) + s->rl.out_cap + s->stream_n);
	free(s);
}

bool tls_server_ccs(struct tls_server *s)
{
	static const uint8_t ccs[] = {TLS_CT_CCS, 3, 3, 0, 1, 1};

	if (s->stream_off > 0 || s->rl.phase != TLS_PHASE_HANDSHAKE)
		return false;
	return tls_rl_out(&s->rl, ccs, sizeof(ccs));
}

bool tls_server_flight(struct tls_server *s, size_t len)
{
	size_t room, take;

	if (len < 1 + TLS_TAG_LEN || len > TLS_REC_PLAIN + 1 + TLS_TAG_LEN ||
	    s->rl.out_cap - s->rl.out_n < TLS_REC_HDR + len || s->rl.phase == TLS_PHASE_FAILED ||
	    s->rl.tx_closed)
		return false;
	room = len - 1 - TLS_TAG_LEN;
	if (s->stream_off == s->stream_n)
		return tls_rl_put(&s->rl, TLS_CT_APP, NULL, 0, room); /* padding alone */
	if (room == 0)
		return false; /* a handshake record holds at least a byte (RFC 8446 5.1) */
	take = s->stream_n - s->stream_off < room ? s->stream_n - s->stream_off : room;
	if (!tls_rl_put(&s->rl, TLS_CT_HANDSHAKE, s->out + s->rl.out_cap + s->stream_off, take,
	                room - take))
		return false;
	s->stream_off += take;
	return s->stream_off < s->stream_n || stream_sent(s);
}

bool tls_server_flight_rest(struct tls_server *s)
{
	while (s->stream_off < s->stream_n) {
		size_t take = s->stream_n - s->stream_off;

		take = take < TLS_REC_PLAIN ? take : TLS_REC_PLAIN;
		if (s->rl.out_cap - s->rl.out_n < TLS_REC_HDR + take + 1 + TLS_TAG_LEN ||
		    !tls_rl_put(&s->rl, TLS_CT_HANDSHAKE, s->out + s->rl.out_cap + s->stream_off,
		                take, 0))
			return false;
		s->stream_off += take;
		if (s->stream_off == s->stream_n && !stream_sent(s))
			return false;
	}
	return true;
}

void tls_server_ccs_window(struct tls_server *s)
{
	s->rl.ccs = 0;
}

bool tls_server_flight_done(const struct tls_server *s)
{
	return s->stream_off == s->stream_n;
}

const uint8_t *tls_server_out(const struct tls_server *s, size_t *len)
{
	*len = s->rl.out_n;
	return s->out;
}

void tls_server_out_done(struct tls_server *s, size_t n)
{
	tls_rl_out_done(&s->rl, n);
}

size_t tls_server_recv(struct tls_server *s, const uint8_t *in, size_t len, struct tls_event *ev)
{
	/* Before the client's Finished: ChangeCipherSpec records, as
	 * middleboxes need, and an alert in the clear from a client that has
	 * no keys. */
	unsigned allow = s->rl.phase == TLS_PHASE_HANDSHAKE ? TLS_RL_CCS | TLS_RL_ALERT : 0;

	return tls_rl_recv(&s->rl, in, len, ev, allow, on_message, s);
}

size_t tls_server_seal(struct tls_server *s, uint8_t *out, size_t cap, const uint8_t *data,
                       size_t len, size_t pad)
{
	return tls_rl_app(&s->rl, out, cap, data, len, pad);
}

void tls_server_close(struct tls_server *s)
{
	tls_rl_alert(&s->rl, TLS_ALERT_CLOSE_NOTIFY);
}

void tls_server_info(const struct tls_server *s, struct tls_server_info *info)
{
	*info = (struct tls_server_info){
	    .connected = s->rl.phase == TLS_PHASE_CONNECTED,
	    .err = s->rl.err,
	    .cipher = s->suite.cipher,
	    .group = s->group,
	    .stats = &s->rl.stats,
	};
}
