/*
 * The event loop's state and the functions its files share (see loop.h for
 * which file calls which). Only src/loop includes this.
 */
#ifndef YIP_LOOP_INTERNAL_H
#define YIP_LOOP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "aqm/shape.h"
#include "ctl/ctl.h"
#include "ctl/httpd.h"
#include "loop/loop.h"
#include "loop/members.h"
#include "loop/resolve.h"
#include "loop/tls.h"
#include "loop/quic.h"
#include "loop/workers.h"
#include "offload/offload.h"
#include "peer/peer.h"
#include "poll/notify.h"
#include "poll/poll.h"
#include "privsep/privsep.h"
#include "udp/socks.h"
#include "udp/udp.h"

/* What a reload compares the file with, and who opens it (reload.c). */
struct loop_reload {
	bool on;               /* yip_loop_reload_setup was called */
	struct yip_config cfg; /* in force, as written (mtu too); its private key wiped */
	struct privsep *ps;    /* the privileged half: the file, routes, addresses */
	bool resolve;          /* host names may be resolved (the sandbox allows it) */
};

/* Datagrams of one receive batch opened on the workers; the rest inline. */
#define LOOP_OPEN_JOBS 512

/*
 * Tags (epoll data.u32) of the fds a driver adds to the loop's epoll set
 * itself, besides those registered with a callback (src/poll: the
 * signalfd, the control socket, the resolver's eventfd) and the extra
 * sockets (socks.h).
 */
enum { LOOP_EV_UDP = 1, LOOP_EV_TUN };

struct yip_loop {
	struct yip_device *dev; /* set by yip_loop_attach */
	enum yip_io_driver io;
	const char *io_name;
	struct yip_poll poll; /* the epoll set: poll.epfd */
	int sigfd;
	int tun_fd;
	int udp_fd;
	int udp_family;
	union yip_sockaddr listen; /* as configured: a specific address or any */
	uint16_t port;
	char device[IFNAMSIZ]; /* the tunnel device: its addresses are no candidates */
	bool tap;              /* the device is a TAP: Ethernet frames */
	bool vnet;             /* the TUN carries virtio-net headers: TSO in, GRO out */
	struct udp_batch rx, tx;
	struct shape shape;
	uint64_t codel_tuned; /* when shape_set_rtt was last called */
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
	uint8_t *segbuf; /* one segment of a TSO super-packet */
	struct offload_gro gro;
	uint64_t tso_reads, tso_segments; /* super-packets read, packets made of them */
	uint64_t now;                     /* of the TUN read being segmented */
	bool skip_segment;                /* AQM: drop the next TSO segment */
	bool stopped;                     /* a stop signal arrived */
	/* What yipctl shows (device name, port, allowed IPs), kept whether or
	 * not the control socket could be opened: the status log needs it. */
	struct yip_ctl_config ctl_cfg;
	bool ctl_on; /* the control socket is open */
	struct yip_ctl_server ctl;
	/* The metrics endpoint (metrics_listen=; docs/operations.md, "Metrics"). */
	bool metrics_on, metrics_peers;
	uint64_t start_time_s; /* Unix seconds the loop was made */
	struct yip_httpd metrics;
	/* The engine's links (link/link.h): the main UDP socket (l->tx) as
	 * YIP_LINK_MAIN, then the extra sockets. */
	struct yip_links links;
	struct yip_link link_slot[1 + SOCKS_MAX + LOOP_TLS_CONNS + LOOP_QUIC_CONNS];
	struct loop_tls tls;       /* TLS links (tls.h): ids from 1 + SOCKS_MAX on */
	struct loop_quic quic;     /* QUIC links (quic.h): ids after the TLS links' */
	struct socks socks;        /* extra sockets for many-ports probing */
	uint8_t *sockbuf;          /* YIP_MAX_DGRAM: one datagram from an extra socket */
	struct resolver *resolver; /* NULL: no host names to resolve again */
	bool has_sandbox;
	struct sandbox sandbox;      /* entered once the driver is set up */
	struct loop_members members; /* a CA-gated network's files (members.h) */
	struct loop_reload reload;   /* reload.c */
	struct yip_notify *notify;   /* the service manager's socket (notify.c); NULL: none */
	uint64_t next_log_tick;      /* when yip_log_tick runs next */
};

/* ---- reload.c ---- */

