/*
 * The REALITY front (see reality.h). Connections live in a fixed table, a
 * slot and its generation naming a connection in its epoll tags and in a
 * node's synthetic address, as in the TLS front. Each has two buffers of
 * BUF bytes: in, what the visitor sent and the target (or the TLS
 * server) has not taken yet; out, what goes to the visitor and has not
 * left yet. Neither side is read while its buffer is full: backpressure
 * both ways, nothing dropped but a node's frames when its stream is full.
 */
#include "rdvloop/reality.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "tls/server.h"
#include "tls/tls.h"
#include "tlslink/conn.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/stream.h"
#include "wire/tls.h"

#define BUF          (TLS_REC_HDR + TLS_REC_CIPHER) /* the largest record, whole */
#define ACCEPT_BURST 64
#define CERT_MAX     1024 /* the front's certificate, DER */
#define PAD_RECORDS  8    /* a node's stream: its first records are padded ... */
#define PAD_MAX      255  /* ... by up to this many bytes each, as a dialer's are */

/* Epoll tags, as the TLS front's: bit 0 the target's fd, then slot, then generation. */
#define TAG_TARGET   1u
#define TAG_SLOTS    0x7ffu
#define TAG_LISTENER TAG_SLOTS
#define TAG_GEN      0x7ffffu

_Static_assert(REALITY_MAX_CONNS < TAG_SLOTS, "a slot fits its tag");

enum rc_state {
	RC_FREE,
	RC_HELLO,  /* the first record is coming; mirrored to the target as it comes */
	RC_SPLICE, /* byte for byte to the target and back */
	RC_AUTH,   /* sealed: answered in the shape of the target's answer */
	RC_YIP,    /* the handshake is done: a node's stream, a tls_conn (src/tlslink) */
};

struct rconn {
	uint32_t gen;
	uint8_t state;
	int fd, tfd;         /* the visitor's, the target's (-1: none) */
	bool t_up;           /* the target's connect completed */
	bool c_eof;          /* the visitor sent its FIN (spliced: passed on once in is empty) */
	bool t_eof;          /* the target's FIN */
	bool hs_done;        /* the TLS server's handshake completed */
	uint32_t c_ev, t_ev; /* what epoll watches now */
	uint8_t source[YIP_SOURCE_LEN];
	size_t source_len;
	uint64_t since;
	uint64_t node;
	union yip_sockaddr addr; /* a node's synthetic address, for the engine */
	union yip_sockaddr peer; /* the visitor's */
	/* in[0, in_len): the visitor's bytes; in[0, in_off) of them taken
	 * (by the target, or the TLS server); mirror: how far the target may
	 * have them while undecided (0 until the first record's end is known). */
	uint8_t *in, *out;
	size_t in_len, in_off, mirror;
	size_t out_len, out_off;
	struct auth *au;        /* RC_AUTH: the target's answer */
	struct tls_server *tls; /* RC_AUTH: the server, once the target's ServerHello is here */
	struct tls_conn *conn;  /* RC_YIP: the connection, which owns fd */
	struct wire_stream_rx *rx;
};

/* A sealed hello's keys, and the target's answer record by record: have
 * bytes of the record at the head of rec, skip bytes of a record body
 * still to drop. */
struct auth {
	struct reality_keys keys;
	size_t have, skip;
	bool sh_seen;
	bool finished;   /* the client's Finished is in */
	size_t mirrored; /* the target's encrypted records followed */
	uint64_t finished_at;
	uint8_t rec[BUF];
};

/* Records the target sends after a client's Finished (session tickets),
 * learned at start (learn_tickets), sent the same after a node's. */
#define TICKETS_MAX 4
#define PROBE_S     3   /* the start's own handshake with the target, at most */
#define TICKETS_MS  300 /* ... and how long its tickets are waited for */

struct rdv_reality {
	struct rdv_server *srv;
	uint16_t tickets[TICKETS_MAX];
	size_t n_tickets;
	size_t flight; /* encrypted records in the target's flight (0: unknown) */
	struct reality_server *seal;
	EVP_PKEY *key; /* the front's certificate key, one for the process */
	char name[256];
	int epfd, lfd;
	union yip_sockaddr target;
	uint64_t now;
	uint8_t io[BUF];
	uint8_t frame[WIRE_STREAM_HDR + WIRE_STREAM_MAX];
	struct yip_rdv_reality st;
	struct rconn conns[REALITY_MAX_CONNS];
};

static void rnd(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	randombytes_buf(out, n);
}

static uint32_t tag_of(const struct rconn *rc, unsigned slot, bool target)
{
	return (rc->gen & TAG_GEN) << 12 | slot << 1 | (target ? TAG_TARGET : 0);
}

static unsigned slot_of(const struct rdv_reality *r, const struct rconn *rc)
{
	return (unsigned)(rc - r->conns);
}

/* ---- the epoll set --------------------------------------------------------------- */

static uint32_t visitor_wanted(const struct rconn *rc)
{
	uint32_t ev = 0;

	if (rc->conn != NULL)
		return tls_conn_events(rc->conn);
	if (!rc->c_eof && rc->in_len < BUF)
		ev |= EPOLLIN;
	if (rc->out_off < rc->out_len)
		ev |= EPOLLOUT;
	return ev;
}

