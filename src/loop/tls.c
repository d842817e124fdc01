/* yipd's TLS links (tls.h). */
#include "loop/tls.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer/peer.h"
#include "tlslink/conn.h"
#include "util/bucket.h"
#include "util/clock.h"
#include "util/log.h"

#define HANDSHAKE_TIMEOUT (10 * YIP_NS_PER_S) /* TCP connect and TLS handshake, together */
#define ACCEPTED_IDLE     (15 * YIP_NS_PER_S) /* an accepted link nothing authenticated on yet */
#define BACKOFF_FIRST     (1 * YIP_NS_PER_S)
#define BACKOFF_MAX       (30 * YIP_NS_PER_S)
#define HANDSHAKES_MAX    64 /* accepted connections still in their handshake */
#define PER_SOURCE_MAX    8  /* accepted connections open from one address (IPv6: /64) */
#define ACCEPT_RATE       50 /* connections accepted a second (each costs a handshake) */
#define ACCEPT_BURST      100
#define PAD_RECORDS       4   /* the first records a dialer writes are padded ... */
#define PAD_MAX           255 /* ... by up to this many bytes each */
#define TAG_LISTEN        0xffffffffu

static const char *const alpn_http[] = {"http/1.1", NULL};

static uint8_t *link_buf(void *ctx, uint32_t link)
{
	struct loop_tls_conn *cc = ctx;

	(void)link;
	return cc->t->dgram;
}

/* Writes the frames that wait; false if the connection could not take them. */
static bool write_pending(struct loop_tls_conn *cc)
{
	if (cc->pend_len == 0)
		return true;
	if (!tls_conn_write(cc->c, cc->pend, cc->pend_len))
		return false;
	cc->pend_len = 0;
	cc->dirty = false;
	return true;
}

static bool link_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                      uint32_t block)
{
	struct loop_tls_conn *cc = ctx;
	struct loop_tls *t = cc->t;

	(void)link;
	(void)to; /* one connection, one peer */
	(void)block;
	if (len == 0 || len > WIRE_STREAM_MAX)
		return false;
	if (cc->pend_len + WIRE_STREAM_HDR + len > sizeof(cc->pend) && !write_pending(cc)) {
		t->stats.refused_full++;
		return false;
	}
	wire_stream_put(cc->pend + cc->pend_len, len);
	memcpy(cc->pend + cc->pend_len + WIRE_STREAM_HDR, t->dgram, len);
	cc->pend_len += WIRE_STREAM_HDR + len;
	cc->dirty = true;
	t->stats.frames_out++;
	return true;
}

static const struct yip_link_ops tls_ops = {
    .kind = YIP_LINK_TLS,
    .buf = link_buf,
    .send = link_send,
};

/* ---- connections ------------------------------------------------------------------- */

static void rewatch(struct loop_tls_conn *cc, int slot)
{
	uint32_t want = tls_conn_events(cc->c);
	struct epoll_event ev = {.events = want, .data.u32 = (uint32_t)slot};

	if (want == cc->watched)
		return;
	if (epoll_ctl(cc->t->epfd, EPOLL_CTL_MOD, tls_conn_fd(cc->c), &ev) == 0)
		cc->watched = want;
}

static int conn_add(struct loop_tls *t, struct tls_conn *c, int dial, uint64_t now)
{
	struct loop_tls_conn *cc;
	struct epoll_event ev;
	int slot;

	for (slot = 0; slot < LOOP_TLS_CONNS && t->conn[slot] != NULL; slot++)
		;
	cc = slot < LOOP_TLS_CONNS ? calloc(1, sizeof(*cc)) : NULL;
	if (cc == NULL) {
		tls_conn_free(c);
		return -1;
	}
	cc->t = t;
	cc->c = c;
	cc->link = -1;
	cc->dial = dial;
	cc->started = now;
	cc->watched = tls_conn_events(c);
	wire_stream_rx_init(&cc->rx);
	ev = (struct epoll_event){.events = cc->watched, .data.u32 = (uint32_t)slot};
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, tls_conn_fd(c), &ev) != 0) {
		tls_conn_free(c);
		free(cc);
		return -1;
	}
	t->conn[slot] = cc;
	t->n_conns++;
	return slot;
}

/* Dial d again after its backoff, which doubles (up to BACKOFF_MAX). */
static void back_off(struct loop_tls_dial *d, uint64_t now)
{
	d->next_at = d->wanted ? now + d->backoff : 0;
	d->backoff = d->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : d->backoff * 2;
	d->failures++;
}

