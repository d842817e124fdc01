/*
 * Receive side: coalescing TCP segments into super-packets the kernel accepts
 * through a TUN with IFF_VNET_HDR, after the rules of Linux's
 * tcp_gro_receive(). The kernel then runs its TCP stack once per super-packet
 * instead of once per segment, which is most of the cost of receiving.
 */
#include <endian.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "offload/bytes.h"
#include "offload/offload.h"

/* Flow buffers are cache-line aligned inside the one allocation. */
#define STRIDE (((size_t)OFFLOAD_VNET_LEN + OFFLOAD_MAX_PKT + 63) & ~(size_t)63)

/* What parse() makes of a packet. */
enum kind {
	OTHER, /* not a well-formed TCP segment: written as is */
	TCP,   /* a TCP segment that cannot grow (flags, no payload, IP options) */
	GRO,   /* a TCP segment that can start or extend a flow */
};

struct seg {
	size_t iplen; /* the packet's size: IP total length, or len if unreadable */
	int family;
	unsigned l3, thlen; /* IP and TCP header lengths */
	size_t payload;
	const uint8_t *ip, *th, *src, *dst;
};

static enum kind parse(const uint8_t *pkt, size_t len, struct seg *s)
{
	s->iplen = len;
	s->ip = pkt;
	if (len >= 20 && pkt[0] >> 4 == 4) {
		size_t tot = rd16(pkt + 2);

		s->l3 = (pkt[0] & 0x0f) * 4u;
		if (s->l3 < 20 || tot < s->l3 || tot > len)
			return OTHER;
		s->iplen = tot;
		/* Fragments are not whole segments; only the first has a TCP header. */
		if (pkt[9] != IPPROTO_TCP || (rd16(pkt + 6) & 0x3fff) != 0)
			return OTHER;
		/*
		 * A super-packet gets a fresh header checksum, which must not
		 * cover for a damaged header: leave those to the kernel to drop.
		 */
		if (offload_csum_fold(offload_csum_add(0, pkt, s->l3)) != 0xffff)
			return OTHER;
		s->family = AF_INET;
		s->src = pkt + 12;
		s->dst = pkt + 16;
	} else if (len >= 40 && pkt[0] >> 4 == 6) {
		size_t tot = 40 + (size_t)rd16(pkt + 4);

		if (tot > len)
			return OTHER;
		s->iplen = tot;
		/* Extension headers are left alone, as they are rare on TCP. */
		if (pkt[6] != IPPROTO_TCP)
			return OTHER;
		s->l3 = 40;
		s->family = AF_INET6;
		s->src = pkt + 8;
		s->dst = pkt + 24;
	} else {
		return OTHER;
	}
	if (s->l3 + 20 > s->iplen)
		return OTHER;
	s->th = pkt + s->l3;
	s->thlen = (s->th[12] >> 4) * 4u;
	if (s->thlen < 20 || s->l3 + s->thlen > s->iplen)
		return OTHER;
	s->payload = s->iplen - s->l3 - s->thlen;

	/*
	 * Only plain data segments grow: exactly ACK or ACK|PSH (no SYN, FIN,
	 * RST, URG, ECE, CWR, nor the reserved/AE bits), with payload, and for
	 * IPv4 without IP options. The flow must also fit a buffer.
	 */
	uint8_t fl = s->th[13];

	if ((fl != TCP_ACK && fl != (TCP_ACK | TCP_PSH)) || (s->th[12] & 0x0f) != 0 ||
	    s->payload == 0 || s->l3 != (s->family == AF_INET ? 20u : 40u) ||
	    s->iplen > OFFLOAD_MAX_PKT)
		return TCP;
	return GRO;
}

