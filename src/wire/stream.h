/*
 * Stream framing: yip datagrams in a byte stream (the plaintext of a TLS
 * link; docs/protocol.md, "Links over TCP"). Each frame is a 2-byte
 * little-endian length L, 1 <= L <= WIRE_STREAM_MAX, then L bytes: one
 * datagram exactly as it would travel in a UDP payload. Frames run back to
 * back with no other bytes; where TLS records begin and end says nothing
 * (a record may hold many frames, a frame may span records). A length of 0
 * or over WIRE_STREAM_MAX is a broken stream: the reader stops and the
 * connection is closed.
 */
#ifndef YIP_WIRE_STREAM_H
#define YIP_WIRE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_STREAM_HDR 2
#define WIRE_STREAM_MAX 16384 /* a datagram, at most: larger than any yip datagram */

/* Writes the header of a frame of len bytes (1..WIRE_STREAM_MAX). */
void wire_stream_put(uint8_t out[WIRE_STREAM_HDR], size_t len);

/* A reader's state: the frame being put together across reads. */
struct wire_stream_rx {
	uint8_t hdr[WIRE_STREAM_HDR];
	uint8_t hdr_have; /* header bytes seen of the current frame */
	bool broken;      /* a bad length was read; nothing more is taken */
	uint16_t need;    /* the current frame's length, once its header is whole */
	uint16_t have;    /* body bytes of it in buf */
	uint64_t frames;  /* whole frames handed on */
	uint8_t buf[WIRE_STREAM_MAX];
};

typedef void wire_stream_fn(void *arg, const uint8_t *d, size_t len);

void wire_stream_rx_init(struct wire_stream_rx *r);

/*
 * Takes len bytes of the stream and calls fn for each frame they complete,
 * in order (a frame wholly inside in is passed in place, not copied).
 * Returns 0, or -1 once the stream is broken (a length of 0 or over
 * WIRE_STREAM_MAX); the frames before the bad length were handed on.
 */
int wire_stream_feed(struct wire_stream_rx *r, const uint8_t *in, size_t len, wire_stream_fn *fn,
                     void *arg);

#endif
