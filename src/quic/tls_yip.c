/*
 * The QUIC client TLS seam (quic/tls.h) over src/tls in QUIC mode. How the
 * engine meets ngtcp2 0.12:
 *
 *   - the engine's state is the connection's TLS native handle (ngtcp2's
 *     user_data is the QUIC connection's own); nothing of ngtcp2_crypto's
 *     that runs for a client reads it as a GnuTLS session once the crypto
 *     context is set, which on_secret does before installing any key;
 *   - Initial keys (RFC 9001 5.2) are derived here from the first DCID
 *     with ngtcp2's HKDF, and their AEAD and header-protection handles are
 *     the GnuTLS binding's own kinds (a gnutls_aead_cipher_hd_t, a
 *     gnutls_cipher_hd_t for AES-128-CBC used one block at a time), so its
 *     encrypt, decrypt, hp_mask and delete callbacks serve them;
 *   - the ClientHello goes out as Initial CRYPTO data; the server's CRYPTO
 *     data goes to tls_client_quic_recv at its level and what the engine
 *     answers goes back at the engine's level;
 *   - the handshake and 1-RTT secrets go to
 *     ngtcp2_crypto_derive_and_install_{rx,tx}_key, after
 *     ngtcp2_conn_set_crypto_ctx with the suite's GnuTLS ids; the server's
 *     transport parameters (EncryptedExtensions, before the server's
 *     Finished) go to ngtcp2_conn_decode_remote_transport_params before the
 *     1-RTT keys.
 *
 * The transport parameters sent are chromium's (tls_quic_tp_chromium);
 * their values are those conn.c gives ngtcp2 (params()), and their
 * initial_source_connection_id is conn.c's empty client SCID.
 */
#include "quic/tls_yip.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls/tls.h"

struct yip_tls {
	ngtcp2_conn *qc;
	struct tls_client *c;
	uint8_t tp[256];
};

static void rng(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	randombytes_buf(out, n);
}

/* The suite as the GnuTLS binding names it. */
static bool suite_ctx(ngtcp2_crypto_ctx *ctx, uint16_t cipher)
{
	gnutls_cipher_algorithm_t aead, hp;
	gnutls_digest_algorithm_t md = GNUTLS_DIG_SHA256;

	switch (cipher) {
	case 0x1301:
		aead = GNUTLS_CIPHER_AES_128_GCM, hp = GNUTLS_CIPHER_AES_128_CBC;
		ctx->max_encryption = 1ULL << 23; /* RFC 9001 6.6 */
		ctx->max_decryption_failure = 1ULL << 52;
		break;
	case 0x1302:
		aead = GNUTLS_CIPHER_AES_256_GCM, hp = GNUTLS_CIPHER_AES_256_CBC,
		md = GNUTLS_DIG_SHA384;
		ctx->max_encryption = 1ULL << 23;
		ctx->max_decryption_failure = 1ULL << 52;
		break;
	case 0x1303:
		aead = GNUTLS_CIPHER_CHACHA20_POLY1305, hp = GNUTLS_CIPHER_CHACHA20_32;
		ctx->max_encryption = 1ULL << 62;
		ctx->max_decryption_failure = 1ULL << 36;
		break;
	default:
		return false;
	}
	ctx->aead.native_handle = (void *)(intptr_t)aead;
	ctx->aead.max_overhead = 16;
	ctx->md.native_handle = (void *)(intptr_t)md;
	ctx->hp.native_handle = (void *)(intptr_t)hp;
	return true;
}

/* One direction's Initial packet protection from its secret. */
static bool initial_dir(const ngtcp2_crypto_ctx *ctx, const uint8_t secret[32], bool enc,
                        ngtcp2_crypto_aead_ctx *aead_ctx, uint8_t iv[12],
                        ngtcp2_crypto_cipher_ctx *hp_ctx)
{
	uint8_t key[16], hp[16];
	gnutls_cipher_hd_t h;
	gnutls_datum_t k = {hp, sizeof(hp)};
	bool ok = ngtcp2_crypto_hkdf_expand_label(key, sizeof(key), &ctx->md, secret, 32,
	                                          (const uint8_t *)"quic key", 8) == 0 &&
	          ngtcp2_crypto_hkdf_expand_label(iv, 12, &ctx->md, secret, 32,
	                                          (const uint8_t *)"quic iv", 7) == 0 &&
	          ngtcp2_crypto_hkdf_expand_label(hp, sizeof(hp), &ctx->md, secret, 32,
	                                          (const uint8_t *)"quic hp", 7) == 0 &&
	          (enc ? ngtcp2_crypto_aead_ctx_encrypt_init(aead_ctx, &ctx->aead, key, 12)
	               : ngtcp2_crypto_aead_ctx_decrypt_init(aead_ctx, &ctx->aead, key, 12)) == 0 &&
	          gnutls_cipher_init(&h, GNUTLS_CIPHER_AES_128_CBC, &k, NULL) == 0;

	if (ok)
		hp_ctx->native_handle = h;
	sodium_memzero(key, sizeof(key));
	sodium_memzero(hp, sizeof(hp));
	return ok;
}

