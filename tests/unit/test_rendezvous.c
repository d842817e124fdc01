/*
 * The rendezvous protocol end to end in memory: a server engine and three
 * node engines on a tiny simulated network (a router that delivers every
 * datagram to the engine at its destination address, and can cut the
 * direct path between two nodes). Registration, lookups that need the
 * target's consent, introductions and a handshake without any endpoint=,
 * the relay when the direct path is cut and the move to direct when it
 * heals, and what forged or refused messages come to.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/member.h"
#include "obf/obf.h"
#include "pair.h"
#include "peer/peer.h"
#include "rdvclient.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"
#include "wire/wire.h"

#define NODES  3 /* A and B are peers of each other; C knows B, B does not know C */
#define SERVER NODES
#define SRV_Q  256

struct srv_dgram {
	unsigned sock;
	union yip_sockaddr to;
	size_t len;
	uint8_t buf[1600];
};

/* Everybody's wall clock: UNIX_NOW (Unix seconds) when a test starts, and
 * as the simulated time passes. The server is told it as yip-rendezvous's
 * loop tells it, and each node's reads it (rounded up: every read of a
 * pair node's clock advances it by 20 ms). */
#define UNIX_NOW 1800000000ULL

static uint64_t now;

static uint64_t wall_at(uint64_t t)
{
	return UNIX_NOW * YIP_NS_PER_S + t - YIP_NS_PER_S;
}

static struct rdv_server S;
static struct srv_dgram srv_out[SRV_Q];
static unsigned srv_n;
static union yip_sockaddr srv_addr[RDV_SOCKS];
static uint8_t srv_priv[YIP_KEY_LEN], srv_pub[YIP_KEY_LEN];

static struct pair_node N[NODES];
static uint8_t keys[NODES][YIP_KEY_LEN];
static bool srv_obf;          /* server_start: with obf_psk (OBF_KEY) */
static struct obf_keys obf_k; /* ... to wrap and open with */
#define OBF_KEY 0x3c          /* every byte of it */
static bool cut;              /* direct datagrams between A and B are lost */
/* Node i reaches the server over a stream (the TLS front), the stream of
 * synthetic address stream_id(i), and none of its UDP gets anywhere. */
static bool stream_of[NODES];
static uint32_t stream_gen[NODES]; /* its stream's generation: a new connection, a new one */
static uint64_t lost_stream;       /* sent into a stream that is gone */
static bool started[NODES];        /* the pair nodes whose timers step() runs */
static uint64_t lost_direct;

static uint8_t *srv_buf(void *ctx)
{
	(void)ctx;
	assert_true(srv_n < SRV_Q);
	return srv_out[srv_n].buf;
}

static void srv_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	assert_true(len <= sizeof(srv_out[0].buf));
	srv_out[srv_n].sock = sock;
	srv_out[srv_n].to = *to;
	srv_out[srv_n].len = len;
	srv_n++;
}

static void set4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void node_start(int i, bool relay_off)
{
	struct yip_peer_config pc[NODES];
	struct yip_cidr cidr[NODES];
	struct yip_config cfg;
	struct pair_opts o = {.out_cap = 1024, .keep_cap = 64, .extra_socks = 256};
	char err[256], ip[32];
	size_t n = 0;

	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.private_key, keys[i], YIP_KEY_LEN);
	yip_key_public(cfg.public_key, keys[i]);
	cfg.mtu = 1420;
	cfg.nat_keepalive = 20;
	cfg.relay_off = relay_off;
	set4(&cfg.rendezvous[0].addr, "198.51.100.1", 7000);
	memcpy(cfg.rendezvous[0].public_key, srv_pub, YIP_KEY_LEN);
	cfg.rendezvous[0].has_key = true;
	cfg.n_rendezvous = 1;
	/* A <-> B; C -> B (C lists B, B does not list C). */
	for (int j = 0; j < NODES; j++) {
		bool listed = (i == 0 && j == 1) || (i == 1 && j == 0) || (i == 2 && j == 1);

		if (!listed)
			continue;
		memset(&pc[n], 0, sizeof(pc[n]));
		yip_key_public(pc[n].public_key, keys[j]);
		cidr[n] = (struct yip_cidr){.family = AF_INET, .plen = 32, .addr = {10, 0, 0}};
		cidr[n].addr[3] = (uint8_t)(j + 1);
		pc[n].allowed_ips = &cidr[n];
		pc[n].n_allowed_ips = 1;
		n++;
	}
	cfg.peers = pc;
	cfg.n_peers = n;
	assert_int_equal(pair_node_init(&N[i], &cfg, NULL, &o, err, sizeof(err)), 0);
	N[i].wall = wall_at(now);
	snprintf(ip, sizeof(ip), "192.0.2.%d", i + 1);
	set4(&N[i].addr, ip, 51820);
}

static void server_start(bool relay)
{
	struct rdv_io io = {NULL, srv_buf, srv_send};
	struct rdv_config c;
	char err[256];

	rdv_config_default(&c);
	memcpy(c.private_key, srv_priv, YIP_KEY_LEN);
	c.relay = relay;
	c.alt_port = 7001;
	if (srv_obf) {
		c.obf = true;
		memset(c.obf_psk, OBF_KEY, sizeof(c.obf_psk));
		obf_keys_init(&obf_k, c.obf_psk);
	}
	assert_int_equal(rdv_init(&S, &c, &io, err, sizeof(err)), 0);
	rdv_clock(&S, now, wall_at(now) / YIP_NS_PER_S);
}

/* The clocks after time has passed: the server's, and the nodes' (never backwards). */
static void clocks(void)
{
	rdv_clock(&S, now, wall_at(now) / YIP_NS_PER_S);
	for (int i = 0; i < NODES; i++)
		if (N[i].wall < wall_at(now))
			N[i].wall = wall_at(now);
}

/*
 * NATs in front of the nodes, as nftables builds them in the netns tests:
 * none (the node's address is public), full cone (one mapping per socket,
 * anyone may send to it), port-restricted (one mapping per socket, only
 * addresses and ports it sent to may answer) and symmetric (a new random
 * port per destination, filtering as port-restricted).
 */
enum nat { NAT_NONE, NAT_FULL, NAT_PORT, NAT_SYM };

#define MAX_MAPS 2048

#define MAX_CONTACTS 16384

struct mapping {
	int node, sock;
	union yip_sockaddr dest; /* symmetric: the one destination it is for */
	uint16_t port;           /* on the NAT's public address */
};

/* Who a mapping has sent to: they may answer through it. */
struct contact {
	unsigned map;
	union yip_sockaddr remote;
};

static enum nat nat_of[NODES];
static struct mapping maps[MAX_MAPS];
static unsigned n_maps;
static struct contact contacts[MAX_CONTACTS];
static unsigned n_contacts;

static bool contacted(unsigned map, const union yip_sockaddr *remote)
{
	for (unsigned c = 0; c < n_contacts; c++)
		if (contacts[c].map == map && yip_sockaddr_eq(&contacts[c].remote, remote))
			return true;
	return false;
}

static void node_public(int i, union yip_sockaddr *a, uint16_t port)
{
	char ip[32];

	snprintf(ip, sizeof(ip), "203.0.113.%d", i + 1);
	set4(a, ip, port);
}

static uint16_t sock_port(int sock)
{
	return (uint16_t)(sock == 0 ? 51820 : 40000 + sock);
}

/* The source address node i's datagram from sock to `to` shows on the internet. */
static void nat_out(int i, int sock, const union yip_sockaddr *to, union yip_sockaddr *src)
{
	struct mapping *m = NULL;

	if (nat_of[i] == NAT_NONE) {
		*src = N[i].addr;
		src->in4.sin_port = htons(sock_port(sock));
		return;
	}
	for (unsigned k = 0; k < n_maps && m == NULL; k++)
		if (maps[k].node == i && maps[k].sock == sock &&
		    (nat_of[i] != NAT_SYM || yip_sockaddr_eq(&maps[k].dest, to)))
			m = &maps[k];
	if (m == NULL) {
		assert_true(n_maps < MAX_MAPS);
		m = &maps[n_maps++];
		memset(m, 0, sizeof(*m));
		m->node = i;
		m->sock = sock;
		m->dest = *to;
		m->port = nat_of[i] == NAT_SYM ? (uint16_t)(1024 + randombytes_uniform(64000))
		                               : (uint16_t)(20000 + sock);
	}
	if (!contacted((unsigned)(m - maps), to)) {
		assert_true(n_contacts < MAX_CONTACTS);
		contacts[n_contacts].map = (unsigned)(m - maps);
		contacts[n_contacts++].remote = *to;
	}
	node_public(i, src, m->port);
}

/* Where a datagram to `to` from src lands: a node and its socket, or -1. */
static int nat_in(const union yip_sockaddr *to, const union yip_sockaddr *src, int *sock)
{
	for (int i = 0; i < NODES; i++) {
		union yip_sockaddr pub;

		if (nat_of[i] == NAT_NONE) {
			union yip_sockaddr a = N[i].addr;

			for (int s = 0; s <= 300; s++) {
				a.in4.sin_port = htons(sock_port(s));
				if (yip_sockaddr_eq(&a, to)) {
					*sock = s;
					return i;
				}
			}
			continue;
		}
		node_public(i, &pub, ntohs(to->in4.sin_port));
		if (!yip_sockaddr_eq(&pub, to))
			continue;
		for (unsigned k = 0; k < n_maps; k++) {
			const struct mapping *m = &maps[k];
			bool allowed = nat_of[i] == NAT_FULL;

			if (m->node != i || m->port != ntohs(to->in4.sin_port))
				continue;
			if (!allowed && !contacted(k, src))
				return -1;
			*sock = m->sock;
			return i;
		}
		return -1;
	}
	return -1;
}

static bool is_server(const union yip_sockaddr *a, unsigned *sock)
{
	for (unsigned s = 0; s < RDV_SOCKS; s++)
		if (yip_sockaddr_eq(a, &srv_addr[s])) {
			*sock = s;
			return true;
		}
	return false;
}

/* The synthetic address of node i's stream, as the front makes it. */
static void stream_src(int i, union yip_sockaddr *a)
{
	rdv_stream_addr(a, (uint64_t)stream_gen[i] << 32 | (uint64_t)(i + 1));
}

/* The node whose stream `to` is, or -1 (none, or one that is gone). */
static int stream_node(const union yip_sockaddr *to)
{
	for (int i = 0; i < NODES; i++) {
		union yip_sockaddr a;

		stream_src(i, &a);
		if (stream_of[i] && yip_sockaddr_eq(&a, to))
			return i;
	}
	return -1;
}

