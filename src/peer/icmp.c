/*
 * ICMP and ICMPv6 "destination unreachable" for packets that match no
 * peer. The data path writes them back to the device, so the sender learns
 * at once instead of timing out. Rate-limited, and never made about an ICMP
 * error, a multicast or broadcast destination, or an unspecified source.
 *
 * The error's source is the unreachable destination itself: the kernel
 * would drop an incoming packet whose source is one of its own addresses,
 * and there is no router address to speak for on a point-to-point device.
 */
#include "peer/internal.h"

#include <string.h>

#define ICMP_PER_SECOND 20
#define ICMP4_QUOTE     548 /* RFC 1812: as much of the packet as fits in 576 */
#define ICMP6_QUOTE     (1280 - 48)

static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool allowed(struct yip_device *dev, uint64_t now)
{
	if (now - dev->icmp_window >= 1000000000ULL) {
		dev->icmp_window = now;
		dev->icmp_sent = 0;
	}
	return dev->icmp_sent++ < ICMP_PER_SECOND;
}

static size_t unreach4(uint8_t *o, const uint8_t *pkt, size_t len)
{
	size_t quote = len < ICMP4_QUOTE ? len : ICMP4_QUOTE, total = 28 + quote;
	static const uint8_t zero4[4];

	if (memcmp(pkt + 12, zero4, 4) == 0 || pkt[16] >= 224 ||
	    memcmp(pkt + 16, "\xff\xff\xff\xff", 4) == 0)
		return 0;
	/* Not about ICMP errors (types other than echo request/reply and the like). */
	if (pkt[9] == 1 && len > (size_t)(pkt[0] & 15) * 4) {
		uint8_t type = pkt[(pkt[0] & 15) * 4];

		if (type != 0 && type != 8 && type != 13 && type != 15 && type != 17)
			return 0;
	}
	memset(o, 0, 28);
	o[0] = 0x45;
	put16(o + 2, (uint16_t)total);
	o[8] = 64;
	o[9] = 1;
	memcpy(o + 12, pkt + 16, 4);
	memcpy(o + 16, pkt + 12, 4);
	put16(o + 10, fold(sum16(o, 20, 0)));
	o[20] = 3; /* destination unreachable */
	o[21] = 0; /* network unreachable */
	memcpy(o + 28, pkt, quote);
	put16(o + 22, fold(sum16(o + 20, 8 + quote, 0)));
	return total;
}

static size_t unreach6(uint8_t *o, const uint8_t *pkt, size_t len)
{
	size_t quote = len < ICMP6_QUOTE ? len : ICMP6_QUOTE, plen = 8 + quote;
	static const uint8_t zero16[16];
	uint32_t sum;

	if (memcmp(pkt + 8, zero16, 16) == 0 || pkt[24] == 0xff)
		return 0;
	if (pkt[6] == 58 && len > 40 && pkt[40] < 128)
		return 0; /* an ICMPv6 error itself */
	memset(o, 0, 48);
	o[0] = 0x60;
	put16(o + 4, (uint16_t)plen);
	o[6] = 58;
	o[7] = 64;
	memcpy(o + 8, pkt + 24, 16);
	memcpy(o + 24, pkt + 8, 16);
	o[40] = 1; /* destination unreachable */
	o[41] = 0; /* no route to destination */
	memcpy(o + 48, pkt, quote);
	/* Pseudo-header: addresses, upper-layer length, next header. */
	sum = sum16(o + 8, 32, 0);
	sum += (uint32_t)plen + 58;
	put16(o + 42, fold(sum16(o + 40, plen, sum)));
	return 40 + plen;
}

size_t icmp_unreachable(struct yip_device *dev, uint64_t now, const uint8_t *pkt, size_t len,
                        uint8_t *out)
{
	if (!allowed(dev, now))
		return 0;
	if (len >= 20 && pkt[0] >> 4 == 4)
		return unreach4(out, pkt, len);
	if (len >= 40 && pkt[0] >> 4 == 6)
		return unreach6(out, pkt, len);
	return 0;
}
