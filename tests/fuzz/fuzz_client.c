/*
 * What a rendezvous server (or someone pretending to be one) can do to a
 * node. Every input starts from the same state: a node engine configured
 * with one rendezvous server and one peer without an endpoint, registered
 * with a real server engine (src/rendezvous) over a real handshake in
 * memory. The input is then a program of operations: control messages
 * sealed with the server's live session keys (introductions with
 * candidates, questions about who may reach the node, registrations,
 * NAT-probe answers, and kinds a server never sends), relayed datagrams
 * with the right or a wrong token, datagrams on extra sockets, packets from
 * the device, raw bytes, and time passing with the node's timers run and
 * its datagrams carried to the server and back.
 *
 * Input layout (bytes past the end read as 0): [0] flags (1: relay=off,
 * 2: the peer has an endpoint), then operations, one selector byte each.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>

#include "pair.h"
#include "peer/peer.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/wire.h"

#include "memo.h"
#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 64
#define SRV_Q   64

static struct pair_node N;
static struct rdv_server S;
static union yip_sockaddr srv_addr, peer_addr;
static uint8_t peer_pub[YIP_KEY_LEN];
static uint64_t now;
static struct {
	unsigned sock;
	union yip_sockaddr to;
	size_t len;
	uint8_t buf[2048];
} srv_out[SRV_Q];
static unsigned srv_n;
static uint8_t msg[WIRE_CTRL_MAX], dgram[4096];

static uint8_t *srv_buf(void *ctx)
{
	(void)ctx;
	return srv_out[srv_n < SRV_Q ? srv_n : SRV_Q - 1].buf;
}

static void srv_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	if (srv_n == SRV_Q || len > sizeof(srv_out[0].buf))
		return;
	srv_out[srv_n].sock = sock;
	srv_out[srv_n].to = *to;
	srv_out[srv_n].len = len;
	srv_n++;
}

/* Carries the node's datagrams to the server and the server's back. */
static void exchange(void)
{
	for (int round = 0; round < 4; round++) {
		unsigned n = N.nout;

		for (unsigned i = 0; i < n; i++) {
			union yip_sockaddr to = N.out[i].to;
			unsigned sock = 2;

			if (yip_sockaddr_eq(&to, &srv_addr))
				sock = RDV_SOCK_MAIN;
			to.in4.sin_port = htons(7001);
			if (yip_sockaddr_eq(&N.out[i].to, &to))
				sock = RDV_SOCK_ALT;
			if (sock < 2)
				rdv_rx(&S, now, sock, &N.addr, N.out[i].buf, N.out[i].len);
		}
		N.nout = 0;
		for (unsigned i = 0; i < srv_n; i++) {
			union yip_sockaddr from = srv_addr;

			if (srv_out[i].sock == RDV_SOCK_ALT)
				from.in4.sin_port = htons(7001);
			pair_rx(&N, now, &from, srv_out[i].buf, srv_out[i].len);
		}
		srv_n = 0;
	}
}

/* A control message as the server would seal it. */
static void op_ctrl(struct reader *rd)
{
	struct rdv_node *sn = S.lru_head;
	struct yip_cipher_key key;
	struct wire_ctrl c = {0};
	uint8_t sel = next(rd);
	struct wire_hdr h;
	size_t len;

	if (sn == NULL || !sn->cur.valid)
		return;
	if (sel % 8 == 7) {
		len = next(rd) % 64;
		for (size_t i = 0; i < len; i++)
			msg[i] = next(rd);
	} else {
		static const uint8_t kinds[] = {
		    WIRE_CTRL_INTRO,  WIRE_CTRL_ASK,   WIRE_CTRL_UNKNOWN, WIRE_CTRL_REGISTERED,
		    WIRE_CTRL_YOUARE, WIRE_CTRL_PROBE, WIRE_CTRL_LOOKUP};

		c.kind = kinds[sel % 7 < 7 ? sel % 7 : 0];
		memcpy(c.key, (sel & 8) ? peer_pub : N.dev.public_key, YIP_KEY_LEN);
		if (sel & 16)
			c.key[next(rd) % YIP_KEY_LEN] ^= 1;
		c.id = (sel & 32) ? N.dev.servers[0].whoami_id : next32(rd);
		c.flags = next(rd);
		c.nat = next(rd) % WIRE_NAT_COUNT;
		c.token = (uint64_t)next32(rd) << 32 | next32(rd);
		c.relay_id = next32(rd);
		c.alt_port = (sel & 64) ? 7001 : next16(rd);
		c.addr = N.addr;
		c.addr.in4.sin_port = (uint16_t)(next16(rd) | 1);
		c.n_cands = next(rd) % (WIRE_MAX_CANDS + 1);
		for (unsigned i = 0; i < c.n_cands; i++) {
			c.cands[i] = peer_addr;
			c.cands[i].in4.sin_port = (uint16_t)(next16(rd) | 1);
		}
		len = wire_ctrl_put(msg, &c);
	}
	h = (struct wire_hdr){WIRE_CTRL, 0, 0, sn->cur.remote, sn->cur.send_counter++};
	if (next(rd) & 1)
		h.counter -= 1 + next(rd) % 4; /* a replay, or an old one */
	wire_hdr_put(dgram, &h);
	yip_cipher_key_set(&key, (enum yip_cipher)sn->cur.cipher, sn->cur.send);
	yip_cipher_seal(dgram + WIRE_DATA_HDR, &key, h.counter, dgram, WIRE_DATA_HDR, msg, len);
	pair_rx(&N, now, &srv_addr, dgram, WIRE_DATA_MIN + len);
}

