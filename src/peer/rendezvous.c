/*
 * The node's side of the rendezvous protocol (docs/nat.md). Each server is
 * a session like a peer's (struct yip_server wraps a struct yip_peer that
 * carries only control messages). Over it the node registers its local
 * addresses, learns its reflexive address and its relay token, asks for
 * peers it has no path to, answers the server's questions about who may
 * reach it (only its configured peers), and turns introductions into
 * candidate paths and a handshake.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stddef.h>
#include <string.h>

#include "membership/member.h"
#include "util/clock.h"
#include "util/log.h"

#define REGISTER_EVERY (10 * YIP_NS_PER_S) /* at most: also how soon a lost server shows */
#define REGISTER_RETRY (1 * YIP_NS_PER_S)  /* no REGISTERED yet: ask again */
#define REGISTER_TRIES 4                   /* REGISTERs unanswered before reconnecting */
#define REFUSED_RETRY  (30 * YIP_NS_PER_S) /* refused: try again, over a new session */
#define RECONNECT      (5 * YIP_NS_PER_S)
#define LOOKUP_FIRST   (2 * YIP_NS_PER_S)
#define LOOKUP_MAX     (60 * YIP_NS_PER_S)
#define WHOAMI_EVERY   (300 * YIP_NS_PER_S)
/* UDP to a server that also has a quic:// or tls:// line unanswered this
 * long: dial it over QUIC (or TLS if it has no quic:// line). */
#define UDP_FALLBACK (2500 * YIP_NS_PER_MS)
/* Over QUIC, Inits unanswered this long since the dial (the QUIC handshake
 * did not finish, or the server never answered over it): dial TLS. Long
 * enough for ngtcp2 to send its Initial three times (1 s, then 2 s: its
 * first probe timeouts) and for one Noise round trip after. */
#define QUIC_FALLBACK (5 * YIP_NS_PER_S)

static struct yip_server *server_of(struct yip_peer *p)
{
	return (struct yip_server *)((char *)p - offsetof(struct yip_server, peer));
}

static int server_index(const struct yip_device *dev, const struct yip_server *s)
{
	return (int)(s - dev->servers);
}

static void server_name(const struct yip_server *s, char *out, size_t len)
{
	yip_sockaddr_format(&s->peer.endpoint, out, len);
}

/* How often a registered node refreshes: often enough to hold its NAT
 * mapping and to notice a server that lost it (a restart). */
static uint64_t refresh_every(const struct yip_device *dev)
{
	return dev->nat_keepalive && dev->nat_keepalive < REGISTER_EVERY ? dev->nat_keepalive
	                                                                 : REGISTER_EVERY;
}

/* ---- what we tell the servers ------------------------------------------------------ */

/* The server's UDP path (a direct one on the main link), or -1. */
static int udp_path(const struct yip_server *s)
{
	const struct yip_peer *sp = &s->peer;

	for (unsigned i = 0; s->udp && i < sp->n_paths; i++)
		if (sp->paths[i].kind == YIP_PATH_DIRECT && sp->paths[i].link == YIP_LINK_MAIN)
			return (int)i;
	return -1;
}

/* Reached over a link the daemon dialed (QUIC or TLS), not by UDP. */
static bool off_udp(const struct yip_server *s)
{
	const struct yip_peer *sp = &s->peer;

	return sp->path >= 0 && sp->paths[sp->path].link != YIP_LINK_MAIN;
}

static void send_register(struct yip_server *s, uint64_t now)
{
	struct yip_device *dev = s->peer.dev;
	struct wire_ctrl c = {.kind = WIRE_CTRL_REGISTER, .nat = dev->nat};

	/* A members-only server needs our certificate first, once a session. */
	if (dev->member_cert_len != 0 && !s->member_sent) {
		struct wire_ctrl m = {.kind = WIRE_CTRL_MEMBER,
		                      .cert = dev->member_cert,
		                      .cert_len = (uint16_t)dev->member_cert_len};

		frame_send_ctrl(&s->peer, now, &m, -1, NULL, 0);
		s->member_sent = true;
	}
	c.flags = dev->relay_off ? 0 : WIRE_CTRL_RELAY;
	if (dev->io.local_addrs != NULL)
		c.n_cands = (uint8_t)dev->io.local_addrs(dev->io.ctx, c.cands, WIRE_MAX_CANDS);
	frame_send_ctrl(&s->peer, now, &c, -1, NULL, 0);
	/* On TLS, the same over UDP: once UDP passes again the server sees it
	 * come from there and challenges us (on_challenge). */
	if (off_udp(s) && udp_path(s) >= 0)
		frame_send_ctrl(&s->peer, now, &c, udp_path(s), NULL, 0);
	if (s->state == YIP_SERVER_CONNECTING)
		s->state = YIP_SERVER_REGISTERING;
	s->unanswered++;
	s->register_sent = now;
	s->register_at = now + REGISTER_RETRY;
	schedule(dev, s->register_at);
}