static void conn_end(struct loop_tls *t, int slot, uint64_t now, const char *why)
{
	struct loop_tls_conn *cc = t->conn[slot];
	const char *reason = why ? why : tls_conn_why(cc->c);
	char addr[YIP_ADDRSTRLEN];

	yip_sockaddr_format(tls_conn_peer(cc->c), addr, sizeof(addr));
	if (cc->link >= 0) {
		if (t->dev != NULL)
			yip_device_link_closed(t->dev, (uint32_t)cc->link);
		yip_link_del(t->links, (uint32_t)cc->link);
		t->stats.closed++;
		log_limited(YIP_LOG_INFO, 0, "tls: link to %s closed (%s)", addr,
		            reason ? reason : "closed");
	} else {
		t->stats.failed++;
		log_limited(YIP_LOG_DEBUG, 0, "tls: connection with %s failed (%s)", addr,
		            reason ? reason : "?");
	}
	if (cc->dial >= 0) {
		struct loop_tls_dial *d = &t->dials[cc->dial];

		d->conn = -1;
		snprintf(d->why, sizeof(d->why), "%s", reason ? reason : "closed");
		/* Open for a while: start again soon; else back off. */
		if (cc->link >= 0 && now - cc->started > BACKOFF_MAX)
			d->backoff = BACKOFF_FIRST;
		back_off(d, now);
	}
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, tls_conn_fd(cc->c), NULL);
	tls_conn_free(cc->c);
	sodium_memzero(cc, sizeof(*cc));
	free(cc);
	t->conn[slot] = NULL;
	t->n_conns--;
}

static void on_frame(void *arg, const uint8_t *d, size_t len)
{
	struct loop_tls_conn *cc = arg;
	struct loop_tls *t = cc->t;

	t->stats.frames_in++;
	cc->last_rx = yip_now_mono();
	yip_device_rx_link(t->dev, cc->last_rx, (uint32_t)cc->link, tls_conn_peer(cc->c), d, len);
}

static void opened(struct loop_tls *t, struct loop_tls_conn *cc, uint64_t now)
{
	int64_t id =
	    yip_link_add(t->links, t->link_from, &tls_ops, cc, WIRE_STREAM_MAX, YIP_LINK_RELIABLE);
	char addr[YIP_ADDRSTRLEN];

	yip_sockaddr_format(tls_conn_peer(cc->c), addr, sizeof(addr));
	if (id < 0) {
		log_limited(YIP_LOG_WARN, 0, "tls: no link free for %s", addr);
		tls_conn_close(cc->c);
		return;
	}
	cc->link = id;
	cc->last_rx = now;
	cc->opened_at = now;
	t->stats.opened++;
	if (cc->dial >= 0) {
		struct loop_tls_dial *d = &t->dials[cc->dial];

		d->why[0] = '\0';
		if (d->server)
			yip_device_server_link(t->dev, now, d->index, (uint32_t)id, &d->addr);
		else
			yip_device_link_path(t->dev, now, d->key, (uint32_t)id, &d->addr);
	}
	log_limited(YIP_LOG_INFO, 0, "tls: link %lld %s %s", (long long)id,
	            cc->dial >= 0 ? "to" : "from", addr);
}

static void conn_event(struct loop_tls *t, int slot, uint32_t events)
{
	struct loop_tls_conn *cc = t->conn[slot];
	uint64_t now = yip_now_mono();
	unsigned bits = tls_conn_handle(cc->c, events);

	if (bits & TLS_CONN_OPENED)
		opened(t, cc, now);
	if ((bits & TLS_CONN_DATA) && cc->link >= 0) {
		size_t n;

		while ((n = tls_conn_read(cc->c, t->rbuf, sizeof(t->rbuf))) > 0)
			if (wire_stream_feed(&cc->rx, t->rbuf, n, on_frame, cc) != 0) {
				t->stats.bad_frames++;
				conn_end(t, slot, now, "a broken frame");
				return;
			}
	}
	if (cc->dirty)
		write_pending(cc);
	if (tls_conn_state(cc->c) == TLS_CONN_DONE) {
		conn_end(t, slot, now, NULL);
		return;
	}
	rewatch(cc, slot);
}

/* Whether a and b are one source: the same IPv4 address, or IPv6 /64. */
static bool same_source(const union yip_sockaddr *a, const union yip_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr;
	return memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 8) == 0;
}

/*
 * Takes the connections waiting on listen_tls. Cheap checks first: at most
 * ACCEPT_RATE a second (a handshake costs a signature), HANDSHAKES_MAX in
 * their handshake, PER_SOURCE_MAX from one source; past them a connection
 * is closed at once, before any TLS (counted as refused_busy).
 */
