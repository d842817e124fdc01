#include "loop/loop.h"

#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <linux/virtio_net.h>

#include "util/clock.h"
#include "wire/wire.h"
#include "util/hex.h"
#include "util/log.h"

#define TUN_BURST 64 /* packets read from the TUN per wakeup before looking elsewhere */
#define UDP_BURST 4  /* recvmmsg batches per wakeup */

enum { EV_UDP = 1, EV_TUN, EV_SIG, EV_CTL, EV_CTL_CLIENT };

/* Seals what the engine queued for the workers, then sends the batch. */
static void tx_flush(struct yip_loop *l)
{
	unsigned failed;

	if (l->n_seal > 0) {
		workers_run(&l->workers, l->seal_jobs, l->n_seal);
		crypto_keys_clear(&l->seal_keys);
		l->n_seal = 0;
	}
	failed = udp_tx_flush(&l->tx);
	if (failed > 0)
		yip_device_drop_n(l->dev, YIP_DROP_SEND_FAILED, failed);
}

static uint8_t *io_udp_buf(void *ctx)
{
	struct yip_loop *l = ctx;

	if (l->tx.count == UDP_BATCH)
		tx_flush(l);
	return udp_tx_buf(&l->tx);
}

static void io_seal_later(void *ctx, uint8_t *d, size_t hdr, size_t len,
                          const struct yip_cipher_key *key, uint64_t counter)
{
	struct yip_loop *l = ctx;
	const struct yip_cipher_key *k = crypto_keys_add(&l->seal_keys, key);
	struct crypto_job *j;

	if (k == NULL) { /* a batch to more peers than there are key slots */
		yip_cipher_seal(d + hdr, key, counter, d, hdr, d + hdr, len);
		return;
	}
	j = &l->seal_jobs[l->n_seal++];
	j->key = k;
	j->skip = j->open = false;
	j->ad = d;
	j->adlen = hdr;
	j->in = d + hdr;
	j->len = len;
	j->counter = counter;
}

static void io_udp_send(void *ctx, const union yip_sockaddr *to, size_t len, uint32_t train)
{
	struct yip_loop *l = ctx;

	if (!udp_tx_push(&l->tx, to, len, train))
		yip_device_drop(l->dev, YIP_DROP_SEND_FAILED);
}

static void tun_write_raw(struct yip_loop *l, const uint8_t *pkt, size_t len)
{
	if (write(l->tun_fd, pkt, len) != (ssize_t)len)
		yip_device_drop(l->dev, YIP_DROP_TUN_WRITE_FAILED);
}

/* GRO's output: a virtio-net header and a (super-)packet. */
static void gro_write(void *ctx, uint8_t *buf, size_t len)
{
	tun_write_raw(ctx, buf, len);
}

#define RX_SMALL 256 /* packets this small are never used as a congestion signal */
static bool mark_ce(uint8_t *pkt, size_t n);

/* A TCP SYN from a peer: its MSS option must fit our tunnel (routed LAN hosts
 * would otherwise send segments the tunnel has to refuse). */
static bool is_syn(const uint8_t *pkt, size_t len)
{
	size_t off;

	if (len >= 40 && pkt[0] >> 4 == 4 && pkt[9] == 6)
		off = (size_t)(pkt[0] & 0x0f) * 4;
	else if (len >= 60 && pkt[0] >> 4 == 6 && pkt[6] == 6)
		off = 40;
	else
		return false;
	return off + 14 <= len && (pkt[off + 13] & 0x02);
}

static void io_tun_write(void *ctx, const uint8_t *pkt, size_t len)
{
	struct yip_loop *l = ctx;

	if (!l->tap && is_syn(pkt, len) && len <= YIP_MAX_MTU) {
		memcpy(l->segbuf, pkt, len);
		offload_mss_clamp(l->segbuf, len, yip_device_mtu(l->dev));
		pkt = l->segbuf;
	} else if (!l->tap && len > RX_SMALL && len <= YIP_MAX_MTU &&
	           l->rx_sojourn > codel_hard_limit(&l->rx_codel)) {
		/* Far past CoDel's target: a sender that does not back off on
		 * CoDel's sparse signals (BBR) would otherwise fill the whole
		 * socket buffer with delay. Bulk packets are dropped until the
		 * queue is back under the limit. */
		l->rx_drops++;
		yip_device_drop(l->dev, YIP_DROP_AQM);
		return;
	} else if (!l->tap && len > RX_SMALL && len <= YIP_MAX_MTU &&
	           codel_signal(&l->rx_codel, l->now, l->rx_sojourn, true)) {
		/* Datagrams are waiting in the socket longer than CoDel's target:
		 * tell the sending TCP, by a CE mark or by this one loss. */
		memcpy(l->segbuf, pkt, len);
		if (!mark_ce(l->segbuf, len)) {
			l->rx_drops++;
			yip_device_drop(l->dev, YIP_DROP_AQM);
			return;
		}
		l->rx_marks++;
		pkt = l->segbuf;
	}
	if (l->vnet)
		offload_gro_add(&l->gro, pkt, len);
	else
		tun_write_raw(l, pkt, len);
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
	io->seal_later = l->threaded ? io_seal_later : NULL;
}