/* Asks the server's second port (and its first) where we come from. */
static void send_whoami(struct yip_server *s, uint64_t now)
{
	struct wire_ctrl c = {.kind = WIRE_CTRL_WHOAMI};
	union yip_sockaddr alt = s->peer.endpoint;

	do
		randombytes_buf(&s->whoami_id, sizeof(s->whoami_id));
	while (s->whoami_id == 0);
	c.id = s->whoami_id;
	s->whoami_sent = now;
	if (alt.sa.sa_family == AF_INET)
		alt.in4.sin_port = htons(s->alt_port);
	else
		alt.in6.sin6_port = htons(s->alt_port);
	frame_send_ctrl(&s->peer, now, &c, -1, &alt, YIP_LINK_MAIN);
}

void rendezvous_lookup(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;

	if (dev->n_servers == 0 || p->lookup_at != 0)
		return;
	p->lookup_at = now;
	schedule_peer(p, now);
}

static void send_lookups(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;
	struct wire_ctrl c = {.kind = WIRE_CTRL_LOOKUP};
	uint64_t wait = p->intro_at ? LOOKUP_MAX : LOOKUP_FIRST;

	c.id = ++p->lookup_id;
	p->lookup_unknown = false;
	memcpy(c.key, p->public_key, YIP_KEY_LEN);
	for (size_t i = 0; i < dev->n_servers; i++) {
		struct yip_server *s = &dev->servers[i];

		if (s->state != YIP_SERVER_REGISTERED)
			continue;
		frame_send_ctrl(&s->peer, now, &c, -1, NULL, 0);
		s->lookups++;
	}
	/* Until a path works, ask again; more slowly once introduced. */
	p->lookup_at = now + wait;
}

/* ---- what they tell us ---------------------------------------------------------------- */

/* Our NAT class from what the servers saw: our own address, one port for
 * every destination, or a new port per destination. */
static void classify_nat(struct yip_device *dev)
{
	union yip_sockaddr local[WIRE_MAX_CANDS];
	size_t n =
	    dev->io.local_addrs ? dev->io.local_addrs(dev->io.ctx, local, WIRE_MAX_CANDS) : 0;
	const union yip_sockaddr *seen = NULL;
	uint8_t nat = WIRE_NAT_UNKNOWN;

	for (size_t i = 0; i < dev->n_servers; i++) {
		const struct yip_server *s = &dev->servers[i];

		if (!s->has_reflexive)
			continue;
		for (size_t j = 0; j < n; j++)
			if (yip_sockaddr_eq(&local[j], &s->reflexive))
				nat = WIRE_NAT_NONE;
		if (nat == WIRE_NAT_NONE)
			break;
		if (s->has_reflexive_alt)
			nat = yip_sockaddr_eq(&s->reflexive, &s->reflexive_alt) ? WIRE_NAT_EIM
			                                                        : WIRE_NAT_APDM;
		if (seen != NULL && !yip_sockaddr_eq(seen, &s->reflexive))
			nat = WIRE_NAT_APDM; /* two servers saw two ports */
		seen = &s->reflexive;
	}
	if (nat != dev->nat) {
		static const char *const names[WIRE_NAT_COUNT] = {
		    "unknown", "none", "endpoint-independent", "per destination"};

		log_info("NAT mapping: %s", names[nat]);
		dev->nat = nat;
		/* Tell the servers, so introductions carry it; then ask again
		 * for peers not yet direct, so both sides learn both mappings. */
		for (size_t i = 0; i < dev->n_servers; i++)
			if (dev->servers[i].state == YIP_SERVER_REGISTERED)
				dev->servers[i].register_at = 0;
		for (size_t i = 0; i < dev->n_peers; i++)
			if (dev->peers[i]->lookup_at != 0) {
				dev->peers[i]->lookup_at = 1; /* due at once, after the REGISTER */
				schedule_peer(dev->peers[i], 1);
			}
		schedule(dev, 0);
	}
}

