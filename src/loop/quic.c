/* yipd's QUIC links (quic.h). */
#include "loop/quic.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quic/conn.h"
#include "quic/tls_yip.h"
#include "udp/udp.h"
#include "util/clock.h"
#include "util/log.h"

#define ACCEPTED_IDLE (15 * YIP_NS_PER_S) /* an accepted link nothing authenticated on yet */
#define BACKOFF_FIRST (1 * YIP_NS_PER_S)
#define BACKOFF_MAX   (30 * YIP_NS_PER_S)
#define STALL_AFTER   (250 * YIP_NS_PER_MS) /* see stall_watch */
#define KEEPALIVE     (10 * YIP_NS_PER_S)   /* a dialer's PINGs while idle (NATs) */
#define PEM_MAX       (256 * 1024)
#define READS_MAX     64 /* datagrams read from one socket per event */
#define TAG_LISTEN    0xffffffffu

/* ---- the link ---- */

static uint8_t *link_buf(void *ctx, uint32_t link)
{
	struct loop_quic_conn *cc = ctx;

	(void)link;
	return cc->t->dgram;
}

/* Sends the packets put has queued. */
static void tx_flush(struct loop_quic *t)
{
	if (t->tx != NULL && t->tx->count > 0)
		t->stats.send_errors += udp_tx_flush(t->tx);
}

/* Queues a packet of the connection's for tx_flush (a dialer's connected
 * socket or the listening one; a batch holds one socket's packets). */
static void put(struct loop_quic_conn *cc, const uint8_t *p, size_t n)
{
	struct loop_quic *t = cc->t;
	const union yip_sockaddr *to = quic_conn_peer(cc->c);
	int fd = cc->fd >= 0 ? cc->fd : t->listen_fd;
	uint8_t *b;

	if (t->tx->fd != fd) {
		tx_flush(t);
		t->tx->fd = fd;
		t->tx->family = cc->fd >= 0 ? to->sa.sa_family : t->listen.sa.sa_family;
	}
	if ((b = udp_tx_buf(t->tx)) == NULL) {
		tx_flush(t);
		b = udp_tx_buf(t->tx);
	}
	memcpy(b, p, n);
	/* The handshake's packets leave one by one (one train tag for all of
	 * them: no two share a GSO train), as a browser's first flight; an
	 * open connection's runs of equal sizes go as trains. */
	if (!udp_tx_push(t->tx, to, n, quic_conn_state(cc->c) == QUIC_CONN_OPEN ? 0 : 1))
		t->stats.send_errors++;
}

/* Offers d to the connection: true if a packet carried it. */
static bool offer(struct loop_quic_conn *cc, const uint8_t *d, size_t len)
{
	struct loop_quic *t = cc->t;

	for (int i = 0; i < 4; i++) {
		bool carried;
		size_t n = quic_conn_send_datagram(cc->c, d, len, t->pkt, sizeof(t->pkt),
		                                   yip_now_mono(), &carried);

		if (n == 0)
			return false;
		put(cc, t->pkt, n);
		if (carried) {
			t->stats.dgrams_out++;
			return true;
		}
	}
	return false;
}

/* Sends what waits while the window takes it; drops what waited too long. */
static void flush(struct loop_quic_conn *cc, uint64_t now)
{
	struct loop_quic *t = cc->t;

	while (cc->txq_n > 0) {
		struct loop_quic_txe *e = &cc->txq[cc->txq_head];

		if (now - e->at > LOOP_QUIC_TXQ_SOJOURN)
			t->stats.q_stale++;
		else if (!offer(cc, e->d, e->len))
			return;
		cc->txq_head = (cc->txq_head + 1) % LOOP_QUIC_TXQ;
		cc->txq_n--;
	}
}

