/*
 * Segmentation and checksum offload for a TUN device opened with
 * IFF_VNET_HDR and TUNSETOFFLOAD(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6).
 * Pure: no I/O, and no allocation outside offload_gro_init().
 *
 * With those flags the kernel hands us TCP super-packets of up to 64 KB whose
 * checksum is left unfinished, and accepts the same from us. offload_tso()
 * cuts what we read into packets that fit the tunnel; offload_gro() glues the
 * segments we receive back together so the kernel's TCP stack sees a few large
 * packets instead of many small ones. offload_mss_clamp() keeps TCP from
 * choosing segments larger than the tunnel in the first place.
 *
 * Packets are raw IPv4 or IPv6 (TUN mode: no Ethernet header). The
 * virtio_net_hdr fields are little-endian (a TUN without TUNSETVNETLE on a
 * little-endian host; the only kind yip runs on).
 */
#ifndef YIP_OFFLOAD_OFFLOAD_H
#define YIP_OFFLOAD_OFFLOAD_H

#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OFFLOAD_VNET_LEN sizeof(struct virtio_net_hdr) /* 10 */
#define OFFLOAD_MAX_PKT  65535 /* largest super-packet (IP total length limit) */

/* ---- Internet checksum (RFC 1071). ---- */

/*
 * Adds the big-endian 16-bit words of buf to the partial sum (an odd tail
 * byte counts as padded with a zero byte). Sums 8 bytes at a time into a
 * 64-bit accumulator.
 *
 * A partial sum is any uint32_t whose ones-complement fold to 16 bits (see
 * offload_csum_fold) is the ones-complement sum of the words added so far;
 * start from 0. Partial sums of separate pieces may be added together with
 * offload_csum_add of their bytes or by chaining calls, but every piece except
 * the last must have an even length (words are counted from the start of each
 * piece).
 */
uint32_t offload_csum_add(uint32_t sum, const void *buf, size_t len);

/* The ones-complement fold of a partial sum to 16 bits, NOT inverted. */
uint16_t offload_csum_fold(uint32_t sum);

/*
 * The partial sum of the TCP/UDP pseudo-header: for family AF_INET, src and dst
 * are 4-byte IPv4 addresses; for AF_INET6, 16-byte IPv6 addresses. l4len is
 * the length of the L4 header plus payload, proto the IP protocol number.
 */
uint32_t offload_pseudo_sum(int family, const uint8_t *src, const uint8_t *dst, uint32_t l4len,
                            uint8_t proto);

/* ---- Transmit side: segmentation (TSO) and checksum completion. ---- */

/* Callback receiving one finished packet. */
typedef void (*offload_emit_fn)(void *ctx, uint8_t *pkt, size_t len);

/*
 * Splits a packet read from a TUN opened with IFF_VNET_HDR (hdr is the header
 * read in front of it, pkt/len the packet after it) into packets of at most
 * mtu bytes and hands each to emit, in order.
 *
 * - gso_type NONE: if flags has VIRTIO_NET_HDR_F_NEEDS_CSUM, finishes the
 *   checksum in place: sums from csum_start to the end and stores the
 *   inverted fold at csum_start + csum_offset (a result of 0 is stored as
 *   0xffff, as the kernel does, so UDP never reads it as "no checksum").
 *   Then emits pkt itself. Fails if len is 0 or above mtu, or the checksum
 *   field is not inside the packet.
 * - gso_type TCPV4 / TCPV6 (VIRTIO_NET_HDR_GSO_ECN may be or-ed in): the IP
 *   header must match the type (IPv4: ihl >= 5, protocol TCP, not a
 *   fragment; IPv6: next header TCP, no extension headers) and the TCP header
 *   must fit. The packet's size is the IP total length (IPv4) or 40 + payload
 *   length (IPv6), which must not exceed len; hdr_len and csum_start are not
 *   trusted (headers are parsed from the packet). The TCP payload is cut into
 *   gso_size chunks (gso_size > 0); every segment, IP header + TCP header +
 *   chunk, is built in out (the caller's buffer of at least mtu bytes, not
 *   overlapping pkt) with: IPv4 total length, id (+i for segment i) and header
 *   checksum, or IPv6 payload length; TCP seq advanced by the chunk's offset;
 *   FIN and PSH only on the last segment, CWR only on the first; the full TCP
 *   checksum. A payload that fits one chunk (or is empty) gives one segment.
 *   Fails, before emitting anything, if the largest segment exceeds mtu.
 * - anything else (UDP, UDP_L4, unknown types, malformed packets) fails.
 *
 * Returns the number of packets emitted, or -1 having emitted none.
 */
int offload_tso(const struct virtio_net_hdr *hdr, uint8_t *pkt, size_t len, size_t mtu,
                uint8_t *out, offload_emit_fn emit, void *ctx);

