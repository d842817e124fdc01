/* The single-threaded epoll event loop that connects the engine to the TUN
 * device, the UDP socket, timers and signals. */
#ifndef YIP_LOOP_LOOP_H
#define YIP_LOOP_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "ctl/ctl.h"
#include "peer/peer.h"
#include "udp/udp.h"

struct yip_loop {
	int epfd;
	int sigfd;
	int tun_fd;
	struct udp_batch rx, tx;
	struct yip_device *dev;
	uint8_t *tunbuf;
	const char *device_name;
	uint16_t port;
	/* The control socket for yipctl (docs/control.md), if yip_loop_ctl made it. */
	bool ctl_on;
	struct yip_ctl_server ctl;
	struct yip_ctl_config ctl_cfg;
};

/* Sets up epoll, signals (INT/TERM stop, USR1 dumps status) and buffers. */
int yip_loop_init(struct yip_loop *l, int tun_fd, int udp_fd, int udp_family, char *err,
                  size_t errlen);

/* The engine's I/O callbacks, bound to this loop. */
void yip_loop_io(struct yip_loop *l, struct yip_io *io);

/*
 * Opens the control socket $YIP_CTL_DIR/<device_name>.sock (default
 * /run/yip) and serves it from the loop; device_name and port must be set.
 * Keeps a copy of what it needs from cfg (the peers' allowed IPs). On failure
 * logs a warning and returns -1: the daemon works without it.
 */
int yip_loop_ctl(struct yip_loop *l, const struct yip_config *cfg);

/* Runs until SIGINT or SIGTERM. Returns 0. */
int yip_loop_run(struct yip_loop *l, struct yip_device *dev);

/* Logs the device status and every counter (what SIGUSR1 prints). */
void yip_loop_status(const struct yip_loop *l);

/* Frees the loop, closing the control socket and removing its file. */
void yip_loop_free(struct yip_loop *l);

#endif
