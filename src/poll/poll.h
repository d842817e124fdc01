/*
 * What the event loops of both daemons (yipd's, src/loop; yip-rendezvous's,
 * src/rdvloop) stand on:
 *
 *   poll.c     the fd registry: an epoll set whose fds are registered with
 *              a callback each, and one wait that calls them back
 *   daemon.c   the signals both daemons take and the way they log a status
 *   notify.c   the service manager's notification socket (sd_notify, notify.h)
 *
 * A loop registers the fds it serves the same way whatever they are (the
 * signalfd, the control socket and its client, an eventfd, the rendezvous
 * server's sockets) and calls yip_poll_wait; src/ctl registers its own
 * client sockets as it accepts them. A loop may also add fds of its own to
 * the set (p->epfd) with an epoll tag below YIP_POLL_OWN: their events are
 * not the registry's and come back to the caller of yip_poll_wait (yipd's
 * drivers do this for the TUN and the UDP sockets, which they read in
 * bursts). Nothing is allocated after yip_poll_open.
 */
#ifndef YIP_POLL_POLL_H
#define YIP_POLL_POLL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#define YIP_POLL_MAX 16          /* fds registered at once */
#define YIP_POLL_OWN 0x80000000u /* epoll tags (data.u32) from here on are the registry's */

/* Called with the epoll events (EPOLLIN, ...) of a registered fd. */
typedef void (*yip_poll_fn)(void *ctx, uint32_t events);

struct yip_poll_entry {
	int fd; /* -1: a free slot */
	/* The entry's epoll tag: YIP_POLL_OWN, a generation, the slot. An
	 * event still pending for an fd removed during the same wait finds
	 * the tag changed and is dropped, even if the slot was taken again. */
	uint32_t tag;
	yip_poll_fn fn;
	void *ctx;
};

struct yip_poll {
	int epfd; /* -1: not open */
	bool stopped;
	uint32_t gen;
	struct yip_poll_entry e[YIP_POLL_MAX];
};

/* Creates the epoll set. 0, or -1 with errno. */
int yip_poll_open(struct yip_poll *p);

/* Closes the epoll set (not the registered fds). Safe to repeat, and on a
 * struct yip_poll that yip_poll_open failed on. */
void yip_poll_close(struct yip_poll *p);

/* Watches fd for events (EPOLLIN, ...), calling fn(ctx, events) from
 * yip_poll_wait. 0, or -1 with errno (ENOSPC: YIP_POLL_MAX are registered). */
int yip_poll_add(struct yip_poll *p, int fd, uint32_t events, yip_poll_fn fn, void *ctx);

/* Changes the events a registered fd is watched for. 0, or -1 with errno. */
int yip_poll_mod(struct yip_poll *p, int fd, uint32_t events);

/* Stops watching fd (before it is closed); nothing if it is not registered. */
void yip_poll_del(struct yip_poll *p, int fd);

/*
 * Waits up to timeout ms (-1: no limit) for events on the set and calls
 * back every registered fd that has some, in the order epoll reports them.
 * The other events (tags below YIP_POLL_OWN), of which evs has room for
 * max, are moved to its front. Returns how many; 0 after a signal
 * interrupted the wait; -1 when epoll_wait failed (errno) or a callback
 * called yip_poll_stop, which ends the wait at once.
 */
int yip_poll_wait(struct yip_poll *p, int timeout, struct epoll_event *evs, int max);

/* Called from a callback: yip_poll_wait returns -1 after it, now and from
 * then on (the loop is ending). */
void yip_poll_stop(struct yip_poll *p);

#endif
