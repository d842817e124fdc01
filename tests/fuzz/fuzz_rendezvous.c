/*
 * The rendezvous server's engine (src/rendezvous) under whatever nodes and
 * strangers can send it. Every input starts a fresh server (its config
 * chosen by the first byte) and four nodes with fixed keys
 * (tests/lib/rdvclient.h). The rest of the input is a program of
 * operations: real Noise handshakes (with stale, replayed, corrupted or
 * cipherless Inits), control messages sealed under a node's live session
 * keys so that they pass authentication and reach the handlers (REGISTER,
 * LOOKUP, ANSWER to the server's real ASK ids, WHOAMI on either port, and
 * the kinds a server must refuse, or any plaintext at all) with chosen,
 * replayed or far counters and from the node's own address or another,
 * relayed datagrams (a node's real token or another's or none, real or
 * made-up relay ids, wrong sources, bursts over the rate), raw datagrams
 * of any type on either socket, and the passing of time with the timers
 * run (asks that expire, nodes that are forgotten, keys too old).
 *
 * Everything the server sends goes back to the nodes, which learn their
 * tokens, relay ids, the ids of questions asked to them and the nonces of
 * challenges (which they may echo, from where the challenge went). Checked
 * besides memory safety: one datagram never counts more than one drop; a
 * relayed datagram leaves with the server's header and the payload intact;
 * no address that is not a node's confirmed address ever gets more bytes
 * from the server than it sent; guests stay within their share.
 *
 * With obf_psk (config bit 128) every datagram is obfuscated on its way to
 * the server (src/obf; a Relay's payload as it is, since the server only
 * forwards it) and everything the server sends must open under the key
 * before the nodes see it. A raw datagram may go unobfuscated instead: a
 * probe, which must be dropped as obf and answered with nothing.
 *
 * Input layout (bytes past the end read as 0):
 *   [0] config: 1 relay off, 2 relay rate 2000 B/s with a 3000-byte burst,
 *       4 at most 2 nodes (and 2 remembered Init timestamps), 8 one Init per second per source, 16
 * two Inits per second in all, 32 members only (nodes 0 and 1 hold certificates of its CA, node 2
 * one of another CA, node 3 none; 64: node 1 revoked), 128 obf_psk then up to MAX_OPS operations: a
 * selector byte and its arguments (op_*); handshakes past the first MAX_HS do nothing.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "membership/member.h"
#include "obf/obf.h"
#include "rdvclient.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"
#include "wire/wire.h"

#include "memo.h"
#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NODES      4
#define MAX_OPS    96
#define MAX_HS     16 /* handshakes per input: each costs eight X25519 operations */
#define OUTBOX     512
#define BIG        (WIRE_RELAY_HDR + 9200) /* a relayed jumbo datagram */
#define SERVER_KEY 0x5a                    /* every byte of the server's private key */
#define WALL0      (1700000000ULL * YIP_NS_PER_S)

struct out {
	unsigned sock;
	union yip_sockaddr to;
	size_t len;
	uint8_t buf[BIG];
};

static struct rdv_server S;
static struct out outbox[OUTBOX];
static uint8_t spare[RDV_MAX_DGRAM];
static unsigned n_out, overflow;
static struct rdvc C[NODES];
/* Inits made once, since the server's key and the nodes' never change:
 * each input's fresh server accepts them as new (a third of the X25519 work). */
#define PRE 6
static struct {
	struct rdvc c; /* the node with the Init pending */
	uint8_t init[WIRE_INIT_LEN];
	uint64_t wall;
} pre[NODES][PRE];
static unsigned n_pre[NODES];
static struct rdvc fresh_node[NODES];
static uint8_t last_init[NODES][WIRE_INIT_LEN];
static bool have_init[NODES];
static uint64_t wall[NODES];
static uint32_t ask_id[NODES];             /* the last ASK each node got */
static uint8_t asker[NODES][32];           /* and who asked */
static uint64_t probe_nonce[NODES];        /* the last challenge each node got */
static union yip_sockaddr probe_to[NODES]; /* and where it went */
static const union yip_sockaddr *echo_src; /* op_ctrl: send from there */
static uint64_t now;
static unsigned n_hs;
static uint8_t dgram[BIG + 64];
/* obf_psk: the server's, and the nodes' to wrap and unwrap with. */
#define OBF_KEY 0x3c
static bool obf;
static struct obf_keys obf_k;
static uint8_t wrapped[BIG + 64], unwrapped[BIG + 64];