/* Delivers everything everyone sent until nobody has anything to send. */
static void run_net(void)
{
	static uint8_t copy[1600];

	for (int round = 0; round < 50; round++) {
		bool any = false;

		for (int i = 0; i < NODES; i++) {
			unsigned n = N[i].nout;

			pair_flush(&N[i]);
			for (unsigned k = 0; k < n; k++) {
				struct pair_dgram *d = &N[i].out[k];
				union yip_sockaddr src;
				unsigned ssock;
				int to, sock = 0;

				any = true;
				if (stream_of[i]) {
					/* Over the stream: the main port only, and nothing else. */
					stream_src(i, &src);
					if (is_server(&d->to, &ssock) && ssock == RDV_SOCK_MAIN)
						rdv_rx(&S, now, RDV_SOCK_STREAM, &src, d->buf,
						       d->len);
					continue;
				}
				nat_out(i, d->sock, &d->to, &src);
				if (is_server(&d->to, &ssock)) {
					rdv_rx(&S, now, ssock, &src, d->buf, d->len);
					continue;
				}
				to = nat_in(&d->to, &src, &sock);
				if (to < 0 || pair_sock_closed(&N[to], sock) || stream_of[to])
					continue;
				if (cut && i + to == 1) {
					lost_direct++;
					continue;
				}
				if (sock == 0)
					pair_rx(&N[to], now, &src, d->buf, d->len);
				else
					yip_device_rx_link(&N[to].dev, now, (uint32_t)sock, &src,
					                   d->buf, d->len);
			}
			N[i].nout = 0;
		}
		for (unsigned k = 0; k < srv_n; k++) {
			int sock = 0, to;

			any = true;
			if (srv_out[k].sock == RDV_SOCK_STREAM) {
				to = stream_node(&srv_out[k].to);
				if (to < 0) {
					lost_stream++;
					continue;
				}
				memcpy(copy, srv_out[k].buf, srv_out[k].len);
				pair_rx(&N[to], now, &srv_addr[RDV_SOCK_MAIN], copy,
				        srv_out[k].len);
				continue;
			}
			assert_false(rdv_is_stream_addr(&srv_out[k].to));
			to = nat_in(&srv_out[k].to, &srv_addr[srv_out[k].sock], &sock);
			if (to < 0 || pair_sock_closed(&N[to], sock))
				continue;
			memcpy(copy, srv_out[k].buf, srv_out[k].len);
			if (sock == 0)
				pair_rx(&N[to], now, &srv_addr[srv_out[k].sock], copy,
				        srv_out[k].len);
			else
				yip_device_rx_link(&N[to].dev, now, (uint32_t)sock,
				                   &srv_addr[srv_out[k].sock], copy,
				                   srv_out[k].len);
		}
		srv_n = 0;
		if (!any)
			return;
	}
	fail_msg("the network did not settle");
}

/* Lets `secs` of time pass in steps of 50 ms, with every timer and datagram. */
static void advance(double secs)
{
	uint64_t end = now + (uint64_t)(secs * 1e9);

	while (now < end) {
		now += 50 * YIP_NS_PER_MS;
		clocks();
		for (int i = 0; i < NODES; i++)
			yip_device_timers(&N[i].dev, now);
		rdv_timers(&S, now);
		run_net();
	}
}

static void ping(int from, int to)
{
	uint8_t pkt[64] = {0x45, 0, 0, 64, [8] = 64, [9] = 17, [12] = 10, 0, 0, 0, 10, 0, 0, 0};

	pkt[15] = (uint8_t)(from + 1);
	pkt[19] = (uint8_t)(to + 1);
	yip_device_tx(&N[from].dev, now, pkt, sizeof(pkt));
	run_net();
}

static const struct yip_peer *peer_of(int i, int j)
{
	uint8_t pub[YIP_KEY_LEN];

	yip_key_public(pub, keys[j]);
	return yip_device_peer(&N[i].dev, pub);
}

static bool relayed(int i, int j)
{
	const struct yip_peer *p = peer_of(i, j);

	return p->path >= 0 && p->paths[p->path].kind == YIP_PATH_RELAY;
}

static int setup(void **state)
{
	(void)state;
	yip_crypto_init();
	yip_key_generate(srv_priv);
	yip_key_public(srv_pub, srv_priv);
	for (int i = 0; i < NODES; i++)
		yip_key_generate(keys[i]);
	set4(&srv_addr[RDV_SOCK_MAIN], "198.51.100.1", 7000);
	set4(&srv_addr[RDV_SOCK_ALT], "198.51.100.1", 7001);
	now = YIP_NS_PER_S;
	cut = false;
	lost_direct = 0;
	srv_n = 0;
	n_maps = 0;
	n_contacts = 0;
	for (int i = 0; i < NODES; i++) {
		nat_of[i] = NAT_NONE;
		started[i] = false;
		stream_of[i] = false;
		stream_gen[i] = 1;
	}
	lost_stream = 0;
	srv_obf = false;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NODES; i++)
		pair_node_free(&N[i]);
	rdv_free(&S);
	return 0;
}

static void start_all(bool relay)
{
	server_start(relay);
	for (int i = 0; i < NODES; i++)
		node_start(i, false);
	advance(1);
	for (int i = 0; i < NODES; i++)
		assert_int_equal(N[i].dev.servers[0].state, YIP_SERVER_REGISTERED);
	assert_int_equal(S.n_nodes, NODES);
}

/* No endpoint anywhere: A finds B through the server and the ping arrives. */
static void introduced_direct(void **state)
{
	(void)state;
	start_all(true);
	ping(0, 1);
	advance(1);
	assert_true(yip_peer_established(peer_of(0, 1), now));
	assert_true(N[1].packets >= 1);
	/* Both saw each other's address: the path is direct after the probes. */
	advance(2);
	assert_false(relayed(0, 1));
	assert_false(relayed(1, 0));
	assert_true(S.stats.intros >= 1);
	/* NAT class: the server sees each node at its own address (no local
	 * addresses are reported here), and both ports agree. */
	assert_int_equal(N[0].dev.nat, WIRE_NAT_EIM);
	/* Probes keep both paths alive on a link that loses nothing: none of
	 * them may be counted as a lost datagram. */
	ping(0, 1);
	advance(30);
	assert_int_equal(peer_of(0, 1)->stats.lost, 0);
	assert_int_equal(peer_of(1, 0)->stats.lost, 0);
}

/* The direct path is cut: the session comes up through the relay; when the
 * path heals, the peers move to it within seconds. */
static void relay_then_direct(void **state)
{
	uint64_t before;

	(void)state;
	cut = true; /* before anything: registering already introduces peers */
	start_all(true);
	ping(0, 1);
	advance(1);
	assert_true(yip_peer_established(peer_of(0, 1), now));
	assert_true(relayed(0, 1));
	assert_true(relayed(1, 0));
	before = N[1].packets;
	ping(0, 1);
	advance(0.2);
	assert_int_equal(N[1].packets, before + 1);
	assert_true(S.stats.relayed_dgrams > 0);
	advance(5);
	assert_true(relayed(0, 1)); /* still cut */
	cut = false;
	advance(3);
	assert_false(relayed(0, 1));
	assert_false(relayed(1, 0));
	before = N[1].packets;
	ping(0, 1);
	advance(0.2);
	assert_int_equal(N[1].packets, before + 1);
}

/* C lists B but B does not list C: C learns nothing about B. */
static void lookup_needs_consent(void **state)
{
	const struct yip_peer *cb;

	(void)state;
	start_all(true);
	ping(2, 1);
	advance(2);
	cb = peer_of(2, 1);
	assert_false(yip_peer_established(cb, now));
	assert_int_equal(cb->n_paths, 0); /* no address was handed over */
	assert_true(N[2].dev.servers[0].unknowns >= 1);
	assert_true(N[1].dev.servers[0].asks >= 1);
	/* C keeps asking, more and more slowly: 2, 4, 8 ... 60 s apart. */
	uint64_t before = N[2].dev.servers[0].lookups;
	advance(180);
	uint64_t asked = N[2].dev.servers[0].lookups - before;
	print_message("%llu lookups in 180 s after an UNKNOWN\n", (unsigned long long)asked);
	assert_true(asked >= 3 && asked <= 8);
}

/* A relay datagram with a wrong token, from a node to one that never
 * accepted it, or forged towards a node: all refused and counted. */
static void relay_refusals(void **state)
{
	uint8_t d[WIRE_RELAY_HDR + WIRE_DATA_MIN + 8] = {0};
	struct yip_device_info di;
	const struct yip_server *sc;
	uint32_t b_id;

	(void)state;
	start_all(true);
	sc = &N[2].dev.servers[0];
	b_id = N[1].dev.servers[0].relay_id;
	/* C with a made-up token */
	wire_relay_put(d, WIRE_RELAY_TO_SERVER, sc->token ^ 1, b_id);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &N[2].addr, d, sizeof(d));
	assert_int_equal(S.drops[RDV_DROP_RELAY_TOKEN], 1);
	/* C with its own token, to B, which never accepted it */
	wire_relay_put(d, WIRE_RELAY_TO_SERVER, sc->token, b_id);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &N[2].addr, d, sizeof(d));
	assert_int_equal(S.drops[RDV_DROP_RELAY_NOT_ALLOWED], 1);
	/* C's token from A's address */
	rdv_rx(&S, now, RDV_SOCK_MAIN, &N[0].addr, d, sizeof(d));
	assert_int_equal(S.drops[RDV_DROP_RELAY_SOURCE], 1);
	assert_int_equal(srv_n, 0); /* nothing forwarded */
	/* A "delivery" to B that does not come from the server */
	wire_relay_put(d, WIRE_RELAY_FROM_SERVER, N[1].dev.servers[0].token, 5);
	pair_rx(&N[1], now, &N[2].addr, d, sizeof(d));
	yip_device_info(&N[1].dev, &di);
	assert_int_equal(di.drops[YIP_DROP_BAD_RELAY], 1);
	/* ... or comes from it with another token */
	wire_relay_put(d, WIRE_RELAY_FROM_SERVER, N[1].dev.servers[0].token + 1, 5);
	pair_rx(&N[1], now, &srv_addr[0], d, sizeof(d));
	yip_device_info(&N[1].dev, &di);
	assert_int_equal(di.drops[YIP_DROP_BAD_RELAY], 2);
}

/* Drops of node i's engine. */
static uint64_t drops_of(int i, enum yip_drop d)
{
	return N[i].dev.drops[d];
}

/*
 * Sends B n Inits that pass mac1 and look relayed by the server: B's
 * relay token, which travels in the clear, in front, and the server's
 * address as their source, as anyone on the path between B and the server
 * can make them. Relay ids from id (each its own, or all the same). Their
 * Noise message is garbage: each that reaches Diffie-Hellman fails there
 * (handshake_failed), one X25519 each.
 */
static void forge_relayed_inits(unsigned n, uint32_t id, bool same_id)
{
	uint8_t d[WIRE_RELAY_HDR + WIRE_INIT_LEN], key[YIP_KEY_LEN];

	wire_mac1_key(key, N[1].dev.public_key);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *init = d + WIRE_RELAY_HDR;

		wire_relay_put(d, WIRE_RELAY_FROM_SERVER, N[1].dev.servers[0].token,
		               same_id ? id : id + i);
		memset(init, 0x77, WIRE_INIT_LEN);
		wire_init_put(init, 5000 + i);
		wire_init_mac1_put(init, key);
		pair_rx(&N[1], now, &srv_addr[RDV_SOCK_MAIN], d, sizeof(d));
	}
}

/* B's Cookies in its queue that go back through the server to relay ids
 * id .. id + n - 1. */
static unsigned cookies_relayed(uint32_t id, unsigned n)
{
	unsigned found = 0;

	for (unsigned k = 0; k < N[1].nout; k++) {
		const struct pair_dgram *o = &N[1].out[k];
		struct wire_relay m;

		if (yip_sockaddr_eq(&o->to, &srv_addr[RDV_SOCK_MAIN]) &&
		    wire_relay_get(&m, o->buf, o->len) && m.dir == WIRE_RELAY_TO_SERVER &&
		    m.token == N[1].dev.servers[0].token && m.relay_id - id < n &&
		    wire_classify(m.payload, m.len) == WIRE_COOKIE)
			found++;
	}
	return found;
}