static int client_initial(ngtcp2_conn *qc, void *user)
{
	static const uint8_t salt[] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
	                               0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
	struct yip_tls *y = ngtcp2_conn_get_tls_native_handle(qc);
	const ngtcp2_cid *dcid = ngtcp2_conn_get_dcid(qc);
	ngtcp2_crypto_ctx ctx = {0};
	ngtcp2_crypto_aead_ctx rx_aead = {0}, tx_aead = {0};
	ngtcp2_crypto_cipher_ctx rx_hp = {0}, tx_hp = {0};
	uint8_t initial[32], c_in[32], s_in[32], rx_iv[12], tx_iv[12];
	enum tls_level lvl;
	const uint8_t *ch;
	size_t n;
	bool ok;

	(void)user;
	suite_ctx(&ctx, 0x1301);
	ctx.max_encryption = ctx.max_decryption_failure = 0;
	ngtcp2_conn_set_initial_crypto_ctx(qc, &ctx);
	ok = ngtcp2_crypto_hkdf_extract(initial, &ctx.md, dcid->data, dcid->datalen, salt,
	                                sizeof(salt)) == 0 &&
	     ngtcp2_crypto_hkdf_expand_label(c_in, 32, &ctx.md, initial, 32,
	                                     (const uint8_t *)"client in", 9) == 0 &&
	     ngtcp2_crypto_hkdf_expand_label(s_in, 32, &ctx.md, initial, 32,
	                                     (const uint8_t *)"server in", 9) == 0 &&
	     initial_dir(&ctx, s_in, false, &rx_aead, rx_iv, &rx_hp) &&
	     initial_dir(&ctx, c_in, true, &tx_aead, tx_iv, &tx_hp) &&
	     ngtcp2_conn_install_initial_key(qc, &rx_aead, rx_iv, &rx_hp, &tx_aead, tx_iv, &tx_hp,
	                                     12) == 0;
	sodium_memzero(initial, sizeof(initial));
	sodium_memzero(c_in, sizeof(c_in));
	sodium_memzero(s_in, sizeof(s_in));
	if (!ok) {
		/* What was made and not installed. */
		ngtcp2_crypto_aead_ctx_free(&rx_aead);
		ngtcp2_crypto_aead_ctx_free(&tx_aead);
		if (rx_hp.native_handle)
			gnutls_cipher_deinit(rx_hp.native_handle);
		if (tx_hp.native_handle)
			gnutls_cipher_deinit(tx_hp.native_handle);
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	ch = tls_client_quic_out(y->c, &lvl, &n);
	if (lvl != TLS_LEVEL_INITIAL || n == 0 ||
	    ngtcp2_conn_submit_crypto_data(qc, NGTCP2_CRYPTO_LEVEL_INITIAL, ch, n) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	tls_client_out_done(y->c, n);
	return 0;
}

static bool on_secret(void *ctx_, enum tls_level level, uint16_t cipher, const uint8_t *rx,
                      const uint8_t *tx, size_t len)
{
	struct yip_tls *y = ctx_;
	ngtcp2_crypto_level l = level == TLS_LEVEL_HANDSHAKE ? NGTCP2_CRYPTO_LEVEL_HANDSHAKE
	                                                     : NGTCP2_CRYPTO_LEVEL_APPLICATION;

	if (level == TLS_LEVEL_HANDSHAKE) {
		ngtcp2_crypto_ctx ctx = {0};

		if (!suite_ctx(&ctx, cipher))
			return false;
		ngtcp2_conn_set_crypto_ctx(y->qc, &ctx);
	} else {
		size_t n;
		const uint8_t *tp = tls_client_quic_peer_tp(y->c, &n);

		if (tp == NULL || ngtcp2_conn_decode_remote_transport_params(y->qc, tp, n) != 0)
			return false;
	}
	return ngtcp2_crypto_derive_and_install_rx_key(y->qc, NULL, NULL, NULL, l, rx, len) == 0 &&
	       ngtcp2_crypto_derive_and_install_tx_key(y->qc, NULL, NULL, NULL, l, tx, len) == 0;
}

static ngtcp2_crypto_level to_ngtcp2(enum tls_level l)
{
	return l == TLS_LEVEL_INITIAL     ? NGTCP2_CRYPTO_LEVEL_INITIAL
	       : l == TLS_LEVEL_HANDSHAKE ? NGTCP2_CRYPTO_LEVEL_HANDSHAKE
	                                  : NGTCP2_CRYPTO_LEVEL_APPLICATION;
}

static int recv_crypto_data(ngtcp2_conn *qc, ngtcp2_crypto_level level, uint64_t offset,
                            const uint8_t *data, size_t len, void *user)
{
	struct yip_tls *y = ngtcp2_conn_get_tls_native_handle(qc);
	struct tls_event ev;
	enum tls_level lvl;
	const uint8_t *out;
	size_t n;

	(void)offset;
	(void)user;
	if (level == NGTCP2_CRYPTO_LEVEL_EARLY)
		return NGTCP2_ERR_CRYPTO;
	tls_client_quic_recv(y->c,
	                     level == NGTCP2_CRYPTO_LEVEL_INITIAL     ? TLS_LEVEL_INITIAL
	                     : level == NGTCP2_CRYPTO_LEVEL_HANDSHAKE ? TLS_LEVEL_HANDSHAKE
	                                                              : TLS_LEVEL_APP,
	                     data, len, &ev);
	if (ev.kind == TLS_EV_FAILED) {
		ngtcp2_conn_set_tls_alert(qc, tls_client_quic_alert(y->c));
		return NGTCP2_ERR_CRYPTO;
	}
	out = tls_client_quic_out(y->c, &lvl, &n);
	if (n > 0) {
		if (ngtcp2_conn_submit_crypto_data(qc, to_ngtcp2(lvl), out, n) != 0)
			return NGTCP2_ERR_CALLBACK_FAILURE;
		tls_client_out_done(y->c, n);
	}
	if (ev.kind == TLS_EV_CONNECTED)
		ngtcp2_conn_handshake_completed(qc);
	return 0;
}

static void yip_free(void *tls)
{
	struct yip_tls *y = tls;

	if (y == NULL)
		return;
	tls_client_free(y->c);
	sodium_memzero(y, sizeof(*y));
	free(y);
}

static void *yip_new(ngtcp2_conn *qc, ngtcp2_crypto_conn_ref *ref,
                     const struct quic_dial_config *cfg, char *err, size_t errlen)
{
	struct yip_tls *y;
	struct tls_quic_tp tp;
	struct tls_client_config tc = {
	    .sni = cfg->sni && cfg->sni[0] ? cfg->sni : NULL,
	    .rand = rng,
	    .verify = tls_verify_any,
	    .quic = true,
	    .secret = on_secret,
	};

	(void)ref;
	if (cfg->alpn != NULL && strcmp(cfg->alpn, "h3") != 0) {
		snprintf(err, errlen, "tls: the yip client offers ALPN h3 only");
		return NULL;
	}
	y = calloc(1, sizeof(*y));
	if (y == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	y->qc = qc;
	tls_quic_tp_chromium(&tp, rng, NULL, NULL, 0);
	tc.quic_tp = y->tp;
	tc.quic_tp_len = tls_quic_tp_put(y->tp, sizeof(y->tp), &tp);
	tc.secret_ctx = y;
	y->c = tc.quic_tp_len ? tls_client_new(&tc) : NULL;
	if (y->c == NULL) {
		snprintf(err, errlen, "tls: the client engine would not start");
		yip_free(y);
		return NULL;
	}
	ngtcp2_conn_set_tls_native_handle(qc, y);
	return y;
}

static const char *suite_name(uint16_t cipher)
{
	return cipher == 0x1301   ? "TLS_AES_128_GCM_SHA256"
	       : cipher == 0x1302 ? "TLS_AES_256_GCM_SHA384"
	       : cipher == 0x1303 ? "TLS_CHACHA20_POLY1305_SHA256"
	                          : "?";
}

static void yip_info(void *tls, const char **cipher, const char **alpn)
{
	struct yip_tls *y = tls;

	*cipher = suite_name(tls_client_cipher(y->c));
	*alpn = tls_client_connected(y->c) ? "h3" : NULL;
}

const struct quic_tls_ops quic_tls_yip = {
    .name = "yip",
    .client_new = yip_new,
    .free = yip_free,
    .client_initial = client_initial,
    .recv_crypto_data = recv_crypto_data,
    .info = yip_info,
};
