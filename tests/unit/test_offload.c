/*
 * Unit tests for offload: the checksum against a slow reference written here
 * from scratch; TSO of IPv4 and IPv6 super-packets built as Linux hands them
 * over (every segment's lengths, seq, flags, ids and both checksums checked
 * with the reference); GRO of those segments back into a super-packet the
 * kernel accepts (then finished as the kernel would and verified); GRO's
 * flushing, pass-through, flow matching and limits; MSS clamping; and the
 * rejection of malformed input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <endian.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include "offload/offload.h"

#define TESTRAND_SEED 0x5eed0ff10adULL
#include "testrand.h"
#include "../ref_csum.h"

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_CWR 0x80

#define MTU 1420

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* Linux 5.18; older headers lack it */
#endif

/* ---- Deterministic PRNG (splitmix64). ---- */

/* ---- Reference checksum: one big-endian word at a time, as in RFC 1071. ---- */

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The pseudo-header written out byte by byte (RFC 793, RFC 8200 8.1) and summed. */
static uint16_t ref_pseudo(int family, const uint8_t *src, const uint8_t *dst, uint32_t l4len,
                           uint8_t proto)
{
	uint8_t ph[40] = {0};

	if (family == AF_INET) {
		memcpy(ph, src, 4);
		memcpy(ph + 4, dst, 4);
		ph[9] = proto;
		wr16(ph + 10, (uint16_t)l4len);
		return ref_sum(0, ph, 12);
	}
	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	wr32(ph + 32, l4len);
	ph[39] = proto;
	return ref_sum(0, ph, 40);
}

static size_t ip_hlen(const uint8_t *p)
{
	return p[0] >> 4 == 4 ? (size_t)(p[0] & 15) * 4 : 40;
}

static size_t ip_len(const uint8_t *p)
{
	return p[0] >> 4 == 4 ? rd16(p + 2) : 40 + (size_t)rd16(p + 4);
}

static int ip_family(const uint8_t *p)
{
	return p[0] >> 4 == 4 ? AF_INET : AF_INET6;
}

static const uint8_t *ip_src(const uint8_t *p)
{
	return p[0] >> 4 == 4 ? p + 12 : p + 8;
}

static const uint8_t *ip_dst(const uint8_t *p)
{
	return p[0] >> 4 == 4 ? p + 16 : p + 24;
}

/* Whether the IPv4 header checksum of p verifies (true for IPv6). */
static bool ref_ip_ok(const uint8_t *p)
{
	return p[0] >> 4 != 4 || ref_sum(0, p, ip_hlen(p)) == 0xffff;
}

/* Whether the TCP (or UDP, proto) checksum of the whole packet p verifies. */
static bool ref_l4_ok(const uint8_t *p, uint8_t proto)
{
	size_t l3 = ip_hlen(p), l4 = ip_len(p) - l3;
	uint16_t ps = ref_pseudo(ip_family(p), ip_src(p), ip_dst(p), (uint32_t)l4, proto);

	return ref_sum(ps, p + l3, l4) == 0xffff;
}

/* ---- Building packets. ---- */

static const uint8_t A4[4] = {10, 7, 0, 1}, B4[4] = {10, 7, 0, 2}, C4[4] = {10, 7, 0, 3};
static const uint8_t A6[16] = {0xfd, 0x00, 0x79, 0x69, [15] = 1};
static const uint8_t B6[16] = {0xfd, 0x00, 0x79, 0x69, [14] = 0x12, [15] = 2};

/* NOP, NOP, timestamps: what Linux puts on every data segment. */
static const uint8_t TSOPT[12] = {1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};

struct tcp {
	int family;
	const uint8_t *src, *dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	const uint8_t *opt;
	size_t optlen; /* a multiple of 4 */
	uint8_t ttl, tos;
	uint16_t id;
	uint32_t flowlabel;
	bool partial; /* TCP check = folded pseudo sum (CHECKSUM_PARTIAL), else complete */
};

static struct tcp tcp_default(int family)
{
	struct tcp t = {
	    .family = family,
	    .src = family == AF_INET ? A4 : A6,
	    .dst = family == AF_INET ? B4 : B6,
	    .sport = 40000,
	    .dport = 5201,
	    .seq = 1000,
	    .ack = 0xabcdef01,
	    .flags = TCP_ACK,
	    .win = 502,
	    .opt = TSOPT,
	    .optlen = sizeof(TSOPT),
	    .ttl = 64,
	    .tos = 0,
	    .id = 0x1234,
	};
	return t;
}

/* Writes IP + TCP header + payload into buf with correct checksums; returns the length. */
static size_t build_tcp(uint8_t *buf, const struct tcp *t, const uint8_t *payload, size_t plen)
{
	size_t l3 = t->family == AF_INET ? 20 : 40, thlen = 20 + t->optlen, len = l3 + thlen + plen;
	uint8_t *th = buf + l3;

	memset(buf, 0, l3 + thlen);
	if (t->family == AF_INET) {
		buf[0] = 0x45;
		buf[1] = t->tos;
		wr16(buf + 2, (uint16_t)len);
		wr16(buf + 4, t->id);
		buf[6] = 0x40; /* DF */
		buf[8] = t->ttl;
		buf[9] = IPPROTO_TCP;
		memcpy(buf + 12, t->src, 4);
		memcpy(buf + 16, t->dst, 4);
		wr16(buf + 10, (uint16_t)~ref_sum(0, buf, 20));
	} else {
		wr32(buf, 6u << 28 | (uint32_t)t->tos << 20 | (t->flowlabel & 0xfffff));
		wr16(buf + 4, (uint16_t)(len - 40));
		buf[6] = IPPROTO_TCP;
		buf[7] = t->ttl;
		memcpy(buf + 8, t->src, 16);
		memcpy(buf + 24, t->dst, 16);
	}
	wr16(th, t->sport);
	wr16(th + 2, t->dport);
	wr32(th + 4, t->seq);
	wr32(th + 8, t->ack);
	th[12] = (uint8_t)(thlen / 4 << 4);
	th[13] = t->flags;
	wr16(th + 14, t->win);
	memcpy(th + 20, t->opt, t->optlen);
	if (plen > 0) /* payload may be NULL then */
		memcpy(th + thlen, payload, plen);

	uint16_t ps = ref_pseudo(t->family, t->src, t->dst, (uint32_t)(thlen + plen), IPPROTO_TCP);

	wr16(th + 16, t->partial ? ps : (uint16_t)~ref_sum(ps, th, thlen + plen));
	return len;
}