int yip_loop_workers(struct yip_loop *l, unsigned threads)
{
	if (threads <= 1)
		return 0;
	l->open_jobs = calloc(LOOP_OPEN_JOBS, sizeof(*l->open_jobs));
	l->open_plain = malloc((size_t)LOOP_OPEN_JOBS * YIP_MAX_DGRAM);
	if (l->open_jobs == NULL || l->open_plain == NULL || workers_start(&l->workers, threads))
		return -1;
	l->threaded = l->workers.n_threads > 0;
	return 0;
}

/* A message the engine will see: seg set (0 means one datagram), or false
 * if it is dropped whole. The workers' pre-pass walks messages the same way,
 * so open job k is datagram k. */
static bool message_ok(struct yip_loop *l, size_t len, size_t *seg)
{
	if (*seg == 0)
		*seg = len;
	if (*seg > YIP_MAX_DGRAM) {
		/* Larger than anything yip sends: counted as if the buffer were that size. */
		yip_device_drop(l->dev, YIP_DROP_TRUNCATED);
		return false;
	}
	return true;
}

/* Queues an open job for every datagram of a message (see message_ok). */
static void open_prepare(struct yip_loop *l, uint8_t *buf, size_t len, size_t seg)
{
	if (seg == 0)
		seg = len;
	if (seg > YIP_MAX_DGRAM)
		return;
	for (size_t off = 0; off < len && l->n_open < LOOP_OPEN_JOBS; off += seg) {
		struct crypto_job *j = &l->open_jobs[l->n_open];
		size_t n = len - off < seg ? len - off : seg;
		uint8_t *d = buf + off;
		const struct yip_cipher_key *key =
		    n < WIRE_DATA_MIN ? NULL : yip_device_rx_key(l->dev, d, n);

		j->open = true;
		j->key = key != NULL ? crypto_keys_add(&l->open_keys, key) : NULL;
		j->skip = j->key == NULL; /* the engine opens it itself, if it can */
		j->ad = d;
		j->adlen = WIRE_DATA_HDR;
		j->in = d + WIRE_DATA_HDR;
		j->len = n < WIRE_DATA_HDR ? 0 : n - WIRE_DATA_HDR;
		j->out = l->open_plain + (size_t)l->n_open * YIP_MAX_DGRAM;
		j->counter = j->skip ? 0 : wire_get64(d + 8);
		l->n_open++;
	}
}

static void open_done(struct yip_loop *l)
{
	crypto_keys_clear(&l->open_keys);
	l->n_open = l->open_next = 0;
}

static int watch(int epfd, int fd, int tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)tag};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int yip_loop_init(struct yip_loop *l, int tun_fd, bool tap, bool vnet, int udp_fd, int udp_family,
                  bool offload, char *err, size_t errlen)
{
	sigset_t mask;

	memset(l, 0, sizeof(*l));
	l->ctl.fd = l->ctl.client = l->ctl.epfd = -1;
	l->tun_fd = tun_fd;
	l->udp_fd = udp_fd;
	l->vnet = vnet;
	l->tap = tap;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	l->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	l->tunbuf = malloc(TUN_BUF);
	l->txq.mem = malloc((size_t)TXQ_SLOTS * TUN_BUF);
	l->segbuf = malloc(YIP_MAX_MTU + 64);
	if (l->epfd < 0 || l->sigfd < 0 || l->tunbuf == NULL || l->segbuf == NULL ||
	    l->txq.mem == NULL || (vnet && offload_gro_init(&l->gro, gro_write, l) != 0) ||
	    udp_batch_init(&l->rx, udp_fd, udp_family, YIP_MAX_DGRAM, true, offload) != 0 ||
	    udp_batch_init(&l->tx, udp_fd, udp_family, YIP_MAX_DGRAM, false, offload) != 0 ||
	    watch(l->epfd, udp_fd, EV_UDP) != 0 || watch(l->epfd, tun_fd, EV_TUN) != 0 ||
	    watch(l->epfd, l->sigfd, EV_SIG) != 0) {
		snprintf(err, errlen, "event loop setup failed: %s", strerror(errno));
		yip_loop_free(l);
		return -1;
	}
	log_info("data path: %s; UDP GSO %s, GRO %s",
	         vnet ? "TUN offload (TSO/GRO)" : "no TUN offload", l->tx.gso ? "on" : "off",
	         l->rx.gro ? "on" : "off");
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
	if (l->vnet)
		offload_gro_free(&l->gro);
	if (l->threaded)
		workers_stop(&l->workers);
	l->threaded = false;
	free(l->open_jobs);
	free(l->open_plain);
	l->open_jobs = NULL;
	l->open_plain = NULL;
	free(l->tunbuf);
	free(l->segbuf);
	free(l->txq.mem);
	l->tunbuf = l->segbuf = l->txq.mem = NULL;
	l->epfd = l->sigfd = -1;
}

