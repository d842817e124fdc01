/*
 * Cookies: how a responder survives a flood of Inits (docs/protocol.md,
 * "Cookies"), in the spirit of WireGuard's mac2. mac1 only proves a sender
 * knows the responder's public key, which is public; each Init past it
 * costs Diffie-Hellman. So a responder under load does that work only for
 * an Init whose mac2 was made with a cookie it gave the Init's source
 * address within the last two minutes; to any other it answers with a
 * Cookie message (64 bytes, smaller than the 149-byte Init: no
 * amplification) and does nothing else. An initiator keeps the cookie and
 * makes its next Init's mac2 with it.
 *
 *   cookie     = BLAKE2b(outlen 16, key = a secret that changes every 2 minutes,
 *                        message = the Init's source (struct cookie_source))
 *   Cookie msg = XChaCha20-Poly1305(key = BLAKE2b-256("yip-cookie-v1" || responder's
 *                        static public key), nonce = 24 bytes, never the same twice,
 *                        ad = the Init's mac1, plaintext = cookie)
 *
 * Binding the reply to the Init's mac1 means only whoever sent that Init
 * (and anyone on its path) can open it. The seal key lasts as long as the
 * responder's key, so a nonce must never repeat; it need not be secret or
 * unpredictable. Each checker draws a random 24-byte base once and adds
 * the number of Cookies it has sealed to its first 8 bytes: unique within
 * a run (2^64 Cookies), and across runs as unlikely to meet as random
 * nonces, at the price of one random draw per run instead of one system
 * call (getrandom) per Cookie. Pure: the caller passes the time.
 */
#ifndef YIP_COOKIE_COOKIE_H
#define YIP_COOKIE_COOKIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "crypto/crypto.h"
#include "wire/wire.h"

#define COOKIE_SECRET_AGE (120ULL * 1000000000ULL) /* the secret changes this often */
#define COOKIE_KEEP       (110ULL * 1000000000ULL) /* an initiator uses a cookie this long */

/*
 * Who an Init came from, as a cookie binds it: its source address and port
 * (IP, 4 or 16 bytes || port, 2), or, for an Init a rendezvous server
 * relayed, the relay path: 'R' || the server's IP || its port || the
 * sender's relay id there (4 bytes). The lengths differ, so the two kinds
 * never give the same bytes.
 */
#define COOKIE_SOURCE_MAX 23
struct cookie_source {
	uint8_t b[COOKIE_SOURCE_MAX];
	uint8_t len;
};

void cookie_source_addr(struct cookie_source *s, const union yip_sockaddr *a);
void cookie_source_relay(struct cookie_source *s, const union yip_sockaddr *server,
                         uint32_t relay_id);

/* The responder's side. */
struct cookie_checker {
	uint8_t secret[32];
	uint64_t secret_at; /* 0: none made yet */
	uint8_t seal_key[YIP_KEY_LEN];
	uint8_t nonce_base[WIRE_COOKIE_NONCE]; /* random, drawn at init */
	uint64_t sealed;                       /* Cookies sealed so far */
	/* Load: Inits past mac1 in the current one-second window, and in the last. */
	uint64_t window_at;
	unsigned count, last_count;
};

void cookie_checker_init(struct cookie_checker *c, const uint8_t our_pub[YIP_KEY_LEN]);
void cookie_checker_wipe(struct cookie_checker *c);

/*
 * Counts one Init that passed mac1 at now; true while more than threshold
 * came in the current second or the one before: then cookies are required.
 */
bool cookie_under_load(struct cookie_checker *c, uint64_t now, unsigned threshold);

/* Whether the Init d (len bytes, a valid Init's length) has a mac2 made with src's cookie. */
bool cookie_check(struct cookie_checker *c, uint64_t now, const struct cookie_source *src,
                  const uint8_t *d, size_t len);

/* Writes the Cookie message answering Init d (len bytes) from src into out
 * (WIRE_COOKIE_MSG bytes). */
void cookie_reply(struct cookie_checker *c, uint64_t now, const struct cookie_source *src,
                  const uint8_t *d, size_t len, uint8_t out[WIRE_COOKIE_MSG]);

/* The initiator's side, one per responder. */
struct cookie_jar {
	uint8_t open_key[YIP_KEY_LEN];
	uint8_t cookie[WIRE_COOKIE_LEN];
	uint64_t got; /* when it came; 0: none */
	uint8_t last_mac1[WIRE_MAC_LEN];
	bool sent; /* an Init went out, so last_mac1 is set */
};

void cookie_jar_init(struct cookie_jar *j, const uint8_t their_pub[YIP_KEY_LEN]);

/* Writes the mac2 of an Init of len bytes (zeros without a cookie younger
 * than COOKIE_KEEP) once its mac1 is in place, and notes that mac1. */
void cookie_jar_stamp(struct cookie_jar *j, uint64_t now, uint8_t *d, size_t len);

/* A Cookie message for the last Init: keeps its cookie; false if it does not open. */
bool cookie_jar_take(struct cookie_jar *j, uint64_t now, const struct wire_cookie *m);

#endif
