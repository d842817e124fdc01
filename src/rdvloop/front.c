/*
 * The TLS front (see front.h). Connections live in a fixed table; a slot
 * and its generation name a connection in its epoll tags and in its
 * synthetic address, so an event or a datagram for a connection that is
 * gone finds the generation changed and is dropped. Memory: the table,
 * and per connection OpenSSL's, one buffer of BUF_LEN once TLS is up and,
 * for a node's stream, its frame reader; nothing per frame.
 *
 * Backpressure, both ways, with bounded buffers: the visitor's bytes wait
 * in the connection's buffer until the decoy took them, and the visitor's
 * socket is not read meanwhile; the decoy is read only as far as the TLS
 * connection's queue has room.
 */
#include "rdvloop/front.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tlslink/conn.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/http.h"
#include "wire/stream.h"

/* The first read (a whole frame of the largest size fits), and the
 * visitor's bytes on their way to the decoy or the site. */
#define BUF_LEN      (WIRE_STREAM_HDR + WIRE_STREAM_MAX)
#define PEND_MAX     2048 /* the engine's answer to a first frame, until the decision */
#define ACCEPT_BURST 64   /* connections accepted per wakeup */
#define CLOSING_S    10   /* a close_notify not out by then: the socket is closed */
#define SITE_ROOM    2048 /* queue room a response needs */

/* Epoll tags: bit 0 the decoy's fd, then the slot, then the generation. */
#define TAG_DECOY    1u
#define TAG_SLOTS    0x7ffu
#define TAG_LISTENER TAG_SLOTS
#define TAG_GEN      0x7ffffu

_Static_assert(FRONT_MAX_CONNS < TAG_SLOTS, "a slot fits its tag");

enum fc_state {
	FC_FREE,
	FC_HANDSHAKE, /* the TLS handshake is under way */
	FC_OPEN,      /* TLS is up; the visitor has sent nothing yet */
	FC_YIP,       /* a node's stream */
	FC_DECOY,     /* relayed to the decoy */
	FC_SITE,      /* answered by the built-in site */
	FC_CLOSING,   /* close_notify queued: freed once it is out */
};

struct fconn {
	struct tls_conn *tls;
	uint32_t gen;
	uint8_t state;
	uint8_t source[YIP_SOURCE_LEN];
	size_t source_len;
	uint64_t since;  /* accepted at */
	uint64_t active; /* the visitor's last bytes (the site), or the close's start */
	uint64_t node;   /* a node's stream: what rdv_rx last returned for it */
	union yip_sockaddr addr;
	int decoy; /* -1: none */
	bool decoy_up;
	uint32_t tls_events, decoy_events; /* as epoll watches them now */
	uint8_t *buf;                      /* BUF_LEN */
	size_t len, off; /* buf[off, len): not yet taken by the decoy or the site */
	struct wire_stream_rx *rx;
};

struct rdv_front {
	struct rdv_server *srv;
	struct tls_server_ctx *ctx;
	int epfd, lfd;
	bool decoy;
	union yip_sockaddr decoy_addr;
	unsigned handshakes;
	uint64_t now;
	int deciding; /* the slot whose first frame the engine has, or -1 */
	size_t pend_len;
	uint8_t pend[PEND_MAX];
	uint8_t io[BUF_LEN];  /* reads */
	uint8_t out[BUF_LEN]; /* a frame on its way into a stream */
	struct yip_rdv_front st;
	struct fconn conns[FRONT_MAX_CONNS];
};

static uint32_t tag_of(const struct fconn *fc, unsigned slot, bool decoy)
{
	return (fc->gen & TAG_GEN) << 12 | slot << 1 | (decoy ? TAG_DECOY : 0);
}

static unsigned slot_of(const struct rdv_front *f, const struct fconn *fc)
{
	return (unsigned)(fc - f->conns);
}

/* ---- the epoll set --------------------------------------------------------------- */

