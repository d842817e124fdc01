#include "loop/loop.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/hex.h"
#include "util/log.h"

#define TUN_BUF   65536
#define TUN_BURST 64 /* packets read from the TUN per wakeup before looking elsewhere */
#define UDP_BURST 4  /* recvmmsg batches per wakeup */

enum { EV_UDP = 1, EV_TUN, EV_SIG, EV_CTL, EV_CTL_CLIENT };

static uint8_t *io_udp_buf(void *ctx)
{
	struct yip_loop *l = ctx;

	return udp_tx_buf(&l->tx, &l->dev->drops[YIP_DROP_SEND_FAILED]);
}

static void io_udp_send(void *ctx, const union yip_sockaddr *to, size_t len)
{
	struct yip_loop *l = ctx;

	if (!udp_tx_push(&l->tx, to, len))
		yip_device_drop(l->dev, YIP_DROP_SEND_FAILED);
}

static void io_tun_write(void *ctx, const uint8_t *pkt, size_t len)
{
	struct yip_loop *l = ctx;

	if (write(l->tun_fd, pkt, len) != (ssize_t)len)
		yip_device_drop(l->dev, YIP_DROP_TUN_WRITE_FAILED);
}

static uint64_t io_wall(void *ctx)
{
	(void)ctx;
	return yip_now_wall();
}

void yip_loop_io(struct yip_loop *l, struct yip_io *io)
{
	io->ctx = l;
	io->udp_buf = io_udp_buf;
	io->udp_send = io_udp_send;
	io->tun_write = io_tun_write;
	io->wall_ns = io_wall;
}

static int watch(int epfd, int fd, int tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)tag};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int yip_loop_init(struct yip_loop *l, int tun_fd, int udp_fd, int udp_family, char *err,
                  size_t errlen)
{
	sigset_t mask;

	memset(l, 0, sizeof(*l));
	l->ctl.fd = l->ctl.client = l->ctl.epfd = -1;
	l->tun_fd = tun_fd;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	l->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	l->tunbuf = malloc(TUN_BUF);
	if (l->epfd < 0 || l->sigfd < 0 || l->tunbuf == NULL ||
	    udp_batch_init(&l->rx, udp_fd, udp_family, YIP_MAX_DGRAM) != 0 ||
	    udp_batch_init(&l->tx, udp_fd, udp_family, YIP_MAX_DGRAM) != 0 ||
	    watch(l->epfd, udp_fd, EV_UDP) != 0 || watch(l->epfd, tun_fd, EV_TUN) != 0 ||
	    watch(l->epfd, l->sigfd, EV_SIG) != 0) {
		snprintf(err, errlen, "event loop setup failed: %s", strerror(errno));
		yip_loop_free(l);
		return -1;
	}
	return 0;
}

void yip_loop_free(struct yip_loop *l)
{
	if (l->ctl_on) {
		yip_ctl_server_close(&l->ctl);
		yip_ctl_config_free(&l->ctl_cfg);
		l->ctl_on = false;
	}
	if (l->epfd > 0)
		close(l->epfd);
	if (l->sigfd > 0)
		close(l->sigfd);
	udp_batch_free(&l->rx);
	udp_batch_free(&l->tx);
	free(l->tunbuf);
	l->tunbuf = NULL;
	l->epfd = l->sigfd = -1;
}

int yip_loop_ctl(struct yip_loop *l, const struct yip_config *cfg)
{
	const char *name = l->device_name ? l->device_name : "";
	char err[256];

	if (yip_ctl_server_open(&l->ctl, yip_ctl_dir(), name, err, sizeof(err)) != 0) {
		log_warn("control socket disabled: %s", err);
		return -1;
	}
	errno = 0;
	if (yip_ctl_config_init(&l->ctl_cfg, cfg, name, l->port) != 0 ||
	    yip_ctl_server_watch(&l->ctl, l->epfd, EV_CTL, EV_CTL_CLIENT) != 0) {
		log_warn("control socket disabled: %s", errno ? strerror(errno) : "out of memory");
		yip_ctl_config_free(&l->ctl_cfg);
		yip_ctl_server_close(&l->ctl);
		return -1;
	}
	l->ctl_on = true;
	log_info("control socket %s", l->ctl.path);
	return 0;
}

/* Answers one control request from a fresh snapshot of the engine. */
static char *ctl_reply(void *ctx, const char *line, size_t len, size_t *out_len)
{
	struct yip_loop *l = ctx;
	struct yip_ctl_snapshot snap;
	char *r;

	if (yip_ctl_snapshot_take(&snap, &l->ctl_cfg, l->dev, yip_now_mono()) != 0)
		return NULL;
	r = yip_ctl_reply(&snap, line, len, out_len);
	yip_ctl_snapshot_free(&snap);
	return r;
}

static void flush(struct yip_loop *l)
{
	udp_tx_flush(&l->tx, &l->dev->drops[YIP_DROP_SEND_FAILED]);
}

static void on_udp(struct yip_loop *l)
{
	for (int burst = 0; burst < UDP_BURST; burst++) {
		int n = udp_recv(&l->rx);
		uint64_t now = yip_now_mono();

		for (int i = 0; i < n; i++) {
			struct mmsghdr *m = &l->rx.msgs[i];

			if (m->msg_hdr.msg_flags & MSG_TRUNC)
				yip_device_drop(l->dev, YIP_DROP_TRUNCATED);
			else
				yip_device_rx(l->dev, now, &l->rx.addrs[i],
				              udp_batch_buf(&l->rx, (unsigned)i), m->msg_len);
		}
		flush(l);
		if (n < UDP_BATCH)
			break;
	}
}