static uint32_t target_wanted(const struct rconn *rc)
{
	uint32_t ev = 0;
	/* Undecided, or sealed, the target gets the first record and no more. */
	size_t give = rc->state == RC_SPLICE ? rc->in_len : rc->tls == NULL ? rc->mirror : 0;

	if (!rc->t_up)
		return EPOLLOUT; /* the connect */
	if (rc->in_off < give)
		ev |= EPOLLOUT;
	/* Undecided, the target is read for its first word or its close;
	 * sealed, while the server's queue is empty (the visitor took it). */
	if (rc->state == RC_AUTH) {
		size_t queued = 0;

		if (rc->tls != NULL)
			(void)tls_server_out(rc->tls, &queued);
		if (!rc->t_eof && queued == 0)
			ev |= EPOLLIN;
	} else if (!rc->t_eof && rc->out_len < BUF) {
		ev |= EPOLLIN;
	}
	return ev;
}

static void watch_fd(struct rdv_reality *r, int fd, uint32_t tag, uint32_t *have, uint32_t want)
{
	struct epoll_event ev = {.events = want, .data.u32 = tag};

	if (*have == want)
		return;
	if (epoll_ctl(r->epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		*have = want;
}

static void watch(struct rdv_reality *r, struct rconn *rc)
{
	unsigned slot = slot_of(r, rc);

	if (rc->state == RC_FREE)
		return;
	watch_fd(r, rc->fd, tag_of(rc, slot, false), &rc->c_ev, visitor_wanted(rc));
	if (rc->tfd >= 0)
		watch_fd(r, rc->tfd, tag_of(rc, slot, true), &rc->t_ev, target_wanted(rc));
}

static int watch_add(struct rdv_reality *r, int fd, uint32_t tag, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u32 = tag};

	return epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- connections ------------------------------------------------------------------ */

static void outcome(struct rdv_reality *r, struct rconn *rc, unsigned o)
{
	r->st.outcome[o]++;
	if (rc->state == RC_HELLO)
		r->st.pending--;
}

/* Closes fd; with a reset (SO_LINGER 0) if rst. */
static void close_fd(struct rdv_reality *r, int fd, bool rst)
{
	if (rst) {
		struct linger l = {.l_onoff = 1, .l_linger = 0};

		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
}

static void target_close(struct rdv_reality *r, struct rconn *rc, bool rst)
{
	if (rc->tfd < 0)
		return;
	close_fd(r, rc->tfd, rst);
	rc->tfd = -1;
	rc->t_ev = 0;
}

/* Ends the connection; rst: the visitor gets a reset, as the target gave one. */
static void rc_free(struct rdv_reality *r, struct rconn *rc, bool rst)
{
	if (rc->state == RC_FREE)
		return;
	if (rc->state == RC_HELLO)
		outcome(r, rc, YIP_RDV_REALITY_EARLY);
	if (rc->state == RC_AUTH)
		r->st.tls_failed++;
	if (rc->node != 0)
		rdv_stream_gone(r->srv, &rc->addr, rc->node);
	target_close(r, rc, rst);
	if (rc->conn != NULL) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, rc->fd, NULL);
		tls_conn_free(rc->conn); /* its socket too */
	} else {
		close_fd(r, rc->fd, rst);
	}
	tls_server_free(rc->tls);
	free(rc->in);
	free(rc->out);
	if (rc->au != NULL)
		sodium_memzero(&rc->au->keys, sizeof(rc->au->keys));
	free(rc->au);
	free(rc->rx);
	{
		uint32_t gen = rc->gen + 1;

		memset(rc, 0, sizeof(*rc));
		rc->gen = gen;
		rc->fd = rc->tfd = -1;
	}
	r->st.open--;
}

/* ---- splicing ------------------------------------------------------------------------ */

/* Sends buf[*off, len) to fd as far as it takes it: false if the peer is gone (rst: by a reset). */
static bool send_some(int fd, const uint8_t *buf, size_t *off, size_t len, bool *rst,
                      uint64_t *count)
{
	while (*off < len) {
		ssize_t w = send(fd, buf + *off, len - *off, MSG_NOSIGNAL);

		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (w <= 0) {
			*rst = errno == ECONNRESET || errno == EPIPE;
			return false;
		}
		*off += (size_t)w;
		if (count != NULL)
			*count += (uint64_t)w;
	}
	return true;
}

/* Reads fd into buf[*len, cap): 1 read something, 0 nothing now, -1 EOF, -2 a reset or error. */
static int recv_some(int fd, uint8_t *buf, size_t *len, size_t cap)
{
	ssize_t n;

	if (*len >= cap)
		return 0;
	n = recv(fd, buf + *len, cap - *len, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -2;
	if (n == 0)
		return -1;
	*len += (size_t)n;
	return 1;
}

/* Moves what is left of buf[off, len) to its start. */
static void compact(uint8_t *buf, size_t *off, size_t *len)
{
	if (*off == 0)
		return;
	memmove(buf, buf + *off, *len - *off);
	*len -= *off;
	*off = 0;
}

/* Pumps both ways; frees the connection when both ways are done or either broke. */
static void splice_pump(struct rdv_reality *r, struct rconn *rc)
{
	bool rst = false;
	int got;

	for (int rounds = 0; rounds < 16; rounds++) {
		bool moved = false;

		/* visitor -> target */
		if (rc->t_up && rc->in_off < rc->in_len) {
			size_t before = rc->in_off;

			if (!send_some(rc->tfd, rc->in, &rc->in_off, rc->in_len, &rst,
			               &r->st.bytes_to_target))
				goto broken;
			moved |= rc->in_off != before;
		}
		if (rc->in_off == rc->in_len)
			rc->in_off = rc->in_len = 0;
		if (!rc->c_eof && rc->in_len < BUF) {
			got = recv_some(rc->fd, rc->in, &rc->in_len, BUF);
			if (got == -2) {
				rst = true;
				goto broken;
			}
			if (got == -1) {
				rc->c_eof = true;
				moved = true;
			}
			moved |= got == 1;
		}
		/* target -> visitor */
		if (rc->out_off < rc->out_len) {
			size_t before = rc->out_off;

			if (!send_some(rc->fd, rc->out, &rc->out_off, rc->out_len, &rst, NULL))
				goto broken;
			moved |= rc->out_off != before;
		}
		if (rc->out_off == rc->out_len)
			rc->out_off = rc->out_len = 0;
		if (rc->t_up && !rc->t_eof && rc->out_len < BUF) {
			size_t before = rc->out_len;

			got = recv_some(rc->tfd, rc->out, &rc->out_len, BUF);
			if (got == -2) {
				rst = true;
				goto broken;
			}
			if (got == -1) {
				rc->t_eof = true;
				moved = true;
			}
			r->st.bytes_from_target += rc->out_len - before;
			moved |= got == 1;
		}
		if (!moved)
			break;
	}
	/* A FIN is passed on once what came before it is out. */
	if (rc->c_eof && rc->in_off == rc->in_len && rc->t_up)
		shutdown(rc->tfd, SHUT_WR);
	if (rc->t_eof && rc->out_off == rc->out_len)
		shutdown(rc->fd, SHUT_WR);
	if (rc->c_eof && rc->t_eof && rc->in_off == rc->in_len && rc->out_off == rc->out_len) {
		rc_free(r, rc, false);
		return;
	}
	watch(r, rc);
	return;
broken:
	rc_free(r, rc, rst);
}

/* Not a node: from now on the target's, the bytes read so far first. */
static void to_splice(struct rdv_reality *r, struct rconn *rc, unsigned why)
{
	outcome(r, rc, why);
	r->st.spliced++;
	rc->state = RC_SPLICE;
	splice_pump(r, rc);
}

/* ---- a node's stream ------------------------------------------------------------------ */

/* What the TLS server queued (its flight, an alert, a close) into out. */
static bool tls_drain(struct rconn *rc)
{
	size_t n;
	const uint8_t *p = tls_server_out(rc->tls, &n);

	if (n == 0)
		return true;
	compact(rc->out, &rc->out_off, &rc->out_len);
	if (n > BUF - rc->out_len)
		n = BUF - rc->out_len;
	memcpy(rc->out + rc->out_len, p, n);
	rc->out_len += n;
	tls_server_out_done(rc->tls, n);
	(void)tls_server_out(rc->tls, &n);
	return n == 0;
}

static bool flush_visitor(struct rdv_reality *r, struct rconn *rc)
{
	bool rst = false;

	(void)r;
	if (rc->tls != NULL)
		(void)tls_drain(rc);
	if (!send_some(rc->fd, rc->out, &rc->out_off, rc->out_len, &rst, NULL))
		return false;
	if (rc->out_off == rc->out_len)
		rc->out_off = rc->out_len = 0;
	return true;
}

struct feed {
	struct rdv_reality *r;
	struct rconn *rc;
};

static void on_frame(void *arg, const uint8_t *d, size_t len)
{
	struct feed *e = arg;
	uint64_t h;

	e->r->st.frames_in++;
	h = rdv_rx(e->r->srv, e->r->now, RDV_SOCK_STREAM, &e->rc->addr, d, len);
	if (h != 0)
		e->rc->node = h;
}

/*
 * The handshake done: the connection becomes a tls_conn (src/tlslink), as
 * the TLS front's are, with what the visitor sent past its Finished and
 * what waits to go to it. False if it could not be (the connection is
 * then over).
 */
static bool to_stream(struct rdv_reality *r, struct rconn *rc)
{
	struct tls_adopt_config ac = {.raw = rc->in + rc->in_off,
	                              .raw_len = rc->in_len - rc->in_off,
	                              .out = rc->out + rc->out_off,
	                              .out_len = rc->out_len - rc->out_off,
	                              .pad_records = PAD_RECORDS,
	                              .pad_max = PAD_MAX,
	                              .sni = r->name};

	target_close(r, rc, false); /* its part is played */
	rc->rx = malloc(sizeof(*rc->rx));
	if (rc->rx == NULL)
		return false;
	wire_stream_rx_init(rc->rx);
	rc->conn = tls_conn_adopt(rc->fd, &rc->peer, rc->tls, &ac);
	rc->tls = NULL; /* the connection's, or freed */
	if (rc->conn == NULL) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, rc->fd, NULL);
		rc->fd = -1; /* closed by tls_conn_adopt */
		return false;
	}
	free(rc->in);
	free(rc->out);
	free(rc->au);
	rc->in = rc->out = NULL;
	rc->au = NULL;
	rc->in_len = rc->in_off = rc->out_len = rc->out_off = 0;
	rc->state = RC_YIP;
	r->st.yip_streams++;
	return true;
}