/*
 * Relayed Inits meet the same defences as direct ones. Forged relayed
 * Inits past YIP_INIT_LOAD a second get a Cookie through the server, not
 * Diffie-Hellman; one relay path (server and relay id) gets the budget of
 * one source; and A, whose only way to B is the relay, completes its
 * handshake while the flood goes on, with the Cookie that came back
 * through the server and a mac2 bound to its relay path.
 */
static void relayed_init_flood(void **state)
{
	const unsigned extra = 300;
	uint64_t dh, load, limited;
	uint64_t end;

	(void)state;
	/* Both get the introduction at once and both send Inits; the smaller
	 * key keeps the initiator role (glare). Make it A's, so that B, under
	 * the flood, is the one that answers, with a Cookie. */
	{
		uint8_t pa[YIP_KEY_LEN], pb[YIP_KEY_LEN], t[YIP_KEY_LEN];

		yip_key_public(pa, keys[0]);
		yip_key_public(pb, keys[1]);
		if (memcmp(pa, pb, YIP_KEY_LEN) > 0) {
			memcpy(t, keys[0], YIP_KEY_LEN);
			memcpy(keys[0], keys[1], YIP_KEY_LEN);
			memcpy(keys[1], t, YIP_KEY_LEN);
		}
	}
	cut = true; /* A's only way to B will be the relay */
	server_start(true);
	node_start(1, false);
	advance(1);
	assert_int_equal(N[1].dev.servers[0].state, YIP_SERVER_REGISTERED);
	dh = drops_of(1, YIP_DROP_HANDSHAKE_FAILED);
	load = drops_of(1, YIP_DROP_UNDER_LOAD);
	forge_relayed_inits(YIP_INIT_LOAD + extra, 1000, false);
	print_message("%u forged relayed Inits: %llu reached Diffie-Hellman, %llu answered with a "
	              "Cookie through the server\n",
	              YIP_INIT_LOAD + extra,
	              (unsigned long long)(drops_of(1, YIP_DROP_HANDSHAKE_FAILED) - dh),
	              (unsigned long long)(drops_of(1, YIP_DROP_UNDER_LOAD) - load));
	/* Every one either cost a Diffie-Hellman, the first YIP_INIT_LOAD, or
	 * was answered with a Cookie that goes back through the server. */
	assert_int_equal(drops_of(1, YIP_DROP_HANDSHAKE_FAILED) - dh, YIP_INIT_LOAD);
	assert_int_equal(drops_of(1, YIP_DROP_UNDER_LOAD) - load, extra);
	assert_int_equal(cookies_relayed(1000, YIP_INIT_LOAD + extra), extra);
	run_net(); /* the server drops Cookies for relay ids nobody has */

	/* A comes up and calls B while the flood goes on (200 forged Inits a
	 * second): B asks A for a cookie too, through the relay. */
	node_start(0, false);
	node_start(2, false);
	end = now + 20 * YIP_NS_PER_S;
	while (now < end && !yip_peer_established(peer_of(0, 1), now)) {
		now += 50 * YIP_NS_PER_MS;
		clocks();
		forge_relayed_inits(10, 7000, false);
		for (int i = 0; i < NODES; i++)
			yip_device_timers(&N[i].dev, now);
		rdv_timers(&S, now);
		run_net();
		if (N[0].dev.servers[0].state == YIP_SERVER_REGISTERED &&
		    !peer_of(0, 1)->hs_pending)
			ping(0, 1);
	}
	assert_true(yip_peer_established(peer_of(0, 1), now));
	assert_true(relayed(0, 1));
	assert_true(peer_of(0, 1)->cookie.got != 0); /* a Cookie came, through the relay */
	assert_int_equal(drops_of(1, YIP_DROP_HANDSHAKE_FAILED) - dh, YIP_INIT_LOAD);

	/* Quiet again; then one relay path sends 60 Inits at once: its burst
	 * of 40 reaches Diffie-Hellman, the rest is over its budget. */
	advance(3);
	dh = drops_of(1, YIP_DROP_HANDSHAKE_FAILED);
	limited = drops_of(1, YIP_DROP_RATE_LIMITED);
	forge_relayed_inits(60, 4242, true);
	assert_int_equal(drops_of(1, YIP_DROP_HANDSHAKE_FAILED) - dh, 2 * YIP_INIT_RATE);
	assert_int_equal(drops_of(1, YIP_DROP_RATE_LIMITED) - limited, 60 - 2 * YIP_INIT_RATE);
}

/* Registering as somebody else needs their private key: an Init built with
 * another key registers that other key, never the victim's. A replayed
 * Init is refused. */
static void registration_is_authenticated(void **state)
{
	uint8_t init[WIRE_INIT_LEN];
	union yip_sockaddr evil;
	uint64_t stale;

	(void)state;
	server_start(true);
	node_start(0, false);
	yip_device_timers(&N[0].dev, now);
	assert_true(N[0].nout >= 1 && N[0].out[0].len == WIRE_INIT_LEN);
	memcpy(init, N[0].out[0].buf, WIRE_INIT_LEN);
	run_net();
	advance(0.5);
	assert_int_equal(N[0].dev.servers[0].state, YIP_SERVER_REGISTERED);
	/* The captured Init again, from elsewhere: refused, the node stays where it is. */
	set4(&evil, "203.0.113.66", 4444);
	stale = S.drops[RDV_DROP_STALE_INIT];
	rdv_rx(&S, now, RDV_SOCK_MAIN, &evil, init, sizeof(init));
	assert_int_equal(S.drops[RDV_DROP_STALE_INIT], stale + 1);
	assert_int_equal(srv_n, 0);
	assert_true(yip_sockaddr_eq(&S.lru_head->addr, &N[0].addr));
}

/* A flood of Inits with a valid mac1 from many addresses: past its load the
 * server answers with cookies and does no Diffie-Hellman for them; a real
 * node's retry proves its address with mac2 and registers anyway. */
static void server_under_load(void **state)
{
	uint8_t d[WIRE_INIT_LEN], key[YIP_KEY_LEN];
	union yip_sockaddr src;
	uint64_t failed;

	(void)state;
	server_start(true);
	node_start(0, false);
	wire_mac1_key(key, S.public_key);
	for (unsigned round = 0; round < 4; round++) {
		for (unsigned i = 0; i < S.cfg.init_load + 50; i++) {
			memset(d, 0x42, sizeof(d));
			wire_init_put(d, i);
			wire_init_mac1_put(d, key);
			set4(&src, "198.51.100.200", (uint16_t)(1024 + i));
			src.in4.sin_addr.s_addr = htonl(0x0a000000 | i); /* 10.0.x.y */
			rdv_rx(&S, now, RDV_SOCK_MAIN, &src, d, sizeof(d));
			srv_n = 0; /* the cookies for the flood go nowhere */
		}
		failed = S.drops[RDV_DROP_HANDSHAKE_FAILED];
		advance(1);
		/* The node's Inits cost nothing while it lacks a cookie... */
		assert_int_equal(S.drops[RDV_DROP_HANDSHAKE_FAILED], failed);
	}
	assert_true(S.drops[RDV_DROP_UNDER_LOAD] > 0);
	/* ... and it registered with one, under the same flood. */
	assert_int_equal(N[0].dev.servers[0].state, YIP_SERVER_REGISTERED);
}

/* Sends n Inits that pass mac1 from sources like base (the port varied, and
 * with vary_host the last 64 bits of an IPv6 address too); their Noise is
 * garbage, so each one the budgets let through fails at Diffie-Hellman
 * (handshake_failed). Returns how many did. */
static uint64_t inits_to_dh(const union yip_sockaddr *base, unsigned n, bool vary_host)
{
	uint64_t before = S.drops[RDV_DROP_HANDSHAKE_FAILED];
	uint8_t d[WIRE_INIT_LEN], key[YIP_KEY_LEN];

	wire_mac1_key(key, S.public_key);
	for (unsigned i = 0; i < n; i++) {
		union yip_sockaddr src = *base;

		memset(d, 0x42, sizeof(d));
		wire_init_put(d, 7000 + i);
		wire_init_mac1_put(d, key);
		if (src.sa.sa_family == AF_INET) {
			src.in4.sin_port = htons((uint16_t)(1024 + i));
		} else {
			src.in6.sin6_port = htons((uint16_t)(1024 + i));
			if (vary_host)
				randombytes_buf(src.in6.sin6_addr.s6_addr + 8, 8);
		}
		rdv_rx(&S, now, RDV_SOCK_MAIN, &src, d, sizeof(d));
		srv_n = 0;
	}
	return S.drops[RDV_DROP_HANDSHAKE_FAILED] - before;
}

static void set6(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in6.sin6_family = AF_INET6;
	a->in6.sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &a->in6.sin6_addr), 1);
}

/*
 * The per-source Init budget (20 a second, 40 at once) is one budget per
 * IPv4 address and per IPv6 /64: Inits from 400 addresses of one /64 get
 * as far as Diffie-Hellman no more often than Inits from one IPv4 address,
 * and an IPv4 address counts as one source whether it comes as itself or
 * IPv4-mapped (as a dual-stack socket shows it).
 */
static void init_budget_per_source(void **state)
{
	union yip_sockaddr a;
	uint64_t v4, v6, burst;

	(void)state;
	server_start(true);
	S.cfg.init_load = 1000000; /* no cookies here: the budgets alone */
	burst = 2ULL * S.cfg.init_rate;
	/* The budgets are RDV_INIT_BUCKETS hashed buckets: draw the hash key
	 * again until the five sources below fall in five of them. */
	for (;;) {
		static const char *const ips[] = {
		    "198.51.100.7", "2001:db8:1:2::", "2001:db8:1:3::", "192.0.2.77", "192.0.2.78"};
		uint64_t b[5];
		bool distinct = true;

		randombytes_buf(S.hash_key, sizeof(S.hash_key));
		for (int i = 0; i < 5; i++) {
			uint8_t src[YIP_SOURCE_LEN], h[crypto_shorthash_BYTES];

			if (strchr(ips[i], ':') != NULL)
				set6(&a, ips[i], 1);
			else
				set4(&a, ips[i], 1);
			crypto_shorthash(h, src, yip_sockaddr_source(&a, src), S.hash_key);
			memcpy(&b[i], h, sizeof(b[i]));
			b[i] %= RDV_INIT_BUCKETS;
			for (int j = 0; j < i; j++)
				distinct = distinct && b[j] != b[i];
		}
		if (distinct)
			break;
	}
	set4(&a, "198.51.100.7", 1);
	v4 = inits_to_dh(&a, 400, false);
	set6(&a, "2001:db8:1:2::", 1);
	v6 = inits_to_dh(&a, 400, true);
	print_message("400 Inits reached Diffie-Hellman %llu times from one IPv4 address, %llu "
	              "times from 400 addresses of one /64\n",
	              (unsigned long long)v4, (unsigned long long)v6);
	assert_int_equal(v4, burst);
	assert_int_equal(v6, burst);
	/* Another /64 of the same /48 is another source. */
	set6(&a, "2001:db8:1:3::", 1);
	assert_int_equal(inits_to_dh(&a, 100, true), burst);
	/* 192.0.2.77 as itself and as ::ffff:192.0.2.77: one budget. */
	set4(&a, "192.0.2.77", 1);
	v4 = inits_to_dh(&a, 30, false);
	set6(&a, "::ffff:192.0.2.77", 1);
	v4 += inits_to_dh(&a, 30, false);
	assert_int_equal(v4, burst);
	/* ... and the next address has its own. */
	set6(&a, "::ffff:192.0.2.78", 1);
	assert_int_equal(inits_to_dh(&a, 100, false), burst);
	assert_int_equal(S.stats.handshakes, 0);
}

