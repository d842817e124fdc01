/*
 * A CA-gated node on an open rendezvous server, asked about by strangers
 * (the outside review's finding 2). Anyone can register with an open
 * server and look a member up by its public key; the member used to turn
 * every introduction into a dynamic peer and start handshakes towards the
 * addresses the asker registered. Here a real server engine, the member B,
 * a real member A and up to 1 100 strangers (tests/lib/rdvclient.h) share a
 * tiny network: every datagram goes at once to the engine at its
 * destination address, and what goes to an address nobody holds is counted
 * as sent to a victim.
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
#include "pair.h"
#include "peer/internal.h"
#include "peer/peer.h"
#include "rdvclient.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"
#include "wire/wire.h"

#define NET       "lab"
#define STRANGERS 1100
#define UNIX_NOW  (PAIR_WALL_START / YIP_NS_PER_S)

static struct rdv_server S;
static uint8_t srv_priv[YIP_KEY_LEN], srv_pub[YIP_KEY_LEN];
static union yip_sockaddr srv_addr;
static uint8_t ca_pub[MEMBER_SIGN_PUBLIC], ca_sec[MEMBER_SIGN_SECRET];

/* Node 0 is A (a member that lists B), node 1 is B (a member that lists
 * nobody, or one stranger's key). */
static struct pair_node N[2];
static uint8_t keys[2][YIP_KEY_LEN];
static struct rdvc *str; /* the strangers */
static uint64_t now;
static uint64_t victim_dgrams, victim_bytes;          /* to addresses nobody holds */
static uint64_t to_strangers, inits_to_strangers;     /* from B to the strangers' own addresses */
static uint64_t to_loopback, to_multicast, to_llocal; /* from B to addresses it must never use */

static void set4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void member_cert(struct member_cert *c, const uint8_t priv[YIP_KEY_LEN], int i)
{
	uint8_t spub[MEMBER_SIGN_PUBLIC], ssec[MEMBER_SIGN_SECRET];
	struct wire_cert f;

	member_sign_keypair(priv, spub, ssec);
	memset(&f, 0, sizeof(f));
	snprintf(f.network, sizeof(f.network), "%s", NET);
	snprintf(f.name, sizeof(f.name), "node %d", i);
	yip_key_public(f.key, priv);
	memcpy(f.sign_key, spub, sizeof(spub));
	f.not_before = UNIX_NOW - 3600;
	f.not_after = UNIX_NOW + 86400;
	f.n_prefixes = 1;
	f.prefixes[0] = (struct yip_cidr){.family = AF_INET, .plen = 32, .addr = {10, 0, 0}};
	f.prefixes[0].addr[3] = (uint8_t)(i + 1);
	assert_int_equal(member_cert_sign(c, &f, ca_sec), 0);
	sodium_memzero(ssec, sizeof(ssec));
}

/* ---- the network ----------------------------------------------------------------- */

static void node_rx(int i, const union yip_sockaddr *from, const uint8_t *d, size_t len)
{
	static uint8_t copy[RDV_MAX_DGRAM];

	memcpy(copy, d, len);
	pair_rx(&N[i], now, from, copy, len);
}

static struct rdvc *stranger_at(const union yip_sockaddr *a)
{
	for (unsigned i = 0; str != NULL && i < STRANGERS; i++)
		if (yip_sockaddr_eq(&str[i].addr, a))
			return &str[i];
	return NULL;
}

/* What the server sends waits here until run_net delivers it. */
#define SRV_Q 4096
struct srv_dgram {
	union yip_sockaddr to;
	size_t len;
	uint8_t buf[RDV_MAX_DGRAM];
};
static struct srv_dgram *srv_q;
static unsigned srv_n;

static uint8_t *io_buf(void *ctx)
{
	(void)ctx;
	assert_true(srv_n < SRV_Q);
	return srv_q[srv_n].buf;
}

static void io_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	(void)sock;
	srv_q[srv_n].to = *to;
	srv_q[srv_n].len = len;
	srv_n++;
}

/* A datagram from the server: to a node, to a stranger (its Resp, then
 * Ctrls it reads and ignores), or to a victim. */