static bool link_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                      uint32_t block)
{
	struct loop_quic_conn *cc = ctx;
	struct loop_quic *t = cc->t;
	uint64_t now = yip_now_mono();
	struct loop_quic_txe *e;

	(void)link;
	(void)to; /* one connection, one peer */
	(void)block;
	if (quic_conn_state(cc->c) != QUIC_CONN_OPEN) {
		t->stats.blocked++;
		return false;
	}
	if (len > quic_conn_dgram_max(cc->c)) {
		t->stats.too_big++;
		return false;
	}
	if (cc->txq_n > 0)
		flush(cc, now);
	if (cc->txq_n == 0 && offer(cc, t->dgram, len))
		return true;
	/* The window is full: the datagram waits for the next ACK. */
	if (cc->txq == NULL && (cc->txq = malloc(LOOP_QUIC_TXQ * sizeof(*cc->txq))) == NULL) {
		t->stats.blocked++;
		return false;
	}
	if (cc->txq_n == LOOP_QUIC_TXQ) { /* the oldest goes: it is the staler */
		cc->txq_head = (cc->txq_head + 1) % LOOP_QUIC_TXQ;
		cc->txq_n--;
		t->stats.q_full++;
	}
	e = &cc->txq[(cc->txq_head + cc->txq_n) % LOOP_QUIC_TXQ];
	e->at = now;
	e->len = (uint16_t)len;
	memcpy(e->d, t->dgram, len);
	cc->txq_n++;
	t->stats.queued++;
	return true;
}

static const struct yip_link_ops quic_ops = {
    .kind = YIP_LINK_QUIC,
    .buf = link_buf,
    .send = link_send,
};

/* ---- connections ---- */

/* Writes what the connection wants to send. */
static void drain(struct loop_quic_conn *cc, uint64_t now)
{
	size_t n;

	flush(cc, now);
	while ((n = quic_conn_write(cc->c, cc->t->pkt, sizeof(cc->t->pkt), yip_now_mono())) > 0)
		put(cc, cc->t->pkt, n);
}

static void on_dgram(void *user, struct quic_conn *c, const uint8_t *p, size_t len)
{
	struct loop_quic_conn *cc = user;
	struct loop_quic *t;

	(void)c;
	if (cc == NULL)
		return;
	t = cc->t;
	if (len > sizeof(t->rxq[0].d) || t->n_rxq >= LOOP_QUIC_RXQ) {
		t->stats.rx_overflow++;
		return;
	}
	memcpy(t->rxq[t->n_rxq].d, p, len);
	t->rxq[t->n_rxq].len = len;
	t->n_rxq++;
}

/* Hands the engine what the last read queued (outside ngtcp2: the engine may send). */
static void deliver(struct loop_quic_conn *cc, uint64_t now)
{
	struct loop_quic *t = cc->t;
	unsigned n = t->n_rxq;

	t->n_rxq = 0;
	if (cc->link < 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		t->stats.dgrams_in++;
		yip_device_rx_link(t->dev, now, (uint32_t)cc->link, quic_conn_peer(cc->c),
		                   t->rxq[i].d, t->rxq[i].len);
	}
}

static int slot_new(struct loop_quic *t, struct quic_conn *c, int fd, int dial, uint64_t now)
{
	struct loop_quic_conn *cc;
	int slot;

	for (slot = 0; slot < LOOP_QUIC_CONNS && t->conn[slot] != NULL; slot++)
		;
	if (slot == LOOP_QUIC_CONNS || (cc = calloc(1, sizeof(*cc))) == NULL)
		return -1;
	*cc = (struct loop_quic_conn){
	    .t = t, .c = c, .fd = fd, .link = -1, .dial = dial, .started = now};
	t->conn[slot] = cc;
	quic_conn_set_recv(c, on_dgram, cc);
	return slot;
}

static void back_off(struct loop_quic_dial *d, uint64_t now)
{
	d->next_at = now + d->backoff;
	d->backoff = d->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : d->backoff * 2;
	d->failures++;
}