/* A relayed datagram: the node's own token (or not), any relay id, any payload. */
static void op_relay(struct reader *rd)
{
	uint8_t sel = next(rd);
	uint64_t token = N.dev.servers[0].token;
	size_t len = WIRE_RELAY_HDR + 1 + next(rd) % 200;
	union yip_sockaddr from = srv_addr;

	if (sel & 1)
		token ^= 1ULL << (next(rd) % 64);
	if (sel & 2)
		from.in4.sin_port ^= 0x100;
	wire_relay_put(dgram, (sel & 4) ? WIRE_RELAY_TO_SERVER : WIRE_RELAY_FROM_SERVER, token,
	               next32(rd));
	for (size_t i = WIRE_RELAY_HDR; i < len; i++)
		dgram[i] = next(rd);
	if (sel & 8)
		dgram[WIRE_RELAY_HDR] = (uint8_t)(1 + next(rd) % 8); /* a plausible type */
	pair_rx(&N, now, &from, dgram, len);
}

static void op_time(struct reader *rd)
{
	uint8_t v = next(rd);

	now += v < 128 ? (uint64_t)v * 10 * YIP_NS_PER_MS : (uint64_t)(v - 127) * YIP_NS_PER_S;
	yip_device_timers(&N.dev, now);
	if (v & 1)
		exchange();
	else
		N.nout = 0; /* lost */
	rdv_timers(&S, now);
}

static void op_tx(struct reader *rd)
{
	uint8_t pkt[64] = {0x45, 0, 0, 64, [8] = 64, [9] = 17, [12] = 10, 0, 0, 1, 10, 0, 0, 2};

	pkt[19] = (next(rd) & 1) ? 2 : 9;
	yip_device_tx(&N.dev, now, pkt, sizeof(pkt));
}

static void op_raw(struct reader *rd)
{
	size_t len = next(rd) % 200;
	uint8_t sel = next(rd);
	union yip_sockaddr from = (sel & 1) ? srv_addr : peer_addr;

	for (size_t i = 0; i < len; i++)
		dgram[i] = next(rd);
	if (sel & 2)
		yip_device_rx_link(&N.dev, now, 1 + next(rd) % 3, &from, dgram, len);
	else
		pair_rx(&N, now, &from, dgram, len);
}

static void set4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void start(uint8_t flags)
{
	static const uint8_t node_priv[YIP_KEY_LEN] = {9, 9, 9}, srv_priv[YIP_KEY_LEN] = {7, 7, 7};
	static const uint8_t peer_priv[YIP_KEY_LEN] = {5, 5, 5};
	struct rdv_io io = {NULL, srv_buf, srv_send};
	struct pair_opts o = {.out_cap = 512, .discard_overflow = true, .extra_socks = 8};
	struct yip_cidr cidr = {.family = AF_INET, .plen = 32, .addr = {10, 0, 0, 2}};
	struct yip_peer_config pc = {.allowed_ips = &cidr, .n_allowed_ips = 1};
	struct yip_config cfg = {.mtu = 1420, .peers = &pc, .n_peers = 1, .nat_keepalive = 20};
	struct rdv_config rc;
	char err[128];

	yip_crypto_init();
	set4(&srv_addr, "198.51.100.1", 7000);
	set4(&peer_addr, "203.0.113.2", 4000);
	rdv_config_default(&rc);
	memcpy(rc.private_key, srv_priv, YIP_KEY_LEN);
	rc.alt_port = 7001;
	if (rdv_init(&S, &rc, &io, err, sizeof(err)) != 0)
		__builtin_trap();
	memcpy(cfg.private_key, node_priv, YIP_KEY_LEN);
	yip_key_public(cfg.public_key, node_priv);
	yip_key_public(peer_pub, peer_priv);
	memcpy(pc.public_key, peer_pub, YIP_KEY_LEN);
	pc.has_endpoint = flags & 2;
	pc.endpoint = peer_addr;
	cfg.relay_off = flags & 1;
	cfg.rendezvous[0].addr = srv_addr;
	memcpy(cfg.rendezvous[0].public_key, S.public_key, YIP_KEY_LEN);
	cfg.rendezvous[0].has_key = true;
	cfg.n_rendezvous = 1;
	if (pair_node_init(&N, &cfg, NULL, &o, err, sizeof(err)) != 0)
		__builtin_trap();
	set4(&N.addr, "192.0.2.1", 51820);
	now = YIP_NS_PER_S;
	srv_n = 0;
	yip_device_timers(&N.dev, now);
	exchange();
	if (N.dev.servers[0].state != YIP_SERVER_REGISTERED)
		__builtin_trap(); /* the node no longer registers */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	struct reader rd = {data, size};

	memo_reset();
	if (!quiet) {
		yip_log_set_level(YIP_LOG_ERROR);
		quiet = true;
	}
	start(next(&rd));
	for (unsigned ops = 0; ops < MAX_OPS && rd.n > 0; ops++) {
		switch (next(&rd) % 6) {
		case 0:
		case 1:
			op_ctrl(&rd);
			break;
		case 2:
			op_relay(&rd);
			break;
		case 3:
			op_time(&rd);
			break;
		case 4:
			op_tx(&rd);
			break;
		default:
			op_raw(&rd);
			break;
		}
	}
	pair_node_free(&N);
	rdv_free(&S);
	return 0;
}
