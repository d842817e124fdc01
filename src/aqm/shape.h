/*
 * Shaping: what the event loop does to inner packets besides carrying them
 * between the TUN and the engine (docs/protocol.md, "Queueing and
 * congestion").
 *
 * - The TUN-side queue. Bulk reads from the TUN wait here, not in the
 *   kernel's device queue, so that small packets (pings, ACKs, DNS) read
 *   after them go first, and so that a standing queue can be noticed: CoDel
 *   (RFC 8289) on the time a read spent queued asks for a congestion signal.
 * - The receive side's CoDel, on the time datagrams waited in the UDP
 *   socket: the peer's TCP is sending faster than this side can open and
 *   deliver.
 * - The signals themselves: an ECN-capable packet is marked Congestion
 *   Experienced, any other costs one dropped segment.
 * - MSS clamping of TCP SYNs, so that hosts behind the tunnel never send
 *   segments the tunnel has to refuse.
 *
 * TAP devices carry Ethernet frames: none of this looks into them, and
 * nothing is marked or clamped. Pure logic: no I/O, no clock, no engine;
 * the loop passes the time and the MTU and counts the drops.
 */
#ifndef YIP_AQM_SHAPE_H
#define YIP_AQM_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aqm/codel.h"
#include "offload/offload.h"

/* One read from the TUN: a virtio-net header and up to 64 KB. */
#define TUN_BUF (OFFLOAD_VNET_LEN + 65536)

#define TXQ_SLOTS  64
#define TXQ_SMALL  (OFFLOAD_VNET_LEN + 256) /* reads this small skip the queue */
#define TXQ_BUDGET (64 * 1024)              /* bytes handed on per serve */

struct txq {
	uint8_t *mem;               /* TXQ_SLOTS * TUN_BUF */
	uint32_t len[TXQ_SLOTS];    /* bytes read, vnet header included */
	uint64_t queued[TXQ_SLOTS]; /* when it was read */
	unsigned head, count;
	size_t bytes;
	struct codel codel;
};

struct shape {
	bool tap;
	struct txq txq;
	struct codel rx_codel;
	uint64_t rx_now, rx_sojourn; /* of the received message being handled */
	uint8_t *buf;                /* a packet marked or clamped on its way to the TUN */
	uint64_t tx_marks, tx_drops; /* signals given by the TUN-side queue */
	uint64_t rx_marks, rx_drops; /* and by the receive side */
};

/* Allocates the queue and buffers once. Returns 0 or -1. */
int shape_init(struct shape *s, bool tap);
void shape_free(struct shape *s);

/* Both CoDels follow the tunnel's largest smoothed RTT (see codel_set). */
void shape_set_rtt(struct shape *s, uint64_t rtt);

/* ---- The TUN side ---- */

/* Whether a read of n bytes waits in the queue (false: it goes on at once). */
static inline bool shape_queues(size_t n)
{
	return n > TXQ_SMALL && n <= TUN_BUF;
}

/* Where the next read can go: a free slot, or NULL if the queue is full. */
uint8_t *shape_txq_slot(struct shape *s);

/* Queues a read of n bytes taken at now; copies it unless buf is the free
 * slot. The queue must not be full. */
void shape_txq_push(struct shape *s, uint64_t now, const uint8_t *buf, size_t n);

/*
 * Takes the oldest read off the queue at now: its bytes (valid until the
 * next push) and length, and whether CoDel asks for a congestion signal
 * (see shape_tx_signal). NULL when the queue is empty.
 */
uint8_t *shape_txq_pop(struct shape *s, uint64_t now, size_t *n, bool *congested);

/* Whether reads are still queued. */
static inline bool shape_txq_pending(const struct shape *s)
{
	return s->txq.count > 0;
}

/*
 * The queue asked for a signal on this read (pkt: the IP packet, after any
 * virtio-net header). Marks it CE if it is ECN-capable and returns false;
 * true means one segment of it must be dropped instead.
 */
bool shape_tx_signal(struct shape *s, uint8_t *pkt, size_t n);

/* Clamps the MSS option of a TCP SYN leaving for the tunnel to fit mtu. */
void shape_clamp(const struct shape *s, uint8_t *pkt, size_t n, unsigned mtu);

/* ---- The receive side ---- */

/* A received message, taken at now, that waited sojourn ns in the socket. */
static inline void shape_rx_message(struct shape *s, uint64_t now, uint64_t sojourn)
{
	s->rx_now = now;
	s->rx_sojourn = sojourn;
}

/*
 * A packet of that message on its way to the TUN: pkt itself, a clamped or
 * CE-marked copy (valid until the next call), or NULL when it must be
 * dropped (the caller counts YIP_DROP_AQM). mtu: the engine's, for SYNs.
 */
const uint8_t *shape_rx(struct shape *s, const uint8_t *pkt, size_t len, unsigned mtu);

/* Marks an ECN-capable IP packet Congestion Experienced; false if it is not ECN-capable. */
bool shape_mark_ce(uint8_t *pkt, size_t n);

/* A TCP SYN in an IP packet. */
bool shape_is_syn(const uint8_t *pkt, size_t len);

#endif