static void on_registered(struct yip_server *s, uint64_t now, const struct wire_ctrl *c)
{
	struct yip_device *dev = s->peer.dev;
	char name[YIP_ADDRSTRLEN], me[YIP_ADDRSTRLEN];
	bool first = s->state != YIP_SERVER_REGISTERED;

	s->state = YIP_SERVER_REGISTERED;
	s->relay = (c->flags & WIRE_CTRL_RELAY) != 0;
	s->token = c->token;
	s->relay_id = c->relay_id;
	s->alt_port = c->alt_port;
	/* Over TLS or QUIC the server sees a connection, not our UDP mapping:
	 * nothing to learn. */
	if (off_udp(s)) {
		s->has_reflexive = s->has_reflexive_alt = false;
	} else {
		if (!s->has_reflexive || !yip_sockaddr_eq(&s->reflexive, &c->addr))
			s->has_reflexive_alt = false; /* our mapping changed: ask again */
		s->reflexive = c->addr;
		s->has_reflexive = true;
	}
	s->last_registered = now;
	/* One REGISTER out: this answers it (with several, we cannot tell which). */
	if (s->unanswered == 1 && s->register_sent != 0)
		s->rtt = now - s->register_sent;
	s->unanswered = 0;
	s->register_at = now + refresh_every(dev);
	schedule(dev, s->register_at);
	if (first) {
		s->registered_at = now;
		server_name(s, name, sizeof(name));
		yip_sockaddr_format(&c->addr, me, sizeof(me));
		log_info("rendezvous %s: registered, %s%s%s", name,
		         s->has_reflexive ? "seen as " : "",
		         s->has_reflexive ? me
		         : s->tls_asked   ? "over TLS"
		                          : "over QUIC",
		         s->relay ? ", relay on" : "");
		/* Peers still without a way: ask now. */
		for (size_t i = 0; i < dev->n_peers; i++)
			if (!session_usable(dev->peers[i], now))
				rendezvous_lookup(dev->peers[i], now);
	}
	if (s->udp && s->alt_port != 0 && (!s->has_reflexive_alt || first))
		send_whoami(s, now);
	classify_nat(dev);
}

/* The server admits only members of its network, and not us (yet). */
static void on_refused(struct yip_server *s, uint64_t now, const struct wire_ctrl *c)
{
	struct yip_device *dev = s->peer.dev;
	char name[YIP_ADDRSTRLEN];

	s->unanswered = 0; /* it answers: no reason to reconnect */
	s->member_sent = false;
	if (c->reason == 0 && dev->member_cert_len != 0 && s->state != YIP_SERVER_REFUSED) {
		/* It has not seen our certificate: the REGISTER overtook the
		 * MEMBER, or it forgot us. Send both again soon. */
		s->register_at = now + REGISTER_RETRY;
		schedule(dev, s->register_at);
		return;
	}
	if (s->state != YIP_SERVER_REFUSED || s->refused != c->reason) {
		server_name(s, name, sizeof(name));
		if (c->reason == 0)
			log_warn(
			    "rendezvous %s admits only members of its network: set cert = FILE "
			    "(docs/membership.md)",
			    name);
		else
			log_warn("rendezvous %s refuses our certificate: %s", name,
			         member_verdict_text((enum member_verdict)c->reason));
	}
	s->state = YIP_SERVER_REFUSED;
	s->refused = c->reason;
	s->register_at = now + REFUSED_RETRY;
	schedule(dev, s->register_at);
}

static void on_youare(struct yip_server *s, uint64_t now, const struct wire_ctrl *c)
{
	if (c->id != s->whoami_id || s->whoami_id == 0)
		return;   /* an old answer */
	s->whoami_id = 0; /* one answer per question */
	s->alt_rtt = now - s->whoami_sent;
	s->reflexive_alt = c->addr;
	s->has_reflexive_alt = true;
	classify_nat(s->peer.dev);
}

/* Before it sends anything to a new address of ours (our NAT gave us
 * another port), the server checks that it is ours: it sends a PROBE
 * there, and we echo it (docs/nat.md). */
/*
 * The server saw our datagram come from another address and asks us to
 * prove it is ours: answered on the path the question came by. When that
 * is UDP while we are on TLS, UDP works both ways again (the server will
 * move us to it once it has our answer): the path goes back to UDP, and
 * the TLS link is let go.
 */