/* Applies the configuration file as it now is (see reload.c); what it did in out. */
void loop_reload(struct yip_loop *l, struct yip_ctl_reload *out);
void loop_reload_free(struct loop_reload *r);
/* loop_reload, then a CA-gated node's membership files read again (members.c). */
void loop_reload_all(struct yip_loop *l, struct yip_ctl_reload *out);

/* ---- control.c ---- */

/* Opens the control socket dir/<device>.sock and registers it with the
 * loop's fd registry; on failure logs a warning and leaves it off. */
void loop_ctl_open(struct yip_loop *l, const char *dir);
void loop_ctl_close(struct yip_loop *l);
/* Drops a client past its deadline; returns the deadline still pending, or 0. */
uint64_t loop_ctl_expire(struct yip_loop *l, uint64_t now);
/* yip_loop_status is in control.c as well. */
/* Opens the metrics endpoint of config (if it has one) and registers it.
 * 0, or -1 with a message in err: the daemon must not start. */
int loop_metrics_open(struct yip_loop *l, const struct yip_config *config, char *err,
                      size_t errlen);
void loop_metrics_close(struct yip_loop *l);

/* ---- notify.c: the service manager (src/poll/notify.h) ---- */

/* READY=1, MAINPID and STATUS: the loop serves (after start-up, or after a reload). */
void loop_notify_ready(struct yip_loop *l);
/* RELOADING=1 and MONOTONIC_USEC: a reload begins; loop_notify_ready must follow. */
void loop_notify_reloading(struct yip_loop *l);
/* STOPPING=1: a stop signal arrived. */
void loop_notify_stopping(struct yip_loop *l);
/* From the timer: WATCHDOG=1 when due, STATUS= when it changed (at most once a
 * second). Returns the monotonic ns it wants to run again by, 0: no need. */
uint64_t loop_notify_tick(struct yip_loop *l, uint64_t now);

/* ---- loop.c: for the drivers ---- */

/* Binds the engine to the loop (run.c, before the driver starts). */
void yip_loop_attach(struct yip_loop *l, struct yip_device *dev);

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

/*
 * n messages received into b by recvmmsg at now: opens their datagrams on
 * the workers (if there are any), hands each message on as
 * yip_loop_udp_message does, then flushes.
 */
void yip_loop_udp_batch(struct yip_loop *l, uint64_t now, struct udp_batch *b, int n);
/* One received UDP message: datagrams of seg bytes each (the last may be
 * shorter; 0: one datagram), received by the kernel at stamp (ns since the
 * epoch, 0 if unknown). */
void yip_loop_udp_message(struct yip_loop *l, uint64_t now, const union yip_sockaddr *from,
                          const uint8_t *buf, size_t len, size_t seg, uint64_t stamp);
/* A received message was larger than its buffer. */
void yip_loop_udp_truncated(struct yip_loop *l);

/* Enters the sandbox (if configured) once the driver is set up, then tells
 * the service manager READY (the loop serves from here on); 0, or -1 (logged). */
int yip_loop_sandbox(struct yip_loop *l);

/* Writes out what the receive path coalesced and sends what the engine queued. */
void yip_loop_flush(struct yip_loop *l);

/* Runs the engine's timers; returns the poll timeout in ms (-1: none due within 1 s -> 1000). */
int yip_loop_timeout(struct yip_loop *l);

/*
 * Waits up to timeout ms on the epoll set and handles the loop's own events
 * (the fds registered with callbacks: signals, the control socket, the
 * resolver; and the extra sockets). The driver's events (LOOP_EV_UDP,
 * LOOP_EV_TUN) are moved to the front of evs, of which there are max.
 * Returns how many, or -1 when the loop must end (a stop signal, or
 * epoll_wait failed; l->stopped tells which).
 */
int yip_loop_wait(struct yip_loop *l, int timeout, struct epoll_event *evs, int max);

/* ---- The drivers ---- */

/* epoll.c: the TUN and the UDP socket in the epoll set, read in bursts. */
int yip_loop_run_epoll(struct yip_loop *l);

/*
 * uring.c: reads from the TUN and receives on the UDP socket are kept armed
 * in the ring, so one io_uring_enter both re-arms them and waits; sends stay
 * on sendmmsg. busy: never sleep in the kernel; spin on the completion queue
 * instead (lowest latency, one core fully used). Returns 0 on a stop signal,
 * 1 if the ring cannot be used.
 */
int yip_loop_run_uring(struct yip_loop *l, bool busy);

#endif