/* What the connection's fds should be watched for now. */
static uint32_t tls_wanted(const struct fconn *fc)
{
	uint32_t ev = tls_conn_events(fc->tls);

	/* The visitor's bytes still wait for the decoy: not a byte more is
	 * read until it took them. The site reads until its buffer is full
	 * (a request still coming, or requests waiting for room to answer). */
	if (((fc->state == FC_DECOY || fc->state == FC_OPEN) && fc->off < fc->len) ||
	    (fc->state == FC_SITE && fc->len == BUF_LEN))
		ev &= ~(uint32_t)EPOLLIN;
	return ev;
}

static uint32_t decoy_wanted(const struct fconn *fc)
{
	uint32_t ev = 0;

	if (!fc->decoy_up)
		return EPOLLOUT; /* the connect */
	if (fc->off < fc->len && fc->state != FC_SITE)
		ev |= EPOLLOUT;
	if (tls_conn_room(fc->tls) > 0)
		ev |= EPOLLIN;
	return ev;
}

static void watch_fd(struct rdv_front *f, int fd, uint32_t tag, uint32_t *have, uint32_t want)
{
	struct epoll_event ev = {.events = want, .data.u32 = tag};

	if (*have == want)
		return;
	if (epoll_ctl(f->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		*have = want;
}

static void watch(struct rdv_front *f, struct fconn *fc)
{
	unsigned slot = slot_of(f, fc);

	if (fc->state == FC_FREE)
		return;
	watch_fd(f, tls_conn_fd(fc->tls), tag_of(fc, slot, false), &fc->tls_events, tls_wanted(fc));
	if (fc->decoy >= 0)
		watch_fd(f, fc->decoy, tag_of(fc, slot, true), &fc->decoy_events, decoy_wanted(fc));
}

static int watch_add(struct rdv_front *f, int fd, uint32_t tag, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u32 = tag};

	return epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- connections ------------------------------------------------------------------ */

static void decoy_close(struct rdv_front *f, struct fconn *fc)
{
	if (fc->decoy < 0)
		return;
	epoll_ctl(f->epfd, EPOLL_CTL_DEL, fc->decoy, NULL);
	close(fc->decoy);
	fc->decoy = -1;
	fc->decoy_up = false;
	fc->decoy_events = 0;
}

static void count_decoy(struct rdv_front *f, enum yip_rdv_decoy_reason r)
{
	f->st.decoy_streams++;
	f->st.decoy_reasons[r]++;
}

static void fc_free(struct rdv_front *f, struct fconn *fc)
{
	if (fc->state == FC_FREE)
		return;
	if (fc->state == FC_HANDSHAKE)
		f->handshakes--;
	if (fc->state == FC_OPEN)
		count_decoy(f,
		            YIP_RDV_DECOY_IDLE); /* it left, or was closed, having sent nothing */
	if (fc->state == FC_YIP || fc->node != 0)
		rdv_stream_gone(f->srv, &fc->addr, fc->node);
	decoy_close(f, fc);
	epoll_ctl(f->epfd, EPOLL_CTL_DEL, tls_conn_fd(fc->tls), NULL);
	tls_conn_free(fc->tls);
	free(fc->buf);
	free(fc->rx);
	fc->tls = NULL;
	fc->buf = NULL;
	fc->rx = NULL;
	fc->gen++;
	fc->state = FC_FREE;
	f->st.open--;
}

/* Ends the TLS side with a close_notify; the slot is freed when it is out. */
static void fc_close(struct rdv_front *f, struct fconn *fc)
{
	if (fc->state == FC_OPEN)
		count_decoy(f, YIP_RDV_DECOY_IDLE);
	if (fc->state == FC_YIP || fc->node != 0)
		rdv_stream_gone(f->srv, &fc->addr, fc->node);
	fc->node = 0;
	decoy_close(f, fc);
	fc->state = FC_CLOSING;
	fc->active = f->now;
	fc->len = fc->off = 0;
	tls_conn_close(fc->tls);
}

/* After anything done to a connection: freed if its TLS side is over,
 * else watched for what it waits for now. */
static void settle(struct rdv_front *f, struct fconn *fc)
{
	if (fc->state == FC_FREE)
		return;
	if (tls_conn_state(fc->tls) == TLS_CONN_DONE) {
		if (fc->state == FC_HANDSHAKE)
			f->st.tls_failed++;
		fc_free(f, fc);
		return;
	}
	watch(f, fc);
}

/* Starts the decoy connection; false if no socket could be had. */
static bool decoy_open(struct rdv_front *f, struct fconn *fc)
{
	int one = 1;
	socklen_t alen = f->decoy_addr.sa.sa_family == AF_INET ? sizeof(struct sockaddr_in)
	                                                       : sizeof(struct sockaddr_in6);
	int fd = socket(f->decoy_addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, &f->decoy_addr.sa, alen) != 0 && errno != EINPROGRESS) {
		close(fd);
		return false;
	}
	if (watch_add(f, fd, tag_of(fc, slot_of(f, fc), true), EPOLLOUT) != 0) {
		close(fd);
		return false;
	}
	fc->decoy = fd;
	fc->decoy_up = false;
	fc->decoy_events = EPOLLOUT;
	return true;
}

/* ---- the built-in site -------------------------------------------------------------- */

/* Writes one response; false if the queue refused it. */
static bool site_respond(struct rdv_front *f, struct fconn *fc, int code, bool head, bool keep)
{
	const char *reason = wire_http_site_reason(code);
	size_t blen;
	const char *body = wire_http_site_body(code, &blen);
	char date[WIRE_HTTP_DATE_LEN + 1];
	int n;

	wire_http_date(date, yip_now_wall() / YIP_NS_PER_S);
	n = snprintf((char *)f->io, sizeof(f->io),
	             "HTTP/1.1 %d %s\r\nServer: nginx\r\nDate: %s\r\nContent-Type: text/html\r\n"
	             "Content-Length: %zu\r\nConnection: %s\r\n%s\r\n",
	             code, reason, date, blen, keep ? "keep-alive" : "close",
	             code == 200 ? "Accept-Ranges: bytes\r\n" : "");
	if (n < 0 || (size_t)n + blen > sizeof(f->io))
		return false;
	if (!head) {
		memcpy(f->io + n, body, blen);
		n += (int)blen;
	}
	f->st.site_requests++;
	return tls_conn_write(fc->tls, f->io, (size_t)n);
}

/* Answers the whole requests in buf[off, len), in order; closes after one it cannot keep alive. */
static void site_serve(struct rdv_front *f, struct fconn *fc)
{
	while (fc->state == FC_SITE && fc->off < fc->len) {
		struct wire_http_req req;
		enum wire_http_verdict v;
		int code;

		if (tls_conn_room(fc->tls) < SITE_ROOM)
			return; /* when the queue drains */
		v = wire_http_request(fc->buf + fc->off, fc->len - fc->off, &req);
		if (v == WIRE_HTTP_MORE)
			break;
		if (v == WIRE_HTTP_BAD) {
			site_respond(f, fc, 400, false, false);
			fc_close(f, fc);
			return;
		}
		code = wire_http_site_code(req.method, req.page);
		if (code == 405)
			req.keep = false;
		fc->off += req.head_len;
		if (!site_respond(f, fc, code, req.method == WIRE_HTTP_HEAD, req.keep) ||
		    !req.keep) {
			fc_close(f, fc);
			return;
		}
	}
	if (fc->off == fc->len) {
		fc->off = fc->len = 0;
	} else if (fc->off > 0) {
		memmove(fc->buf, fc->buf + fc->off, fc->len - fc->off);
		fc->len -= fc->off;
		fc->off = 0;
	}
}

/* ---- the visitor's bytes ------------------------------------------------------------- */

/* Writes the bytes waiting for the decoy, as far as it takes them. */
static void decoy_out(struct rdv_front *f, struct fconn *fc)
{
	while (fc->decoy_up && fc->off < fc->len) {
		ssize_t w = send(fc->decoy, fc->buf + fc->off, fc->len - fc->off, MSG_NOSIGNAL);

		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0) {
			fc_close(f, fc); /* the decoy went away */
			return;
		}
		fc->off += (size_t)w;
	}
	if (fc->off == fc->len)
		fc->off = fc->len = 0;
}