/* A UDP packet with a complete checksum. */
static size_t build_udp(uint8_t *buf, const uint8_t *payload, size_t plen, bool partial)
{
	size_t len = 28 + plen;
	uint8_t *uh = buf + 20;

	memset(buf, 0, 28);
	buf[0] = 0x45;
	wr16(buf + 2, (uint16_t)len);
	buf[8] = 64;
	buf[9] = IPPROTO_UDP;
	memcpy(buf + 12, A4, 4);
	memcpy(buf + 16, C4, 4);
	wr16(buf + 10, (uint16_t)~ref_sum(0, buf, 20));
	wr16(uh, 53);
	wr16(uh + 2, 33333);
	wr16(uh + 4, (uint16_t)(8 + plen));
	memcpy(uh + 8, payload, plen);

	uint16_t ps = ref_pseudo(AF_INET, A4, C4, (uint32_t)(8 + plen), IPPROTO_UDP);

	wr16(uh + 6, partial ? ps : (uint16_t)~ref_sum(ps, uh, 8 + plen));
	return len;
}

/* The vnet header Linux gives a TCP super-packet read from a TUN. */
static struct virtio_net_hdr tso_hdr(int family, size_t hlen, size_t mss)
{
	struct virtio_net_hdr h;

	memset(&h, 0, sizeof(h));
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.gso_type = family == AF_INET ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6;
	h.hdr_len = htole16((uint16_t)hlen);
	h.gso_size = htole16((uint16_t)mss);
	h.csum_start = htole16(family == AF_INET ? 20 : 40);
	h.csum_offset = htole16(16);
	return h;
}

/* ---- Capturing what offload emits. ---- */

#define CAP_MAX 64
#define CAP_LEN (OFFLOAD_VNET_LEN + OFFLOAD_MAX_PKT)

struct cap {
	unsigned n;
	size_t len[CAP_MAX];
	uint8_t data[CAP_MAX][CAP_LEN];
};

static struct cap cap;

static void capture(void *ctx, uint8_t *pkt, size_t len)
{
	struct cap *c = ctx;

	assert_true(c->n < CAP_MAX);
	assert_true(len <= CAP_LEN);
	memcpy(c->data[c->n], pkt, len);
	c->len[c->n++] = len;
}

static uint8_t super[OFFLOAD_MAX_PKT + 100], out[OFFLOAD_MAX_PKT], payload[2 * OFFLOAD_MAX_PKT];
static uint8_t seg[CAP_MAX][2048];
static size_t seglen[CAP_MAX];

/* Moves the captured packets (from offload_tso) into seg[]. */
static unsigned take_segments(void)
{
	unsigned i, n = cap.n;

	for (i = 0; i < n; i++) {
		assert_true(cap.len[i] <= sizeof(seg[i]));
		memcpy(seg[i], cap.data[i], cap.len[i]);
		seglen[i] = cap.len[i];
	}
	cap.n = 0;
	return n;
}

static bool vnet_is_zero(const uint8_t *w)
{
	static const uint8_t zero[OFFLOAD_VNET_LEN];

	return memcmp(w, zero, OFFLOAD_VNET_LEN) == 0;
}

/*
 * Checks that w (vnet header + packet, wlen bytes) is a GRO super-packet of
 * mss-sized segments carrying expect (plen bytes) as its payload, with the
 * header and checksum seed the kernel expects; then finishes the checksum the
 * way the kernel would and verifies the result.
 */
