/*
 * Extra UDP sockets for many-ports probing (docs/nat.md), each a link of
 * its own (link/link.h: YIP_LINK_UDP, not batching): the engine asks for
 * them one at a time, sends probes (and, if one wins, a peer's traffic) on
 * them one datagram at a time, and closes them. They are watched on the
 * loop's epoll set, so both drivers serve them.
 */
#ifndef YIP_UDP_SOCKS_H
#define YIP_UDP_SOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "link/link.h"

#define SOCKS_MAX     300  /* extra sockets at once */
#define SOCKS_EV_BASE 1000 /* epoll tag of extra socket i: SOCKS_EV_BASE + i */

struct socks;

/* One extra socket: the ctx of its link. */
struct socks_one {
	struct socks *set;
	int fd;        /* -1: closed */
	uint32_t link; /* its id in the links table */
};

struct socks {
	int epfd, family;
	struct yip_links *links;              /* where each socket is entered as a link */
	struct socks_one sock[SOCKS_MAX + 1]; /* by number; 0 unused */
	uint8_t *txbuf;                       /* the datagram being built for one of them */
	size_t buf_size;                      /* of txbuf: the links' MTU */
	unsigned open;
	uint64_t sent, send_failed, received, truncated;
};

/* Datagrams of buf_size bytes at most, links entered in links. 0, or -1 (no memory). */
int socks_init(struct socks *s, int epfd, int family, struct yip_links *links, size_t buf_size);
void socks_free(struct socks *s);
/* A new socket's link id (> 0), or -1. */
int64_t socks_open(struct socks *s);
/* Closes the socket of link id link (nothing if it is not one of ours). */
void socks_close(struct socks *s, uint32_t link);

/* What arrived on the socket of link id link: a datagram from `from`. */
typedef void (*socks_rx_fn)(void *arg, uint32_t link, const union yip_sockaddr *from,
                            const uint8_t *d, size_t len);

/* The epoll tag is one of ours: reads what waits on that socket into buf
 * (cap bytes) and hands each datagram to rx (one larger than cap is
 * counted in truncated). Returns false for another tag. */
bool socks_event(struct socks *s, uint32_t tag, uint8_t *buf, size_t cap, socks_rx_fn rx,
                 void *arg);

#endif
