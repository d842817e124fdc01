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
#include <openssl/evp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls/tls.h"

/* The first flight's datagrams: chromium's size on IPv4, and the room
 * ngtcp2 leaves for the extra frame headers of the chaos (shape). */
#define FIRST_FLIGHT 1250
#define CHAOS_ROOM   50

struct yip_tls {
	ngtcp2_conn *qc;
	struct tls_client *c;
	uint8_t tp[256];
	/* The client's Initial protection and first DCID, for shape. */
	uint8_t tx_key[16], tx_iv[12], tx_hp[16];
	uint8_t odcid[NGTCP2_MAX_CIDLEN];
	size_t odcid_len;
	unsigned rewritten;
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
                        ngtcp2_crypto_cipher_ctx *hp_ctx, struct yip_tls *keep)
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
	if (ok && keep) {
		memcpy(keep->tx_key, key, sizeof(key));
		memcpy(keep->tx_iv, iv, 12);
		memcpy(keep->tx_hp, hp, sizeof(hp));
	}
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
	     initial_dir(&ctx, s_in, false, &rx_aead, rx_iv, &rx_hp, NULL) &&
	     initial_dir(&ctx, c_in, true, &tx_aead, tx_iv, &tx_hp, y) &&
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
	memcpy(y->odcid, dcid->data, dcid->datalen);
	y->odcid_len = dcid->datalen;
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

/* ---- chromium's CRYPTO chaos in the first flight ---- */

static size_t varint_get(const uint8_t *p, size_t n, uint64_t *v)
{
	size_t k;

	if (n == 0)
		return 0;
	k = (size_t)1 << (p[0] >> 6);
	if (k > n)
		return 0;
	*v = p[0] & 0x3f;
	for (size_t i = 1; i < k; i++)
		*v = *v << 8 | p[i];
	return k;
}

/* v in 2 bytes (v < 2^14): the form ngtcp2 and chromium use for offsets,
 * lengths and the Length field here. */
static void varint2(uint8_t *p, uint64_t v)
{
	p[0] = (uint8_t)(0x40 | v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned rnd(unsigned n)
{
	uint8_t b[2];

	rng(NULL, b, 2);
	return ((unsigned)b[0] << 8 | b[1]) % n;
}

static bool hp_mask(const uint8_t key[16], const uint8_t *sample, uint8_t mask[16])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int n = 0;
	bool ok = x && EVP_EncryptInit_ex(x, EVP_aes_128_ecb(), NULL, key, NULL) == 1 &&
	          EVP_CIPHER_CTX_set_padding(x, 0) == 1 &&
	          EVP_EncryptUpdate(x, mask, &n, sample, 16) == 1 && n == 16;

	EVP_CIPHER_CTX_free(x);
	return ok;
}

static bool gcm(bool enc, const uint8_t key[16], const uint8_t nonce[12], const uint8_t *aad,
                size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int n = 0;
	bool ok = x && EVP_CipherInit_ex(x, EVP_aes_128_gcm(), NULL, key, nonce, enc) == 1 &&
	          EVP_CipherUpdate(x, NULL, &n, aad, (int)aad_len) == 1 &&
	          EVP_CipherUpdate(x, out, &n, in, (int)len) == 1 &&
	          (enc || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, 16, tag) == 1) &&
	          EVP_CipherFinal_ex(x, out + n, &n) == 1 &&
	          (!enc || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1);

	EVP_CIPHER_CTX_free(x);
	return ok;
}

/* One piece of the new payload: a CRYPTO fragment, a PING, or PADDING. */
struct piece {
	uint8_t kind; /* 6 CRYPTO, 1 PING, 0 PADDING */
	uint64_t off;
	const uint8_t *data;
	size_t len;
};

#define PIECES_MAX 40

/*
 * Rewrites the datagram pkt (len bytes, from ngtcp2) into out as chromium
 * frames its first flight, if it is one client Initial of the first DCID
 * with only CRYPTO, PING and PADDING frames: the same packet number and
 * the same CRYPTO bytes, cut into 4 to 9 fragments per frame, in a random
 * order with PINGs and PADDING runs between them, padded to target bytes.
 * ngtcp2's own accounting (what that packet number carried) stays true.
 * Its length, or 0 (send pkt as it is).
 */