/* The visitor's bytes into the TLS server: false if the connection is over. */
static bool tls_in(struct rdv_reality *r, struct rconn *rc)
{
	tls_server_ccs_window(rc->tls); /* each call takes what one read brought */
	while (rc->in_off < rc->in_len) {
		struct tls_event ev;
		size_t n =
		    tls_server_recv(rc->tls, rc->in + rc->in_off, rc->in_len - rc->in_off, &ev);

		rc->in_off += n;
		if (ev.kind == TLS_EV_CONNECTED) {
			/* The node's stream begins once the target's flight is all
			 * followed (auth_settle): what follows its Finished waits. */
			rc->au->finished = true;
			rc->au->finished_at = r->now;
			return true;
		}
		if (ev.kind == TLS_EV_FAILED || ev.kind == TLS_EV_CLOSED) {
			(void)flush_visitor(r, rc); /* the alert */
			return false;
		}
		if (n == 0)
			break;
	}
	compact(rc->in, &rc->in_off, &rc->in_len);
	return true;
}

/* A node's stream: its frames to the engine. */
static void stream_in(struct rdv_reality *r, struct rconn *rc, uint32_t events)
{
	struct feed e = {r, rc};
	size_t n;

	(void)tls_conn_handle(rc->conn, events);
	while (rc->state == RC_YIP && (n = tls_conn_read(rc->conn, r->io, sizeof(r->io))) > 0)
		if (wire_stream_feed(rc->rx, r->io, n, on_frame, &e) != 0) {
			r->st.stream_broken++;
			tls_conn_close(rc->conn);
			break;
		}
	if (rc->state == RC_YIP && tls_conn_state(rc->conn) == TLS_CONN_DONE) {
		rc_free(r, rc, false);
		return;
	}
	watch(r, rc);
}

