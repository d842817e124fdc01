/*
 * yipd's privileged half. Once set up, yipd runs as an unprivileged user
 * with no capabilities (src/sandbox), so it can neither read its
 * configuration file again (it holds the private key: root's, mode 0600)
 * nor change its device's routes. A reload needs both. Before the sandbox,
 * privsep_start forks a small process that stays root with only
 * CAP_NET_ADMIN and CAP_DAC_READ_SEARCH, under its own seccomp filter, and
 * does exactly three things when the daemon asks over a socket pair
 * (wire/privsep.h): open the configuration file named at start, read-only,
 * and hand over the descriptor; add or remove a route through the daemon's
 * own device; add or remove an address on it. It reads no file's
 * contents, holds no key, and exits when the daemon does.
 *
 * With the sandbox off, or a daemon that stays root, there is no second
 * process: the same calls do the work in the daemon itself.
 */
#ifndef YIP_PRIVSEP_PRIVSEP_H
#define YIP_PRIVSEP_PRIVSEP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "addr/addr.h"
#include "config/config.h"

#define PRIVSEP_PATH_MAX 4096
#define PRIVSEP_REPLY_MS 5000 /* the daemon waits this long for an answer */

struct privsep {
	int fd;                      /* the daemon's end of the pair; -1: no second process */
	pid_t pid;                   /* of the privileged half; 0: none */
	char path[PRIVSEP_PATH_MAX]; /* the configuration file */
	char ifname[IFNAMSIZ];
};

/*
 * Sets ps up for the configuration file path and device ifname. With
 * separate true, forks the privileged half (call it before any thread
 * starts), which first wipes wipe_len bytes at wipe (the daemon's
 * secrets, which it has a copy of); otherwise only records them. 0, or -1 with a message in err.
 */
int privsep_start(struct privsep *ps, const char *path, const char *ifname, bool separate,
                  enum yip_sandbox_mode mode, void *wipe, size_t wipe_len, char *err,
                  size_t errlen);

/* Ends the privileged half: closes the pair, which it reads as the end. */
void privsep_stop(struct privsep *ps);

/* The configuration file opened read-only: a descriptor, or -1 with a message in err. */
int privsep_open_config(struct privsep *ps, char *err, size_t errlen);

/* A route to c through the device added (add) or removed; 0, or -1 with a message. */
int privsep_route(struct privsep *ps, const struct yip_cidr *c, bool add, char *err, size_t errlen);

/* An address c on the device added or removed; 0, or -1 with a message. */
int privsep_address(struct privsep *ps, const struct yip_cidr *c, bool add, char *err,
                    size_t errlen);

#endif