/* The server restarts and forgets everyone: the nodes notice and register
 * again within 20 s. */
static void server_restart(void **state)
{
	(void)state;
	start_all(true);
	rdv_free(&S);
	server_start(true);
	advance(20);
	for (int i = 0; i < NODES; i++)
		assert_int_equal(N[i].dev.servers[0].state, YIP_SERVER_REGISTERED);
	assert_int_equal(S.n_nodes, NODES);
}

/* Behind NATs, no endpoint anywhere: whatever the pair, every ping gets
 * through within a few seconds, directly where the NATs allow it. */
static void nat_pair(enum nat a, enum nat b, bool want_direct, double within)
{
	nat_of[0] = a;
	nat_of[1] = b;
	start_all(true);
	ping(0, 1);
	advance(within);
	assert_true(yip_peer_established(peer_of(0, 1), now));
	assert_true(N[1].packets >= 1);
	if (want_direct) {
		if (relayed(0, 1) || relayed(1, 0))
			fail_msg("NATs %d and %d: still relayed after %.0f s (nat %u/%u, peer nat "
			         "%u/%u, many-ports tries %u/%u, sockets %u)",
			         a, b, within, N[0].dev.nat, N[1].dev.nat, peer_of(0, 1)->nat,
			         peer_of(1, 0)->nat, peer_of(0, 1)->many_tries,
			         peer_of(1, 0)->many_tries, N[1].socks_opened);
	} else {
		assert_true(relayed(0, 1) && relayed(1, 0));
	}
}

static void nat_port_port(void **state)
{
	(void)state;
	nat_pair(NAT_PORT, NAT_PORT, true, 3);
	assert_int_equal(N[0].dev.nat, WIRE_NAT_EIM);
}

static void nat_full_sym(void **state)
{
	(void)state;
	nat_pair(NAT_FULL, NAT_SYM, true, 3);
	assert_int_equal(N[1].dev.nat, WIRE_NAT_APDM);
}

static void nat_sym_sym(void **state)
{
	(void)state;
	nat_pair(NAT_SYM, NAT_SYM, false, 30);
	assert_string_equal(yip_nat_name(N[0].dev.nat), "per destination");
}

/* Port-restricted against symmetric: only many-ports probing opens it. One
 * attempt succeeds about 98 % of the time; the test allows three (400 s
 * with the backoff between them). */
static void nat_port_sym(void **state)
{
	(void)state;
	nat_pair(NAT_PORT, NAT_SYM, true, 400);
	/* The symmetric side probes from extra sockets (how many before a port
	 * matches is luck: a birthday match can come early) and closes every
	 * one but the one in use. The match may also be its main socket's own
	 * mapping, found by the other side's probes to many ports (a few runs in
	 * a hundred): then none stays open. */
	const struct yip_peer *p = peer_of(1, 0);
	const struct yip_path *t = &p->paths[p->path];
	unsigned in_use = t->kind == YIP_PATH_DIRECT && t->link > 0;

	assert_false(in_use && pair_sock_closed(&N[1], t->link));
	assert_int_equal(N[1].socks_opened - N[1].socks_closed, in_use);
	assert_int_equal(N[0].socks_opened, 0);
}

/* ---- a members-only server -------------------------------------------------------- */

static uint8_t ca_pub[MEMBER_SIGN_PUBLIC], ca_sec[MEMBER_SIGN_SECRET];

static void ca_make(uint8_t seed_byte, uint8_t pub[MEMBER_SIGN_PUBLIC],
                    uint8_t sec[MEMBER_SIGN_SECRET])
{
	uint8_t seed[32];

	memset(seed, seed_byte, sizeof(seed));
	member_ca_keypair(seed, pub, sec);
}

/* A certificate for node i's key (or another key), signed by sec. */
static void cert_for(struct member_cert *c, int i, const uint8_t sec[MEMBER_SIGN_SECRET],
                     const char *network, uint64_t not_before, uint64_t not_after, bool other_key)
{
	struct wire_cert f;
	uint8_t other[YIP_KEY_LEN];

	memset(&f, 0, sizeof(f));
	snprintf(f.network, sizeof(f.network), "%s", network);
	snprintf(f.name, sizeof(f.name), "node %d", i);
	yip_key_public(f.key, keys[i]);
	if (other_key) {
		yip_key_generate(other);
		yip_key_public(f.key, other);
	}
	memset(f.sign_key, 7, sizeof(f.sign_key));
	f.not_before = not_before;
	f.not_after = not_after;
	assert_int_equal(member_cert_sign(c, &f, sec), 0);
}

static void give_cert(int i, const struct member_cert *c)
{
	assert_int_equal(yip_device_set_cert(&N[i].dev, c->raw, c->len), 0);
}

static void members_only_start(const struct member_revocations *revs)
{
	struct rdv_members m = {.revs = revs};

	memcpy(m.ca_public, ca_pub, sizeof(ca_pub));
	snprintf(m.network, sizeof(m.network), "lab");
	rdv_set_members(&S, now, &m);
}

static const char *refused_as(int i)
{
	struct yip_server_info info;

	assert_true(yip_device_server_info(&N[i].dev, 0, now, &info));
	return strcmp(info.state, "refused") == 0 ? info.refused : info.state;
}

/* Members of the network register and meet; a certificate of another CA is
 * refused and the node told why; a revocation list forgets a member at once
 * and keeps it out. */
