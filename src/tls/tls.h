/*
 * A TLS 1.3 client with no I/O: bytes in, bytes out. It builds a
 * ClientHello shaped like Chrome's (hello.c), runs the handshake
 * (ServerHello, EncryptedExtensions, Certificate, CertificateVerify,
 * Finished both ways) and then protects application data, KeyUpdate,
 * close_notify and alerts. The same engine is meant for the TLS link, the
 * QUIC handshake and REALITY. The server of a REALITY front, which shapes
 * its flight on a real site's, is server.h's; both run on keys.c's key
 * schedule and record protection.
 *
 * Using it: tls_client_new, then send what tls_client_out holds (the
 * ClientHello first) and mark it sent with tls_client_out_done; hand every
 * byte the server sends to tls_client_recv, which takes at most one record
 * per call and says what that record was (struct tls_event); after each
 * call, send what tls_client_out holds again. Once connected,
 * tls_client_seal writes one application data record to the caller's
 * buffer; it refuses while tls_client_out still holds bytes, so records
 * always leave in the order they were protected.
 *
 * Memory: one allocation per connection (tls_client_new), holding a record
 * buffer of TLS_REC_MAX bytes and a handshake buffer of TLS_HS_BUF; no
 * allocation per record. The handshake allocates in libcrypto (key
 * derivation, the certificate's key) and frees before it returns.
 *
 * Key exchange: X25519MLKEM768 (ML-KEM-768 from src/crypto/mlkem.c, as
 * OpenSSL 3.0 has none: the secret is ML-KEM's, then X25519's), X25519,
 * and P-256 or P-384 after a HelloRetryRequest; a hybrid share that does
 * not decode fails the handshake (TLS_ERR_MLKEM, counted). A
 * HelloRetryRequest for P-256 or P-384 is answered with a second hello
 * (that share from libcrypto's RNG); one for any other group, or a second
 * one, fails it (TLS_ERR_HRR).
 *
 * What it does not do: no resumption (tickets are read and dropped), no client certificates (a
 * CertificateRequest fails it, TLS_ERR_UNSUPPORTED), no compressed
 * certificates (a server that speaks brotli may choose to send one: it
 * fails the handshake, TLS_ERR_UNSUPPORTED), no ALPS answer (a server that
 * answers application_settings fails it the same way), no ML-DSA: the
 * hello offers ML-DSA-44/65/87 as Chrome does, but a CertificateVerify
 * signed with one fails the handshake (TLS_ERR_UNSUPPORTED; OpenSSL 3.0
 * servers never choose them). A signature scheme not offered (GREASE
 * among them) fails it with TLS_ERR_PARAMETER.
 */
#ifndef YIP_TLS_TLS_H
#define YIP_TLS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/tls.h"

/* The handshake buffer: the largest server flight message (a certificate
 * chain) it reassembles. */
#define TLS_HS_BUF 32768
/* The output buffer: a ClientHello, or a Finished, a KeyUpdate and alerts. */
#define TLS_OUT_BUF 4096

/* Randomness: n bytes into out (the caller's RNG, so tests repeat). */
typedef void tls_rand_fn(void *ctx, uint8_t *out, size_t n);

/*
 * Whether the server's certificate chain (leaf first, DER) is acceptable
 * for sni. The engine itself checks that the server holds the leaf's key
 * (CertificateVerify); the policy is the caller's: tls_verify_any,
 * tls_verify_pin, tls_verify_store, or its own.
 */
typedef bool tls_verify_fn(void *ctx, const struct tls_chain *chain, const char *sni);

/* Accepts any chain (a front that authenticates by Noise inside). */
bool tls_verify_any(void *ctx, const struct tls_chain *chain, const char *sni);
/* Accepts a chain whose leaf's SubjectPublicKeyInfo has the SHA-256 at ctx (32 bytes). */
bool tls_verify_pin(void *ctx, const struct tls_chain *chain, const char *sni);
/* Accepts a chain that verifies to the X509_STORE at ctx with the leaf valid for sni. */
bool tls_verify_store(void *ctx, const struct tls_chain *chain, const char *sni);

/*
 * QUIC (RFC 9001): the encryption levels handshake bytes travel at, and
 * the traffic secrets the engine hands a QUIC stack as each level's become
 * known (rx the server's, tx this client's, len bytes each: the suite's
 * hash length), with the suite so it can pick its AEAD and header
 * protection. The secrets are wiped when it returns; false from it fails
 * the handshake (TLS_ERR_INTERNAL).
 */
