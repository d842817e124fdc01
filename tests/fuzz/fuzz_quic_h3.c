/*
 * The QUIC listener's HTTP/3 decoy (quic/h3.h) on any stream bytes: the
 * input is a run of records, each a stream event for one of five request
 * streams or three unidirectional ones (bytes in, with or without fin; a
 * reset; a close; an ack), and after each one everything the decoy has to
 * send is taken and acked. It must not crash or leak, consume no more than
 * it was given, answer no more than the requests it took, and once it says
 * the connection is over it is not fed again.
 *
 * A record: op (bits 0-2 the stream, bit 3 fin, bits 4-5 what happens), a
 * 16-bit little-endian length, then that many bytes (fewer at the end).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "quic/h3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hooked;

static void hook(void *ctx, int64_t sid, uint64_t code)
{
	(void)ctx;
	(void)sid;
	(void)code;
	hooked++;
}

static int64_t sid_of(unsigned i)
{
	return i < 5 ? (int64_t)(4 * i) : (int64_t)(2 + 4 * (i - 5));
}

/* Takes and acks all the decoy has to send; false if it failed the connection. */
static bool drain(struct yip_h3 *h)
{
	for (int round = 0; round < 256; round++) {
		struct yip_h3_vec v[8];
		int64_t sid;
		bool fin;
		size_t len = 0;
		int k = yip_h3_writev(h, &sid, &fin, v, 8);

		if (k < 0)
			return false;
		if (sid < 0)
			return true;
		CHECK(sid == 3 || sid == 7 || sid == 11 || sid % 4 == 0);
		for (int i = 0; i < k; i++) {
			CHECK(v[i].base != NULL || v[i].len == 0);
			len += v[i].len;
		}
		if (yip_h3_written(h, sid, len) != 0 || yip_h3_acked(h, sid, len) != 0)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct yip_h3_hooks hooks = {
	    .consumed = hook, .stop_sending = hook, .reset_stream = hook};
	struct yip_h3_stats st;
	struct yip_h3 *h;
	bool alive = true;

	memset(&st, 0, sizeof(st));
	h = yip_h3_new(&hooks, &st);
	CHECK(h != NULL);
	CHECK(yip_h3_bind(h, 3, 7, 11) == 0);
	alive = drain(h);
	for (size_t off = 0; alive && off + 3 <= size;) {
		unsigned op = data[off];
		size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		int64_t sid = sid_of(op & 7);
		bool fin = (op & 8) != 0;

		off += 3;
		if (len > size - off)
			len = size - off;
		switch ((op >> 4) & 3) {
		case 0:
		case 1: {
			int64_t n = yip_h3_read(h, sid, data + off, len, fin, 1764633600u);

			if (n < 0)
				alive = false;
			else
				CHECK((uint64_t)n <= len);
			break;
		}
		case 2:
			(void)yip_h3_reset(h, sid); /* a stream nghttp3 lacks is no harm */
			break;
		default:
			if (yip_h3_closed(h, sid, 0x100) != 0)
				alive = false;
			break;
		}
		off += len;
		if (alive)
			alive = drain(h);
	}
	CHECK(st.requests == st.status[0] + st.status[1] + st.status[2] + st.status[3]);
	CHECK(st.requests <= YIP_H3_REQUESTS);
	yip_h3_free(h);
	return 0;
}