static void on_challenge(struct yip_server *s, uint64_t now, const struct yip_from *from,
                         const struct wire_ctrl *c)
{
	struct wire_ctrl ok = {.kind = WIRE_CTRL_PROBE_OK, .nonce = c->nonce, .ts_us = c->ts_us};
	struct yip_device *dev = s->peer.dev;
	int i = from->server < 0 ? path_from(&s->peer, from) : -1;

	frame_send_ctrl(&s->peer, now, &ok, i, NULL, 0);
	if (i >= 0 && i == udp_path(s) && off_udp(s)) {
		char name[YIP_ADDRSTRLEN];

		server_name(s, name, sizeof(name));
		log_info("rendezvous %s: UDP answers again, leaving %s", name,
		         s->tls_asked ? "TLS" : "QUIC");
		path_use(&s->peer, now, i);
		s->reason = NULL;
		s->quic_asked = false;
		s->tls_asked = false;
		if (dev->io.undial_server != NULL)
			dev->io.undial_server(dev->io.ctx, server_index(dev, s));
	}
}

static void on_ask(struct yip_server *s, uint64_t now, const struct wire_ctrl *c)
{
	struct yip_device *dev = s->peer.dev;
	struct wire_ctrl a = {.kind = WIRE_CTRL_ANSWER, .id = c->id};

	s->asks++;
	memcpy(a.key, c->key, YIP_KEY_LEN);
	/* Only our own peers may learn where we are; on a CA-gated node, any
	 * member may (its handshake must carry a certificate to get further),
	 * but we cannot tell a member from anyone else by its key: a key we
	 * know nothing of is accepted at most MEMBERS_ASK_RATE times a second. */
	if (index_key_find(dev, c->key) != NULL ||
	    (members_on(dev) && members_ask_allowed(dev, now)))
		a.flags = WIRE_CTRL_ACCEPT;
	frame_send_ctrl(&s->peer, now, &a, -1, NULL, 0);
}

/* True if a is one of our own addresses' link (169.254/16: we have one there). */
static bool on_link(struct yip_device *dev, const union yip_sockaddr *a)
{
	union yip_sockaddr local[WIRE_MAX_CANDS];
	size_t n =
	    dev->io.local_addrs ? dev->io.local_addrs(dev->io.ctx, local, WIRE_MAX_CANDS) : 0;

	/* An IPv6 link-local address names no link without a scope, which a
	 * server cannot give: never one of those. */
	if (a->sa.sa_family != AF_INET)
		return false;
	for (size_t i = 0; i < n; i++)
		if (yip_sockaddr_scope(&local[i]) == YIP_SCOPE_LINK_LOCAL &&
		    local[i].sa.sa_family == AF_INET)
			return true;
	return false;
}

/*
 * The candidates of an introduction that we may send to: the first (what
 * the server saw) and the peer's own addresses, but never loopback,
 * multicast, broadcast or unspecified ones, and link-local ones only on a
 * link we are on. Returns how many of c's are left in out (first first).
 */
static unsigned cands_filter(struct yip_server *s, const struct wire_ctrl *c,
                             union yip_sockaddr *out)
{
	struct yip_device *dev = s->peer.dev;
	unsigned n = 0;

	for (unsigned i = 0; i < c->n_cands; i++) {
		enum yip_scope sc = yip_sockaddr_scope(&c->cands[i]);

		if (sc == YIP_SCOPE_INVALID || sc == YIP_SCOPE_LOOPBACK ||
		    (sc == YIP_SCOPE_LINK_LOCAL && !on_link(dev, &c->cands[i]))) {
			s->cands_refused++;
			continue;
		}
		out[n++] = c->cands[i];
	}
	return n;
}