/* Not a yip node: the decoy (or the site) has the connection from now on,
 * the bytes in buf first. */
static void to_decoy(struct rdv_front *f, struct fconn *fc, enum yip_rdv_decoy_reason why)
{
	count_decoy(f, why);
	if (f->decoy) {
		fc->state = FC_DECOY;
		decoy_out(f, fc);
	} else {
		fc->state = FC_SITE;
		site_serve(f, fc);
	}
}

struct feed {
	struct rdv_front *f;
	struct fconn *fc;
};

static void on_frame(void *arg, const uint8_t *d, size_t len)
{
	struct feed *e = arg;
	uint64_t h;

	e->f->st.frames_in++;
	h = rdv_rx(e->f->srv, e->f->now, RDV_SOCK_STREAM, &e->fc->addr, d, len);
	if (h != 0)
		e->fc->node = h;
}

/* Frames for the engine; false if the stream broke (it is closed). */
static bool yip_feed(struct rdv_front *f, struct fconn *fc, const uint8_t *p, size_t len)
{
	struct feed e = {f, fc};

	if (wire_stream_feed(fc->rx, p, len, on_frame, &e) == 0)
		return true;
	f->st.stream_broken++;
	fc_close(f, fc);
	return false;
}

/*
 * The first bytes a visitor sent (buf[0, len)): a yip node's if they begin
 * with a whole frame whose datagram the engine takes; decided now, with no
 * wait. What the engine answered waits in pend until then.
 */