/* Where datagrams come from: the nodes' own addresses, then strangers;
 * bytes from each, and bytes the server sent each while it was no node's
 * confirmed address. */
#define SOURCES (NODES + 3)
static union yip_sockaddr sources[SOURCES];
static uint64_t bytes_in[SOURCES], bytes_unconfirmed[SOURCES];

static int source_index(const union yip_sockaddr *a)
{
	for (int i = 0; i < SOURCES; i++)
		if (yip_sockaddr_eq(a, &sources[i]))
			return i;
	return -1;
}

static bool confirmed_somewhere(const union yip_sockaddr *a)
{
	for (const struct rdv_node *n = S.lru_head; n != NULL; n = n->lru_next)
		if (n->confirmed && yip_sockaddr_eq(&n->addr, a))
			return true;
	for (const struct rdv_node *n = S.guest_head; n != NULL; n = n->lru_next)
		if (n->confirmed && yip_sockaddr_eq(&n->addr, a))
			return true;
	return false;
}

/* ---- the server's I/O -------------------------------------------------------------- */

static uint8_t *io_buf(void *ctx)
{
	(void)ctx;
	return n_out < OUTBOX ? outbox[n_out].buf : spare;
}

static void io_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	if (sock >= RDV_SOCKS || len > RDV_MAX_DGRAM)
		__builtin_trap();
	if (!confirmed_somewhere(to)) {
		int i = source_index(to);

		/* The server answers only where datagrams came from. */
		if (i < 0 || (bytes_unconfirmed[i] += len) > bytes_in[i])
			__builtin_trap();
	}
	if (n_out == OUTBOX || len > BIG) {
		overflow++;
		return;
	}
	if (obf) { /* nothing leaves that the key does not open */
		size_t n;

		if (obf_open(&obf_k, outbox[n_out].buf, len, unwrapped, &n, WIRE_RELAY_FROM_SERVER,
		             false) != OBF_OK)
			__builtin_trap();
		memcpy(outbox[n_out].buf, unwrapped, n);
		len = n;
	}
	outbox[n_out].sock = sock;
	outbox[n_out].to = *to;
	outbox[n_out].len = len;
	n_out++;
}

/* Hands what the server sent to the nodes: Resps complete handshakes,
 * Ctrls are opened by whichever node's keys fit. */
static void deliver_out(void)
{
	for (unsigned k = 0; k < n_out; k++) {
		const struct out *o = &outbox[k];
		struct wire_ctrl m;

		switch (wire_classify(o->buf, o->len)) {
		case WIRE_RESP:
			for (int i = 0; i < NODES; i++)
				if (rdvc_resp(&C[i], o->buf, o->len))
					break;
			break;
		case WIRE_CTRL:
			for (int i = 0; i < NODES; i++) {
				if (!rdvc_open(&C[i], o->buf, o->len, &m))
					continue;
				if (m.kind == WIRE_CTRL_ASK) {
					ask_id[i] = m.id;
					memcpy(asker[i], m.key, YIP_KEY_LEN);
				}
				if (m.kind == WIRE_CTRL_PROBE) {
					probe_nonce[i] = m.nonce;
					probe_to[i] = o->to;
				}
				break;
			}
			break;
		case WIRE_RELAY:
			break;
		default:
			__builtin_trap(); /* the server sends nothing else */
		}
	}
	n_out = 0;
}

static uint64_t drops_total(void)
{
	uint64_t t = 0;

	for (int d = 0; d < RDV_DROP_COUNT; d++)
		t += S.drops[d];
	return t;
}

/* Sends d to the server, obfuscated if obf_psk is on (a datagram that
 * cannot be wrapped, such as one of an unknown type, goes as it is). */
