/*
 * yip-rendezvous's event loop: the rendezvous engine (src/rendezvous) on
 * two UDP sockets, the main port and the second port for NAT mapping
 * probes, with batched receives and sends (src/udp: recvmmsg, sendmmsg,
 * UDP GSO for runs of equal-size datagrams to one node, which is what a
 * relayed flow is), a signalfd (INT and TERM stop, USR1 logs the status,
 * HUP reads the revocation list again) and the control socket
 * <ctl_dir>/rendezvous.sock (src/ctl/rendezvous.h), all of them fds
 * registered with src/poll; with --listen-tcp, the TLS front (front.h),
 * whose many fds are its own in the same epoll set; with --listen-quic,
 * the QUIC listener (quic.h), one more UDP socket; or, with --reality-dest,
 * the REALITY front (reality.h) in the TLS front's place. It shares
 * src/poll and src/udp with yipd's loop (src/loop) and calls nothing of it.
 */
#ifndef YIP_RDVLOOP_RDVLOOP_H
#define YIP_RDVLOOP_RDVLOOP_H

#include <stdint.h>

#include "addr/addr.h"
#include "poll/notify.h"
#include "rdvloop/front.h"
#include "rdvloop/quic.h"
#include "rdvloop/reality.h"
#include "rendezvous/rendezvous.h"
#include "sandbox/sandbox.h"

struct rdv_loop_config {
	const struct rdv_config *engine;      /* copied by the engine */
	int fd[RDV_SOCKS];                    /* bound UDP sockets; fd[RDV_SOCK_ALT] -1: none */
	int family;                           /* of both: AF_INET, or AF_INET6 (dual-stack) */
	union yip_sockaddr listen;            /* the main socket's address, for the status */
	uint16_t alt_port;                    /* the second socket's port, 0: none */
	const char *ctl_dir;                  /* where the control socket goes; NULL: none */
	const struct sandbox *sandbox;        /* entered once set up; NULL: none */
	const struct rdv_members *members;    /* members only; NULL: open to every node */
	const struct rdv_front_config *front; /* the TLS front (its fd the loop's); NULL: none */
	const struct rdv_quic_config *quic; /* the QUIC listener (its fd the loop's); NULL: none */
	/* The REALITY front on listen_tcp instead of the TLS front (its fd the loop's); NULL: none
	 */
	const struct rdv_reality_config *reality;
	/* SIGHUP on a members-only server: fills *m with the gate as its files
	 * now say (0) or logs why not (-1); the gate filled by the call before
	 * stays valid until this one returns. NULL: nothing to reload. */
	int (*reload)(void *arg, struct rdv_members *m);
	void *reload_arg;
	/* The service manager's socket (src/poll/notify.h), the caller's to
	 * open and close: READY once serving, STOPPING, WATCHDOG, STATUS
	 * ("12 nodes registered, 3 relaying"). NULL: none. */
	struct yip_notify *notify;
	/* The metrics endpoint (--metrics-listen; docs/operations.md); NULL: none. */
	const union yip_sockaddr *metrics_listen;
};

/*
 * Sets up (sockets watched, the engine, the control socket), enters the
 * sandbox, and keeps the engine's memory (its private key) out of core
 * dumps and swap; then runs the server until SIGINT or SIGTERM, logs its counters and
 * removes the control socket. A control socket that cannot be opened is
 * logged and done without. Returns 0 after a stop signal, 1 when the loop
 * could not be set up or failed (the reason is logged). Closes no fd of c
 * but the front's listener.
 */
int rdv_loop_run(const struct rdv_loop_config *c);

#endif