static void srv_out(const struct srv_dgram *d)
{
	struct wire_ctrl m;
	struct rdvc *c;

	for (int i = 0; i < 2; i++)
		if (yip_sockaddr_eq(&d->to, &N[i].addr)) {
			node_rx(i, &srv_addr, d->buf, d->len);
			return;
		}
	if ((c = stranger_at(&d->to)) != NULL) {
		if (c->pending)
			rdvc_resp(c, d->buf, d->len);
		else
			(void)rdvc_open(c, d->buf, d->len, &m);
		return;
	}
	victim_dgrams++;
	victim_bytes += d->len;
}

/* Where a node's datagram goes. */
static void node_out(int i, const struct pair_dgram *d)
{
	enum yip_scope sc = yip_sockaddr_scope(&d->to);

	if (yip_sockaddr_eq(&d->to, &srv_addr)) {
		rdv_rx(&S, now, RDV_SOCK_MAIN, &N[i].addr, d->buf, d->len);
		return;
	}
	for (int j = 0; j < 2; j++)
		if (yip_sockaddr_eq(&d->to, &N[j].addr)) {
			node_rx(j, &N[i].addr, d->buf, d->len);
			return;
		}
	if (i == 1) {
		to_loopback += sc == YIP_SCOPE_LOOPBACK;
		to_multicast += sc == YIP_SCOPE_INVALID;
		to_llocal += sc == YIP_SCOPE_LINK_LOCAL;
	}
	if (stranger_at(&d->to) != NULL) {
		if (i == 1) {
			to_strangers++;
			inits_to_strangers += wire_classify(d->buf, d->len) == WIRE_INIT;
		}
		return;
	}
	victim_dgrams++;
	victim_bytes += d->len;
}

/* Delivers what everyone sent until nobody has anything left to send. */
static void run_net(void)
{
	for (int round = 0; round < 100; round++) {
		bool any = srv_n > 0;

		for (int i = 0; i < 2; i++) {
			unsigned n = N[i].nout;

			pair_flush(&N[i]);
			for (unsigned k = 0; k < n; k++)
				node_out(i, &N[i].out[k]);
			N[i].nout = 0; /* nothing a node sends reaches itself */
			any = any || n > 0;
		}
		for (unsigned k = 0; k < srv_n; k++)
			srv_out(&srv_q[k]);
		srv_n = 0;
		if (!any)
			return;
	}
	fail_msg("the network did not settle");
}

/* Lets secs of time pass in steps of 50 ms, with every timer and datagram. */
static void advance(double secs)
{
	uint64_t end = now + (uint64_t)(secs * 1e9);

	while (now < end) {
		now += 50 * YIP_NS_PER_MS;
		for (int i = 0; i < 2; i++) {
			N[i].wall = PAIR_WALL_START + now;
			yip_device_timers(&N[i].dev, now);
		}
		rdv_timers(&S, now);
		run_net();
	}
}

/* ---- the nodes and the server ------------------------------------------------------ */

/* Node i, a member of NET with a certificate, registered with the server;
 * it lists `peer` (NULL: nobody) without an endpoint. */
static void node_start(int i, const uint8_t *peer, uint8_t peer_ip)
{
	struct yip_peer_config pc;
	struct yip_cidr cidr = {.family = AF_INET, .plen = 32, .addr = {10, 0, 0, peer_ip}};
	struct yip_config cfg;
	struct pair_opts o = {.out_cap = 1024, .keep_cap = 16, .discard_overflow = true};
	struct member_cert c;
	char err[256], ip[32];

	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.private_key, keys[i], YIP_KEY_LEN);
	yip_key_public(cfg.public_key, keys[i]);
	cfg.mtu = 1420;
	cfg.has_ca = true;
	cfg.nat_keepalive = 20;
	cfg.rendezvous[0].addr = srv_addr;
	memcpy(cfg.rendezvous[0].public_key, srv_pub, YIP_KEY_LEN);
	cfg.rendezvous[0].has_key = true;
	cfg.n_rendezvous = 1;
	if (peer != NULL) {
		memset(&pc, 0, sizeof(pc));
		memcpy(pc.public_key, peer, YIP_KEY_LEN);
		pc.allowed_ips = &cidr;
		pc.n_allowed_ips = 1;
		cfg.peers = &pc;
		cfg.n_peers = 1;
	}
	assert_int_equal(pair_node_init(&N[i], &cfg, NULL, &o, err, sizeof(err)), 0);
	snprintf(ip, sizeof(ip), "192.0.2.%d", i + 1);
	set4(&N[i].addr, ip, 51820);
	N[i].wall = PAIR_WALL_START + now;
	member_cert(&c, keys[i], i);
	assert_int_equal(yip_device_members_init(&N[i].dev, ca_pub, c.raw, c.len, err, sizeof(err)),
	                 0);
}