static void on_intro(struct yip_server *s, uint64_t now, const struct wire_ctrl *c)
{
	struct yip_device *dev = s->peer.dev;
	struct yip_peer *p = index_key_find(dev, c->key);
	union yip_sockaddr cands[WIRE_MAX_CANDS];
	unsigned n = cands_filter(s, c, cands);
	bool relay = s->relay && !dev->relay_off;

	/* A member we hold nothing of, that asked for us (we accepted,
	 * on_ask): no peer and nothing sent until its own Init shows a
	 * certificate; its introduction waits for that (struct yip_intro). */
	if (p == NULL && members_on(dev)) {
		s->intros++;
		members_intro_hold(dev, now, c->key, cands, n, relay ? server_index(dev, s) : -1,
		                   c->relay_id, c->nat);
		return;
	}
	if (p == NULL) {
		yip_device_drop(dev, YIP_DROP_BAD_CTRL); /* not a peer of ours */
		return;
	}
	s->intros++;
	p->intro_at = now;
	p->lookup_wait = 0;
	p->nat = c->nat;
	if (n > 0 && yip_sockaddr_eq(&cands[0], &c->cands[0])) {
		/* The first address is what the server saw: the peer's NAT mapping. */
		p->reflexive = cands[0];
		p->has_reflexive = true;
	}
	for (unsigned i = 0; i < n; i++)
		path_add(p, now, YIP_PATH_DIRECT, &cands[i], -1, 0, YIP_ORIGIN_SERVER);
	if (relay)
		path_add(p, now, YIP_PATH_RELAY, NULL, server_index(dev, s), c->relay_id,
		         YIP_ORIGIN_RELAY);
	/* Both sides got this at the same moment: punch now. */
	if (session_usable(p, now))
		punch_restart(p, now);
	else
		handshake_start(p, now);
}

void rendezvous_ctrl(struct yip_peer *sp, uint64_t now, const struct yip_from *from,
                     const struct wire_ctrl *c)
{
	struct yip_server *s = server_of(sp);
	struct yip_peer *p;

	switch (c->kind) {
	case WIRE_CTRL_REGISTERED:
		on_registered(s, now, c);
		break;
	case WIRE_CTRL_YOUARE:
		on_youare(s, now, c);
		break;
	case WIRE_CTRL_REFUSED:
		on_refused(s, now, c);
		break;
	case WIRE_CTRL_PROBE:
		on_challenge(s, now, from, c);
		break;
	case WIRE_CTRL_ASK:
		on_ask(s, now, c);
		break;
	case WIRE_CTRL_INTRO:
		on_intro(s, now, c);
		break;
	case WIRE_CTRL_UNKNOWN:
		s->unknowns++;
		p = index_key_find(s->peer.dev, c->key);
		/* The peer is not registered (yet): ask less and less often. When
		 * it registers, its own LOOKUP gets both of us introduced. */
		if (p != NULL && p->lookup_at != 0 && c->id == p->lookup_id && !p->lookup_unknown &&
		    !session_usable(p, now)) {
			p->lookup_unknown = true; /* once per LOOKUP, however many servers */
			p->lookup_wait = p->lookup_wait ? p->lookup_wait * 2 : LOOKUP_FIRST;
			if (p->lookup_wait > LOOKUP_MAX)
				p->lookup_wait = LOOKUP_MAX;
			p->lookup_at = now + p->lookup_wait;
		}
		break;
	default:
		yip_device_drop(s->peer.dev, YIP_DROP_BAD_CTRL);
	}
}

void rendezvous_established(struct yip_peer *sp, uint64_t now)
{
	struct yip_server *s = server_of(sp);

	s->unanswered = 0;
	s->member_sent = false; /* a new session: maybe a restarted server */
	send_register(s, now);
}

/* ---- timers --------------------------------------------------------------------------- */

/*
 * Over QUIC, then TLS, when UDP does not reach the server: QUIC at once
 * for a server with no UDP line, else once its Inits have gone
 * UDP_FALLBACK unanswered; TLS once QUIC's have gone QUIC_FALLBACK
 * unanswered too (or at UDP's turn, for a server with no quic:// line).
 * The daemon keeps the connection up (and dials again when it drops); the
 * UDP path stays a candidate, so Inits keep going both ways and the
 * session moves back to UDP once the server answers there
 * (on_challenge).
 */
static void ask(struct yip_server *s, uint64_t now, int line, const char *reason)
{
	struct yip_device *dev = s->peer.dev;

	s->reason = reason;
	if (line == s->quic_line) {
		s->quic_asked = true;
		s->quic_at = now;
		s->quic_ok_at = 0;
	} else {
		s->tls_asked = true;
	}
	dev->io.dial_server(dev->io.ctx, server_index(dev, s), (size_t)line);
}