static void on_accept(struct loop_tls *t)
{
	uint64_t now = yip_now_mono();

	for (;;) {
		union yip_sockaddr from;
		socklen_t alen = sizeof(from);
		int fd = accept4(t->listen_fd, &from.sa, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		size_t shaking = 0, same = 0;
		struct tls_conn *c;

		if (fd < 0)
			return;
		for (int i = 0; i < LOOP_TLS_CONNS; i++) {
			const struct loop_tls_conn *o = t->conn[i];

			if (o == NULL || o->dial >= 0)
				continue;
			shaking += o->link < 0;
			same += same_source(tls_conn_peer(o->c), &from);
		}
		if (shaking >= HANDSHAKES_MAX || same >= PER_SOURCE_MAX ||
		    t->n_conns >= LOOP_TLS_CONNS ||
		    !yip_bucket_take(&t->accepts, now, ACCEPT_RATE, ACCEPT_BURST)) {
			t->stats.refused_busy++;
			close(fd);
			continue;
		}
		c = tls_conn_accept(t->srv, fd, &from);
		if (c == NULL || conn_add(t, c, -1, now) < 0) {
			t->stats.refused_busy++;
			continue;
		}
		t->stats.accepted++;
	}
}

static void on_epoll(void *ctx, uint32_t events)
{
	struct loop_tls *t = ctx;
	struct epoll_event evs[32];
	int n;

	(void)events;
	if (t->dev == NULL)
		return;
	n = epoll_wait(t->epfd, evs, 32, 0);
	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;

		if (tag == TAG_LISTEN)
			on_accept(t);
		else if (tag < LOOP_TLS_CONNS && t->conn[tag] != NULL)
			conn_event(t, (int)tag, evs[i].events);
	}
	loop_tls_flush(t);
}

/* ---- dialing ----------------------------------------------------------------------- */

static void dial_now(struct loop_tls *t, int k, uint64_t now)
{
	struct loop_tls_dial *d = &t->dials[k];
	struct tls_dial_config dc = {.sni = d->sni[0] ? d->sni : NULL,
	                             .pad_records = t->pad_records,
	                             .pad_max = t->pad_max,
	                             .reality = d->reality};
	char err[128];
	struct tls_conn *c;
	int slot;

	if (d->reality) {
		memcpy(dc.front_pub, d->front_pub, sizeof(dc.front_pub));
		memcpy(dc.short_id, d->short_id, sizeof(dc.short_id));
	}
	c = tls_conn_dial(&d->addr, &dc, err, sizeof(err));
	d->next_at = 0;
	if (c == NULL || (slot = conn_add(t, c, k, now)) < 0) {
		snprintf(d->why, sizeof(d->why), "%s", c == NULL ? err : "no connection free");
		back_off(d, now);
		return;
	}
	d->conn = slot;
	t->stats.dialed++;
}

static int dial_add(struct loop_tls *t, bool server, size_t index, const uint8_t *key,
                    const union yip_sockaddr *addr, const char *sni)
{
	struct loop_tls_dial *d;

	if (t->dials == NULL && (t->dials = calloc(LOOP_TLS_DIALS, sizeof(*t->dials))) == NULL)
		return -1;
	if (t->n_dials >= LOOP_TLS_DIALS)
		return -1;
	d = &t->dials[t->n_dials];
	*d = (struct loop_tls_dial){
	    .used = true, .wanted = true, .server = server, .index = index, .addr = *addr};
	if (key != NULL)
		memcpy(d->key, key, YIP_KEY_LEN);
	if (sni != NULL)
		snprintf(d->sni, sizeof(d->sni), "%s", sni);
	d->conn = -1;
	d->backoff = BACKOFF_FIRST;
	return (int)t->n_dials++;
}

int loop_tls_dial_server(struct loop_tls *t, uint64_t now, size_t k, size_t line)
{
	const struct loop_tls_line *ln = line < YIP_MAX_RENDEZVOUS_LINES ? &t->lines[line] : NULL;

	if (ln == NULL || !ln->tls)
		return -1;
	for (size_t i = 0; i < t->n_dials; i++)
		if (t->dials[i].server && t->dials[i].index == k) {
			t->dials[i].wanted = true;
			t->dials[i].backoff = BACKOFF_FIRST;
			if (t->dials[i].conn < 0)
				t->dials[i].next_at = now;
			return 0;
		}
	int i = dial_add(t, true, k, NULL, &ln->addr, ln->sni[0] ? ln->sni : NULL);

	if (i < 0)
		return -1;
	t->dials[i].reality = ln->reality;
	memcpy(t->dials[i].front_pub, ln->front_pub, YIP_KEY_LEN);
	memcpy(t->dials[i].short_id, ln->short_id, sizeof(ln->short_id));
	t->dials[i].next_at = now;
	return 0;
}