static void to_server(unsigned sock, const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	uint64_t before = drops_total();

	if (obf && len <= BIG) {
		size_t n;

		memcpy(wrapped, d, len);
		n = obf_wrap(&obf_k, wrapped, len, sizeof(wrapped), false);
		if (n != 0) {
			d = wrapped;
			len = n;
		}
	}
	if (source_index(src) >= 0)
		bytes_in[source_index(src)] += len;
	rdv_rx(&S, now, sock, src, d, len);
	if (drops_total() > before + 1)
		__builtin_trap(); /* one datagram, at most one drop */
}

/* A datagram as a prober sends it, never obfuscated: with obf_psk it must
 * be dropped as obf and answered with nothing. */
static void probe_server(unsigned sock, const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	uint64_t before = drops_total(), obf_before = S.drops[RDV_DROP_OBF];
	unsigned out_before = n_out;

	if (source_index(src) >= 0)
		bytes_in[source_index(src)] += len;
	rdv_rx(&S, now, sock, src, d, len);
	if (drops_total() > before + 1)
		__builtin_trap();
	if (obf && (n_out != out_before || S.drops[RDV_DROP_OBF] != obf_before + 1))
		__builtin_trap();
}

/* ---- reading the program ------------------------------------------------------------ */

/* A source: mostly the node's own address; else another node's, the
 * node's as IPv4-mapped IPv6 (the same address to the server), or a stranger. */
static const union yip_sockaddr *source(struct reader *rd, int node)
{
	static union yip_sockaddr mapped;
	uint8_t v = next(rd);

	if (v < 160)
		return &sources[node];
	if (v < 200) {
		const union yip_sockaddr *a = &sources[node];

		memset(&mapped, 0, sizeof(mapped));
		mapped.in6.sin6_family = AF_INET6;
		mapped.in6.sin6_port = a->in4.sin_port;
		mapped.in6.sin6_addr.s6_addr[10] = 0xff;
		mapped.in6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&mapped.in6.sin6_addr.s6_addr[12], &a->in4.sin_addr, 4);
		return &mapped;
	}
	return &sources[v % SOURCES];
}

static unsigned sock_of(struct reader *rd)
{
	return next(rd) < 200 ? RDV_SOCK_MAIN : RDV_SOCK_ALT;
}

/* A public key: one of the nodes', the server's, or made up. */
static void key_of(struct reader *rd, uint8_t key[YIP_KEY_LEN])
{
	uint8_t v = next(rd) % (NODES + 2);

	if (v < NODES)
		memcpy(key, C[v].pub, YIP_KEY_LEN);
	else if (v == NODES)
		memcpy(key, S.public_key, YIP_KEY_LEN);
	else
		fill(rd, key, YIP_KEY_LEN);
}

/* ---- operations --------------------------------------------------------------------- */

/* The server's wall clock (told once, at the start), ns since the epoch. */
static uint64_t server_wall(void)
{
	return WALL0 + now - YIP_NS_PER_S;
}

/*
 * node | how (0 fresh, 1 same timestamp as the last, 2 the last Init again,
 * 3 Noise damaged with mac1 recomputed, 4 mac1 wrong, 5 a timestamp 200 s
 * old, 6 one 200 s ahead) | ciphers | source | socket
 */