static void members_only(void **state)
{
	struct member_cert c0, c1, c2;
	struct member_revocations *revs = malloc(sizeof(*revs));
	uint8_t other_pub[MEMBER_SIGN_PUBLIC], other_sec[MEMBER_SIGN_SECRET];
	uint8_t entry[WIRE_REVOKED_ENTRY];

	(void)state;
	assert_non_null(revs);
	ca_make(1, ca_pub, ca_sec);
	ca_make(2, other_pub, other_sec);
	server_start(true);
	members_only_start(NULL);
	cert_for(&c0, 0, ca_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
	cert_for(&c1, 1, ca_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
	cert_for(&c2, 2, other_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
	for (int i = 0; i < NODES; i++)
		node_start(i, false);
	give_cert(0, &c0);
	give_cert(1, &c1);
	give_cert(2, &c2);
	advance(2);
	assert_string_equal(refused_as(0), "registered");
	assert_string_equal(refused_as(1), "registered");
	assert_string_equal(refused_as(2), "wrong_ca");
	assert_int_equal(S.stats.admitted, 2);
	assert_int_equal(S.stats.refused[MEMBER_WRONG_CA], 1);
	assert_true(S.drops[RDV_DROP_NOT_MEMBER] >= 1); /* its REGISTER */
	/* The members meet through the server. */
	ping(0, 1);
	advance(1);
	assert_true(yip_peer_established(peer_of(0, 1), now));
	/* The refused node stays quiet: one retry in 30 s, no reconnect storm. */
	{
		uint64_t hs = S.stats.handshakes;

		advance(30);
		assert_true(S.stats.handshakes - hs <= 1);
		assert_string_equal(refused_as(2), "wrong_ca");
	}
	/* B is revoked: the server forgets it at once, and refuses it when it
	 * comes back. */
	entry[0] = WIRE_REVOKED_KEY;
	yip_key_public(entry + 1, keys[1]);
	assert_int_equal(member_revocations_sign(revs, "lab", 2, UNIX_NOW, entry, 1, ca_sec), 0);
	members_only_start(revs);
	assert_int_equal(S.stats.evicted, 1);
	/* B notices within its REGISTER retries (10 s refresh + 4 s), then
	 * reconnects and is refused. */
	advance(20);
	assert_string_equal(refused_as(1), "revoked");
	assert_true(S.stats.refused[MEMBER_REVOKED] >= 1);
	assert_string_equal(refused_as(0), "registered");
	free(revs);
}

/* Each way a certificate can be wrong is refused and counted under its own
 * verdict; a node with none is told to configure one. */
static void members_only_verdicts(void **state)
{
	struct member_cert c;

	(void)state;
	ca_make(1, ca_pub, ca_sec);
	server_start(true);
	members_only_start(NULL);
	for (int i = 0; i < NODES; i++)
		node_start(i, false);
	/* 0: none. 1: expired. 2: for another key. */
	cert_for(&c, 1, ca_sec, "lab", UNIX_NOW - 86400, UNIX_NOW - 3600, false);
	give_cert(1, &c);
	cert_for(&c, 2, ca_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, true);
	give_cert(2, &c);
	advance(3);
	assert_string_equal(refused_as(0), "no_certificate");
	assert_string_equal(refused_as(1), "expired");
	assert_string_equal(refused_as(2), "key_mismatch");
	assert_true(S.stats.refused[MEMBER_EXPIRED] >= 1);
	assert_true(S.stats.refused[MEMBER_KEY_MISMATCH] >= 1);
	assert_int_equal(S.stats.admitted, 0);
	/* Nobody is registered, so nobody can be looked up or relayed to. */
	assert_int_equal(S.stats.registrations, 0);
	/* Another network, then not yet valid, then valid: each retry (30 s
	 * apart) is judged afresh. */
	cert_for(&c, 0, ca_sec, "other", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
	give_cert(0, &c);
	advance(31);
	assert_string_equal(refused_as(0), "wrong_network");
	cert_for(&c, 0, ca_sec, "lab", UNIX_NOW + 86400, UNIX_NOW + 2 * 86400, false);
	give_cert(0, &c);
	advance(31);
	assert_string_equal(refused_as(0), "not_yet_valid");
	cert_for(&c, 0, ca_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
	give_cert(0, &c);
	advance(31);
	assert_string_equal(refused_as(0), "registered");
	assert_int_equal(S.stats.admitted, 1);
}

/* An open server ignores certificates: nodes that send one register as usual. */
static void open_server_ignores_certs(void **state)
{
	struct member_cert c;

	(void)state;
	ca_make(1, ca_pub, ca_sec);
	server_start(true);
	for (int i = 0; i < NODES; i++)
		node_start(i, false);
	cert_for(&c, 0, ca_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
	give_cert(0, &c);
	advance(1);
	for (int i = 0; i < NODES; i++)
		assert_string_equal(refused_as(i), "registered");
	assert_int_equal(S.drops[RDV_DROP_BAD_CTRL], 0);
}

/* ---- nodes in miniature (tests/lib/rdvclient.h) ------------------------------------- */

#define CLIENTS           320
#define MAX_ASKS_PER_NODE 16 /* the server's MAX_ASKS */
#define CHACHA            YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305)

static struct rdvc cl[CLIENTS];

/* The wall clock of the clients (ns since the epoch). */
static uint64_t client_wall(void)
{
	return wall_at(now);
}

/* Client c at ip:port with a fresh key. */
static void client_at(struct rdvc *c, const char *ip, uint16_t port)
{
	rdvc_init(c, NULL, ip, port);
}

/* Client c sends an Init from its address; true if the server's Resp
 * completed the handshake. What the server sent stays in srv_out. */
static bool client_connect(struct rdvc *c)
{
	uint8_t init[WIRE_INIT_LEN];
	unsigned before = srv_n;

	assert_int_equal(rdvc_init_msg(c, srv_pub, client_wall(), CHACHA, init), WIRE_INIT_LEN);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &c->addr, init, sizeof(init));
	for (unsigned k = before; k < srv_n; k++)
		if (yip_sockaddr_eq(&srv_out[k].to, &c->addr) &&
		    rdvc_resp(c, srv_out[k].buf, srv_out[k].len))
			return true;
	return false;
}

/* Client c sends m sealed under its session, on socket sock, from src
 * (NULL: its own address). */
static void client_send(struct rdvc *c, unsigned sock, const union yip_sockaddr *src,
                        const struct wire_ctrl *m)
{
	uint8_t d[WIRE_DATA_MIN + WIRE_CTRL_MAX];
	size_t len = rdvc_seal_ctrl(c, m, d);

	assert_true(len > 0);
	rdv_rx(&S, now, sock, src != NULL ? src : &c->addr, d, len);
}

/* The first Ctrl of kind `kind` the server sent since srv_out[from] that
 * client c opens (whatever address it went to); false if none. */
static bool client_got(struct rdvc *c, unsigned from, uint8_t kind, struct wire_ctrl *out)
{
	struct wire_ctrl m;

	for (unsigned k = from; k < srv_n; k++)
		if (rdvc_open(c, srv_out[k].buf, srv_out[k].len, &m) && m.kind == kind) {
			if (out != NULL)
				*out = m;
			return true;
		}
	return false;
}

/* A certificate of the CA of ca_sec for any key. */
static void cert_for_key(struct member_cert *c, const uint8_t key[YIP_KEY_LEN], const char *name)
{
	struct wire_cert f;

	memset(&f, 0, sizeof(f));
	snprintf(f.network, sizeof(f.network), "lab");
	snprintf(f.name, sizeof(f.name), "%s", name);
	memcpy(f.key, key, YIP_KEY_LEN);
	memset(f.sign_key, 7, sizeof(f.sign_key));
	f.not_before = UNIX_NOW - 3600;
	f.not_after = UNIX_NOW + 86400;
	assert_int_equal(member_cert_sign(c, &f, ca_sec), 0);
}

/* Client c, connected, presents its certificate and registers; true if
 * the server admitted it (REGISTERED came back). */
static bool client_join(struct rdvc *c)
{
	struct member_cert cert;
	struct wire_ctrl m = {.kind = WIRE_CTRL_MEMBER};
	struct wire_ctrl r = {.kind = WIRE_CTRL_REGISTER};
	unsigned before = srv_n;

	cert_for_key(&cert, c->pub, "client");
	m.cert = cert.raw;
	m.cert_len = (uint16_t)cert.len;
	client_send(c, RDV_SOCK_MAIN, NULL, &m);
	client_send(c, RDV_SOCK_MAIN, NULL, &r);
	return client_got(c, before, WIRE_CTRL_REGISTERED, NULL);
}

/* 50 ms pass: the pair nodes started and the server run their timers,
 * and everything sent is delivered. */
static void step(void)
{
	now += 50 * YIP_NS_PER_MS;
	clocks();
	for (int i = 0; i < NODES; i++)
		if (started[i])
			yip_device_timers(&N[i].dev, now);
	rdv_timers(&S, now);
	run_net();
}

/*
 * Outsiders cannot fill a members-only server. 300 of them, from one IPv4
 * address, handshake as fast as its budget lets them (20 a second) and
 * keep their sessions busy with a WHOAMI every 5 s, and any that was
 * forgotten handshakes again at once: they hold no more than the guests'
 * share of max_nodes = 300, however long they go on, and a member that
 * comes meanwhile gets a place and is admitted.
 */
static void members_only_outsiders_cannot_fill(void **state)
{
	const unsigned n_out = 300;
	size_t most = 0;
	struct member_cert c0;
	uint64_t end;
	unsigned next = 0;

	(void)state;
	ca_make(1, ca_pub, ca_sec);
	server_start(true);
	S.cfg.max_nodes = 300;
	members_only_start(NULL);
	for (unsigned i = 0; i < n_out; i++)
		client_at(&cl[i], "198.51.100.66", (uint16_t)(10000 + i));
	/* Two minutes of it; the member comes after one. */
	end = now + 120 * YIP_NS_PER_S;
	while (now < end) {
		/* One outsider handshakes (again) per step: 20 a second, its
		 * address's budget. */
		struct wire_ctrl w = {.kind = WIRE_CTRL_WHOAMI};

		client_connect(&cl[next++ % n_out]);
		/* Every outsider with a session says WHOAMI every 5 s (100 steps). */
		for (unsigned i = next % 100; i < n_out; i += 100)
			if (cl[i].up) {
				unsigned k0 = srv_n;

				w.id = i;
				client_send(&cl[i], RDV_SOCK_MAIN, NULL, &w);
				if (!client_got(&cl[i], k0, WIRE_CTRL_YOUARE, NULL))
					cl[i].up = false; /* forgotten */
			}
		if (S.n_nodes > most)
			most = S.n_nodes;
		assert_true(S.n_guests <= rdv_max_guests(&S));
		if (now >= end - 60 * YIP_NS_PER_S && !started[0]) {
			print_message("outsiders hold %zu of %zu places (guests at most %zu)\n",
			              S.n_nodes, S.cfg.max_nodes, rdv_max_guests(&S));
			node_start(0, false);
			cert_for(&c0, 0, ca_sec, "lab", UNIX_NOW - 3600, UNIX_NOW + 86400, false);
			give_cert(0, &c0);
			started[0] = true;
		}
		step();
	}
	print_message("at most %zu nodes at once; guests evicted %llu, expired %llu\n", most,
	              (unsigned long long)S.stats.guests_evicted,
	              (unsigned long long)S.stats.guests_expired);
	assert_true(most <= rdv_max_guests(&S) + 1);
	assert_string_equal(refused_as(0), "registered");
	assert_int_equal(S.stats.admitted, 1);
	assert_int_equal(S.drops[RDV_DROP_FULL], 0);
	for (unsigned i = 0; i < n_out; i++)
		rdvc_wipe(&cl[i]);
}

/*
 * When the table is full, a newcomer's handshake makes room by forgetting
 * the oldest guest, never a member: 290 members and 10 outsiders fill
 * max_nodes = 300; another member gets the oldest outsider's place and is
 * admitted, and so does another outsider (as a guest); once members hold
 * every place, a newcomer is refused (full).
 */
static void members_only_guests_make_room(void **state)
{
	char ip[32];

	(void)state;
	ca_make(1, ca_pub, ca_sec);
	server_start(true);
	S.cfg.max_nodes = 300;
	members_only_start(NULL);
	for (unsigned i = 0; i < 290; i++) {
		snprintf(ip, sizeof(ip), "10.1.%u.%u", i / 200, i % 200 + 1);
		client_at(&cl[i], ip, 51820);
		assert_true(client_connect(&cl[i]));
		assert_true(client_join(&cl[i]));
		srv_n = 0;
		now += YIP_NS_PER_MS;
	}
	for (unsigned i = 290; i < 300; i++) {
		snprintf(ip, sizeof(ip), "198.51.100.%u", i - 280);
		client_at(&cl[i], ip, 4000);
		assert_true(client_connect(&cl[i]));
		srv_n = 0;
		now += YIP_NS_PER_MS;
	}
	assert_int_equal(S.n_nodes, 300);
	assert_int_equal(S.n_guests, 10);
	/* A member: the first outsider makes room. */
	client_at(&cl[300], "10.2.0.1", 51820);
	assert_true(client_connect(&cl[300]));
	assert_true(client_join(&cl[300]));
	assert_int_equal(S.n_nodes, 300);
	assert_int_equal(S.n_guests, 9);
	assert_int_equal(S.stats.guests_evicted, 1);
	assert_memory_equal(S.guest_head->key, cl[291].pub, YIP_KEY_LEN);
	/* An outsider: the next oldest outsider makes room. */
	client_at(&cl[301], "198.51.100.200", 4000);
	assert_true(client_connect(&cl[301]));
	assert_int_equal(S.n_guests, 9);
	assert_int_equal(S.stats.guests_evicted, 2);
	/* Nine more members take the last guests' places; then the table is
	 * all members, and a newcomer is refused. */
	for (unsigned i = 302; i < 311; i++) {
		snprintf(ip, sizeof(ip), "10.3.0.%u", i - 300);
		client_at(&cl[i], ip, 51820);
		assert_true(client_connect(&cl[i]));
		assert_true(client_join(&cl[i]));
		srv_n = 0;
	}
	assert_int_equal(S.n_guests, 0);
	assert_int_equal(S.n_nodes, 300);
	client_at(&cl[311], "10.3.1.1", 51820);
	assert_false(client_connect(&cl[311]));
	assert_int_equal(S.drops[RDV_DROP_FULL], 1);
	for (unsigned i = 0; i < 312; i++)
		rdvc_wipe(&cl[i]);
}

/* ---- replayed Inits ------------------------------------------------------------------- */

/* secs of time pass for the server alone, a second at a time, its timers
 * run and what it sends thrown away. */
static void server_time(unsigned secs)
{
	for (unsigned i = 0; i < secs; i++) {
		now += YIP_NS_PER_S;
		rdv_clock(&S, now, wall_at(now) / YIP_NS_PER_S);
		rdv_timers(&S, now);
		srv_n = 0;
	}
}

/* Bytes the server sends when datagram d (len bytes) arrives from src;
 * what it sent stays in srv_out. */
static size_t bytes_back(const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	static uint8_t copy[RDV_MAX_DGRAM];
	size_t total = 0;

	srv_n = 0;
	memcpy(copy, d, len);
	rdv_rx(&S, now, RDV_SOCK_MAIN, src, copy, len);
	for (unsigned k = 0; k < srv_n; k++)
		total += srv_out[k].len;
	return total;
}

/* The plain datagram d (len bytes), obfuscated in place; its new length. */
static size_t wrap(uint8_t *d, size_t len, size_t cap)
{
	size_t n = obf_wrap(&obf_k, d, len, cap, false);

	assert_true(n > 0);
	return n;
}

/* What the server sent in srv_out[k], opened with the key, into out. */
static size_t unwrap(unsigned k, uint8_t *out)
{
	size_t n = 0;

	assert_int_equal(obf_open(&obf_k, srv_out[k].buf, srv_out[k].len, out, &n,
	                          WIRE_RELAY_FROM_SERVER, false),
	                 OBF_OK);
	return n;
}

/*
 * A server with obf_psk must be silent to a replayed Init at any delay. A
 * censor records a node's first datagram (its obfuscated Init) and sends
 * it again later: right away, after the server forgot the node (61 s), and
 * long after (up to 1000 s). Not one byte comes back; a fresh Init of the
 * same key is answered as before.
 */
static void replayed_init_gets_nothing(void **state)
{
	static const unsigned at[] = {0, 61, 90, 119, 121, 200, 1000};
	uint8_t rec[1300], d[1300], plain[1300];
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER};
	struct rdvc *c = &cl[0];
	size_t rec_len, len;
	uint64_t start;

	(void)state;
	srv_obf = true;
	server_start(true);
	client_at(c, "192.0.2.50", 51820);
	assert_int_equal(rdvc_init_msg(c, srv_pub, client_wall(), CHACHA, rec), WIRE_INIT_LEN);
	rec_len = wrap(rec, WIRE_INIT_LEN, sizeof(rec));
	/* The first time it is answered, and the node registers. */
	assert_true(bytes_back(&c->addr, rec, rec_len) > 0);
	assert_int_equal(srv_n, 1);
	len = unwrap(0, plain);
	assert_true(rdvc_resp(c, plain, len));
	len = wrap(d, rdvc_seal_ctrl(c, &reg, d), sizeof(d));
	assert_true(bytes_back(&c->addr, d, len) > 0);
	len = unwrap(0, plain);
	assert_true(rdvc_open(c, plain, len, &reg) && c->registered);
	assert_int_equal(S.n_nodes, 1);
	/* Then never again. */
	start = now;
	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		server_time((unsigned)((start + at[i] * YIP_NS_PER_S - now) / YIP_NS_PER_S));
		if (at[i] > 60)
			assert_int_equal(S.n_nodes, 0); /* forgotten */
		len = bytes_back(&c->addr, rec, rec_len);
		print_message("the Init replayed after %4u s: %zu bytes back\n", at[i], len);
		assert_int_equal(len, 0);
	}
	assert_int_equal(S.drops[RDV_DROP_STALE_INIT] + S.drops[RDV_DROP_OLD_INIT],
	                 sizeof(at) / sizeof(at[0]));
	assert_true(S.drops[RDV_DROP_OLD_INIT] >= 3); /* 121, 200 and 1000 s */
	assert_int_equal(S.n_seen, 0); /* its timestamp left the window: nothing kept for it */
	/* A new Init of the same key is answered. */
	assert_int_equal(rdvc_init_msg(c, srv_pub, client_wall(), CHACHA, d), WIRE_INIT_LEN);
	len = wrap(d, WIRE_INIT_LEN, sizeof(d));
	assert_true(bytes_back(&c->addr, d, len) > 0);
	len = unwrap(0, plain);
	assert_true(rdvc_resp(c, plain, len));
	rdvc_wipe(c);
}

/*
 * An Init whose timestamp is more than 120 s from the server's clock, one
 * way or the other, is refused even from a key the server never saw (the
 * Init of a node the server forgot, or knew before it restarted); within
 * the window it is answered.
 */
static void old_init_refused(void **state)
{
	static const struct {
		int64_t off_s; /* the timestamp, from the server's clock */
		bool answered;
	} cases[] = {{-121, false}, {121, false}, {-1000, false}, {-100, true}, {100, true}};
	uint8_t init[WIRE_INIT_LEN];

	(void)state;
	server_start(true);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rdvc *c = &cl[i];
		int64_t ts = (int64_t)wall_at(now) + cases[i].off_s * (int64_t)YIP_NS_PER_S;
		char ip[32];

		snprintf(ip, sizeof(ip), "192.0.2.%u", 60 + i);
		client_at(c, ip, 51820);
		assert_int_equal(rdvc_init_msg(c, srv_pub, (uint64_t)ts, CHACHA, init),
		                 WIRE_INIT_LEN);
		assert_int_equal(bytes_back(&c->addr, init, sizeof(init)) > 0, cases[i].answered);
		rdvc_wipe(c);
	}
	assert_int_equal(S.drops[RDV_DROP_OLD_INIT], 3);
	assert_int_equal(S.stats.handshakes, 2);
}

/*
 * The memory of forgotten nodes' timestamps is bounded (seen_max, 4 here).
 * Six nodes are forgotten: the two oldest timestamps do not fit, and the
 * floor rises to the newer of them, so a replay of either is refused all
 * the same (init_floor), as is one of a node remembered (stale_init);
 * fresh Inits, from those nodes or others, are answered.
 */
static void replay_memory_overflows_safely(void **state)
{
	uint8_t rec[6][WIRE_INIT_LEN], init[WIRE_INIT_LEN];
	char ip[32];

	(void)state;
	server_start(true);
	S.cfg.seen_max = 4;
	for (unsigned i = 0; i < 6; i++) {
		snprintf(ip, sizeof(ip), "192.0.2.%u", 70 + i);
		client_at(&cl[i], ip, 51820);
		assert_int_equal(rdvc_init_msg(&cl[i], srv_pub, client_wall(), CHACHA, rec[i]),
		                 WIRE_INIT_LEN);
		assert_true(bytes_back(&cl[i].addr, rec[i], WIRE_INIT_LEN) > 0);
		server_time(1);
	}
	server_time(61);
	assert_int_equal(S.n_nodes, 0);
	assert_int_equal(S.n_seen, 4);
	assert_int_equal(S.stats.seen_overflows, 2);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(bytes_back(&cl[i].addr, rec[i], WIRE_INIT_LEN), 0);
	assert_int_equal(S.drops[RDV_DROP_INIT_FLOOR], 2);
	assert_int_equal(S.drops[RDV_DROP_STALE_INIT], 4);
	for (unsigned i = 0; i < 7; i++) {
		if (i == 6)
			client_at(&cl[i], "192.0.2.99", 51820);
		assert_int_equal(rdvc_init_msg(&cl[i], srv_pub, client_wall(), CHACHA, init),
		                 WIRE_INIT_LEN);
		assert_true(bytes_back(&cl[i].addr, init, WIRE_INIT_LEN) > 0);
		rdvc_wipe(&cl[i]);
	}
	assert_int_equal(S.n_nodes, 7);
	assert_int_equal(S.n_seen, 0); /* known again: the nodes hold their timestamps */
}

/* ---- addresses: nothing goes where a node has not shown it is ------------------------- */

/* Datagrams sent to and received from one address, in bytes as on the wire. */
struct tally {
	union yip_sockaddr at;
	uint64_t in, out;
};

/* rdv_rx of d (len bytes) on sock from src, and what the server sent to
 * t->at counted (srv_out is left as it is). */
static void rx_counted(struct tally *t, unsigned sock, const union yip_sockaddr *src,
                       const uint8_t *d, size_t len)
{
	unsigned before = srv_n;

	if (yip_sockaddr_eq(src, &t->at))
		t->in += len;
	rdv_rx(&S, now, sock, src, d, len);
	for (unsigned k = before; k < srv_n; k++)
		if (yip_sockaddr_eq(&srv_out[k].to, &t->at))
			t->out += srv_out[k].len;
}

/* Client c's message m, sealed, sent on sock from src and counted. */
static void client_send_counted(struct tally *t, struct rdvc *c, unsigned sock,
                                const union yip_sockaddr *src, const struct wire_ctrl *m)
{
	uint8_t d[WIRE_DATA_MIN + WIRE_CTRL_MAX];
	size_t len = rdvc_seal_ctrl(c, m, d);

	assert_true(len > 0);
	rx_counted(t, sock, src, d, len);
}

/* How many Ctrls of kind `kind` for client c went to a since srv_out[from]. */
static unsigned got_at(struct rdvc *c, unsigned from, uint8_t kind, const union yip_sockaddr *a)
{
	struct wire_ctrl m;
	unsigned n = 0;

	for (unsigned k = from; k < srv_n; k++)
		if (yip_sockaddr_eq(&srv_out[k].to, a) &&
		    rdvc_open(c, srv_out[k].buf, srv_out[k].len, &m) && m.kind == kind)
			n++;
	return n;
}

static struct rdv_node *node_of(const struct rdvc *c)
{
	for (struct rdv_node *n = S.lru_head; n != NULL; n = n->lru_next)
		if (memcmp(n->key, c->pub, YIP_KEY_LEN) == 0)
			return n;
	return NULL;
}

/* m and m2 registered and introduced to each other (they may relay). */
static void two_introduced(struct rdvc *m, struct rdvc *m2)
{
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER},
	                 look = {.kind = WIRE_CTRL_LOOKUP, .id = 1};
	struct wire_ctrl ask = {0}, ans = {.kind = WIRE_CTRL_ANSWER, .flags = WIRE_CTRL_ACCEPT};
	unsigned k0;

	client_at(m, "192.0.2.10", 1000);
	client_at(m2, "192.0.2.11", 1000);
	assert_true(client_connect(m) && client_connect(m2));
	k0 = srv_n;
	client_send(m, RDV_SOCK_MAIN, NULL, &reg);
	client_send(m2, RDV_SOCK_MAIN, NULL, &reg);
	assert_true(client_got(m, k0, WIRE_CTRL_REGISTERED, NULL) && m->registered);
	assert_true(client_got(m2, k0, WIRE_CTRL_REGISTERED, NULL) && m2->registered);
	k0 = srv_n;
	memcpy(look.key, m2->pub, YIP_KEY_LEN);
	client_send(m, RDV_SOCK_MAIN, NULL, &look);
	assert_true(client_got(m2, k0, WIRE_CTRL_ASK, &ask));
	ans.id = ask.id;
	memcpy(ans.key, m->pub, YIP_KEY_LEN);
	k0 = srv_n;
	client_send(m2, RDV_SOCK_MAIN, NULL, &ans);
	assert_true(client_got(m, k0, WIRE_CTRL_INTRO, NULL));
	assert_true(client_got(m2, k0, WIRE_CTRL_INTRO, NULL));
	srv_n = 0;
}

/* A Relay datagram from m to m2 (payload bytes of 0x55) from src; true if
 * the server forwarded it to m2's own address, false if it dropped it.
 * Fails if it went anywhere else. */
static bool relay_one(struct tally *t, struct rdvc *m, struct rdvc *m2,
                      const union yip_sockaddr *src, size_t payload)
{
	uint8_t d[WIRE_RELAY_HDR + 1400];
	unsigned k0 = srv_n;

	wire_relay_put(d, WIRE_RELAY_TO_SERVER, m->token, m2->relay_id);
	memset(d + WIRE_RELAY_HDR, 0x55, payload);
	rx_counted(t, RDV_SOCK_MAIN, src, d, WIRE_RELAY_HDR + payload);
	if (srv_n == k0)
		return false;
	assert_int_equal(srv_n, k0 + 1);
	assert_true(yip_sockaddr_eq(&srv_out[k0].to, &m2->addr));
	return true;
}

/*
 * Reflection through the server. An attacker holds two nodes' keys (m and
 * m2, introduced, so they may relay to each other) and sends m2's
 * authenticated datagrams from a victim's address: REGISTERs, WHOAMIs on
 * both ports, LOOKUPs, a guess at the challenge's answer. None of it moves
 * m2: answers, introductions and relayed datagrams keep going to m2's own
 * address; the victim gets only challenges, and never more bytes than the
 * attacker sent it from there.
 */
static void spoofed_source_redirects_nothing(void **state)
{
	struct rdvc *m = &cl[0], *m2 = &cl[1];
	struct tally v = {0};
	union yip_sockaddr own;
	struct rdv_node *n;
	unsigned k0;

	(void)state;
	server_start(true);
	two_introduced(m, m2);
	own = m2->addr;
	set4(&v.at, "203.0.113.99", 53);
	for (unsigned round = 0; round < 50; round++) {
		struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER};
		struct wire_ctrl who = {.kind = WIRE_CTRL_WHOAMI, .id = round};
		struct wire_ctrl look = {.kind = WIRE_CTRL_LOOKUP, .id = 100 + round};
		struct wire_ctrl ok = {.kind = WIRE_CTRL_PROBE_OK, .nonce = 12345 + round};

		k0 = srv_n;
		client_send_counted(&v, m2, RDV_SOCK_MAIN, &v.at, &reg);
		assert_int_equal(got_at(m2, k0, WIRE_CTRL_REGISTERED, &own), 1);
		k0 = srv_n;
		client_send_counted(&v, m2, RDV_SOCK_MAIN, &v.at, &who);
		client_send_counted(&v, m2, RDV_SOCK_ALT, &v.at, &who);
		assert_int_equal(got_at(m2, k0, WIRE_CTRL_YOUARE, &own), 2);
		k0 = srv_n;
		memcpy(look.key, m->pub, YIP_KEY_LEN);
		client_send_counted(&v, m2, RDV_SOCK_MAIN, &v.at, &look);
		/* (Until m2 has 16 questions open: m never answers them.) */
		assert_int_equal(got_at(m, k0, WIRE_CTRL_ASK, &m->addr), round < 16);
		client_send_counted(&v, m2, RDV_SOCK_MAIN, &v.at, &ok);
		k0 = 0;
		/* m relays to m2, and m2 (its real self) to m. */
		assert_true(relay_one(&v, m, m2, &m->addr, 1000));
		assert_true(relay_one(&v, m2, m, &own, 1000));
		/* ... but not from the victim's address. */
		assert_false(relay_one(&v, m2, m, &v.at, 1000));
		/* Every answer went to m2's own address. */
		for (unsigned k = k0; k < srv_n; k++) {
			struct wire_ctrl got;

			if (yip_sockaddr_eq(&srv_out[k].to, &v.at)) {
				assert_true(rdvc_open(m2, srv_out[k].buf, srv_out[k].len, &got));
				assert_int_equal(got.kind,
				                 WIRE_CTRL_PROBE); /* a challenge, nothing else */
			}
		}
		srv_n = 0;
		server_time(0);
		now += 200 * YIP_NS_PER_MS;
	}
	n = node_of(m2);
	assert_non_null(n);
	assert_true(yip_sockaddr_eq(&n->addr, &own));
	print_message("from the victim's address %llu bytes, to it %llu bytes (%llu challenges)\n",
	              (unsigned long long)v.in, (unsigned long long)v.out,
	              (unsigned long long)S.stats.challenges);
	assert_true(v.out <= v.in);
	assert_true(S.stats.challenges >= 1); /* the limit was reached, not avoided */
	assert_int_equal(S.stats.moves, 0);
	assert_true(S.drops[RDV_DROP_CHALLENGE] >= 50);
	assert_true(S.drops[RDV_DROP_RELAY_SOURCE] >= 50);
	rdvc_wipe(m);
	rdvc_wipe(m2);
}