static void check_super(const uint8_t *w, size_t wlen, size_t mss, const uint8_t *expect,
                        size_t plen)
{
	struct virtio_net_hdr h;
	static uint8_t fin[OFFLOAD_MAX_PKT];
	const uint8_t *p = w + OFFLOAD_VNET_LEN;
	size_t len = wlen - OFFLOAD_VNET_LEN, l3 = ip_hlen(p), hlen = l3 + (p[l3 + 12] >> 4) * 4u;
	int family = ip_family(p);

	memcpy(&h, w, sizeof(h));
	assert_int_equal(h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(h.gso_type,
	                 family == AF_INET ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6);
	assert_int_equal(le16toh(h.hdr_len), hlen);
	assert_int_equal(le16toh(h.gso_size), mss);
	assert_int_equal(le16toh(h.csum_start), l3);
	assert_int_equal(le16toh(h.csum_offset), 16);
	assert_int_equal(ip_len(p), len);
	assert_true(ref_ip_ok(p));
	assert_int_equal(len, hlen + plen);
	assert_memory_equal(p + hlen, expect, plen);
	assert_int_equal(rd16(p + l3 + 16), ref_pseudo(family, ip_src(p), ip_dst(p),
	                                               (uint32_t)(len - l3), IPPROTO_TCP));

	/* The kernel's skb_checksum_help(): sum from csum_start, store inverted. */
	memcpy(fin, p, len);
	wr16(fin + l3 + 16, (uint16_t)~ref_sum(0, fin + l3, len - l3));
	assert_true(ref_l4_ok(fin, IPPROTO_TCP));
}

/* Checks that w is p (n bytes) written unchanged behind an all-zero vnet header. */
static void check_raw(unsigned i, const uint8_t *p, size_t n)
{
	assert_true(i < cap.n);
	assert_int_equal(cap.len[i], OFFLOAD_VNET_LEN + n);
	assert_true(vnet_is_zero(cap.data[i]));
	assert_memory_equal(cap.data[i] + OFFLOAD_VNET_LEN, p, n);
}

/* ---- Checksum. ---- */

static void test_csum_reference(void **state)
{
	static uint8_t buf[2048 + 8];
	unsigned round;

	(void)state;
	for (round = 0; round < 3000; round++) {
		size_t len = rnd(2001), off = rnd(8), split;
		uint16_t init = (uint16_t)rng();
		uint8_t *p = buf + off;

		/* Mostly random bytes; sometimes all-ones or all-zero, the fold's edge cases. */
		if (round % 50 == 0)
			memset(p, 0xff, len);
		else if (round % 50 == 1)
			memset(p, 0, len);
		else
			fill_random(p, len);
		assert_int_equal(offload_csum_fold(offload_csum_add(0, p, len)),
		                 ref_sum(0, p, len));
		assert_int_equal(offload_csum_fold(offload_csum_add(init, p, len)),
		                 ref_sum(init, p, len));

		/* Chained: an even-length piece, then the rest. */
		split = rnd((unsigned)len + 1) & ~(size_t)1;
		uint32_t s = offload_csum_add(0, p, split);

		s = offload_csum_add(s, p + split, len - split);
		assert_int_equal(offload_csum_fold(s), ref_sum(0, p, len));
	}
	/* The fold handles any 32-bit partial sum. */
	assert_int_equal(offload_csum_fold(0xffffffff), 0xffff);
	assert_int_equal(offload_csum_fold(0x0001ffff), 0x0001);
	assert_int_equal(offload_csum_fold(0), 0);
	assert_int_equal(offload_csum_fold(offload_csum_add(0xffffffff, buf, 64)),
	                 ref_sum(ref_sum(0, buf, 64), (const uint8_t[]){0xff, 0xff}, 2));
}

static void test_pseudo_reference(void **state)
{
	uint8_t src[16], dst[16];
	unsigned round;

	(void)state;
	for (round = 0; round < 1000; round++) {
		int family = round & 1 ? AF_INET6 : AF_INET;
		uint32_t l4len = round & 2 ? (uint32_t)rng() : rnd(70000);
		uint8_t proto = (uint8_t)rng();

		fill_random(src, sizeof(src));
		fill_random(dst, sizeof(dst));
		if (family == AF_INET)
			l4len &= 0xffff; /* the IPv4 pseudo-header has a 16-bit length */
		assert_int_equal(
		    offload_csum_fold(offload_pseudo_sum(family, src, dst, l4len, proto)),
		    ref_pseudo(family, src, dst, l4len, proto));
	}
}

/* ---- TSO. ---- */

/*
 * Builds a super-packet of nfull mss-sized segments plus a tail of tail
 * bytes (Linux's way: NEEDS_CSUM, TCP check = pseudo sum), segments it with
 * offload_tso for an MTU of 1420 and checks every segment. The segments are
 * left in seg[] and the payload in payload[].
 */
static unsigned tso_and_check(struct tcp *t, unsigned nfull, size_t tail, bool ecn, size_t *mss_out)
{
	size_t l3 = t->family == AF_INET ? 20 : 40, hlen = l3 + 20 + t->optlen;
	size_t mss = MTU - hlen, plen = nfull * mss + tail, len, i;
	unsigned nseg = (unsigned)((plen + mss - 1) / mss), n;
	struct virtio_net_hdr h;

	if (nseg == 0)
		nseg = 1;
	fill_random(payload, plen);
	t->partial = true;
	len = build_tcp(super, t, payload, plen);
	h = tso_hdr(t->family, hlen, mss);
	if (ecn)
		h.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	cap.n = 0;
	assert_int_equal(offload_tso(&h, super, len, MTU, out, capture, &cap), nseg);
	n = take_segments();
	assert_int_equal(n, nseg);

	for (i = 0; i < n; i++) {
		const uint8_t *p = seg[i], *th = p + l3;
		size_t chunk = i + 1 < n ? mss : plen - i * mss;
		uint8_t flags = t->flags;

		if (i + 1 < n)
			flags &= (uint8_t) ~(TCP_FIN | TCP_PSH);
		if (i > 0)
			flags &= (uint8_t)~TCP_CWR;
		assert_int_equal(seglen[i], hlen + chunk);
		assert_true(seglen[i] <= MTU);
		assert_int_equal(ip_len(p), seglen[i]);
		if (t->family == AF_INET) {
			assert_int_equal(rd16(p + 4), (uint16_t)(t->id + i));
			assert_int_equal(p[6], 0x40); /* DF kept, no fragment bits */
		}
		assert_true(ref_ip_ok(p));
		assert_memory_equal(p, super, l3 == 20 ? 2 : 4); /* version, TOS / class, flow */
		assert_memory_equal(p + (l3 == 20 ? 8 : 6), super + (l3 == 20 ? 8 : 6), 2);
		assert_memory_equal(th, super + l3, 4); /* ports */
		assert_int_equal(rd32(th + 4), (uint32_t)(t->seq + i * mss));
		assert_int_equal(rd32(th + 8), t->ack);
		assert_int_equal(th[12], super[l3 + 12]);
		assert_int_equal(th[13], flags);
		assert_int_equal(rd16(th + 14), t->win);
		assert_memory_equal(th + 20, t->opt, t->optlen);
		assert_memory_equal(p + hlen, payload + i * mss, chunk);
		assert_true(ref_l4_ok(p, IPPROTO_TCP));
	}
	*mss_out = mss;
	return n;
}

static int families[2] = {AF_INET, AF_INET6};

/* FIN|PSH super-packets: the flags go to the last segment only; GRO merges all but the FIN. */
static void test_tso_fin(void **state)
{
	struct offload_gro g;
	unsigned f, i, n;
	size_t mss;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	for (f = 0; f < 2; f++) {
		struct tcp t = tcp_default(families[f]);

		t.flags = TCP_ACK | TCP_PSH | TCP_FIN;
		t.seq = 0xfffff000; /* wraps within the super-packet */
		t.id = 0xfffe;      /* and so do the IPv4 ids */
		n = tso_and_check(&t, 3, 100, false, &mss);
		assert_int_equal(n, 4);

		for (i = 0; i < n; i++)
			offload_gro_add(&g, seg[i], seglen[i]);
		/* The FIN cannot be merged: it writes the flow out, then itself. */
		assert_int_equal(cap.n, 2);
		offload_gro_flush(&g);
		assert_int_equal(cap.n, 2);
		check_super(cap.data[0], cap.len[0], mss, payload, 3 * mss);
		check_raw(1, seg[3], seglen[3]);
		cap.n = 0;
	}
	assert_int_equal(g.coalesced, 4);
	offload_gro_free(&g);
}

/* ACK|PSH super-packets come back from GRO as one super-packet. */
static void test_tso_gro_roundtrip(void **state)
{
	struct offload_gro g;
	unsigned f, i, n;
	size_t mss;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	for (f = 0; f < 2; f++) {
		struct tcp t = tcp_default(families[f]);
		size_t plen;

		t.flags = TCP_ACK | TCP_PSH;
		t.flowlabel = 0x12345;
		t.tos = 0x28;
		n = tso_and_check(&t, 3, 777, false, &mss);
		assert_int_equal(n, 4);
		plen = 3 * mss + 777;

		for (i = 0; i < n; i++)
			offload_gro_add(&g, seg[i], seglen[i]);
		assert_int_equal(cap.n, 0); /* all held */
		offload_gro_flush(&g);
		assert_int_equal(cap.n, 1);
		check_super(cap.data[0], cap.len[0], mss, payload, plen);
		/* The super-packet's header is the first segment's, with the PSH. */
		const uint8_t *p = cap.data[0] + OFFLOAD_VNET_LEN;
		size_t l3 = ip_hlen(p);

		assert_int_equal(rd32(p + l3 + 4), t.seq);
		assert_int_equal(p[l3 + 13], TCP_ACK | TCP_PSH);
		if (t.family == AF_INET)
			assert_int_equal(rd16(p + 4), t.id);
		cap.n = 0;

		/* Exactly full segments too: the flow stays open to the end. */
		t.flags = TCP_ACK;
		n = tso_and_check(&t, 5, 0, false, &mss);
		assert_int_equal(n, 5);
		for (i = 0; i < n; i++)
			offload_gro_add(&g, seg[i], seglen[i]);
		offload_gro_flush(&g);
		assert_int_equal(cap.n, 1);
		check_super(cap.data[0], cap.len[0], mss, payload, 5 * mss);
		cap.n = 0;
	}
	assert_int_equal(g.coalesced, 2 * (3 + 4));
	offload_gro_free(&g);
}

/* CWR (with the ECN gso bit) stays on the first segment only. */
static void test_tso_cwr(void **state)
{
	unsigned f, n;
	size_t mss;

	(void)state;
	for (f = 0; f < 2; f++) {
		struct tcp t = tcp_default(families[f]);

		t.flags = TCP_ACK | TCP_CWR | TCP_PSH;
		n = tso_and_check(&t, 2, 1, true, &mss);
		assert_int_equal(n, 3);
		assert_int_equal(seg[0][ip_hlen(seg[0]) + 13], TCP_ACK | TCP_CWR);
		assert_int_equal(seg[2][ip_hlen(seg[2]) + 13], TCP_ACK | TCP_PSH);
	}
}

/* A super-packet that fits one segment, or has no payload, gives one segment. */
static void test_tso_single(void **state)
{
	unsigned f;
	size_t mss;

	(void)state;
	for (f = 0; f < 2; f++) {
		struct tcp t = tcp_default(families[f]);

		t.flags = TCP_ACK | TCP_FIN | TCP_PSH;
		assert_int_equal(tso_and_check(&t, 0, 10, false, &mss), 1);
		assert_int_equal(seg[0][ip_hlen(seg[0]) + 13], TCP_ACK | TCP_FIN | TCP_PSH);
		assert_int_equal(tso_and_check(&t, 1, 0, false, &mss), 1);
		assert_int_equal(tso_and_check(&t, 0, 0, false, &mss), 1);
		assert_int_equal(seglen[0], (t.family == AF_INET ? 20 : 40) + 20 + t.optlen);
	}
}

/* gso_type NONE: the checksum is finished in place (or left alone) and the packet passed on. */
static void test_tso_none(void **state)
{
	uint8_t data[300], pkt[400];
	struct virtio_net_hdr h;
	size_t len;

	(void)state;
	fill_random(data, sizeof(data));
	memset(&h, 0, sizeof(h));

	/* UDP with NEEDS_CSUM, odd length. */
	len = build_udp(pkt, data, 201, true);
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = htole16(20);
	h.csum_offset = htole16(6);
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len, MTU, out, capture, &cap), 1);
	assert_int_equal(cap.n, 1);
	assert_int_equal(cap.len[0], len);
	assert_true(ref_l4_ok(cap.data[0], IPPROTO_UDP));
	assert_true(ref_ip_ok(cap.data[0]));

	/* TCP with NEEDS_CSUM, no GSO. */
	struct tcp t = tcp_default(AF_INET6);

	t.partial = true;
	t.flags = TCP_ACK | TCP_PSH;
	len = build_tcp(pkt, &t, data, 99);
	h.csum_start = htole16(40);
	h.csum_offset = htole16(16);
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len, MTU, out, capture, &cap), 1);
	assert_true(ref_l4_ok(cap.data[0], IPPROTO_TCP));

	/* Without NEEDS_CSUM the packet goes as it is. */
	t.partial = false;
	len = build_tcp(pkt, &t, data, 99);
	memset(&h, 0, sizeof(h));
	h.flags = VIRTIO_NET_HDR_F_DATA_VALID;
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len, MTU, out, capture, &cap), 1);
	assert_int_equal(cap.len[0], len);
	assert_memory_equal(cap.data[0], pkt, len);

	/* Longer than the MTU: refused, whatever the flags. */
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len, len - 1, out, capture, &cap), -1);
	assert_int_equal(cap.n, 0);
}

