/*
 * What a neighbour can do to a live gossip engine. Every input starts from
 * the same state: engine E holds a few items (small ones, one of 20 000
 * bytes, a tombstone), and two neighbours are up: F, played by the input,
 * and H, another engine joined to E in memory whose messages to E are
 * delivered as the input says. The input is a program of operations, one
 * selector byte each and their arguments:
 *
 *   0  raw bytes from F (length byte, bytes)
 *   1  an ANNOUNCE or DIGEST from F of entries built from a pool of ids,
 *      kinds, versions and content hashes (some real, some not)
 *   2  an ITEM from F for a pool item: version, hash, total, offset chosen
 *      by the input, data from the input or from the real bytes
 *   3  a PULL from F for E's items with chosen ranges
 *   4  a SUMMARY or TREE from F with chosen hashes and counts
 *   5  time passes (1 ms .. 65 s) and every engine runs its timers
 *   6  F's session goes down and comes back; or E removes or puts an item
 *   7  carry messages between E and H (a chosen number, some dropped)
 *
 * Every message E sends must be within its budget and decode; what E
 * sends to F in reply to F's requests (TREE, DIGEST, ITEM) must stay within
 * F's reply budget.
 * E's accept takes items whose first byte is even, so both outcomes run.
 * Kind 2 is urgent (fetched first, from its own share of the wants).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/gossip.h"
#include "wire/gossip.h"

#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define MTU     600
#define MS      1000000ULL
#define SEC     1000000000ULL
#define POOL    6
#define MAX_OPS 200
#define QUEUE   256

enum { NE, NH };

static const uint8_t F_ID[GOSSIP_ID_LEN] = {0xf0, 1};
static const uint8_t E_ID[GOSSIP_ID_LEN] = {0xe0, 2};
static const uint8_t H_ID[GOSSIP_ID_LEN] = {0xa0, 3};

static struct gossip *eng[2];
static uint64_t now, rng_state;
static struct gossip_blob *pool[POOL];

/* Messages from one engine to the other, not yet delivered. */
static struct {
	int to;
	size_t len;
	uint8_t buf[MTU];
} queue[QUEUE];
static unsigned q_head, q_n;
static uint64_t to_f_bytes, f_ups;

static bool accept_even(void *ctx, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                        const uint8_t *bytes, size_t len)
{
	(void)ctx;
	(void)kind;
	(void)id;
	(void)version;
	return len == 0 || bytes[0] % 2 == 0;
}

static void on_send(void *ctx, const uint8_t nbr[GOSSIP_ID_LEN], const uint8_t *msg, size_t len)
{
	struct wire_gossip m;
	int from = (int)(intptr_t)ctx;

	CHECK(len <= MTU);
	CHECK(wire_gossip_get(&m, msg, len));
	if (memcmp(nbr, F_ID, GOSSIP_ID_LEN) == 0) {
		CHECK(from == NE);
		/* Replies only (SUMMARY and PULL are E's own; ANNOUNCE may be either). */
		if (m.type == WIRE_GOSSIP_ITEM || m.type == WIRE_GOSSIP_TREE ||
		    m.type == WIRE_GOSSIP_DIGEST)
			to_f_bytes += len;
		return;
	}
	if (q_n == QUEUE)
		return; /* the link's queue is full: lost */
	queue[(q_head + q_n) % QUEUE].to = 1 - from;
	queue[(q_head + q_n) % QUEUE].len = len;
	memcpy(queue[(q_head + q_n) % QUEUE].buf, msg, len);
	q_n++;
}

static uint64_t fuzz_rand(void *ctx)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	(void)ctx;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static struct gossip *make(int which)
{
	struct gossip_conf c;

	gossip_conf_default(&c);
	memcpy(c.self, which == NE ? E_ID : H_ID, GOSSIP_ID_LEN);
	c.mtu = MTU;
	c.member_kind = 1;
	gossip_conf_urgent(&c, 2); /* one of the pool's kinds */
	c.ctx = (void *)(intptr_t)which;
	c.accept = accept_even;
	c.send = on_send;
	c.rand = fuzz_rand;
	c.max_wants = 64;
	c.max_assembly = 50000;
	c.max_tombstones = 8;
	return gossip_new(&c, now);
}

