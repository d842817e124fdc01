/* The REALITY seal's plaintext, and where it sits in a ClientHello (see reality.h). */
#include "wire/reality.h"

#include <string.h>

/* A ClientHello: type (1), length (3), legacy_version (2), random (32),
 * then the session id's length and the session id. */
#define SID_LEN_AT 38

void wire_reality_seal_put(uint8_t out[WIRE_REALITY_PLAIN], const struct wire_reality_seal *s)
{
	out[0] = s->version;
	out[1] = out[2] = out[3] = 0;
	out[4] = (uint8_t)(s->unix_s >> 24);
	out[5] = (uint8_t)(s->unix_s >> 16);
	out[6] = (uint8_t)(s->unix_s >> 8);
	out[7] = (uint8_t)s->unix_s;
	memcpy(out + 8, s->short_id, WIRE_REALITY_SHORT_ID);
}

bool wire_reality_seal_get(struct wire_reality_seal *s, const uint8_t in[WIRE_REALITY_PLAIN])
{
	if (in[0] != WIRE_REALITY_VERSION || (in[1] | in[2] | in[3]) != 0)
		return false;
	s->version = in[0];
	s->unix_s = (uint32_t)in[4] << 24 | (uint32_t)in[5] << 16 | (uint32_t)in[6] << 8 | in[7];
	memcpy(s->short_id, in + 8, WIRE_REALITY_SHORT_ID);
	return true;
}

size_t wire_reality_sid_at(const uint8_t *msg, size_t len)
{
	if (len < SID_LEN_AT + 1 + WIRE_REALITY_SID || msg[0] != 1 ||
	    msg[SID_LEN_AT] != WIRE_REALITY_SID)
		return 0;
	return SID_LEN_AT + 1;
}
