/*
 * Cryptographic primitives, all from libsodium: X25519, ChaCha20-Poly1305
 * (IETF, 96-bit nonce), AES-256-GCM and BLAKE2b. Noise's HMAC/HKDF over
 * BLAKE2b are built here from crypto_generichash, as the Noise specification
 * defines them. The handshake always uses ChaCha20-Poly1305; the data
 * cipher of a session is negotiated (see struct yip_cipher_key).
 */
#ifndef YIP_CRYPTO_CRYPTO_H
#define YIP_CRYPTO_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium/crypto_aead_aes256gcm.h>

#define YIP_KEY_LEN    32 /* X25519 keys and AEAD keys */
#define YIP_HASH_LEN   64 /* BLAKE2b-512, Noise HASHLEN */
#define YIP_AEAD_TAG   16
#define YIP_TAI64N_LEN 12
#define YIP_ADDR_LEN   16

/* sodium_init(); returns 0 on success. Safe to call more than once. */
int yip_crypto_init(void);

/* A fresh random X25519 private key (clamped). */
void yip_key_generate(uint8_t priv[YIP_KEY_LEN]);

/* pub = X25519(priv, 9). Returns -1 if priv is all zeros. */
int yip_key_public(uint8_t pub[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN]);

/* out = X25519(priv, pub). Returns -1 if the result is all zeros (low-order point). */
int yip_dh(uint8_t out[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN],
           const uint8_t pub[YIP_KEY_LEN]);

/* out = BLAKE2b-512(a || b); b may be NULL when blen is 0. */
void yip_hash2(uint8_t out[YIP_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
               size_t blen);

/* HMAC-BLAKE2b (block length 128) as in the Noise specification. keylen <= 64. */
void yip_hmac(uint8_t out[YIP_HASH_LEN], const uint8_t *key, size_t keylen, const uint8_t *data,
              size_t len);

/*
 * Noise HKDF(chaining_key, ikm, n): writes n (2 or 3) outputs of HASHLEN bytes.
 * out3 may be NULL for n = 2.
 */
void yip_hkdf(uint8_t out1[YIP_HASH_LEN], uint8_t out2[YIP_HASH_LEN], uint8_t *out3,
              const uint8_t ck[YIP_HASH_LEN], const uint8_t *ikm, size_t ikmlen);

/*
 * ChaCha20-Poly1305 with the Noise nonce encoding (32 zero bits, then the
 * 64-bit counter little-endian). seal writes mlen + 16 bytes to c; c may equal m.
 * open writes clen - 16 bytes to m and returns 0, or -1 if authentication fails
 * or clen < 16; m may equal c.
 */
void yip_aead_seal(uint8_t *c, const uint8_t key[YIP_KEY_LEN], uint64_t nonce, const uint8_t *ad,
                   size_t adlen, const uint8_t *m, size_t mlen);
int yip_aead_open(uint8_t *m, const uint8_t key[YIP_KEY_LEN], uint64_t nonce, const uint8_t *ad,
                  size_t adlen, const uint8_t *c, size_t clen);

/* The same AEAD with a 96-bit nonce of the caller's (the REALITY seal's). */
#define YIP_AEAD_NONCE 12
void yip_aead_seal_nonce(uint8_t *c, const uint8_t key[YIP_KEY_LEN],
                         const uint8_t nonce[YIP_AEAD_NONCE], const uint8_t *ad, size_t adlen,
                         const uint8_t *m, size_t mlen);
int yip_aead_open_nonce(uint8_t *m, const uint8_t key[YIP_KEY_LEN],
                        const uint8_t nonce[YIP_AEAD_NONCE], const uint8_t *ad, size_t adlen,
                        const uint8_t *c, size_t clen);

/*
 * Data ciphers a session can use. Both take a 32-byte key, a 96-bit nonce
 * (the same encoding as above) and append a 16-byte tag.
 */
enum yip_cipher { YIP_CIPHER_CHACHA20_POLY1305 = 0, YIP_CIPHER_AES256_GCM = 1, YIP_CIPHER_COUNT };

#define YIP_CIPHER_BIT(c) (1u << (c))

/*
 * A session key with its cipher. For AES-256-GCM the expanded key schedule
 * is kept too, so sealing a packet does not redo it. Wipe with
 * sodium_memzero over the whole struct.
 */
struct yip_cipher_key {
	crypto_aead_aes256gcm_state aes; /* AES-256-GCM only; 16-byte aligned */
	uint8_t key[YIP_KEY_LEN];
	uint8_t cipher; /* enum yip_cipher */
};

/* Whether this CPU runs the cipher (AES-256-GCM needs AES-NI and CLMUL). */
bool yip_cipher_available(enum yip_cipher c);

/* "chacha20-poly1305" or "aes-256-gcm" ("?" for anything else). */
const char *yip_cipher_name(unsigned c);

/* Sets k to key under cipher c; key may point into k. c must be available. */
void yip_cipher_key_set(struct yip_cipher_key *k, enum yip_cipher c,
                        const uint8_t key[YIP_KEY_LEN]);

/* Same cipher and key, compared in constant time. */
bool yip_cipher_key_eq(const struct yip_cipher_key *a, const struct yip_cipher_key *b);

/* As yip_aead_seal / yip_aead_open, under k's cipher. */
void yip_cipher_seal(uint8_t *c, const struct yip_cipher_key *k, uint64_t nonce, const uint8_t *ad,
                     size_t adlen, const uint8_t *m, size_t mlen);
int yip_cipher_open(uint8_t *m, const struct yip_cipher_key *k, uint64_t nonce, const uint8_t *ad,
                    size_t adlen, const uint8_t *c, size_t clen);

/*
 * TAI64N label of a wall-clock time in nanoseconds since the Unix epoch:
 * 8 bytes big-endian (2^62 + seconds) then 4 bytes big-endian nanoseconds.
 * Labels compare correctly with memcmp.
 */
void yip_tai64n(uint8_t out[YIP_TAI64N_LEN], uint64_t unix_ns);

/* True if label ts is no older than max_age_ns before the wall-clock time
 * unix_ns (a label from the future is fresh). */
bool yip_tai64n_fresh(const uint8_t ts[YIP_TAI64N_LEN], uint64_t unix_ns, uint64_t max_age_ns);

/*
 * Self-certifying node address in fd00::/8:
 *   addr[0]    = 0xfd
 *   addr[1..15] = BLAKE2b(outlen = 15, key = "yip-addr-v1", message = public key)
 * (keyed BLAKE2b with the version label as the key; digest length 15 is a
 * BLAKE2b parameter, not a truncation).
 */
void yip_addr_from_public(uint8_t addr[YIP_ADDR_LEN], const uint8_t pub[YIP_KEY_LEN]);

/* Constant-time equality of two byte strings of the same length. */
bool yip_ct_eq(const uint8_t *a, const uint8_t *b, size_t len);

#endif