enum tls_level {
	TLS_LEVEL_INITIAL,
	TLS_LEVEL_HANDSHAKE,
	TLS_LEVEL_APP,
};

typedef bool tls_secret_fn(void *ctx, enum tls_level level, uint16_t cipher, const uint8_t *rx,
                           const uint8_t *tx, size_t len);

struct tls_client_config {
	const char *sni; /* the server name sent, NULL for none */
	tls_rand_fn *rand;
	void *rand_ctx;
	tls_verify_fn *verify;
	void *verify_ctx;
	/*
	 * QUIC mode: no record layer, no ChangeCipherSpec, no
	 * legacy_session_id, no early data; chromium's QUIC hello (hello.c)
	 * carrying quic_tp (quic_tp_len bytes, at most TLS_QUIC_TP_MAX: this
	 * client's transport parameters, e.g. tls_quic_tp_put's) with ALPN h3,
	 * which the server must choose, and must answer with transport
	 * parameters of its own (tls_client_quic_peer_tp). secret receives the
	 * handshake and application secrets.
	 */
	bool quic;
	const uint8_t *quic_tp;
	size_t quic_tp_len;
	tls_secret_fn *secret;
	void *secret_ctx;
	/*
	 * REALITY (src/reality; TCP only): called once the hello is built,
	 * with the ClientHello handshake message and the private key of its
	 * X25519 share, to rewrite its 32-byte legacy_session_id in place
	 * (nothing else); false fails tls_client_new. NULL: a random id.
	 */
	bool (*seal)(void *ctx, uint8_t *hello, size_t len,
	             const uint8_t x25519_priv[TLS_X25519_LEN]);
	void *seal_ctx;
};

/* Why a connection failed (struct tls_event.err, tls_client_err). */
enum tls_err {
	TLS_ERR_NONE = 0,
	TLS_ERR_DECODE,      /* a record or message that does not parse */
	TLS_ERR_UNEXPECTED,  /* a message out of order */
	TLS_ERR_VERSION,     /* the server does not speak TLS 1.3 */
	TLS_ERR_PARAMETER,   /* a suite, group or echo this client did not offer */
	TLS_ERR_MLKEM,       /* the server's X25519MLKEM768 share is bad */
	TLS_ERR_HRR,         /* a HelloRetryRequest it cannot answer (see above) */
	TLS_ERR_UNSUPPORTED, /* a CertificateRequest, a compressed certificate, ML-DSA */
	TLS_ERR_CERT,        /* the verify callback refused the chain */
	TLS_ERR_SIGNATURE,   /* CertificateVerify does not verify */
	TLS_ERR_FINISHED,    /* the server's Finished does not verify */
	TLS_ERR_RECORD_MAC,  /* a protected record that does not open */
	TLS_ERR_OVERFLOW,    /* a record or message over its limit */
	TLS_ERR_ALERT,       /* the server sent a fatal alert */
	TLS_ERR_INTERNAL,    /* libcrypto failed */
	TLS_ERR_QUIC_TP,     /* QUIC: the server sent no transport parameters */
	TLS_ERRS
};

const char *tls_err_name(unsigned err);

enum tls_event_kind {
	TLS_EV_NONE,      /* more bytes are needed, or a record with nothing to tell */
	TLS_EV_CONNECTED, /* the handshake completed with this record */
	TLS_EV_DATA,      /* application data: data, len */
	TLS_EV_CLOSED,    /* close_notify */
	TLS_EV_FAILED,    /* err says why; an alert may wait in tls_client_out */
};

struct tls_event {
	enum tls_event_kind kind;
	enum tls_err err;
	uint8_t alert;       /* TLS_ERR_ALERT: the server's alert */
	const uint8_t *data; /* in the engine's buffer until the next tls_client_recv */
	size_t len;
};

/* What the engine counts across its life (a link adds them up). */
struct tls_stats {
	uint64_t records_in, records_out;
	uint64_t key_updates_in, key_updates_out;
	uint64_t fail[TLS_ERRS];
};

struct tls_client;

/* A client with its ClientHello in tls_client_out, or NULL (no memory, no rand). */
struct tls_client *tls_client_new(const struct tls_client_config *cfg);
/* Frees the client, its secrets wiped. */
void tls_client_free(struct tls_client *c);

/* Bytes waiting to be sent; n of them sent. */
const uint8_t *tls_client_out(const struct tls_client *c, size_t *len);
void tls_client_out_done(struct tls_client *c, size_t n);

