/*
 * Noise_IK_25519_ChaChaPoly_BLAKE2b (Noise specification revision 34):
 *
 *   <- s
 *   ...
 *   -> e, es, s, ss
 *   <- e, ee, se
 *
 * Error policy: every function that returns -1 has wiped the whole handshake
 * state first. A failed handshake cannot be resumed (h and ck may already
 * have absorbed the bad message), and wiping at once means no ephemeral or
 * chaining key outlives it. The caller starts again with noise_hs_init.
 */
#include "noise/noise.h"

#include <sodium.h>
#include <string.h>

/* Noise messages are at most 65535 bytes (section 3); this also keeps lengths in an int. */
#define NOISE_MAX_MSG 65535

/*
 * The header's state has no explicit phase, so the responder marks "s read,
 * ss not yet mixed" by parking n at this value. That is safe because the es
 * key is never used again after s: the next token, ss, replaces k and resets
 * n. It stops noise_write_msg2 from running on a half-read msg1, which would
 * skip the proof that the initiator holds its static key.
 */
#define N_AWAIT_SS UINT64_MAX

/* Offsets inside msg1: e, encrypted s (key + tag), encrypted payload. */
#define MSG1_S_OFF       YIP_KEY_LEN
#define MSG1_PAYLOAD_OFF (MSG1_S_OFF + YIP_KEY_LEN + YIP_AEAD_TAG)

static void mix_hash(struct noise_hs *hs, const uint8_t *data, size_t len)
{
	yip_hash2(hs->h, hs->h, YIP_HASH_LEN, data, len);
}

/* ck, temp_k = HKDF(ck, ikm, 2); k = temp_k truncated to 32 bytes; n = 0. */
static void mix_key(struct noise_hs *hs, const uint8_t *ikm, size_t len)
{
	uint8_t temp_k[YIP_HASH_LEN];

	yip_hkdf(hs->ck, temp_k, NULL, hs->ck, ikm, len);
	memcpy(hs->k, temp_k, YIP_KEY_LEN);
	hs->has_k = true;
	hs->n = 0;
	sodium_memzero(temp_k, sizeof(temp_k));
}

/* MixKey(DH(priv, pub)). Fails on a low-order public key. */
static int mix_dh(struct noise_hs *hs, const uint8_t priv[YIP_KEY_LEN],
                  const uint8_t pub[YIP_KEY_LEN])
{
	uint8_t dh[YIP_KEY_LEN];
	int ret = yip_dh(dh, priv, pub);

	if (ret == 0)
		mix_key(hs, dh, sizeof(dh));
	sodium_memzero(dh, sizeof(dh));
	return ret;
}

/*
 * EncryptAndHash: out = ENCRYPT(k, n++, h, p); MixHash(out). Without a key
 * Noise sends the plaintext; IK always has one by the time it encrypts.
 */
static void encrypt_and_hash(struct noise_hs *hs, uint8_t *out, const uint8_t *p, size_t plen)
{
	size_t clen = plen;

	if (hs->has_k) {
		yip_aead_seal(out, hs->k, hs->n++, hs->h, YIP_HASH_LEN, p, plen);
		clen += YIP_AEAD_TAG;
	} else if (plen) {
		memmove(out, p, plen);
	}
	mix_hash(hs, out, clen);
}

/*
 * DecryptAndHash. The new h is computed before decrypting so that the
 * ciphertext, not the plaintext, is hashed even if out overlaps c.
 */
static int decrypt_and_hash(struct noise_hs *hs, uint8_t *out, const uint8_t *c, size_t clen)
{
	uint8_t h_next[YIP_HASH_LEN];

	yip_hash2(h_next, hs->h, YIP_HASH_LEN, c, clen);
	if (hs->has_k) {
		if (yip_aead_open(out, hs->k, hs->n, hs->h, YIP_HASH_LEN, c, clen) != 0)
			return -1;
		hs->n++;
	} else if (clen) {
		memmove(out, c, clen);
	}
	memcpy(hs->h, h_next, YIP_HASH_LEN);
	return 0;
}