/* ---- the authenticated handshake -------------------------------------------------- */

/* The answer to a sealed hello cannot follow the target's: spliced after all. */
static void fallback(struct rdv_reality *r, struct rconn *rc)
{
	tls_server_free(rc->tls);
	rc->tls = NULL;
	r->st.outcome[REALITY_AUTHENTICATED]--;
	r->st.outcome[YIP_RDV_REALITY_FALLBACK]++;
	r->st.spliced++;
	/* The target's bytes read so far go to the visitor: the splice starts from them. */
	compact(rc->out, &rc->out_off, &rc->out_len);
	memcpy(rc->out + rc->out_len, rc->au->rec, rc->au->have);
	rc->out_len += rc->au->have;
	sodium_memzero(&rc->au->keys, sizeof(rc->au->keys));
	free(rc->au);
	rc->au = NULL;
	rc->state = RC_SPLICE;
	splice_pump(r, rc);
}

/* The TLS server for a sealed hello, once the target's ServerHello (sh, n bytes) is here. */
static bool auth_start(struct rdv_reality *r, struct rconn *rc, const uint8_t *sh, size_t n)
{
	uint8_t cert[CERT_MAX];
	const uint8_t *chain[1] = {cert};
	size_t cert_len, chain_len[1];
	struct reality_keys *keys = &rc->au->keys;
	const uint8_t *hello = rc->in + TLS_REC_HDR;
	size_t hello_len = rc->mirror - TLS_REC_HDR;
	struct tls_server_config cfg = {.rand = rnd,
	                                .client_hello = hello,
	                                .client_hello_len = hello_len,
	                                .template_sh = sh,
	                                .template_sh_len = n,
	                                .chain = chain,
	                                .chain_lens = chain_len,
	                                .chain_n = 1,
	                                .key = r->key};
	enum tls_err err = TLS_ERR_NONE;

	cert_len = reality_cert_make(cert, sizeof(cert), keys, r->key, r->name,
	                             (uint32_t)(yip_now_wall() / YIP_NS_PER_S));
	sodium_memzero(keys, sizeof(*keys));
	if (cert_len == 0)
		return false;
	chain_len[0] = cert_len;
	rc->tls = tls_server_new(&cfg, &err);
	if (rc->tls == NULL) {
		log_limited(YIP_LOG_DEBUG, 0,
		            "reality: the target's ServerHello cannot be followed: %s",
		            tls_err_name(err));
		return false;
	}
	/* The hello is the server's now; what the visitor sent after it is next. */
	rc->in_off = rc->mirror;
	return true;
}

/*
 * The target's answer to a sealed hello, record by record: its
 * ServerHello starts the front's own, a ChangeCipherSpec is answered with
 * one, each encrypted record with one of the same length. False if it
 * cannot be followed (no ServerHello the server can take comes first).
 */
