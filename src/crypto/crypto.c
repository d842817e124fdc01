#include "crypto/crypto.h"

#include <sodium.h>
#include <string.h>

/* BLAKE2b's block length: the HMAC key is zero-padded to this many bytes. */
#define HMAC_BLOCK_LEN 128

/* Version label used as the BLAKE2b key in address derivation. */
static const char addr_label[] = "yip-addr-v1";

int yip_crypto_init(void)
{
	/* sodium_init returns 1 when it was already initialised. */
	return sodium_init() < 0 ? -1 : 0;
}

void yip_key_generate(uint8_t priv[YIP_KEY_LEN])
{
	randombytes_buf(priv, YIP_KEY_LEN);
	/* Clamp as RFC 7748 does, so the stored key is canonical. */
	priv[0] &= 248;
	priv[31] &= 127;
	priv[31] |= 64;
}

int yip_key_public(uint8_t pub[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN])
{
	/*
	 * An all-zero key is what an unset or wiped buffer looks like; refuse
	 * it rather than silently derive a public key from it.
	 */
	if (sodium_is_zero(priv, YIP_KEY_LEN))
		return -1;
	return crypto_scalarmult_base(pub, priv) == 0 ? 0 : -1;
}

int yip_dh(uint8_t out[YIP_KEY_LEN], const uint8_t priv[YIP_KEY_LEN],
           const uint8_t pub[YIP_KEY_LEN])
{
	/* libsodium rejects an all-zero result, i.e. a low-order public key. */
	if (crypto_scalarmult(out, priv, pub) != 0) {
		sodium_memzero(out, YIP_KEY_LEN);
		return -1;
	}
	return 0;
}

/* out may alias a or b: both are absorbed before out is written. */
void yip_hash2(uint8_t out[YIP_HASH_LEN], const uint8_t *a, size_t alen, const uint8_t *b,
               size_t blen)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, YIP_HASH_LEN);
	crypto_generichash_update(&st, a, alen);
	if (blen)
		crypto_generichash_update(&st, b, blen);
	crypto_generichash_final(&st, out, YIP_HASH_LEN);
	sodium_memzero(&st, sizeof(st));
}

/*
 * HMAC (RFC 2104) over BLAKE2b-512 with a 128-byte block, as Noise defines
 * it. Keys are at most HASHLEN bytes, so they are only ever padded, never
 * hashed. out may alias key or data.
 */
void yip_hmac(uint8_t out[YIP_HASH_LEN], const uint8_t *key, size_t keylen, const uint8_t *data,
              size_t len)
{
	uint8_t pad[HMAC_BLOCK_LEN];
	uint8_t inner[YIP_HASH_LEN];
	size_t i;

	if (keylen > YIP_HASH_LEN)
		keylen = YIP_HASH_LEN; /* contract violation: never read past 64 */

	memset(pad, 0, sizeof(pad));
	memcpy(pad, key, keylen);
	for (i = 0; i < sizeof(pad); i++)
		pad[i] ^= 0x36;
	yip_hash2(inner, pad, sizeof(pad), data, len);

	/* 0x36 ^ 0x5c turns the inner pad into the outer pad. */
	for (i = 0; i < sizeof(pad); i++)
		pad[i] ^= 0x36 ^ 0x5c;
	yip_hash2(out, pad, sizeof(pad), inner, sizeof(inner));

	sodium_memzero(pad, sizeof(pad));
	sodium_memzero(inner, sizeof(inner));
}

/*
 * Noise HKDF (section 4.3):
 *   temp_key = HMAC(ck, ikm)
 *   out1 = HMAC(temp_key, 0x01)
 *   out2 = HMAC(temp_key, out1 || 0x02)
 *   out3 = HMAC(temp_key, out2 || 0x03)
 * ck is consumed first, so out1 may alias ck (MixKey writes ck in place).
 */
