/*
 * Transmit side: finishing checksums and cutting TCP super-packets from the
 * TUN into segments that fit the tunnel, as the kernel's tcp_gso_segment()
 * would for a device without TSO.
 */
#include <endian.h>
#include <string.h>
#include <netinet/in.h>

#include "offload/bytes.h"
#include "offload/offload.h"

/* gso_type NONE: finish the checksum the kernel left to us, pass the packet on. */
static int tso_none(const struct virtio_net_hdr *hdr, uint8_t *pkt, size_t len, size_t mtu,
                    offload_emit_fn emit, void *ctx)
{
	if (len == 0 || len > mtu)
		return -1;
	if (hdr->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		size_t start = le16toh(hdr->csum_start), off = le16toh(hdr->csum_offset);

		/* Both are 16-bit, so the sums cannot overflow a size_t. */
		if (start + off + 2 > len)
			return -1;
		/*
		 * The field already holds the pseudo-header sum the kernel seeded
		 * it with, so summing over it finishes the checksum.
		 */
		uint16_t c =
		    (uint16_t)~offload_csum_fold(offload_csum_add(0, pkt + start, len - start));

		/* As skb_checksum_help(): a UDP checksum of 0 would mean "none". */
		wr16(pkt + start + off, c ? c : 0xffff);
	}
	emit(ctx, pkt, len);
	return 1;
}

int offload_tso(const struct virtio_net_hdr *hdr, uint8_t *pkt, size_t len, size_t mtu,
                uint8_t *out, offload_emit_fn emit, void *ctx)
{
	unsigned type = hdr->gso_type & (unsigned)~VIRTIO_NET_HDR_GSO_ECN;
	size_t iplen, l3, hlen, payload, gso = le16toh(hdr->gso_size);
	int family;

	if (type == VIRTIO_NET_HDR_GSO_NONE)
		return tso_none(hdr, pkt, len, mtu, emit, ctx);

	/*
	 * Parse the headers ourselves rather than trusting hdr_len (for a TUN it
	 * is the skb's linear length, which may include payload) or csum_start.
	 */
	if (type == VIRTIO_NET_HDR_GSO_TCPV4) {
		if (len < 20 || pkt[0] >> 4 != 4 || pkt[9] != IPPROTO_TCP)
			return -1;
		l3 = (size_t)(pkt[0] & 0x0f) * 4;
		iplen = rd16(pkt + 2);
		/* MF or a fragment offset: not a whole TCP segment. */
		if (l3 < 20 || (rd16(pkt + 6) & 0x3fff) != 0)
			return -1;
		family = AF_INET;
	} else if (type == VIRTIO_NET_HDR_GSO_TCPV6) {
		/* Extension headers (rare on TSO packets) are not handled. */
		if (len < 40 || pkt[0] >> 4 != 6 || pkt[6] != IPPROTO_TCP)
			return -1;
		l3 = 40;
		iplen = 40 + (size_t)rd16(pkt + 4);
		family = AF_INET6;
	} else {
		return -1;
	}
	if (iplen > len || l3 + 20 > iplen || gso == 0)
		return -1;
	hlen = l3 + (size_t)(pkt[l3 + 12] >> 4) * 4;
	if (hlen < l3 + 20 || hlen > iplen)
		return -1;
	payload = iplen - hlen;
	/* The first segment is the largest. */
	if (hlen + (payload < gso ? payload : gso) > mtu)
		return -1;

	const uint8_t *ip = pkt, *th = pkt + l3;
	const uint8_t *src = family == AF_INET ? ip + 12 : ip + 8;
	const uint8_t *dst = family == AF_INET ? ip + 16 : ip + 24;
	uint16_t id = rd16(ip + 4);
	uint32_t seq = rd32(th + 4);
	uint8_t flags = th[13];
	size_t off = 0;
	int n = 0;

	for (;;) {
		size_t chunk = payload - off < gso ? payload - off : gso;
		size_t seglen = hlen + chunk;
		bool last = off + chunk >= payload;
		uint8_t *oth = out + l3;

		memcpy(out, pkt, hlen);
		memcpy(out + hlen, pkt + hlen + off, chunk);
		if (family == AF_INET) {
			wr16(out + 2, (uint16_t)seglen);
			wr16(out + 4, (uint16_t)(id + n));
			wr16(out + 10, 0);
			wr16(out + 10, (uint16_t)~offload_csum_fold(offload_csum_add(0, out, l3)));
		} else {
			wr16(out + 4, (uint16_t)(seglen - 40));
		}
		wr32(oth + 4, seq + (uint32_t)off);
		oth[13] = flags;
		if (!last)
			oth[13] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
		if (n > 0)
			oth[13] &= (uint8_t)~TCP_CWR;
		wr16(oth + 16, 0);

		uint32_t sum =
		    offload_pseudo_sum(family, src, dst, (uint32_t)(seglen - l3), IPPROTO_TCP);

		sum = offload_csum_add(sum, oth, seglen - l3);
		wr16(oth + 16, (uint16_t)~offload_csum_fold(sum));

		emit(ctx, out, seglen);
		n++;
		off += chunk;
		if (last)
			break;
	}
	return n;
}