static void op_handshake(struct reader *rd)
{
	int i = next(rd) % NODES;
	uint8_t how = next(rd) % 7, ciphers = next(rd);
	const union yip_sockaddr *src = source(rd, i);
	unsigned sock = sock_of(rd);
	uint8_t init[WIRE_INIT_LEN], mac1[YIP_KEY_LEN];

	if (n_hs++ >= MAX_HS)
		return;
	ciphers = ciphers < 200 ? YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305) : ciphers % 4;
	if (how == 2 && have_init[i]) {
		memcpy(init, last_init[i], sizeof(init));
	} else if (how != 1 && how < 5 && ciphers == YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305) &&
	           n_pre[i] < PRE && pre[i][n_pre[i]].wall > wall[i] &&
	           pre[i][n_pre[i]].wall + 100 * YIP_NS_PER_S > server_wall()) {
		unsigned k = n_pre[i]++;

		C[i].hs = pre[i][k].c.hs;
		C[i].sender = pre[i][k].c.sender;
		C[i].pending = true;
		wall[i] = pre[i][k].wall;
		memcpy(init, pre[i][k].init, sizeof(init));
		memcpy(last_init[i], init, sizeof(init));
		have_init[i] = true;
	} else {
		uint64_t w;

		/* Mostly a node whose clock is the server's, give or take. */
		if (how != 1)
			wall[i] += YIP_NS_PER_S;
		if (how != 1 && wall[i] < server_wall())
			wall[i] = server_wall();
		w = how == 5   ? server_wall() - 200 * YIP_NS_PER_S
		    : how == 6 ? server_wall() + 200 * YIP_NS_PER_S
		               : wall[i];
		if (rdvc_init_msg(&C[i], S.public_key, w, ciphers, init) != WIRE_INIT_LEN)
			__builtin_trap();
		memcpy(last_init[i], init, sizeof(init));
		have_init[i] = true;
	}
	if (how == 3) {
		uint8_t off = next(rd), x = next(rd);

		init[WIRE_INIT_MSG1 + off % WIRE_MSG1_LEN] ^= x ? x : 1;
		wire_mac1_key(mac1, S.public_key);
		wire_init_mac1_put(init, mac1);
	} else if (how == 4) {
		init[WIRE_INIT_LEN - 1] ^= 1;
	}
	to_server(sock, src, init, sizeof(init));
	deliver_out();
}

/* Fills a message of a kind from the program (wire_ctrl_put may still refuse it). */
static struct rdv_members members;
static uint8_t ca_secret[MEMBER_SIGN_SECRET];
static struct member_cert certs[NODES - 1];
static struct member_revocations revoked;

static void make_ctrl(struct reader *rd, int node, uint8_t kind, struct wire_ctrl *m)
{
	static const uint8_t kinds[] = {
	    WIRE_CTRL_REGISTER,   WIRE_CTRL_LOOKUP, WIRE_CTRL_ANSWER,   WIRE_CTRL_WHOAMI,
	    WIRE_CTRL_REGISTERED, WIRE_CTRL_ASK,    WIRE_CTRL_INTRO,    WIRE_CTRL_UNKNOWN,
	    WIRE_CTRL_YOUARE,     WIRE_CTRL_PROBE,  WIRE_CTRL_PROBE_OK, WIRE_CTRL_MEMBER,
	    WIRE_CTRL_REFUSED,
	};
	static uint8_t junk[WIRE_CTRL_CERT_MAX];
	uint8_t mode = next(rd);

	memset(m, 0, sizeof(*m));
	m->kind = kinds[kind % sizeof(kinds)];
	/* ANSWERs mostly to the ASK the node really got, about its real asker */
	if (m->kind == WIRE_CTRL_ANSWER && mode < 200) {
		m->id = ask_id[node];
		if (mode < 150)
			memcpy(m->key, asker[node], YIP_KEY_LEN);
		else
			key_of(rd, m->key);
	} else {
		m->id = mode < 128 ? next(rd) : next32(rd);
		key_of(rd, m->key);
	}
	m->flags = next(rd);
	m->nat = next(rd) % WIRE_NAT_COUNT;
	m->token = next64(rd);
	m->relay_id = next32(rd);
	m->alt_port = next16(rd);
	m->addr = *source(rd, node);
	m->n_cands = next(rd) % (WIRE_MAX_CANDS + 1);
	for (unsigned c = 0; c < m->n_cands; c++)
		m->cands[c] = *source(rd, (next(rd) % NODES));
	m->nonce = next64(rd);
	/* PROBE_OK: mostly the echo of the node's last challenge, from where it went */
	if (m->kind == WIRE_CTRL_PROBE_OK && mode < 200 && probe_nonce[node] != 0) {
		m->nonce = probe_nonce[node];
		if (mode < 150)
			echo_src = &probe_to[node];
	}
	m->ts_us = next32(rd);
	m->reason = next(rd);
	/* MEMBER: mostly a node's real certificate (its own or another's), else bytes */
	if (mode < 200) {
		const struct member_cert *c = &certs[mode % (NODES - 1)];

		m->cert = c->raw;
		m->cert_len = (uint16_t)c->len;
	} else {
		m->cert_len = (uint16_t)(1 + next16(rd) % WIRE_CTRL_CERT_MAX);
		fill(rd, junk, m->cert_len);
		m->cert = junk;
	}
}

