/*
 * REALITY (docs/transports.md, "The REALITY front"; the seal in
 * docs/protocol.md): a yip node proves to a relay front, inside an
 * ordinary ClientHello, that it holds the front's public key, so that the
 * front answers it and hands every other visitor to a real web site. No
 * I/O here: the client side seals a hello and checks the certificate the
 * front answers with; the server side decides whether a hello is sealed,
 * and makes that certificate.
 *
 * The seal: dh = X25519(the hello's X25519 key share, the front's key);
 * ck = BLAKE2b("yip reality v1" || random[0..20)); (auth, cert) =
 * HKDF(ck, dh) (Noise's HKDF, src/crypto). The 16-byte plaintext of
 * wire/reality.h is sealed with ChaCha20-Poly1305 under auth, nonce
 * random[20..32), and as associated data the whole ClientHello handshake
 * message with its legacy_session_id zeroed: a hello changed anywhere
 * (SNI, key shares, extensions) no longer opens. The 32 bytes written are
 * its legacy_session_id.
 *
 * The front's certificate: self-signed, with the key it signs
 * CertificateVerify with, and as serial number the first 20 bytes of
 * HMAC(cert, the certificate's SubjectPublicKeyInfo) (the top two bits
 * set to 01, so the serial is positive and keeps its 20 bytes). Only the
 * front and this connection's client can make or check it; the TLS
 * engine's CertificateVerify check proves the front holds its key.
 *
 * The server refuses, in this order, cheapest first: a message that is
 * not a ClientHello, a hello without TLS 1.3, an SNI not in its set, a
 * session id that is not 32 bytes, no X25519 share, no budget left for
 * the X25519 (REALITY_RATE a second), a seal that does not open, a
 * plaintext it does not read, a short id it does not know, a clock more
 * than REALITY_WINDOW_S away from its own, and a seal it has seen in
 * that window.
 */
#ifndef YIP_REALITY_REALITY_H
#define YIP_REALITY_REALITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "wire/reality.h"
#include "wire/tls.h"

#define REALITY_KEY_LEN   32
#define REALITY_NAMES_MAX 16    /* server names a front answers for */
#define REALITY_IDS_MAX   16    /* short ids it knows */
#define REALITY_WINDOW_S  120   /* the clock difference accepted, either way */
#define REALITY_CACHE     16384 /* seals remembered (a window's worth at 136 a second) */
#define REALITY_RATE      4096  /* X25519s a second, at most, for hellos that might be sealed */
#define REALITY_SERIAL    20

/* What a sealed hello gives both sides: the seal's keys. */
struct reality_keys {
	uint8_t auth[REALITY_KEY_LEN];
	uint8_t cert[REALITY_KEY_LEN];
};

/* ---- the client ---- */

/*
 * Seals hello (a ClientHello handshake message, header first, whose
 * legacy_session_id is 32 bytes) in place: its session id becomes the seal
 * of short_id and unix_s, for the front whose public key is front_pub,
 * made with the private key of the hello's X25519 share. keys gets the
 * seal's keys. False if the hello has no such session id or the X25519
 * fails (a low-order front key).
 */
bool reality_seal(uint8_t *hello, size_t len, const uint8_t x25519_priv[REALITY_KEY_LEN],
                  const uint8_t front_pub[REALITY_KEY_LEN],
                  const uint8_t short_id[WIRE_REALITY_SHORT_ID], uint32_t unix_s,
                  struct reality_keys *keys);

/* Whether chain's leaf is the front's certificate for keys. */
bool reality_cert_ok(const struct reality_keys *keys, const struct tls_chain *chain);

/*
 * One dial's state for the TLS client engine (src/tls): reality_client_seal
 * is its seal callback, reality_client_verify its verify callback, both
 * with a struct reality_client as context. Set front_pub, short_id and
 * unix_s; the seal fills keys, the verify checks the certificate against
 * them, and says in spliced whether the chain was not the front's (the
 * dial reached the real site: the key is wrong, or someone is in the way).
 */
struct reality_client {
	uint8_t front_pub[REALITY_KEY_LEN];
	uint8_t short_id[WIRE_REALITY_SHORT_ID];
	uint32_t unix_s;
	struct reality_keys keys;
	bool sealed, spliced;
};

bool reality_client_seal(void *ctx, uint8_t *hello, size_t len,
                         const uint8_t x25519_priv[REALITY_KEY_LEN]);
bool reality_client_verify(void *ctx, const struct tls_chain *chain, const char *sni);
/* Wipes the dial's keys. */
void reality_client_wipe(struct reality_client *rc);

/* ---- the server ---- */

enum reality_verdict {
	REALITY_AUTHENTICATED,
	REALITY_NOT_HELLO, /* not a ClientHello that parses */
	REALITY_NO_TLS13,  /* supported_versions without TLS 1.3 */
	REALITY_SNI,       /* no SNI, or one not in the set */
	REALITY_NO_SEAL,   /* a session id that is not 32 bytes */
	REALITY_NO_SHARE,  /* no X25519 key share */
	REALITY_BUSY,      /* over the X25519 budget, or the seal cache is full */
	REALITY_SEAL,      /* the seal does not open */
	REALITY_PLAIN,     /* it opens to a plaintext this side does not read */
	REALITY_SHORT_ID,  /* an unknown short id */
	REALITY_CLOCK,     /* a clock too far from this one */
	REALITY_REPLAY,    /* a seal seen before */
	REALITY_VERDICTS
};

/* The verdicts' names, for status and logs. */
const char *reality_verdict_name(unsigned v);

struct reality_server_config {
	uint8_t priv[REALITY_KEY_LEN];
	const char *names[REALITY_NAMES_MAX];
	size_t n_names;
	uint8_t ids[REALITY_IDS_MAX][WIRE_REALITY_SHORT_ID];
	size_t n_ids;
};

struct reality_server;

/* NULL if out of memory or the configuration holds no name or no id (or too many). */
struct reality_server *reality_server_new(const struct reality_server_config *cfg);
/* Frees it, its key wiped. */
void reality_server_free(struct reality_server *s);

/*
 * The verdict on hello (a handshake message, header first; len its whole
 * length): REALITY_AUTHENTICATED with keys filled, or why not. now is a
 * monotonic clock in nanoseconds (the budget), unix_s the wall clock.
 */
enum reality_verdict reality_check(struct reality_server *s, uint64_t now, uint32_t unix_s,
                                   const uint8_t *hello, size_t len, struct reality_keys *keys);

/*
 * The front's certificate for keys: self-signed with key (its public key
 * in the certificate), for name, valid from an hour before unix_s for a
 * year. DER into out; its length, or 0 if it does not fit in cap or
 * libcrypto fails.
 */
size_t reality_cert_make(uint8_t *out, size_t cap, const struct reality_keys *keys, EVP_PKEY *key,
                         const char *name, uint32_t unix_s);

/* Parses a short id: 0 to 16 hex digits, an even number, zero-padded on the right. */
bool reality_short_id_parse(uint8_t id[WIRE_REALITY_SHORT_ID], const char *hex);

#endif