static void on_tun(struct yip_loop *l)
{
	uint64_t now = yip_now_mono();

	for (int i = 0; i < TUN_BURST; i++) {
		ssize_t n = read(l->tun_fd, l->tunbuf, TUN_BUF);

		if (n <= 0)
			break;
		yip_device_tx(l->dev, now, l->tunbuf, (size_t)n);
	}
	flush(l);
}

/* Returns false when the daemon should stop. */
static bool on_signal(struct yip_loop *l)
{
	struct signalfd_siginfo si;

	while (read(l->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			yip_loop_status(l);
		} else if (si.ssi_signo == SIGHUP) {
			log_info("SIGHUP: configuration reload is not supported yet; ignoring");
		} else {
			log_info("signal %u: shutting down", si.ssi_signo);
			return false;
		}
	}
	return true;
}

int yip_loop_run(struct yip_loop *l, struct yip_device *dev)
{
	l->dev = dev;
	for (;;) {
		struct epoll_event evs[8];
		uint64_t now = yip_now_mono();
		uint64_t next = yip_device_timers(dev, now);
		int timeout = 1000, n;

		flush(l);
		if (l->ctl_on) {
			uint64_t ctl_next = yip_ctl_server_expire(&l->ctl, now);

			if (ctl_next != 0 && ctl_next < next)
				next = ctl_next;
		}
		if (next <= now)
			timeout = 0;
		else if (next - now < 1000 * YIP_NS_PER_MS)
			timeout = (int)((next - now + YIP_NS_PER_MS - 1) / YIP_NS_PER_MS);
		n = epoll_wait(l->epfd, evs, 8, timeout);
		if (n < 0 && errno != EINTR) {
			log_err("epoll_wait: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			switch (evs[i].data.u32) {
			case EV_UDP:
				on_udp(l);
				break;
			case EV_TUN:
				on_tun(l);
				break;
			case EV_SIG:
				if (!on_signal(l))
					return 0;
				break;
			case EV_CTL:
				yip_ctl_server_on_listen(&l->ctl, yip_now_mono());
				break;
			case EV_CTL_CLIENT:
				yip_ctl_server_on_client(&l->ctl, yip_now_mono(), evs[i].events,
				                         ctl_reply, l);
				break;
			}
		}
	}
}

void yip_loop_status(const struct yip_loop *l)
{
	const struct yip_device *dev = l->dev;
	uint64_t now = yip_now_mono(), wall = yip_now_wall();
	char line[2048], key[2 * YIP_KEY_LEN + 1], ep[YIP_ADDRSTRLEN];
	size_t off = 0;

	yip_hex_encode(key, dev->public_key, YIP_KEY_LEN);
	log_info("status: device %s public_key %s port %u peers %zu", l->device_name, key, l->port,
	         dev->n_peers);
	for (int d = 0; d < YIP_DROP_COUNT && off < sizeof(line); d++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%llu",
		                        yip_drop_name((enum yip_drop)d),
		                        (unsigned long long)dev->drops[d]);
	log_info("status: drops%s", line);
	for (size_t i = 0; i < dev->n_peers; i++) {
		const struct yip_peer *p = &dev->peers[i];
		const struct yip_peer_stats *s = &p->stats;

		yip_hex_encode(key, p->public_key, YIP_KEY_LEN);
		if (p->has_endpoint)
			yip_sockaddr_format(&p->endpoint, ep, sizeof(ep));
		else
			snprintf(ep, sizeof(ep), "(none)");
		log_info("status: peer %s endpoint %s established %s handshakes %llu "
		         "last_handshake_s %lld rx_packets %llu rx_bytes %llu tx_packets %llu "
		         "tx_bytes %llu roams %llu lost %llu fec_recovered %llu "
		         "fec_unrecovered %llu arq_recovered %llu arq_sent %llu repair_sent %llu "
		         "repair_bytes %llu wire_bytes %llu loss_est %.4f rtt_ms %.2f "
		         "kr_default %u/%u kr_interactive %u/%u kr_bulk %u/%u",
		         key, ep, yip_peer_established(p, now) ? "yes" : "no",
		         (unsigned long long)s->handshakes,
		         s->last_handshake_wall
		             ? (long long)((wall - s->last_handshake_wall) / YIP_NS_PER_S)
		             : -1LL,
		         (unsigned long long)s->rx_packets, (unsigned long long)s->rx_bytes,
		         (unsigned long long)s->tx_packets, (unsigned long long)s->tx_bytes,
		         (unsigned long long)s->roams, (unsigned long long)s->lost,
		         (unsigned long long)s->fec_recovered,
		         (unsigned long long)s->fec_unrecovered,
		         (unsigned long long)s->arq_recovered, (unsigned long long)s->arq_sent,
		         (unsigned long long)s->repair_sent, (unsigned long long)s->repair_bytes,
		         (unsigned long long)s->wire_bytes, p->fec.loss, (double)p->fec.srtt / 1e6,
		         p->fec.params[0].k, p->fec.params[0].r, p->fec.params[1].k,
		         p->fec.params[1].r, p->fec.params[2].k, p->fec.params[2].r);
	}
}
