/*
 * The stream framing reader (wire/stream.h) on any bytes, cut into reads at
 * sizes the input chooses: it never reads past what it is given, and a
 * stream cut anywhere yields the same frames as the stream read whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/stream.h"

struct sink {
	uint64_t sum, n, bytes;
};

static void take(void *arg, const uint8_t *d, size_t len)
{
	struct sink *s = arg;

	if (len == 0 || len > WIRE_STREAM_MAX)
		abort();
	for (size_t i = 0; i < len; i++)
		s->sum = s->sum * 31 + d[i];
	s->n++;
	s->bytes += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wire_stream_rx whole, cut;
	struct sink a = {0}, b = {0};
	int ra, rb = 0;
	size_t off = 0, step;

	if (size < 1)
		return 0;
	step = (size_t)data[0] % 7 + 1;
	data++;
	size--;
	wire_stream_rx_init(&whole);
	wire_stream_rx_init(&cut);
	ra = wire_stream_feed(&whole, data, size, take, &a);
	while (off < size && rb == 0) {
		size_t n = size - off < step ? size - off : step;

		rb = wire_stream_feed(&cut, data + off, n, take, &b);
		off += n;
		step = step * 3 % 11 + 1;
	}
	if (ra != rb || a.n != b.n || a.sum != b.sum || a.bytes != b.bytes)
		abort();
	return 0;
}