/* Forgets slot's link; frees the slot (and a dialed connection and its socket). */
static void slot_end(struct loop_quic *t, int slot, uint64_t now, const char *why)
{
	struct loop_quic_conn *cc = t->conn[slot];
	char addr[YIP_ADDRSTRLEN];

	if (why == NULL)
		why = quic_conn_why(cc->c) ? quic_conn_why(cc->c) : "closed";
	yip_sockaddr_format(quic_conn_peer(cc->c), addr, sizeof(addr));
	if (cc->link >= 0) {
		if (t->dev != NULL)
			yip_device_link_closed(t->dev, (uint32_t)cc->link);
		yip_link_del(t->links, (uint32_t)cc->link);
		t->stats.closed++;
		log_limited(YIP_LOG_INFO, 0, "quic: link to %s closed (%s)", addr, why);
	} else {
		t->stats.failed++;
		log_limited(YIP_LOG_DEBUG, 0, "quic: connection with %s failed (%s)", addr, why);
	}
	if (cc->dial >= 0) {
		struct loop_quic_dial *d = &t->dials[cc->dial];

		d->conn = -1;
		snprintf(d->why, sizeof(d->why), "%s", why);
		if (cc->link >= 0 && now - cc->started > BACKOFF_MAX)
			d->backoff = BACKOFF_FIRST;
		back_off(d, now);
		if (d->server && !d->wanted)
			d->next_at = 0; /* let go: dialed again only when the engine asks */
		tx_flush(t);            /* what it queued, before its socket goes */
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, cc->fd, NULL);
		close(cc->fd);
		quic_conn_free(cc->c);
	}
	/* An accepted connection is the server's: it frees it (gone). */
	if (cc->dial < 0)
		quic_conn_set_recv(cc->c, on_dgram, NULL);
	free(cc->txq); /* sealed datagrams: nothing secret */
	sodium_memzero(cc, sizeof(*cc));
	free(cc);
	t->conn[slot] = NULL;
}

static void opened(struct loop_quic *t, int slot, uint64_t now)
{
	struct loop_quic_conn *cc = t->conn[slot];
	size_t mtu = quic_conn_dgram_max(cc->c);
	int64_t id;
	char addr[YIP_ADDRSTRLEN];

	if (mtu == 0 && cc->dial < 0) {
		/* A client that takes no DATAGRAM frames is no yip node: its
		 * connection stays the server's, the decoy's alone, and holds no
		 * slot or link. */
		quic_conn_set_recv(cc->c, on_dgram, NULL);
		free(cc);
		t->conn[slot] = NULL;
		t->stats.decoy_only++;
		return;
	}
	id = yip_link_add(t->links, t->link_from, &quic_ops, cc, (uint32_t)mtu, 0);
	yip_sockaddr_format(quic_conn_peer(cc->c), addr, sizeof(addr));
	if (id < 0) {
		log_limited(YIP_LOG_WARN, 0, "quic: no link free for %s", addr);
		quic_conn_close(cc->c, now);
		return;
	}
	cc->link = id;
	cc->opened_at = now;
	t->stats.opened++;
	if (cc->dial >= 0) {
		struct loop_quic_dial *d = &t->dials[cc->dial];

		d->why[0] = '\0';
		if (d->server)
			yip_device_server_link(t->dev, now, d->index, (uint32_t)id, &d->addr);
		else
			yip_device_link_path(t->dev, now, d->key, (uint32_t)id, &d->addr);
	}
	log_limited(YIP_LOG_INFO, 0, "quic: link %lld %s %s (datagrams up to %zu bytes)",
	            (long long)id, cc->dial >= 0 ? "to" : "from", addr, mtu);
}

static int slot_of(const struct loop_quic *t, const struct quic_conn *c)
{
	for (int i = 0; i < LOOP_QUIC_CONNS; i++)
		if (t->conn[i] != NULL && t->conn[i]->c == c)
			return i;
	return -1;
}

/* The server frees one of its connections. */
static void on_gone(void *arg, struct quic_conn *c)
{
	struct loop_quic *t = arg;
	int slot = slot_of(t, c);

	if (slot >= 0)
		slot_end(t, slot, yip_now_mono(), NULL);
}

/* Sends all an accepted connection has to send: through its slot if it has one. */
static void server_drain(struct loop_quic *t, struct quic_conn *c, uint64_t now)
{
	int slot = slot_of(t, c);
	size_t w;

	if (slot >= 0) {
		drain(t->conn[slot], now);
		return;
	}
	while ((w = quic_conn_write(c, t->pkt, sizeof(t->pkt), yip_now_mono())) > 0)
		sendto(t->listen_fd, t->pkt, w, MSG_DONTWAIT, &quic_conn_peer(c)->sa,
		       yip_sockaddr_len(quic_conn_peer(c)));
}