static void decide(struct rdv_front *f, struct fconn *fc)
{
	size_t flen = fc->len >= WIRE_STREAM_HDR ? (size_t)(fc->buf[0] | fc->buf[1] << 8) : 0;
	uint64_t h;

	if (flen == 0 || flen > WIRE_STREAM_MAX || fc->len < WIRE_STREAM_HDR + flen) {
		to_decoy(f, fc, YIP_RDV_DECOY_NOT_FRAME);
		return;
	}
	f->deciding = (int)slot_of(f, fc);
	f->pend_len = 0;
	h = rdv_rx(f->srv, f->now, RDV_SOCK_STREAM, &fc->addr, fc->buf + WIRE_STREAM_HDR, flen);
	f->deciding = -1;
	if (h == 0 || (fc->rx = malloc(sizeof(*fc->rx))) == NULL) {
		if (h != 0)
			rdv_stream_gone(f->srv, &fc->addr, h);
		to_decoy(f, fc, YIP_RDV_DECOY_NOT_AUTHENTICATED);
		return;
	}
	fc->state = FC_YIP;
	fc->node = h;
	f->st.yip_streams++;
	f->st.frames_in++;
	decoy_close(f, fc);
	wire_stream_rx_init(fc->rx);
	if (f->pend_len > 0 && !tls_conn_write(fc->tls, f->pend, f->pend_len))
		f->st.stream_full++;
	else
		f->st.frames_out += f->pend_len > 0;
	f->pend_len = 0;
	if (yip_feed(f, fc, fc->buf + WIRE_STREAM_HDR + flen, fc->len - WIRE_STREAM_HDR - flen)) {
		free(fc->buf);
		fc->buf = NULL;
		fc->len = fc->off = 0;
	}
}

/* Reads what the visitor sent, as far as its state takes it. */
static void visitor_in(struct rdv_front *f, struct fconn *fc)
{
	for (int rounds = 0; rounds < 64; rounds++) {
		size_t n;

		switch (fc->state) {
		case FC_OPEN:
			fc->len = tls_conn_read(fc->tls, fc->buf, BUF_LEN);
			fc->off = 0;
			if (fc->len == 0)
				return;
			fc->active = f->now;
			decide(f, fc);
			break;
		case FC_YIP:
			n = tls_conn_read(fc->tls, f->io, sizeof(f->io));
			if (n == 0 || !yip_feed(f, fc, f->io, n))
				return;
			break;
		case FC_DECOY:
			if (fc->off < fc->len)
				return; /* the decoy takes those first */
			fc->len = tls_conn_read(fc->tls, fc->buf, BUF_LEN);
			fc->off = 0;
			if (fc->len == 0)
				return;
			decoy_out(f, fc);
			break;
		case FC_SITE:
			if (fc->len == BUF_LEN)
				return;
			n = tls_conn_read(fc->tls, fc->buf + fc->len, BUF_LEN - fc->len);
			if (n == 0)
				return;
			fc->len += n;
			fc->active = f->now;
			site_serve(f, fc);
			break;
		default:
			/* Closing: what it still sends is read and dropped. */
			if (tls_conn_read(fc->tls, f->io, sizeof(f->io)) == 0)
				return;
		}
	}
}