/* ---- Receive side: coalescing (GRO) of TCP segments before the TUN. ---- */

#define OFFLOAD_GRO_FLOWS 8

/* One TCP flow being coalesced. A flow is busy while len > 0. */
struct offload_gro_flow {
	/*
	 * OFFLOAD_VNET_LEN + OFFLOAD_MAX_PKT bytes inside offload_gro.mem: room
	 * for the vnet header, then the packet (the first segment's headers
	 * followed by every payload appended so far).
	 */
	uint8_t *buf;
	size_t len;               /* packet bytes held after the vnet header; 0 if free */
	unsigned segs;            /* segments merged into it */
	unsigned mss;             /* the first segment's payload length */
	uint32_t next_seq;        /* sequence number the next segment must carry */
	int family;               /* AF_INET or AF_INET6 */
	uint8_t l3len;            /* IP header length (20 or 40) */
	uint8_t l4hlen;           /* TCP header length, options included */
	uint8_t src[16], dst[16]; /* addresses (IPv4 in the first 4 bytes) */
	uint8_t ports[4];         /* source and destination port, as on the wire */
	bool closed;              /* last segment was short or had PSH: no more appends */
	bool verified;            /* the first segment's TCP checksum verified */
	uint64_t stamp;           /* last use, for choosing which flow to write out */
};

struct offload_gro {
	/* Busy flows are flows[0 .. n-1], in the order they started. */
	struct offload_gro_flow flows[OFFLOAD_GRO_FLOWS];
	unsigned n;
	uint8_t *mem; /* one allocation for all flow buffers (and a scratch one) */
	/*
	 * Receives each packet as vnet header + packet, ready for write() to
	 * the TUN. The buffer is only valid during the call.
	 */
	offload_emit_fn write;
	void *ctx;
	uint64_t coalesced; /* segments merged into an earlier one (statistics) */
};

/* Allocates the flow buffers. Returns 0, or -1 if out of memory. */
int offload_gro_init(struct offload_gro *g, offload_emit_fn write, void *ctx);
/* Frees them, dropping anything still held (flush first to keep it). */
void offload_gro_free(struct offload_gro *g);

/*
 * Takes one received packet (raw IP, not yet written to the TUN). pkt is only
 * read; it is copied if held. A TCP segment that may grow (flags ACK or
 * ACK|PSH, with payload) is held, merged with the segments of its flow that
 * follow it in sequence (the rules of Linux's tcp_gro_receive: same
 * addresses, ports, IP fields, TCP options, ack and window; contiguous seq;
 * payload no longer than the first one's; the result within
 * OFFLOAD_MAX_PKT; and, since the kernel does not check the checksum of what
 * it takes as CHECKSUM_PARTIAL, valid TCP (and IPv4 header) checksums on
 * every segment merged).
 * A segment shorter than the first, or with PSH, ends its flow's growth. A packet of a held flow
 * that cannot be merged writes that flow out first, so order within a flow is kept. Anything else
 * is written at once with an all-zero vnet header, without disturbing held flows; packets over
 * OFFLOAD_MAX_PKT bytes are dropped. When all flows are busy, the least recently used is written
 * out.
 *
 * A flow of several segments is written as a super-packet: IP lengths (and
 * IPv4 header checksum) patched, the TCP checksum field set to the folded, not
 * inverted, pseudo-header sum, and a vnet header with NEEDS_CSUM, gso_type
 * TCPV4/TCPV6, hdr_len, gso_size = the first segment's payload length,
 * csum_start = IP header length and csum_offset = 16, so the kernel treats it
 * as CHECKSUM_PARTIAL. A flow of one segment is written unchanged.
 *
 * The packet's size is its IP total length (trailing bytes are ignored); a
 * packet whose IP header is unreadable or claims more than len is written
 * unchanged.
 */
void offload_gro_add(struct offload_gro *g, const uint8_t *pkt, size_t len);

/* Writes out everything held, oldest first (call at the end of each receive batch). */
void offload_gro_flush(struct offload_gro *g);

/* ---- TCP MSS clamping. ---- */

/*
 * If pkt is a TCP SYN (or SYN-ACK; IPv4 or IPv6 without extension headers,
 * raw IP) carrying an MSS option larger than the largest that fits mtu
 * (mtu - 40 for IPv4, mtu - 60 for IPv6), lowers it and updates the TCP
 * checksum incrementally (RFC 1624). The checksum must be complete, so on the
 * transmit side call this on offload_tso's output, not on a super-packet.
 * Returns true if it changed the packet. Never touches other packets, nor any
 * packet if mtu leaves no room for payload.
 */
bool offload_mss_clamp(uint8_t *pkt, size_t len, unsigned mtu);

#endif
