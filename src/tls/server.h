/*
 * A TLS 1.3 server with no I/O, for a REALITY-style front: bytes in,
 * bytes out. The front has already read the visitor's ClientHello and
 * mirrored it to a real HTTPS site (the target), whose ServerHello and
 * first flight it has read too. This engine answers the visitor itself
 * with a flight that looks like the target's on the wire:
 *
 *   - the target's ServerHello as a template, byte for byte (its
 *     extension order, suite, group and legacy_session_id echo), with
 *     only its random and its key_share bytes replaced by this server's;
 *   - a ChangeCipherSpec record where the target sent one (tls_server_ccs);
 *   - EncryptedExtensions (ALPN at most), Certificate (the caller's chain,
 *     no extensions per entry), CertificateVerify and Finished, as one
 *     handshake byte stream laid into protected records one at a time, as
 *     the target's arrive, each with the body length of the target's
 *     (tls_server_flight; TLS 1.3 inner padding, RFC 8446 5.4, fills it).
 *     Messages may span records. Once the stream is out, a record of the
 *     target's length is application data of no bytes, padded (5.1 allows
 *     zero-length application data), under the application keys: so are
 *     the target's later flight records and, after the client's Finished,
 *     its session tickets. A target whose records end before the stream
 *     does gets the rest in records of natural size
 *     (tls_server_flight_rest). The ECDSA signature is the shortest DER
 *     length (signed again, up to SIGN_TRIES times), so that it fits
 *     wherever a target's own signature does.
 *
 * Then it takes the client's Finished (ChangeCipherSpec records before it
 * tolerated, at most 32) and carries application data both ways.
 *
 * Using it: tls_server_new checks the template against the hello (TLS 1.3,
 * not a HelloRetryRequest, a suite the client offered, a group the client
 * sent a share for: X25519, or X25519MLKEM768 whose share is an ML-KEM-768
 * ciphertext then an X25519 key and whose secret is ML-KEM's, then
 * X25519's; the client's legacy_session_id echoed) and fails with why if
 * it does not hold, so the caller can splice the visitor to the target
 * instead. Otherwise tls_server_out holds the ServerHello: send it and
 * mark it sent with tls_server_out_done; then the flight's records as
 * above, each into tls_server_out, sent the same way. Hand every byte the client
 * sends to tls_server_recv, which takes at most one record per call and
 * says what that record was (TLS_EV_CONNECTED for the client's Finished,
 * TLS_EV_DATA, TLS_EV_CLOSED for close_notify, TLS_EV_FAILED with an alert
 * queued in tls_server_out); after each call, send what tls_server_out
 * holds. Once connected, tls_server_seal writes one application data
 * record; it refuses while tls_server_out still holds bytes. A client's
 * KeyUpdate is followed (and answered if it asks).
 *
 * The signature: ecdsa_secp256r1_sha256 (0x0403) for a P-256 key,
 * ecdsa_secp384r1_sha384 (0x0503) for P-384, rsa_pss_rsae_sha256 (0x0804)
 * for RSA, each only if the client offered it (else TLS_ERR_UNSUPPORTED).
 *
 * Memory: one allocation per connection (tls_server_new), sized for the
 * flight; no allocation per record. The handshake allocates in libcrypto
 * (key derivation, the signature) and frees before new returns. Secrets
 * are wiped as soon as they are spent, and the rest on tls_server_free.
 *
 * What it does not do: no HelloRetryRequest, no PSK or resumption (no
 * tickets sent), no early data (the client's hello must not rely on it),
 * no client certificates, no certificate compression, no ALPS, no QUIC.
 */
#ifndef YIP_TLS_SERVER_H
#define YIP_TLS_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/types.h>

#include "tls/tls.h"

