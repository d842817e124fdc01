/*
 * yip-rendezvous's QUIC listener (quic.h). A table of RDV_QUIC_CONNS
 * slots names the connections: a slot's index and generation make the
 * low bits of its synthetic address, so the engine's send finds the
 * connection without a search, and a send to a connection that is gone
 * finds the generation changed and is dropped (counted).
 */
#include "rdvloop/quic.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "quic/conn.h"
#include "quic/decoy.h"
#include "udp/udp.h"
#include "util/clock.h"
#include "util/log.h"

#define RX_BURST 64   /* packets read per wakeup */
#define RX_BUF   2048 /* longer than any QUIC packet we take: the longer are truncated */

struct rdv_quic;

struct slot {
	struct rdv_quic *q;
	struct quic_conn *c; /* NULL: free */
	uint32_t gen;
	uint64_t node; /* what rdv_rx last returned for it, 0: no node yet */
	union yip_sockaddr addr;
};

struct rdv_quic {
	int fd;
	union yip_sockaddr listen;
	struct rdv_server *srv;
	struct quic_server *qs;
	uint64_t now;
	struct slot slots[RDV_QUIC_CONNS];
	uint8_t rx[RX_BUF];
	uint8_t pkt[QUIC_PKT_MAX];
	struct yip_rdv_quic st;
	/* The HTTP/3 decoy on every connection (docs/transports.md). */
	struct quic_decoy decoy;
	uint64_t truncated; /* datagrams longer than RX_BUF */
};