/* -> e / <- e, sending side: pick (or use the fixed) ephemeral and send it in clear. */
static int write_e(struct noise_hs *hs, uint8_t out[YIP_KEY_LEN])
{
	if (!hs->has_e) {
		yip_key_generate(hs->e_priv);
		hs->has_e = true;
	}
	if (yip_key_public(hs->e_pub, hs->e_priv) != 0)
		return -1;
	memcpy(out, hs->e_pub, YIP_KEY_LEN);
	mix_hash(hs, hs->e_pub, YIP_KEY_LEN);
	return 0;
}

static void read_e(struct noise_hs *hs, const uint8_t in[YIP_KEY_LEN])
{
	memcpy(hs->re, in, YIP_KEY_LEN);
	mix_hash(hs, hs->re, YIP_KEY_LEN);
}

static int fail(struct noise_hs *hs)
{
	noise_hs_wipe(hs);
	return -1;
}

void noise_hs_init(struct noise_hs *hs, bool initiator, const uint8_t *prologue,
                   size_t prologue_len, const uint8_t s_priv[YIP_KEY_LEN],
                   const uint8_t s_pub[YIP_KEY_LEN], const uint8_t *rs)
{
	static const char name[] = NOISE_PROTOCOL_NAME;

	_Static_assert(sizeof(name) - 1 <= YIP_HASH_LEN, "protocol name must fit in HASHLEN");

	sodium_memzero(hs, sizeof(*hs));
	hs->initiator = initiator;
	memcpy(hs->s_priv, s_priv, YIP_KEY_LEN);
	memcpy(hs->s_pub, s_pub, YIP_KEY_LEN);

	/* The name is short enough to be used directly, zero-padded to HASHLEN. */
	memcpy(hs->h, name, sizeof(name) - 1);
	memcpy(hs->ck, hs->h, YIP_HASH_LEN);
	mix_hash(hs, prologue, prologue_len);

	/*
	 * Pre-message "<- s": both sides hash the responder's static key. An
	 * initiator without rs keeps zeros there, and its es DH then fails.
	 */
	if (initiator) {
		if (rs)
			memcpy(hs->rs, rs, YIP_KEY_LEN);
		mix_hash(hs, hs->rs, YIP_KEY_LEN);
	} else {
		mix_hash(hs, hs->s_pub, YIP_KEY_LEN);
	}
}

void noise_hs_set_ephemeral(struct noise_hs *hs, const uint8_t e_priv[YIP_KEY_LEN])
{
	memcpy(hs->e_priv, e_priv, YIP_KEY_LEN);
	hs->has_e = true;
}

int noise_write_msg1(struct noise_hs *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                     size_t outcap)
{
	if (!hs->initiator || hs->has_k)
		return fail(hs);
	if (plen > NOISE_MAX_MSG - NOISE_MSG1_OVERHEAD || outcap < NOISE_MSG1_OVERHEAD + plen)
		return fail(hs);

	if (write_e(hs, out) != 0)
		return fail(hs);
	if (mix_dh(hs, hs->e_priv, hs->rs) != 0) /* es */
		return fail(hs);
	encrypt_and_hash(hs, out + MSG1_S_OFF, hs->s_pub, YIP_KEY_LEN); /* s */
	if (mix_dh(hs, hs->s_priv, hs->rs) != 0)                        /* ss */
		return fail(hs);
	encrypt_and_hash(hs, out + MSG1_PAYLOAD_OFF, payload, plen);
	return (int)(NOISE_MSG1_OVERHEAD + plen);
}

int noise_read_msg1_static(struct noise_hs *hs, const uint8_t *msg, size_t len,
                           uint8_t rs_out[YIP_KEY_LEN])
{
	uint8_t rs[YIP_KEY_LEN];

	/* A wiped state has a zero static key that anyone could "know". */
	if (hs->initiator || hs->has_k || sodium_is_zero(hs->s_priv, YIP_KEY_LEN))
		return fail(hs);
	if (len < NOISE_MSG1_OVERHEAD || len > NOISE_MAX_MSG)
		return fail(hs);

	read_e(hs, msg);
	if (mix_dh(hs, hs->s_priv, hs->re) != 0) /* es */
		return fail(hs);
	if (decrypt_and_hash(hs, rs, msg + MSG1_S_OFF, YIP_KEY_LEN + YIP_AEAD_TAG) != 0)
		return fail(hs);
	memcpy(hs->rs, rs, YIP_KEY_LEN);
	memcpy(rs_out, rs, YIP_KEY_LEN);
	sodium_memzero(hs->k, YIP_KEY_LEN); /* the es key has done its only job */
	hs->n = N_AWAIT_SS;
	return 0;
}

