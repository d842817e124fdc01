/*
 * yip-rendezvous's event loop (see rdvloop.h). The engine builds every
 * datagram it sends in the main socket's send batch (struct rdv_io.buf has
 * no socket argument; the engine sends everything from the main socket,
 * the second port only listens), so a relayed datagram is copied once,
 * from the receive buffer into the send batch; a datagram for the second
 * socket, should the engine send one, would be copied across to that
 * socket's batch. Batches leave with one sendmmsg after each receive
 * batch, or when full.
 */
#include "rdvloop/rdvloop.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/httpd.h"
#include "ctl/rendezvous.h"
#include "poll/daemon.h"
#include "poll/poll.h"
#include "membership/member.h"
#include "udp/udp.h"
#include "util/clock.h"
#include "util/hex.h"
#include "util/log.h"

#define RX_BURST   8 /* receive batches per socket per wakeup */
#define MAX_EVENTS 64
#define LOG_NODES  32 /* nodes the status log lists at most */

struct rdv_loop {
	struct rdv_server srv;
	struct rdv_front *front;     /* NULL: no TLS front */
	struct rdv_quic *quic;       /* NULL: no QUIC listener */
	struct rdv_reality *reality; /* NULL: no REALITY front */
	int fd[RDV_SOCKS];
	struct udp_batch rx[RDV_SOCKS], tx[RDV_SOCKS];
	struct yip_poll poll;
	int sigfd;
	struct yip_ctl_server ctl;
	bool ctl_on, stopped;
	bool metrics_on;
	uint64_t start_s;
	struct yip_httpd metrics;
	union yip_sockaddr listen;
	uint16_t alt_port;
	int (*reload)(void *arg, struct rdv_members *m);
	void *reload_arg;
	uint64_t rx_dgrams, rx_truncated, tx_dgrams, tx_failed;
	uint64_t clock_at;         /* when the engine was last told the wall clock */
	uint64_t front_at;         /* when the front's timers last ran */
	struct yip_notify *notify; /* NULL: no service manager to tell */
	uint64_t tick_at;          /* when the once-a-second chores last ran */
};

/* Nodes that relayed through us within this long count as relaying in STATUS. */
#define RELAYING_NS (10 * YIP_NS_PER_S)

/* ---- sending ----------------------------------------------------------------------- */

static void flush(struct rdv_loop *l, unsigned sock)
{
	unsigned queued = l->tx[sock].count, failed;

	if (queued == 0)
		return;
	failed = udp_tx_flush(&l->tx[sock]);
	l->tx_dgrams += queued - failed;
	l->tx_failed += failed;
}

static void flush_all(struct rdv_loop *l)
{
	for (unsigned s = 0; s < RDV_SOCKS; s++)
		if (l->fd[s] >= 0)
			flush(l, s);
}

static uint8_t *io_buf(void *ctx)
{
	struct rdv_loop *l = ctx;
	uint8_t *b = udp_tx_buf(&l->tx[RDV_SOCK_MAIN]);

	if (b == NULL) {
		flush(l, RDV_SOCK_MAIN);
		b = udp_tx_buf(&l->tx[RDV_SOCK_MAIN]);
	}
	return b;
}

static void io_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	struct rdv_loop *l = ctx;
	struct udp_batch *b = &l->tx[RDV_SOCK_MAIN];

	if (sock == RDV_SOCK_STREAM) {
		/* Into a stream: copied from where the engine built it, which
		 * stays the main batch's next buffer. */
		if (rdv_is_quic_addr(to) && l->quic != NULL)
			rdv_quic_send(l->quic, to, udp_tx_buf(b), len);
		else if (!rdv_is_quic_addr(to) && l->front != NULL)
			rdv_front_send(l->front, to, udp_tx_buf(b), len);
		else if (!rdv_is_quic_addr(to) && l->reality != NULL)
			rdv_reality_send(l->reality, to, udp_tx_buf(b), len);
		else
			l->tx_failed++;
		return;
	}
	if (sock == RDV_SOCK_ALT) {
		uint8_t *dst;

		if (l->fd[RDV_SOCK_ALT] < 0) {
			l->tx_failed++; /* the engine answers on a socket only what came in on it */
			return;
		}
		b = &l->tx[RDV_SOCK_ALT];
		if ((dst = udp_tx_buf(b)) == NULL) {
			flush(l, RDV_SOCK_ALT);
			dst = udp_tx_buf(b);
		}
		memcpy(dst, udp_tx_buf(&l->tx[RDV_SOCK_MAIN]), len);
	}
	if (!udp_tx_push(b, to, len, 0))
		l->tx_failed++;
}

