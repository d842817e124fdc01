/*
 * yip's datagram formats (see docs/protocol.md). Every datagram starts with a
 * type byte and three bytes whose meaning depends on the type (zero for
 * handshakes and reports). Multi-byte fields are little-endian.
 *
 *   Init   (132 B): 1 0 0 0 | sender_index u32 | noise msg1 (e 32, s 48, ts 28) | mac1 16
 *   Resp   ( 76 B): 2 0 0 0 | sender_index u32 | receiver_index u32 | msg2 (e 32, 16) | mac1 16
 *   Data   (32+ B): 4 idx block16 | receiver_index u32 | counter u64 | AEAD(inner packet)
 *   Repair (34+ B): 5 idx block16 | receiver_index u32 | counter u64 | AEAD(k, r, symbol)
 *   Report (32+ B): 6 0 0 0 | receiver_index u32 | counter u64 | AEAD(loss report)
 *
 * The 16-byte header of Data, Repair and Report is the AEAD's associated data.
 * Data's idx is the packet's position in FEC block `block`, WIRE_FEC_NONE when
 * it is in no block, WIRE_FEC_ARQ for a retransmission.
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
	WIRE_REPAIR = 5,
	WIRE_REPORT = 6,
};

#define WIRE_FEC_NONE 0xff
#define WIRE_FEC_ARQ  0xfe

#define WIRE_MAC_LEN      16
#define WIRE_INIT_PAYLOAD (YIP_TAI64N_LEN + 1) /* timestamp, ciphers offered */
#define WIRE_RESP_PAYLOAD 1                    /* the cipher chosen */
#define WIRE_MSG1_LEN     (NOISE_MSG1_OVERHEAD + WIRE_INIT_PAYLOAD)
#define WIRE_MSG2_LEN     (NOISE_MSG2_OVERHEAD + WIRE_RESP_PAYLOAD)
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

/* Header of Data, Repair and Report: type, FEC index and block, receiver index, counter. */
static inline void wire_data_header(uint8_t *d, uint8_t type, uint8_t idx, uint16_t block,
                                    uint32_t receiver, uint64_t counter)
{
	d[0] = type;
	d[1] = idx;
	d[2] = (uint8_t)block;
	d[3] = (uint8_t)(block >> 8);
	wire_put32(d + 4, receiver);
	wire_put64(d + 8, counter);
}

static inline uint16_t wire_block(const uint8_t *d)
{
	return (uint16_t)(d[2] | d[3] << 8);
}

#endif
