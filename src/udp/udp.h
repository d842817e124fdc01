/* The UDP socket and batched receive/send (recvmmsg/sendmmsg). */
#ifndef YIP_UDP_UDP_H
#define YIP_UDP_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "addr/addr.h"

#define UDP_BATCH 64

/*
 * Binds the tunnel socket. AF_UNSPEC listen means dual-stack [::]. Without
 * an explicit port, 443 is tried first and 8443 if 443 cannot be bound.
 * Sets 4 MiB socket buffers. Returns the fd and the bound port, or -1 with err.
 */
int udp_open(const union yip_sockaddr *listen, bool port_given, uint16_t default_port,
             uint16_t fallback_port, uint16_t *bound_port, char *err, size_t errlen);

struct udp_batch {
	int fd;
	int family;     /* of the socket */
	unsigned count; /* queued (tx) or received (rx) */
	size_t buf_size;
	uint8_t *bufs; /* UDP_BATCH * buf_size */
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	union yip_sockaddr addrs[UDP_BATCH];
};

/* Allocates the buffers once. Returns 0 or -1. */
int udp_batch_init(struct udp_batch *b, int fd, int family, size_t buf_size);
void udp_batch_free(struct udp_batch *b);

static inline uint8_t *udp_batch_buf(struct udp_batch *b, unsigned i)
{
	return b->bufs + (size_t)i * b->buf_size;
}

/*
 * Receives up to UDP_BATCH datagrams. Returns the count (0 when nothing is
 * waiting). Datagrams larger than buf_size have MSG_TRUNC in msgs[i].msg_flags.
 */
int udp_recv(struct udp_batch *b);

/* Send side: the buffer for the next datagram, flushing first if the batch is full. */
uint8_t *udp_tx_buf(struct udp_batch *b, uint64_t *failed);

/* Queues the datagram in the current buffer for to. Returns false if to cannot be
 * reached from this socket's family. */
bool udp_tx_push(struct udp_batch *b, const union yip_sockaddr *to, size_t len);

/* Sends everything queued; adds datagrams the kernel refused to *failed. */
void udp_tx_flush(struct udp_batch *b, uint64_t *failed);

#endif
