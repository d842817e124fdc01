/*
 * What a peer with a live session can do to an engine. Every input starts
 * from the same state: a pair of engines (tests/lib/pair.h), A and B, that
 * have completed a real handshake in memory. The input is then a program of
 * operations. The main one forges a datagram from A to B with a chosen
 * header (type, FEC index, block, receiver index, counter) and an arbitrary
 * plaintext, sealed with A's live sending keys, so it passes authentication
 * and reaches what lies behind it: inner IPv4/IPv6 (or Ethernet) parsing and
 * the allowed-source check, ARQ retransmissions, Repair prefixes and symbol
 * headers, FEC reassembly, and Report bodies with NACK lists. Other
 * operations send packets from either device, carry the engines' own
 * datagrams across with a chosen loss pattern, order and duplication,
 * forge whole FEC blocks with correct repairs, replay and corrupt captured
 * datagrams, move A's address, and let time pass with the timers run (keep-
 * alives, reports, NACKs, rekeys, key expiry, handshake retries).
 *
 * Input layout (bytes past the end read as 0):
 *   [0] flags: 1 TAP, 2 fec=off, 4 ChaCha20-Poly1305 only, 8 seal_later,
 *       16 pre-opened datagrams, 32 B does not know A's endpoint,
 *       64 no handshake beforehand, 128 B's MTU is 1280
 *   [1] more flags: 1 persistent keepalive (A every 25 s, B every 1 s),
 *       2 no data cipher in common (A AES-256-GCM only, B ChaCha20-Poly1305
 *       only; where the CPU has AES, else ignored)
 *   then operations, one selector byte each and their arguments (see op_*).
 *
 * Sealing uses only the public state of peer.h (cur/prev/next keys, remote
 * index, send counter), yip_cipher_seal and the wire.h header helpers.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fec/fec.h"
#include "pair.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/wire.h"

#include "memo.h"
#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define F_TAP        1
#define F_FEC_OFF    2
#define F_CHACHA     4
#define F_SEAL_LATER 8
#define F_PREOPEN    16
#define F_NO_EP      32
#define F_NO_HS      64
#define F_SMALL_MTU  128
#define F2_KEEPALIVE 1
#define F2_NO_CIPHER 2

#define MAX_OPS     128
#define MAX_PLAIN   (YIP_MAX_DGRAM - WIRE_DATA_MIN)
#define HISTORY     8 /* datagrams from A kept for replays */
#define BLOCK_MAX_K 16

static struct pair P;
static struct pair_node *A, *B;
static uint64_t now;
static bool tap;

/* The last datagrams A sent to B, for replays. */
static struct {
	uint8_t buf[YIP_MAX_DGRAM];
	size_t len;
} history[HISTORY];
static unsigned n_history;

static uint8_t plain[YIP_MAX_DGRAM];
static uint8_t dgram[65536]; /* room for a datagram longer than any the loop receives */

/* A third engine that knows B but is not known to it (op_stranger). */
static struct pair_node C;
static bool have_c;

