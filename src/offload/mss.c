/*
 * TCP MSS clamping: lowering the MSS option of SYNs crossing the tunnel so
 * neither end sends segments the tunnel would have to drop (PMTU discovery
 * through tunnels is unreliable), like iptables' TCPMSS --clamp-mss-to-pmtu.
 */
#include <netinet/in.h>
#include <string.h>

#include "offload/bytes.h"
#include "offload/offload.h"

#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_MSS 2

/*
 * Sets the 16-bit value at th + off to v and patches the TCP checksum with
 * RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'). The checksum counts 16-bit words
 * from the start of the TCP header; an option at an odd offset straddles two
 * words, so m and m' are the sums of the aligned words covering the change.
 */
static void set16(uint8_t *th, size_t off, uint16_t v)
{
	size_t lo = off & ~(size_t)1, n = off & 1 ? 4 : 2;
	uint16_t m = offload_csum_fold(offload_csum_add(0, th + lo, n));

	wr16(th + off, v);

	uint16_t m2 = offload_csum_fold(offload_csum_add(0, th + lo, n));
	uint32_t s = (uint16_t)~rd16(th + 16);

	s += (uint16_t)~m;
	s += m2;
	wr16(th + 16, (uint16_t)~offload_csum_fold(s));
}

bool offload_mss_clamp(uint8_t *pkt, size_t len, unsigned mtu)
{
	size_t l3, iplen;
	unsigned overhead;

	if (len >= 20 && pkt[0] >> 4 == 4) {
		l3 = (size_t)(pkt[0] & 0x0f) * 4;
		iplen = rd16(pkt + 2);
		/*
		 * Only offset 0 carries the TCP header. A first fragment (MF) may
		 * still be clamped: the incremental update needs no other bytes.
		 */
		if (l3 < 20 || pkt[9] != IPPROTO_TCP || (rd16(pkt + 6) & 0x1fff) != 0)
			return false;
		overhead = 40;
	} else if (len >= 40 && pkt[0] >> 4 == 6) {
		/* SYNs with extension headers are rare enough to pass unclamped. */
		if (pkt[6] != IPPROTO_TCP)
			return false;
		l3 = 40;
		iplen = 40 + (size_t)rd16(pkt + 4);
		overhead = 60;
	} else {
		return false;
	}
	if (mtu <= overhead || iplen > len || l3 + 20 > iplen)
		return false;

	uint8_t *th = pkt + l3;
	size_t thlen = (size_t)(th[12] >> 4) * 4, i = 20;
	unsigned max = mtu - overhead;
	bool changed = false;

	if (!(th[13] & TCP_SYN) || thlen < 20 || l3 + thlen > iplen)
		return false;
	while (i < thlen) {
		if (th[i] == TCPOPT_EOL)
			break;
		if (th[i] == TCPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= thlen || th[i + 1] < 2 || th[i + 1] > thlen - i)
			break; /* malformed: leave the rest alone */
		if (th[i] == TCPOPT_MSS && th[i + 1] == 4 && rd16(th + i + 2) > max) {
			set16(th, i + 2, (uint16_t)max); /* max < the old value <= 0xffff */
			changed = true;
		}
		i += th[i + 1];
	}
	return changed;
}