int yip_loop_ctl(struct yip_loop *l, const struct yip_config *cfg, const char *dir)
{
	const char *name = l->device_name ? l->device_name : "";
	char err[256];

	if (yip_ctl_server_open(&l->ctl, dir, name, err, sizeof(err)) != 0) {
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
	snap.datapath = (struct yip_ctl_datapath){
	    .present = true,
	    .io = l->io_name,
	    .workers = l->workers.n_threads + 1,
	    .tun_offload = l->vnet,
	    .udp_gso = l->tx.gso,
	    .udp_gro = l->rx.gro,
	    .tso_reads = l->tso_reads,
	    .tso_segments = l->tso_segments,
	    .gro_coalesced = l->vnet ? l->gro.coalesced : 0,
	    .udp_trains = l->tx.trains_sent,
	    .udp_train_datagrams = l->tx.train_dgrams,
	    .aqm_marks = l->txq.marks + l->rx_marks,
	    .aqm_drops = l->txq.drops + l->rx_drops,
	};
	r = yip_ctl_reply(&snap, line, len, out_len);
	yip_ctl_snapshot_free(&snap);
	return r;
}

void yip_loop_flush(struct yip_loop *l)
{
	if (l->vnet)
		offload_gro_flush(&l->gro);
	tx_flush(l);
}

void yip_loop_udp_message(struct yip_loop *l, uint64_t now, const union yip_sockaddr *from,
                          const uint8_t *buf, size_t len, size_t seg, uint64_t stamp)
{
	uint64_t wall = stamp ? yip_now_wall() : 0;

	l->now = now;
	l->rx_sojourn = wall > stamp ? wall - stamp : 0;
	l->rx_sojourn_sum += l->rx_sojourn;
	l->rx_msgs++;
	if (!message_ok(l, len, &seg))
		return;
	for (size_t off = 0; off < len; off += seg) {
		size_t n = len - off < seg ? len - off : seg;

		if (l->open_next < l->n_open) {
			const struct crypto_job *j = &l->open_jobs[l->open_next++];

			if (!j->skip) {
				struct yip_preopened pre = {
				    .plain = j->out,
				    .len = j->len >= YIP_AEAD_TAG ? j->len - YIP_AEAD_TAG : 0,
				    .result = j->result,
				    .key = j->key,
				};

				yip_device_preopened(l->dev, &pre);
			}
		}
		yip_device_rx(l->dev, now, from, buf + off, n);
		yip_device_preopened(l->dev, NULL);
	}
}

static void on_udp(struct yip_loop *l)
{
	for (int burst = 0; burst < UDP_BURST; burst++) {
		int n = udp_recv(&l->rx);
		uint64_t now = yip_now_mono();

		if (l->threaded) {
			for (int i = 0; i < n; i++)
				if (!(l->rx.msgs[i].msg_hdr.msg_flags & MSG_TRUNC))
					open_prepare(l, udp_batch_buf(&l->rx, (unsigned)i),
					             l->rx.msgs[i].msg_len, l->rx.segs[i]);
			workers_run(&l->workers, l->open_jobs, l->n_open);
		}

		for (int i = 0; i < n; i++) {
			struct mmsghdr *m = &l->rx.msgs[i];

			if (m->msg_hdr.msg_flags & MSG_TRUNC)
				yip_device_drop(l->dev, YIP_DROP_TRUNCATED);
			else
				yip_loop_udp_message(l, now, &l->rx.addrs[i],
				                     udp_batch_buf(&l->rx, (unsigned)i), m->msg_len,
				                     l->rx.segs[i], l->rx.stamps[i]);
		}
		open_done(l);
		yip_loop_flush(l);
		if (n < UDP_BATCH)
			break;
	}
}

static void tso_emit(void *ctx, uint8_t *pkt, size_t len)
{
	struct yip_loop *l = ctx;

	offload_mss_clamp(pkt, len,
	                  yip_device_mtu(l->dev)); /* a SYN whose checksum was left to us */
	l->tso_segments++;
	if (l->skip_segment) {
		l->skip_segment = false;
		yip_device_drop(l->dev, YIP_DROP_AQM);
		return;
	}
	yip_device_tx(l->dev, l->now, pkt, len);
}

/* Marks an ECN-capable packet Congestion Experienced; false if it is not ECN-capable. */
static bool mark_ce(uint8_t *pkt, size_t n)
{
	if (n >= 20 && pkt[0] >> 4 == 4 && (pkt[1] & 3) != 0) {
		size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;

		if (ihl < 20 || ihl > n)
			return false;
		pkt[1] |= 3;
		pkt[10] = pkt[11] = 0;
		uint16_t c = (uint16_t)~offload_csum_fold(offload_csum_add(0, pkt, ihl));
		pkt[10] = (uint8_t)(c >> 8);
		pkt[11] = (uint8_t)c;
		return true;
	}
	if (n >= 40 && pkt[0] >> 4 == 6 && (pkt[1] & 0x30) != 0) {
		pkt[1] |= 0x30;
		return true;
	}
	return false;
}

/*
 * One read from the TUN to the engine. congested: CoDel asks for a signal;
 * an ECN-capable packet is marked, otherwise its first segment is dropped
 * (one loss, one window reduction; not a whole 64 KB super-packet).
 */
static void tun_process(struct yip_loop *l, uint64_t now, uint8_t *buf, size_t n, bool congested)
{
	struct virtio_net_hdr h;
	size_t hl = l->vnet ? OFFLOAD_VNET_LEN : 0;

	if (n < hl) {
		yip_device_drop(l->dev, YIP_DROP_BAD_INNER);
		return;
	}
	if (congested && !l->tap) {
		if (mark_ce(buf + hl, n - hl)) {
			l->txq.marks++;
			congested = false;
		} else {
			l->txq.drops++;
		}
	}
	if (!l->vnet) {
		if (congested) {
			yip_device_drop(l->dev, YIP_DROP_AQM);
			return;
		}
		if (!l->tap)
			offload_mss_clamp(buf, n, yip_device_mtu(l->dev));
		yip_device_tx(l->dev, now, buf, n);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	buf += OFFLOAD_VNET_LEN;
	n -= OFFLOAD_VNET_LEN;
	if (h.gso_type == VIRTIO_NET_HDR_GSO_NONE && !(h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
		if (congested) {
			yip_device_drop(l->dev, YIP_DROP_AQM);
			return;
		}
		offload_mss_clamp(buf, n, yip_device_mtu(l->dev));
		yip_device_tx(l->dev, now, buf, n);
		return;
	}
	l->now = now;
	l->skip_segment = congested;
	if (h.gso_type != VIRTIO_NET_HDR_GSO_NONE)
		l->tso_reads++;
	if (offload_tso(&h, buf, n, yip_device_mtu(l->dev), l->segbuf, tso_emit, l) < 0)
		yip_device_drop(l->dev, YIP_DROP_BAD_INNER);
	l->skip_segment = false;
}

#define TXQ_SMALL  (OFFLOAD_VNET_LEN + 256) /* reads this small skip the queue */
#define TXQ_BUDGET (64 * 1024)              /* bytes handed on per serve */

static uint8_t *txq_slot(struct txq *q, unsigned i)
{
	return q->mem + (size_t)(i % TXQ_SLOTS) * TUN_BUF;
}

uint8_t *yip_loop_tun_buf(struct yip_loop *l)
{
	struct txq *q = &l->txq;

	return q->count == TXQ_SLOTS ? NULL : txq_slot(q, q->head + q->count);
}

void yip_loop_tun_read(struct yip_loop *l, uint64_t now, uint8_t *buf, size_t n)
{
	struct txq *q = &l->txq;
	uint8_t *slot;
	unsigned i;

	if (n <= TXQ_SMALL || n > TUN_BUF) {
		tun_process(l, now, buf, n, false);
		return;
	}
	while ((slot = yip_loop_tun_buf(l)) == NULL)
		yip_loop_tun_serve(l, now);
	if (slot != buf)
		memcpy(slot, buf, n);
	i = (q->head + q->count) % TXQ_SLOTS;
	q->len[i] = (uint32_t)n;
	q->queued[i] = now;
	q->count++;
	q->bytes += n;
}

bool yip_loop_tun_serve(struct yip_loop *l, uint64_t now)
{
	struct txq *q = &l->txq;
	size_t done = 0;

	while (q->count > 0 && done < TXQ_BUDGET) {
		unsigned i = q->head;
		size_t n = q->len[i];
		bool congested;

		q->head = (i + 1) % TXQ_SLOTS;
		q->count--;
		q->bytes -= n;
		q->sojourn_sum += now - q->queued[i];
		q->served++;
		congested = codel_signal(&q->codel, now, now - q->queued[i], q->bytes >= TUN_BUF);
		tun_process(l, now, txq_slot(q, i), n, congested);
		done += n;
	}
	return q->count > 0;
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

bool yip_loop_signals(struct yip_loop *l)
{
	struct signalfd_siginfo si;

	while (read(l->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			yip_loop_status(l);
		} else if (si.ssi_signo == SIGHUP) {
			log_info("SIGHUP: configuration reload is not supported yet; ignoring");
		} else {
			log_info("signal %u: shutting down", si.ssi_signo);
			l->stopped = true;
			return false;
		}
	}
	return true;
}

/* CoDel's interval and target follow the peers' RTT (see codel_set). */
static void codel_tune(struct yip_loop *l, uint64_t now)
{
	uint64_t rtt;

	if (now - l->codel_tuned < 100 * YIP_NS_PER_MS && l->codel_tuned != 0)
		return;
	l->codel_tuned = now;
	rtt = yip_device_rtt_max(l->dev);
	codel_set(&l->txq.codel, rtt);
	codel_set(&l->rx_codel, rtt);
}

int yip_loop_timeout(struct yip_loop *l)
{
	uint64_t now = yip_now_mono();
	uint64_t next = yip_device_timers(l->dev, now);

	codel_tune(l, now);

	if (yip_loop_tun_serve(l, now))
		next = now; /* more queued: look at the sockets, then come back */
	yip_loop_flush(l);
	if (l->ctl_on) {
		uint64_t ctl_next = yip_ctl_server_expire(&l->ctl, now);

		if (ctl_next != 0 && ctl_next < next)
			next = ctl_next;
	}
	if (next <= now)
		return 0;
	if (next - now < 1000 * YIP_NS_PER_MS)
		return (int)((next - now + YIP_NS_PER_MS - 1) / YIP_NS_PER_MS);
	return 1000;
}

bool yip_loop_epoll(struct yip_loop *l, int timeout)
{
	struct epoll_event evs[8];
	int n = epoll_wait(l->epfd, evs, 8, timeout);

	if (n < 0 && errno != EINTR) {
		log_err("epoll_wait: %s", strerror(errno));
		return false;
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
			if (!yip_loop_signals(l))
				return false;
			break;
		case EV_CTL:
			yip_ctl_server_on_listen(&l->ctl, yip_now_mono());
			break;
		case EV_CTL_CLIENT:
			yip_ctl_server_on_client(&l->ctl, yip_now_mono(), evs[i].events, ctl_reply,
			                         l);
			break;
		}
	}
	return true;
}

int yip_loop_run(struct yip_loop *l, struct yip_device *dev)
{
	l->dev = dev;
	while (yip_loop_epoll(l, yip_loop_timeout(l)))
		;
	return l->stopped ? 0 : 1;
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
	log_info("status: offload tso_reads %llu tso_segments %llu gro_coalesced %llu "
	         "udp_trains %llu udp_train_datagrams %llu aqm_marks %llu aqm_drops %llu "
	         "rx_aqm_marks %llu rx_aqm_drops %llu txq_wait_us %.1f rx_wait_us %.1f",
	         (unsigned long long)l->tso_reads, (unsigned long long)l->tso_segments,
	         (unsigned long long)(l->vnet ? l->gro.coalesced : 0),
	         (unsigned long long)l->tx.trains_sent, (unsigned long long)l->tx.train_dgrams,
	         (unsigned long long)l->txq.marks, (unsigned long long)l->txq.drops,
	         (unsigned long long)l->rx_marks, (unsigned long long)l->rx_drops,
	         l->txq.served ? (double)l->txq.sojourn_sum / (double)l->txq.served / 1e3 : 0.0,
	         l->rx_msgs ? (double)l->rx_sojourn_sum / (double)l->rx_msgs / 1e3 : 0.0);
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