static void expect_tso_fail(const struct virtio_net_hdr *h, uint8_t *pkt, size_t len, size_t mtu)
{
	static uint8_t copy[OFFLOAD_MAX_PKT + 100];

	memcpy(copy, pkt, len);
	cap.n = 0;
	assert_int_equal(offload_tso(h, pkt, len, mtu, out, capture, &cap), -1);
	assert_int_equal(cap.n, 0);
	assert_memory_equal(copy, pkt, len); /* untouched */
}

static void test_tso_malformed(void **state)
{
	static uint8_t pkt[4000];
	uint8_t data[3000];
	struct virtio_net_hdr h, b;
	struct tcp t4 = tcp_default(AF_INET), t6 = tcp_default(AF_INET6);
	size_t len4, len6, l;

	(void)state;
	fill_random(data, sizeof(data));
	t4.partial = t6.partial = true;

	/* gso NONE: csum_start or the field beyond the packet, too long, empty. */
	len4 = build_udp(pkt, data, 100, true);
	memset(&h, 0, sizeof(h));
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = htole16((uint16_t)len4 + 1);
	expect_tso_fail(&h, pkt, len4, MTU);
	h.csum_start = htole16(20);
	h.csum_offset = htole16((uint16_t)(len4 - 21)); /* field would end 1 byte past */
	expect_tso_fail(&h, pkt, len4, MTU);
	h.csum_offset = htole16(0xffff);
	expect_tso_fail(&h, pkt, len4, MTU);
	h.csum_start = htole16(0xffff);
	expect_tso_fail(&h, pkt, len4, MTU);
	h.csum_start = htole16(20);
	h.csum_offset = htole16((uint16_t)(len4 - 22)); /* the last two bytes: fine */
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len4, MTU, out, capture, &cap), 1);
	h.csum_offset = htole16(6);
	expect_tso_fail(&h, pkt, len4, len4 - 1);
	expect_tso_fail(&h, pkt, 0, MTU);

	/* A good IPv4 super-packet, then broken copies of it. */
	len4 = build_tcp(pkt, &t4, data, 3000);
	h = tso_hdr(AF_INET, 52, 1368);
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len4, MTU, out, capture, &cap), 3);
	len4 = build_tcp(pkt, &t4, data, 3000); /* offload_tso does not modify it, but be sure */

	b = h;
	b.gso_size = 0;
	expect_tso_fail(&b, pkt, len4, MTU);
	b = h;
	b.gso_size = htole16(1369); /* 52 + 1369 > 1420 */
	expect_tso_fail(&b, pkt, len4, MTU);
	expect_tso_fail(&h, pkt, len4, 1419);
	b = h;
	b.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
	expect_tso_fail(&b, pkt, len4, MTU);
	b.gso_type = VIRTIO_NET_HDR_GSO_UDP;
	expect_tso_fail(&b, pkt, len4, MTU);
	b.gso_type = 2;
	expect_tso_fail(&b, pkt, len4, MTU);
	b.gso_type = VIRTIO_NET_HDR_GSO_TCPV6; /* type does not match the packet */
	expect_tso_fail(&b, pkt, len4, MTU);
	/* Truncated anywhere in the headers (and the IP length beyond len). */
	for (l = 0; l < 52; l++)
		expect_tso_fail(&h, pkt, l, MTU);
	expect_tso_fail(&h, pkt, len4 - 1, MTU);
	/* Truncated with a consistent IP length: the TCP header does not fit. */
	for (l = 20; l < 52; l++) {
		wr16(pkt + 2, (uint16_t)l);
		expect_tso_fail(&h, pkt, l, MTU);
	}
	len4 = build_tcp(pkt, &t4, data, 3000);
	pkt[32] = 0x40; /* doff 4 */
	expect_tso_fail(&h, pkt, len4, MTU);
	len4 = build_tcp(pkt, &t4, data, 3000);
	pkt[0] = 0x44; /* ihl 4 */
	expect_tso_fail(&h, pkt, len4, MTU);
	pkt[0] = 0x45;
	pkt[6] = 0x20; /* MF */
	expect_tso_fail(&h, pkt, len4, MTU);
	pkt[6] = 0x00;
	pkt[7] = 0x01; /* fragment offset */
	expect_tso_fail(&h, pkt, len4, MTU);
	pkt[7] = 0x00;
	pkt[9] = IPPROTO_UDP;
	expect_tso_fail(&h, pkt, len4, MTU);
	pkt[9] = IPPROTO_TCP;
	wr16(pkt + 2, 50); /* total length shorter than the headers */
	expect_tso_fail(&h, pkt, len4, MTU);

	/* IPv6: extension header, wrong version, truncated. */
	len6 = build_tcp(pkt, &t6, data, 2000);
	h = tso_hdr(AF_INET6, 72, 1348);
	cap.n = 0;
	assert_int_equal(offload_tso(&h, pkt, len6, MTU, out, capture, &cap), 2);
	pkt[6] = 0; /* hop-by-hop options */
	expect_tso_fail(&h, pkt, len6, MTU);
	pkt[6] = IPPROTO_TCP;
	pkt[0] = 0x45;
	expect_tso_fail(&h, pkt, len6, MTU);
	pkt[0] = 0x60;
	for (l = 0; l < 72; l++)
		expect_tso_fail(&h, pkt, l, MTU);
	for (l = 40; l < 72; l++) {
		wr16(pkt + 4, (uint16_t)(l - 40));
		expect_tso_fail(&h, pkt, l, MTU);
	}
	wr16(pkt + 4, 10); /* payload length shorter than the TCP header */
	expect_tso_fail(&h, pkt, len6, MTU);
}