static void on_listen(struct loop_quic *t)
{
	uint64_t now = yip_now_mono();

	t->rx->fd = t->listen_fd;
	/* Up to READS_MAX packets, and never a batch left half read. */
	for (int i = 0, m = 0, k = 0; i < READS_MAX || k < m; i++, k++) {
		union yip_sockaddr from;
		socklen_t alen;
		uint8_t reply[128];
		size_t rlen, n;
		struct quic_conn *c;
		unsigned bits;
		int slot;
		uint8_t *pkt;

		if (k == m && (k = 0, m = udp_recv(t->rx)) == 0)
			return;
		if (t->rx->msgs[k].msg_hdr.msg_flags & MSG_TRUNC)
			continue; /* larger than any QUIC packet of ours: not one */
		pkt = udp_batch_buf(t->rx, (unsigned)k);
		n = t->rx->msgs[k].msg_len;
		from = t->rx->addrs[k];
		alen = t->rx->msgs[k].msg_hdr.msg_namelen;
		t->n_rxq = 0;
		t->decoy.wall_s = yip_now_wall() / YIP_NS_PER_S;
		now = yip_now_mono();
		bits = quic_server_read(t->srv, pkt, n, &t->listen, &from, now, &c, reply,
		                        sizeof(reply), &rlen);
		if (rlen > 0)
			sendto(t->listen_fd, reply, rlen, MSG_DONTWAIT, &from.sa, alen);
		if (c == NULL)
			continue;
		if (bits & QUIC_CONN_NEW)
			t->stats.accepted++;
		slot = slot_of(t, c);
		if ((bits & QUIC_CONN_OPENED) && slot < 0) {
			slot = slot_new(t, c, -1, -1, now);
			if (slot < 0)
				quic_conn_close(c, now);
			else
				opened(t, slot, now);
			slot = slot_of(t, c); /* none, if opened found no yip node */
		}
		if (slot >= 0)
			deliver(t->conn[slot], now);
		t->n_rxq = 0;
		/* Handshake packets, ACKs: the connection answers at once. */
		server_drain(t, c, now);
	}
}

static void on_dial_read(struct loop_quic *t, int slot)
{
	struct loop_quic_conn *cc = t->conn[slot];
	uint64_t now = yip_now_mono();

	t->rx->fd = cc->fd;
	/* Up to READS_MAX packets, and never a batch left half read. */
	for (int i = 0, m = 0, k = 0; i < READS_MAX || k < m; i++, k++) {
		unsigned bits;

		if (k == m && (k = 0, m = udp_recv(t->rx)) == 0)
			break;
		if (t->rx->msgs[k].msg_hdr.msg_flags & MSG_TRUNC)
			continue;
		t->n_rxq = 0;
		now = yip_now_mono(); /* ngtcp2's stamps must not go back: the engine sent since */
		bits = quic_conn_read(cc->c, udp_batch_buf(t->rx, (unsigned)k),
		                      t->rx->msgs[k].msg_len, NULL, now);
		if (bits & QUIC_CONN_OPENED)
			opened(t, slot, now);
		deliver(cc, now);
		if (t->conn[slot] != cc)
			return;
		if (bits & QUIC_CONN_ENDED)
			break;
	}
	drain(cc, now);
	if (quic_conn_state(cc->c) == QUIC_CONN_DONE)
		slot_end(t, slot, now, NULL);
}

static void on_epoll(void *ctx, uint32_t events)
{
	struct loop_quic *t = ctx;
	struct epoll_event evs[32];
	int n;

	(void)events;
	if (t->dev == NULL)
		return;
	n = epoll_wait(t->epfd, evs, 32, 0);
	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;

		if (tag == TAG_LISTEN)
			on_listen(t);
		else if (tag < LOOP_QUIC_CONNS && t->conn[tag] != NULL)
			on_dial_read(t, (int)tag);
	}
	loop_quic_flush(t);
}

/* ---- dialing ---- */

