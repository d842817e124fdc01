/*
 * yip-quic-dial: one QUIC v1 connection whose TLS is yip's own client
 * engine (src/tls in QUIC mode, chromium's QUIC hello and transport
 * parameters) and whose packets are ngtcp2 0.12's, with the GnuTLS crypto
 * binding for packet protection only. Proof that the engine runs a real
 * QUIC handshake (against Debian's gtlsserver), and the yip side of the
 * QUIC Initial comparisons (tests/netns/quic_classified.sh).
 *
 *   yip-quic-dial [--sni NAME] [--payload N] [--chaos on|off] [--conn on] HOST PORT
 *
 * --conn on: the same handshake through src/quic's client (quic_conn_dial
 * with quic_tls_yip: the engine behind src/quic's TLS seam, src/quic's
 * own packet sizes, no first-flight rewrite); it prints via=quic_conn.
 *
 * Connection IDs are shaped as chromium's: an 8-byte random DCID and a
 * zero-length SCID; every datagram is padded... as ngtcp2 pads (at least
 * 1200 bytes for Initials), up to --payload bytes of UDP payload (default
 * 1250, chromium's on IPv4). It completes the handshake (any certificate:
 * tls_verify_any), prints one line
 *
 *   connected alpn=h3 cipher=TLS_AES_128_GCM_SHA256 peer_tp=NN
 *
 * closes the connection (CONNECTION_CLOSE, H3_NO_ERROR) and exits 0; or
 * exits 1 with why on stderr (a timeout, the engine's error, ngtcp2's).
 *
 * How the engine meets ngtcp2: the Initial keys come from the DCID
 * (RFC 9001 5.2, derived here with ngtcp2's HKDF); the hello is submitted
 * as Initial CRYPTO data; server CRYPTO data goes to tls_client_quic_recv
 * at its level and what the engine answers back at its own; the engine's
 * handshake and 1-RTT secrets go to ngtcp2_crypto_derive_and_install_*
 * after ngtcp2_conn_set_crypto_ctx with the GnuTLS algorithm ids of the
 * suite; the server's transport parameters (from EncryptedExtensions) go
 * to ngtcp2_conn_decode_remote_transport_params before the 1-RTT keys.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "addr/addr.h"
#include "quic/conn.h"
#include "quic/tls_yip.h"
#include "tls/tls.h"

#define TIMEOUT_NS (5ULL * 1000 * 1000 * 1000)

/* Room left in a first-flight datagram for the extra frame headers of the
 * CRYPTO chaos (see chaos()). */
#define CHAOS_ROOM 50

struct dial {
	ngtcp2_conn *conn;
	struct tls_client *tls;
	const char *fail;
	bool done;
	/* The client's Initial protection (for the chaos rewrite) and the
	 * first DCID; heard: a packet came from the server. */
	uint8_t tx_key[16], tx_iv[12], tx_hp[16];
	uint8_t odcid[NGTCP2_MAX_CIDLEN];
	size_t odcid_len;
	bool heard, chaos;
	unsigned rewritten;
};