static void setup(void)
{
	static const size_t sizes[POOL] = {0, 1, 300, 600, 1500, 20000};
	uint8_t id[GOSSIP_ID_LEN], *bytes = malloc(20000);

	now = 1000 * SEC;
	rng_state = 1;
	q_head = q_n = 0;
	to_f_bytes = 0;
	f_ups = 1;
	eng[NE] = make(NE);
	eng[NH] = make(NH);
	CHECK(eng[NE] && eng[NH] && bytes);
	for (int k = 0; k < POOL; k++) {
		memset(id, 0, sizeof(id));
		id[0] = (uint8_t)(k + 1);
		for (size_t i = 0; i < sizes[k]; i++)
			bytes[i] = (uint8_t)(i * 7 + (size_t)k * 2);
		pool[k] = gossip_blob_new((uint8_t)(k % 3), id, 10, bytes, sizes[k]);
		CHECK(pool[k] != NULL);
		if (k != 1)
			CHECK(gossip_put(eng[NE], now, pool[k], GOSSIP_QUIET) == 0);
	}
	free(bytes);
	/* A member record each, so E and H want each other; a tombstone. */
	{
		struct gossip_blob *r = gossip_blob_new(1, H_ID, 1, (const uint8_t *)"h", 1);
		struct gossip_blob *s = gossip_blob_new(1, E_ID, 1, (const uint8_t *)"e", 1);

		CHECK(gossip_put(eng[NE], now, r, GOSSIP_QUIET) == 0);
		CHECK(gossip_put(eng[NH], now, s, GOSSIP_QUIET) == 0);
		gossip_blob_unref(r);
		gossip_blob_unref(s);
	}
	CHECK(gossip_remove(eng[NE], now, pool[2]->kind, pool[2]->id) == 0);
	gossip_peer_up(eng[NE], now, F_ID, 0);
	gossip_peer_up(eng[NE], now, H_ID, 0);
	gossip_peer_up(eng[NH], now, E_ID, 0);
	(void)gossip_timers(eng[NE], now);
	(void)gossip_timers(eng[NH], now);
}

static void teardown(void)
{
	gossip_free(eng[NE]);
	gossip_free(eng[NH]);
	for (int k = 0; k < POOL; k++)
		gossip_blob_unref(pool[k]);
}

static void from_f(const uint8_t *msg, size_t len)
{
	gossip_rx(eng[NE], now, F_ID, msg, len);
	(void)gossip_timers(eng[NE], now);
}

static void pool_entry(struct reader *rd, struct wire_gossip_entry *e)
{
	uint8_t sel = next(rd);
	const struct gossip_blob *b = pool[sel % POOL];

	e->kind = sel & 0x80 ? next(rd) : b->kind;
	memcpy(e->id, b->id, GOSSIP_ID_LEN);
	if (sel & 0x40)
		e->id[5] = next(rd);
	e->version = sel & 0x20 ? next(rd) : b->version + (sel & 0x10 ? 1 : 0);
	e->chash = sel & 0x08 ? next64(rd) : b->chash;
	e->len = sel & 0x04 ? next16(rd) : b->len;
}

static void op_list(struct reader *rd, uint8_t *buf)
{
	uint8_t sel = next(rd);
	unsigned n = 1 + next(rd) % 8;
	size_t len;

	if (sel & 1)
		len = wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_ANNOUNCE, (uint8_t)n);
	else
		len = wire_gossip_digest_hdr_put(
		    buf, sel & 2 ? WIRE_GOSSIP_REPLY : 0, (uint8_t)(1 + next(rd) % 3),
		    pool[next(rd) % POOL]->pos >> (6 * (next(rd) % 3)), (uint8_t)n);
	for (unsigned i = 0; i < n; i++) {
		struct wire_gossip_entry e;

		pool_entry(rd, &e);
		len += wire_gossip_entry_put(buf + len, &e);
	}
	from_f(buf, len);
}

static void op_item(struct reader *rd, uint8_t *buf)
{
	uint8_t sel = next(rd);
	const struct gossip_blob *b = pool[sel % POOL];
	uint64_t version = sel & 0x80 ? b->version + 1 : b->version;
	uint32_t total = sel & 0x40 ? next16(rd) : b->len;
	uint32_t off = (uint32_t)(next(rd) % 80) * WIRE_GOSSIP_UNIT, dlen = next16(rd) % (MTU - 57);
	size_t len = wire_gossip_item_hdr_put(buf, b->kind, b->id, version,
	                                      sel & 0x20 ? next64(rd) : b->chash, total, off);

	if (sel & 0x10 && off < b->len)
		memcpy(buf + len, b->bytes + off, dlen < b->len - off ? dlen : b->len - off);
	else
		fill(rd, buf + len, dlen);
	from_f(buf, len + dlen);
}

static void op_pull(struct reader *rd, uint8_t *buf)
{
	unsigned n = 1 + next(rd) % 9;
	size_t len = wire_gossip_list_hdr_put(buf, WIRE_GOSSIP_PULL, (uint8_t)n);

	for (unsigned i = 0; i < n; i++) {
		uint8_t sel = next(rd);
		const struct gossip_blob *b = pool[sel % POOL];
		struct wire_gossip_pull p = {.kind = b->kind,
		                             .version = b->version - (sel & 0x80 ? 1 : 0),
		                             .chash = b->chash,
		                             .offset =
		                                 (uint32_t)(next(rd) % 400) * WIRE_GOSSIP_UNIT,
		                             .length = sel & 0x40 ? next16(rd) : 0};

		memcpy(p.id, b->id, GOSSIP_ID_LEN);
		len += wire_gossip_pull_put(buf + len, &p);
	}
	from_f(buf, len);
}