static bool auth_target(struct rdv_reality *r, struct rconn *rc)
{
	struct auth *au = rc->au;

	for (;;) {
		struct tls_rec rec;
		int got;

		/* The server's queue into the visitor's buffer; while the visitor
		 * has not taken it, the target is not read further. */
		if (rc->tls != NULL && !tls_drain(rc))
			return true;
		if (au->skip > 0) {
			/* An encrypted record's body: only its length mattered. */
			size_t have = 0;

			got = recv_some(rc->tfd, r->io, &have, au->skip < BUF ? au->skip : BUF);
			if (got < 0)
				break;
			if (got == 0)
				return true;
			au->skip -= have;
			continue;
		}
		got = recv_some(rc->tfd, au->rec, &au->have, TLS_REC_HDR);
		if (got < 0)
			break;
		if (au->have < TLS_REC_HDR)
			return true;
		if (tls_rec_get(&rec, au->rec, au->have, TLS_REC_CIPHER) != 1)
			break;
		if (!au->sh_seen) {
			const uint8_t *body;
			size_t blen;
			uint8_t type;

			if (rec.type != TLS_CT_HANDSHAKE || rec.len > TLS_REC_PLAIN)
				return false;
			got = recv_some(rc->tfd, au->rec, &au->have, TLS_REC_HDR + rec.len);
			if (got < 0)
				return false;
			if (au->have < (size_t)TLS_REC_HDR + rec.len)
				return true;
			/* The ServerHello alone in its record, as TLS 1.3 servers send it. */
			if (tls_hs_get(au->rec + TLS_REC_HDR, rec.len, &type, &body, &blen) !=
			        rec.len ||
			    type != TLS_HS_SERVER_HELLO ||
			    !auth_start(r, rc, au->rec + TLS_REC_HDR, rec.len))
				return false;
			au->sh_seen = true;
		} else if (rec.type == TLS_CT_CCS) {
			(void)tls_server_ccs(
			    rc->tls); /* not after the flight began: not mimicked */
			au->skip = rec.len;
		} else if (rec.type == TLS_CT_APP) {
			/* False only for a record no TLS 1.3 server sends here (a
			 * handshake record of no byte): not mimicked. */
			(void)tls_server_flight(rc->tls, rec.len);
			au->mirrored++;
			au->skip = rec.len;
		} else {
			break; /* an alert, or more plaintext handshake: nothing to mimic */
		}
		au->have = 0;
	}
	if (!au->sh_seen)
		return false;
	/* The target is done (or broke): the front's flight, if not out, as it is. */
	(void)tls_drain(rc);
	(void)tls_server_flight_rest(rc->tls);
	rc->t_eof = true;
	return true;
}

/*
 * After anything on a sealed connection: the server takes what the
 * visitor sent (before the target's ServerHello there is no server yet),
 * its queue goes out; a finished handshake becomes the node's stream.
 */
static void auth_settle(struct rdv_reality *r, struct rconn *rc)
{
	struct auth *au = rc->au;

	if (!au->finished && rc->tls != NULL && rc->in_off < rc->in_len && !tls_in(r, rc)) {
		/* Closed with bytes it did not read: a reset, as the kernel sends
		 * for a server that closes on unread data. */
		rc_free(r, rc, rc->in_off < rc->in_len);
		return;
	}
	/*
	 * The client has finished: once the target's flight is followed to its
	 * last record (as many as it sent the front's own handshake at start;
	 * or the target is done, or a second passed), what the target sends a
	 * client that has finished (its tickets: here records of their sizes
	 * with nothing in them), then the node's stream.
	 */
	if (au->finished && (au->mirrored >= r->flight || rc->tfd < 0 || rc->t_eof ||
	                     r->now - au->finished_at >= YIP_NS_PER_S)) {
		(void)tls_server_flight_rest(rc->tls);
		for (size_t i = 0; i < r->n_tickets; i++) {
			(void)tls_drain(rc);
			(void)tls_server_flight(rc->tls, r->tickets[i]);
		}
		(void)tls_drain(rc);
		if (!to_stream(r, rc)) {
			rc_free(r, rc, false);
			return;
		}
		stream_in(r, rc, 0);
		return;
	}
	if (!flush_visitor(r, rc)) {
		rc_free(r, rc, true);
		return;
	}
	watch(r, rc);
}

/* ---- the decision ----------------------------------------------------------------------- */

/* The first record is whole in in[0, mirror): the seal's verdict on it. */
static void decide(struct rdv_reality *r, struct rconn *rc, size_t rec_len)
{
	const uint8_t *msg = rc->in + TLS_REC_HDR;
	struct reality_keys keys;
	enum reality_verdict v;
	const uint8_t *body;
	size_t blen;
	uint8_t type;

	if (tls_hs_get(msg, rec_len, &type, &body, &blen) != rec_len) {
		/* Not one whole message: a hello split over records, or more than one. */
		to_splice(r, rc, YIP_RDV_REALITY_SPLIT);
		return;
	}
	v = reality_check(r->seal, r->now, (uint32_t)(yip_now_wall() / YIP_NS_PER_S), msg, rec_len,
	                  &keys);
	if (v != REALITY_AUTHENTICATED) {
		to_splice(r, rc, v);
		return;
	}
	/* The keys wait with the target's answer until its ServerHello. */
	rc->au = calloc(1, sizeof(*rc->au));
	if (rc->au == NULL) {
		sodium_memzero(&keys, sizeof(keys));
		to_splice(r, rc, YIP_RDV_REALITY_FALLBACK);
		return;
	}
	rc->au->keys = keys;
	sodium_memzero(&keys, sizeof(keys));
	outcome(r, rc, REALITY_AUTHENTICATED);
	rc->state = RC_AUTH;
	rdv_stream_addr(&rc->addr, (uint64_t)(rc->gen & 0x7fffffffu) << 32 | (slot_of(r, rc) + 1));
}