static void rng(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	if (RAND_bytes(out, (int)n) != 1)
		abort();
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* ---- the suite as GnuTLS names it, for ngtcp2's GnuTLS binding ---- */

static bool suite_ctx(ngtcp2_crypto_ctx *ctx, uint16_t cipher)
{
	gnutls_cipher_algorithm_t aead, hp;
	gnutls_digest_algorithm_t md;

	switch (cipher) {
	case 0x1301:
		aead = GNUTLS_CIPHER_AES_128_GCM, hp = GNUTLS_CIPHER_AES_128_CBC,
		md = GNUTLS_DIG_SHA256;
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
		aead = GNUTLS_CIPHER_CHACHA20_POLY1305, hp = GNUTLS_CIPHER_CHACHA20_32,
		md = GNUTLS_DIG_SHA256;
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

static const char *suite_name(uint16_t cipher)
{
	return cipher == 0x1301   ? "TLS_AES_128_GCM_SHA256"
	       : cipher == 0x1302 ? "TLS_AES_256_GCM_SHA384"
	       : cipher == 0x1303 ? "TLS_CHACHA20_POLY1305_SHA256"
	                          : "?";
}

/* ---- Initial keys (RFC 9001 5.2) ---- */

/* One direction's packet protection from its Initial secret. */
static bool initial_dir(const ngtcp2_crypto_ctx *ctx, const uint8_t secret[32], bool enc,
                        ngtcp2_crypto_aead_ctx *aead_ctx, uint8_t iv[12],
                        ngtcp2_crypto_cipher_ctx *hp_ctx, struct dial *keep)
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
	          /* the binding's header protection context: a GnuTLS cipher handle */
	          gnutls_cipher_init(&h, GNUTLS_CIPHER_AES_128_CBC, &k, NULL) == 0;

	if (ok)
		hp_ctx->native_handle = h;
	if (ok && keep) {
		memcpy(keep->tx_key, key, sizeof(key));
		memcpy(keep->tx_iv, iv, 12);
		memcpy(keep->tx_hp, hp, sizeof(hp));
	}
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(hp, sizeof(hp));
	return ok;
}

static int client_initial(ngtcp2_conn *conn, void *user)
{
	struct dial *d = ngtcp2_conn_get_tls_native_handle(conn);
	static const uint8_t salt[] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
	                               0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
	const ngtcp2_cid *dcid = ngtcp2_conn_get_dcid(conn);
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
	ngtcp2_conn_set_initial_crypto_ctx(conn, &ctx);
	ok = ngtcp2_crypto_hkdf_extract(initial, &ctx.md, dcid->data, dcid->datalen, salt,
	                                sizeof(salt)) == 0 &&
	     ngtcp2_crypto_hkdf_expand_label(c_in, 32, &ctx.md, initial, 32,
	                                     (const uint8_t *)"client in", 9) == 0 &&
	     ngtcp2_crypto_hkdf_expand_label(s_in, 32, &ctx.md, initial, 32,
	                                     (const uint8_t *)"server in", 9) == 0 &&
	     initial_dir(&ctx, s_in, false, &rx_aead, rx_iv, &rx_hp, NULL) &&
	     initial_dir(&ctx, c_in, true, &tx_aead, tx_iv, &tx_hp, d) &&
	     ngtcp2_conn_install_initial_key(conn, &rx_aead, rx_iv, &rx_hp, &tx_aead, tx_iv, &tx_hp,
	                                     12) == 0;
	OPENSSL_cleanse(initial, sizeof(initial));
	OPENSSL_cleanse(c_in, sizeof(c_in));
	OPENSSL_cleanse(s_in, sizeof(s_in));
	if (!ok) {
		d->fail = "initial keys";
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	memcpy(d->odcid, dcid->data, dcid->datalen);
	d->odcid_len = dcid->datalen;
	ch = tls_client_quic_out(d->tls, &lvl, &n);
	if (lvl != TLS_LEVEL_INITIAL || n == 0 ||
	    ngtcp2_conn_submit_crypto_data(conn, NGTCP2_CRYPTO_LEVEL_INITIAL, ch, n) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	tls_client_out_done(d->tls, n);
	return 0;
}

/* ---- the engine's secrets into ngtcp2 ---- */

static bool on_secret(void *ctx_, enum tls_level level, uint16_t cipher, const uint8_t *rx,
                      const uint8_t *tx, size_t len)
{
	struct dial *d = ctx_;
	ngtcp2_crypto_level l = level == TLS_LEVEL_HANDSHAKE ? NGTCP2_CRYPTO_LEVEL_HANDSHAKE
	                                                     : NGTCP2_CRYPTO_LEVEL_APPLICATION;

	if (level == TLS_LEVEL_HANDSHAKE) {
		ngtcp2_crypto_ctx ctx = {0};

		if (!suite_ctx(&ctx, cipher))
			return false;
		ngtcp2_conn_set_crypto_ctx(d->conn, &ctx);
	} else {
		size_t n;
		const uint8_t *tp = tls_client_quic_peer_tp(d->tls, &n);

		/* EncryptedExtensions came before: its parameters first. */
		if (tp == NULL || ngtcp2_conn_decode_remote_transport_params(d->conn, tp, n) != 0) {
			d->fail = "the server's transport parameters";
			return false;
		}
	}
	return ngtcp2_crypto_derive_and_install_rx_key(d->conn, NULL, NULL, NULL, l, rx, len) ==
	           0 &&
	       ngtcp2_crypto_derive_and_install_tx_key(d->conn, NULL, NULL, NULL, l, tx, len) == 0;
}

static int recv_crypto(ngtcp2_conn *conn, ngtcp2_crypto_level level, uint64_t offset,
                       const uint8_t *data, size_t len, void *user)
{
	struct dial *d = ngtcp2_conn_get_tls_native_handle(conn);
	struct tls_event ev;
	enum tls_level lvl;
	const uint8_t *out;
	size_t n;

	(void)offset;
	(void)user;
	if (level == NGTCP2_CRYPTO_LEVEL_EARLY)
		return NGTCP2_ERR_CRYPTO;
	tls_client_quic_recv(d->tls,
	                     level == NGTCP2_CRYPTO_LEVEL_INITIAL     ? TLS_LEVEL_INITIAL
	                     : level == NGTCP2_CRYPTO_LEVEL_HANDSHAKE ? TLS_LEVEL_HANDSHAKE
	                                                              : TLS_LEVEL_APP,
	                     data, len, &ev);
	if (ev.kind == TLS_EV_FAILED) {
		if (d->fail == NULL)
			d->fail = tls_err_name(ev.err);
		ngtcp2_conn_set_tls_alert(conn, tls_client_quic_alert(d->tls));
		return NGTCP2_ERR_CRYPTO;
	}
	out = tls_client_quic_out(d->tls, &lvl, &n);
	if (n > 0) {
		if (ngtcp2_conn_submit_crypto_data(
		        conn,
		        lvl == TLS_LEVEL_INITIAL     ? NGTCP2_CRYPTO_LEVEL_INITIAL
		        : lvl == TLS_LEVEL_HANDSHAKE ? NGTCP2_CRYPTO_LEVEL_HANDSHAKE
		                                     : NGTCP2_CRYPTO_LEVEL_APPLICATION,
		        out, n) != 0)
			return NGTCP2_ERR_CALLBACK_FAILURE;
		tls_client_out_done(d->tls, n);
	}
	if (ev.kind == TLS_EV_CONNECTED)
		ngtcp2_conn_handshake_completed(conn);
	return 0;
}

static int handshake_completed(ngtcp2_conn *conn, void *user)
{
	struct dial *d = user;

	(void)conn;
	d->done = true;
	return 0;
}

static void cb_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	rng(NULL, dest, len);
}

static int new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *user)
{
	(void)conn;
	(void)user;
	rng(NULL, cid->data, cidlen);
	cid->datalen = cidlen;
	rng(NULL, token, NGTCP2_STATELESS_RESET_TOKENLEN);
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
static size_t chaos(struct dial *d, const uint8_t *pkt, size_t len, uint8_t *out, size_t target)
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

static bool flush(struct dial *d, int fd, uint8_t *buf, size_t cap)
{
	static uint8_t re[1500];

	for (;;) {
		ngtcp2_path_storage ps;
		ngtcp2_pkt_info pi;
		ngtcp2_ssize n;
		/* Until the server answers, the first flight: room for the chaos. */
		bool first = d->chaos && !d->heard;
		size_t k;

		ngtcp2_path_storage_zero(&ps);
		n = ngtcp2_conn_write_pkt(d->conn, &ps.path, &pi, buf,
		                          first ? cap - CHAOS_ROOM : cap, now_ns());
		if (n > 0 && first && (k = chaos(d, buf, (size_t)n, re, cap)) > 0) {
			memcpy(buf, re, k);
			n = (ngtcp2_ssize)k;
		}
		if (n < 0) {
			fprintf(stderr, "yip-quic-dial: write: %s\n", ngtcp2_strerror((int)n));
			return false;
		}
		if (n == 0)
			return true;
		if (send(fd, buf, (size_t)n, 0) != n) {
			perror("yip-quic-dial: send");
			return false;
		}
	}
}

/* The handshake through src/quic (quic_conn_dial, quic_tls_yip). */
static int dial_conn(int fd, const struct sockaddr_storage *local, socklen_t local_len,
                     const struct addrinfo *ai, const char *sni)
{
	struct quic_dial_config cfg = {.sni = sni, .tls = &quic_tls_yip};
	union yip_sockaddr l, r;
	struct quic_conn *c;
	struct quic_conn_info info;
	static uint8_t buf[65536];
	char err[160];
	uint64_t deadline = now_ns() + TIMEOUT_NS;
	size_t n;
	int rc = 1;

	memset(&l, 0, sizeof(l));
	memset(&r, 0, sizeof(r));
	memcpy(&l, local, local_len < sizeof(l) ? local_len : sizeof(l));
	memcpy(&r, ai->ai_addr, ai->ai_addrlen < sizeof(r) ? ai->ai_addrlen : sizeof(r));
	c = quic_conn_dial(&cfg, &l, &r, now_ns(), err, sizeof(err));
	if (c == NULL) {
		fprintf(stderr, "yip-quic-dial: %s\n", err);
		return 1;
	}
	for (;;) {
		uint64_t t = now_ns(), exp;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int wait_ms;

		while ((n = quic_conn_write(c, buf, QUIC_PKT_MAX, now_ns())) > 0)
			if (send(fd, buf, n, 0) != (ssize_t)n) {
				perror("yip-quic-dial: send");
				goto out;
			}
		if (quic_conn_state(c) == QUIC_CONN_OPEN) {
			quic_conn_info(c, &info);
			printf("connected alpn=%s cipher=%s via=quic_conn\n",
			       info.alpn ? info.alpn : "-", info.cipher);
			rc = 0;
			break;
		}
		if (quic_conn_state(c) == QUIC_CONN_DONE) {
			fprintf(stderr, "yip-quic-dial: %s\n", quic_conn_why(c));
			goto out;
		}
		if (t >= deadline) {
			fprintf(stderr, "yip-quic-dial: no handshake in time\n");
			goto out;
		}
		exp = quic_conn_expiry(c);
		wait_ms = exp <= t ? 0 : (int)((exp - t) / 1000000 + 1);
		if (wait_ms > (int)((deadline - t) / 1000000 + 1))
			wait_ms = (int)((deadline - t) / 1000000 + 1);
		if (poll(&p, 1, wait_ms) > 0) {
			ssize_t k = recv(fd, buf, sizeof(buf), 0);

			if (k > 0)
				(void)quic_conn_read(c, buf, (size_t)k, NULL, now_ns());
		} else {
			(void)quic_conn_expire(c, now_ns());
		}
	}
	quic_conn_close(c, now_ns());
	while ((n = quic_conn_write(c, buf, QUIC_PKT_MAX, now_ns())) > 0)
		(void)send(fd, buf, n, 0);
out:
	quic_conn_free(c);
	return rc;
}

int main(int argc, char **argv)
{
	const char *sni = NULL;
	size_t payload = 1250;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *ai;
	struct sockaddr_storage local;
	socklen_t local_len = sizeof(local);
	struct tls_quic_tp tpv;
	uint8_t tp[256], buf[65536];
	size_t tp_len;
	struct dial d = {.chaos = true};
	ngtcp2_callbacks cb = {0};
	ngtcp2_settings settings;
	ngtcp2_transport_params params;
	ngtcp2_cid dcid, scid;
	ngtcp2_path path;
	uint64_t deadline;
	int fd, rc, i = 1;
	bool via_conn = false;
	if (quic_lib_init() != 0) {
		fprintf(stderr, "yip-quic-dial: gnutls cannot be set up\n");
		return 1;
	}

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "--sni") == 0)
			sni = argv[i + 1];
		else if (strcmp(argv[i], "--chaos") == 0)
			d.chaos = strcmp(argv[i + 1], "on") == 0;
		else if (strcmp(argv[i], "--conn") == 0)
			via_conn = strcmp(argv[i + 1], "on") == 0;
		else if (strcmp(argv[i], "--payload") == 0)
			payload = (size_t)strtoul(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (argc - i != 2 || payload < 1200 || payload > 1452) {
		fprintf(
		    stderr,
		    "usage: yip-quic-dial [--sni NAME] [--payload N] [--chaos on|off] HOST PORT\n");
		return 2;
	}
	if (sni == NULL)
		sni = argv[i];
	if ((rc = getaddrinfo(argv[i], argv[i + 1], &hints, &ai)) != 0) {
		fprintf(stderr, "yip-quic-dial: %s: %s\n", argv[i], gai_strerror(rc));
		return 1;
	}
	fd = socket(ai->ai_family, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &local_len) != 0) {
		perror("yip-quic-dial: socket");
		return 1;
	}
	if (via_conn) {
		rc = dial_conn(fd, &local, local_len, ai, sni);
		freeaddrinfo(ai);
		close(fd);
		return rc;
	}

	/* chromium's transport parameters on the wire, the same values in ngtcp2. */
	tls_quic_tp_chromium(&tpv, rng, NULL, NULL, 0);
	tp_len = tls_quic_tp_put(tp, sizeof(tp), &tpv);
	{
		struct tls_client_config cfg = {
		    .sni = sni,
		    .rand = rng,
		    .verify = tls_verify_any,
		    .quic = true,
		    .quic_tp = tp,
		    .quic_tp_len = tp_len,
		    .secret = on_secret,
		    .secret_ctx = &d,
		};

		d.tls = tls_client_new(&cfg);
	}
	if (tp_len == 0 || d.tls == NULL) {
		fprintf(stderr, "yip-quic-dial: the engine would not start\n");
		return 1;
	}
	ngtcp2_settings_default(&settings);
	settings.initial_ts = now_ns();
	settings.max_tx_udp_payload_size = payload;
	settings.no_pmtud = 1;
	/* Datagrams of payload bytes, as chromium's, not ngtcp2's 1200. */
	settings.no_tx_udp_payload_size_shaping = 1;
	settings.rand_ctx.native_handle = NULL;
	ngtcp2_transport_params_default(&params);
	params.max_idle_timeout = tpv.max_idle_timeout * NGTCP2_MILLISECONDS;
	params.max_udp_payload_size = tpv.max_udp_payload_size;
	params.initial_max_data = tpv.initial_max_data;
	params.initial_max_stream_data_bidi_local = tpv.initial_max_stream_data_bidi_local;
	params.initial_max_stream_data_bidi_remote = tpv.initial_max_stream_data_bidi_remote;
	params.initial_max_stream_data_uni = tpv.initial_max_stream_data_uni;
	params.initial_max_streams_bidi = tpv.initial_max_streams_bidi;
	params.initial_max_streams_uni = tpv.initial_max_streams_uni;
	params.max_datagram_frame_size = tpv.max_datagram_frame_size;
	dcid.datalen = 8;
	rng(NULL, dcid.data, dcid.datalen);
	scid.datalen = 0;
	path.local.addr = (ngtcp2_sockaddr *)&local;
	path.local.addrlen = local_len;
	path.remote.addr = (ngtcp2_sockaddr *)ai->ai_addr;
	path.remote.addrlen = ai->ai_addrlen;
	path.user_data = NULL;
	cb.client_initial = client_initial;
	cb.recv_crypto_data = recv_crypto;
	cb.handshake_completed = handshake_completed;
	cb.encrypt = ngtcp2_crypto_encrypt_cb;
	cb.decrypt = ngtcp2_crypto_decrypt_cb;
	cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
	cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
	cb.rand = cb_rand;
	cb.get_new_connection_id = new_cid;
	cb.update_key = ngtcp2_crypto_update_key_cb;
	cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
	cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
	cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
	cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
	if ((rc = ngtcp2_conn_client_new(&d.conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb,
	                                 &settings, &params, NULL, &d)) != 0) {
		fprintf(stderr, "yip-quic-dial: ngtcp2_conn_client_new: %s\n", ngtcp2_strerror(rc));
		return 1;
	}
	/* The TLS callbacks find the engine through the native handle, not
	 * user_data (which a QUIC stack keeps for itself): nothing of
	 * ngtcp2_crypto's that runs here reads it as a GnuTLS session once
	 * the crypto context is set (see on_secret). */
	ngtcp2_conn_set_tls_native_handle(d.conn, &d);
	deadline = now_ns() + TIMEOUT_NS;
	rc = 1;
	while (flush(&d, fd, buf, payload)) {
		uint64_t t = now_ns(), exp = ngtcp2_conn_get_expiry(d.conn);
		int wait_ms;
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (d.done) {
			size_t n;

			(void)tls_client_quic_peer_tp(d.tls, &n);
			printf("connected alpn=h3 cipher=%s peer_tp=%zu chaos=%u\n",
			       suite_name(tls_client_cipher(d.tls)), n, d.rewritten);
			rc = 0;
			break;
		}
		if (t >= deadline) {
			fprintf(stderr, "yip-quic-dial: no handshake in %llu s\n",
			        (unsigned long long)(TIMEOUT_NS / 1000000000ULL));
			break;
		}
		wait_ms = exp <= t ? 0 : (int)((exp - t) / 1000000 + 1);
		if (wait_ms > (int)((deadline - t) / 1000000 + 1))
			wait_ms = (int)((deadline - t) / 1000000 + 1);
		if (poll(&p, 1, wait_ms) > 0) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);

			if (n > 0) {
				ngtcp2_pkt_info pi = {0};

				d.heard = true;
				int r = ngtcp2_conn_read_pkt(d.conn, &path, &pi, buf, (size_t)n,
				                             now_ns());

				if (r != 0) {
					fprintf(stderr, "yip-quic-dial: read: %s (%s)\n",
					        ngtcp2_strerror(r), d.fail ? d.fail : "-");
					break;
				}
			}
		} else if (ngtcp2_conn_handle_expiry(d.conn, now_ns()) != 0) {
			fprintf(stderr, "yip-quic-dial: the connection timed out\n");
			break;
		}
	}
	if (rc == 0) {
		/* The client's Finished and ACKs out, then a clean close. */
		ngtcp2_connection_close_error ce;
		ngtcp2_path_storage ps;
		ngtcp2_pkt_info pi;
		ngtcp2_ssize n;

		(void)flush(&d, fd, buf, payload);
		ngtcp2_connection_close_error_set_application_error(&ce, 0x100, NULL, 0);
		ngtcp2_path_storage_zero(&ps);
		n = ngtcp2_conn_write_connection_close(d.conn, &ps.path, &pi, buf, payload, &ce,
		                                       now_ns());
		if (n > 0)
			(void)send(fd, buf, (size_t)n, 0);
	}
	ngtcp2_conn_del(d.conn);
	tls_client_free(d.tls);
	OPENSSL_cleanse(d.tx_key, sizeof(d.tx_key));
	OPENSSL_cleanse(d.tx_hp, sizeof(d.tx_hp));
	freeaddrinfo(ai);
	close(fd);
	return rc;
}