static size_t alen(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

/* Writes pkt (n bytes) behind an all-zero vnet header, through the scratch buffer. */
static void write_raw(struct offload_gro *g, const uint8_t *pkt, size_t n)
{
	uint8_t *buf = g->mem + OFFLOAD_GRO_FLOWS * STRIDE;

	/* Larger is no IP packet a TUN takes; there is no room to copy it either. */
	if (n > OFFLOAD_MAX_PKT)
		return;
	memset(buf, 0, OFFLOAD_VNET_LEN);
	memcpy(buf + OFFLOAD_VNET_LEN, pkt, n);
	g->write(g->ctx, buf, OFFLOAD_VNET_LEN + n);
}

/* Writes flow f to the TUN, as a super-packet if it holds several segments. */
static void write_flow(struct offload_gro *g, struct offload_gro_flow *f)
{
	uint8_t *ip = f->buf + OFFLOAD_VNET_LEN, *th = ip + f->l3len;
	struct virtio_net_hdr h;

	memset(&h, 0, sizeof(h));
	if (f->segs > 1) {
		if (f->family == AF_INET) {
			wr16(ip + 2, (uint16_t)f->len);
			wr16(ip + 10, 0);
			wr16(ip + 10,
			     (uint16_t)~offload_csum_fold(offload_csum_add(0, ip, f->l3len)));
		} else {
			wr16(ip + 4, (uint16_t)(f->len - 40));
		}
		/*
		 * CHECKSUM_PARTIAL: the kernel trusts the payload and, should it
		 * need the checksum (forwarding), completes it from csum_start
		 * over this seed, the pseudo-header sum.
		 */
		uint32_t ps = offload_pseudo_sum(f->family, f->src, f->dst,
		                                 (uint32_t)(f->len - f->l3len), IPPROTO_TCP);

		wr16(th + 16, offload_csum_fold(ps));
		h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.gso_type =
		    f->family == AF_INET ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6;
		h.hdr_len = htole16((uint16_t)(f->l3len + f->l4hlen));
		h.gso_size = htole16((uint16_t)f->mss);
		h.csum_start = htole16(f->l3len);
		h.csum_offset = htole16(16);
	}
	memcpy(f->buf, &h, OFFLOAD_VNET_LEN);
	g->write(g->ctx, f->buf, OFFLOAD_VNET_LEN + f->len);
}

/* Writes out flows[i] and frees its slot, keeping the others in order. */
static void retire(struct offload_gro *g, unsigned i)
{
	struct offload_gro_flow f = g->flows[i];

	write_flow(g, &f);
	memmove(&g->flows[i], &g->flows[i + 1], (g->n - i - 1) * sizeof(g->flows[0]));
	f.len = 0;
	g->flows[--g->n] = f; /* the buffer stays with a slot */
}

/* Whether s continues flow f (the key already matches). */
static bool can_append(const struct offload_gro_flow *f, const struct seg *s)
{
	const uint8_t *hip = f->buf + OFFLOAD_VNET_LEN, *hth = hip + f->l3len;
	const uint8_t *ip = s->ip, *th = s->th;

	if (f->closed || s->payload > f->mss || f->len + s->payload > OFFLOAD_MAX_PKT)
		return false;
	if (rd32(th + 4) != f->next_seq)
		return false;
	if (f->family == AF_INET) {
		/* TOS, TTL and DF as the held one (ihl 5 and no fragment: parse()). */
		if (ip[1] != hip[1] || ip[8] != hip[8] || ((ip[6] ^ hip[6]) & 0x40) != 0)
			return false;
	} else {
		/* Version, traffic class and flow label; hop limit. */
		if (memcmp(ip, hip, 4) != 0 || ip[7] != hip[7])
			return false;
	}
	/* Same ack and window, same options byte for byte (timestamps included). */
	return s->thlen == f->l4hlen && memcmp(th + 8, hth + 8, 4) == 0 &&
	       memcmp(th + 14, hth + 14, 2) == 0 && memcmp(th + 20, hth + 20, s->thlen - 20) == 0;
}

static void append(struct offload_gro *g, struct offload_gro_flow *f, const struct seg *s,
                   uint64_t stamp)
{
	uint8_t *hth = f->buf + OFFLOAD_VNET_LEN + f->l3len;

	memcpy(f->buf + OFFLOAD_VNET_LEN + f->len, s->th + s->thlen, s->payload);
	f->len += s->payload;
	f->segs++;
	f->next_seq += (uint32_t)s->payload;
	f->stamp = stamp;
	if (s->payload < f->mss || (s->th[13] & TCP_PSH)) {
		f->closed = true;
		hth[13] |= s->th[13] & TCP_PSH; /* the super-packet carries the PSH */
	}
	g->coalesced++;
}

/* Whether the TCP checksum of the segment at ip (IP header l3 bytes, iplen in all) verifies. */
static bool csum_ok(int family, const uint8_t *ip, size_t l3, size_t iplen)
{
	const uint8_t *src = family == AF_INET ? ip + 12 : ip + 8;
	const uint8_t *dst = family == AF_INET ? ip + 16 : ip + 24;
	uint32_t sum = offload_pseudo_sum(family, src, dst, (uint32_t)(iplen - l3), IPPROTO_TCP);

	return offload_csum_fold(offload_csum_add(sum, ip + l3, iplen - l3)) == 0xffff;
}

/* Holds s as the first segment of a new flow; verified if its checksum was checked. */
static void start(struct offload_gro *g, const struct seg *s, uint64_t stamp, bool verified)
{
	struct offload_gro_flow *f;

	if (g->n == OFFLOAD_GRO_FLOWS) {
		unsigned i, lru = 0;

		for (i = 1; i < g->n; i++)
			if (g->flows[i].stamp < g->flows[lru].stamp)
				lru = i;
		retire(g, lru);
	}
	f = &g->flows[g->n++];
	memcpy(f->buf + OFFLOAD_VNET_LEN, s->ip, s->iplen);
	f->len = s->iplen;
	f->segs = 1;
	f->mss = (unsigned)s->payload;
	f->next_seq = rd32(s->th + 4) + (uint32_t)s->payload;
	f->family = s->family;
	f->l3len = (uint8_t)s->l3;
	f->l4hlen = (uint8_t)s->thlen;
	memset(f->src, 0, sizeof(f->src));
	memset(f->dst, 0, sizeof(f->dst));
	memcpy(f->src, s->src, alen(s->family));
	memcpy(f->dst, s->dst, alen(s->family));
	memcpy(f->ports, s->th, 4);
	f->closed = (s->th[13] & TCP_PSH) != 0;
	f->verified = verified;
	f->stamp = stamp;
}

int offload_gro_init(struct offload_gro *g, offload_emit_fn write, void *ctx)
{
	unsigned i;

	memset(g, 0, sizeof(*g));
	/* One more buffer than flows: the scratch one write_raw() copies into. */
	g->mem = malloc((OFFLOAD_GRO_FLOWS + 1) * STRIDE);
	if (g->mem == NULL)
		return -1;
	for (i = 0; i < OFFLOAD_GRO_FLOWS; i++)
		g->flows[i].buf = g->mem + i * STRIDE;
	g->write = write;
	g->ctx = ctx;
	return 0;
}

void offload_gro_free(struct offload_gro *g)
{
	free(g->mem);
	memset(g, 0, sizeof(*g));
}

void offload_gro_add(struct offload_gro *g, const uint8_t *pkt, size_t len)
{
	struct seg s;
	enum kind k = parse(pkt, len, &s);
	uint64_t stamp = 1;
	unsigned i;

	if (k == OTHER) {
		write_raw(g, pkt, s.iplen);
		return;
	}
	/* Find the flow (at most one per key); the stamp is one past the newest. */
	struct offload_gro_flow *f = NULL;
	size_t al = alen(s.family);

	for (i = 0; i < g->n; i++) {
		struct offload_gro_flow *c = &g->flows[i];

		if (c->stamp >= stamp)
			stamp = c->stamp + 1;
		if (c->family == s.family && memcmp(c->ports, s.th, 4) == 0 &&
		    memcmp(c->src, s.src, al) == 0 && memcmp(c->dst, s.dst, al) == 0)
			f = c;
	}
	int sok = -1; /* whether s's checksum verifies: -1 not checked yet */

	if (f != NULL) {
		/*
		 * A super-packet goes to the kernel as CHECKSUM_PARTIAL, so its
		 * payload is never checked again: merge only segments whose
		 * checksums verify, as Linux's GRO does. The first segment is
		 * checked when a second one arrives (alone, it is written as it
		 * is and the kernel checks it).
		 */
		if (k == GRO && can_append(f, &s)) {
			sok = csum_ok(s.family, s.ip, s.l3, s.iplen);
			if (sok && !f->verified)
				f->verified =
				    csum_ok(f->family, f->buf + OFFLOAD_VNET_LEN, f->l3len, f->len);
			if (sok && f->verified) {
				append(g, f, &s, stamp);
				return;
			}
		}
		/* Whatever s is, it must not overtake what is held of its flow. */
		retire(g, (unsigned)(f - g->flows));
	}
	/* A segment known to be corrupt goes to the kernel alone, to be dropped there. */
	if (k == GRO && sok != 0)
		start(g, &s, stamp, sok == 1);
	else
		write_raw(g, pkt, s.iplen);
}

void offload_gro_flush(struct offload_gro *g)
{
	unsigned i;

	for (i = 0; i < g->n; i++) {
		write_flow(g, &g->flows[i]);
		g->flows[i].len = 0;
	}
	g->n = 0;
}
