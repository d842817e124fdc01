/*
 * libFuzzer target for offload: a vnet header and packet go through
 * offload_tso, whose segments (and further raw packets from the input) go
 * through an offload_gro and offload_mss_clamp. Buffers are allocated to
 * their exact size so AddressSanitizer sees any access past them. Besides
 * memory safety it checks, with a plain word-by-word checksum written here:
 *   - offload_tso emits nothing on failure, never more than mtu bytes, and
 *     TCP segments whose IPv4 header and TCP checksums verify (or, for gso
 *     NONE with NEEDS_CSUM, a packet whose sum from csum_start verifies);
 *   - every super-packet offload_gro writes has a consistent vnet header and
 *     IP lengths, and verifies once finished as the kernel would;
 *   - offload_mss_clamp leaves a packet's TCP sum as it was, and a packet it
 *     declines untouched.
 *
 * Input layout (missing bytes read as 0):
 *   [0] mtu = 576 + [0] * (9000 - 576) / 255
 *   [1] flags: 1 feed each segment to GRO twice, 2 flush GRO before the raw
 *       packets, 4 feed the input packet itself to GRO too
 *   [2..11] struct virtio_net_hdr (little endian)
 *   [12..13] packet length L (little endian), then L bytes of packet
 *   rest: raw packets for GRO, each a 2-byte little-endian length and bytes
 */
#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "offload/offload.h"

#include "reader.h"
#include "../ref_csum.h"

#define F_TWICE 1
#define F_FLUSH 2
#define F_SELF  4

#define MTU_MIN 576
#define MTU_MAX 9000

/* Takes up to n bytes; returns how many. */
static size_t take(struct reader *rd, size_t n, const uint8_t **p)
{
	if (n > rd->n)
		n = rd->n;
	*p = rd->p;
	rd->p += n;
	rd->n -= n;
	return n;
}

