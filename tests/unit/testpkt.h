/*
 * IP packets for unit tests, as a TUN device would hand them to the engine.
 */
#ifndef YIP_TESTS_TESTPKT_H
#define YIP_TESTS_TESTPKT_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * An IPv4 packet of len bytes (20 to 65535) of protocol proto from src to
 * dst (dotted quads): a header with TTL 64 and no checksum (the engine does
 * not check it), zeros after it. Returns len.
 */
static inline size_t ip4_packet(uint8_t *p, size_t len, uint8_t proto, const char *src,
                                const char *dst)
{
	memset(p, 0, len);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = proto;
	inet_pton(AF_INET, src, p + 12);
	inet_pton(AF_INET, dst, p + 16);
	return len;
}

#endif