/*
 * Undecided: the visitor's bytes so far (in[0, in_len)). Garbage and
 * records no hello fits are spliced at once; a first record whole is
 * decided; else more is awaited, the target getting what came.
 */
static void hello_progress(struct rdv_reality *r, struct rconn *rc)
{
	struct tls_rec rec;
	int h = tls_rec_get(&rec, rc->in, rc->in_len, TLS_REC_PLAIN);

	if (rc->in_len >= 1 && rc->in[0] != TLS_CT_HANDSHAKE) {
		to_splice(r, rc, YIP_RDV_REALITY_NOT_TLS);
		return;
	}
	if (h < 0) {
		/* A record header no hello has: past 16 KiB, or no TLS at all. */
		struct tls_rec big;

		to_splice(r, rc,
		          tls_rec_get(&big, rc->in, rc->in_len, 0xffff) == 1
		              ? YIP_RDV_REALITY_TOO_BIG
		              : YIP_RDV_REALITY_NOT_TLS);
		return;
	}
	if (h == 0) {
		rc->mirror = rc->in_len;
		return;
	}
	/* The target may have the whole record, no more, until the decision. */
	rc->mirror = (size_t)TLS_REC_HDR + rec.len;
	if (rc->in_len >= rc->mirror)
		decide(r, rc, rec.len);
	else
		rc->mirror = rc->in_len;
}

/* ---- events ---------------------------------------------------------------------------- */

/* Undecided: the mirror to the target. False if the connection went. */
static bool mirror_out(struct rdv_reality *r, struct rconn *rc)
{
	bool rst = false;

	if (!rc->t_up || rc->in_off >= rc->mirror)
		return true;
	if (!send_some(rc->tfd, rc->in, &rc->in_off, rc->mirror, &rst, &r->st.bytes_to_target)) {
		rc_free(r, rc, rst);
		return false;
	}
	return true;
}

static void on_visitor(struct rdv_reality *r, struct rconn *rc, uint32_t events)
{
	int got;

	(void)events;
	switch (rc->state) {
	case RC_HELLO:
		got = recv_some(rc->fd, rc->in, &rc->in_len, BUF);
		if (got < 0) {
			rc_free(r, rc, got == -2); /* left before a whole first record */
			return;
		}
		if (got > 0)
			hello_progress(r, rc);
		if (rc->state == RC_HELLO && mirror_out(r, rc))
			watch(r, rc);
		else if (rc->state == RC_AUTH && mirror_out(r, rc))
			watch(r, rc);
		return;
	case RC_SPLICE:
		splice_pump(r, rc);
		return;
	case RC_YIP:
		stream_in(r, rc, events);
		return;
	case RC_AUTH:
		if ((events & EPOLLOUT) && !flush_visitor(r, rc)) {
			rc_free(r, rc, true);
			return;
		}
		got = recv_some(rc->fd, rc->in, &rc->in_len, BUF);
		if (got < 0) {
			rc_free(r, rc, got == -2);
			return;
		}
		auth_settle(r, rc);
		return;
	default:
		return;
	}
}

static void on_target(struct rdv_reality *r, struct rconn *rc, uint32_t events)
{
	if (!rc->t_up) {
		int e = 0;
		socklen_t elen = sizeof(e);

		if (getsockopt(rc->tfd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0 || e != 0) {
			if (e == EINPROGRESS)
				return;
			log_limited(YIP_LOG_DEBUG, 0, "reality: the target is unreachable: %s",
			            strerror(e ? e : errno));
			if (rc->state == RC_HELLO)
				outcome(r, rc, YIP_RDV_REALITY_TARGET_DOWN);
			rc->state = rc->state == RC_HELLO ? RC_SPLICE : rc->state;
			rc_free(r, rc, true);
			return;
		}
		rc->t_up = true;
	}
	switch (rc->state) {
	case RC_HELLO:
		if (!mirror_out(r, rc))
			return;
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
			/* The target spoke, or closed, before the visitor's first record
			 * was whole: what it does next is the visitor's business. */
			to_splice(r, rc, YIP_RDV_REALITY_EARLY);
			return;
		}
		watch(r, rc);
		return;
	case RC_SPLICE:
		splice_pump(r, rc);
		return;
	case RC_AUTH:
		if (events & EPOLLOUT)
			(void)mirror_out(r, rc);
		if (rc->state == RC_FREE)
			return;
		if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !auth_target(r, rc)) {
			fallback(r, rc);
			return;
		}
		if (rc->t_eof)
			target_close(r, rc, false);
		auth_settle(r, rc);
		return;
	default:
		return;
	}
}

static bool source_full(const struct rdv_reality *r, const uint8_t *src, size_t len)
{
	unsigned n = 0;

	for (unsigned i = 0; i < REALITY_MAX_CONNS; i++) {
		const struct rconn *c = &r->conns[i];

		if (c->state != RC_FREE && c->source_len == len &&
		    memcmp(c->source, src, len) == 0 && ++n >= REALITY_PER_SOURCE)
			return true;
	}
	return false;
}