/* ---- GRO. ---- */

/* Builds segment i (payload plen bytes at seq base + i * plen) of flow t into seg[i]. */
static void make_seg(unsigned i, const struct tcp *t, size_t plen)
{
	struct tcp s = *t;

	s.seq = t->seq + (uint32_t)(i * plen);
	s.id = (uint16_t)(t->id + i);
	seglen[i] = build_tcp(seg[i], &s, payload + i * plen, plen);
}

static void test_gro_out_of_order(void **state)
{
	struct offload_gro g;
	struct tcp t = tcp_default(AF_INET);
	unsigned i;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	cap.n = 0;
	fill_random(payload, 8 * 1000);
	for (i = 0; i < 4; i++)
		make_seg(i, &t, 1000);

	/* 0, 1, 3: segment 3 is not next, so 0+1 go out before it is held. */
	offload_gro_add(&g, seg[0], seglen[0]);
	offload_gro_add(&g, seg[1], seglen[1]);
	assert_int_equal(cap.n, 0);
	offload_gro_add(&g, seg[3], seglen[3]);
	assert_int_equal(cap.n, 1);
	check_super(cap.data[0], cap.len[0], 1000, payload, 2000);
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 2);
	check_raw(1, seg[3], seglen[3]); /* alone: unchanged, zero header */

	/* A retransmission of an earlier segment: same. */
	cap.n = 0;
	offload_gro_add(&g, seg[1], seglen[1]);
	offload_gro_add(&g, seg[2], seglen[2]);
	offload_gro_add(&g, seg[1], seglen[1]);
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 2);
	check_super(cap.data[0], cap.len[0], 1000, payload + 1000, 2000);
	check_raw(1, seg[1], seglen[1]);
	offload_gro_free(&g);
}