/*
 * Nothing the server sends to an address that has not shown it is a
 * node's is longer than what came from there: with obf_psk a Resp's
 * envelope is drawn no longer than the Init's, whose length is random too.
 */
static void obf_resp_no_longer_than_init(void **state)
{
	uint8_t d[1300];
	unsigned longer = 0;
	char ip[32];

	(void)state;
	srv_obf = true;
	server_start(true);
	for (unsigned i = 0; i < 200; i++) {
		struct rdvc *c = &cl[i];
		size_t len;

		snprintf(ip, sizeof(ip), "10.9.%u.%u", i / 100, i % 100 + 1);
		client_at(c, ip, 4000);
		assert_int_equal(rdvc_init_msg(c, srv_pub, client_wall(), CHACHA, d),
		                 WIRE_INIT_LEN);
		len = wrap(d, WIRE_INIT_LEN, sizeof(d));
		assert_true(bytes_back(&c->addr, d, len) > 0);
		assert_int_equal(srv_n, 1);
		longer += srv_out[0].len > len;
		rdvc_wipe(c);
	}
	assert_int_equal(S.stats.handshakes, 200);
	assert_int_equal(longer, 0);
}

/* A node's LOOKUPs are limited (32 at once, then 10 a second): each one
 * costs the server an ASK or an answer. */