/* ---- status -------------------------------------------------------------------------- */

static void status_fill(struct rdv_loop *l, struct yip_rdv_status *st)
{
	*st = (struct yip_rdv_status){
	    .srv = &l->srv,
	    .front = l->front != NULL ? rdv_front_status(l->front) : NULL,
	    .reality = l->reality != NULL ? rdv_reality_status(l->reality) : NULL,
	    .quic = l->quic != NULL ? rdv_quic_status(l->quic) : NULL,
	    .listen = l->listen,
	    .alt_port = l->alt_port,
	    .now = yip_now_mono(),
	    .now_wall_s = yip_now_wall() / YIP_NS_PER_S,
	    .rx_dgrams = l->rx_dgrams,
	    .rx_truncated = l->rx_truncated,
	    .tx_dgrams = l->tx_dgrams,
	    .tx_failed = l->tx_failed,
	    .udp_gso = l->tx[RDV_SOCK_MAIN].gso,
	    .udp_trains = l->tx[RDV_SOCK_MAIN].trains_sent + l->tx[RDV_SOCK_ALT].trains_sent,
	    .udp_train_dgrams =
	        l->tx[RDV_SOCK_MAIN].train_dgrams + l->tx[RDV_SOCK_ALT].train_dgrams,
	};
}

static char *metrics_body(void *ctx, size_t *len)
{
	struct rdv_loop *l = ctx;
	struct yip_rdv_status st;

	status_fill(l, &st);
	return yip_rdv_metrics(&st, l->start_s, len);
}

static char *ctl_reply(void *ctx, const char *line, size_t len, size_t *out_len)
{
	struct yip_rdv_status st;
	struct yip_ctl_request req;
	char err[128];

	/* log [level]: the loop's own state */
	if (yip_ctl_parse_request(line, len, &req, err, sizeof(err)) == 0 &&
	    req.cmd == YIP_CTL_LOG) {
		if (req.has_level && req.level != yip_log_get_level()) {
			yip_log_set_level(req.level);
			log_info("log level now %s (control request)",
			         yip_log_level_name(req.level));
		}
		return yip_ctl_log_reply(yip_log_get_level(), out_len);
	}
	status_fill(ctx, &st);
	return yip_rdv_ctl_reply(&st, line, len, out_len);
}

/* Logs what `yip-rendezvous status` prints, one log line per line, listing
 * the nodes only when there are few. */
static void log_status(struct rdv_loop *l)
{
	const char *req = l->srv.n_nodes <= LOG_NODES ? "show" : "stats";
	struct yip_rdv_status st;
	char *reply, *text = NULL, err[256] = "out of memory";
	size_t len, size = 0;
	FILE *out;
	int rc = -1;

	status_fill(l, &st);
	reply = yip_rdv_ctl_reply(&st, req, strlen(req), &len);
	out = open_memstream(&text, &size);
	if (reply != NULL && out != NULL)
		rc =
		    yip_rdv_ctl_render(out, reply, len, st.now_wall_s, LOG_NODES, err, sizeof(err));
	if (out != NULL && fclose(out) != 0)
		rc = -1;
	free(reply);
	if (rc != 0) {
		log_warn("status: %s", err);
		free(text);
		return;
	}
	daemon_log_status(text);
	if (l->srv.n_nodes > LOG_NODES)
		log_info("status: (%zu nodes: yip-rendezvous status lists them)", l->srv.n_nodes);
	free(text);
}