static void test_gro_interleaved(void **state)
{
	struct offload_gro g;
	struct tcp a = tcp_default(AF_INET), b = tcp_default(AF_INET6);
	uint8_t bseg[3][2048];
	size_t blen[3];
	unsigned i;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	cap.n = 0;
	fill_random(payload, 6 * 1200);
	b.seq = 77;
	for (i = 0; i < 3; i++) { /* flow b's payload lies after a's */
		struct tcp s = b;

		s.seq = b.seq + i * 1200;
		blen[i] = build_tcp(bseg[i], &s, payload + (3 + i) * 1200, 1200);
		make_seg(i, &a, 1200);
	}
	for (i = 0; i < 3; i++) {
		offload_gro_add(&g, seg[i], seglen[i]);
		offload_gro_add(&g, bseg[i], blen[i]);
	}
	/* Same ports and addresses in the other family: still a different flow. */
	assert_int_equal(cap.n, 0);
	assert_int_equal(g.n, 2);
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 2);
	check_super(cap.data[0], cap.len[0], 1200, payload, 3600); /* oldest first */
	check_super(cap.data[1], cap.len[1], 1200, payload + 3600, 3600);
	assert_int_equal(g.coalesced, 4);

	/* Two IPv4 flows differing only in a port. */
	struct tcp c = a;

	c.dport = 5202;
	cap.n = 0;
	for (i = 0; i < 3; i++) {
		struct tcp s = c;

		s.seq = c.seq + i * 1200;
		blen[i] = build_tcp(bseg[i], &s, payload + (3 + i) * 1200, 1200);
		offload_gro_add(&g, seg[i], seglen[i]);
		offload_gro_add(&g, bseg[i], blen[i]);
	}
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 2);
	check_super(cap.data[0], cap.len[0], 1200, payload, 3600);
	check_super(cap.data[1], cap.len[1], 1200, payload + 3600, 3600);
	offload_gro_free(&g);
}

static void test_gro_passthrough(void **state)
{
	struct offload_gro g;
	struct tcp t = tcp_default(AF_INET);
	uint8_t udp[200], ack[100], junk[3] = {0x45, 0, 0};
	size_t ulen, alen;
	unsigned i;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	cap.n = 0;
	fill_random(payload, 4 * 1000);
	for (i = 0; i < 4; i++)
		make_seg(i, &t, 1000);
	ulen = build_udp(udp, payload, 100, false);

	/* Non-TCP goes straight out and leaves the held flow alone. */
	offload_gro_add(&g, seg[0], seglen[0]);
	offload_gro_add(&g, seg[1], seglen[1]);
	offload_gro_add(&g, udp, ulen);
	assert_int_equal(cap.n, 1);
	check_raw(0, udp, ulen);
	offload_gro_add(&g, junk, sizeof(junk)); /* unreadable: as is */
	assert_int_equal(cap.n, 2);
	check_raw(1, junk, sizeof(junk));

	/* A pure ACK of another flow goes straight out too. */
	struct tcp r = t;

	r.src = t.dst;
	r.dst = t.src;
	r.sport = t.dport;
	r.dport = t.sport;
	alen = build_tcp(ack, &r, NULL, 0);
	offload_gro_add(&g, ack, alen);
	assert_int_equal(cap.n, 3);
	check_raw(2, ack, alen);

	/* A pure ACK of the held flow writes the flow out first. */
	struct tcp s = t;

	s.seq = t.seq + 2000;
	alen = build_tcp(ack, &s, NULL, 0);
	offload_gro_add(&g, ack, alen);
	assert_int_equal(cap.n, 5);
	check_super(cap.data[3], cap.len[3], 1000, payload, 2000);
	check_raw(4, ack, alen);
	assert_int_equal(g.n, 0);

	/* Trailing bytes after the IP total length are ignored. */
	cap.n = 0;
	memset(seg[2] + seglen[2], 0xee, 30);
	memset(seg[3] + seglen[3], 0xee, 30);
	offload_gro_add(&g, seg[2], seglen[2] + 30);
	offload_gro_add(&g, seg[3], seglen[3] + 7);
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 1);
	check_super(cap.data[0], cap.len[0], 1000, payload + 2000, 2000);
	cap.n = 0;
	offload_gro_add(&g, seg[2], seglen[2] + 30);
	offload_gro_flush(&g);
	check_raw(0, seg[2], seglen[2]);

	/* An IP length beyond the buffer: written unchanged, whole. */
	cap.n = 0;
	offload_gro_add(&g, seg[0], seglen[0] - 1);
	assert_int_equal(cap.n, 1);
	check_raw(0, seg[0], seglen[0] - 1);
	assert_int_equal(g.n, 0);

	/* Segments with FIN, SYN, RST, URG, ECE, CWR are not held. */
	static const uint8_t bad[] = {
	    TCP_ACK | TCP_FIN, TCP_ACK | TCP_SYN, 0x04 | TCP_ACK, 0x20 | TCP_ACK,
	    0x40 | TCP_ACK,    TCP_CWR | TCP_ACK, TCP_PSH,        0};
	for (i = 0; i < sizeof(bad); i++) {
		struct tcp u = t;

		u.flags = bad[i];
		cap.n = 0;
		seglen[0] = build_tcp(seg[0], &u, payload, 500);
		offload_gro_add(&g, seg[0], seglen[0]);
		assert_int_equal(cap.n, 1);
		check_raw(0, seg[0], seglen[0]);
	}
	offload_gro_free(&g);
}

