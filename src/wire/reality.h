/*
 * The REALITY seal on the wire (docs/protocol.md, "The REALITY seal"): a
 * yip node that dials a REALITY front hides 16 bytes, sealed to the
 * front's key, in the 32-byte legacy_session_id of an otherwise ordinary
 * ClientHello (16 bytes of ciphertext, then the 16-byte tag). The
 * plaintext, big-endian as TLS is:
 *
 *   0      version (WIRE_REALITY_VERSION)
 *   1..3   reserved, zero
 *   4..7   the client's clock, Unix seconds
 *   8..15  the short id (the operator's hex, zero-padded on the right)
 *
 * What seals it, and what else it binds, is src/reality.
 */
#ifndef YIP_WIRE_REALITY_H
#define YIP_WIRE_REALITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_REALITY_PLAIN    16
#define WIRE_REALITY_SID      32 /* the legacy_session_id: the plaintext sealed, and its tag */
#define WIRE_REALITY_SHORT_ID 8
#define WIRE_REALITY_VERSION  1

struct wire_reality_seal {
	uint8_t version;
	uint32_t unix_s;
	uint8_t short_id[WIRE_REALITY_SHORT_ID];
};

void wire_reality_seal_put(uint8_t out[WIRE_REALITY_PLAIN], const struct wire_reality_seal *s);
/* False if the reserved bytes are not zero or the version is not one this side reads. */
bool wire_reality_seal_get(struct wire_reality_seal *s, const uint8_t in[WIRE_REALITY_PLAIN]);

/*
 * Where a ClientHello handshake message (its 4-byte header first) holds a
 * legacy_session_id of WIRE_REALITY_SID bytes: that field's offset, or 0
 * if the message is too short or its session id has another length.
 */
size_t wire_reality_sid_at(const uint8_t *msg, size_t len);

#endif
