/* Stream framing (stream.h). */
#include "wire/stream.h"

#include <string.h>

void wire_stream_put(uint8_t out[WIRE_STREAM_HDR], size_t len)
{
	out[0] = (uint8_t)(len & 0xff);
	out[1] = (uint8_t)(len >> 8);
}

void wire_stream_rx_init(struct wire_stream_rx *r)
{
	r->hdr_have = 0;
	r->broken = false;
	r->need = 0;
	r->have = 0;
	r->frames = 0;
}

int wire_stream_feed(struct wire_stream_rx *r, const uint8_t *in, size_t len, wire_stream_fn *fn,
                     void *arg)
{
	if (r->broken)
		return -1;
	while (len > 0) {
		size_t take;

		if (r->hdr_have < WIRE_STREAM_HDR) {
			r->hdr[r->hdr_have++] = *in++;
			len--;
			if (r->hdr_have < WIRE_STREAM_HDR)
				continue;
			r->need = (uint16_t)(r->hdr[0] | (unsigned)r->hdr[1] << 8);
			r->have = 0;
			if (r->need == 0 || r->need > WIRE_STREAM_MAX) {
				r->broken = true;
				return -1;
			}
			/* The whole frame is here: hand it on in place. */
			if (len >= r->need) {
				fn(arg, in, r->need);
				r->frames++;
				in += r->need;
				len -= r->need;
				r->hdr_have = 0;
			}
			continue;
		}
		take = r->need - r->have;
		if (take > len)
			take = len;
		memcpy(r->buf + r->have, in, take);
		r->have = (uint16_t)(r->have + take);
		in += take;
		len -= take;
		if (r->have == r->need) {
			fn(arg, r->buf, r->need);
			r->frames++;
			r->hdr_have = 0;
		}
	}
	return 0;
}