/* Reads the decoy, as far as the TLS queue has room. */
static void decoy_in(struct rdv_front *f, struct fconn *fc)
{
	while (fc->decoy >= 0 && fc->decoy_up) {
		size_t room = tls_conn_room(fc->tls);
		ssize_t n;

		if (room == 0)
			return;
		n = recv(fc->decoy, f->io, room < sizeof(f->io) ? room : sizeof(f->io), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			fc_close(f, fc); /* the decoy closed: so does the front, as it would have */
			return;
		}
		if (fc->state == FC_OPEN) {
			/* The decoy spoke first, to a visitor that said nothing. */
			count_decoy(f, YIP_RDV_DECOY_IDLE);
			fc->state = FC_DECOY;
		}
		if (!tls_conn_write(fc->tls, f->io, (size_t)n)) {
			fc_close(f, fc);
			return;
		}
	}
}

/* ---- events ---------------------------------------------------------------------------- */

static void on_tls(struct rdv_front *f, struct fconn *fc, uint32_t events)
{
	unsigned r = tls_conn_handle(fc->tls, events);

	if (r & TLS_CONN_OPENED) {
		f->handshakes--;
		fc->state = FC_OPEN;
		fc->active = f->now;
		fc->buf = malloc(BUF_LEN);
		/* The decoy's connection now, so that an idle visitor gets its timing. */
		if (fc->buf == NULL || (f->decoy && !decoy_open(f, fc))) {
			f->st.decoy_failed += fc->buf != NULL;
			fc_free(f, fc);
			return;
		}
	}
	if (fc->state != FC_HANDSHAKE)
		visitor_in(f, fc);
	/* Room in the queue again: the decoy may be read, the site may answer. */
	if (fc->state == FC_DECOY || fc->state == FC_OPEN)
		decoy_in(f, fc);
	else if (fc->state == FC_SITE)
		site_serve(f, fc);
	settle(f, fc);
}