static void dial_now(struct loop_quic *t, int k, uint64_t now)
{
	struct loop_quic_dial *d = &t->dials[k];
	/* The client's TLS is yip's own engine: chromium's QUIC hello
	 * (quic/tls_yip.h). */
	struct quic_dial_config dc = {
	    .sni = d->sni[0] ? d->sni : NULL, .cc = t->cc, .tls = &quic_tls_yip};
	union yip_sockaddr local;
	socklen_t alen = sizeof(local);
	struct quic_conn *c = NULL;
	struct epoll_event ev;
	char err[128] = "";
	int fd, slot = -1;

	d->next_at = 0;
	fd = socket(d->addr.sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		udp_set_buffers(fd); /* as the main socket's: a full link's burst */
	if (fd < 0 || connect(fd, &d->addr.sa, yip_sockaddr_len(&d->addr)) != 0 ||
	    getsockname(fd, &local.sa, &alen) != 0) {
		snprintf(err, sizeof(err), "socket: %s", strerror(errno));
		goto fail;
	}
	c = quic_conn_dial(&dc, &local, &d->addr, now, err, sizeof(err));
	if (c == NULL)
		goto fail;
	quic_conn_keepalive(c, KEEPALIVE);
	slot = slot_new(t, c, fd, k, now);
	if (slot < 0) {
		snprintf(err, sizeof(err), "no connection free");
		goto fail;
	}
	ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = (uint32_t)slot};
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		snprintf(err, sizeof(err), "epoll: %s", strerror(errno));
		free(t->conn[slot]);
		t->conn[slot] = NULL;
		goto fail;
	}
	d->conn = slot;
	t->stats.dialed++;
	drain(t->conn[slot], now);
	return;
fail:
	quic_conn_free(c);
	if (fd >= 0)
		close(fd);
	snprintf(d->why, sizeof(d->why), "%s", err);
	back_off(d, now);
}

/* ---- the interface ---- */

static uint8_t *read_pem(const char *path, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf = NULL;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > PEM_MAX ||
	    (buf = malloc((size_t)st.st_size)) == NULL ||
	    (n = read(fd, buf, (size_t)st.st_size)) != st.st_size) {
		snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot read it");
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/*
 * The send and receive batches. Whether the kernel takes GSO trains is
 * asked of a socket made for it (the links' own come later); reads are
 * one packet per buffer (no GRO: ngtcp2 reads packets one by one).
 */
static int batches_new(struct loop_quic *t)
{
	int fd = udp_open_ephemeral(AF_INET);

	t->tx = malloc(sizeof(*t->tx));
	t->rx = malloc(sizeof(*t->rx));
	if (t->tx == NULL || t->rx == NULL ||
	    udp_batch_init(t->tx, fd, AF_INET, QUIC_PKT_MAX, false, true) != 0 ||
	    udp_batch_init(t->rx, -1, AF_INET, sizeof(t->pkt), true, false) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd >= 0)
		close(fd);
	t->tx->fd = -1;
	return 0;
}

int loop_quic_setup(struct loop_quic *t, const struct yip_config *cfg, const char *host_name,
                    struct yip_links *links, uint32_t link_from, char *err, size_t errlen)
{
	*t =
	    (struct loop_quic){.links = links, .link_from = link_from, .listen_fd = -1, .epfd = -1};
	t->cc = cfg->quic_cc == YIP_QUIC_CC_CUBIC ? QUIC_CC_CUBIC
	        : cfg->quic_cc == YIP_QUIC_CC_BBR ? QUIC_CC_BBR
	                                          : QUIC_CC_BBR2;
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const struct yip_peer_config *pc = &cfg->peers[i];
		struct loop_quic_dial *d;
		const char *sni;

		if (pc->transport != YIP_TRANSPORT_QUIC || !pc->has_endpoint)
			continue;
		if (t->dials == NULL &&
		    (t->dials = calloc(LOOP_QUIC_DIALS, sizeof(*t->dials))) == NULL) {
			snprintf(err, errlen, "quic: out of memory");
			return -1;
		}
		if (t->n_dials >= LOOP_QUIC_DIALS)
			break;
		d = &t->dials[t->n_dials++];
		memcpy(d->key, pc->public_key, YIP_KEY_LEN);
		d->addr = pc->endpoint;
		sni = pc->tls_sni ? pc->tls_sni : cfg->tls_sni ? cfg->tls_sni : pc->endpoint_name;
		snprintf(d->sni, sizeof(d->sni), "%s", sni ? sni : "");
		d->conn = -1;
		d->backoff = BACKOFF_FIRST;
		d->next_at = 1; /* at once */
	}
	for (size_t i = 0; i < cfg->n_rendezvous && i < YIP_MAX_RENDEZVOUS_LINES; i++) {
		const struct yip_rendezvous_config *rc = &cfg->rendezvous[i];
		const char *sni = cfg->tls_sni ? cfg->tls_sni : rc->name;

		if (rc->transport != YIP_TRANSPORT_QUIC)
			continue;
		if (t->dials == NULL &&
		    (t->dials = calloc(LOOP_QUIC_DIALS, sizeof(*t->dials))) == NULL) {
			snprintf(err, errlen, "quic: out of memory");
			return -1;
		}
		t->lines[i].quic = true;
		t->lines[i].addr = rc->addr;
		snprintf(t->lines[i].sni, sizeof(t->lines[i].sni), "%s", sni ? sni : "");
	}
	if (t->dials == NULL && !cfg->has_listen_quic)
		return 0;
	/* GnuTLS is set up now, while files can still be read, and only here. */
	if (quic_lib_init() != 0) {
		snprintf(err, errlen, "quic: gnutls cannot be set up");
		return -1;
	}
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0) {
		snprintf(err, errlen, "quic: epoll: %s", strerror(errno));
		return -1;
	}
	if (batches_new(t) != 0) {
		snprintf(err, errlen, "quic: out of memory");
		return -1;
	}
	if (cfg->has_listen_quic) {
		struct quic_server_config sc = {
		    .self_name = host_name,
		    .cc = t->cc,
		    .gone = on_gone,
		    .gone_arg = t,
		    .recv = on_dgram,
		    /* Whoever connects meets an HTTP/3 server on the streams; yip's
		     * traffic is DATAGRAM frames, which the decoy never sees. */
		    .streams = &quic_decoy_handler,
		    .streams_arg = &t->decoy,
		};
		const union yip_sockaddr *a = &cfg->listen_quic;
		uint8_t *cert = NULL, *key = NULL;
		size_t cert_len = 0, key_len = 0;
		char addr[YIP_ADDRSTRLEN];
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = TAG_LISTEN};

		yip_sockaddr_format(a, addr, sizeof(addr));
		if (cfg->tls_cert_path != NULL &&
		    ((cert = read_pem(cfg->tls_cert_path, &cert_len, err, errlen)) == NULL ||
		     (key = read_pem(cfg->tls_key_path, &key_len, err, errlen)) == NULL)) {
			free(cert);
			return -1;
		}
		sc.cert_pem = cert;
		sc.cert_len = cert_len;
		sc.key_pem = key;
		sc.key_len = key_len;
		t->srv = quic_server_new(&sc, err, errlen);
		if (key != NULL)
			sodium_memzero(key, key_len);
		free(cert);
		free(key);
		if (t->srv == NULL)
			return -1;
		t->listen_fd =
		    socket(a->sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (t->listen_fd >= 0)
			udp_set_buffers(t->listen_fd);
		if (t->listen_fd < 0 || bind(t->listen_fd, &a->sa, yip_sockaddr_len(a)) != 0 ||
		    epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->listen_fd, &ev) != 0) {
			snprintf(err, errlen, "listen_quic %s: %s", addr, strerror(errno));
			return -1;
		}
		t->listen = *a;
		log_info("quic: listening on %s (%s)", addr,
		         cfg->tls_cert_path ? cfg->tls_cert_path : "a self-signed certificate");
	}
	return 0;
}