static void put16be(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* ---- packets ---- */

/* The inner source and destination addresses node `from` uses towards the other. */
static void v4_addrs(int from, uint8_t *src, uint8_t *dst)
{
	const uint8_t a[4] = {10, 0, 0, 1}, b[4] = {10, 0, 0, 2};

	memcpy(src, from == 0 ? a : b, 4);
	memcpy(dst, from == 0 ? b : a, 4);
}

/*
 * An IP packet (or, in TAP mode, an Ethernet frame around one) of about len
 * bytes from node `from` towards the other: kind picks how it is addressed
 * or broken. Returns its length.
 */
static size_t make_packet(struct reader *rd, int from, uint8_t *out, size_t cap)
{
	uint8_t kind = next(rd), tos = next(rd);
	size_t len = next16(rd) % (YIP_DEFAULT_MTU + 1), hdr = 0;
	const struct yip_device *self = &P.n[from].dev, *other = &P.n[1 - from].dev;
	uint8_t *p;

	static const uint8_t dscp[4] = {0, 0xb8 /* EF */, 0x20 /* CS1 */, 0x28 /* AF11 */};
	tos = tos < 4 ? dscp[tos] : tos;
	if (tap) {
		/* Destination MAC: broadcast, the other's, or as given; then ours. */
		uint8_t sel = next(rd);

		if (sel % 3 == 0)
			memset(out, 0xff, 6);
		else if (sel % 3 == 1)
			memcpy(out, "\x02\x00\x00\x00\x00", 5), out[5] = (uint8_t)(2 - from);
		else
			fill(rd, out, 6);
		memcpy(out + 6, "\x02\x00\x00\x00\x00", 5);
		out[11] = (uint8_t)(1 + from);
		if (sel & 0x80)
			out[6] |= 1; /* a multicast source: forged */
		out[12] = 0x08;
		out[13] = kind & 0x40 ? 0x06 : 0x00; /* IPv4, or ARP (not IP) */
		if (kind & 0x20)
			out[12] = 0x86, out[13] = 0xdd;
		hdr = 14;
	}
	if (tap && kind == 0xff)
		return next(rd) % 14; /* a runt: not even an Ethernet header */
	if (len + hdr > cap)
		len = cap - hdr;
	p = out + hdr;
	memset(p, 0, len < 48 ? 48 : len);
	switch (kind % 8) {
	case 0: /* IPv4 UDP to the other's inner address */
	case 1: /* the same from a source the other does not allow */
	case 2: /* IPv4 to nobody (no route: ICMP unreachable) */
		if (len < 28)
			len = 28;
		p[0] = 0x45;
		p[1] = tos;
		put16be(p + 2, len);
		p[8] = 64;
		p[9] = kind & 0x10 ? 1 : 17; /* ICMP or UDP */
		v4_addrs(from, p + 12, p + 16);
		if (kind % 8 == 1)
			p[15] = 99;
		if (kind % 8 == 2)
			p[16] = next(rd), p[19] = next(rd);
		p[20] = next(rd); /* ports, or ICMP type */
		p[22] = 0x30;
		fill(rd, p + 28, len < 40 ? len - 28 : 12);
		break;
	case 3: /* IPv6 UDP between the key-derived addresses */
	case 4: /* IPv6 to nobody */
		if (len < 48)
			len = 48;
		p[0] = 0x60 | tos >> 4;
		put16be(p + 4, len - 40);
		p[6] = kind & 0x10 ? 58 : 17;
		p[7] = 64;
		memcpy(p + 8, self->address, YIP_ADDR_LEN);
		memcpy(p + 24, other->address, YIP_ADDR_LEN);
		if (kind % 8 == 4)
			p[24] = next(rd), p[39] = next(rd);
		p[40] = next(rd);
		break;
	case 5: /* an IPv4 header whose lengths do not add up */
		if (len < 20)
			len = 20;
		fill(rd, p, 20);
		p[0] = 0x40 | (p[0] & 0x0f);
		break;
	case 6: /* whatever the input says */
		fill(rd, p, len);
		break;
	default: /* too big for the device */
		len = cap - hdr;
		memset(p, 0, len);
		p[0] = 0x45;
		put16be(p + 2, len);
		v4_addrs(from, p + 12, p + 16);
		break;
	}
	return hdr + len;
}

/* ---- forging datagrams from A ---- */

/* A's keys to forge with: current, previous or next (whichever the input picks and exist). */
static struct yip_keypair *forge_keys(struct reader *rd)
{
	struct yip_peer *a = A->dev.peers[0];
	struct yip_keypair *kps[3] = {a->cur, a->prev, a->next};
	uint8_t sel = next(rd);

	for (int i = 0; i < 3; i++) {
		struct yip_keypair *kp = kps[(sel + i) % 3];

		if (kp != NULL)
			return kp;
	}
	return NULL;
}

/* The counter of a forged datagram; advances A's own where it moves forward. */
static uint64_t forge_counter(struct reader *rd, struct yip_keypair *kp)
{
	uint8_t mode = next(rd);
	uint64_t c;

	switch (mode % 6) {
	case 0:
	case 1: /* the next one */
		return kp->send_counter++;
	case 5: /* far ahead: where rekeying by count starts, or past the last usable counter */
		c = (mode & 0x80 ? UINT64_MAX - (1ULL << 13) : 1ULL << 60) - next(rd);
		kp->send_counter = c + 1;
		return c;
	case 2: /* a jump: datagrams lost in between */
		c = kp->send_counter + 1 + next16(rd) % 5000;
		kp->send_counter = c + 1;
		return c;
	case 3: /* an old one: late, or a replay */
		c = 1 + next16(rd) % 5000;
		return kp->send_counter >= c ? kp->send_counter - c : 0;
	default: /* anything, A's counter untouched */
		return next64(rd);
	}
}

/* Seals plen bytes of plain as a datagram and hands it to B from A's address (or another). */
static void forge_send(struct reader *rd, const struct yip_keypair *kp, uint8_t type, uint8_t idx,
                       uint16_t block, uint64_t counter, size_t plen)
{
	uint8_t how = next(rd);
	uint32_t index = kp->remote_index;
	union yip_sockaddr from = A->addr;

	if (how & 1)
		index = next32(rd); /* probably nobody's */
	if (how & 2)
		from.in4.sin_port ^= 0x0100; /* A has moved: B follows if it authenticates */
	wire_data_header(dgram, type, idx, block, index, counter);
	yip_cipher_seal(dgram + WIRE_DATA_HDR, &kp->send, counter, dgram, WIRE_DATA_HDR, plain,
	                plen);
	if (how & 4)
		dgram[WIRE_DATA_HDR + (how >> 3) % (plen + YIP_AEAD_TAG)] ^= 1; /* fails */
	pair_rx(B, now, &from, dgram, WIRE_DATA_MIN + plen);
}

/* FEC index of a forged Data datagram: none, ARQ, a position, or anything. */
static uint8_t forge_idx(struct reader *rd)
{
	uint8_t v = next(rd);

	switch (v & 3) {
	case 0:
		return WIRE_FEC_NONE;
	case 1:
		return WIRE_FEC_ARQ;
	case 2:
		return (uint8_t)((v >> 2) % FEC_MAX_K);
	default:
		return next(rd);
	}
}

/* A block id near the ones A's engine uses, or anything. */
static uint16_t forge_block(struct reader *rd)
{
	uint8_t v = next(rd);
	unsigned cls = (v >> 1) % FLOW_CLASSES;

	if (v & 1)
		return next16(rd);
	/* Each class numbers its own blocks (wire_block). */
	return wire_block(cls, A->dev.peers[0]->fec.next_block[cls] + (v >> 3) % 8 - 4);
}

static void op_data(struct reader *rd)
{
	struct yip_keypair *kp = forge_keys(rd);
	uint8_t idx = forge_idx(rd);
	uint16_t block = forge_block(rd);
	size_t plen = 0, pre = 0;
	uint64_t counter;

	if (kp == NULL)
		return;
	counter = forge_counter(rd, kp);
	if (idx == WIRE_FEC_ARQ) {
		/* The counter the packet was first sent with: near this one, or anything. */
		uint8_t sel = next(rd);
		uint64_t orig = sel & 1 ? next64(rd) : counter - 1 - sel / 2;

		wire_arq_put(plain, orig);
		pre =
		    sel == 0xff ? next(rd) % WIRE_ARQ_PRE : WIRE_ARQ_PRE; /* too short, sometimes */
	}
	if (next(rd) & 1)
		plen = pre + make_packet(rd, 0, plain + pre, MAX_PLAIN - pre);
	else
		plen = pre; /* a keepalive, or an ARQ prefix alone */
	forge_send(rd, kp, WIRE_DATA, idx, block, counter, plen);
}

static void op_repair(struct reader *rd)
{
	struct yip_keypair *kp = forge_keys(rd);
	uint8_t j = next(rd), k = next(rd), r = next(rd), body = next(rd);
	uint16_t block = forge_block(rd);
	uint64_t counter;
	size_t plen;

	if (kp == NULL)
		return;
	counter = forge_counter(rd, kp);
	/* Mostly consistent: small K and R, j < R. */
	if (!(j & 0x80)) {
		k = (uint8_t)(1 + k % BLOCK_MAX_K);
		r = (uint8_t)(1 + r % 4);
		j = (uint8_t)(j % r);
	}
	memset(plain, 0, WIRE_REPAIR_PRE + WIRE_SYM_HDR);
	wire_repair_put(plain, k, r);
	if (body & 1) {
		/* A symbol that is a packet: with K = R = 1 (parity) the repair is
		 * the lost source itself, so this is what B rebuilds and delivers. */
		const size_t hdr = WIRE_REPAIR_PRE + WIRE_SYM_HDR;
		size_t len = make_packet(rd, 0, plain + hdr, MAX_PLAIN - hdr);
		struct wire_sym sym;

		sym.counter = body & 2 ? next64(rd) : counter - 1;
		sym.len = body & 4 ? next16(rd) : (uint16_t)len; /* a length that lies, sometimes */
		wire_sym_put(plain + WIRE_REPAIR_PRE, &sym);
		plen = hdr + len;
	} else {
		plen = 2 + (size_t)next16(rd) % (MAX_PLAIN - 1);
		memset(plain + 2, 0, plen - 2);
		fill(rd, plain + 2, plen - 2 < 64 ? plen - 2 : 64);
	}
	forge_send(rd, kp, WIRE_REPAIR, j, block, counter, plen);
}

static void op_report(struct reader *rd)
{
	struct yip_keypair *kp = forge_keys(rd);
	const struct yip_keypair *bkp = B->dev.peers[0]->cur;
	uint64_t bsent = bkp != NULL ? bkp->send_counter : 0; /* B's next counter */
	uint8_t n = next(rd), shape = next(rd);
	uint32_t now_us = (uint32_t)(now / 1000);
	size_t plen;
	uint64_t counter;

	if (kp == NULL)
		return;
	counter = forge_counter(rd, kp);
	n = shape & 1 ? n : n % (WIRE_REPORT_MAX_NACKS + 1);
	{
		struct wire_report r = {0};

		/* One statement each: the input is read in a fixed order. */
		r.received = next16(rd);
		r.span = next16(rd);
		r.bursts = next(rd);
		r.burst_sum = next16(rd);
		r.recovered = next(rd);
		r.unrecovered = next(rd);
		r.ts_us = now_us - next(rd);
		if (shape & 4) { /* echo one of B's timestamps: an RTT sample */
			r.echo_ts_us = now_us - next16(rd);
			r.echo_delay_us = next16(rd);
		} else if (shape & 8) {
			r.echo_ts_us = next32(rd);
			r.echo_delay_us = next32(rd);
		}
		r.n_nacks = n < WIRE_REPORT_MAX_NACKS ? n : WIRE_REPORT_MAX_NACKS;
		wire_report_put(plain, &r);
	}
	/* Then the layout itself, bent: another version, more NACKs than fit. */
	if (shape & 2)
		plain[0] = next(rd);
	plain[1] = n;
	for (unsigned i = 0; i < n && WIRE_REPORT_FIXED + 8 * (i + 1) <= MAX_PLAIN; i++) {
		uint8_t back = next(rd);
		uint64_t c = back & 0x80 ? next64(rd) : bsent - 1 - back;

		wire_put64(plain + WIRE_REPORT_FIXED + 8 * i, c);
	}
	plen = WIRE_REPORT_FIXED + 8 * (size_t)n;
	if (shape & 16) {
		/* A length that does not fit the count. */
		size_t bad = (plen + next(rd)) % (WIRE_REPORT_FIXED + 8 * 256);

		if (bad > plen)
			memset(plain + plen, 0, bad - plen);
		plen = bad;
	}
	forge_send(rd, kp, WIRE_REPORT, 0, 0, counter, plen);
}

/*
 * A whole FEC block from A with correct repairs: k sources (as Data
 * datagrams at positions 0..k-1) and r repairs computed over their symbols,
 * then only those the input lets through reach B. The sources' symbols can
 * also be corrupted before the repairs are computed, so a rebuilt packet
 * differs from what was sent.
 */
static void op_block(struct reader *rd)
{
	static uint8_t syms[BLOCK_MAX_K][WIRE_SYM_HDR + YIP_DEFAULT_MTU + 32];
	static uint8_t reps[FEC_MAX_R][WIRE_SYM_HDR + YIP_DEFAULT_MTU + 32];
	static size_t lens[BLOCK_MAX_K];
	struct yip_keypair *kp = forge_keys(rd);
	unsigned k = 1 + next(rd) % BLOCK_MAX_K, r = 1 + next(rd) % 4;
	uint16_t block = forge_block(rd);
	uint32_t arrive = next32(rd);
	uint8_t flags = next(rd);
	size_t longest = 0;
	uint8_t *rp[FEC_MAX_R];

	if (kp == NULL)
		return;
	for (unsigned j = 0; j < r; j++) {
		rp[j] = reps[j];
		memset(reps[j], 0, sizeof(reps[j]));
	}
	for (unsigned i = 0; i < k; i++) {
		uint64_t c = kp->send_counter++;
		size_t len = make_packet(rd, 0, syms[i] + WIRE_SYM_HDR, YIP_DEFAULT_MTU);

		wire_sym_put(syms[i], &(struct wire_sym){c, (uint16_t)len});
		lens[i] = WIRE_SYM_HDR + len;
		if (lens[i] > longest)
			longest = lens[i];
		if (arrive & (1u << i)) {
			memcpy(plain, syms[i] + WIRE_SYM_HDR, len);
			wire_data_header(dgram, WIRE_DATA, (uint8_t)i, block, kp->remote_index, c);
			yip_cipher_seal(dgram + WIRE_DATA_HDR, &kp->send, c, dgram, WIRE_DATA_HDR,
			                plain, len);
			pair_rx(B, now, &A->addr, dgram, WIRE_DATA_MIN + len);
		}
		if (flags & 1)
			syms[i][next(rd) % lens[i]] ^= next(rd); /* what the repairs say differs */
		fec_encode_add(r, i, syms[i], lens[i], rp);
	}
	for (unsigned j = 0; j < r; j++) {
		uint64_t c = kp->send_counter++;

		if (!(arrive & (1u << (16 + j))))
			continue;
		wire_repair_put(plain, (uint8_t)k, (uint8_t)r);
		memcpy(plain + WIRE_REPAIR_PRE, reps[j], longest);
		wire_data_header(dgram, WIRE_REPAIR, (uint8_t)j, block, kp->remote_index, c);
		yip_cipher_seal(dgram + WIRE_DATA_HDR, &kp->send, c, dgram, WIRE_DATA_HDR, plain,
		                WIRE_REPAIR_PRE + longest);
		pair_rx(B, now, &A->addr, dgram, WIRE_DATA_MIN + WIRE_REPAIR_PRE + longest);
	}
}

/* ---- the engines' own traffic ---- */

static void op_tx(struct reader *rd, int from)
{
	static uint8_t pkt[YIP_MAX_MTU + 64];
	unsigned count = 1 + next(rd) % 32;
	struct reader again = *rd;

	for (unsigned i = 0; i < count; i++) {
		struct reader r = again; /* the same packet each time */
		size_t len = make_packet(&r, from, pkt, sizeof(pkt));

		*rd = r;
		yip_device_tx(&P.n[from].dev, now, pkt, len);
		now += 20 * 1000; /* 50,000 packets a second */
	}
}

static void remember(const struct pair_dgram *d)
{
	unsigned i = n_history++ % HISTORY;

	memcpy(history[i].buf, d->buf, d->len);
	history[i].len = d->len;
}

/* Carries what node `from` sent to the other: lost where the mask says, maybe reversed or twice. */
static void op_pump(struct reader *rd, int from)
{
	struct pair_node *src = &P.n[from], *dst = &P.n[1 - from];
	uint32_t lose = next(rd) & 1 ? next32(rd) : 0;
	uint8_t order = next(rd);
	unsigned n = src->nout;

	pair_flush(src);
	for (unsigned k = 0; k < n; k++) {
		unsigned i = order & 1 ? n - 1 - k : k;
		const struct pair_dgram *d = &src->out[i];

		if (from == 0)
			remember(d);
		if (lose & (1u << (i % 32)))
			continue;
		pair_rx(dst, now, &src->addr, d->buf, d->len);
		if (order & 2)
			pair_rx(dst, now, &src->addr, d->buf, d->len);
	}
	src->nout = 0;
}

/*
 * One of A's recent datagrams again, maybe with a bit flipped; a flipped
 * Init or Resp can get its mac1 recomputed, as anyone who knows B's public
 * key can, so that Noise rather than mac1 turns it away.
 */
static void op_replay(struct reader *rd)
{
	uint8_t sel = next(rd), flip = next(rd);
	unsigned i;
	size_t len;

	if (n_history == 0)
		return;
	i = sel % (n_history < HISTORY ? n_history : HISTORY);
	len = history[i].len;
	memcpy(dgram, history[i].buf, len);
	if (sel & 0x80)
		dgram[flip % len] ^= 0x80;
	if ((sel & 0x40) && wire_classify(dgram, len) == WIRE_INIT)
		wire_init_mac1_put(dgram, B->dev.mac1_key);
	else if ((sel & 0x40) && wire_classify(dgram, len) == WIRE_RESP)
		wire_mac1_put(dgram, len, B->dev.mac1_key);
	pair_rx(B, now, &A->addr, dgram, len);
}

/*
 * Many sources from A, positions 0..63 of consecutive blocks, and no
 * repair: every one is kept for reassembly until B's symbol buffers run out
 * and it must give the oldest blocks up.
 */
static void op_flood(struct reader *rd)
{
	struct yip_keypair *kp = forge_keys(rd);
	unsigned count = 1 + next(rd) * 4;
	uint16_t block = forge_block(rd);
	size_t len;

	if (kp == NULL)
		return;
	len = make_packet(rd, 0, plain, MAX_PLAIN);
	for (unsigned i = 0; i < count; i++) {
		uint64_t c = kp->send_counter++;
		uint16_t b = (uint16_t)(block + i / FEC_MAX_K);

		wire_data_header(dgram, WIRE_DATA, (uint8_t)(i % FEC_MAX_K), b, kp->remote_index,
		                 c);
		yip_cipher_seal(dgram + WIRE_DATA_HDR, &kp->send, c, dgram, WIRE_DATA_HDR, plain,
		                len);
		pair_rx(B, now, &A->addr, dgram, WIRE_DATA_MIN + len);
	}
}

/*
 * A datagram with a live receiver index and a fresh counter but longer than
 * any B could receive: it needs no key to get that far.
 */
static void op_long(struct reader *rd)
{
	struct yip_keypair *kp = forge_keys(rd);
	size_t len = YIP_MAX_DGRAM + WIRE_DATA_MIN + 1 +
	             next16(rd) % (sizeof(dgram) - YIP_MAX_DGRAM - WIRE_DATA_MIN);

	if (kp == NULL)
		return;
	memset(dgram, 0, len);
	wire_data_header(dgram, WIRE_DATA + next(rd) % 3, 0, 0, kp->remote_index,
	                 forge_counter(rd, kp));
	pair_rx(B, now, &A->addr, dgram, len);
}

/* An Init to B from a third engine whose key B does not know. */
static void op_stranger(void)
{
	static const uint8_t key[YIP_KEY_LEN] = {7, 7, 7};
	uint8_t pkt[28] = {0x45, 0, 0, 28, [8] = 64, 17, [12] = 10, 0, 0, 3, 10, 0, 0, 2};
	char err[128];

	if (!have_c) {
		struct yip_cidr any = {.family = AF_INET, .plen = 0};
		struct yip_peer_config pc = {.has_endpoint = true,
		                             .endpoint = B->addr,
		                             .allowed_ips = &any,
		                             .n_allowed_ips = 1};
		struct yip_config cfg = {.peers = &pc, .n_peers = 1};
		const struct pair_opts o = {.out_cap = 4, .discard_overflow = true};

		memcpy(cfg.private_key, key, YIP_KEY_LEN);
		yip_key_public(cfg.public_key, key);
		yip_key_public(pc.public_key, P.keys[1]);
		if (pair_node_init(&C, &cfg, NULL, &o, err, sizeof(err)) != 0)
			__builtin_trap();
		C.addr = A->addr;
		C.addr.in4.sin_port ^= 0x0200;
		have_c = true;
		yip_device_tx(&C.dev, now, pkt, sizeof(pkt));
	} else {
		/* Its next retransmission. */
		yip_device_timers(&C.dev, C.dev.peers[0]->hs_next);
	}
	for (unsigned i = 0; i < C.nout; i++)
		pair_rx(B, now, &C.addr, C.out[i].buf, C.out[i].len);
	pair_discard(&C);
}

static void op_time(struct reader *rd)
{
	static const uint64_t unit[4] = {10 * 1000, YIP_NS_PER_MS, 100 * YIP_NS_PER_MS,
	                                 YIP_NS_PER_S};
	uint8_t sel = next(rd);

	now += (uint64_t)next(rd) * unit[sel % 4];
	if (!(sel & 4)) /* else the next datagram finds the timers not yet run */
		pair_timers(&P, now);
}

/* What yipctl and the loop read at any moment. */
static void op_status(void)
{
	for (int i = 0; i < 2; i++) {
		struct yip_device_info di;
		struct yip_peer_info pi;

		yip_device_info(&P.n[i].dev, &di);
		yip_device_peer_info(&P.n[i].dev, 0, now, &pi);
		yip_device_peer_info(&P.n[i].dev, 1, now, &pi);
		(void)yip_device_rtt_max(&P.n[i].dev);
		(void)yip_device_mtu(&P.n[i].dev);
	}
	for (int d = 0; d <= YIP_DROP_COUNT; d++)
		(void)yip_drop_name((enum yip_drop)d);
}

/* Unauthenticated bytes with a plausible type word. */
/*
 * A control message from A: a path probe or its answer (with the nonce B's
 * own probe carried, sometimes, so the answer measures a path), a message
 * of a kind only servers send, or bytes that are no message at all.
 */
static void op_ctrl(struct reader *rd)
{
	struct yip_keypair *kp = forge_keys(rd);
	const struct yip_peer *bp = B->dev.peers[0];
	struct wire_ctrl c = {0};
	uint8_t sel = next(rd);
	size_t plen;

	if (kp == NULL)
		return;
	if (sel % 4 == 3) {
		plen = next(rd) % 64;
		fill(rd, plain, plen);
	} else {
		static const uint8_t kinds[] = {
		    WIRE_CTRL_PROBE, WIRE_CTRL_PROBE_OK, WIRE_CTRL_INTRO,  WIRE_CTRL_REGISTERED,
		    WIRE_CTRL_ASK,   WIRE_CTRL_UNKNOWN,  WIRE_CTRL_YOUARE, WIRE_CTRL_REGISTER};

		c.kind = kinds[(sel >> 2) % sizeof(kinds)];
		c.nonce = next64(rd);
		if ((sel & 0x40) && bp->n_paths > 0)
			c.nonce = bp->paths[next(rd) % bp->n_paths].probe_nonce;
		c.ts_us = next32(rd);
		c.id = next32(rd);
		c.n_cands = next(rd) % 3;
		for (unsigned i = 0; i < c.n_cands; i++) {
			c.cands[i] = A->addr;
			c.cands[i].in4.sin_port = (uint16_t)(next16(rd) | 1);
		}
		c.addr = A->addr;
		plen = wire_ctrl_put(plain, &c);
	}
	forge_send(rd, kp, WIRE_CTRL, 0, 0, forge_counter(rd, kp), plen);
}

static void op_raw(struct reader *rd)
{
	size_t len = next16(rd) % (YIP_MAX_DGRAM + 1);

	fill(rd, dgram, len < 64 ? len : 64);
	if (len > 64)
		memset(dgram + 64, 0, len - 64);
	pair_rx(B, now, &A->addr, dgram, len);
}

/* ---- setup ---- */

static bool start(uint8_t flags, uint8_t flags2)
{
	static const uint8_t keys[2][YIP_KEY_LEN] = {{1, 2, 3}, {4, 5, 6}};
	const unsigned chacha = YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305);
	const unsigned aes = YIP_CIPHER_BIT(YIP_CIPHER_AES256_GCM);
	/* (sodium_init first: it finds out what the CPU has) */
	bool no_cipher = (flags2 & F2_NO_CIPHER) && yip_crypto_init() == 0 &&
	                 yip_cipher_available(YIP_CIPHER_AES256_GCM);
	struct pair_opts o = {
	    .tap = flags & F_TAP,
	    .fec_off = flags & F_FEC_OFF,
	    .ciphers = {no_cipher          ? aes
	                : flags & F_CHACHA ? chacha
	                                   : 0,
	                flags & F_CHACHA || no_cipher ? chacha : 0},
	    .seal_later = flags & F_SEAL_LATER,
	    .preopen = flags & F_PREOPEN,
	    .no_endpoint = {false, flags & F_NO_EP},
	    .mtu = {0, flags & F_SMALL_MTU ? 1280 : 0},
	    .keepalive = {flags2 & F2_KEEPALIVE ? 25 : 0, flags2 & F2_KEEPALIVE ? 1 : 0},
	    .discard_overflow = true,
	    .out_cap = 128,
	    .keys = keys,
	};
	uint8_t pkt[64];
	static const uint8_t nothing;
	struct reader none = {&nothing, 0};
	char err[128];

	if (pair_init(&P, &o, err, sizeof(err)) != 0)
		__builtin_trap();
	A = &P.n[0];
	B = &P.n[1];
	tap = o.tap;
	now = YIP_NS_PER_S;
	n_history = 0;
	if ((flags & F_NO_HS) || no_cipher)
		return true;
	/* A's first packet starts the handshake; its queued packet then goes as data. */
	yip_device_tx(&A->dev, now, pkt, make_packet(&none, 0, pkt, sizeof(pkt)));
	pair_settle(&P, now);
	return yip_peer_established(A->dev.peers[0], now) &&
	       yip_peer_established(B->dev.peers[0], now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	struct reader rd = {data, size};
	uint8_t flags;

	memo_reset();
	if (!quiet) {
		yip_log_set_level(YIP_LOG_ERROR);
		quiet = true;
	}
	flags = next(&rd);
	if (!start(flags, next(&rd)))
		__builtin_trap(); /* the pair no longer completes a handshake */
	for (unsigned ops = 0; ops < MAX_OPS && rd.n > 0; ops++) {
		switch (next(&rd) % 20) {
		case 0:
		case 1:
		case 2:
			op_data(&rd);
			break;
		case 3:
			op_repair(&rd);
			break;
		case 4:
			op_report(&rd);
			break;
		case 5:
			op_block(&rd);
			break;
		case 6:
			op_tx(&rd, 0);
			break;
		case 7:
			op_tx(&rd, 1);
			break;
		case 8:
			op_pump(&rd, 0);
			break;
		case 9:
			op_pump(&rd, 1);
			break;
		case 10:
		case 11:
			op_time(&rd);
			break;
		case 12:
			op_replay(&rd);
			break;
		case 13:
			pair_settle(&P, now);
			break;
		case 14:
			op_status();
			break;
		case 16:
			op_flood(&rd);
			break;
		case 17:
			op_long(&rd);
			break;
		case 18:
			op_stranger();
			break;
		case 19:
			op_ctrl(&rd);
			break;
		default:
			op_raw(&rd);
			break;
		}
	}
	if (have_c) {
		pair_node_free(&C);
		have_c = false;
	}
	pair_free(&P);
	return 0;
}
