/*
 * The epoll driver of the event loop (io=epoll, the default): the TUN and
 * the UDP socket join the loop's epoll set; the UDP socket is drained with
 * recvmmsg in batches and the TUN read in bursts, each followed by one
 * flush of what the engine produced.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "loop/internal.h"
#include "util/clock.h"
#include "util/log.h"

#define TUN_BURST  64 /* packets read from the TUN per wakeup before looking elsewhere */
#define UDP_BURST  4  /* recvmmsg batches per wakeup */
#define MAX_EVENTS 8

static void on_udp(struct yip_loop *l)
{
	for (int burst = 0; burst < UDP_BURST; burst++) {
		int n = udp_recv(&l->rx);

		yip_loop_udp_batch(l, yip_now_mono(), &l->rx, n);
		if (n < UDP_BATCH)
			break;
	}
}

static void on_tun(struct yip_loop *l)
{
	uint64_t now = yip_now_mono();

	for (int i = 0; i < TUN_BURST; i++) {
		uint8_t *buf = yip_loop_tun_buf(l);
		ssize_t n;

		if (buf == NULL)
			break; /* the queue is full; the device holds the rest */
		n = read(l->tun_fd, buf, TUN_BUF);
		if (n <= 0)
			break;
		yip_loop_tun_read(l, now, buf, (size_t)n);
	}
	yip_loop_tun_serve(l, now);
	yip_loop_flush(l);
}

static int watch(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int yip_loop_run_epoll(struct yip_loop *l)
{
	struct epoll_event evs[MAX_EVENTS];
	int n;

	if (watch(l->poll.epfd, l->udp_fd, LOOP_EV_UDP) != 0 ||
	    watch(l->poll.epfd, l->tun_fd, LOOP_EV_TUN) != 0) {
		log_err("io=epoll: cannot watch the TUN and the UDP socket: %s", strerror(errno));
		return 1;
	}
	if (yip_loop_sandbox(l) != 0)
		return 1;
	while ((n = yip_loop_wait(l, yip_loop_timeout(l), evs, MAX_EVENTS)) >= 0) {
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u32 == LOOP_EV_UDP)
				on_udp(l);
			else if (evs[i].data.u32 == LOOP_EV_TUN)
				on_tun(l);
		}
	}
	return l->stopped ? 0 : 1;
}