/*
 * node | kind (< 240: a well-formed message of one of 13 kinds, else any
 * plaintext) | its fields | counter mode | damage | source | socket
 */
static void op_ctrl(struct reader *rd)
{
	int i = next(rd) % NODES;
	uint8_t kind = next(rd), cmode, damage, back;
	uint8_t plain[WIRE_CTRL_MAX + 16];
	struct wire_ctrl m;
	const union yip_sockaddr *src;
	unsigned sock;
	size_t plen = 0, len;
	uint64_t counter;

	echo_src = NULL;
	if (kind < 240) {
		make_ctrl(rd, i, kind, &m);
		plen = wire_ctrl_put(plain, &m);
	}
	if (plen == 0) {
		plen = next(rd) % sizeof(plain);
		fill(rd, plain, plen);
	}
	cmode = next(rd) % 8;
	counter = C[i].send_counter;
	if (cmode == 5 && counter > 0)
		counter -= 1; /* the last one again */
	else if (cmode == 6 && (back = next(rd) % 80) <= counter)
		counter -= back; /* inside or below the replay window */
	else if (cmode == 7)
		counter += next16(rd);
	len = rdvc_seal_at(&C[i], counter, plain, plen, dgram);
	if (len == 0)
		return; /* no session yet */
	if (counter >= C[i].send_counter)
		C[i].send_counter = counter + 1;
	damage = next(rd);
	if (damage >= 240)
		dgram[WIRE_DATA_HDR + damage % (len - WIRE_DATA_HDR)] ^= 0x80; /* fails to open */
	else if (damage >= 230)
		wire_put32(dgram + 4, next32(rd)); /* another receiver index */
	src = source(rd, i);
	if (echo_src != NULL)
		src = echo_src;
	sock = sock_of(rd);
	to_server(sock, src, dgram, len);
	deliver_out();
}

/*
 * from | token (own, another node's, made up) | to (relay id of a node, or
 * made up) | direction | payload length | repeats | source | socket
 */
static void op_relay(struct reader *rd)
{
	int i = next(rd) % NODES, j;
	uint8_t t = next(rd), r = next(rd), dir = next(rd) < 240 ? WIRE_RELAY_TO_SERVER : 1;
	uint64_t token = t < 200 ? C[i].token : t < 230 ? C[t % NODES].token : next64(rd);
	uint32_t id;
	size_t plen = next16(rd) % (BIG - WIRE_RELAY_HDR + 1);
	unsigned repeats = next(rd) % 48 + 1;
	const union yip_sockaddr *src = source(rd, i);
	unsigned sock = next(rd) < 240 ? RDV_SOCK_MAIN : RDV_SOCK_ALT;

	j = r % NODES;
	id = r < 230 ? C[j].relay_id : next32(rd);
	fill(rd, dgram + WIRE_RELAY_HDR, plen < 64 ? plen : 64); /* the rest stays as it was */
	wire_relay_put(dgram, dir, token, id);
	for (unsigned k = 0; k < repeats; k++) {
		unsigned before = n_out;

		to_server(sock, src, dgram, WIRE_RELAY_HDR + plen);
		/* What leaves is the same datagram with the server's header. */
		for (unsigned o = before; o < n_out; o++) {
			struct wire_relay in, out;

			if (!wire_relay_get(&in, dgram, WIRE_RELAY_HDR + plen) ||
			    !wire_relay_get(&out, outbox[o].buf, outbox[o].len) ||
			    out.dir != WIRE_RELAY_FROM_SERVER || out.len != in.len ||
			    memcmp(out.payload, in.payload, in.len) != 0)
				__builtin_trap();
		}
	}
	deliver_out();
}

/* type (0 as is, 1 Init, 2 Ctrl, 3 Relay, 4 Resp) | length | bytes | source | socket |
 * with obf_psk only, a byte: odd, a probe (not obfuscated) */