static uint64_t fallback(struct yip_server *s, uint64_t now)
{
	struct yip_device *dev = s->peer.dev;
	struct yip_peer *sp = &s->peer;
	uint64_t since;

	if (dev->io.dial_server == NULL || s->tls_asked)
		return UINT64_MAX;
	if (!s->quic_asked) {
		int line = s->quic_line >= 0 ? s->quic_line : s->tls_line;

		if (line < 0)
			return UINT64_MAX;
		if (s->udp && (sp->hs_unanswered == 0 || now - sp->hs_unanswered < UDP_FALLBACK))
			return sp->hs_unanswered ? sp->hs_unanswered + UDP_FALLBACK : UINT64_MAX;
		if (s->udp)
			ask(s, now, line, "udp to the server unanswered for 2.5 s");
		else if (line == s->quic_line)
			ask(s, now, line,
			    s->tls_line >= 0 ? "named by quic:// and tls:// only"
			                     : "named only by quic://");
		else
			ask(s, now, line, "named only by tls://");
		return s->quic_asked && s->tls_line >= 0 ? now + QUIC_FALLBACK : UINT64_MAX;
	}
	if (s->tls_line < 0)
		return UINT64_MAX;
	/* On QUIC: unanswered since the dial, or since it last answered (its
	 * link may never come up: then no Init goes at all). */
	if (session_usable(sp, now) && off_udp(s)) {
		s->quic_ok_at = now;
		return UINT64_MAX; /* checked again at every timer run */
	}
	since = s->quic_ok_at > s->quic_at ? s->quic_ok_at : s->quic_at;
	if (now - since < QUIC_FALLBACK)
		return since + QUIC_FALLBACK;
	if (dev->io.undial_server != NULL)
		dev->io.undial_server(dev->io.ctx, server_index(dev, s));
	ask(s, now, s->tls_line, "quic to the server unanswered for 5 s");
	return UINT64_MAX;
}

void rendezvous_link_opened(struct yip_server *s, uint64_t now)
{
	struct yip_peer *sp = &s->peer;

	/* Not answered by UDP: start again over the new link at once. */
	if (!session_usable(sp, now)) {
		handshake_abandon(sp);
		handshake_start(sp, now);
		s->register_at = now + RECONNECT;
	}
}

static uint64_t server_timers(struct yip_server *s, uint64_t now)
{
	struct yip_device *dev = s->peer.dev;
	struct yip_peer *sp = &s->peer;
	char name[YIP_ADDRSTRLEN];
	uint64_t fb = fallback(s, now);

	if (!s->udp && sp->n_paths == 0)
		return fb; /* nothing to send on until the QUIC or TLS link is up */

	if (s->state == YIP_SERVER_REFUSED && now >= s->register_at && session_usable(sp, now)) {
		/* A members-only server forgets a node it did not admit within
		 * seconds (docs/rendezvous.md): try again over a new session.
		 * Until it answers otherwise, we are still refused. */
		session_clear(dev, &sp->cur);
		handshake_start(sp, now);
		s->register_at = now + RECONNECT;
		return min64(s->register_at, fb);
	}
	if (!session_usable(sp, now)) {
		if (s->state == YIP_SERVER_REGISTERED) {
			server_name(s, name, sizeof(name));
			log_warn("rendezvous %s: session lost, reconnecting", name);
		}
		if (s->state != YIP_SERVER_REFUSED)
			s->state = YIP_SERVER_CONNECTING;
		if (!sp->hs_pending && now >= s->register_at) {
			handshake_start(sp, now);
			s->register_at = now + RECONNECT;
		}
		/* While a handshake is under way its own timers retry it; this
		 * deadline must never lie in the past, or the loop would spin.
		 * The fallback's is kept too: it is due while no session is. */
		return min64(s->register_at > now ? s->register_at : now + RECONNECT, fb);
	}
	if (s->unanswered >= REGISTER_TRIES) {
		server_name(s, name, sizeof(name));
		log_warn("rendezvous %s: %u registrations unanswered, reconnecting", name,
		         s->unanswered);
		s->state = YIP_SERVER_CONNECTING;
		s->unanswered = 0;
		session_clear(dev, &sp->cur);
		handshake_start(sp, now);
		s->register_at = now + RECONNECT;
		return min64(s->register_at, fb);
	}
	if (now >= s->register_at)
		send_register(s, now);
	if (s->state == YIP_SERVER_REGISTERED && s->udp && s->alt_port != 0 &&
	    !s->has_reflexive_alt && now - s->last_registered > WHOAMI_EVERY)
		send_whoami(s, now);
	return min64(s->register_at, fb);
}

