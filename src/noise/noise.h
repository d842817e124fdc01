/*
 * Noise_IK_25519_ChaChaPoly_BLAKE2b handshake state machine. Pure: no I/O,
 * no clocks, no allocation. The responder side runs in two steps so the
 * caller can look the initiator's static key up (and refuse strangers)
 * before paying for the second DH:
 *
 *   initiator                         responder
 *   noise_hs_init(initiator=true)     noise_hs_init(initiator=false, rs=NULL)
 *   noise_write_msg1  ---- msg1 --->  noise_read_msg1_static  (e, es, s)
 *                                     ... caller checks the returned static key ...
 *                                     noise_read_msg1_payload (ss, payload)
 *                     <--- msg2 ----  noise_write_msg2        (e, ee, se, payload)
 *   noise_read_msg2                   noise_split / noise_split
 *
 * Message sizes: msg1 = 32 + 48 + payload + 16; msg2 = 32 + payload + 16.
 */
#ifndef YIP_NOISE_NOISE_H
#define YIP_NOISE_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/crypto.h"

#define NOISE_PROTOCOL_NAME "Noise_IK_25519_ChaChaPoly_BLAKE2b"
#define NOISE_MSG1_OVERHEAD (32 + 32 + 16 + 16)
#define NOISE_MSG2_OVERHEAD (32 + 16)

struct noise_hs {
	bool initiator;
	bool has_k;
	bool has_e;
	uint64_t n;
	uint8_t ck[YIP_HASH_LEN];
	uint8_t h[YIP_HASH_LEN];
	uint8_t k[YIP_KEY_LEN];
	uint8_t s_priv[YIP_KEY_LEN];
	uint8_t s_pub[YIP_KEY_LEN];
	uint8_t e_priv[YIP_KEY_LEN];
	uint8_t e_pub[YIP_KEY_LEN];
	uint8_t rs[YIP_KEY_LEN];
	uint8_t re[YIP_KEY_LEN];
};

/*
 * Initialise with the protocol name and prologue, and mix in the responder's
 * static key (pre-message "<- s"). The initiator passes rs = the responder's
 * public key; the responder passes rs = NULL (its own s_pub is mixed in).
 */
void noise_hs_init(struct noise_hs *hs, bool initiator, const uint8_t *prologue,
                   size_t prologue_len, const uint8_t s_priv[YIP_KEY_LEN],
                   const uint8_t s_pub[YIP_KEY_LEN], const uint8_t *rs);

/* Use a fixed ephemeral key instead of a random one (test vectors only). */
void noise_hs_set_ephemeral(struct noise_hs *hs, const uint8_t e_priv[YIP_KEY_LEN]);

/* Initiator: writes msg1 (NOISE_MSG1_OVERHEAD + plen bytes) to out. Returns length or -1. */
int noise_write_msg1(struct noise_hs *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                     size_t outcap);

/*
 * Responder, step 1: processes e, es, s. On success copies the initiator's
 * static key to rs_out and returns 0; returns -1 if msg1 is malformed or s
 * does not decrypt.
 */
int noise_read_msg1_static(struct noise_hs *hs, const uint8_t *msg, size_t len,
                           uint8_t rs_out[YIP_KEY_LEN]);

/*
 * Responder, step 2: processes ss and decrypts the payload into payload_out.
 * Returns the payload length, or -1.
 */
int noise_read_msg1_payload(struct noise_hs *hs, const uint8_t *msg, size_t len,
                            uint8_t *payload_out, size_t cap);

/* Responder: writes msg2 to out. Returns length or -1. */
int noise_write_msg2(struct noise_hs *hs, const uint8_t *payload, size_t plen, uint8_t *out,
                     size_t outcap);

/* Initiator: reads msg2, returns payload length or -1. */
int noise_read_msg2(struct noise_hs *hs, const uint8_t *msg, size_t len, uint8_t *payload_out,
                    size_t cap);

/*
 * Split() after the handshake: the initiator sends with the first key and
 * receives with the second, the responder the reverse. Also returns the
 * handshake hash if h_out is not NULL. Wipes the handshake state.
 */
void noise_split(struct noise_hs *hs, uint8_t send[YIP_KEY_LEN], uint8_t recv[YIP_KEY_LEN],
                 uint8_t *h_out);

/* sodium_memzero the whole state. */
void noise_hs_wipe(struct noise_hs *hs);

#endif