struct tls_server_config {
	tls_rand_fn *rand; /* the server's random, its key share's secret, ML-KEM's m */
	void *rand_ctx;
	/* The whole ClientHello handshake message (its 4-byte header
	 * included), as received. */
	const uint8_t *client_hello;
	size_t client_hello_len;
	/* The target's ServerHello handshake message (header included). */
	const uint8_t *template_sh;
	size_t template_sh_len;
	/* The protocol EncryptedExtensions names (one of the client's ALPN
	 * offers), or NULL for no ALPN extension. */
	const uint8_t *alpn;
	size_t alpn_len;
	/* The certificate chain, DER, leaf first (1 to TLS_CHAIN_MAX), and the
	 * leaf's private key (EC P-256 or P-384, or RSA). The engine keeps
	 * neither past tls_server_new. */
	const uint8_t *const *chain;
	const size_t *chain_lens;
	size_t chain_n;
	EVP_PKEY *key;
};

struct tls_server;

/*
 * A server with its first flight in tls_server_out, or NULL with *err (if
 * err is not NULL) saying why: TLS_ERR_DECODE (a hello or template that
 * does not parse), TLS_ERR_VERSION (no TLS 1.3), TLS_ERR_HRR (the template
 * is a HelloRetryRequest), TLS_ERR_PARAMETER (a suite, group, share, echo
 * or ALPN protocol the client did not offer, or a config out of its
 * bounds), TLS_ERR_MLKEM (the client's ML-KEM key does not decode),
 * TLS_ERR_UNSUPPORTED (no signature scheme for the key), TLS_ERR_OVERFLOW
 * (a flight over TLS_HS_BUF), TLS_ERR_INTERNAL (no memory, libcrypto).
 */
struct tls_server *tls_server_new(const struct tls_server_config *cfg, enum tls_err *err);
/* Frees the server, its secrets wiped. */
void tls_server_free(struct tls_server *s);

/* A ChangeCipherSpec record, as the target sent after its ServerHello;
 * false once the flight has begun, or with no room. */
bool tls_server_ccs(struct tls_server *s);

/*
 * The next record of the flight, its body len bytes (17, the inner type
 * and the tag, to TLS_REC_PLAIN + 17): as much of the handshake stream as
 * it holds, padded; once the stream is out, no bytes, padded. False if len
 * is out of those bounds, the queue has no room for it (send what it
 * holds first: it keeps two records), or the connection failed.
 */
bool tls_server_flight(struct tls_server *s, size_t len);
/* What is left of the stream in records of natural size; false with no room. */
bool tls_server_flight_rest(struct tls_server *s);
/* A new read from the socket begins: the ChangeCipherSpec records the
 * client may send before its Finished (at most 32) are counted per read,
 * as OpenSSL counts them, so that a prober who sends N of them after a
 * hello meets the same limit here as at an OpenSSL site. */
void tls_server_ccs_window(struct tls_server *s);

/* Whether the whole stream (through the server's Finished) is out. */
bool tls_server_flight_done(const struct tls_server *s);

/* Bytes waiting to be sent; n of them sent. */
const uint8_t *tls_server_out(const struct tls_server *s, size_t *len);
void tls_server_out_done(struct tls_server *s, size_t n);

/* Takes bytes from the client: how many (at most the rest of one record),
 * with ev saying what a completed record was. */
size_t tls_server_recv(struct tls_server *s, const uint8_t *in, size_t len, struct tls_event *ev);

/* One application data record of len bytes padded with pad zeros (len +
 * pad at most TLS_REC_PLAIN) into out: its length (len + pad +
 * TLS_SEAL_OVERHEAD), or 0 if not connected, output is pending, or it
 * does not fit in cap. */
size_t tls_server_seal(struct tls_server *s, uint8_t *out, size_t cap, const uint8_t *data,
                       size_t len, size_t pad);
/* Queues close_notify; nothing more can be sealed. */
void tls_server_close(struct tls_server *s);

/* Where the connection stands: connected (the client's Finished checked,
 * not closed or failed), why it failed, the suite and group the template
 * named, and what it counted (in the server, valid while it lives). */
struct tls_server_info {
	bool connected;
	enum tls_err err;
	uint16_t cipher, group;
	const struct tls_stats *stats;
};

void tls_server_info(const struct tls_server *s, struct tls_server_info *info);

#endif