void yip_hkdf(uint8_t out1[YIP_HASH_LEN], uint8_t out2[YIP_HASH_LEN], uint8_t *out3,
              const uint8_t ck[YIP_HASH_LEN], const uint8_t *ikm, size_t ikmlen)
{
	uint8_t temp_key[YIP_HASH_LEN];
	uint8_t buf[YIP_HASH_LEN + 1];

	yip_hmac(temp_key, ck, YIP_HASH_LEN, ikm, ikmlen);

	buf[0] = 0x01;
	yip_hmac(buf, temp_key, sizeof(temp_key), buf, 1);
	memcpy(out1, buf, YIP_HASH_LEN);

	buf[YIP_HASH_LEN] = 0x02;
	yip_hmac(buf, temp_key, sizeof(temp_key), buf, sizeof(buf));
	memcpy(out2, buf, YIP_HASH_LEN);

	if (out3) {
		buf[YIP_HASH_LEN] = 0x03;
		yip_hmac(out3, temp_key, sizeof(temp_key), buf, sizeof(buf));
	}

	sodium_memzero(temp_key, sizeof(temp_key));
	sodium_memzero(buf, sizeof(buf));
}

_Static_assert(YIP_AEAD_NONCE == crypto_aead_chacha20poly1305_ietf_NPUBBYTES, "the nonce length");

/* Noise's ChaChaPoly nonce: 32 zero bits, then the counter little-endian. */
static void aead_nonce(uint8_t npub[crypto_aead_chacha20poly1305_ietf_NPUBBYTES], uint64_t n)
{
	size_t i;

	memset(npub, 0, 4);
	for (i = 0; i < 8; i++)
		npub[4 + i] = (uint8_t)(n >> (8 * i));
}

void yip_aead_seal_nonce(uint8_t *c, const uint8_t key[YIP_KEY_LEN],
                         const uint8_t nonce[YIP_AEAD_NONCE], const uint8_t *ad, size_t adlen,
                         const uint8_t *m, size_t mlen)
{
	crypto_aead_chacha20poly1305_ietf_encrypt(c, NULL, m, mlen, ad, adlen, NULL, nonce, key);
}

int yip_aead_open_nonce(uint8_t *m, const uint8_t key[YIP_KEY_LEN],
                        const uint8_t nonce[YIP_AEAD_NONCE], const uint8_t *ad, size_t adlen,
                        const uint8_t *c, size_t clen)
{
	if (clen < YIP_AEAD_TAG)
		return -1;
	/* On failure libsodium zeroes m rather than leave forged plaintext. */
	if (crypto_aead_chacha20poly1305_ietf_decrypt(m, NULL, NULL, c, clen, ad, adlen, nonce,
	                                              key) != 0)
		return -1;
	return 0;
}

void yip_aead_seal(uint8_t *c, const uint8_t key[YIP_KEY_LEN], uint64_t nonce, const uint8_t *ad,
                   size_t adlen, const uint8_t *m, size_t mlen)
{
	uint8_t npub[YIP_AEAD_NONCE];

	aead_nonce(npub, nonce);
	yip_aead_seal_nonce(c, key, npub, ad, adlen, m, mlen);
}

int yip_aead_open(uint8_t *m, const uint8_t key[YIP_KEY_LEN], uint64_t nonce, const uint8_t *ad,
                  size_t adlen, const uint8_t *c, size_t clen)
{
	uint8_t npub[YIP_AEAD_NONCE];

	aead_nonce(npub, nonce);
	return yip_aead_open_nonce(m, key, npub, ad, adlen, c, clen);
}

bool yip_cipher_available(enum yip_cipher c)
{
	switch (c) {
	case YIP_CIPHER_CHACHA20_POLY1305:
		return true;
	case YIP_CIPHER_AES256_GCM:
		return crypto_aead_aes256gcm_is_available() == 1;
	default:
		return false;
	}
}

