/*
 * yip's datagram formats (see docs/protocol.md). Every datagram starts with a
 * 4-byte little-endian word whose low byte is the message type and whose upper
 * three bytes are zero. Multi-byte fields are little-endian.
 *
 *   Init  (132 B): type=1 | sender_index u32 | noise msg1 (e 32, s 48, ts 28) | mac1 16
 *   Resp  ( 76 B): type=2 | sender_index u32 | receiver_index u32 | noise msg2 (e 32, 16) | mac1 16
 *   Data  (32+ B): type=4 | receiver_index u32 | counter u64 | AEAD(inner packet) (n + 16)
 *
 * mac1 = BLAKE2b(outlen 16, key = BLAKE2b-256("yip-mac1-v1" || receiver static public key),
 *                message = every byte of the datagram before mac1).
 * It lets a receiver drop datagrams from anyone who does not know its public
 * key before doing any Diffie-Hellman work.
 */
#ifndef YIP_WIRE_WIRE_H
#define YIP_WIRE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/crypto.h"
#include "noise/noise.h"

enum wire_type {
	WIRE_INIT = 1,
	WIRE_RESP = 2,
	WIRE_DATA = 4,
};

#define WIRE_MAC_LEN      16
#define WIRE_INIT_PAYLOAD YIP_TAI64N_LEN
#define WIRE_MSG1_LEN     (NOISE_MSG1_OVERHEAD + WIRE_INIT_PAYLOAD)
#define WIRE_MSG2_LEN     NOISE_MSG2_OVERHEAD
#define WIRE_INIT_LEN     (4 + 4 + WIRE_MSG1_LEN + WIRE_MAC_LEN)
#define WIRE_RESP_LEN     (4 + 4 + 4 + WIRE_MSG2_LEN + WIRE_MAC_LEN)
#define WIRE_DATA_HDR     16
#define WIRE_DATA_MIN     (WIRE_DATA_HDR + YIP_AEAD_TAG)
#define WIRE_OVERHEAD     WIRE_DATA_MIN /* bytes a data datagram adds to an inner packet */

/* Offsets inside the fixed-layout messages. */
#define WIRE_INIT_MSG1 8
#define WIRE_RESP_MSG2 12

static inline void wire_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void wire_put64(uint8_t *p, uint64_t v)
{
	wire_put32(p, (uint32_t)v);
	wire_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t wire_get64(const uint8_t *p)
{
	return (uint64_t)wire_get32(p) | (uint64_t)wire_get32(p + 4) << 32;
}

/*
 * Classifies a datagram by its first word and length. Returns the wire_type,
 * or 0 if the datagram is malformed (unknown type, non-zero reserved bytes,
 * wrong length for its type).
 */
int wire_classify(const uint8_t *d, size_t len);

/* The mac1 key for messages sent to the owner of public key pub. */
void wire_mac1_key(uint8_t key[YIP_KEY_LEN], const uint8_t pub[YIP_KEY_LEN]);

/* Writes mac1 into the last WIRE_MAC_LEN bytes of msg (len includes them). */
void wire_mac1_put(uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN]);

/* Checks the mac1 in the last WIRE_MAC_LEN bytes of msg in constant time. */
bool wire_mac1_ok(const uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN]);

/* Data header: type word, receiver index, counter. */
static inline void wire_data_header(uint8_t *d, uint32_t receiver, uint64_t counter)
{
	wire_put32(d, WIRE_DATA);
	wire_put32(d + 4, receiver);
	wire_put64(d + 8, counter);
}

#endif