/* ---- receiving ----------------------------------------------------------------------- */

static void on_udp(struct rdv_loop *l, unsigned sock)
{
	struct udp_batch *b = &l->rx[sock];

	for (int burst = 0; burst < RX_BURST; burst++) {
		int n = udp_recv(b);
		uint64_t now = yip_now_mono();

		for (int i = 0; i < n; i++) {
			const struct mmsghdr *m = &b->msgs[i];

			l->rx_dgrams++;
			if (m->msg_hdr.msg_flags & MSG_TRUNC)
				l->rx_truncated++;
			else
				rdv_rx(&l->srv, now, sock, &b->addrs[i],
				       udp_batch_buf(b, (unsigned)i), m->msg_len);
		}
		flush_all(l);
		if (n < UDP_BATCH)
			break;
	}
}

struct count {
	uint64_t now;
	size_t registered, relaying;
};

static void count_node(void *arg, const struct rdv_node *n)
{
	struct count *c = arg;

	c->registered += n->registered;
	c->relaying +=
	    n->registered && n->stats.relay_in_dgrams > 0 && c->now - n->bucket_at < RELAYING_NS;
}

/* STATUS= for the service manager: "12 nodes registered, 3 relaying". */
static void notify_status(struct rdv_loop *l, uint64_t now, bool ready)
{
	char line[YIP_NOTIFY_STATUS_MAX];
	struct count c = {.now = now};

	if (l->notify == NULL || !yip_notify_on(l->notify))
		return;
	if (!ready && !yip_notify_status_due(l->notify, now))
		return;
	rdv_each(&l->srv, count_node, &c);
	snprintf(line, sizeof(line), "%zu node%s registered, %zu relaying", c.registered,
	         c.registered == 1 ? "" : "s", c.relaying);
	if (ready) {
		yip_notify_ready(l->notify, line);
		l->notify->next_status = now + YIP_NS_PER_S;
	} else {
		yip_notify_status(l->notify, now, line);
	}
}

static void status_cb(void *arg)
{
	log_status(arg);
}

/* SIGHUP: the gate as its files now say, applied to every admitted node at once. */
static void reload_cb(void *arg)
{
	struct rdv_loop *l = arg;
	struct rdv_members m;
	uint64_t before = l->srv.stats.evicted;

	if (!l->srv.members_only || l->reload == NULL) {
		log_info("SIGHUP: nothing to reload (no revocations file)");
		return;
	}
	if (l->notify != NULL)
		yip_notify_reloading(l->notify);
	if (l->reload(l->reload_arg, &m) == 0) {
		rdv_set_members(&l->srv, yip_now_mono(), &m);
		log_info("SIGHUP: revocation list serial %" PRIu64 " in force; %" PRIu64
		         " registered node(s) no longer admitted were dropped",
		         m.revs != NULL ? m.revs->f.serial : 0, l->srv.stats.evicted - before);
	}
	notify_status(l, yip_now_mono(), true);
}

/* The signalfd: a stop signal ends the loop once this wait's events are handled. */
static void on_signal(void *ctx, uint32_t events)
{
	struct rdv_loop *l = ctx;

	(void)events;
	if (!daemon_signals(l->sigfd, status_cb, reload_cb, l)) {
		l->stopped = true;
		if (l->notify != NULL)
			yip_notify_stopping(l->notify);
	}
}

static void on_udp_main(void *ctx, uint32_t events)
{
	(void)events;
	on_udp(ctx, RDV_SOCK_MAIN);
}

static void on_udp_alt(void *ctx, uint32_t events)
{
	(void)events;
	on_udp(ctx, RDV_SOCK_ALT);
}

static void on_quic(void *ctx, uint32_t events)
{
	struct rdv_loop *l = ctx;

	(void)events;
	rdv_quic_readable(l->quic, yip_now_mono());
	flush_all(l); /* what the engine answered to UDP nodes */
}