static size_t chaos(struct yip_tls *d, const uint8_t *pkt, size_t len, uint8_t *out, size_t target)
{
	uint8_t hdr[64], plain[1500], mask[16], nonce[12], tag[16];
	struct piece pc[PIECES_MAX];
	size_t p = 5, pn_off, pn_len, npl, body, n_pc = 0, hl, used = 0, len_at;
	uint64_t tok, length, pn = 0;

	if (len < 64 || (pkt[0] & 0xf0) != 0xc0 || memcmp(pkt + 1, "\0\0\0\1", 4) != 0 ||
	    pkt[5] != d->odcid_len || len < 6 + d->odcid_len ||
	    memcmp(pkt + 6, d->odcid, d->odcid_len) != 0 || target > 1452 || target < len)
		return 0;
	p = 6 + pkt[5];
	p += 1 + pkt[p]; /* scid */
	if (p >= len)
		return 0;
	{
		size_t k = varint_get(pkt + p, len - p, &tok);

		if (k == 0 || tok != 0)
			return 0;
		p += k;
		len_at = p;
		k = varint_get(pkt + p, len - p, &length);
		if (k == 0 || p + k + length != len)
			return 0; /* not one packet filling the datagram */
		p += k;
	}
	pn_off = p;
	if (pn_off + 4 + 16 > len || hp_mask(d->tx_hp, pkt + pn_off + 4, mask) == false)
		return 0;
	hl = pn_off;
	memcpy(hdr, pkt, hl);
	hdr[0] ^= mask[0] & 0x0f;
	pn_len = (hdr[0] & 3) + 1;
	for (size_t i = 0; i < pn_len; i++) {
		hdr[hl + i] = pkt[pn_off + i] ^ mask[1 + i];
		pn = pn << 8 | hdr[hl + i];
	}
	body = length - pn_len - 16;
	memcpy(nonce, d->tx_iv, 12);
	for (unsigned i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
	memcpy(tag, pkt + len - 16, 16);
	if (!gcm(false, d->tx_key, nonce, hdr, hl + pn_len, pkt + pn_off + pn_len, body, plain,
	         tag))
		return 0;
	/* Its frames: CRYPTO cut into fragments; PING and PADDING dropped
	 * (new ones come). */
	for (size_t i = 0; i < body;) {
		uint64_t off, flen;
		size_t k1, k2;

		if (plain[i] == 0 || plain[i] == 1) {
			i++;
			continue;
		}
		if (plain[i] != 6)
			return 0;
		k1 = varint_get(plain + i + 1, body - i - 1, &off);
		k2 = k1 ? varint_get(plain + i + 1 + k1, body - i - 1 - k1, &flen) : 0;
		if (k2 == 0 || flen > body - i - 1 - k1 - k2 || off + flen >= (1u << 14))
			return 0;
		{
			const uint8_t *data = plain + i + 1 + k1 + k2;
			unsigned cuts = 3 + rnd(6);
			size_t at = 0;

			for (unsigned c = 0; c <= cuts && at < flen; c++) {
				size_t take =
				    c == cuts ? flen - at : 1 + rnd((unsigned)(flen - at));

				if (n_pc == PIECES_MAX)
					return 0;
				pc[n_pc++] = (struct piece){6, off + at, data + at, take};
				at += take;
			}
		}
		i += 1 + k1 + k2 + (size_t)flen;
	}
	if (n_pc == 0 || pn > 127)
		return 0;
	/* chromium's first Initial carries its packet number in 1 byte, the
	 * second in 2; the number itself stays ngtcp2's. */
	npl = d->rewritten == 0 ? 1 : 2;
	/* PINGs and PADDING runs as the room allows (the rest is PADDING at
	 * the end). */
	{
		size_t room = target - (len_at + 2) - npl - 16;

		for (size_t i = 0; i < n_pc; i++)
			room -= room >= 5 + pc[i].len ? 5 + pc[i].len : room;
		for (unsigned k = 1 + rnd(6); k > 0 && n_pc < PIECES_MAX && room >= 1; k--, room--)
			pc[n_pc++] = (struct piece){1, 0, NULL, 1};
		for (unsigned k = 1 + rnd(4); k > 0 && n_pc < PIECES_MAX && room >= 1; k--) {
			size_t run = 1 + rnd(6);

			run = run < room ? run : room;
			pc[n_pc++] = (struct piece){0, 0, NULL, run};
			room -= run;
		}
	}
	/* A fresh order, the stream's first bytes not first. */
	for (size_t i = n_pc - 1; i > 0; i--) {
		size_t j = rnd((unsigned)i + 1);
		struct piece t = pc[i];

		pc[i] = pc[j];
		pc[j] = t;
	}
	for (size_t i = 0; i < n_pc; i++)
		if (pc[i].kind == 6) {
			if (pc[i].off == 0 && i + 1 < n_pc) {
				struct piece t = pc[i];

				pc[i] = pc[n_pc - 1];
				pc[n_pc - 1] = t;
			}
			break;
		}
	/* The new packet: the same header with a 2-byte Length (ngtcp2 writes
	 * 4) for target bytes, the same packet number. */
	{
		static uint8_t np[1500];
		size_t new_pn = len_at + 2, i;

		body = target - new_pn - npl - 16;
		for (i = 0; i < n_pc; i++) {
			struct piece *x = &pc[i];
			size_t need = x->kind == 6 ? 5 + x->len : x->len;

			if (used + need > body)
				return 0;
			if (x->kind == 6) {
				np[used++] = 6;
				varint2(np + used, x->off);
				varint2(np + used + 2, x->len);
				used += 4;
				memcpy(np + used, x->data, x->len);
				used += x->len;
			} else if (x->kind == 1) {
				np[used++] = 1;
			} else {
				memset(np + used, 0, x->len);
				used += x->len;
			}
		}
		memset(np + used, 0, body - used); /* the rest PADDING */
		memcpy(out, hdr, len_at);
		varint2(out + len_at, npl + body + 16);
		out[0] = (uint8_t)((hdr[0] & ~3u) | (npl - 1));
		for (i = 0; i < npl; i++)
			out[new_pn + i] = (uint8_t)(pn >> (8 * (npl - 1 - i)));
		if (!gcm(true, d->tx_key, nonce, out, new_pn + npl, np, body, out + new_pn + npl,
		         tag))
			return 0;
		memcpy(out + new_pn + npl + body, tag, 16);
		/* Header protection over the new sample. */
		if (!hp_mask(d->tx_hp, out + new_pn + 4, mask))
			return 0;
		out[0] ^= mask[0] & 0x0f;
		for (i = 0; i < npl; i++)
			out[new_pn + i] ^= mask[1 + i];
		d->rewritten++;
		return target;
	}
}

static size_t yip_shape(void *tls, uint8_t *pkt, size_t len, size_t cap)
{
	static uint8_t out[1500];
	size_t k = chaos(tls, pkt, len, out, cap < FIRST_FLIGHT ? cap : FIRST_FLIGHT);

	if (k > 0)
		memcpy(pkt, out, k);
	return k;
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
    .first_cap = FIRST_FLIGHT - CHAOS_ROOM,
    .shape = yip_shape,
};