static void lookups_limited_per_node(void **state)
{
	struct rdvc *m = &cl[0];
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER}, look = {.kind = WIRE_CTRL_LOOKUP};
	unsigned answered = 0;

	(void)state;
	server_start(true);
	client_at(m, "192.0.2.10", 1000);
	assert_true(client_connect(m));
	client_send(m, RDV_SOCK_MAIN, NULL, &reg);
	srv_n = 0;
	for (unsigned i = 0; i < 100; i++) {
		look.id = i;
		randombytes_buf(look.key, sizeof(look.key));
		client_send(m, RDV_SOCK_MAIN, NULL, &look);
		answered += client_got(m, 0, WIRE_CTRL_UNKNOWN, NULL);
		srv_n = 0;
	}
	assert_int_equal(answered, 32);
	assert_int_equal(S.drops[RDV_DROP_LOOKUP_RATE], 68);
	now += YIP_NS_PER_S;
	for (unsigned i = 0; i < 20; i++) {
		client_send(m, RDV_SOCK_MAIN, NULL, &look);
		answered += client_got(m, 0, WIRE_CTRL_UNKNOWN, NULL);
		srv_n = 0;
	}
	assert_int_equal(answered, 42);
	rdvc_wipe(m);
}

/* A's NAT gives it another port (a reboot, a conntrack flush): mappings
 * get new ports and forget whom they sent to. */
static void nat_rebind(int i)
{
	unsigned kept = 0;

	for (unsigned k = 0; k < n_maps; k++)
		if (maps[k].node == i)
			maps[k].port = (uint16_t)(maps[k].port + 1000);
	for (unsigned c = 0; c < n_contacts; c++)
		if (maps[contacts[c].map].node != i)
			contacts[kept++] = contacts[c];
	n_contacts = kept;
}

static struct rdv_node *node_of_key(const uint8_t priv[YIP_KEY_LEN])
{
	uint8_t pub[YIP_KEY_LEN];

	yip_key_public(pub, priv);
	for (struct rdv_node *n = S.lru_head; n != NULL; n = n->lru_next)
		if (memcmp(n->key, pub, YIP_KEY_LEN) == 0)
			return n;
	return NULL;
}

/*
 * A real move is followed, after the challenge: A is behind a
 * port-restricted NAT and reaches B only through the relay; A's NAT
 * rebinds. A's next REGISTER comes from the new port; the server
 * challenges it there, A answers, and within two seconds of that first
 * datagram the server sends A's registration, introductions and relayed
 * datagrams to the new address. Pings through the relay work again.
 */
/* Rebinds node i's NAT and lets time pass until the server has moved node
 * a there; seconds from the first datagram the server got from the new
 * port to the move. */
static double rebind_and_follow(int i)
{
	union yip_sockaddr before;
	struct rdv_node *a = node_of_key(keys[i]);
	uint64_t c0 = S.stats.challenges + S.stats.unpaid, seen_at = 0, end;

	assert_non_null(a);
	before = a->addr;
	nat_rebind(i);
	end = now + 30 * YIP_NS_PER_S;
	while (now < end) {
		advance(0.05);
		a = node_of_key(keys[i]);
		assert_non_null(a);
		/* The first datagram from the new port: the server has a move
		 * pending, or challenged it at once. */
		if (seen_at == 0 && (a->move != NULL || S.stats.challenges + S.stats.unpaid > c0))
			seen_at = now;
		if (!yip_sockaddr_eq(&a->addr, &before))
			break;
	}
	assert_true(seen_at != 0 && !yip_sockaddr_eq(&a->addr, &before));
	/* Where A's NAT now maps it. */
	assert_int_equal(ntohs(a->addr.in4.sin_port), ntohs(before.in4.sin_port) + 1000);
	return (double)(now - seen_at) / 1e9;
}

/*
 * A real move is followed, after the challenge: A is behind a
 * port-restricted NAT and reaches B only through the relay; A's NAT
 * rebinds. A's next datagram to the server comes from the new port; the
 * server challenges it there (once the bytes from there pay for it: a
 * REGISTER alone is a little shorter than the challenge), A answers, and
 * within two seconds of that first datagram the server sends A's
 * registration, introductions and relayed datagrams to the new address.
 * Pings through the relay work again.
 */
static void rebinding_followed_after_challenge(void **state)
{
	uint64_t pkts;
	double t;

	(void)state;
	nat_of[0] = NAT_PORT;
	cut = true;
	start_all(true);
	ping(0, 1);
	advance(1);
	assert_true(relayed(0, 1) && relayed(1, 0));
	for (unsigned round = 0; round < 3; round++) {
		t = rebind_and_follow(0);
		print_message("the server followed A to its new port %.2f s after its first "
		              "datagram from there (%llu challenges, %llu waited for bytes)\n",
		              t, (unsigned long long)S.stats.challenges,
		              (unsigned long long)S.stats.unpaid);
		assert_true(t <= 2.0);
		assert_int_equal(S.stats.moves, round + 1);
		assert_int_equal(N[0].dev.servers[0].state, YIP_SERVER_REGISTERED);
		assert_true(
		    yip_sockaddr_eq(&N[0].dev.servers[0].reflexive, &node_of_key(keys[0])->addr));
		/* Relayed both ways again. */
		advance(1);
		pkts = N[1].packets;
		ping(0, 1);
		advance(0.5);
		assert_int_equal(N[1].packets, pkts + 1);
		pkts = N[0].packets;
		ping(1, 0);
		advance(0.5);
		assert_int_equal(N[0].packets, pkts + 1);
		advance(15);
	}
	assert_true(S.stats.unpaid >= 1); /* one REGISTER did not pay for a challenge */
}

/* ---- the timers' cost -------------------------------------------------------------------- */

static uint8_t sink_buf_[RDV_MAX_DGRAM];
static uint64_t sunk;

static uint8_t *sink_buf(void *ctx)
{
	(void)ctx;
	return sink_buf_;
}

static void sink_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	(void)sock;
	(void)to;
	(void)len;
	sunk++;
}

/*
 * 64 000 lookups wait for their answers (4 000 nodes ask 16 each for a
 * node that never answers). A timer run while none is due looks at one of
 * them, not at the 131 072 slots of their table; when they expire, each
 * is looked at once and answered UNKNOWN, and the table shrinks back to
 * its first size.
 */
static void ask_timers_do_only_what_is_due(void **state)
{
	const unsigned askers = 4000, per = MAX_ASKS_PER_NODE;
	struct rdvc *c = calloc(askers + 1, sizeof(*c)), *target;
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER}, look = {.kind = WIRE_CTRL_LOOKUP};
	size_t first_slots;
	uint64_t visits, first_deadline;
	struct rdv_io io = {NULL, sink_buf, sink_send}, saved;
	char ip[32];

	(void)state;
	assert_non_null(c);
	server_start(true);
	S.cfg.init_global = 1000000; /* the budgets are not what this is about */
	S.cfg.init_load = 1000000;
	first_slots = S.asks.mask + 1;
	target = &c[askers];
	client_at(target, "192.0.2.200", 51820);
	assert_true(client_connect(target));
	client_send(target, RDV_SOCK_MAIN, NULL, &reg);
	srv_n = 0;
	memcpy(look.key, target->pub, YIP_KEY_LEN);
	for (unsigned i = 0; i < askers; i++) {
		snprintf(ip, sizeof(ip), "10.%u.%u.%u", 100 + i / 65536, i / 256 % 256, i % 256);
		client_at(&c[i], ip, 4000);
		assert_true(client_connect(&c[i]));
		client_send(&c[i], RDV_SOCK_MAIN, NULL, &reg);
		for (unsigned j = 0; j < per; j++) {
			look.id = j;
			client_send(&c[i], RDV_SOCK_MAIN, NULL, &look);
			srv_n = 0;
		}
		if (i == 0)
			first_deadline = now + 3 * YIP_NS_PER_S;
	}
	assert_int_equal(S.asks.count, askers * per);
	print_message("%zu lookups open in a table of %zu slots\n", S.asks.count, S.asks.mask + 1);
	/* Nothing due: one look. */
	visits = S.stats.ask_visits;
	assert_true(rdv_timers(&S, now) <= first_deadline);
	assert_int_equal(S.stats.ask_visits - visits, 1);
	/* All due: each once, every asker told UNKNOWN, and the table small again. */
	saved = S.io;
	S.io = io;
	now += 3 * YIP_NS_PER_S;
	visits = S.stats.ask_visits;
	rdv_timers(&S, now);
	S.io = saved;
	assert_int_equal(S.stats.ask_visits - visits, askers * per);
	assert_int_equal(sunk, askers * per);
	assert_int_equal(S.asks.count, 0);
	assert_null(S.ask_head);
	print_message("after they expired: %zu slots\n", S.asks.mask + 1);
	assert_int_equal(S.asks.mask + 1, first_slots);
	for (unsigned i = 0; i <= askers; i++)
		rdvc_wipe(&c[i]);
	free(c);
}