static void op_raw(struct reader *rd)
{
	static const uint8_t types[] = {0, WIRE_INIT, WIRE_CTRL, WIRE_RELAY, WIRE_RESP, WIRE_DATA};
	uint8_t type = types[next(rd) % sizeof(types)];
	size_t len = next16(rd) % 300;
	const union yip_sockaddr *src = source(rd, next(rd) % NODES);
	unsigned sock = sock_of(rd);

	fill(rd, dgram, len);
	if (type != 0 && len >= 4) {
		memset(dgram, 0, 4);
		dgram[0] = type;
	}
	if (type == WIRE_INIT && next(rd) & 1)
		len = WIRE_INIT_LEN; /* reaches the mac1 check */
	if (obf && next(rd) & 1)
		probe_server(sock, src, dgram, len);
	else
		to_server(sock, src, dgram, len);
	deliver_out();
}

/* how long (a step from the table, times 1 to 4) */
static void op_time(struct reader *rd)
{
	static const uint64_t steps[] = {
	    0,
	    YIP_NS_PER_MS,
	    50 * YIP_NS_PER_MS,
	    YIP_NS_PER_S,
	    3 * YIP_NS_PER_S,
	    10 * YIP_NS_PER_S,
	    61 * YIP_NS_PER_S,
	    361 * YIP_NS_PER_S,
	};
	uint8_t v = next(rd);

	now += steps[v % 8] * (v / 8 % 4 + 1);
	if (now >= S.next_timer || v >= 200)
		rdv_timers(&S, now);
	deliver_out();
}