static void check(bool ok)
{
	if (!ok)
		__builtin_trap();
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * For a TCP packet that offload_mss_clamp could consider (IPv4 or IPv6 with
 * TCP next, IP length within len, TCP base header inside), the folded sum
 * of pseudo-header and segment with 0 and 0xffff made equal; else -1.
 */
static int ref_tcp_sum(const uint8_t *p, size_t len)
{
	uint8_t ph[40] = {0};
	size_t l3, iplen, phlen;

	if (len >= 20 && p[0] >> 4 == 4) {
		l3 = (size_t)(p[0] & 15) * 4;
		iplen = rd16(p + 2);
		if (l3 < 20 || p[9] != 6)
			return -1;
		memcpy(ph, p + 12, 8);
		ph[9] = 6;
		phlen = 12;
	} else if (len >= 40 && p[0] >> 4 == 6) {
		l3 = 40;
		iplen = 40 + (size_t)rd16(p + 4);
		if (p[6] != 6)
			return -1;
		memcpy(ph, p + 8, 32);
		ph[39] = 6;
		phlen = 40;
	} else {
		return -1;
	}
	if (iplen > len || l3 + 20 > iplen)
		return -1;
	size_t l4 = iplen - l3;

	if (phlen == 12) {
		ph[10] = (uint8_t)(l4 >> 8);
		ph[11] = (uint8_t)l4;
	} else {
		ph[32] = (uint8_t)(l4 >> 24);
		ph[33] = (uint8_t)(l4 >> 16);
		ph[34] = (uint8_t)(l4 >> 8);
		ph[35] = (uint8_t)l4;
	}
	uint16_t s = ref_sum(ref_sum(0, ph, phlen), p + l3, l4);

	return s == 0 ? 0xffff : s;
}

/* Clamps a copy of p and checks the invariants. */
static void clamp_check(const uint8_t *p, size_t len, unsigned mtu)
{
	uint8_t *c = malloc(len ? len : 1), *orig = malloc(len ? len : 1);

	check(c != NULL && orig != NULL);
	memcpy(c, p, len);
	memcpy(orig, p, len);
	int before = ref_tcp_sum(c, len);

	if (offload_mss_clamp(c, len, mtu)) {
		check(before >= 0);
		check(ref_tcp_sum(c, len) == before);
		check(memcmp(c, orig, len) != 0);
	} else {
		check(memcmp(c, orig, len) == 0);
	}
	free(c);
	free(orig);
}

static struct offload_gro gro;
static unsigned mtu, flags, emitted;
static size_t emit_max;
static const uint8_t *tso_pkt, *tso_orig; /* offload_tso's input, and a copy of it before */

/* GRO output: check every super-packet. */
static void gro_write(void *ctx, uint8_t *buf, size_t len)
{
	struct virtio_net_hdr h;

	(void)ctx;
	check(len >= OFFLOAD_VNET_LEN && len <= OFFLOAD_VNET_LEN + OFFLOAD_MAX_PKT);
	memcpy(&h, buf, sizeof(h));
	if (h.gso_type == VIRTIO_NET_HDR_GSO_NONE) {
		check(h.flags == 0 && h.hdr_len == 0 && h.gso_size == 0 && h.csum_start == 0 &&
		      h.csum_offset == 0);
		return;
	}

	const uint8_t *p = buf + OFFLOAD_VNET_LEN;
	size_t n = len - OFFLOAD_VNET_LEN, l3 = n > 0 && p[0] >> 4 == 4 ? 20 : 40;
	size_t start = le16toh(h.csum_start), hlen = le16toh(h.hdr_len);
	size_t mss = le16toh(h.gso_size);

	check(h.flags == VIRTIO_NET_HDR_F_NEEDS_CSUM);
	check(h.gso_type == (l3 == 20 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6));
	check(start == l3 && le16toh(h.csum_offset) == 16);
	check(n >= l3 + 20 && hlen >= l3 + 20 && hlen <= n && hlen == l3 + (p[l3 + 12] >> 4) * 4u);
	check(mss > 0 && n - hlen > mss); /* several segments */
	if (l3 == 20) {
		check(p[0] == 0x45 && rd16(p + 2) == n);
		check(ref_sum(0, p, 20) == 0xffff);
	} else {
		check(rd16(p + 4) + 40u == n);
	}
	/*
	 * Finish the checksum as skb_checksum_help() would: it verifies only
	 * if the seed left in the field is the pseudo-header sum.
	 */
	uint8_t *c = malloc(n);

	check(c != NULL);
	memcpy(c, p, n);
	uint16_t sum = (uint16_t)~ref_sum(0, c + l3, n - l3);

	c[l3 + 16] = (uint8_t)(sum >> 8);
	c[l3 + 17] = (uint8_t)sum;
	check(ref_tcp_sum(c, n) == 0xffff);
	free(c);
}

static void tso_emit(void *ctx, uint8_t *pkt, size_t len)
{
	const struct virtio_net_hdr *h = ctx;
	unsigned type = h->gso_type & (unsigned)~VIRTIO_NET_HDR_GSO_ECN;

	emitted++;
	check(len > 0 && len <= mtu);
	if (len > emit_max)
		emit_max = len;
	if (type == VIRTIO_NET_HDR_GSO_NONE) {
		size_t start = le16toh(h->csum_start), off = le16toh(h->csum_offset);

		/*
		 * The field held the seed (the pseudo-header sum); the finished
		 * region plus the seed must sum to 0xffff. Only for an even
		 * offset: an odd one straddles words, which no protocol does.
		 */
		if ((h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && off % 2 == 0) {
			check(pkt == tso_pkt && start + off + 2 <= len);
			check(ref_sum(rd16(tso_orig + start + off), pkt + start, len - start) ==
			      0xffff);
		}
	} else {
		size_t l3 = type == VIRTIO_NET_HDR_GSO_TCPV4 ? (size_t)(pkt[0] & 15) * 4 : 40;

		check(pkt[0] >> 4 == (type == VIRTIO_NET_HDR_GSO_TCPV4 ? 4 : 6));
		check(l3 >= 20 && len >= l3 + 20);
		if (type == VIRTIO_NET_HDR_GSO_TCPV4)
			check(ref_sum(0, pkt, l3) == 0xffff && rd16(pkt + 2) == len);
		else
			check(rd16(pkt + 4) + 40u == len);
		check(ref_tcp_sum(pkt, len) == 0xffff);
	}
	clamp_check(pkt, len, mtu);
	offload_gro_add(&gro, pkt, len);
	if (flags & F_TWICE)
		offload_gro_add(&gro, pkt, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {data, size};
	struct virtio_net_hdr h;
	uint8_t hb[OFFLOAD_VNET_LEN];
	const uint8_t *src;
	size_t len, i;
	int rc;

	if (gro.mem == NULL && offload_gro_init(&gro, gro_write, NULL) != 0)
		__builtin_trap();
	mtu = MTU_MIN + next(&rd) * (MTU_MAX - MTU_MIN) / 255u;
	flags = next(&rd);
	for (i = 0; i < sizeof(hb); i++)
		hb[i] = next(&rd);
	memcpy(&h, hb, sizeof(h));
	len = next(&rd);
	len |= (size_t)next(&rd) << 8;
	len = take(&rd, len, &src);

	/* Exact-size copies, so that ASan catches any access past the end. */
	uint8_t *pkt = malloc(len ? len : 1), *orig = malloc(len ? len : 1);
	uint8_t *out = malloc(mtu);

	check(pkt != NULL && orig != NULL && out != NULL);
	memcpy(pkt, src, len);
	memcpy(orig, src, len);
	clamp_check(pkt, len, mtu);

	tso_pkt = pkt;
	tso_orig = orig;
	emitted = 0;
	emit_max = 0;
	rc = offload_tso(&h, pkt, len, mtu, out, tso_emit, &h);
	check(rc == -1 ? emitted == 0 : rc == (int)emitted && rc > 0);
	if (rc == -1)
		check(memcmp(pkt, orig, len) == 0); /* failure leaves the packet alone */
	if (flags & F_SELF)
		offload_gro_add(&gro, orig, len);
	if (flags & F_FLUSH)
		offload_gro_flush(&gro);

	/* The rest: raw packets. */
	while (rd.n > 0) {
		size_t n = next(&rd);

		n |= (size_t)next(&rd) << 8;
		n = take(&rd, n, &src);

		uint8_t *p = malloc(n ? n : 1);

		check(p != NULL);
		memcpy(p, src, n);
		clamp_check(p, n, mtu);
		offload_gro_add(&gro, p, n);
		free(p);
	}
	offload_gro_flush(&gro);
	check(gro.n == 0);
	free(pkt);
	free(orig);
	free(out);
	return 0;
}