/* Each difference Linux's tcp_gro_receive refuses keeps two segments apart. */
static void test_gro_mismatch(void **state)
{
	struct offload_gro g;
	unsigned v, f;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	fill_random(payload, 4000);
	for (f = 0; f < 2; f++) {
		for (v = 0; v < 10; v++) {
			struct tcp t = tcp_default(families[f]), u;
			uint8_t opt2[12];

			make_seg(0, &t, 1000);
			u = t;
			u.seq = t.seq + 1000;
			u.id = (uint16_t)(t.id + 1);
			size_t plen = 1000;

			switch (v) {
			case 0:
				u.ttl = 63;
				break;
			case 1:
				u.tos = 1; /* ECN CE on one of them, too */
				break;
			case 2:
				memcpy(opt2, TSOPT, sizeof(opt2));
				opt2[7]++; /* a newer timestamp */
				u.opt = opt2;
				break;
			case 3:
				u.ack++;
				break;
			case 4:
				u.win++;
				break;
			case 5:
				plen = 1001; /* longer than the first */
				break;
			case 6:
				u.optlen = 0;
				break;
			case 7:
				u.flowlabel = 1;
				if (t.family == AF_INET)
					u.src = C4;
				break;
			case 8:
				u.seq--;
				break;
			default:
				u.seq++;
				break;
			}
			seglen[1] = build_tcp(seg[1], &u, payload + 1000, plen);
			cap.n = 0;
			offload_gro_add(&g, seg[0], seglen[0]);
			offload_gro_add(&g, seg[1], seglen[1]);
			offload_gro_flush(&g);
			assert_int_equal(cap.n, 2);
			check_raw(0, seg[0], seglen[0]);
			check_raw(1, seg[1], seglen[1]);
		}

		/* IPv4: DF differs. */
		if (families[f] == AF_INET) {
			struct tcp t = tcp_default(AF_INET);

			make_seg(0, &t, 1000);
			make_seg(1, &t, 1000);
			seg[1][6] = 0;
			wr16(seg[1] + 10, 0);
			wr16(seg[1] + 10, (uint16_t)~ref_sum(0, seg[1], 20));
			cap.n = 0;
			offload_gro_add(&g, seg[0], seglen[0]);
			offload_gro_add(&g, seg[1], seglen[1]);
			offload_gro_flush(&g);
			assert_int_equal(cap.n, 2);
		}
	}
	/* A short segment closes the flow: the next one starts anew. */
	struct tcp t = tcp_default(AF_INET);

	make_seg(0, &t, 1000);
	t.seq += 1000;
	seglen[1] = build_tcp(seg[1], &t, payload + 1000, 500);
	t.seq += 500;
	seglen[2] = build_tcp(seg[2], &t, payload + 1500, 500);
	cap.n = 0;
	offload_gro_add(&g, seg[0], seglen[0]);
	offload_gro_add(&g, seg[1], seglen[1]);
	offload_gro_add(&g, seg[2], seglen[2]);
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 2);
	check_super(cap.data[0], cap.len[0], 1000, payload, 1500);
	check_raw(1, seg[2], seglen[2]);
	offload_gro_free(&g);
}

/* Segments with a bad TCP checksum are never merged (the kernel would not check them). */
static void test_gro_bad_checksum(void **state)
{
	struct offload_gro g;
	unsigned f, i;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	fill_random(payload, 3 * 1000);
	for (f = 0; f < 2; f++) {
		struct tcp t = tcp_default(families[f]);
		size_t l3 = families[f] == AF_INET ? 20 : 40;

		for (i = 0; i < 3; i++)
			make_seg(i, &t, 1000);

		/* The second is corrupt: the first goes out, then the second, at once. */
		seg[1][l3 + 32 + 500] ^= 0x40;
		assert_false(ref_l4_ok(seg[1], IPPROTO_TCP));
		cap.n = 0;
		offload_gro_add(&g, seg[0], seglen[0]);
		offload_gro_add(&g, seg[1], seglen[1]);
		assert_int_equal(cap.n, 2);
		check_raw(0, seg[0], seglen[0]);
		check_raw(1, seg[1], seglen[1]);
		assert_int_equal(g.n, 0);
		seg[1][l3 + 32 + 500] ^= 0x40;

		/* The first is corrupt: it goes out alone, the others merge. */
		seg[0][l3 + 32 + 1] ^= 0x01;
		cap.n = 0;
		for (i = 0; i < 3; i++)
			offload_gro_add(&g, seg[i], seglen[i]);
		offload_gro_flush(&g);
		assert_int_equal(cap.n, 2);
		check_raw(0, seg[0], seglen[0]);
		check_super(cap.data[1], cap.len[1], 1000, payload + 1000, 2000);
		seg[0][l3 + 32 + 1] ^= 0x01;

		if (families[f] == AF_INET6)
			continue;
		/* A damaged IPv4 header goes straight out (the held flow stays). */
		cap.n = 0;
		seg[1][8]--; /* TTL: the header checksum no longer verifies */
		offload_gro_add(&g, seg[0], seglen[0]);
		offload_gro_add(&g, seg[1], seglen[1]);
		assert_int_equal(cap.n, 1);
		check_raw(0, seg[1], seglen[1]);
		seg[1][8]++;
		offload_gro_add(&g, seg[1], seglen[1]);
		offload_gro_flush(&g);
		assert_int_equal(cap.n, 2);
		check_super(cap.data[1], cap.len[1], 1000, payload, 2000);
	}
	offload_gro_free(&g);
}

/* With every flow busy, a new one writes out the least recently used. */
static void test_gro_eviction(void **state)
{
	struct offload_gro g;
	struct tcp t[OFFLOAD_GRO_FLOWS + 2];
	unsigned i;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	fill_random(payload, 2 * 1000);
	cap.n = 0;
	for (i = 0; i < OFFLOAD_GRO_FLOWS + 2; i++) {
		t[i] = tcp_default(AF_INET);
		t[i].sport = (uint16_t)(1000 + i);
		seglen[i] = build_tcp(seg[i], &t[i], payload, 1000);
	}
	for (i = 0; i < OFFLOAD_GRO_FLOWS; i++)
		offload_gro_add(&g, seg[i], seglen[i]);
	assert_int_equal(cap.n, 0);
	assert_int_equal(g.n, OFFLOAD_GRO_FLOWS);

	/* Flow 0 is used again, so flow 1 is the least recently used. */
	struct tcp s = t[0];

	s.seq += 1000;
	seglen[CAP_MAX - 1] = build_tcp(seg[CAP_MAX - 1], &s, payload + 1000, 1000);
	offload_gro_add(&g, seg[CAP_MAX - 1], seglen[CAP_MAX - 1]);
	assert_int_equal(cap.n, 0);
	offload_gro_add(&g, seg[OFFLOAD_GRO_FLOWS], seglen[OFFLOAD_GRO_FLOWS]);
	assert_int_equal(cap.n, 1);
	check_raw(0, seg[1], seglen[1]);
	offload_gro_add(&g, seg[OFFLOAD_GRO_FLOWS + 1], seglen[OFFLOAD_GRO_FLOWS + 1]);
	assert_int_equal(cap.n, 2);
	check_raw(1, seg[2], seglen[2]);

	/* The rest come out in the order they started. */
	offload_gro_flush(&g);
	assert_int_equal(cap.n, 2 + OFFLOAD_GRO_FLOWS);
	check_super(cap.data[2], cap.len[2], 1000, payload, 2000);
	for (i = 3; i < OFFLOAD_GRO_FLOWS; i++)
		check_raw(i, seg[i], seglen[i]);
	check_raw(OFFLOAD_GRO_FLOWS, seg[OFFLOAD_GRO_FLOWS], seglen[OFFLOAD_GRO_FLOWS]);
	check_raw(OFFLOAD_GRO_FLOWS + 1, seg[OFFLOAD_GRO_FLOWS + 1], seglen[OFFLOAD_GRO_FLOWS + 1]);
	assert_int_equal(g.n, 0);
	offload_gro_free(&g);
}

