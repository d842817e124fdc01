/*
 * yipd's event loop: single-threaded, it connects the engine to the TUN
 * device, the UDP socket, timers, signals and the control socket.
 *
 * The files of src/loop, each calling only those below it:
 *
 *   run.c       yip_loop_run: picks the driver
 *   epoll.c     the epoll driver        uring.c   the io_uring driver
 *   loop.c      the engine's I/O callbacks and the driver-independent
 *               halves of the data path, timers and signals
 *   control.c   the control socket and the status log (src/ctl)
 *   notify.c    READY, RELOADING, STOPPING, WATCHDOG, STATUS to the service manager
 *   members.c   a CA-gated network's files: certificate, root set, revocations, state_dir
 *   resolve.c   host names of endpoints, resolved again on a thread of its own
 *   workers.c   the crypto worker pool
 *
 * Below them: src/poll (the fd registry the loop's own fds are dispatched
 * through, and the signals both daemons take), src/aqm/shape.c (the
 * TUN-side queue, CoDel, CE marking, MSS clamping), src/udp. yip-rendezvous's
 * loop is src/rdvloop, which shares those and calls none of these.
 *
 * The loop's state (struct yip_loop, src/loop/internal.h) is private to
 * these files.
 */
#ifndef YIP_LOOP_LOOP_H
#define YIP_LOOP_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "peer/peer.h"
#include "poll/notify.h"
#include "sandbox/sandbox.h"

struct yip_loop;

#define YIP_RESOLVE_INTERVAL_NS (60ULL * 1000000000ULL) /* resolve_interval's default */

struct yip_loop_config {
	int tun_fd;
	bool tap;  /* the device is a TAP: Ethernet frames, never clamped or CE-marked */
	bool vnet; /* the TUN carries virtio-net headers (see tun_open): TSO in, GRO out */
	int udp_fd;
	int udp_family;   /* of the UDP socket: AF_INET or AF_INET6 */
	bool udp_offload; /* use UDP GSO/GRO where the kernel has them */
	const char *device_name;
	uint16_t port;                   /* the UDP port bound */
	enum yip_io_driver io;           /* the driver yip_loop_run uses */
	unsigned workers;                /* threads doing AEAD work in all (1: the loop's own) */
	const char *ctl_dir;             /* where the control socket goes; NULL: no socket */
	const struct yip_config *config; /* for yipctl (the peers' allowed IPs); copied */
	/* Host names in config are resolved again this often (ns); 0: never. */
	uint64_t resolve_interval;
	/* Entered by yip_loop_run once its driver is set up; copied. NULL: none. */
	const struct sandbox *sandbox;
	/* The name a self-signed TLS certificate is for (listen_tls without
	 * tls_cert; docs/transports.md). NULL: "localhost". */
	const char *host_name;
	/* The service manager's notification socket (src/poll/notify.h), opened
	 * by the caller and kept open by it until yip_loop_free; the loop sends
	 * READY, RELOADING, STOPPING, WATCHDOG and STATUS on it. NULL: none. */
	struct yip_notify *notify;
};

/*
 * Sets up the loop: the fd registry (src/poll), signals (INT and TERM stop,
 * USR1 logs the status, HUP reads a CA-gated node's membership files again
 * and is logged and ignored on other nodes), buffers, the worker threads,
 * and the control socket dir/<device_name>.sock. The daemon runs without a control socket
 * that cannot be opened (a warning is logged). Returns the loop, or NULL
 * with a message in err.
 */
struct yip_loop *yip_loop_init(const struct yip_loop_config *c, char *err, size_t errlen);

/*
 * On a CA-gated node (ca in the configuration): copies the membership
 * files' paths and opens the state directory (members.c), as root, before
 * the sandbox: made 0700 if missing, refused if it is a symbolic link,
 * belongs to neither root nor the daemon's user, or group or others may
 * write to it, and handed to the daemon's user through its descriptor.
 * Nothing to do otherwise. 0, or -1 with "state_dir DIR: what is wrong"
 * in err (a configuration error).
 */
int yip_loop_members_setup(struct yip_loop *l, const struct yip_config *cfg, char *err,
                           size_t errlen);

/*
 * After yip_loop_members_setup, on a CA-gated node: makes dev a member with the
 * certificate file and offers it the root set and revocation list (the
 * state directory's and the configured files); SIGHUP reads them again.
 * Nothing to do otherwise. 0, or -1 with a message in err.
 */
int yip_loop_members_start(struct yip_loop *l, struct yip_device *dev, char *err, size_t errlen);

struct privsep;

/*
 * Makes the loop able to reload (SIGHUP, `yipctl reload`): cfg is the
 * configuration in force as written (taken over: *cfg is left empty; its
 * private key is wiped), ps opens the file and changes routes and
 * addresses (src/privsep; it outlives the loop), and resolve says whether
 * host names may be resolved in the sandbox. Without it a reload is refused.
 */
void yip_loop_reload_setup(struct yip_loop *l, struct yip_config *cfg, struct privsep *ps,
                           bool resolve);

/* The engine's I/O callbacks, bound to this loop. */
void yip_loop_io(struct yip_loop *l, struct yip_io *io);

/*
 * Runs the engine dev (made with yip_loop_io's callbacks) on the configured
 * driver until SIGINT or SIGTERM. The driver sets up (the io_uring ring),
 * then the sandbox is entered, before the first event. Returns 0 on a stop
 * signal; 1 when the loop failed (e.g. the ring of io=uring cannot be set
 * up, or the sandbox cannot be entered).
 */
int yip_loop_run(struct yip_loop *l, struct yip_device *dev);

/*
 * Logs the device's status, what SIGUSR1 logs: the text of `yipctl show`
 * and `yipctl stats`, line by line, each prefixed "status: ". Works without
 * the control socket. Call after yip_loop_run.
 */
void yip_loop_status(struct yip_loop *l);

/* The name of an I/O driver as configured and shown: "epoll", "uring", "uring-busy". */
const char *yip_loop_io_name(enum yip_io_driver io);

/* Frees the loop, closing the control socket and removing its file. NULL is fine. */
void yip_loop_free(struct yip_loop *l);

#endif