static int setup(void **state)
{
	struct rdv_io io = {NULL, io_buf, io_send};
	struct rdv_config c;
	uint8_t seed[32];
	char err[256];

	(void)state;
	yip_crypto_init();
	memset(seed, 9, sizeof(seed));
	member_ca_keypair(seed, ca_pub, ca_sec);
	yip_key_generate(srv_priv);
	yip_key_public(srv_pub, srv_priv);
	for (int i = 0; i < 2; i++)
		yip_key_generate(keys[i]);
	set4(&srv_addr, "198.51.100.1", 7000);
	srv_q = calloc(SRV_Q, sizeof(*srv_q));
	str = calloc(STRANGERS, sizeof(*str));
	assert_non_null(srv_q);
	assert_non_null(str);
	srv_n = 0;
	now = YIP_NS_PER_S;
	victim_dgrams = victim_bytes = to_strangers = inits_to_strangers = 0;
	to_loopback = to_multicast = to_llocal = 0;
	rdv_config_default(&c);
	memcpy(c.private_key, srv_priv, YIP_KEY_LEN);
	assert_int_equal(rdv_init(&S, &c, &io, err, sizeof(err)), 0);
	rdv_clock(&S, now, UNIX_NOW);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		pair_node_free(&N[i]);
	rdv_free(&S);
	for (unsigned i = 0; i < STRANGERS; i++)
		rdvc_wipe(&str[i]);
	free(str);
	free(srv_q);
	str = NULL;
	return 0;
}

/*
 * Stranger i: a fresh key at 198.18.x.y:4000 that registers with the
 * server, naming as its own addresses a loopback, a multicast, a
 * link-local and a victim's address, and looks B up.
 */
static void stranger(unsigned i, const uint8_t *priv, const uint8_t *target)
{
	struct rdvc *c = &str[i];
	struct wire_ctrl m = {.kind = WIRE_CTRL_REGISTER, .flags = WIRE_CTRL_RELAY};
	uint8_t d[WIRE_CTRL_MAX + WIRE_DATA_MIN];
	char ip[32];
	size_t len;

	snprintf(ip, sizeof(ip), "198.18.%u.%u", 1 + i / 250, 1 + i % 250);
	rdvc_init(c, priv, ip, 4000);
	len = rdvc_init_msg(c, srv_pub, PAIR_WALL_START + now,
	                    YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305), d);
	assert_int_equal(len, WIRE_INIT_LEN);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &c->addr, d, len);
	run_net();
	assert_true(c->up);
	set4(&m.cands[0], "127.0.0.1", 9);
	set4(&m.cands[1], "224.0.0.9", 9);
	set4(&m.cands[2], "169.254.7.7", 9);
	set4(&m.cands[3], "203.0.113.200", 9); /* the victim */
	m.n_cands = 4;
	len = rdvc_seal_ctrl(c, &m, d);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &c->addr, d, len);
	run_net();
	assert_true(c->registered);
	memset(&m, 0, sizeof(m));
	m.kind = WIRE_CTRL_LOOKUP;
	m.id = i + 1;
	memcpy(m.key, target, YIP_KEY_LEN);
	len = rdvc_seal_ctrl(c, &m, d);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &c->addr, d, len);
	run_net();
}

static size_t dynamic_peers(int i)
{
	return N[i].dev.n_dynamic;
}