uint64_t rendezvous_timers(struct yip_device *dev, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < dev->n_servers; i++)
		next = min64(next, server_timers(&dev->servers[i], now));
	return next;
}

uint64_t rendezvous_peer_timers(struct yip_peer *p, uint64_t now)
{
	if (p->lookup_at == 0)
		return UINT64_MAX;
	/* A peer with a working direct path needs no introductions. */
	if (session_usable(p, now) && p->path >= 0 && p->paths[p->path].kind == YIP_PATH_DIRECT) {
		p->lookup_at = 0;
		return UINT64_MAX;
	}
	if (now >= p->lookup_at)
		send_lookups(p, now);
	return p->lookup_at;
}

/* ---- setup ---------------------------------------------------------------------------- */

/* The server cfg's line i names (yip_config_server_of_line: the rule yipd's
 * resolver uses too): set up when its first line comes. */
static struct yip_server *server_for_line(struct yip_device *dev, const struct yip_config *cfg,
                                          size_t i)
{
	size_t k = yip_config_server_of_line(cfg, i);
	struct yip_server *s = &dev->servers[k];

	if (k < dev->n_servers)
		return s;
	dev->n_servers = k + 1;
	s->peer.dev = dev;
	s->peer.is_server = true;
	s->peer.configured = true; /* from the configuration: never admitted as a member */
	s->peer.path = -1;
	s->quic_line = -1;
	s->tls_line = -1;
	memcpy(s->peer.public_key, cfg->rendezvous[i].public_key, YIP_KEY_LEN);
	wire_mac1_key(s->peer.mac1_key, s->peer.public_key);
	cookie_jar_init(&s->peer.cookie, s->peer.public_key);
	s->register_at = 0;
	return s;
}

int rendezvous_init(struct yip_device *dev, const struct yip_config *cfg)
{
	if (cfg->n_rendezvous == 0)
		return 0;
	dev->servers = calloc(cfg->n_rendezvous, sizeof(*dev->servers));
	if (dev->servers == NULL)
		return -1;
	/* A server named more than once (by UDP, quic:// and tls://, the same
	 * key) is one server. */
	for (size_t i = 0; i < cfg->n_rendezvous; i++) {
		const struct yip_rendezvous_config *rc = &cfg->rendezvous[i];
		struct yip_server *s = server_for_line(dev, cfg, i);
		struct yip_peer *sp = &s->peer;

		if (rc->transport != YIP_TRANSPORT_UDP) {
			if (rc->transport == YIP_TRANSPORT_QUIC)
				s->quic_line = (int)i;
			else
				s->tls_line = (int)i;
			if (!s->udp)
				sp->endpoint = rc->addr; /* a name for it in logs */
			continue;
		}
		s->udp = true;
		path_use(sp, 0,
		         path_add(sp, 0, YIP_PATH_DIRECT, &rc->addr, -1, 0, YIP_ORIGIN_CONFIG));
	}
	schedule(dev, 0);
	return 0;
}

void rendezvous_free(struct yip_device *dev)
{
	for (size_t i = 0; i < dev->n_servers; i++) {
		struct yip_peer *sp = &dev->servers[i].peer;

		if (sp->hs_pending)
			index_del(dev, sp->hs_index);
		session_slot_free(dev, sp->hs);
		sp->hs = NULL;
		session_clear(dev, &sp->prev);
		session_clear(dev, &sp->cur);
		session_clear(dev, &sp->next);
	}
	if (dev->servers != NULL)
		sodium_memzero(dev->servers, dev->n_servers * sizeof(*dev->servers));
	free(dev->servers);
	dev->servers = NULL;
	dev->n_servers = 0;
}

int yip_device_netcheck(struct yip_device *dev, uint64_t now)
{
	int asked = 0;

	if (dev->netcheck_at != 0 && now - dev->netcheck_at < YIP_NS_PER_S)
		return -1;
	dev->netcheck_at = now;
	for (size_t i = 0; i < dev->n_servers; i++) {
		struct yip_server *s = &dev->servers[i];

		if (s->state != YIP_SERVER_REGISTERED && s->state != YIP_SERVER_REGISTERING)
			continue;
		if (!session_usable(&s->peer, now))
			continue;
		/* One REGISTER out at a time, so its answer measures it. */
		if (s->unanswered == 0)
			send_register(s, now);
		if (s->udp && s->alt_port != 0 && !off_udp(s))
			send_whoami(s, now);
		asked++;
	}
	return asked;
}