void loop_tls_undial_server(struct loop_tls *t, size_t k)
{
	for (size_t i = 0; i < t->n_dials; i++) {
		struct loop_tls_dial *d = &t->dials[i];

		if (!d->server || d->index != k)
			continue;
		d->wanted = false;
		d->next_at = 0;
		/* Called from within the engine: the link goes at the next
		 * flush, once the engine call has returned. */
		if (d->conn >= 0)
			t->conn[d->conn]->let_go = true;
	}
}

/* ---- the interface ------------------------------------------------------------------ */

/* The SNI a tls:// dial sends: tls_sni (the peer's, else the node's), else
 * the host in the URL if it is a name, else none. */
static const char *sni_for(const struct yip_config *cfg, const char *own, const char *host)
{
	return own ? own : cfg->tls_sni ? cfg->tls_sni : host;
}

/* Whether cfg names any TLS or QUIC link: a listener, a peer or a server line. */
static bool loop_tls_needed(const struct yip_config *cfg)
{
	if (cfg->has_listen_tls || cfg->has_listen_quic)
		return true;
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (cfg->peers[i].transport != YIP_TRANSPORT_UDP)
			return true;
	for (size_t i = 0; i < cfg->n_rendezvous; i++)
		if (cfg->rendezvous[i].transport != YIP_TRANSPORT_UDP)
			return true;
	return false;
}

int loop_tls_setup(struct loop_tls *t, const struct yip_config *cfg, const char *host_name,
                   struct yip_links *links, uint32_t link_from, char *err, size_t errlen)
{
	*t = (struct loop_tls){.links = links, .link_from = link_from, .listen_fd = -1, .epfd = -1};
	t->pad_records = PAD_RECORDS;
	t->pad_max = PAD_MAX;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	/* libcrypto and libssl are set up (about 2 MiB resident) only for a
	 * node that can use a TLS or QUIC link (both use the TLS engine):
	 * links to peers and servers come from the configuration alone. */
	if (loop_tls_needed(cfg) && tls_conn_init() != 0) {
		snprintf(err, errlen, "tls: libssl cannot be set up");
		return -1;
	}
	if (t->epfd < 0) {
		snprintf(err, errlen, "tls: epoll: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const struct yip_peer_config *pc = &cfg->peers[i];

		if (pc->transport != YIP_TRANSPORT_TLS || !pc->has_endpoint)
			continue;
		if (dial_add(t, false, i, pc->public_key, &pc->endpoint,
		             sni_for(cfg, pc->tls_sni, pc->endpoint_name)) < 0) {
			snprintf(err, errlen, "tls: out of memory");
			return -1;
		}
		t->dials[t->n_dials - 1].next_at = 1; /* at once */
	}
	for (size_t i = 0; i < cfg->n_rendezvous && i < YIP_MAX_RENDEZVOUS_LINES; i++) {
		const struct yip_rendezvous_config *rc = &cfg->rendezvous[i];
		/* A REALITY front is dialed with the real site's name, the URL's. */
		const char *sni = rc->reality ? rc->reality_sni : sni_for(cfg, NULL, rc->name);

		if (rc->transport != YIP_TRANSPORT_TLS)
			continue;
		t->lines[i].tls = true;
		t->lines[i].addr = rc->addr;
		t->lines[i].reality = rc->reality;
		memcpy(t->lines[i].front_pub, rc->reality_pub, YIP_KEY_LEN);
		memcpy(t->lines[i].short_id, rc->reality_sid, sizeof(rc->reality_sid));
		snprintf(t->lines[i].sni, sizeof(t->lines[i].sni), "%s", sni ? sni : "");
	}
	if (cfg->has_listen_tls) {
		struct tls_ctx_config sc = {.cert_path = cfg->tls_cert_path,
		                            .key_path = cfg->tls_key_path,
		                            .self_name = host_name,
		                            .alpn = alpn_http};
		const union yip_sockaddr *a = &cfg->listen_tls;
		socklen_t alen = a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in4);
		char addr[YIP_ADDRSTRLEN];
		int one = 1;
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = TAG_LISTEN};