/* ---- nodes over the TLS front's streams ---------------------------------------------- */

/* No path of i's to j goes to a synthetic address: nobody was told of one. */
static void no_stream_paths(int i, int j)
{
	const struct yip_peer *p = peer_of(i, j);

	for (unsigned k = 0; k < p->n_paths; k++)
		assert_false(rdv_is_stream_addr(&p->paths[k].addr));
}

/* The server's node for node i's key. */
static const struct rdv_node *srv_node(int i)
{
	uint8_t pub[YIP_KEY_LEN];
	const struct rdv_node *found = NULL;

	yip_key_public(pub, keys[i]);
	for (const struct rdv_node *n = S.lru_head; n != NULL; n = n->lru_next)
		if (memcmp(n->key, pub, YIP_KEY_LEN) == 0)
			found = n;
	assert_non_null(found);
	return found;
}

static const struct rdv_node *srv_node_h(uint64_t h)
{
	const struct rdv_node *n = u64map_get(&S.by_key, h);

	assert_non_null(n);
	return n;
}

/* Pings from each to the other arrive, relayed. */
static void pings_relayed(int a, int b)
{
	uint64_t before_b = N[b].packets, before_a = N[a].packets, relayed_before;

	ping(a, b);
	advance(1);
	assert_true(yip_peer_established(peer_of(a, b), now));
	assert_true(relayed(a, b));
	assert_true(relayed(b, a));
	relayed_before = S.stats.relayed_dgrams;
	before_b = N[b].packets;
	ping(a, b);
	advance(0.2);
	assert_int_equal(N[b].packets, before_b + 1);
	before_a = N[a].packets;
	ping(b, a);
	advance(0.2);
	assert_int_equal(N[a].packets, before_a + 1);
	assert_true(S.stats.relayed_dgrams >= relayed_before + 2);
	no_stream_paths(a, b);
	no_stream_paths(b, a);
}

/* A node on a stream and a node on UDP: registered, introduced, relayed both ways. */
static void stream_and_udp_relay(void **state)
{
	(void)state;
	stream_of[0] = true;
	start_all(true);
	assert_int_equal(srv_node(0)->sock, RDV_SOCK_STREAM);
	assert_true(rdv_is_stream_addr(&srv_node(0)->addr));
	assert_true(srv_node(0)->confirmed);
	assert_int_equal(srv_node(1)->sock, RDV_SOCK_MAIN);
	pings_relayed(0, 1);
	assert_int_equal(lost_stream, 0);
}

/* Two nodes on streams relay to each other through the server. */
static void stream_and_stream_relay(void **state)
{
	(void)state;
	stream_of[0] = stream_of[1] = true;
	start_all(true);
	assert_int_equal(srv_node(0)->sock, RDV_SOCK_STREAM);
	assert_int_equal(srv_node(1)->sock, RDV_SOCK_STREAM);
	pings_relayed(0, 1);
}

/* UDP from 100::/64 is dropped before anything else, and answered with
 * nothing; a stream must come from such an address. */
static void stream_prefix_over_udp_dropped(void **state)
{
	union yip_sockaddr fake, real;
	uint8_t init[WIRE_INIT_LEN];
	struct rdvc *c = &cl[0];

	(void)state;
	server_start(true);
	client_at(c, "192.0.2.50", 51820);
	assert_int_equal(rdvc_init_msg(c, srv_pub, client_wall(), CHACHA, init), WIRE_INIT_LEN);
	rdv_stream_addr(&fake, 7);
	assert_int_equal(bytes_back(&fake, init, sizeof(init)), 0);
	assert_int_equal(S.drops[RDV_DROP_STREAM_SOURCE], 1);
	assert_int_equal(S.stats.handshakes, 0);
	/* A stream from an ordinary address: refused too. */
	srv_n = 0;
	assert_int_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &c->addr, init, sizeof(init)), 0);
	assert_int_equal(srv_n, 0);
	assert_int_equal(S.drops[RDV_DROP_STREAM_SOURCE], 2);
	/* The same Init on its stream is answered there. */
	srv_n = 0;
	assert_int_not_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &fake, init, sizeof(init)), 0);
	assert_int_equal(srv_n, 1);
	assert_int_equal(srv_out[0].sock, RDV_SOCK_STREAM);
	assert_true(yip_sockaddr_eq(&srv_out[0].to, &fake));
	assert_int_equal(rdv_stream_id(&fake), 7);
	real = c->addr;
	assert_int_equal(rdv_stream_id(&real), 0);
	rdvc_wipe(c);
}

/* What rdv_rx says: an accepted Init and an opened Ctrl authenticate; a
 * replayed Init, garbage and a forged Ctrl do not. */
static void rx_says_what_authenticated(void **state)
{
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER};
	uint8_t init[WIRE_INIT_LEN], d[1300], garbage[200];
	union yip_sockaddr st, st2;
	struct rdvc *c = &cl[0];
	uint64_t h;
	size_t len;

	(void)state;
	server_start(true);
	client_at(c, "192.0.2.50", 51820);
	rdv_stream_addr(&st, 1ULL << 32 | 1);
	rdv_stream_addr(&st2, 2ULL << 32 | 1);
	assert_int_equal(rdvc_init_msg(c, srv_pub, client_wall(), CHACHA, init), WIRE_INIT_LEN);
	srv_n = 0;
	h = rdv_rx(&S, now, RDV_SOCK_STREAM, &st, init, sizeof(init));
	assert_int_not_equal(h, 0);
	assert_true(rdvc_resp(c, srv_out[0].buf, srv_out[0].len));
	/* The Init again, on another stream (a replayed first record): nothing. */
	srv_n = 0;
	assert_int_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &st2, init, sizeof(init)), 0);
	assert_int_equal(srv_n, 0);
	randombytes_buf(garbage, sizeof(garbage));
	garbage[0] = 'G';
	assert_int_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &st2, garbage, sizeof(garbage)), 0);
	len = rdvc_seal_ctrl(c, &reg, d);
	d[len - 1] ^= 1;
	assert_int_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &st, d, len), 0);
	assert_int_equal(srv_n, 0);
	len = rdvc_seal_ctrl(c, &reg, d);
	assert_int_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &st, d, len), h);
	assert_int_equal(srv_n, 1); /* REGISTERED, into the stream */
	assert_int_equal(srv_out[0].sock, RDV_SOCK_STREAM);
	assert_true(srv_node_h(h)->confirmed && srv_node_h(h)->registered);
	/* The stream closes: the address is stale, nothing goes there. */
	rdv_stream_gone(&S, &st, h);
	assert_false(srv_node_h(h)->confirmed);
	assert_int_equal(S.stats.streams_gone, 1);
	srv_n = 0;
	len = rdvc_seal_ctrl(c, &reg, d);
	assert_int_equal(rdv_rx(&S, now, RDV_SOCK_STREAM, &st2, d, len), h);
	assert_int_equal(srv_n, 0); /* a challenge costs bytes from there first: none yet paid */
	rdvc_wipe(c);
}

/* A node's stream goes away: the server sends nothing to it, and the node
 * comes back on its next connection and is relayed to again. */
static void stream_gone_then_back(void **state)
{
	union yip_sockaddr old;
	uint64_t before;

	(void)state;
	stream_of[0] = true;
	cut = true;
	start_all(true);
	pings_relayed(0, 1);
	stream_src(0, &old);
	rdv_stream_gone(&S, &old, srv_node(0)->key_hash);
	assert_false(srv_node(0)->confirmed);
	stream_gen[0]++; /* the next connection */
	/* Nothing reaches the old stream, the node's keepalives bring it back. */
	before = lost_stream;
	advance(30);
	assert_int_equal(lost_stream, before);
	assert_true(srv_node(0)->confirmed);
	{
		union yip_sockaddr now_addr;

		stream_src(0, &now_addr);
		assert_true(yip_sockaddr_eq(&srv_node(0)->addr, &now_addr));
	}
	pings_relayed(0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(introduced_direct, setup, teardown),
	    cmocka_unit_test_setup_teardown(relay_then_direct, setup, teardown),
	    cmocka_unit_test_setup_teardown(lookup_needs_consent, setup, teardown),
	    cmocka_unit_test_setup_teardown(relay_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(relayed_init_flood, setup, teardown),
	    cmocka_unit_test_setup_teardown(registration_is_authenticated, setup, teardown),
	    cmocka_unit_test_setup_teardown(server_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(server_under_load, setup, teardown),
	    cmocka_unit_test_setup_teardown(init_budget_per_source, setup, teardown),
	    cmocka_unit_test_setup_teardown(nat_port_port, setup, teardown),
	    cmocka_unit_test_setup_teardown(nat_full_sym, setup, teardown),
	    cmocka_unit_test_setup_teardown(nat_sym_sym, setup, teardown),
	    cmocka_unit_test_setup_teardown(nat_port_sym, setup, teardown),
	    cmocka_unit_test_setup_teardown(members_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(members_only_verdicts, setup, teardown),
	    cmocka_unit_test_setup_teardown(open_server_ignores_certs, setup, teardown),
	    cmocka_unit_test_setup_teardown(members_only_outsiders_cannot_fill, setup, teardown),
	    cmocka_unit_test_setup_teardown(members_only_guests_make_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(replayed_init_gets_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(old_init_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(replay_memory_overflows_safely, setup, teardown),
	    cmocka_unit_test_setup_teardown(spoofed_source_redirects_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(obf_resp_no_longer_than_init, setup, teardown),
	    cmocka_unit_test_setup_teardown(lookups_limited_per_node, setup, teardown),
	    cmocka_unit_test_setup_teardown(rebinding_followed_after_challenge, setup, teardown),
	    cmocka_unit_test_setup_teardown(ask_timers_do_only_what_is_due, setup, teardown),
	    cmocka_unit_test_setup_teardown(stream_and_udp_relay, setup, teardown),
	    cmocka_unit_test_setup_teardown(stream_and_stream_relay, setup, teardown),
	    cmocka_unit_test_setup_teardown(stream_prefix_over_udp_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(rx_says_what_authenticated, setup, teardown),
	    cmocka_unit_test_setup_teardown(stream_gone_then_back, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
