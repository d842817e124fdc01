/* The single-threaded epoll event loop that connects the engine to the TUN
 * device, the UDP socket, timers and signals. */
#ifndef YIP_LOOP_LOOP_H
#define YIP_LOOP_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "aqm/codel.h"
#include "config/config.h"
#include "offload/offload.h"
#include "ctl/ctl.h"
#include "peer/peer.h"
#include "loop/workers.h"
#include "udp/udp.h"

/* Datagrams of one receive batch opened on the workers; the rest inline. */
#define LOOP_OPEN_JOBS 512

/* One read from the TUN: a virtio-net header and up to 64 KB. */
#define TUN_BUF (OFFLOAD_VNET_LEN + 65536)

/*
 * Bulk reads from the TUN wait here, not in the kernel's device queue, so
 * that small packets (pings, ACKs, DNS) read after them go first, and so
 * that a standing queue can be noticed: CoDel (RFC 8289) on the time a read
 * spent queued signals congestion to the inner TCP by marking CE or
 * dropping one segment.
 */
#define TXQ_SLOTS 64
struct txq {
	uint8_t *mem;               /* TXQ_SLOTS * TUN_BUF */
	uint32_t len[TXQ_SLOTS];    /* bytes read, vnet header included */
	uint64_t queued[TXQ_SLOTS]; /* when it was read */
	unsigned head, count;
	size_t bytes;
	struct codel codel;
	uint64_t marks, drops;        /* statistics */
	uint64_t served, sojourn_sum; /* reads handed on, ns they waited in all */
};

struct yip_loop {
	int epfd;
	int sigfd;
	int tun_fd;
	bool tap;  /* the device is a TAP: Ethernet frames, no MSS clamping */
	bool vnet; /* the TUN carries virtio-net headers: TSO in, GRO out */
	struct udp_batch rx, tx;
	struct yip_device *dev;
	uint8_t *tunbuf; /* one read from the TUN: vnet header + up to 64 KB */
	struct txq txq;
	/* Crypto on worker threads (workers > 1): seals queued per send batch,
	 * opens per receive batch, one job per datagram in arrival order. */
	struct workers workers;
	bool threaded;
	struct crypto_job seal_jobs[UDP_BATCH];
	unsigned n_seal;
	struct crypto_keys seal_keys, open_keys;
	struct crypto_job *open_jobs; /* LOOP_OPEN_JOBS */
	uint8_t *open_plain;          /* LOOP_OPEN_JOBS * YIP_MAX_DGRAM */
	unsigned n_open, open_next;
	/* The same signal for datagrams that waited in the UDP socket: the peer's
	 * TCP is sending faster than this side can open and deliver. */
	struct codel rx_codel;
	uint64_t rx_sojourn;  /* of the message being handled, ns */
	uint64_t codel_tuned; /* when the CoDel parameters were last set */
	uint64_t rx_marks, rx_drops;
	uint64_t rx_msgs, rx_sojourn_sum; /* messages received, ns they waited in the socket */
	uint8_t *segbuf;                  /* one segment of a TSO super-packet */
	struct offload_gro gro;
	uint64_t tso_reads, tso_segments; /* super-packets read, packets made of them */
	uint64_t now;      /* of the TUN read being segmented, or the message being received */
	bool stopped;      /* a stop signal arrived */
	bool skip_segment; /* AQM: drop the next TSO segment */
	int udp_fd;
	const char *device_name;
	const char *io_name; /* the driver, for yipctl stats */
	uint16_t port;
	/* The control socket for yipctl (docs/control.md), if yip_loop_ctl made it. */
	bool ctl_on;
	struct yip_ctl_server ctl;
	struct yip_ctl_config ctl_cfg;
};

/*
 * Sets up epoll, signals (INT/TERM stop, USR1 dumps status) and buffers.
 * tap: the device carries Ethernet frames. vnet: the TUN was opened with
 * virtio-net headers (see tun_open); offload: use UDP
 * GSO/GRO where the kernel has them.
 */
int yip_loop_init(struct yip_loop *l, int tun_fd, bool tap, bool vnet, int udp_fd, int udp_family,
                  bool offload, char *err, size_t errlen);

/* Runs the AEAD work on threads threads in all (1: on the loop's thread).
 * Call before yip_loop_io. */
int yip_loop_workers(struct yip_loop *l, unsigned threads);

/* The driver-independent halves of the data path, shared by the epoll and
 * io_uring drivers. */
/*
 * One read from the TUN (n bytes at buf, vnet header first if l->vnet).
 * Small packets go to the engine at once; large ones are queued (copied,
 * unless buf is yip_loop_tun_buf()'s) for yip_loop_tun_serve.
 */
void yip_loop_tun_read(struct yip_loop *l, uint64_t now, uint8_t *buf, size_t n);
/* Where to read the next packet from the TUN: a free queue slot, or NULL if
 * the queue is full (serve it first). */
uint8_t *yip_loop_tun_buf(struct yip_loop *l);
/* Hands queued reads to the engine, up to a budget; true if some remain. */
bool yip_loop_tun_serve(struct yip_loop *l, uint64_t now);
/* One received UDP message: datagrams of seg bytes each (the last may be
 * shorter; 0: one datagram), received by the kernel at stamp (ns since the
 * epoch, 0 if unknown). */
void yip_loop_udp_message(struct yip_loop *l, uint64_t now, const union yip_sockaddr *from,
                          const uint8_t *buf, size_t len, size_t seg, uint64_t stamp);
/* Writes out what the receive path coalesced and sends what the engine queued. */
void yip_loop_flush(struct yip_loop *l);
/* Handles pending signals; returns false (and sets l->stopped) when the daemon should stop. */
bool yip_loop_signals(struct yip_loop *l);
/*
 * Waits up to timeout ms on the epoll set and handles what is ready:
 * signals, the control socket, and the TUN and UDP fds while they are in
 * the set. Returns false when the loop must end (stop signal or error).
 */
bool yip_loop_epoll(struct yip_loop *l, int timeout);
/* Runs the engine's timers; returns the poll timeout in ms (-1: none due within 1 s -> 1000). */
int yip_loop_timeout(struct yip_loop *l);

/* The engine's I/O callbacks, bound to this loop. */
void yip_loop_io(struct yip_loop *l, struct yip_io *io);

/*
 * Opens the control socket dir/<device_name>.sock and serves it from the
 * loop; device_name and port must be set. Keeps a copy of what it needs from
 * cfg (the peers' allowed IPs). On failure logs a warning and returns -1:
 * the daemon works without it.
 */
int yip_loop_ctl(struct yip_loop *l, const struct yip_config *cfg, const char *dir);

/* Runs until SIGINT or SIGTERM. Returns 0. */
int yip_loop_run(struct yip_loop *l, struct yip_device *dev);

/*
 * The same loop driven by io_uring (src/loop/uring.c): reads from the TUN
 * and receives on the UDP socket are kept armed in the ring, so one
 * io_uring_enter both re-arms them and waits; sends stay on sendmmsg. busy: never sleep in the
 * kernel; spin on the completion queue instead (lowest latency, one core
 * fully used). Returns 0 on a stop signal, 1 if the ring cannot be used.
 */
int yip_loop_run_uring(struct yip_loop *l, struct yip_device *dev, bool busy);

/* Logs the device status and every counter (what SIGUSR1 prints). */
void yip_loop_status(const struct yip_loop *l);

/* Frees the loop, closing the control socket and removing its file. */
void yip_loop_free(struct yip_loop *l);

#endif
