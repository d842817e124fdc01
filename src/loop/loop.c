/*
 * The event loop's core: the engine's I/O callbacks, and the halves of the
 * data path, timers and signals that both drivers (epoll.c, uring.c) share.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <linux/virtio_net.h>

#include "loop/internal.h"

#include "poll/daemon.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/wire.h"

/* ---- The engine's I/O callbacks, and the main UDP socket as a link ---- */

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

static uint8_t *main_buf(void *ctx, uint32_t link)
{
	struct yip_loop *l = ctx;

	(void)link;
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

	/* A batch to more peers than there are key slots; or more jobs than
	 * datagrams fit in a batch, which main_send's clean-up rules out and
	 * this makes harmless even so. */
	if (k == NULL || l->n_seal == UDP_BATCH) {
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

/* The block hint becomes the datagram's train tag: a GSO train never
 * holds two of one tag (udp_tx_push). */
static bool main_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                      uint32_t block)
{
	struct yip_loop *l = ctx;
	const uint8_t *buf = udp_tx_buf(&l->tx);

	(void)link;
	if (udp_tx_push(&l->tx, to, len, block))
		return true;
	/*
	 * The datagram stays out of the batch (a destination the socket cannot
	 * reach), so its buffer is handed out again for the next one. The seal
	 * job queued for it just before (seal_later precedes the send) must go
	 * too: left in place it would seal the next datagram a second time, and
	 * a run of such failures would queue more jobs than seal_jobs holds.
	 */
	if (l->n_seal > 0 && buf != NULL && l->seal_jobs[l->n_seal - 1].ad >= buf &&
	    l->seal_jobs[l->n_seal - 1].ad < buf + l->tx.buf_size)
		l->n_seal--;
	return false; /* counted by the engine */
}

static const struct yip_link_ops main_ops = {
    .kind = YIP_LINK_UDP,
    .buf = main_buf,
    .send = main_send,
};

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

static void io_tun_write(void *ctx, const uint8_t *pkt, size_t len)
{
	struct yip_loop *l = ctx;

	pkt = shape_rx(&l->shape, pkt, len, yip_device_mtu(l->dev));
	if (pkt == NULL) {
		yip_device_drop(l->dev, YIP_DROP_AQM);
		return;
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

static int64_t io_link_open(void *ctx)
{
	struct yip_loop *l = ctx;

	return socks_open(&l->socks);
}

static void io_link_close(void *ctx, uint32_t link)
{
	struct yip_loop *l = ctx;

	socks_close(&l->socks, link);
}

static void io_dial_server(void *ctx, size_t k, size_t line)
{
	struct yip_loop *l = ctx;

	/* The line says the link: tls:// or quic://. */
	if (loop_tls_dial_server(&l->tls, yip_now_mono(), k, line) == 0 ||
	    loop_quic_dial_server(&l->quic, yip_now_mono(), k, line) == 0)
		return;
	log_warn("rendezvous server %zu: cannot dial it as rendezvous line %zu says", k, line + 1);
}

static void io_undial_server(void *ctx, size_t k)
{
	struct yip_loop *l = ctx;

	loop_tls_undial_server(&l->tls, k);
	loop_quic_undial_server(&l->quic, k);
}

static size_t io_local_addrs(void *ctx, union yip_sockaddr *out, size_t max)
{
	struct yip_loop *l = ctx;

	return udp_local_addrs(&l->listen, l->udp_family, l->port, l->device, out, max);
}

void yip_loop_io(struct yip_loop *l, struct yip_io *io)
{
	io->ctx = l;
	io->links = &l->links;
	io->tun_write = io_tun_write;
	io->wall_ns = io_wall;
	io->seal_later = l->threaded ? io_seal_later : NULL;
	io->local_addrs = io_local_addrs;
	io->link_open = io_link_open;
	io->link_close = io_link_close;
	io->dial_server = io_dial_server;
	io->undial_server = io_undial_server;
}

/* ---- Setting up ---- */

const char *yip_loop_io_name(enum yip_io_driver io)
{
	return io == YIP_IO_EPOLL ? "epoll" : io == YIP_IO_URING ? "uring" : "uring-busy";
}

static int start_workers(struct yip_loop *l, unsigned threads)
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

static void on_signal(void *ctx, uint32_t events);
static void on_resolved(void *ctx, uint32_t events);

static int setup(struct yip_loop *l, const struct yip_loop_config *c, char *err, size_t errlen)
{
	int polled = yip_poll_open(&l->poll);

	l->sigfd = daemon_signalfd();
	l->segbuf = malloc(YIP_MAX_MTU + 64);
	l->sockbuf = malloc(YIP_MAX_DGRAM);
	l->links =
	    (struct yip_links){l->link_slot, 1 + SOCKS_MAX + LOOP_TLS_CONNS + LOOP_QUIC_CONNS};
	yip_link_set(&l->links, YIP_LINK_MAIN, &main_ops, l, YIP_MAX_DGRAM, YIP_LINK_BATCH);
	if (polled != 0 || l->sigfd < 0 || l->segbuf == NULL || l->sockbuf == NULL ||
	    socks_init(&l->socks, l->poll.epfd, c->udp_family, &l->links, YIP_MAX_DGRAM) != 0 ||
	    shape_init(&l->shape, c->tap) != 0 ||
	    (c->vnet && offload_gro_init(&l->gro, gro_write, l) != 0) ||
	    udp_batch_init(&l->rx, c->udp_fd, c->udp_family, YIP_MAX_DGRAM, true, c->udp_offload) !=
	        0 ||
	    udp_batch_init(&l->tx, c->udp_fd, c->udp_family, YIP_MAX_DGRAM, false,
	                   c->udp_offload) != 0 ||
	    yip_poll_add(&l->poll, l->sigfd, EPOLLIN, on_signal, l) != 0) {
		snprintf(err, errlen, "event loop setup failed: %s", strerror(errno));
		return -1;
	}
	if (start_workers(l, c->workers) != 0) {
		snprintf(err, errlen, "cannot start %u worker threads", c->workers);
		return -1;
	}
	if (c->config != NULL) {
		if (resolver_start(&l->resolver, c->config, c->resolve_interval) != 0 ||
		    (l->resolver != NULL &&
		     yip_poll_add(&l->poll, l->resolver->efd, EPOLLIN, on_resolved, l) != 0)) {
			snprintf(err, errlen, "cannot start resolving host names again: %s",
			         strerror(errno));
			return -1;
		}
	}
	if (c->config != NULL && (loop_tls_setup(&l->tls, c->config, c->host_name, &l->links,
	                                         1 + SOCKS_MAX, err, errlen) != 0 ||
	                          loop_tls_watch(&l->tls, &l->poll) != 0)) {
		if (err[0] == '\0')
			snprintf(err, errlen, "tls: %s", strerror(errno));
		return -1;
	}
	if (c->config != NULL &&
	    (loop_quic_setup(&l->quic, c->config, c->host_name, &l->links,
	                     1 + SOCKS_MAX + LOOP_TLS_CONNS, err, errlen) != 0 ||
	     loop_quic_watch(&l->quic, &l->poll) != 0)) {
		if (err[0] == '\0')
			snprintf(err, errlen, "quic: %s", strerror(errno));
		return -1;
	}
	yip_ctl_config_init(&l->ctl_cfg, c->device_name ? c->device_name : "", c->port);
	return 0;
}

struct yip_loop *yip_loop_init(const struct yip_loop_config *c, char *err, size_t errlen)
{
	struct yip_loop *l = calloc(1, sizeof(*l));

	if (l == NULL) {
		snprintf(err, errlen, "event loop setup failed: out of memory");
		return NULL;
	}
	l->ctl.fd = l->ctl.client = l->ctl.dirfd = -1;
	l->members.dirfd = -1;
	l->poll.epfd = l->sigfd = -1;
	l->tls.epfd = l->tls.listen_fd = -1;
	l->quic.epfd = l->quic.listen_fd = -1;
	l->tun_fd = c->tun_fd;
	l->udp_fd = c->udp_fd;
	l->udp_family = c->udp_family;
	l->port = c->port;
	if (c->config != NULL)
		l->listen = c->config->listen;
	snprintf(l->device, sizeof(l->device), "%s", c->device_name ? c->device_name : "");
	l->vnet = c->vnet;
	l->tap = c->tap;
	l->io = c->io;
	l->io_name = yip_loop_io_name(c->io);
	l->notify = c->notify;
	if (c->sandbox != NULL) {
		l->has_sandbox = true;
		l->sandbox = *c->sandbox;
	}
	if (setup(l, c, err, errlen) != 0) {
		yip_loop_free(l);
		return NULL;
	}
	log_info("data path: %s; UDP GSO %s, GRO %s",
	         l->vnet ? "TUN offload (TSO/GRO)" : "no TUN offload", l->tx.gso ? "on" : "off",
	         l->rx.gro ? "on" : "off");
	if (c->ctl_dir != NULL)
		loop_ctl_open(l, c->ctl_dir);
	if (c->config != NULL && loop_metrics_open(l, c->config, err, errlen) != 0) {
		yip_loop_free(l);
		return NULL;
	}
	return l;
}

void yip_loop_free(struct yip_loop *l)
{
	if (l == NULL)
		return;
	loop_ctl_close(l);
	loop_metrics_close(l);
	resolver_stop(l->resolver);
	loop_members_free(&l->members);
	loop_reload_free(&l->reload);
	socks_free(&l->socks);
	loop_tls_free(&l->tls);
	loop_quic_free(&l->quic);
	yip_poll_close(&l->poll);
	if (l->sigfd >= 0)
		close(l->sigfd);
	udp_batch_free(&l->rx);
	udp_batch_free(&l->tx);
	if (l->vnet)
		offload_gro_free(&l->gro);
	if (l->threaded)
		workers_stop(&l->workers);
	free(l->open_jobs);
	free(l->open_plain);
	free(l->segbuf);
	free(l->sockbuf);
	shape_free(&l->shape);
	free(l);
}

int yip_loop_members_setup(struct yip_loop *l, const struct yip_config *cfg, char *err,
                           size_t errlen)
{
	bool drop = l->has_sandbox && l->sandbox.mode != YIP_SANDBOX_OFF && l->sandbox.drop;

	loop_members_free(&l->members);
	return loop_members_setup(&l->members, cfg, drop ? l->sandbox.uid : getuid(),
	                          drop ? l->sandbox.gid : getgid(), err, errlen);
}

int yip_loop_members_start(struct yip_loop *l, struct yip_device *dev, char *err, size_t errlen)
{
	return loop_members_start(&l->members, dev, err, errlen);
}

void yip_loop_attach(struct yip_loop *l, struct yip_device *dev)
{
	l->dev = dev;
	loop_tls_attach(&l->tls, dev);
	loop_quic_attach(&l->quic, dev);
}

int yip_loop_sandbox(struct yip_loop *l)
{
	char err[256];

	if (!l->has_sandbox || sandbox_enter(&l->sandbox, err, sizeof(err)) == 0) {
		loop_notify_ready(l);
		return 0;
	}
	log_err("%s", err);
	return -1;
}

/* ---- Receiving from the UDP socket ---- */

/* A message the engine will see: seg set (0 means one datagram), or false
 * if it is dropped whole. open_prepare walks messages the same way, so open
 * job k is datagram k. */
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
		const struct yip_cipher_key *key = yip_device_rx_key(l->dev, d, n);
		struct wire_hdr h;

		j->open = true;
		j->key = key != NULL && wire_hdr_get(&h, d, n) ? crypto_keys_add(&l->open_keys, key)
		                                               : NULL;
		j->skip = j->key == NULL; /* the engine opens it itself, if it can */
		j->ad = d;
		j->adlen = WIRE_DATA_HDR;
		j->in = d + WIRE_DATA_HDR;
		j->len = n < WIRE_DATA_HDR ? 0 : n - WIRE_DATA_HDR;
		j->out = l->open_plain + (size_t)l->n_open * YIP_MAX_DGRAM;
		j->counter = j->skip ? 0 : h.counter;
		l->n_open++;
	}
}

static void open_done(struct yip_loop *l)
{
	crypto_keys_clear(&l->open_keys);
	l->n_open = l->open_next = 0;
}

void yip_loop_udp_message(struct yip_loop *l, uint64_t now, const union yip_sockaddr *from,
                          const uint8_t *buf, size_t len, size_t seg, uint64_t stamp)
{
	uint64_t wall = stamp ? yip_now_wall() : 0;

	shape_rx_message(&l->shape, now, wall > stamp ? wall - stamp : 0);
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

void yip_loop_udp_truncated(struct yip_loop *l)
{
	yip_device_drop(l->dev, YIP_DROP_TRUNCATED);
}

void yip_loop_udp_batch(struct yip_loop *l, uint64_t now, struct udp_batch *b, int n)
{
	if (l->threaded) {
		for (int i = 0; i < n; i++)
			if (!(b->msgs[i].msg_hdr.msg_flags & MSG_TRUNC))
				open_prepare(l, udp_batch_buf(b, (unsigned)i), b->msgs[i].msg_len,
				             b->segs[i]);
		workers_run(&l->workers, l->open_jobs, l->n_open);
	}
	for (int i = 0; i < n; i++) {
		const struct mmsghdr *m = &b->msgs[i];

		if (m->msg_hdr.msg_flags & MSG_TRUNC)
			yip_loop_udp_truncated(l);
		else
			yip_loop_udp_message(l, now, &b->addrs[i], udp_batch_buf(b, (unsigned)i),
			                     m->msg_len, b->segs[i], b->stamps[i]);
	}
	open_done(l);
	yip_loop_flush(l);
}

void yip_loop_flush(struct yip_loop *l)
{
	if (l->vnet)
		offload_gro_flush(&l->gro);
	tx_flush(l);
	loop_tls_flush(&l->tls);
	loop_quic_flush(&l->quic);
}

/* ---- Reading from the TUN ---- */

static void tso_emit(void *ctx, uint8_t *pkt, size_t len)
{
	struct yip_loop *l = ctx;

	/* A SYN whose checksum was left to us. */
	shape_clamp(&l->shape, pkt, len, yip_device_mtu(l->dev));
	l->tso_segments++;
	if (l->skip_segment) {
		l->skip_segment = false;
		yip_device_drop(l->dev, YIP_DROP_AQM);
		return;
	}
	yip_device_tx(l->dev, l->now, pkt, len);
}

/*
 * One read from the TUN to the engine. congested: the queue asks for a
 * signal; an ECN-capable packet is marked, otherwise its first segment is
 * dropped (one loss, one window reduction; not a whole 64 KB super-packet).
 */
static void tun_process(struct yip_loop *l, uint64_t now, uint8_t *buf, size_t n, bool congested)
{
	struct virtio_net_hdr h;
	size_t hl = l->vnet ? OFFLOAD_VNET_LEN : 0;

	if (n < hl) {
		yip_device_drop(l->dev, YIP_DROP_BAD_INNER);
		return;
	}
	if (congested)
		congested = shape_tx_signal(&l->shape, buf + hl, n - hl);
	if (!l->vnet) {
		if (congested) {
			yip_device_drop(l->dev, YIP_DROP_AQM);
			return;
		}
		shape_clamp(&l->shape, buf, n, yip_device_mtu(l->dev));
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
		shape_clamp(&l->shape, buf, n, yip_device_mtu(l->dev));
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

uint8_t *yip_loop_tun_buf(struct yip_loop *l)
{
	return shape_txq_slot(&l->shape);
}

void yip_loop_tun_read(struct yip_loop *l, uint64_t now, uint8_t *buf, size_t n)
{
	if (!shape_queues(n)) {
		tun_process(l, now, buf, n, false);
		return;
	}
	while (shape_txq_slot(&l->shape) == NULL)
		yip_loop_tun_serve(l, now);
	shape_txq_push(&l->shape, now, buf, n);
}

bool yip_loop_tun_serve(struct yip_loop *l, uint64_t now)
{
	size_t done = 0, n;
	bool congested;
	uint8_t *buf;

	while (done < TXQ_BUDGET && (buf = shape_txq_pop(&l->shape, now, &n, &congested)) != NULL) {
		tun_process(l, now, buf, n, congested);
		done += n;
	}
	return shape_txq_pending(&l->shape);
}

/* ---- Timers and signals ---- */

/* CoDel's interval and target follow the peers' RTT (see codel_set). */
static void codel_tune(struct yip_loop *l, uint64_t now)
{
	if (now - l->codel_tuned < 100 * YIP_NS_PER_MS && l->codel_tuned != 0)
		return;
	l->codel_tuned = now;
	shape_set_rtt(&l->shape, yip_device_rtt_max(l->dev));
}

int yip_loop_timeout(struct yip_loop *l)
{
	uint64_t now = yip_now_mono();
	uint64_t next = yip_device_timers(l->dev, now);
	uint64_t ctl_next, tls_next, notify_next;

	loop_members_tick(&l->members, l->dev, now);
	tls_next = loop_tls_tick(&l->tls, now);
	if (tls_next != 0 && tls_next < next)
		next = tls_next;
	tls_next = loop_quic_tick(&l->quic, now);
	if (tls_next != 0 && tls_next < next)
		next = tls_next;
	codel_tune(l, now);
	if (yip_loop_tun_serve(l, now))
		next = now; /* more queued: look at the sockets, then come back */
	yip_loop_flush(l);
	ctl_next = loop_ctl_expire(l, now);
	if (ctl_next != 0 && ctl_next < next)
		next = ctl_next;
	if (now >= l->next_log_tick) { /* the rate limiter's "suppressed" lines */
		yip_log_tick(now);
		l->next_log_tick = now + YIP_NS_PER_S;
	}
	notify_next = loop_notify_tick(l, now);
	if (notify_next != 0 && notify_next < next)
		next = notify_next;
	ctl_next = l->metrics_on ? yip_httpd_expire(&l->metrics, now) : 0;
	if (ctl_next != 0 && ctl_next < next)
		next = ctl_next;
	if (next <= now)
		return 0;
	if (next - now < 1000 * YIP_NS_PER_MS)
		return (int)((next - now + YIP_NS_PER_MS - 1) / YIP_NS_PER_MS);
	return 1000;
}

/* A host name of the configuration resolves to a new address. */
static void resolved(void *arg, const struct resolve_name *name)
{
	struct yip_loop *l = arg;
	char a[YIP_ADDRSTRLEN];

	yip_sockaddr_format(&name->addr, a, sizeof(a));
	log_info("%s now resolves to %s", name->text, a);
	if (l->dev != NULL && name->is_server)
		yip_device_set_server_endpoint(l->dev, yip_now_mono(), name->server, &name->addr);
	else if (l->dev != NULL)
		yip_device_set_endpoint(l->dev, yip_now_mono(), name->key, &name->addr);
}

static void status_cb(void *arg)
{
	yip_loop_status(arg);
}

/* SIGHUP: as `yipctl reload`, with what it did in the log. */
static void reload_cb(void *arg)
{
	struct yip_loop *l = arg;
	struct yip_ctl_reload *r;

	if (l->dev == NULL)
		return;
	r = malloc(sizeof(*r));
	if (r == NULL) {
		log_err("SIGHUP: out of memory");
		return;
	}
	loop_reload_all(l, r);
	if (!r->ok)
		log_err("SIGHUP: %s", r->error);
	free(r);
}

/* A datagram on an extra socket. */
static void sock_rx(void *arg, uint32_t link, const union yip_sockaddr *from, const uint8_t *d,
                    size_t len)
{
	struct yip_loop *l = arg;

	yip_device_rx_link(l->dev, yip_now_mono(), link, from, d, len);
}

/* The signalfd: a stop signal ends the wait (l->stopped). */
static void on_signal(void *ctx, uint32_t events)
{
	struct yip_loop *l = ctx;

	(void)events;
	if (daemon_signals(l->sigfd, status_cb, reload_cb, l))
		return;
	l->stopped = true;
	loop_notify_stopping(l);
	yip_poll_stop(&l->poll);
}

/* The resolver's eventfd: new addresses to hand to the engine. */
static void on_resolved(void *ctx, uint32_t events)
{
	struct yip_loop *l = ctx;

	(void)events;
	resolver_take(l->resolver, resolved, l);
	yip_loop_flush(l);
}

int yip_loop_wait(struct yip_loop *l, int timeout, struct epoll_event *evs, int max)
{
	int n = yip_poll_wait(&l->poll, timeout, evs, max), kept = 0;

	if (n < 0) {
		if (!l->stopped)
			log_err("epoll_wait: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		uint64_t truncated = l->socks.truncated;

		if (l->dev != NULL && socks_event(&l->socks, evs[i].data.u32, l->sockbuf,
		                                  YIP_MAX_DGRAM, sock_rx, l)) {
			yip_device_drop_n(l->dev, YIP_DROP_TRUNCATED,
			                  l->socks.truncated - truncated);
			yip_loop_flush(l);
			continue;
		}
		evs[kept++] = evs[i];
	}
	return kept;
}