/* Takes bytes from the server: how many (at most the rest of one record),
 * with ev saying what a completed record was. */
size_t tls_client_recv(struct tls_client *c, const uint8_t *in, size_t len, struct tls_event *ev);

/*
 * One application data record of len bytes (at most TLS_REC_PLAIN) padded
 * with pad zero bytes (TLS 1.3 inner padding; len + pad at most
 * TLS_REC_PLAIN) into out; its length, or 0 if not connected, output is
 * pending, or it does not fit in cap (len + pad + tls_seal_overhead).
 */
size_t tls_client_seal(struct tls_client *c, uint8_t *out, size_t cap, const uint8_t *data,
                       size_t len, size_t pad);
#define TLS_SEAL_OVERHEAD (TLS_REC_HDR + 1 + 16)

/* Sends a KeyUpdate (requesting one back if request) and switches to the next key. */
bool tls_client_key_update(struct tls_client *c, bool request);
/* Queues close_notify; nothing more can be sealed. */
void tls_client_close(struct tls_client *c);

bool tls_client_connected(const struct tls_client *c);
enum tls_err tls_client_err(const struct tls_client *c);
/* The chosen cipher suite and ALPN protocol (NULL, 0 if none), once connected. */
uint16_t tls_client_cipher(const struct tls_client *c);
const uint8_t *tls_client_alpn(const struct tls_client *c, size_t *len);
const struct tls_stats *tls_client_stats(const struct tls_client *c);
/* The ClientHello handshake message sent (for tests and REALITY). */
const uint8_t *tls_client_hello(const struct tls_client *c, size_t *len);

/* ---- QUIC mode (cfg->quic) ---- */

/*
 * Handshake bytes the server sent at level (the CRYPTO stream's next
 * bytes, in order): all of them are taken; ev says what they completed
 * (TLS_EV_CONNECTED once the server's Finished checks out; the client's
 * Finished then waits in tls_client_quic_out). Bytes at a level the
 * handshake is not at fail it (TLS_ERR_UNEXPECTED), as do a KeyUpdate
 * (RFC 9001 6) and calls in TCP mode; tls_client_recv fails in QUIC mode.
 */
void tls_client_quic_recv(struct tls_client *c, enum tls_level level, const uint8_t *in, size_t len,
                          struct tls_event *ev);
/* Handshake bytes waiting to be sent, and their level (all of one level:
 * send them, tls_client_out_done, before handing in more). */
const uint8_t *tls_client_quic_out(const struct tls_client *c, enum tls_level *level, size_t *len);
/* The server's transport parameters (the extension's body, parsed whole
 * once: every parameter's length within it, none of ids 0..63 twice), or
 * NULL before its EncryptedExtensions. */
const uint8_t *tls_client_quic_peer_tp(const struct tls_client *c, size_t *len);
/* The TLS alert a failed handshake would have sent (QUIC closes with
 * CRYPTO_ERROR 0x100 + it), or 0. */
uint8_t tls_client_quic_alert(const struct tls_client *c);

/* ---- hello.c: the Chrome-shaped ClientHello ---- */

/*
 * Fills ch with a fresh connection's choices (GREASE values, extension
 * order, random, session id, ECH GREASE) from rand, with sni and x25519
 * as the plain X25519 share, mlkem as the X25519MLKEM768 share
 * (TLS_MLKEMX_LEN; its X25519 half a key of its own) and the ECH GREASE
 * bytes to ech (at least TLS_ECH_GREASE_MAX). quic: the QUIC hello's
 * choices (its extensions permuted; its quic_tp the caller's to set).
 */
#define TLS_ECH_GREASE_MAX (32 + 240)
void tls_hello_choose(struct tls_ch *ch, tls_rand_fn *rand, void *rand_ctx, const char *sni,
                      const uint8_t x25519[TLS_X25519_LEN], const uint8_t mlkem[TLS_MLKEMX_LEN],
                      uint8_t ech[TLS_ECH_GREASE_MAX], bool quic);

/*
 * chromium 156's QUIC transport parameters (tests/tls/quic_chromium.md):
 * its values, the initial_source_connection_id scid (scid_len bytes; empty
 * for chromium's zero-length SCID), a fresh order, GREASE version and GREASE
 * parameter from rand; tls_quic_tp_put writes them.
 */
void tls_quic_tp_chromium(struct tls_quic_tp *tp, tls_rand_fn *rand, void *rand_ctx,
                          const uint8_t *scid, size_t scid_len);

#endif