		yip_sockaddr_format(a, addr, sizeof(addr));
		t->srv = tls_server_ctx_new(&sc, err, errlen);
		if (t->srv == NULL)
			return -1;
		t->listen_fd =
		    socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (t->listen_fd < 0 ||
		    setsockopt(t->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
		    bind(t->listen_fd, &a->sa, alen) != 0 || listen(t->listen_fd, 128) != 0 ||
		    epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->listen_fd, &ev) != 0) {
			snprintf(err, errlen, "listen_tls %s: %s", addr, strerror(errno));
			return -1;
		}
		t->listen = *a;
		log_info("tls: listening on %s (%s)", addr,
		         cfg->tls_cert_path ? cfg->tls_cert_path : "a self-signed certificate");
	}
	return 0;
}

int loop_tls_watch(struct loop_tls *t, struct yip_poll *p)
{
	return yip_poll_add(p, t->epfd, EPOLLIN, on_epoll, t);
}

void loop_tls_attach(struct loop_tls *t, struct yip_device *dev)
{
	t->dev = dev;
}

void loop_tls_free(struct loop_tls *t)
{
	for (int i = 0; i < LOOP_TLS_CONNS; i++)
		if (t->conn[i] != NULL) {
			tls_conn_free(t->conn[i]->c);
			free(t->conn[i]);
			t->conn[i] = NULL;
		}
	if (t->listen_fd >= 0)
		close(t->listen_fd);
	if (t->epfd >= 0)
		close(t->epfd);
	tls_server_ctx_free(t->srv);
	free(t->dials);
	t->dials = NULL;
	t->listen_fd = t->epfd = -1;
}

uint64_t loop_tls_tick(struct loop_tls *t, uint64_t now)
{
	uint64_t next = 0;

	if (t->dev == NULL)
		return 0;
	for (int i = 0; i < LOOP_TLS_CONNS; i++) {
		struct loop_tls_conn *cc = t->conn[i];
		uint64_t due;

		if (cc == NULL)
			continue;
		if (cc->link < 0)
			due = cc->started + HANDSHAKE_TIMEOUT;
		else if (cc->dial < 0 && !cc->proven &&
		         !(cc->proven = yip_device_link_proven(t->dev, (uint32_t)cc->link)))
			due = cc->opened_at + ACCEPTED_IDLE; /* nothing authenticated on it yet */
		else
			continue;
		if (now >= due) {
			conn_end(t, i, now, "timeout");
			continue;
		}
		if (next == 0 || due < next)
			next = due;
	}
	for (size_t k = 0; k < t->n_dials; k++) {
		struct loop_tls_dial *d = &t->dials[k];

		if (d->conn >= 0 || d->next_at == 0)
			continue;
		if (now >= d->next_at)
			dial_now(t, (int)k, now);
		else if (next == 0 || d->next_at < next)
			next = d->next_at;
	}
	return next;
}

void loop_tls_flush(struct loop_tls *t)
{
	for (int i = 0; i < LOOP_TLS_CONNS; i++) {
		struct loop_tls_conn *cc = t->conn[i];

		if (cc != NULL && cc->let_go) {
			write_pending(cc);
			tls_conn_close(cc->c);
			conn_end(t, i, yip_now_mono(), "not needed: back on UDP");
			continue;
		}
		if (cc == NULL || !cc->dirty)
			continue;
		write_pending(cc);
		if (tls_conn_state(cc->c) == TLS_CONN_DONE)
			conn_end(t, i, yip_now_mono(), NULL);
		else
			rewatch(cc, i);
	}
}

const char *loop_tls_server_error(const struct loop_tls *t, size_t k)
{
	for (size_t i = 0; i < t->n_dials; i++) {
		const struct loop_tls_dial *d = &t->dials[i];

		if (d->server && d->index == k && d->wanted && d->why[0] != '\0' &&
		    (d->conn < 0 || t->conn[d->conn]->link < 0))
			return d->why;
	}
	return NULL;
}

bool loop_tls_link_info(const struct loop_tls *t, uint32_t link, struct loop_tls_link_info *out)
{
	for (int i = 0; i < LOOP_TLS_CONNS; i++) {
		const struct loop_tls_conn *cc = t->conn[i];
		struct tls_conn_info ti;

		if (cc == NULL || cc->link != (int64_t)link)
			continue;
		tls_conn_info(cc->c, &ti);
		*out = (struct loop_tls_link_info){.version = ti.version,
		                                   .cipher = ti.cipher,
		                                   .sni = ti.sni,
		                                   .alpn = ti.alpn,
		                                   .accepted = ti.server,
		                                   .reality =
		                                       cc->dial >= 0 && t->dials[cc->dial].reality,
		                                   .peer = *tls_conn_peer(cc->c)};
		return true;
	}
	return false;
}