/* A flow never grows past OFFLOAD_MAX_PKT; nothing is lost or reordered at the limit. */
static void test_gro_max_size(void **state)
{
	struct offload_gro g;
	unsigned f, i, nseg = 60;
	size_t mss = 1368;

	(void)state;
	assert_int_equal(offload_gro_init(&g, capture, &cap), 0);
	fill_random(payload, nseg * mss);
	for (f = 0; f < 2; f++) {
		struct tcp t = tcp_default(families[f]);
		size_t hlen = (f == 0 ? 20 : 40) + 32, per = (OFFLOAD_MAX_PKT - hlen) / mss;

		cap.n = 0;
		for (i = 0; i < nseg; i++) {
			t.seq = 1000 + (uint32_t)(i * mss);
			seglen[0] = build_tcp(seg[0], &t, payload + i * mss, mss);
			offload_gro_add(&g, seg[0], seglen[0]);
		}
		offload_gro_flush(&g);
		assert_int_equal(cap.n, 2);
		check_super(cap.data[0], cap.len[0], mss, payload, per * mss);
		check_super(cap.data[1], cap.len[1], mss, payload + per * mss, (nseg - per) * mss);
		assert_true(cap.len[0] - OFFLOAD_VNET_LEN <= OFFLOAD_MAX_PKT);
		assert_true(cap.len[0] - OFFLOAD_VNET_LEN + mss > OFFLOAD_MAX_PKT);
	}
	offload_gro_free(&g);
}

/* ---- MSS clamping. ---- */

static void test_mss_clamp(void **state)
{
	/* MSS 1460, SACK permitted, timestamps, NOP, window scale. */
	static const uint8_t syn_opt[20] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2,
	                                    3, 4, 0,    0,    0, 0, 1, 3,  3, 7};
	/* NOP first: the MSS value sits at an odd offset. */
	static const uint8_t odd_opt[8] = {1, 2, 4, 0x05, 0xa0, 1, 1, 0};
	uint8_t pkt[200], copy[200];
	struct tcp t = tcp_default(AF_INET);
	size_t len;
	unsigned f;

	(void)state;
	for (f = 0; f < 2; f++) {
		t = tcp_default(families[f]);
		t.flags = TCP_SYN;
		t.opt = syn_opt;
		t.optlen = sizeof(syn_opt);
		len = build_tcp(pkt, &t, NULL, 0);
		size_t l3 = ip_hlen(pkt);

		assert_true(offload_mss_clamp(pkt, len, MTU));
		assert_int_equal(rd16(pkt + l3 + 22), MTU - (f == 0 ? 40 : 60));
		assert_true(ref_l4_ok(pkt, IPPROTO_TCP));
		assert_true(ref_ip_ok(pkt));
		/* Clamping again changes nothing; nor does a larger MTU. */
		memcpy(copy, pkt, len);
		assert_false(offload_mss_clamp(pkt, len, MTU));
		assert_false(offload_mss_clamp(pkt, len, 9000));
		assert_memory_equal(copy, pkt, len);

		/* SYN-ACK, MSS at an odd offset. */
		t.flags = TCP_SYN | TCP_ACK;
		t.opt = odd_opt;
		t.optlen = sizeof(odd_opt);
		len = build_tcp(pkt, &t, NULL, 0);
		assert_true(offload_mss_clamp(pkt, len, 1300));
		assert_int_equal(rd16(pkt + l3 + 23), 1300 - (f == 0 ? 40 : 60));
		assert_true(ref_l4_ok(pkt, IPPROTO_TCP));

		/* Small enough already. */
		t.opt = syn_opt;
		t.optlen = sizeof(syn_opt);
		len = build_tcp(pkt, &t, NULL, 0);
		memcpy(copy, pkt, len);
		assert_false(offload_mss_clamp(pkt, len, 1500 + (f == 0 ? 0 : 20)));
		assert_false(offload_mss_clamp(pkt, len, 40)); /* no room at all: left alone */
		assert_memory_equal(copy, pkt, len);

		/* Not a SYN. */
		t.flags = TCP_ACK;
		len = build_tcp(pkt, &t, NULL, 0);
		memcpy(copy, pkt, len);
		assert_false(offload_mss_clamp(pkt, len, 576));
		assert_memory_equal(copy, pkt, len);

		/* Truncated: the TCP header (with the option) is cut off. */
		t.flags = TCP_SYN;
		len = build_tcp(pkt, &t, NULL, 0);
		memcpy(copy, pkt, len);
		assert_false(offload_mss_clamp(pkt, len - 1, 576));
		assert_false(offload_mss_clamp(pkt, l3 + 10, 576));
		assert_memory_equal(copy, pkt, len);
	}

	/* Not TCP. */
	len = build_udp(pkt, syn_opt, sizeof(syn_opt), false);
	memcpy(copy, pkt, len);
	assert_false(offload_mss_clamp(pkt, len, 576));
	assert_memory_equal(copy, pkt, len);

	/* An option with a length running past the header stops the walk. */
	static const uint8_t bad_opt[8] = {1, 8, 9, 0, 2, 4, 0x05, 0xb4};

	t = tcp_default(AF_INET);
	t.flags = TCP_SYN;
	t.opt = bad_opt;
	t.optlen = sizeof(bad_opt);
	len = build_tcp(pkt, &t, NULL, 0);
	assert_false(offload_mss_clamp(pkt, len, 576));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csum_reference),   cmocka_unit_test(test_pseudo_reference),
	    cmocka_unit_test(test_tso_fin),          cmocka_unit_test(test_tso_gro_roundtrip),
	    cmocka_unit_test(test_tso_cwr),          cmocka_unit_test(test_tso_single),
	    cmocka_unit_test(test_tso_none),         cmocka_unit_test(test_tso_malformed),
	    cmocka_unit_test(test_gro_out_of_order), cmocka_unit_test(test_gro_interleaved),
	    cmocka_unit_test(test_gro_passthrough),  cmocka_unit_test(test_gro_mismatch),
	    cmocka_unit_test(test_gro_bad_checksum), cmocka_unit_test(test_gro_eviction),
	    cmocka_unit_test(test_gro_max_size),     cmocka_unit_test(test_mss_clamp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