static void on_decoy(struct rdv_front *f, struct fconn *fc, uint32_t events)
{
	if (!fc->decoy_up) {
		int e = 0;
		socklen_t elen = sizeof(e);

		if (getsockopt(fc->decoy, SOL_SOCKET, SO_ERROR, &e, &elen) != 0 || e != 0) {
			if (e == EINPROGRESS)
				return;
			f->st.decoy_failed++;
			log_limited(YIP_LOG_DEBUG, 0, "tls front: the decoy is unreachable: %s",
			            strerror(e ? e : errno));
			fc_close(f, fc);
			settle(f, fc);
			return;
		}
		fc->decoy_up = true;
	}
	if (events & EPOLLOUT)
		decoy_out(f, fc);
	if (fc->state != FC_CLOSING && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		decoy_in(f, fc);
	/* The decoy took the waiting bytes: the visitor may be read again
	 * (what OpenSSL holds decrypted already gives epoll no event). */
	if (fc->state == FC_DECOY && fc->off == fc->len)
		visitor_in(f, fc);
	settle(f, fc);
}

static bool source_full(const struct rdv_front *f, const uint8_t *src, size_t len)
{
	unsigned n = 0;

	for (unsigned i = 0; i < FRONT_MAX_CONNS; i++) {
		const struct fconn *c = &f->conns[i];

		if (c->state != FC_FREE && c->source_len == len &&
		    memcmp(c->source, src, len) == 0 && ++n >= FRONT_PER_SOURCE)
			return true;
	}
	return false;
}

static void on_accept(struct rdv_front *f)
{
	for (int k = 0; k < ACCEPT_BURST; k++) {
		union yip_sockaddr from;
		socklen_t alen = sizeof(from);
		uint8_t src[YIP_SOURCE_LEN];
		struct fconn *fc = NULL;
		size_t slen;
		int fd;

		memset(&from, 0, sizeof(from));
		fd = accept4(f->lfd, &from.sa, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		f->st.tcp_accepted++;
		slen = yip_sockaddr_source(&from, src);
		for (unsigned i = 0; i < FRONT_MAX_CONNS && fc == NULL; i++)
			if (f->conns[i].state == FC_FREE)
				fc = &f->conns[i];
		if (fc == NULL || f->handshakes >= FRONT_MAX_HANDSHAKES ||
		    source_full(f, src, slen)) {
			f->st.tcp_refused++;
			close(fd);
			continue;
		}
		fc->tls = tls_conn_accept(f->ctx, fd, &from);
		if (fc->tls == NULL) {
			f->st.tcp_refused++;
			continue;
		}
		fc->state = FC_HANDSHAKE;
		fc->since = fc->active = f->now;
		fc->node = 0;
		fc->decoy = -1;
		fc->decoy_up = false;
		fc->len = fc->off = 0;
		memcpy(fc->source, src, slen);
		fc->source_len = slen;
		/* Bit 63 clear: that names a QUIC connection (RDV_QUIC_ID_BIT). */
		rdv_stream_addr(&fc->addr,
		                (uint64_t)(fc->gen & 0x7fffffffu) << 32 | (slot_of(f, fc) + 1));
		fc->tls_events = tls_conn_events(fc->tls);
		fc->decoy_events = 0;
		f->handshakes++;
		f->st.open++;
		if (watch_add(f, tls_conn_fd(fc->tls), tag_of(fc, slot_of(f, fc), false),
		              fc->tls_events) != 0) {
			f->st.tcp_refused++;
			fc_free(f, fc);
		}
	}
}

void rdv_front_event(struct rdv_front *f, uint64_t now, const struct epoll_event *ev)
{
	uint32_t tag = ev->data.u32, slot = tag >> 1 & TAG_SLOTS;
	struct fconn *fc;

	f->now = now;
	if (slot == TAG_LISTENER) {
		on_accept(f);
		return;
	}
	if (slot >= FRONT_MAX_CONNS)
		return;
	fc = &f->conns[slot];
	/* A connection freed since: its slot's generation moved on. */
	if (fc->state == FC_FREE || (fc->gen & TAG_GEN) != (tag >> 12 & TAG_GEN))
		return;
	if (tag & TAG_DECOY) {
		if (fc->decoy >= 0)
			on_decoy(f, fc, ev->events);
	} else {
		on_tls(f, fc, ev->events);
	}
}

void rdv_front_send(struct rdv_front *f, const union yip_sockaddr *to, const uint8_t *d, size_t len)
{
	uint64_t id = rdv_stream_id(to);
	uint64_t slot = (id & UINT32_MAX) - 1;
	struct fconn *fc = slot < FRONT_MAX_CONNS ? &f->conns[slot] : NULL;

	if (fc == NULL || fc->gen != id >> 32 ||
	    (fc->state != FC_YIP && !(fc->state == FC_OPEN && f->deciding == (int)slot))) {
		f->st.stream_stale++;
		return;
	}
	if (len == 0 || len > WIRE_STREAM_MAX) {
		f->st.stream_too_big++;
		return;
	}
	if (fc->state == FC_OPEN) {
		/* The engine answers a first frame before the front has decided. */
		if (f->pend_len + WIRE_STREAM_HDR + len > sizeof(f->pend)) {
			f->st.stream_full++;
			return;
		}
		wire_stream_put(f->pend + f->pend_len, len);
		memcpy(f->pend + f->pend_len + WIRE_STREAM_HDR, d, len);
		f->pend_len += WIRE_STREAM_HDR + len;
		return;
	}
	wire_stream_put(f->out, len);
	memcpy(f->out + WIRE_STREAM_HDR, d, len);
	if (!tls_conn_write(fc->tls, f->out, WIRE_STREAM_HDR + len)) {
		f->st.stream_full++;
		return;
	}
	f->st.frames_out++;
	/* Not freed here even if it ended: the engine may be in the middle of
	 * this connection's frames. Its next event, or the timers, do that. */
	watch(f, fc);
}

void rdv_front_timers(struct rdv_front *f, uint64_t now)
{
	f->now = now;
	for (unsigned i = 0; i < FRONT_MAX_CONNS; i++) {
		struct fconn *fc = &f->conns[i];

		if (fc->state != FC_FREE && tls_conn_state(fc->tls) == TLS_CONN_DONE) {
			settle(f, fc);
			continue;
		}
		switch (fc->state) {
		case FC_HANDSHAKE:
			if (now - fc->since >= FRONT_HANDSHAKE_S * YIP_NS_PER_S) {
				f->st.tls_timeouts++;
				fc_free(f, fc);
			}
			break;
		case FC_CLOSING:
			if (now - fc->active >= CLOSING_S * YIP_NS_PER_S)
				fc_free(f, fc);
			break;
		case FC_OPEN:
		case FC_SITE:
			/* The site's idle timeout (a decoy keeps its own). */
			if (!f->decoy && now - fc->active >= FRONT_SITE_IDLE_S * YIP_NS_PER_S) {
				fc_close(f, fc);
				settle(f, fc);
			}
			break;
		default:
			break;
		}
	}
}

/* ---- setting up -------------------------------------------------------------------------- */

int rdv_front_listen(const union yip_sockaddr *a, char *err, size_t errlen)
{
	char name[YIP_ADDRSTRLEN];
	int one = 1, zero = 0;
	socklen_t alen =
	    a->sa.sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	yip_sockaddr_format(a, name, sizeof(name));
	if (fd < 0) {
		snprintf(err, errlen, "listen_tcp %s: socket: %s", name, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->sa.sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, &a->sa, alen) != 0 || listen(fd, FRONT_MAX_CONNS) != 0) {
		snprintf(err, errlen, "listen_tcp %s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

struct rdv_front *rdv_front_new(const struct rdv_front_config *c, struct rdv_server *srv, int epfd,
                                char *err, size_t errlen)
{
	static const char *const alpn[] = {"http/1.1", NULL};
	struct tls_ctx_config tc = {
	    .cert_path = c->cert_path, .key_path = c->key_path, .alpn = alpn};
	struct rdv_front *f = calloc(1, sizeof(*f));
	socklen_t alen = sizeof(f->st.listen);

	if (f == NULL) {
		snprintf(err, errlen, "out of memory");
		close(c->fd);
		return NULL;
	}
	f->srv = srv;
	f->epfd = epfd;
	f->lfd = c->fd;
	f->deciding = -1;
	f->decoy = c->decoy;
	f->decoy_addr = c->decoy_addr;
	f->st.decoy = c->decoy;
	f->st.decoy_addr = c->decoy_addr;
	getsockname(c->fd, &f->st.listen.sa, &alen);
	for (unsigned i = 0; i < FRONT_MAX_CONNS; i++) {
		f->conns[i].gen = 1;
		f->conns[i].decoy = -1;
	}
	f->ctx = tls_server_ctx_new(&tc, err, errlen);
	if (f->ctx == NULL || watch_add(f, c->fd, TAG_LISTENER << 1, EPOLLIN) != 0) {
		if (f->ctx != NULL)
			snprintf(err, errlen, "epoll: %s", strerror(errno));
		rdv_front_free(f);
		return NULL;
	}
	return f;
}

void rdv_front_free(struct rdv_front *f)
{
	if (f == NULL)
		return;
	for (unsigned i = 0; i < FRONT_MAX_CONNS; i++)
		fc_free(f, &f->conns[i]);
	if (f->lfd >= 0) {
		epoll_ctl(f->epfd, EPOLL_CTL_DEL, f->lfd, NULL);
		close(f->lfd);
	}
	tls_server_ctx_free(f->ctx);
	free(f);
}

const struct yip_rdv_front *rdv_front_status(const struct rdv_front *f)
{
	return &f->st;
}