int noise_read_msg1_payload(struct noise_hs *hs, const uint8_t *msg, size_t len,
                            uint8_t *payload_out, size_t cap)
{
	size_t plen;

	if (hs->initiator || !hs->has_k || hs->n != N_AWAIT_SS)
		return fail(hs);
	if (len < NOISE_MSG1_OVERHEAD || len > NOISE_MAX_MSG)
		return fail(hs);
	plen = len - NOISE_MSG1_OVERHEAD;
	if (cap < plen)
		return fail(hs);

	if (mix_dh(hs, hs->s_priv, hs->rs) != 0) /* ss */
		return fail(hs);
	if (decrypt_and_hash(hs, payload_out, msg + MSG1_PAYLOAD_OFF, plen + YIP_AEAD_TAG) != 0)
		return fail(hs);
	return (int)plen;
}

int noise_write_msg2(struct noise_hs *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                     size_t outcap)
{
	/* Only after step 2: ss mixed and the payload key used once. */
	if (hs->initiator || !hs->has_k || hs->n != 1)
		return fail(hs);
	if (plen > NOISE_MAX_MSG - NOISE_MSG2_OVERHEAD || outcap < NOISE_MSG2_OVERHEAD + plen)
		return fail(hs);

	if (write_e(hs, out) != 0)
		return fail(hs);
	if (mix_dh(hs, hs->e_priv, hs->re) != 0) /* ee */
		return fail(hs);
	if (mix_dh(hs, hs->e_priv, hs->rs) != 0) /* se: initiator's s, our e */
		return fail(hs);
	encrypt_and_hash(hs, out + YIP_KEY_LEN, payload, plen);
	return (int)(NOISE_MSG2_OVERHEAD + plen);
}

int noise_read_msg2(struct noise_hs *hs, const uint8_t *msg, size_t len, uint8_t *payload_out,
                    size_t cap)
{
	size_t plen;

	/* After msg1: the ss key has encrypted exactly the payload. */
	if (!hs->initiator || !hs->has_k || hs->n != 1)
		return fail(hs);
	if (len < NOISE_MSG2_OVERHEAD || len > NOISE_MAX_MSG)
		return fail(hs);
	plen = len - NOISE_MSG2_OVERHEAD;
	if (cap < plen)
		return fail(hs);

	read_e(hs, msg);
	if (mix_dh(hs, hs->e_priv, hs->re) != 0) /* ee */
		return fail(hs);
	if (mix_dh(hs, hs->s_priv, hs->re) != 0) /* se: our s, responder's e */
		return fail(hs);
	if (decrypt_and_hash(hs, payload_out, msg + YIP_KEY_LEN, plen + YIP_AEAD_TAG) != 0)
		return fail(hs);
	return (int)plen;
}

void noise_split(struct noise_hs *hs, uint8_t send[YIP_KEY_LEN], uint8_t recv[YIP_KEY_LEN],
                 uint8_t *h_out)
{
	uint8_t k1[YIP_HASH_LEN], k2[YIP_HASH_LEN];

	yip_hkdf(k1, k2, NULL, hs->ck, NULL, 0);
	memcpy(hs->initiator ? send : recv, k1, YIP_KEY_LEN);
	memcpy(hs->initiator ? recv : send, k2, YIP_KEY_LEN);
	if (h_out)
		memcpy(h_out, hs->h, YIP_HASH_LEN);
	sodium_memzero(k1, sizeof(k1));
	sodium_memzero(k2, sizeof(k2));
	noise_hs_wipe(hs);
}

void noise_hs_wipe(struct noise_hs *hs)
{
	sodium_memzero(hs, sizeof(*hs));
}
