/*
 * What the TLS 1.3 client (tls.c) and server (server.c) share, in keys.c:
 * the cipher suites, the key schedule (RFC 8446 7.1, HKDF from
 * libcrypto), one direction's record protection (5.2, 5.3), Finished's
 * MAC (4.4.4), CertificateVerify's signed content (4.4.3), the alert a
 * failure sends and the reassembly of one record from a byte stream.
 * Not part of the API: src/tls's files only.
 */
#ifndef YIP_TLS_INTERNAL_H
#define YIP_TLS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "tls/tls.h"
#include "wire/tls.h"

#define TLS_HASH_MAX 48
#define TLS_IV_LEN   12
#define TLS_TAG_LEN  16
#define TLS_CCS_MAX  32 /* ChangeCipherSpec records tolerated in a handshake */

/* A cipher suite's hash and AEAD: one of Chrome's three TLS 1.3 suites. */
struct tls_suite {
	uint16_t cipher;
	const EVP_MD *md;
	const EVP_CIPHER *aead;
	size_t hlen, keylen;
};

/* Sets s for cipher (0x1301, 0x1302 or 0x1303); false (s unchanged) for any other. */
bool tls_suite_set(struct tls_suite *s, uint16_t cipher);

/* HKDF-Extract with s's hash: prk (hlen bytes) from salt (hlen bytes) and ikm. */
bool tls_key_extract(const struct tls_suite *s, uint8_t *prk, const uint8_t *salt,
                     const uint8_t *ikm, size_t ikm_len);
/* HKDF-Expand-Label(secret, label, context, n). */
bool tls_key_expand_label(const struct tls_suite *s, uint8_t *out, size_t n, const uint8_t *secret,
                          const char *label, const uint8_t *ctx, size_t ctx_len);
/* The hash of the transcript t so far (t unchanged). */
bool tls_key_transcript(const EVP_MD_CTX *t, uint8_t *out);
/* Derive-Secret(secret, label, the transcript t so far). */
bool tls_key_derive(const struct tls_suite *s, const EVP_MD_CTX *t, uint8_t *out,
                    const uint8_t *secret, const char *label);
/* Derive-Secret(secret, "derived", ""): the next stage's salt. */
bool tls_key_derive_empty(const struct tls_suite *s, uint8_t *out, const uint8_t *secret);
/*
 * The handshake secret from the (EC)DHE secret shared (no PSK), and the
 * client's and server's handshake traffic secrets over the transcript t
 * (ClientHello..ServerHello); hlen bytes each.
 */
bool tls_key_handshake(const struct tls_suite *s, const EVP_MD_CTX *t, const uint8_t *shared,
                       size_t shared_len, uint8_t *hs_secret, uint8_t *c_hs, uint8_t *s_hs);
/* The application traffic secrets from the handshake secret, over the
 * transcript t (ClientHello..server Finished). */
bool tls_key_app(const struct tls_suite *s, const EVP_MD_CTX *t, const uint8_t *hs_secret,
                 uint8_t *c_ap, uint8_t *s_ap);
/* Finished's verify_data for base_key (a handshake traffic secret) over t so far. */
bool tls_key_finished(const struct tls_suite *s, const EVP_MD_CTX *t, uint8_t *out,
                      const uint8_t *base_key);

/* What a server's CertificateVerify signs (RFC 8446 4.4.3): 64 spaces, the
 * context string, the transcript's hash; its length, or 0. */
#define TLS_CV_SIGNED_MAX (64 + 34 + TLS_HASH_MAX)
size_t tls_key_cv_signed(const struct tls_suite *s, const EVP_MD_CTX *t,
                         uint8_t out[TLS_CV_SIGNED_MAX]);

/* One direction's record protection. */
struct tls_dir {
	EVP_CIPHER_CTX *ctx;
	uint8_t secret[TLS_HASH_MAX];
	uint8_t iv[TLS_IV_LEN];
	uint64_t seq;
	bool on;
};

/* A direction's keys from its traffic secret; its sequence starts again. */
bool tls_dir_set(const struct tls_suite *s, struct tls_dir *d, const uint8_t *secret, int enc);
/* The next traffic secret (KeyUpdate). */
bool tls_dir_next(const struct tls_suite *s, struct tls_dir *d, int enc);
/*
 * A protected record of inner type with len bytes of data (which may
 * already be in place at out + TLS_REC_HDR) and pad zeros (len + 1 + pad
 * at most TLS_REC_PLAIN + 1); its length, or 0.
 */
size_t tls_dir_seal(struct tls_dir *d, uint8_t *out, size_t cap, uint8_t type, const uint8_t *data,
                    size_t len, size_t pad);
/* Opens the whole record at rec (header, then body_len bytes) in place: its
 * inner type and plaintext, or false (bad_record_mac). */
bool tls_dir_open(struct tls_dir *d, uint8_t *rec, size_t body_len, uint8_t *type, uint8_t **plain,
                  size_t *plain_len);

/* The alert a failure sends. */
uint8_t tls_err_alert(enum tls_err err);

/*
 * Gathers one record into rec (TLS_REC_MAX bytes, *rec_n of them held)
 * from in: the bytes taken in *used; 1 with r filled once the record is
 * whole (*rec_n back to 0), 0 if more are needed, -1 if its header cannot
 * start a record.
 */
int tls_rec_take(uint8_t *rec, size_t *rec_n, struct tls_rec *r, const uint8_t *in, size_t len,
                 size_t *used);

/* An output queue: n bytes of p appended to out (*out_n held, cap in
 * all), or false if they do not fit; and its first k bytes taken off. */
bool tls_out_put(uint8_t *out, size_t *out_n, size_t cap, const uint8_t *p, size_t n);
void tls_out_done(uint8_t *out, size_t *out_n, size_t k);

/* An alert record's body: TLS_ERR_NONE with ev->kind TLS_EV_CLOSED for
 * close_notify, TLS_ERR_ALERT with ev->alert for any other, or
 * TLS_ERR_DECODE. */
enum tls_err tls_alert_in(const uint8_t *p, size_t n, struct tls_event *ev);

/*
 * A protected record's handshake bytes (p, n) added to the reassembly
 * buffer hs (*hs_n held, cap in all) and each whole message handed to
 * msg; a message that changes keys (msg sets *rekeyed) must end the
 * record. The first error, or TLS_ERR_OVERFLOW for a message that could
 * never fit in cap.
 */
typedef enum tls_err tls_msg_fn(void *ctx, const uint8_t *msg, size_t n, uint8_t type,
                                const uint8_t *body, size_t body_len, bool *rekeyed);
enum tls_err tls_hs_feed(uint8_t *hs, size_t *hs_n, size_t cap, const uint8_t *p, size_t n,
                         tls_msg_fn *msg, void *ctx);

/* A whole record at rec (r its header) opened with d if protected: its
 * inner type and plaintext; TLS_ERR_UNEXPECTED (protected before keys),
 * TLS_ERR_RECORD_MAC, or TLS_ERR_OVERFLOW. */
enum tls_err tls_rec_in(struct tls_dir *d, uint8_t *rec, const struct tls_rec *r, uint8_t *type,
                        uint8_t **plain, size_t *plain_len);

#endif
