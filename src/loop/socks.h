/*
 * Extra UDP sockets for many-ports probing (docs/nat.md): the engine asks
 * for them one at a time, sends probes (and, if one wins, a peer's traffic)
 * from them one datagram at a time, and closes them. They are watched on
 * the loop's epoll set, so both drivers serve them.
 */
#ifndef YIP_LOOP_SOCKS_H
#define YIP_LOOP_SOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "peer/peer.h"

#define SOCKS_MAX     300  /* extra sockets at once */
#define SOCKS_EV_BASE 1000 /* epoll tag of extra socket i: SOCKS_EV_BASE + i */

struct socks {
	int epfd, family;
	int fd[SOCKS_MAX + 1]; /* by id; 0 unused; -1 closed */
	unsigned open;
	uint64_t sent, send_failed, received;
};

void socks_init(struct socks *s, int epfd, int family);
void socks_free(struct socks *s);
/* A new socket's id (> 0), or -1. */
int socks_open(struct socks *s);
void socks_close(struct socks *s, int id);
/* Sends at once; false if the kernel refused. */
bool socks_send(struct socks *s, int id, const union yip_sockaddr *to, const uint8_t *d,
                size_t len);
/* The epoll tag is one of ours: reads what waits on that socket into buf
 * and hands each datagram to the engine at now. Returns false for another tag. */
bool socks_event(struct socks *s, uint32_t tag, struct yip_device *dev, uint64_t now, uint8_t *buf,
                 size_t cap);

#endif