static void op_tree(struct reader *rd, uint8_t *buf)
{
	uint8_t sel = next(rd);
	size_t len;

	if (sel & 1) {
		len = wire_gossip_summary_put(buf, sel & 2 ? WIRE_GOSSIP_WISHED : 0, next32(rd),
		                              next64(rd), next64(rd));
	} else {
		uint8_t level = (uint8_t)(next(rd) % 3), first = (uint8_t)(next(rd) % 64);
		uint8_t n = (uint8_t)(1 + next(rd) % (64 - first));
		uint32_t index = pool[next(rd) % POOL]->pos >> (18 - 6 * level);

		if (n > (MTU - WIRE_GOSSIP_TREE_HDR) / WIRE_GOSSIP_CHILD)
			n = (MTU - WIRE_GOSSIP_TREE_HDR) / WIRE_GOSSIP_CHILD;
		len = wire_gossip_tree_hdr_put(buf, level, index, first, n);
		for (unsigned i = 0; i < n; i++)
			len +=
			    wire_gossip_child_put(buf + len, next(rd) ? next64(rd) : 0, next(rd));
	}
	from_f(buf, len);
}

/* Runs both engines' timers; returns the earlier of their next deadlines. */
static uint64_t timers_all(void)
{
	uint64_t next = UINT64_MAX;

	for (int i = 0; i < 2; i++) {
		uint64_t d = gossip_timers(eng[i], now);

		CHECK(d > now);
		next = d < next ? d : next;
	}
	return next;
}

static void op_time(struct reader *rd)
{
	uint64_t d = next(rd) & 1 ? (uint64_t)next16(rd) * MS : (1 + next(rd)) * MS;
	uint64_t end = now + d, due = now;

	/* As a loop sleeps: from one run of the timers to the earliest
	 * deadline they return (an engine that needs to run before the time it
	 * gives would show here), but in steps of at least 50 ms, so a nearer
	 * deadline is met up to 50 ms late and a long wait costs few runs. */
	while (now < end) {
		uint64_t step = due > now + 50 * MS ? due - now : 50 * MS;

		now = step < end - now ? now + step : end;
		due = timers_all();
	}
}

static void op_state(struct reader *rd)
{
	uint8_t sel = next(rd);
	const struct gossip_blob *b = pool[next(rd) % POOL];

	switch (sel % 4) {
	case 0:
		gossip_peer_down(eng[NE], now, F_ID);
		gossip_peer_up(eng[NE], now, F_ID, sel & 0x80 ? 256 : 0);
		f_ups++; /* a new session starts with a full budget */
		break;
	case 1:
		(void)gossip_remove(eng[NE], now, b->kind, b->id);
		break;
	case 2: {
		struct gossip_blob *nb =
		    gossip_blob_new(b->kind, b->id, b->version + 1 + next(rd), b->bytes, b->len);

		CHECK(nb != NULL);
		(void)gossip_put(eng[sel & 0x80 ? NH : NE], now, nb, 0);
		gossip_blob_unref(nb);
		break;
	}
	default:
		gossip_peer_down(eng[NE], now, H_ID);
		gossip_peer_down(eng[NH], now, E_ID);
		gossip_peer_up(eng[NE], now, H_ID, 0);
		gossip_peer_up(eng[NH], now, E_ID, 0);
		break;
	}
	(void)timers_all();
}

static void op_carry(struct reader *rd)
{
	unsigned k = next(rd);
	uint8_t lose = next(rd);

	for (unsigned i = 0; i < k && q_n > 0; i++) {
		unsigned at = q_head;

		q_head = (q_head + 1) % QUEUE;
		q_n--;
		if ((lose >> (i % 8)) & 1)
			continue;
		gossip_rx(eng[queue[at].to], now, queue[at].to == NE ? H_ID : E_ID, queue[at].buf,
		          queue[at].len);
		(void)gossip_timers(eng[queue[at].to], now);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {data, size};
	static uint8_t buf[1 << 16];
	uint64_t t0;

	setup();
	t0 = now;
	for (unsigned ops = 0; rd.n > 0 && ops < MAX_OPS; ops++) {
		uint8_t op = next(&rd);

		switch (op % 8) {
		case 0: {
			size_t len = next16(&rd) % (MTU + 64);

			fill(&rd, buf, len);
			from_f(buf, len);
			break;
		}
		case 1:
			op_list(&rd, buf);
			break;
		case 2:
			op_item(&rd, buf);
			break;
		case 3:
			op_pull(&rd, buf);
			break;
		case 4:
			op_tree(&rd, buf);
			break;
		case 5:
			op_time(&rd);
			break;
		case 6:
			op_state(&rd);
			break;
		default:
			op_carry(&rd);
			break;
		}
	}
	/* What E sent F in reply: within F's budget, a 32 KiB burst per session
	 * and 32 KiB/s. */
	CHECK(to_f_bytes <= f_ups * 32768 + (now - t0) * 32768 / SEC);
	teardown();
	return 0;
}
