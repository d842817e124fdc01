/*
 * The UDP socket and batched receive/send (recvmmsg/sendmmsg): the first
 * kind of link (link/link.h). The daemon's loop makes the main socket's
 * send batch link YIP_LINK_MAIN (batching: a FEC block hint becomes a GSO
 * train tag); the extra sockets of many-ports probing are links of their
 * own (socks.h).
 */
#ifndef YIP_UDP_UDP_H
#define YIP_UDP_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "addr/addr.h"

#define UDP_BATCH 64

/* Gives fd the tunnel's socket buffers (64 MB to read, 16 MB to write; see
 * udp.c): what the kernel charges is what is queued. Beyond rmem_max and
 * wmem_max only while the process may (CAP_NET_ADMIN). */
void udp_set_buffers(int fd);

/*
 * Binds the tunnel socket. AF_UNSPEC listen means dual-stack [::]. Without
 * an explicit port, 443 is tried first and 8443 if 443 cannot be bound.
 * Sets a 64 MiB receive buffer and a 16 MiB send buffer (udp.c says why).
 * Returns the fd and the bound port, or -1 with err.
 */
int udp_open(const union yip_sockaddr *listen, bool port_given, uint16_t default_port,
             uint16_t fallback_port, uint16_t *bound_port, char *err, size_t errlen);

#define UDP_GSO_MAX_SEGS  64    /* datagrams in one GSO train (the kernel's minimum limit) */
#define UDP_GSO_MAX_BYTES 65000 /* payload of one train */
#define UDP_GRO_BUF       65536 /* receive buffer per message when GRO is on */
/* Control data of a received message: the GRO segment size and the time. */
#define UDP_CTRL_LEN (CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec)))

struct udp_batch {
	int fd;
	int family;     /* of the socket */
	unsigned count; /* datagrams queued (tx) or messages received (rx) */
	size_t buf_size;
	bool gso;      /* tx: send runs of equal-size datagrams as one UDP_SEGMENT train */
	bool gro;      /* rx: the socket has UDP_GRO; a message may hold several datagrams */
	uint8_t *bufs; /* UDP_BATCH * buf_size */
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	union yip_sockaddr addrs[UDP_BATCH];
	uint32_t trains[UDP_BATCH]; /* tx: each datagram's train tag (a link's block hint,
	                               link/link.h) */
	uint16_t segs[UDP_BATCH];   /* tx: datagrams in each message; rx: segment size */
	uint64_t stamps[UDP_BATCH]; /* rx: kernel receive time, ns since the epoch (0 = none) */
	union {
		char buf[UDP_CTRL_LEN];
		struct cmsghdr align;
	} ctrl[UDP_BATCH];
	uint64_t trains_sent, train_dgrams; /* tx statistics: messages, datagrams in them */
};

/*
 * Allocates the buffers once. A receive batch (rx true) turns UDP_GRO on when
 * offload is asked for and the kernel has it, and then sizes its buffers for
 * whole trains; a send batch uses UDP_SEGMENT under the same conditions.
 * Returns 0 or -1.
 */
int udp_batch_init(struct udp_batch *b, int fd, int family, size_t buf_size, bool rx, bool offload);
void udp_batch_free(struct udp_batch *b);

static inline uint8_t *udp_batch_buf(struct udp_batch *b, unsigned i)
{
	return b->bufs + (size_t)i * b->buf_size;
}

/*
 * Receives up to UDP_BATCH messages. Returns the count (0 when nothing is
 * waiting). Messages larger than buf_size have MSG_TRUNC in
 * msgs[i].msg_flags. With GRO a message holds consecutive datagrams of
 * segs[i] bytes each (the last may be shorter).
 */
int udp_recv(struct udp_batch *b);

/*
 * Reads a received message's control data: the UDP_GRO segment size (0 if
 * none) and the kernel's receive timestamp in ns since the epoch (0 if none).
 */
void udp_msg_info(struct msghdr *h, uint16_t *seg, uint64_t *stamp);

/* Send side: the buffer for the next datagram; NULL if the batch is full (flush it first). */
uint8_t *udp_tx_buf(struct udp_batch *b);

/* to as a socket of this family must write it (IPv4-mapped on a dual-stack
 * socket); false if such a socket cannot reach it. */
bool udp_dest(int family, const union yip_sockaddr *to, union yip_sockaddr *out);

/* A non-blocking UDP socket of the family (dual-stack for AF_INET6) on an
 * ephemeral port, for many-ports probing; -1 on failure. */
int udp_open_ephemeral(int family);

/* Queues the datagram in the current buffer for to. Returns false if to cannot be
 * reached from this socket's family. */
bool udp_tx_push(struct udp_batch *b, const union yip_sockaddr *to, size_t len, uint32_t train);

/* Sends everything queued; returns how many datagrams the kernel refused. */
unsigned udp_tx_flush(struct udp_batch *b);

/*
 * The largest datagram payload that leaves for to without fragmentation, as
 * the kernel's route (and any learned path MTU) says: the MTU minus the IP
 * and UDP headers. 0 if there is no route.
 */
unsigned udp_path_payload(const union yip_sockaddr *to);

/*
 * This host's own addresses a peer on the same network could reach us at,
 * each with port: the socket's bound address if it is a specific one;
 * otherwise the addresses of every interface that is up, except loopback,
 * link-local and multicast ones, those of interface `skip` (the tunnel
 * device itself), and IPv6 ones when family is AF_INET. IPv4 first. Returns
 * how many it wrote (at most max).
 */
size_t udp_local_addrs(const union yip_sockaddr *bound, int family, uint16_t port, const char *skip,
                       union yip_sockaddr *out, size_t max);

#endif