int loop_quic_watch(struct loop_quic *t, struct yip_poll *p)
{
	return t->epfd < 0 ? 0 : yip_poll_add(p, t->epfd, EPOLLIN, on_epoll, t);
}

void loop_quic_attach(struct loop_quic *t, struct yip_device *dev)
{
	t->dev = dev;
}

void loop_quic_free(struct loop_quic *t)
{
	tx_flush(t);
	for (int i = 0; i < LOOP_QUIC_CONNS; i++) {
		struct loop_quic_conn *cc = t->conn[i];

		if (cc == NULL || cc->dial < 0)
			continue;
		close(cc->fd);
		quic_conn_free(cc->c);
		free(cc);
		t->conn[i] = NULL;
	}
	t->dev = NULL;
	quic_server_free(t->srv); /* gone frees the accepted slots */
	t->srv = NULL;
	if (t->listen_fd >= 0)
		close(t->listen_fd);
	if (t->epfd >= 0)
		close(t->epfd);
	free(t->dials);
	t->dials = NULL;
	t->listen_fd = t->epfd = -1;
	for (int i = 0; i < 2; i++) {
		struct udp_batch **b = i ? &t->rx : &t->tx;

		if (*b != NULL)
			udp_batch_free(*b);
		free(*b);
		*b = NULL;
	}
}