static void ping(int from, int to)
{
	uint8_t pkt[64] = {0x45, 0, 0, 64, [8] = 64, [9] = 17, [12] = 10, 0, 0, 0, 10, 0, 0, 0};

	pkt[15] = (uint8_t)(from + 1);
	pkt[19] = (uint8_t)(to + 1);
	yip_device_tx(&N[from].dev, now, pkt, sizeof(pkt));
	run_net();
}

/*
 * The review's attack: 1 100 strangers each look B up once. B used to make
 * a dynamic peer of every one (filling all 1 024 slots with
 * certificate-less junk, swept only after 10 idle minutes) and send Inits
 * to the addresses they registered, and a real member then got no
 * session. Now an introduction makes no peer and sends nothing; B accepts
 * at most MEMBERS_ASK_BURST asks about unknown keys at once and
 * MEMBERS_ASK_RATE a second after; and A, a real member that looks B up
 * once the flood is over, gets its session.
 */
static void strangers_make_no_peers(void **state)
{
	uint8_t b_pub[YIP_KEY_LEN], a_pub[YIP_KEY_LEN];
	struct yip_members_info mi;
	uint64_t accepted;

	(void)state;
	yip_key_public(a_pub, keys[0]);
	yip_key_public(b_pub, keys[1]);
	node_start(1, NULL, 0);
	advance(1);
	assert_int_equal(N[1].dev.servers[0].state, YIP_SERVER_REGISTERED);
	for (unsigned i = 0; i < STRANGERS; i++) {
		stranger(i, NULL, b_pub);
		if (i % 10 == 9)
			advance(0.05); /* 200 a second: under the server's cookie threshold */
	}
	advance(30);
	assert_int_equal(dynamic_peers(1), 0);
	assert_int_equal(to_strangers, 0);
	assert_int_equal(victim_dgrams, 0);
	assert_int_equal(to_loopback + to_multicast + to_llocal, 0);
	assert_true(yip_device_members_info(&N[1].dev, &mi));
	/* The asks came over 5.5 s: the burst and the rate for that long. */
	accepted = N[1].dev.servers[0].asks - N[1].dev.members->asks_refused;
	assert_true(N[1].dev.servers[0].asks >= STRANGERS);
	assert_true(accepted <= MEMBERS_ASK_BURST + 6 * MEMBERS_ASK_RATE);
	assert_true(N[1].dev.members->intros_held <= accepted);

	/* A real member comes up and calls: B admits it by the certificate
	 * in its Init. */
	node_start(0, b_pub, 2);
	advance(1);
	ping(0, 1);
	advance(3);
	assert_true(yip_peer_established(yip_device_peer(&N[0].dev, b_pub), now));
	assert_non_null(yip_device_peer(&N[1].dev, a_pub));
	assert_true(yip_peer_established(yip_device_peer(&N[1].dev, a_pub), now));
	assert_true(N[1].packets >= 1);
	assert_int_equal(N[1].dev.members->intros_used, 1);
	assert_int_equal(victim_dgrams, 0);
}

/*
 * A peer B does know (a configured one) that registered bad addresses:
 * B sends nothing to loopback, multicast or link-local ones, and to the
 * one it may use that never answers, at most YIP_UNVALIDATED_INITS Inits
 * in a series of handshake attempts (it used to retry there for 90 s).
 */
static void known_peer_bad_candidates(void **state)
{
	uint8_t b_pub[YIP_KEY_LEN], k_priv[YIP_KEY_LEN], k_pub[YIP_KEY_LEN];

	(void)state;
	yip_key_generate(k_priv);
	yip_key_public(k_pub, k_priv);
	yip_key_public(b_pub, keys[1]);
	node_start(0, b_pub, 2);
	node_start(1, k_pub, 9);
	advance(1);
	stranger(0, k_priv, b_pub);
	advance(30);
	assert_int_equal(to_loopback + to_multicast + to_llocal, 0);
	assert_true(victim_dgrams >= 1); /* the one usable address was tried */
	assert_true(victim_dgrams <= YIP_UNVALIDATED_INITS);
	assert_true(inits_to_strangers >= 1); /* and its own address (it never answers) */
	assert_true(N[1].dev.servers[0].cands_refused >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(strangers_make_no_peers, setup, teardown),
	    cmocka_unit_test_setup_teardown(known_peer_bad_candidates, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