/* The target's connection for a new visitor; false if none could be had. */
static bool target_open(struct rdv_reality *r, struct rconn *rc)
{
	int one = 1;
	socklen_t alen = r->target.sa.sa_family == AF_INET ? sizeof(struct sockaddr_in)
	                                                   : sizeof(struct sockaddr_in6);
	int fd = socket(r->target.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return false;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((connect(fd, &r->target.sa, alen) != 0 && errno != EINPROGRESS) ||
	    watch_add(r, fd, tag_of(rc, slot_of(r, rc), true), EPOLLOUT) != 0) {
		close(fd);
		return false;
	}
	rc->tfd = fd;
	rc->t_ev = EPOLLOUT;
	return true;
}

static void on_accept(struct rdv_reality *r)
{
	for (int k = 0; k < ACCEPT_BURST; k++) {
		union yip_sockaddr from;
		socklen_t alen = sizeof(from);
		uint8_t src[YIP_SOURCE_LEN];
		struct rconn *rc = NULL;
		size_t slen;
		int fd, one = 1;

		memset(&from, 0, sizeof(from));
		fd = accept4(r->lfd, &from.sa, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		r->st.accepted++;
		slen = yip_sockaddr_source(&from, src);
		for (unsigned i = 0; i < REALITY_MAX_CONNS && rc == NULL; i++)
			if (r->conns[i].state == RC_FREE)
				rc = &r->conns[i];
		if (rc == NULL || r->st.pending >= REALITY_MAX_PENDING ||
		    source_full(r, src, slen)) {
			r->st.refused++;
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		rc->fd = fd;
		rc->tfd = -1;
		rc->peer = from;
		rc->state = RC_HELLO;
		rc->since = r->now;
		memcpy(rc->source, src, slen);
		rc->source_len = slen;
		rc->in = malloc(BUF);
		rc->out = malloc(BUF);
		r->st.open++;
		r->st.pending++;
		if (rc->in == NULL || rc->out == NULL ||
		    watch_add(r, fd, tag_of(rc, slot_of(r, rc), false), EPOLLIN) != 0) {
			r->st.refused++;
			rc_free(r, rc, false);
			r->st.outcome[YIP_RDV_REALITY_EARLY]--;
			continue;
		}
		rc->c_ev = EPOLLIN;
		if (!target_open(r, rc)) {
			outcome(r, rc, YIP_RDV_REALITY_TARGET_DOWN);
			rc->state = RC_SPLICE;
			rc_free(r, rc, true);
		}
	}
}

void rdv_reality_event(struct rdv_reality *r, uint64_t now, const struct epoll_event *ev)
{
	uint32_t tag = ev->data.u32, slot = tag >> 1 & TAG_SLOTS;
	struct rconn *rc;

	r->now = now;
	if (slot == TAG_LISTENER) {
		on_accept(r);
		return;
	}
	if (slot >= REALITY_MAX_CONNS)
		return;
	rc = &r->conns[slot];
	if (rc->state == RC_FREE || (rc->gen & TAG_GEN) != (tag >> 12 & TAG_GEN))
		return;
	if (tag & TAG_TARGET) {
		if (rc->tfd >= 0)
			on_target(r, rc, ev->events);
	} else {
		on_visitor(r, rc, ev->events);
	}
}

void rdv_reality_send(struct rdv_reality *r, const union yip_sockaddr *to, const uint8_t *d,
                      size_t len)
{
	uint64_t id = rdv_stream_id(to);
	uint64_t slot = (id & UINT32_MAX) - 1;
	struct rconn *rc = slot < REALITY_MAX_CONNS ? &r->conns[slot] : NULL;

	if (rc == NULL || rc->gen != id >> 32 || rc->state != RC_YIP) {
		r->st.stream_stale++;
		return;
	}
	if (len == 0 || len > WIRE_STREAM_MAX) {
		r->st.stream_too_big++;
		return;
	}
	wire_stream_put(r->frame, len);
	memcpy(r->frame + WIRE_STREAM_HDR, d, len);
	if (!tls_conn_write(rc->conn, r->frame, WIRE_STREAM_HDR + len)) {
		r->st.stream_full++;
		return;
	}
	r->st.frames_out++;
	/* Not freed here even if it ended: the engine may be in the middle of
	 * this connection's frames. Its next event, or the timers, do that. */
	watch(r, rc);
}

void rdv_reality_timers(struct rdv_reality *r, uint64_t now)
{
	r->now = now;
	for (unsigned i = 0; i < REALITY_MAX_CONNS; i++) {
		struct rconn *rc = &r->conns[i];

		if (rc->state == RC_YIP && tls_conn_state(rc->conn) == TLS_CONN_DONE)
			rc_free(r, rc, false);
		else if (rc->state == RC_AUTH && rc->au != NULL && rc->au->finished)
			auth_settle(r, rc); /* the target stalled past its flight's end */
		else if ((rc->state == RC_HELLO &&
		          now - rc->since >= REALITY_UNDECIDED_S * YIP_NS_PER_S) ||
		         (rc->state == RC_AUTH &&
		          now - rc->since >= REALITY_FLIGHT_S * YIP_NS_PER_S))
			rc_free(r, rc, false);
	}
}

/* ---- setting up -------------------------------------------------------------------------- */

/* Sends all of p, blocking; false if the socket broke. */
static bool probe_send(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static bool probe_flush(int fd, struct tls_client *c)
{
	size_t n;
	const uint8_t *p = tls_client_out(c, &n);

	if (n > 0 && !probe_send(fd, p, n))
		return false;
	tls_client_out_done(c, n);
	return true;
}

/*
 * A handshake of the front's own with the target (a blocking socket, at
 * start, before the loop): the lengths of the records it sends once the
 * client's Finished is in, its session tickets (OpenSSL sends two),
 * which a node's handshake is then followed by. None if the target does
 * not answer in time.
 */
static void learn_tickets(struct rdv_reality *r)
{
	struct tls_client_config cc = {.sni = r->name, .rand = rnd, .verify = tls_verify_any};
	struct timeval tv = {.tv_sec = PROBE_S};
	socklen_t alen = r->target.sa.sa_family == AF_INET ? sizeof(struct sockaddr_in)
	                                                   : sizeof(struct sockaddr_in6);
	struct tls_client *c = tls_client_new(&cc);
	int fd = socket(r->target.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t have = 0, off = 0, flight = 0;
	bool done = false;

	if (c == NULL || fd < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, &r->target.sa, alen) != 0 || !probe_flush(fd, c))
		goto out;
	while (r->n_tickets < TICKETS_MAX) {
		ssize_t k;

		if (off < have) {
			struct tls_rec rec;
			struct tls_event ev;
			size_t n;
			int got;

			/* Past the handshake: only the records' lengths matter. */
			if (done) {
				if (tls_rec_get(&rec, r->io + off, have - off, TLS_REC_CIPHER) !=
				        1 ||
				    have - off < (size_t)TLS_REC_HDR + rec.len)
					goto more;
				if (rec.type == TLS_CT_APP && rec.len >= 1 + 16)
					r->tickets[r->n_tickets++] = rec.len;
				off += (size_t)TLS_REC_HDR + rec.len;
				continue;
			}
			/* The handshake: a whole record at a time, the encrypted ones counted. */
			got = tls_rec_get(&rec, r->io + off, have - off, TLS_REC_CIPHER);
			if (got < 0)
				goto out;
			if (got == 0 || have - off < (size_t)TLS_REC_HDR + rec.len)
				goto more;
			flight += rec.type == TLS_CT_APP;
			n = tls_client_recv(c, r->io + off, (size_t)TLS_REC_HDR + rec.len, &ev);
			off += n;
			if (ev.kind == TLS_EV_FAILED || !probe_flush(fd, c))
				goto out;
			if (ev.kind == TLS_EV_CONNECTED) {
				done = true;
				r->flight = flight;
				tv = (struct timeval){.tv_usec = TICKETS_MS * 1000};
				setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			}
			if (n > 0)
				continue;
		}
	more:
		memmove(r->io, r->io + off, have - off);
		have -= off;
		off = 0;
		if (have == sizeof(r->io))
			break;
		k = recv(fd, r->io + have, sizeof(r->io) - have, 0);
		if (k <= 0)
			break;
		have += (size_t)k;
	}
out:
	if (!done)
		log_warn("reality: no handshake of its own with the target %s: nodes' handshakes "
		         "are followed by no ticket-sized records",
		         r->name);
	else
		log_info("reality: the target's flight is %zu encrypted records, and it sends %zu "
		         "after a client's Finished (%u, %u bytes ...): nodes' handshakes are "
		         "followed by as many",
		         r->flight, r->n_tickets, r->n_tickets > 0 ? r->tickets[0] : 0,
		         r->n_tickets > 1 ? r->tickets[1] : 0);
	if (fd >= 0)
		close(fd);
	tls_client_free(c);
}

struct rdv_reality *rdv_reality_new(const struct rdv_reality_config *c, struct rdv_server *srv,
                                    int epfd, char *err, size_t errlen)
{
	struct rdv_reality *r = calloc(1, sizeof(*r));
	socklen_t alen = sizeof(r->st.listen);

	if (r == NULL) {
		snprintf(err, errlen, "out of memory");
		close(c->fd);
		return NULL;
	}
	r->srv = srv;
	r->epfd = epfd;
	r->lfd = c->fd;
	r->target = c->target;
	r->st.target = c->target;
	snprintf(r->name, sizeof(r->name), "%s", c->seal.names[0]);
	getsockname(c->fd, &r->st.listen.sa, &alen);
	for (unsigned i = 0; i < REALITY_MAX_CONNS; i++) {
		r->conns[i].gen = 1;
		r->conns[i].fd = r->conns[i].tfd = -1;
	}
	r->seal = reality_server_new(&c->seal);
	r->key = EVP_EC_gen("P-256");
	if (r->seal == NULL || r->key == NULL) {
		snprintf(err, errlen, "%s", r->seal == NULL ? "bad REALITY settings" : "libcrypto");
		rdv_reality_free(r);
		return NULL;
	}
	learn_tickets(r);
	if (watch_add(r, c->fd, TAG_LISTENER << 1, EPOLLIN) != 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		rdv_reality_free(r);
		return NULL;
	}
	return r;
}

void rdv_reality_free(struct rdv_reality *r)
{
	if (r == NULL)
		return;
	for (unsigned i = 0; i < REALITY_MAX_CONNS; i++)
		rc_free(r, &r->conns[i], false);
	if (r->lfd >= 0) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->lfd, NULL);
		close(r->lfd);
	}
	reality_server_free(r->seal);
	EVP_PKEY_free(r->key);
	free(r);
}

const struct yip_rdv_reality *rdv_reality_status(const struct rdv_reality *r)
{
	return &r->st;
}