const char *yip_cipher_name(unsigned c)
{
	switch (c) {
	case YIP_CIPHER_CHACHA20_POLY1305:
		return "chacha20-poly1305";
	case YIP_CIPHER_AES256_GCM:
		return "aes-256-gcm";
	default:
		return "?";
	}
}

void yip_cipher_key_set(struct yip_cipher_key *k, enum yip_cipher c, const uint8_t key[YIP_KEY_LEN])
{
	memmove(k->key, key, YIP_KEY_LEN);
	k->cipher = (uint8_t)c;
	if (c == YIP_CIPHER_AES256_GCM)
		crypto_aead_aes256gcm_beforenm(&k->aes, k->key);
	else
		sodium_memzero(&k->aes, sizeof(k->aes));
}

bool yip_cipher_key_eq(const struct yip_cipher_key *a, const struct yip_cipher_key *b)
{
	return a->cipher == b->cipher && sodium_memcmp(a->key, b->key, YIP_KEY_LEN) == 0;
}

void yip_cipher_seal(uint8_t *c, const struct yip_cipher_key *k, uint64_t nonce, const uint8_t *ad,
                     size_t adlen, const uint8_t *m, size_t mlen)
{
	uint8_t npub[crypto_aead_aes256gcm_NPUBBYTES];

	if (k->cipher != YIP_CIPHER_AES256_GCM) {
		yip_aead_seal(c, k->key, nonce, ad, adlen, m, mlen);
		return;
	}
	aead_nonce(npub, nonce);
	crypto_aead_aes256gcm_encrypt_afternm(c, NULL, m, mlen, ad, adlen, NULL, npub, &k->aes);
}

int yip_cipher_open(uint8_t *m, const struct yip_cipher_key *k, uint64_t nonce, const uint8_t *ad,
                    size_t adlen, const uint8_t *c, size_t clen)
{
	uint8_t npub[crypto_aead_aes256gcm_NPUBBYTES];

	if (k->cipher != YIP_CIPHER_AES256_GCM)
		return yip_aead_open(m, k->key, nonce, ad, adlen, c, clen);
	if (clen < YIP_AEAD_TAG)
		return -1;
	aead_nonce(npub, nonce);
	/* On failure libsodium zeroes m, which must therefore not overlap c
	 * when the caller still needs the ciphertext. */
	if (crypto_aead_aes256gcm_decrypt_afternm(m, NULL, NULL, c, clen, ad, adlen, npub,
	                                          &k->aes) != 0)
		return -1;
	return 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void yip_tai64n(uint8_t out[YIP_TAI64N_LEN], uint64_t unix_ns)
{
	/* 2^62 + seconds: TAI64's label for times after 1970. */
	uint64_t secs = (1ULL << 62) + unix_ns / 1000000000ULL;
	uint32_t nsec = (uint32_t)(unix_ns % 1000000000ULL);

	put_be32(out, (uint32_t)(secs >> 32));
	put_be32(out + 4, (uint32_t)secs);
	put_be32(out + 8, nsec);
}

bool yip_tai64n_fresh(const uint8_t ts[YIP_TAI64N_LEN], uint64_t unix_ns, uint64_t max_age_ns)
{
	uint8_t oldest[YIP_TAI64N_LEN];

	yip_tai64n(oldest, unix_ns > max_age_ns ? unix_ns - max_age_ns : 0);
	return memcmp(ts, oldest, YIP_TAI64N_LEN) >= 0;
}

void yip_addr_from_public(uint8_t addr[YIP_ADDR_LEN], const uint8_t pub[YIP_KEY_LEN])
{
	addr[0] = 0xfd;
	/* BLAKE2b with digest length 15 as a parameter (libsodium allows 1..64). */
	crypto_generichash(addr + 1, YIP_ADDR_LEN - 1, pub, YIP_KEY_LEN,
	                   (const unsigned char *)addr_label, sizeof(addr_label) - 1);
}

bool yip_ct_eq(const uint8_t *a, const uint8_t *b, size_t len)
{
	return sodium_memcmp(a, b, len) == 0;
}
