/*
 * The Internet checksum. The ones-complement sum does not depend on byte
 * order (RFC 1071, 2.B): summing native-endian words and swapping the folded
 * result gives the sum of the big-endian words. It also does not depend on
 * word size, because 2^64 - 1 is a multiple of 2^16 - 1, so the data is summed
 * as 64-bit words with end-around carry and only folded at the end.
 */
#include <string.h>
#include <netinet/in.h>

#include "offload/offload.h"

/* acc + v with the carry out of bit 63 added back in (cannot overflow again). */
static inline uint64_t add64(uint64_t acc, uint64_t v)
{
	acc += v;
	return acc + (acc < v);
}

uint32_t offload_csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t a = 0, b = 0, w0, w1, w2, w3;

	/* Two accumulators so consecutive additions do not wait on each other. */
	while (len >= 32) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + 8, 8);
		memcpy(&w2, p + 16, 8);
		memcpy(&w3, p + 24, 8);
		a = add64(a, w0);
		b = add64(b, w1);
		a = add64(a, w2);
		b = add64(b, w3);
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		memcpy(&w0, p, 8);
		a = add64(a, w0);
		p += 8;
		len -= 8;
	}
	/* The tail keeps its byte positions: the pieces start at even offsets. */
	if (len >= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		b = add64(b, v);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		b = add64(b, v);
		p += 2;
		len -= 2;
	}
	if (len > 0) {
		/* The last byte is the high half of a big-endian word padded with 0. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		b = add64(b, p[0]);
#else
		b = add64(b, (uint64_t)p[0] << 8);
#endif
	}
	a = add64(a, b);

	/* Fold 64 -> 16 bits, each step adding the carries back in. */
	a = (a & 0xffffffff) + (a >> 32);
	a = (a & 0xffffffff) + (a >> 32);
	a = (a & 0xffff) + (a >> 16);
	a = (a & 0xffff) + (a >> 16);
	uint16_t r = (uint16_t)a;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	r = __builtin_bswap16(r);
#endif

	uint64_t s = (uint64_t)sum + r;

	return (uint32_t)((s & 0xffffffff) + (s >> 32));
}

uint16_t offload_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint32_t offload_pseudo_sum(int family, const uint8_t *src, const uint8_t *dst, uint32_t l4len,
                            uint8_t proto)
{
	size_t alen = family == AF_INET6 ? 16 : 4;
	uint64_t s;

	/*
	 * IPv4: src, dst, zero, protocol, 16-bit length. IPv6 (RFC 8200 8.1):
	 * src, dst, 32-bit length, three zero bytes, next header. As 16-bit
	 * words both are the addresses + protocol + length's halves.
	 */
	s = offload_csum_add(0, src, alen);
	s = offload_csum_add((uint32_t)s, dst, alen);
	s += proto;
	s += l4len >> 16;
	s += l4len & 0xffff;
	return (uint32_t)((s & 0xffffffff) + (s >> 32));
}