/*
 * A window full of packets that carry only DATAGRAM frames, whose ACKs
 * were lost, stalls ngtcp2 0.12 for good: such packets arm no probe
 * timeout (ngtcp2 issue 697, fixed after 0.12), so nothing is declared
 * lost, nothing may be sent, and the peer has nothing new to acknowledge.
 * Seen at 5 % loss each way (tests/netns/quic_peer.sh). Once the window
 * has been full with the same bytes in flight for STALL_AFTER (many RTTs),
 * the connection is given up: a dialer dials again at once, an accepting
 * end closes it (its dialer dials again). True: the slot is gone.
 */
static bool stall_watch(struct loop_quic *t, int slot, uint64_t now)
{
	struct loop_quic_conn *cc = t->conn[slot];
	struct quic_conn_stats qs;

	quic_conn_stats(cc->c, &qs);
	if (qs.bytes_in_flight == 0 || qs.bytes_in_flight < qs.cwnd ||
	    qs.bytes_in_flight != cc->stuck_inflight) {
		cc->stuck_inflight = qs.bytes_in_flight;
		cc->stuck_since = now;
		return false;
	}
	if (now - cc->stuck_since < STALL_AFTER)
		return false;
	t->stats.stalls++;
	log_info("quic: link %lld stalled (window full, nothing acknowledged for %llu ms): "
	         "connecting again",
	         (long long)cc->link,
	         (unsigned long long)((now - cc->stuck_since) / YIP_NS_PER_MS));
	if (cc->dial >= 0) {
		struct loop_quic_dial *d = &t->dials[cc->dial];

		slot_end(t, slot, now, "stalled");
		d->backoff = BACKOFF_FIRST;
		if (d->next_at != 0)      /* 0: let go (slot_end) */
			d->next_at = now; /* at once */
	} else {
		quic_conn_close(cc->c, now);
		server_drain(t, cc->c, now);
		slot_end(t, slot, now, "stalled");
	}
	return true;
}

uint64_t loop_quic_tick(struct loop_quic *t, uint64_t now)
{
	uint64_t next = UINT64_MAX, e;

	if (t->dev == NULL || t->epfd < 0)
		return 0;
	for (int i = 0; i < LOOP_QUIC_CONNS; i++) {
		struct loop_quic_conn *cc = t->conn[i];

		if (cc == NULL)
			continue;
		if (cc->link >= 0 && now >= cc->logged_at + 5 * YIP_NS_PER_S) {
			struct quic_conn_stats qs;

			cc->logged_at = now;
			quic_conn_stats(cc->c, &qs);
			log_debug(
			    "quic: link %lld: pkts in %llu out %llu, datagrams in %llu out %llu "
			    "blocked %llu lost %llu, dropped %llu, rtt %.2f ms, cwnd %llu, in "
			    "flight %llu; queue %u; node: queued %llu, stale %llu, full %llu, "
			    "stalls %llu",
			    (long long)cc->link, (unsigned long long)qs.pkts_in,
			    (unsigned long long)qs.pkts_out, (unsigned long long)qs.dgrams_in,
			    (unsigned long long)qs.dgrams_out, (unsigned long long)qs.dgram_blocked,
			    (unsigned long long)qs.dgram_lost, (unsigned long long)qs.dropped,
			    (double)qs.rtt_ns / 1e6, (unsigned long long)qs.cwnd,
			    (unsigned long long)qs.bytes_in_flight, cc->txq_n,
			    (unsigned long long)t->stats.queued,
			    (unsigned long long)t->stats.q_stale,
			    (unsigned long long)t->stats.q_full,
			    (unsigned long long)t->stats.stalls);
		}
		if (cc->link >= 0 && stall_watch(t, i, now))
			continue;
		if (cc->dial >= 0 && quic_conn_expiry(cc->c) <= now) {
			quic_conn_expire(cc->c, yip_now_mono());
			drain(cc, now);
			if (quic_conn_state(cc->c) == QUIC_CONN_DONE) {
				slot_end(t, i, now, NULL);
				continue;
			}
		}
		if (cc->dial < 0 && cc->link >= 0 && !cc->proven &&
		    !(cc->proven = yip_device_link_proven(t->dev, (uint32_t)cc->link))) {
			if (now >= cc->opened_at + ACCEPTED_IDLE) {
				/* Its link goes; the connection stays the server's, the
				 * decoy's alone, until QUIC's idle timeout: a browser
				 * that takes DATAGRAM frames (chromium does) and only
				 * browses is not cut off at 15 s, which would be a tell. */
				slot_end(t, i, now, "nothing authenticated on it");
				t->stats.decoy_only++;
				continue;
			}
			if (cc->opened_at + ACCEPTED_IDLE < next)
				next = cc->opened_at + ACCEPTED_IDLE;
		}
		if (cc->dial >= 0 && (e = quic_conn_expiry(cc->c)) < next)
			next = e;
	}
	if (t->srv != NULL) {
		/* A closed accepted connection: its slot goes before the server frees it. */
		t->decoy.wall_s = yip_now_wall() / YIP_NS_PER_S;
		quic_server_expire(t->srv, yip_now_mono());
		/* Every connection of the server, with a link or not (a handshake's
		 * retransmissions, the decoy's answers to a client that is no yip node). */
		for (struct quic_conn *c = quic_server_next(t->srv, NULL); c != NULL;
		     c = quic_server_next(t->srv, c))
			server_drain(t, c, now);
		if ((e = quic_server_expiry(t->srv)) < next)
			next = e;
	}
	for (size_t k = 0; k < t->n_dials; k++) {
		struct loop_quic_dial *d = &t->dials[k];

		if (d->let_go) {
			d->let_go = false;
			if (d->conn >= 0) {
				quic_conn_close(t->conn[d->conn]->c, now);
				drain(t->conn[d->conn], now);
				slot_end(t, d->conn, now,
				         "let go: the server is reached another way");
			}
		}
		if (d->conn >= 0 || d->next_at == 0)
			continue;
		if (now >= d->next_at)
			dial_now(t, (int)k, now);
		else if (d->next_at < next)
			next = d->next_at;
	}
	tx_flush(t);
	return next == UINT64_MAX ? 0 : next <= now ? now + 1 : next;
}