static void setup_once(void)
{
	static bool done;
	uint8_t server_pub[YIP_KEY_LEN], server_priv[YIP_KEY_LEN];
	uint8_t seed[32], other_pub[MEMBER_SIGN_PUBLIC], other_sec[MEMBER_SIGN_SECRET];
	uint8_t entry[WIRE_REVOKED_ENTRY];

	if (done)
		return;
	yip_crypto_init();
	/* The CA, another CA, and certificates for nodes 0-2 (valid for a year from WALL0). */
	memset(seed, 0x11, sizeof(seed));
	member_ca_keypair(seed, members.ca_public, ca_secret);
	memset(seed, 0x12, sizeof(seed));
	member_ca_keypair(seed, other_pub, other_sec);
	snprintf(members.network, sizeof(members.network), "fuzz");
	for (int i = 0; i < NODES - 1; i++) {
		struct wire_cert f;
		uint8_t priv[YIP_KEY_LEN];

		memset(&f, 0, sizeof(f));
		memset(priv, 0x21 + i, sizeof(priv));
		yip_key_public(f.key, priv);
		snprintf(f.network, sizeof(f.network), "fuzz");
		snprintf(f.name, sizeof(f.name), "node %d", i);
		memset(f.sign_key, 7, sizeof(f.sign_key)); /* the server never checks it */
		f.not_before = WALL0 / YIP_NS_PER_S - 60;
		f.not_after = WALL0 / YIP_NS_PER_S + 365 * 86400;
		if (member_cert_sign(&certs[i], &f, i == 2 ? other_sec : ca_secret) != 0)
			__builtin_trap();
	}
	entry[0] = WIRE_REVOKED_KEY;
	memcpy(entry + 1, certs[1].f.key, YIP_KEY_LEN);
	if (member_revocations_sign(&revoked, "fuzz", 1, WALL0 / YIP_NS_PER_S, entry, 1,
	                            ca_secret) != 0)
		__builtin_trap();
	memset(server_priv, SERVER_KEY, sizeof(server_priv));
	yip_key_public(server_pub, server_priv);
	for (int i = 0; i < NODES; i++) {
		uint8_t priv[YIP_KEY_LEN];

		memset(priv, 0x21 + i, sizeof(priv));
		rdvc_init(&fresh_node[i], priv, "192.0.2.1", 51820);
		for (unsigned k = 0; k < PRE; k++) {
			pre[i][k].c = fresh_node[i];
			pre[i][k].wall = WALL0 + (k + 1) * YIP_NS_PER_S;
			if (rdvc_init_msg(&pre[i][k].c, server_pub, pre[i][k].wall,
			                  YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305),
			                  pre[i][k].init) != WIRE_INIT_LEN)
				__builtin_trap();
		}
	}
	for (int i = 0; i < SOURCES; i++) {
		union yip_sockaddr *a = &sources[i];

		memset(a, 0, sizeof(*a));
		if (i == NODES + 1) {
			a->in6.sin6_family = AF_INET6;
			a->in6.sin6_port = htons(4444);
			inet_pton(AF_INET6, "2001:db8::66", &a->in6.sin6_addr);
		} else {
			a->in4.sin_family = AF_INET;
			a->in4.sin_port = htons(i == NODES ? 51820 : 51820 + (i % 2));
			a->in4.sin_addr.s_addr = htonl(0xc0000201 + (uint32_t)i); /* 192.0.2.1.. */
		}
	}
	done = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {data, size};
	struct rdv_io io = {NULL, io_buf, io_send};
	struct rdv_config cfg;
	uint8_t flags = next(&rd);
	char err[128];

	memo_reset(); /* before setup_once, which initialises libsodium */
	setup_once();
	memo_reset(); /* again: setup_once draws from the generator on the first input */
	rdv_config_default(&cfg);
	memset(cfg.private_key, SERVER_KEY, YIP_KEY_LEN);
	cfg.alt_port = 7001;
	cfg.relay = !(flags & 1);
	if (flags & 2) {
		cfg.relay_rate = 2000;
		cfg.relay_burst = 3000;
	}
	if (flags & 4) {
		cfg.max_nodes = 2;
		cfg.seen_max = 2; /* and two forgotten nodes' timestamps: the floor */
	}
	if (flags & 8)
		cfg.init_rate = 1;
	if (flags & 16)
		cfg.init_global = 2;
	obf = (flags & 128) != 0;
	if (obf) {
		cfg.obf = true;
		memset(cfg.obf_psk, OBF_KEY, sizeof(cfg.obf_psk));
		obf_keys_init(&obf_k, cfg.obf_psk);
	}
	if (rdv_init(&S, &cfg, &io, err, sizeof(err)) != 0)
		__builtin_trap();
	now = YIP_NS_PER_S;
	rdv_clock(&S, now, WALL0 / YIP_NS_PER_S);
	if (flags & 32) {
		members.revs = flags & 64 ? &revoked : NULL;
		rdv_set_members(&S, now, &members);
	}
	n_out = 0;
	n_hs = 0;
	memset(bytes_in, 0, sizeof(bytes_in));
	memset(bytes_unconfirmed, 0, sizeof(bytes_unconfirmed));
	for (int i = 0; i < NODES; i++) {
		C[i] = fresh_node[i];
		C[i].addr = sources[i];
		n_pre[i] = 0;
		wall[i] = WALL0;
		have_init[i] = false;
		ask_id[i] = 0;
		memset(asker[i], 0, YIP_KEY_LEN);
		probe_nonce[i] = 0;
	}
	for (int op = 0; op < MAX_OPS && rd.n > 0; op++) {
		switch (next(&rd) % 5) {
		case 0:
			op_handshake(&rd);
			break;
		case 1:
			op_ctrl(&rd);
			break;
		case 2:
			op_relay(&rd);
			break;
		case 3:
			op_raw(&rd);
			break;
		case 4:
			op_time(&rd);
			break;
		}
	}
	{
		size_t n = 0, g = 0;

		for (const struct rdv_node *x = S.lru_head; x != NULL; x = x->lru_next)
			if (x->guest)
				__builtin_trap();
			else
				n++;
		for (const struct rdv_node *x = S.guest_head; x != NULL; x = x->lru_next)
			if (!x->guest || !S.members_only)
				__builtin_trap();
			else
				g++;
		/* Guests hold their share at most, and only guests are not admitted. */
		if (n + g != S.n_nodes || g != S.n_guests || S.n_nodes > cfg.max_nodes ||
		    S.n_guests > rdv_max_guests(&S))
			__builtin_trap();
	}
	rdv_free(&S);
	for (int i = 0; i < NODES; i++)
		rdvc_wipe(&C[i]);
	return 0;
}