/* Milliseconds until the engine's next timer or the control client's deadline. */
static int timeout_ms(struct rdv_loop *l, uint64_t now)
{
	uint64_t next = l->srv.next_timer, c;

	if (l->ctl_on && (c = yip_ctl_server_expire(&l->ctl, now)) != 0 && c < next)
		next = c;
	if (l->metrics_on && (c = yip_httpd_expire(&l->metrics, now)) != 0 && c < next)
		next = c;
	if (l->quic != NULL && (c = rdv_quic_expiry(l->quic)) < next)
		next = c;
	if (l->notify != NULL && (c = yip_notify_tick(l->notify, now)) != 0 && c < next)
		next = c; /* WATCHDOG=1 when due */
	if (next <= now)
		return 0;
	if (next - now >= 1000 * YIP_NS_PER_MS)
		return 1000;
	return (int)((next - now + YIP_NS_PER_MS - 1) / YIP_NS_PER_MS);
}

static int run(struct rdv_loop *l)
{
	struct epoll_event evs[MAX_EVENTS];
	int n;

	while (!l->stopped) {
		uint64_t now = yip_now_mono();

		/* The wall clock once a second: Init timestamps are checked
		 * against it, so a step of the system clock must reach the engine. */
		if (now - l->clock_at >= YIP_NS_PER_S) {
			rdv_clock(&l->srv, now, (uint64_t)time(NULL));
			l->clock_at = now;
		}
		if (now - l->tick_at >= YIP_NS_PER_S) {
			yip_log_tick(now); /* the rate limiter's "suppressed" lines */
			notify_status(l, now, false);
			l->tick_at = now;
		}
		if (now >= l->srv.next_timer) {
			rdv_timers(&l->srv, now);
			flush_all(l);
		}
		if (l->quic != NULL && now >= rdv_quic_expiry(l->quic)) {
			rdv_quic_timers(l->quic, now);
			flush_all(l);
		}
		if ((l->front != NULL || l->reality != NULL) && now - l->front_at >= YIP_NS_PER_S) {
			if (l->front != NULL)
				rdv_front_timers(l->front, now);
			else
				rdv_reality_timers(l->reality, now);
			l->front_at = now;
		}
		/* What comes back is the front's (its fds are not registered). */
		n = yip_poll_wait(&l->poll, timeout_ms(l, now), evs, MAX_EVENTS);
		if (n < 0) {
			log_err("epoll_wait: %s", strerror(errno));
			return 1;
		}
		if (n > 0 && (l->front != NULL || l->reality != NULL)) {
			now = yip_now_mono();
			for (int i = 0; i < n; i++) {
				if (l->front != NULL)
					rdv_front_event(l->front, now, &evs[i]);
				else
					rdv_reality_event(l->reality, now, &evs[i]);
			}
			flush_all(l);
		}
	}
	return 0;
}

/* ---- setting up ---------------------------------------------------------------------- */

