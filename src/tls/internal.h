/*
 * What the TLS 1.3 client (tls.c) and server (server.c) share, in keys.c:
 * the cipher suites, the key schedule (RFC 8446 7.1, HKDF from
 * libcrypto), one direction's record protection (5.2, 5.3), Finished's
 * MAC (4.4.4), CertificateVerify's signed content (4.4.3), the alert a
 * failure sends, and the record layer (struct tls_rl): records gathered
 * from a byte stream, opened and handed on by content type, handshake
 * messages reassembled, the output queue, alerts and failure.
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
 * already be in place at out + TLS_REC_HDR, and may be NULL if len is 0)
 * and pad zeros (len + 1 + pad at most TLS_REC_PLAIN + 1); its length,
 * or 0.
 */
size_t tls_dir_seal(struct tls_dir *d, uint8_t *out, size_t cap, uint8_t type, const uint8_t *data,
                    size_t len, size_t pad);
/* Opens the whole record at rec (header, then body_len bytes) in place: its
 * inner type and plaintext, or false (bad_record_mac). */
bool tls_dir_open(struct tls_dir *d, uint8_t *rec, size_t body_len, uint8_t *type, uint8_t **plain,
                  size_t *plain_len);

/*
 * One whole handshake message (msg, n bytes: type, then body_len bytes of
 * body) for an engine; a message that changes the keys it reads with sets
 * *rekeyed, and must end its record. TLS_ERR_NONE, or why it fails.
 */
typedef enum tls_err tls_msg_fn(void *ctx, const uint8_t *msg, size_t n, uint8_t type,
                                const uint8_t *body, size_t body_len, bool *rekeyed);

/* ---- the record layer both engines run on ---- */

/* Where a connection stands. */
enum tls_phase {
	TLS_PHASE_HANDSHAKE,
	TLS_PHASE_CONNECTED, /* the peer's Finished checked, this side's made */
	TLS_PHASE_CLOSED,    /* the peer's close_notify read */
	TLS_PHASE_FAILED,    /* err says why */
};

/*
 * One end's records: its two directions, the record being gathered, the
 * handshake bytes of a message not yet whole (hs, hs_cap bytes), the
 * output queue (out, out_cap bytes), what it counted and where the
 * connection stands. hs and out are the engine's own buffers.
 */
struct tls_rl {
	enum tls_phase phase;
	enum tls_err err;
	struct tls_dir rx, tx;
	/* QUIC: no records in or out, and an alert is only kept in alert. */
	bool quic;
	/* Every record out is protected: none in the clear before tx has keys. */
	bool sealed_only;
	bool tx_closed; /* an alert sent: nothing more goes out */
	uint8_t alert;  /* QUIC: the alert this side would have sent, or 0 */
	unsigned ccs;   /* ChangeCipherSpec records read */
	struct tls_stats stats;
	uint8_t *hs, *out;
	size_t hs_n, hs_cap, out_n, out_cap, rec_n;
	uint8_t rec[TLS_REC_MAX]; /* rec_n bytes of the record being gathered */
};

/* rl's ciphers made and its buffers set (the rest as it is: zero from
 * calloc); false with no memory. tls_rl_free frees the ciphers either way. */
bool tls_rl_init(struct tls_rl *rl, uint8_t *hs, size_t hs_cap, uint8_t *out, size_t out_cap);
void tls_rl_free(struct tls_rl *rl);

/* n bytes of p appended to the output queue, or false if they do not fit;
 * and its first k bytes taken off. */
bool tls_rl_out(struct tls_rl *rl, const uint8_t *p, size_t n);
void tls_rl_out_done(struct tls_rl *rl, size_t k);
/* One protected record (tls_dir_seal with tx) into out, counted; its
 * length, or 0. */
size_t tls_rl_seal(struct tls_rl *rl, uint8_t *out, size_t cap, uint8_t type, const uint8_t *data,
                   size_t len, size_t pad);
/* A record of type with len bytes of p queued: protected (pad zeros
 * after them) once tx has keys, in the clear before unless sealed_only. */
bool tls_rl_put(struct tls_rl *rl, uint8_t type, const uint8_t *p, size_t len, size_t pad);
/* One application data record into out (tls_rl_seal), or 0 unless
 * connected, not closed, not QUIC, the queue empty and len + pad at most
 * TLS_REC_PLAIN. */
size_t tls_rl_app(struct tls_rl *rl, uint8_t *out, size_t cap, const uint8_t *data, size_t len,
                  size_t pad);
/* A KeyUpdate queued (asking for one back if request), then tx's next
 * keys (s the suite); false if either fails. */
bool tls_rl_key_update(struct tls_rl *rl, const struct tls_suite *s, bool request);
/* The peer's KeyUpdate (its body): rx's next keys, and one sent back if
 * it asks and tx is not closed. TLS_ERR_DECODE or TLS_ERR_INTERNAL. */
enum tls_err tls_rl_key_update_in(struct tls_rl *rl, const struct tls_suite *s, const uint8_t *body,
                                  size_t n);
/* Alert desc queued (QUIC: kept in alert) unless an alert has gone
 * already; nothing more goes out after it. */
void tls_rl_alert(struct tls_rl *rl, uint8_t desc);
/* The connection failed with err unless it had already (the alert err
 * names sent, none for TLS_ERR_ALERT); ev says TLS_EV_FAILED and the
 * first err. */
void tls_rl_fail(struct tls_rl *rl, struct tls_event *ev, enum tls_err err);

/*
 * Handshake bytes (p, n: a record's, or a QUIC level's) added to hs and
 * each whole message handed to msg; a message that could never fit in
 * hs_cap is TLS_ERR_OVERFLOW. ev says TLS_EV_CONNECTED if msg made the
 * connection connected, or fails it with the first error.
 */
void tls_rl_handshake(struct tls_rl *rl, struct tls_event *ev, const uint8_t *p, size_t n,
                      tls_msg_fn *msg, void *ctx);

/* What may come now, besides protected records (tls_rl_recv's allow). */
#define TLS_RL_CCS      1u /* ChangeCipherSpec: 1, at most TLS_CCS_MAX of them */
#define TLS_RL_ALERT    2u /* an alert in the clear */
#define TLS_RL_HS_CLEAR 4u /* handshake bytes in the clear */

/*
 * Takes bytes from the peer, at most the rest of one record: how many.
 * With a whole record, ev says what it was: nothing (a ChangeCipherSpec,
 * handshake bytes), TLS_EV_CONNECTED (tls_rl_handshake), TLS_EV_DATA
 * (application data once connected, with no handshake message half
 * read), TLS_EV_CLOSED (close_notify) or TLS_EV_FAILED (anything else,
 * TLS_ERR_ALERT for the peer's alert). Once closed or failed, that again
 * for all of in; in QUIC mode, a failure (TLS_ERR_UNEXPECTED).
 */
size_t tls_rl_recv(struct tls_rl *rl, const uint8_t *in, size_t len, struct tls_event *ev,
                   unsigned allow, tls_msg_fn *msg, void *ctx);

#endif