int loop_quic_dial_server(struct loop_quic *t, uint64_t now, size_t k, size_t line)
{
	const struct loop_quic_line *ln = line < YIP_MAX_RENDEZVOUS_LINES ? &t->lines[line] : NULL;
	struct loop_quic_dial *d = NULL;

	if (ln == NULL || !ln->quic || t->dials == NULL)
		return -1;
	for (size_t i = 0; i < t->n_dials && d == NULL; i++)
		if (t->dials[i].server && t->dials[i].index == k)
			d = &t->dials[i];
	if (d == NULL) {
		if (t->n_dials >= LOOP_QUIC_DIALS)
			return -1;
		d = &t->dials[t->n_dials++];
		*d = (struct loop_quic_dial){
		    .server = true, .index = k, .addr = ln->addr, .conn = -1};
		snprintf(d->sni, sizeof(d->sni), "%s", ln->sni);
	}
	d->wanted = true;
	d->let_go = false;
	d->backoff = BACKOFF_FIRST;
	if (d->conn < 0)
		d->next_at = now; /* the loop's next tick dials it */
	return 0;
}

void loop_quic_undial_server(struct loop_quic *t, size_t k)
{
	for (size_t i = 0; i < t->n_dials; i++) {
		struct loop_quic_dial *d = &t->dials[i];

		if (!d->server || d->index != k)
			continue;
		d->wanted = false;
		d->next_at = 0;
		d->let_go = d->conn >= 0;
	}
}

void loop_quic_flush(struct loop_quic *t)
{
	uint64_t now;

	if (t->epfd < 0)
		return;
	now = yip_now_mono();
	for (int i = 0; i < LOOP_QUIC_CONNS; i++)
		if (t->conn[i] != NULL)
			drain(t->conn[i], now);
	tx_flush(t);
}

bool loop_quic_link_info(const struct loop_quic *t, uint32_t link, struct loop_quic_link_info *out)
{
	for (int i = 0; i < LOOP_QUIC_CONNS; i++) {
		const struct loop_quic_conn *cc = t->conn[i];
		struct quic_conn_info qi;

		if (cc == NULL || cc->link != (int64_t)link)
			continue;
		quic_conn_info(cc->c, &qi);
		*out = (struct loop_quic_link_info){.version = qi.version,
		                                    .cipher = qi.cipher,
		                                    .sni = qi.sni,
		                                    .alpn = qi.alpn,
		                                    .accepted = qi.server,
		                                    .peer = *quic_conn_peer(cc->c)};
		return true;
	}
	return false;
}
