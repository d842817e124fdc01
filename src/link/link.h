/*
 * Links: what the engine's datagrams travel on. A link is one way of
 * carrying datagrams between this node and others: today a UDP socket (the
 * main one, or an extra one opened for many-ports probing); later a TLS
 * stream over TCP, a QUIC connection, a relay-front stream. Several links
 * of several kinds are open at once (many TLS connections, one per peer,
 * beside the UDP sockets). The engine sends "a datagram on this link to
 * this address" and is handed "a datagram from this link"; what a link does
 * with a datagram (a sendmmsg batch, a length-prefixed record in a TLS
 * stream) is its own business.
 *
 * The I/O layer (the daemon's loop, or a test's harness) owns a table of
 * links, struct yip_links, and gives the engine a pointer to it in struct
 * yip_io. A link's id is its place in the table; id 0, YIP_LINK_MAIN, is
 * the main UDP socket. A path (struct yip_path) names the link it uses by
 * id, and so does every received datagram (yip_device_rx_link).
 *
 * What a link tells the engine (struct yip_link):
 *   - mtu: the largest datagram it carries; the engine sends none larger
 *     (one that would be is counted as send_failed instead);
 *   - YIP_LINK_RELIABLE: it delivers every datagram, in order (a stream).
 *     A path over it sends data plainly: no FEC repair symbols, no ARQ
 *     history kept, no NACKs for gaps seen on it;
 *   - YIP_LINK_BATCH: sends wait in the link until the I/O layer flushes
 *     (as the main UDP socket's sendmmsg batch does). Only then may the
 *     I/O layer seal data datagrams later (struct yip_io.seal_later), and
 *     only such a link uses the block hint (see send below).
 *
 * Adding a link kind (a TLS link, say):
 *   1. Add its kind to enum yip_link_kind and its name to
 *      yip_link_kind_name; nothing else in this header changes.
 *   2. Write its module on the OS side (src/tlslink, say, next to src/udp,
 *      driving src/tls, the engine's TLS client: add an "os:" line for it
 *      to src/MODULES, which the build and the layering check read), with
 *      a const struct yip_link_ops of its functions: buf and send. The
 *      engine needs nothing else.
 *   3. The daemon's loop opens a link (connects, or accepts a connection),
 *      registers it with yip_link_add (its ops, its own state as ctx, its
 *      MTU and flags) and gets its id; it watches the link's fd and hands
 *      every datagram that arrives on it to yip_device_rx_link with that
 *      id. To send the engine's datagrams to a peer over it before the
 *      peer has written on it, it tells the engine with
 *      yip_device_link_path. When the link goes away, the loop calls
 *      yip_device_link_closed (the engine forgets every path over it),
 *      then yip_link_del.
 *
 * Buffers: the link owns them. buf hands the engine a buffer of at least
 * YIP_MAX_DGRAM bytes (peer/peer.h) in which the engine builds the next
 * datagram, in place (no copy), and send takes it; the buffer is the
 * link's again after send. A received datagram stays the I/O layer's: the
 * engine reads it during yip_device_rx_link and keeps no pointer to it.
 *
 * What the engine guarantees: it calls buf, then send once for that
 * buffer, before it calls buf again on any link (so links may share a
 * buffer); it never calls a link the table no longer holds (ops NULL: the
 * datagram is counted as send_failed); it never sends more than mtu bytes;
 * it calls the links only from within an engine call, on the I/O layer's
 * thread; and once yip_device_link_closed returns, no path refers to the
 * link, so its id may be reused.
 */
#ifndef YIP_LINK_LINK_H
#define YIP_LINK_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"

/* The main UDP socket's link, always present where the engine runs. */
#define YIP_LINK_MAIN 0

enum yip_link_kind {
	YIP_LINK_UDP = 0, /* a UDP socket: the main one, or an extra one (many-ports probing) */
	YIP_LINK_MEMORY,  /* a harness's link in memory (unit tests, benchmarks) */
	YIP_LINK_TLS,     /* a TLS connection over TCP (src/loop/tls.c) */
	YIP_LINK_QUIC,    /* a QUIC connection's DATAGRAM frames (src/loop/quic.c) */
	YIP_LINK_KINDS
};

static inline const char *yip_link_kind_name(unsigned kind)
{
	static const char *const names[YIP_LINK_KINDS] = {"udp", "memory", "tls", "quic"};

	return kind < YIP_LINK_KINDS ? names[kind] : "?";
}

/* Properties (struct yip_link.flags); see the top of this file. */
#define YIP_LINK_RELIABLE 0x1u
#define YIP_LINK_BATCH    0x2u

/* What a kind of link implements. ctx is the link's (struct yip_link.ctx),
 * link its id. */
struct yip_link_ops {
	enum yip_link_kind kind;
	/* A buffer of YIP_MAX_DGRAM bytes to build the next datagram in; never NULL. */
	uint8_t *(*buf)(void *ctx, uint32_t link);
	/*
	 * Sends the len-byte datagram built in the last buf() to `to`; false
	 * if it refused it now (the engine counts send_failed). block is 0, or
	 * a tag naming the FEC block the datagram carries a symbol of, where
	 * losing the block's symbols together costs more than losing them
	 * apart: a batching link never puts two datagrams of one non-zero tag
	 * in one batch (for UDP, one GSO train), so that losing a whole batch
	 * costs a block one symbol at most. Other links ignore it.
	 */
	bool (*send)(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
	             uint32_t block);
};

struct yip_link {
	const struct yip_link_ops *ops; /* NULL: no link has this id */
	void *ctx;                      /* the kind's state of this link */
	uint32_t mtu;                   /* the largest datagram it carries */
	uint32_t flags;                 /* YIP_LINK_RELIABLE, YIP_LINK_BATCH */
};

/* The I/O layer's links, by id: cap slots, which it allocates. */
struct yip_links {
	struct yip_link *slot;
	uint32_t cap;
};

/* Link id, or NULL if the table holds none by that id. */
static inline const struct yip_link *yip_link_get(const struct yip_links *t, uint32_t id)
{
	return t != NULL && id < t->cap && t->slot[id].ops != NULL ? &t->slot[id] : NULL;
}

/* Puts a link in slot id (free until now). 0, or -1 if id is taken or out of range. */
static inline int yip_link_set(struct yip_links *t, uint32_t id, const struct yip_link_ops *ops,
                               void *ctx, uint32_t mtu, uint32_t flags)
{
	if (id >= t->cap || t->slot[id].ops != NULL)
		return -1;
	t->slot[id] = (struct yip_link){ops, ctx, mtu, flags};
	return 0;
}

/* Puts a link in the lowest free slot from `from` on; its id, or -1 if the table is full. */
static inline int64_t yip_link_add(struct yip_links *t, uint32_t from,
                                   const struct yip_link_ops *ops, void *ctx, uint32_t mtu,
                                   uint32_t flags)
{
	for (uint32_t id = from; id < t->cap; id++)
		if (yip_link_set(t, id, ops, ctx, mtu, flags) == 0)
			return id;
	return -1;
}

/* Frees slot id (nothing if it is free). */
static inline void yip_link_del(struct yip_links *t, uint32_t id)
{
	if (id < t->cap)
		t->slot[id] = (struct yip_link){0};
}

#endif