static int setup(struct rdv_loop *l, const struct rdv_loop_config *c)
{
	struct rdv_io io = {l, io_buf, io_send};
	char err[256];

	int polled = yip_poll_open(&l->poll);

	l->sigfd = daemon_signalfd();
	if (polled != 0 || l->sigfd < 0 ||
	    yip_poll_add(&l->poll, l->sigfd, EPOLLIN, on_signal, l) != 0) {
		log_err("event loop setup failed: %s", strerror(errno));
		return -1;
	}
	for (unsigned s = 0; s < RDV_SOCKS; s++) {
		if (l->fd[s] < 0)
			continue;
		/* Receive without GRO: every datagram is the engine's to judge. Send
		 * with GSO: a relayed flow is a run of equal-size datagrams to one node. */
		if (udp_batch_init(&l->rx[s], l->fd[s], c->family, RDV_MAX_DGRAM + 1, true,
		                   false) != 0 ||
		    udp_batch_init(&l->tx[s], l->fd[s], c->family, RDV_MAX_DGRAM, false, true) !=
		        0 ||
		    yip_poll_add(&l->poll, l->fd[s], EPOLLIN,
		                 s == RDV_SOCK_MAIN ? on_udp_main : on_udp_alt, l) != 0) {
			log_err("event loop setup failed: %s", strerror(errno));
			return -1;
		}
	}
	if (rdv_init(&l->srv, c->engine, &io, err, sizeof(err)) != 0) {
		log_err("%s", err);
		return -1;
	}
	l->clock_at = yip_now_mono();
	rdv_clock(&l->srv, l->clock_at, (uint64_t)time(NULL));
	if (c->members != NULL)
		rdv_set_members(&l->srv, yip_now_mono(), c->members);
	if (c->front != NULL) {
		l->front = rdv_front_new(c->front, &l->srv, l->poll.epfd, err, sizeof(err));
		if (l->front == NULL) {
			log_err("TLS front: %s", err);
			return -1;
		}
	}
	if (c->reality != NULL) {
		l->reality = rdv_reality_new(c->reality, &l->srv, l->poll.epfd, err, sizeof(err));
		if (l->reality == NULL) {
			log_err("REALITY front: %s", err);
			return -1;
		}
	}
	if (c->quic != NULL) {
		l->quic = rdv_quic_new(c->quic, &l->srv, err, sizeof(err));
		if (l->quic == NULL) {
			log_err("QUIC listener: %s", err);
			return -1;
		}
		if (yip_poll_add(&l->poll, rdv_quic_fd(l->quic), EPOLLIN, on_quic, l) != 0) {
			log_err("event loop setup failed: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The status socket; the server runs without one that cannot be opened. */
static void ctl_open(struct rdv_loop *l, const char *dir, uid_t owner)
{
	char err[256];

	if (yip_ctl_server_open(&l->ctl, dir, YIP_RDV_CTL_NAME, owner, err, sizeof(err)) != 0) {
		log_warn("control socket disabled: %s", err);
	} else if (yip_ctl_server_watch(&l->ctl, &l->poll, ctl_reply, l) != 0) {
		log_warn("control socket disabled: %s", strerror(errno));
		yip_ctl_server_close(&l->ctl);
	} else {
		l->ctl_on = true;
		log_info("control socket %s", l->ctl.path);
	}
}

static void log_start(struct rdv_loop *l)
{
	const struct rdv_config *cfg = &l->srv.cfg;
	char key[2 * YIP_KEY_LEN + 1], addr[YIP_ADDRSTRLEN], alt[32] = "no second port";
	char rate[32], burst[32], relay[96] = "relay off";

	yip_hex_encode(key, l->srv.public_key, YIP_KEY_LEN);
	yip_sockaddr_format(&l->listen, addr, sizeof(addr));
	if (l->alt_port != 0)
		snprintf(alt, sizeof(alt), "second port %u", l->alt_port);
	if (cfg->relay) {
		yip_ctl_format_bytes(rate, sizeof(rate), cfg->relay_rate);
		yip_ctl_format_bytes(burst, sizeof(burst), cfg->relay_burst);
		snprintf(relay, sizeof(relay), "relay on (%s/s per node, burst %s)", rate, burst);
	}
	log_info("yip-rendezvous %s: public key %s", YIP_VERSION, key);
	log_info("listening on %s, %s; %s; UDP GSO %s; at most %zu nodes%s", addr, alt, relay,
	         l->tx[RDV_SOCK_MAIN].gso ? "on" : "off", cfg->max_nodes,
	         cfg->obf ? "; obfuscation on (obf_psk)" : "");
	if (l->front != NULL) {
		const struct yip_rdv_front *st = rdv_front_status(l->front);
		char tcp[YIP_ADDRSTRLEN], decoy[YIP_ADDRSTRLEN];

		yip_sockaddr_format(&st->listen, tcp, sizeof(tcp));
		yip_sockaddr_format(&st->decoy_addr, decoy, sizeof(decoy));
		log_info("TLS front on TCP %s; what is not a yip node goes to %s%s", tcp,
		         st->decoy ? "the decoy " : "the built-in site", st->decoy ? decoy : "");
	}
	if (l->reality != NULL) {
		const struct yip_rdv_reality *st = rdv_reality_status(l->reality);
		char tcp[YIP_ADDRSTRLEN], target[YIP_ADDRSTRLEN];

		yip_sockaddr_format(&st->listen, tcp, sizeof(tcp));
		yip_sockaddr_format(&st->target, target, sizeof(target));
		log_info(
		    "REALITY front on TCP %s; every visitor but a sealed node is spliced to %s",
		    tcp, target);
	}
	if (l->quic != NULL) {
		char udp[YIP_ADDRSTRLEN];

		yip_sockaddr_format(&rdv_quic_status(l->quic)->listen, udp, sizeof(udp));
		log_info("QUIC listener on UDP %s", udp);
	}
	if (l->srv.members_only) {
		const struct member_revocations *r = l->srv.members.revs;

		yip_hex_encode(key, l->srv.members.ca_public, MEMBER_SIGN_PUBLIC);
		log_info("members of network %s only (CA %s); %s", l->srv.members.network, key,
		         r != NULL ? "a revocation list is loaded" : "no revocation list");
	}
}

int rdv_loop_run(const struct rdv_loop_config *c)
{
	struct rdv_loop *l = calloc(1, sizeof(*l));
	int rc = 1;

	if (l == NULL) {
		log_err("event loop setup failed: out of memory");
		return 1;
	}
	l->poll.epfd = l->sigfd = -1;
	l->ctl.fd = l->ctl.client = l->ctl.dirfd = -1;
	l->fd[RDV_SOCK_MAIN] = c->fd[RDV_SOCK_MAIN];
	l->fd[RDV_SOCK_ALT] = c->fd[RDV_SOCK_ALT];
	l->listen = c->listen;
	l->alt_port = c->fd[RDV_SOCK_ALT] >= 0 ? c->alt_port : 0;
	l->reload = c->reload;
	l->reload_arg = c->reload_arg;
	l->notify = c->notify;
	if (setup(l, c) == 0) {
		char err[256];

		log_start(l);
		if (c->ctl_dir != NULL)
			ctl_open(l, c->ctl_dir, sandbox_uid(c->sandbox));
		l->start_s = (uint64_t)time(NULL);
		if (c->metrics_listen != NULL) {
			if (yip_httpd_open(&l->metrics, c->metrics_listen, err, sizeof(err)) != 0) {
				log_err("%s", err);
			} else if (yip_httpd_watch(&l->metrics, &l->poll, metrics_body, l) != 0) {
				log_err("metrics: %s", strerror(errno));
				yip_httpd_close(&l->metrics);
			} else {
				l->metrics_on = true;
				log_info("metrics on http://%s/metrics", l->metrics.addr);
			}
		}
		sandbox_protect(&l->srv, sizeof(l->srv));
		if (c->metrics_listen != NULL && !l->metrics_on) {
			; /* asked for and not there: do not run without it */
		} else if (sandbox_enter(c->sandbox, err, sizeof(err)) == 0) {
			notify_status(l, yip_now_mono(), true); /* READY: serving from here on */
			rc = run(l);
		} else {
			log_err("%s", err);
		}
		log_status(l);
		rdv_front_free(l->front);
		l->front = NULL;
		rdv_reality_free(l->reality);
		l->reality = NULL;
		rdv_quic_free(l->quic);
		l->quic = NULL;
		rdv_free(&l->srv);
	}
	if (l->ctl_on)
		yip_ctl_server_close(&l->ctl);
	if (l->metrics_on)
		yip_httpd_close(&l->metrics);
	for (unsigned s = 0; s < RDV_SOCKS; s++) {
		udp_batch_free(&l->rx[s]);
		udp_batch_free(&l->tx[s]);
	}
	if (l->sigfd >= 0)
		close(l->sigfd);
	yip_poll_close(&l->poll);
	free(l);
	return rc;
}