int rdv_quic_listen(const union yip_sockaddr *a, char *err, size_t errlen)
{
	int fd = socket(a->sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int off = 0;

	if (fd < 0) {
		snprintf(err, errlen, "quic: socket: %s", strerror(errno));
		return -1;
	}
	udp_set_buffers(fd);
	/* [::] takes IPv4 too, as the main socket does. */
	if (a->sa.sa_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, &a->sa, yip_sockaddr_len(a)) != 0) {
		char s[YIP_ADDRSTRLEN];

		yip_sockaddr_format(a, s, sizeof(s));
		snprintf(err, errlen, "quic: cannot bind UDP %s: %s", s, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static struct slot *slot_of_addr(struct rdv_quic *q, const union yip_sockaddr *a)
{
	uint64_t id = rdv_stream_id(a);
	uint64_t i = (id & 0xffffffffu) - 1;

	if ((id & RDV_QUIC_ID_BIT) == 0 || i >= RDV_QUIC_CONNS)
		return NULL;
	if (q->slots[i].c == NULL || (uint32_t)(id >> 32 & 0x7fffffffu) != q->slots[i].gen)
		return NULL;
	return &q->slots[i];
}

static struct slot *slot_of_conn(struct rdv_quic *q, struct quic_conn *c)
{
	void *u = quic_conn_user(c);

	if (u != NULL && u != q)
		return u;
	for (size_t i = 0; i < RDV_QUIC_CONNS; i++)
		if (q->slots[i].c == c)
			return &q->slots[i];
	return NULL;
}

static void on_dgram(void *user, struct quic_conn *c, const uint8_t *d, size_t len);

/* A new connection gets a free slot (the server holds no more than there are). */
static struct slot *slot_new(struct rdv_quic *q, struct quic_conn *c)
{
	for (size_t i = 0; i < RDV_QUIC_CONNS; i++) {
		struct slot *sl = &q->slots[i];

		if (sl->c != NULL)
			continue;
		sl->c = c;
		sl->gen = (sl->gen + 1) & 0x7fffffffu;
		sl->node = 0;
		rdv_stream_addr(&sl->addr, RDV_QUIC_ID_BIT | (uint64_t)sl->gen << 32 | (i + 1));
		quic_conn_set_recv(c, on_dgram, sl);
		return sl;
	}
	return NULL;
}

/* Everything the connection has to send, to its peer. */
static void flush_conn(struct rdv_quic *q, struct quic_conn *c)
{
	const union yip_sockaddr *to = quic_conn_peer(c);
	size_t n;

	while ((n = quic_conn_write(c, q->pkt, sizeof(q->pkt), yip_now_mono())) > 0)
		if (sendto(q->fd, q->pkt, n, 0, &to->sa, yip_sockaddr_len(to)) < 0)
			break; /* the socket's buffer is full: QUIC's loss recovery sends again */
}

/*
 * A DATAGRAM frame: to the engine, from the connection's synthetic
 * address. What rdv_rx returns (the node it authenticated, 0: none) is
 * what the connection is from now on; a connection none of whose
 * datagrams authenticates stays a stranger's (the decoy's, or idle until
 * the QUIC idle timeout closes it).
 */
static void on_dgram(void *user, struct quic_conn *c, const uint8_t *d, size_t len)
{
	struct slot *sl = user;
	struct rdv_quic *q;
	uint64_t h;

	(void)c;
	q = sl->q;
	q->st.dgrams_in++;
	h = rdv_rx(q->srv, q->now, RDV_SOCK_STREAM, &sl->addr, d, len);
	if (h != 0 && sl->node == 0)
		q->st.yip_conns++;
	if (h != 0 && h != sl->node && sl->node != 0)
		rdv_stream_gone(q->srv, &sl->addr, sl->node); /* another node on it now */
	if (h != 0)
		sl->node = h;
}

/* The server's own recv, for a connection without its slot yet: user is q. */
static void on_first_dgram(void *user, struct quic_conn *c, const uint8_t *d, size_t len)
{
	struct rdv_quic *q = user;
	struct slot *sl = slot_of_conn(q, c);

	if (sl == NULL && (sl = slot_new(q, c)) == NULL)
		return;
	on_dgram(sl, c, d, len);
}

/* The server frees one of its connections: the engine forgets the address. */
static void on_gone(void *arg, struct quic_conn *c)
{
	struct rdv_quic *q = arg;
	struct slot *sl = slot_of_conn(q, c);

	if (sl == NULL)
		return;
	if (sl->node != 0)
		rdv_stream_gone(q->srv, &sl->addr, sl->node);
	if (quic_conn_why(c) != NULL && strcmp(quic_conn_why(c), "idle timeout") == 0)
		q->st.idle++;
	sl->c = NULL;
	sl->node = 0;
}

struct rdv_quic *rdv_quic_new(const struct rdv_quic_config *c, struct rdv_server *srv, char *err,
                              size_t errlen)
{
	struct rdv_quic *q = calloc(1, sizeof(*q));
	struct quic_server_config sc = {
	    .cert_pem = c->cert_pem,
	    .key_pem = c->key_pem,
	    .cert_len = c->cert_len,
	    .key_len = c->key_len,
	    .cc = QUIC_CC_BBR2, /* as yipd's links: docs/transports.md */
	    .max_conns = RDV_QUIC_CONNS,
	    .gone = on_gone,
	    .recv = on_first_dgram,
	    /* Whoever connects meets an HTTP/3 server on the streams. */
	    .streams = &quic_decoy_handler,
	};

	if (q == NULL) {
		snprintf(err, errlen, "quic: out of memory");
		close(c->fd);
		return NULL;
	}
	q->fd = c->fd;
	q->listen = c->listen;
	q->srv = srv;
	q->st.listen = c->listen;
	for (size_t i = 0; i < RDV_QUIC_CONNS; i++)
		q->slots[i].q = q;
	sc.gone_arg = q;
	sc.recv_user = q;
	sc.streams_arg = &q->decoy;
	if ((q->qs = quic_server_new(&sc, err, errlen)) == NULL) {
		close(q->fd);
		free(q);
		return NULL;
	}
	return q;
}

void rdv_quic_free(struct rdv_quic *q)
{
	if (q == NULL)
		return;
	quic_server_free(q->qs); /* on_gone for each: the engine forgets them */
	close(q->fd);
	free(q);
}

int rdv_quic_fd(const struct rdv_quic *q)
{
	return q->fd;
}

void rdv_quic_readable(struct rdv_quic *q, uint64_t now)
{
	q->now = now;
	q->decoy.wall_s = yip_now_wall() / YIP_NS_PER_S;
	for (int i = 0; i < RX_BURST; i++) {
		union yip_sockaddr from;
		socklen_t flen = sizeof(from);
		struct quic_conn *c = NULL;
		size_t reply_len = 0;
		ssize_t n = recvfrom(q->fd, q->rx, sizeof(q->rx), MSG_TRUNC, &from.sa, &flen);
		unsigned bits;

		if (n < 0)
			break;
		if ((size_t)n > sizeof(q->rx) || flen > sizeof(from)) {
			q->truncated++;
			continue;
		}
		/* ngtcp2 takes only time that never goes back: a fresh clock
		 * for every call (reads, writes, timers), not the loop's. */
		bits = quic_server_read(q->qs, q->rx, (size_t)n, &q->listen, &from, yip_now_mono(),
		                        &c, q->pkt, sizeof(q->pkt), &reply_len);
		if (reply_len > 0)
			(void)sendto(q->fd, q->pkt, reply_len, 0, &from.sa, flen);
		if (c == NULL)
			continue;
		if ((bits & QUIC_CONN_NEW) && slot_of_conn(q, c) == NULL &&
		    slot_new(q, c) == NULL) {
			quic_server_close(q->qs,
			                  c); /* cannot happen: as many slots as connections */
			continue;
		}
		flush_conn(q, c);
	}
}

void rdv_quic_send(struct rdv_quic *q, const union yip_sockaddr *to, const uint8_t *d, size_t len)
{
	struct slot *sl = slot_of_addr(q, to);
	bool carried = false;

	if (sl == NULL) {
		q->st.dgram_stale++;
		return;
	}
	if (len > quic_conn_dgram_max(sl->c)) {
		q->st.dgram_too_big++;
		return;
	}
	for (int tries = 0; tries < 4 && !carried; tries++) {
		size_t n = quic_conn_send_datagram(sl->c, d, len, q->pkt, sizeof(q->pkt),
		                                   yip_now_mono(), &carried);
		const union yip_sockaddr *peer = quic_conn_peer(sl->c);

		if (n == 0)
			break;
		(void)sendto(q->fd, q->pkt, n, 0, &peer->sa, yip_sockaddr_len(peer));
	}
	if (carried)
		q->st.dgrams_out++;
	else
		q->st.dgram_refused++;
}

uint64_t rdv_quic_expiry(struct rdv_quic *q)
{
	return quic_server_expiry(q->qs);
}

void rdv_quic_timers(struct rdv_quic *q, uint64_t now)
{
	q->now = now;
	q->decoy.wall_s = yip_now_wall() / YIP_NS_PER_S;
	quic_server_expire(q->qs, yip_now_mono());
	for (struct quic_conn *c = quic_server_next(q->qs, NULL); c != NULL;
	     c = quic_server_next(q->qs, c))
		flush_conn(q, c);
}

const struct yip_rdv_quic *rdv_quic_status(struct rdv_quic *q)
{
	const struct quic_server_stats *s = quic_server_stats(q->qs);

	q->st.open = s->conns;
	q->st.handshaking = s->handshakes;
	q->st.accepted = s->accepted;
	q->st.refused = s->drop_full + s->drop_handshakes + s->drop_per_source;
	q->st.failed = s->failed;
	q->st.decoy_requests = q->decoy.stats.requests;
	/* The server's expired counts both timeouts; idle ones are counted apart. */
	q->st.timeouts = s->expired > q->st.idle ? s->expired - q->st.idle : 0;
	q->st.not_quic = s->drop_short + s->drop_unknown + s->drop_small + s->drop_not_initial +
	                 s->drop_version + q->truncated;
	return &q->st;
}
