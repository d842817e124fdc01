/*
 * The gossip engine (src/gossip) in memory: engines joined by links with a
 * fixed delay, a clock the test drives, and filters that drop or alter
 * messages on the way. Every message any engine sends is checked against
 * its budget and decoded with the wire decoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gossip/gossip.h"
#include "wire/gossip.h"

#define TESTRAND_SEED 0x5eed60551bULL
#include "testrand.h"

#define MS     1000000ULL
#define SEC    1000000000ULL
#define MAXN   24
#define MEMBER 1 /* kinds */
#define ROOTS  2
#define REVOKE 3
#define OTHER  4
#define FAKE   0xf0 /* id[0] of a neighbour played by the test itself */

struct net;

struct tnode {
	struct net *net;
	struct gossip *g;
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t deadline;
	unsigned verified;
	bool (*accept)(struct tnode *t, uint8_t kind, const uint8_t *bytes, size_t len);
	/* Neighbour wishes, as the engine told them. */
	bool wants[256];
	unsigned want_calls;
};

struct tmsg {
	struct tmsg *next;
	uint64_t at;
	uint8_t from[GOSSIP_ID_LEN], to[GOSSIP_ID_LEN];
	size_t len;
	uint8_t buf[];
};

struct net {
	struct tnode n[MAXN];
	int count;
	uint64_t now, delay;
	size_t mtu;
	struct tmsg *head, *tail;
	/* True drops the message; it may also change it. */
	bool (*filter)(struct net *net, struct tmsg *m);
	unsigned filtered;
	/* Messages to the fake neighbour. */
	uint64_t fake_bytes, fake_msgs, fake_items, fake_pulls;
	unsigned by_type[8];
};

static struct net N;

static void make_id(uint8_t id[GOSSIP_ID_LEN], unsigned k)
{
	memset(id, 0, GOSSIP_ID_LEN);
	id[0] = (uint8_t)k; /* a node's index + 1, for nodes */
	id[1] = 0x5a;
	id[3] = (uint8_t)(k >> 8);
	id[31] = (uint8_t)(k * 7);
}

static struct tnode *node_of(const uint8_t id[GOSSIP_ID_LEN])
{
	if (id[0] == 0 || id[0] > N.count)
		return NULL;
	return &N.n[id[0] - 1];
}

static void t_send(void *ctx, const uint8_t nbr[GOSSIP_ID_LEN], const uint8_t *msg, size_t len)
{
	struct tnode *t = ctx;
	struct tmsg *m;
	struct wire_gossip w;

	/* Every message within the budget, and well formed. */
	assert_true(len <= t->net->mtu);
	assert_true(wire_gossip_get(&w, msg, len));
	N.by_type[msg[0] & 7]++;
	if (nbr[0] == FAKE) {
		N.fake_bytes += len;
		N.fake_msgs++;
		N.fake_items += msg[0] == WIRE_GOSSIP_ITEM;
		N.fake_pulls += w.type == WIRE_GOSSIP_PULL ? w.n : 0;
		return;
	}
	m = malloc(sizeof(*m) + len);
	assert_non_null(m);
	m->next = NULL;
	m->at = N.now + N.delay;
	memcpy(m->from, t->id, GOSSIP_ID_LEN);
	memcpy(m->to, nbr, GOSSIP_ID_LEN);
	m->len = len;
	memcpy(m->buf, msg, len);
	if (N.tail)
		N.tail->next = m;
	else
		N.head = m;
	N.tail = m;
}

static bool t_accept(void *ctx, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                     const uint8_t *bytes, size_t len)
{
	struct tnode *t = ctx;

	(void)id;
	(void)version;
	t->verified++;
	return t->accept == NULL || t->accept(t, kind, bytes, len);
}

static void t_want(void *ctx, const uint8_t id[GOSSIP_ID_LEN], bool want)
{
	struct tnode *t = ctx;

	t->wants[id[0]] = want;
	t->want_calls++;
}

static uint64_t t_rand(void *ctx)
{
	(void)ctx;
	return rng();
}

static void conf_for(struct gossip_conf *c, struct tnode *t)
{
	gossip_conf_default(c);
	memcpy(c->self, t->id, GOSSIP_ID_LEN);
	c->mtu = N.mtu;
	c->member_kind = MEMBER;
	c->ctx = t;
	c->accept = t_accept;
	c->send = t_send;
	c->want = t_want;
	c->rand = t_rand;
}

/* A network of k engines, none connected; each holds every node's member
 * record (so that they want each other as neighbours) unless bare. */
static void net_init_bare(int k, size_t mtu, void (*tweak)(struct gossip_conf *c), bool bare)
{
	memset(&N, 0, sizeof(N));
	N.count = k;
	N.delay = 20 * MS;
	N.mtu = mtu;
	N.now = 1000 * SEC;
	for (int i = 0; i < k; i++) {
		struct tnode *t = &N.n[i];
		struct gossip_conf c;

		t->net = &N;
		make_id(t->id, (unsigned)i + 1);
		conf_for(&c, t);
		if (tweak)
			tweak(&c);
		t->g = gossip_new(&c, N.now);
		assert_non_null(t->g);
		t->deadline = N.now;
	}
	for (int i = 0; i < k && !bare; i++)
		for (int j = 0; j < k; j++) {
			struct gossip_blob *b = gossip_blob_new(
			    MEMBER, N.n[j].id, 1, (const uint8_t *)"member record", 13);

			assert_non_null(b);
			assert_int_equal(gossip_put(N.n[i].g, N.now, b, GOSSIP_QUIET), 0);
			gossip_blob_unref(b);
		}
}

static void net_init(int k, size_t mtu, void (*tweak)(struct gossip_conf *c))
{
	net_init_bare(k, mtu, tweak, false);
}

static void net_free(void)
{
	while (N.head) {
		struct tmsg *m = N.head;

		N.head = m->next;
		free(m);
	}
	for (int i = 0; i < N.count; i++)
		gossip_free(N.n[i].g);
}

static void link_up(int a, int b)
{
	gossip_peer_up(N.n[a].g, N.now, N.n[b].id, 0);
	gossip_peer_up(N.n[b].g, N.now, N.n[a].id, 0);
	N.n[a].deadline = N.n[b].deadline = N.now;
}

static void link_down(int a, int b)
{
	gossip_peer_down(N.n[a].g, N.now, N.n[b].id);
	gossip_peer_down(N.n[b].g, N.now, N.n[a].id);
	N.n[a].deadline = N.n[b].deadline = N.now;
}

/* Runs the network until time t. */
static void run_until(uint64_t t)
{
	for (unsigned steps = 0;; steps++) {
		uint64_t next = N.head ? N.head->at : UINT64_MAX;

		assert_true(steps < 10000000);
		for (int i = 0; i < N.count; i++)
			if (N.n[i].deadline < next)
				next = N.n[i].deadline;
		if (next > t) {
			N.now = t;
			return;
		}
		if (next > N.now)
			N.now = next;
		while (N.head && N.head->at <= N.now) {
			struct tmsg *m = N.head;
			struct tnode *to = node_of(m->to);

			N.head = m->next;
			if (!N.head)
				N.tail = NULL;
			if (N.filter && N.filter(&N, m)) {
				N.filtered++;
			} else if (to != NULL) {
				gossip_rx(to->g, N.now, m->from, m->buf, m->len);
				to->deadline = N.now;
			}
			free(m);
		}
		for (int i = 0; i < N.count; i++)
			if (N.n[i].deadline <= N.now) {
				N.n[i].deadline = gossip_timers(N.n[i].g, N.now);
				assert_true(N.n[i].deadline > N.now);
			}
	}
}

static void run_for(uint64_t d)
{
	run_until(N.now + d);
}

static struct gossip_blob *item(uint8_t kind, unsigned k, uint64_t version, size_t len,
                                uint8_t fill)
{
	uint8_t id[GOSSIP_ID_LEN], *bytes = malloc(len + 1);
	struct gossip_blob *b;

	assert_non_null(bytes);
	make_id(id, k);
	id[2] = kind;
	for (size_t i = 0; i < len; i++)
		bytes[i] = (uint8_t)(fill + i * 31 + (i >> 8));
	b = gossip_blob_new(kind, id, version, bytes, len);
	free(bytes);
	assert_non_null(b);
	return b;
}

/* Puts a fresh item on node i; returns the blob (the caller's reference). */
static struct gossip_blob *put(int i, uint8_t kind, unsigned k, uint64_t version, size_t len,
                               uint8_t fill)
{
	struct gossip_blob *b = item(kind, k, version, len, fill);

	assert_int_equal(gossip_put(N.n[i].g, N.now, b, 0), 0);
	N.n[i].deadline = N.now;
	return b;
}

/* Does node i hold exactly b? */
static bool holds(int i, const struct gossip_blob *b)
{
	const struct gossip_blob *h = gossip_get(N.n[i].g, b->kind, b->id);

	return h != NULL && h->version == b->version && h->len == b->len &&
	       memcmp(h->bytes, b->bytes, b->len) == 0;
}

static struct gossip_stats stats(int i)
{
	struct gossip_stats s;

	gossip_get_stats(N.n[i].g, &s);
	return s;
}

static uint64_t drops(int i, enum gossip_drop d)
{
	return stats(i).drops[d];
}

static uint64_t all_drops(int i)
{
	struct gossip_stats s = stats(i);
	uint64_t n = 0;

	for (int d = 0; d < GOSSIP_DROP_COUNT; d++)
		n += s.drops[d];
	return n;
}

/* ---- tests --------------------------------------------------------------------- */

/* A line of three: an item put at one end reaches the other through the middle. */
static void three_converge(void **state)
{
	struct gossip_blob *b;

	(void)state;
	net_init(3, 1200, NULL);
	link_up(0, 1);
	link_up(1, 2);
	b = put(0, OTHER, 100, 1, 400, 1);
	run_for(2 * SEC);
	assert_true(holds(1, b));
	assert_true(holds(2, b));
	/* Within a few round trips of 40 ms: batching plus announce, pull, item per hop. */
	assert_int_equal(stats(2).accepted, 1);
	assert_int_equal(stats(1).verified, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(all_drops(i), 0);
	gossip_blob_unref(b);
	net_free();
}

/* Two engines, many items both ways at once. */
static void two_converge_many(void **state)
{
	struct gossip_blob *b[60];

	(void)state;
	net_init(2, 1200, NULL);
	link_up(0, 1);
	for (int k = 0; k < 60; k++)
		b[k] = put(k % 2, OTHER, 200 + (unsigned)k, 1, 100 + 13 * (size_t)k, (uint8_t)k);
	run_for(5 * SEC);
	for (int k = 0; k < 60; k++) {
		assert_true(holds(0, b[k]) && holds(1, b[k]));
		gossip_blob_unref(b[k]);
	}
	assert_int_equal(stats(0).items, 60 + 2);
	assert_int_equal(all_drops(0) + all_drops(1), 0);
	net_free();
}

/* A newer version supersedes everywhere; an older one is refused; at one
 * version, the higher content hash wins on every node. */
static void newer_version_wins(void **state)
{
	struct gossip_blob *v1, *v2, *old, *x, *y;

	(void)state;
	net_init(3, 1200, NULL);
	link_up(0, 1);
	link_up(1, 2);
	v1 = put(0, OTHER, 7, 1, 300, 1);
	run_for(2 * SEC);
	assert_true(holds(2, v1));
	v2 = put(2, OTHER, 7, 2, 320, 2);
	run_for(2 * SEC);
	for (int i = 0; i < 3; i++)
		assert_true(holds(i, v2));
	old = item(OTHER, 7, 1, 300, 9);
	assert_int_equal(gossip_put(N.n[1].g, N.now, old, 0), -1);
	/* Two different contents under version 3, put at both ends at once. */
	x = put(0, OTHER, 7, 3, 300, 3);
	y = put(2, OTHER, 7, 3, 300, 4);
	run_for(3 * SEC);
	{
		const struct gossip_blob *win = x->chash > y->chash ? x : y;

		for (int i = 0; i < 3; i++)
			assert_true(holds(i, win));
	}
	gossip_blob_unref(v1);
	gossip_blob_unref(v2);
	gossip_blob_unref(old);
	gossip_blob_unref(x);
	gossip_blob_unref(y);
	net_free();
}

static bool refuse_revocations(struct tnode *t, uint8_t kind, const uint8_t *bytes, size_t len)
{
	(void)t;
	(void)bytes;
	(void)len;
	return kind != REVOKE;
}

/* The middle node refuses an item: it neither stores nor forwards it, and
 * does not fetch the same version again while it remembers refusing it. */
static void rejected_not_forwarded(void **state)
{
	struct gossip_blob *b;

	(void)state;
	net_init(3, 1200, NULL);
	N.n[1].accept = refuse_revocations;
	link_up(0, 1);
	link_up(1, 2);
	b = put(0, REVOKE, 1, 5, 500, 1);
	run_for(30 * SEC); /* announcements, then anti-entropy rounds */
	assert_null(gossip_get(N.n[1].g, REVOKE, b->id));
	assert_null(gossip_get(N.n[2].g, REVOKE, b->id));
	assert_int_equal(N.n[1].verified, 1);
	assert_int_equal(drops(1, GOSSIP_DROP_REJECTED), 1);
	assert_int_equal(N.n[2].verified, 0);
	gossip_blob_unref(b);
	net_free();
}

/* A removed item does not come back from a neighbour at its old version;
 * a newer one is taken. */
static void removed_not_resurrected(void **state)
{
	struct gossip_blob *v1, *v2;

	(void)state;
	net_init(2, 1200, NULL);
	link_up(0, 1);
	v1 = put(0, OTHER, 9, 1, 300, 1);
	run_for(2 * SEC);
	assert_true(holds(1, v1));
	assert_int_equal(gossip_remove(N.n[1].g, N.now, OTHER, v1->id), 0);
	N.n[1].deadline = N.now;
	assert_int_equal(stats(1).tombstones, 1);
	/* Node 0 still holds it and keeps telling (anti-entropy every 2 s). */
	run_for(40 * SEC);
	assert_null(gossip_get(N.n[1].g, OTHER, v1->id));
	assert_int_equal(stats(1).accepted, 1);
	/* The owner cannot put it back at the same version either. */
	assert_int_equal(gossip_put(N.n[1].g, N.now, v1, 0), -1);
	v2 = put(0, OTHER, 9, 2, 300, 2);
	run_for(3 * SEC);
	assert_true(holds(1, v2));
	assert_int_equal(stats(1).tombstones, 0);
	gossip_blob_unref(v1);
	gossip_blob_unref(v2);
	net_free();
}

static void few_tombstones(struct gossip_conf *c)
{
	c->max_tombstones = 4;
	c->tombstone_ns = 30 * SEC;
}

/* Tombstones are bounded in number and in time. */
static void tombstones_bounded(void **state)
{
	struct gossip_blob *b[10];

	(void)state;
	net_init(1, 1200, few_tombstones);
	for (int k = 0; k < 10; k++) {
		b[k] = put(0, OTHER, 50 + (unsigned)k, 1, 100, (uint8_t)k);
		assert_int_equal(gossip_remove(N.n[0].g, N.now, OTHER, b[k]->id), 0);
		assert_true(stats(0).tombstones <= 4);
	}
	assert_int_equal(stats(0).tombstones, 4);
	run_for(31 * SEC);
	assert_int_equal(stats(0).tombstones, 0);
	assert_int_equal(stats(0).items, 1); /* its own member record */
	for (int k = 0; k < 10; k++)
		gossip_blob_unref(b[k]);
	net_free();
}

/* An item of 60 KiB goes in 1142-byte pieces and is whole at the far end. */
static void chunked_reassembly(void **state)
{
	struct gossip_blob *b;

	(void)state;
	net_init(3, 1200, NULL);
	link_up(0, 1);
	link_up(1, 2);
	b = put(0, REVOKE, 1, 1, 60000, 5);
	run_for(10 * SEC);
	assert_true(holds(1, b));
	assert_true(holds(2, b));
	assert_true(N.by_type[WIRE_GOSSIP_ITEM] >= 2 * (60000 / 1142));
	assert_int_equal(all_drops(1) + all_drops(2), 0);
	gossip_blob_unref(b);
	net_free();
}

static bool corrupt_one_piece(struct net *net, struct tmsg *m)
{
	(void)net;
	if (m->buf[0] == WIRE_GOSSIP_ITEM && m->len > 200 && m->from[0] == 1 && N.filtered == 0) {
		m->buf[150] ^= 0x40; /* a data byte of one piece */
		N.filtered = 1;
	}
	return false;
}

/* A piece altered on the way: the whole fails its hash, is dropped and
 * counted, and the item is fetched again from another source. */
static void corrupted_piece_dropped(void **state)
{
	struct gossip_blob *b;

	(void)state;
	net_init(3, 1200, NULL);
	N.filter = corrupt_one_piece;
	b = put(0, REVOKE, 2, 1, 20000, 6);
	assert_int_equal(gossip_put(N.n[2].g, N.now, b, GOSSIP_QUIET), 0);
	link_up(0, 1);
	run_for(500 * MS);
	link_up(2, 1);
	run_for(20 * SEC);
	assert_int_equal(drops(1, GOSSIP_DROP_CORRUPT), 1);
	assert_true(holds(1, b));
	assert_int_equal(N.n[1].verified, 1); /* accept saw only the good copy */
	gossip_blob_unref(b);
	net_free();
}

static void small_budget(struct gossip_conf *c)
{
	c->mtu = 256;
}

/* With the smallest budget: many items, a large one, trees split in pieces;
 * every message within 256 bytes (t_send checks). */
static void small_mtu(void **state)
{
	struct gossip_blob *b[300], *big;

	(void)state;
	net_init(2, 256, small_budget);
	for (int k = 0; k < 300; k++) {
		b[k] = item(OTHER, 1000 + (unsigned)k, 1, 300, (uint8_t)k);
		assert_int_equal(gossip_put(N.n[0].g, N.now, b[k], GOSSIP_QUIET), 0);
	}
	big = put(0, REVOKE, 1, 1, 9000, 3);
	link_up(0, 1);
	run_for(60 * SEC);
	for (int k = 0; k < 300; k++) {
		assert_true(holds(1, b[k]));
		gossip_blob_unref(b[k]);
	}
	assert_true(holds(1, big));
	assert_true(N.by_type[WIRE_GOSSIP_TREE] > 0);
	gossip_blob_unref(big);
	net_free();
}

/* Sends msg to node 0 from the fake neighbour. */
static void from_fake(const uint8_t *msg, size_t len)
{
	uint8_t fake[GOSSIP_ID_LEN];

	make_id(fake, FAKE);
	gossip_rx(N.n[0].g, N.now, fake, msg, len);
	N.n[0].deadline = N.now;
}

/* A neighbour asking for a 60 KiB item a hundred times a second, and
 * sending summaries that never match, gets no more than its budget. */
static void flood_rate_bounded(void **state)
{
	struct gossip_blob *b;
	uint8_t fake[GOSSIP_ID_LEN], msg[1200];
	struct wire_gossip_pull p = {.kind = REVOKE, .offset = 0, .length = 0};
	size_t len;
	uint64_t t0, budget;

	(void)state;
	net_init(1, 1200, NULL);
	make_id(fake, FAKE);
	b = put(0, REVOKE, 3, 1, 60000, 7);
	gossip_peer_up(N.n[0].g, N.now, fake, 0);
	memcpy(p.id, b->id, GOSSIP_ID_LEN);
	p.version = b->version;
	p.chash = b->chash;
	t0 = N.now;
	for (int k = 0; k < 1000; k++) {
		len = wire_gossip_list_hdr_put(msg, WIRE_GOSSIP_PULL, 20);
		for (int j = 0; j < 20; j++)
			len += wire_gossip_pull_put(msg + len, &p);
		from_fake(msg, len);
		len = wire_gossip_summary_put(msg, 0, 0, (uint64_t)k, (uint64_t)k);
		from_fake(msg, len);
		run_for(10 * MS);
	}
	/* 10 s of it: the burst plus 10 s at 32 KiB/s, plus one message. */
	budget = 32768 + (N.now - t0) * 32768 / SEC + 1200;
	assert_true(N.fake_bytes <= budget);
	assert_true(N.fake_bytes > budget / 2); /* and it was served */
	assert_true(drops(0, GOSSIP_DROP_QUEUE_FULL) > 0);
	assert_true(drops(0, GOSSIP_DROP_RATE_LIMITED) > 0);
	gossip_blob_unref(b);
	net_free();
}

/* Garbage from a neighbour is dropped and counted once per message; a
 * message from a peer whose session is not up is counted apart. */
static void garbage_counted(void **state)
{
	uint8_t fake[GOSSIP_ID_LEN], junk[300];
	struct gossip_peer_stats ps;
	struct gossip_blob *b;

	(void)state;
	net_init(1, 1200, NULL);
	b = put(0, OTHER, 4, 1, 100, 1);
	make_id(fake, FAKE);
	from_fake((const uint8_t *)"x", 1);
	assert_int_equal(drops(0, GOSSIP_DROP_NOT_NEIGHBOUR), 1);
	gossip_peer_up(N.n[0].g, N.now, fake, 0);
	for (int k = 0; k < 100; k++) {
		fill_random(junk, sizeof(junk));
		junk[0] = (uint8_t)(k % 2 ? 0 : 7 + k % 200); /* no such type */
		from_fake(junk, 1 + (size_t)rnd(sizeof(junk) - 1));
	}
	assert_int_equal(drops(0, GOSSIP_DROP_MALFORMED), 100);
	/* An item never asked for. */
	{
		uint8_t msg[WIRE_GOSSIP_ITEM_HDR + 64];
		size_t len = wire_gossip_item_hdr_put(msg, OTHER, b->id, 9, 1, 64, 0);

		memset(msg + len, 0, 64);
		from_fake(msg, len + 64);
	}
	assert_int_equal(drops(0, GOSSIP_DROP_UNSOLICITED), 1);
	assert_true(gossip_get_peer_stats(N.n[0].g, fake, &ps));
	assert_int_equal(ps.drops, 101);
	assert_int_equal(ps.rx_msgs, 101);
	run_for(5 * SEC);
	assert_true(holds(0, b));
	gossip_blob_unref(b);
	net_free();
}

static void fast_refresh(struct gossip_conf *c)
{
	c->degree = 4;
	c->refresh_ns = 30 * SEC;
	c->connect_ns = 5 * SEC;
}

/* Members node 0 wants, by id[0]; roots have ids 2 and 3. */
static unsigned wanted_members(void)
{
	unsigned k = 0;

	for (int j = 4; j < 256; j++)
		k += N.n[0].wants[j];
	return k;
}

static bool up_at_0(int j)
{
	struct gossip_peer_stats ps;

	return gossip_get_peer_stats(N.n[0].g, N.n[j].id, &ps) && ps.up;
}

/* Connects node 0 to every node it wants, but `dead`. */
static void connect_wanted(int dead)
{
	for (int j = 1; j < N.count; j++)
		if (N.n[0].wants[j + 1] && j != dead && !up_at_0(j))
			link_up(0, j);
}

/* Node 0 wants the roots while it knows nobody, then degree random members
 * (never itself), gives up one that does not come up, drops the roots once
 * degree members are up, and replaces one member now and then without
 * going back to the roots; it goes back to them when most members go down. */
static void neighbour_wishes(void **state)
{
	uint8_t roots[2][GOSSIP_ID_LEN];
	unsigned calls;
	int dead = -1;

	(void)state;
	net_init_bare(20, 1200, fast_refresh, true);
	make_id(roots[0], 2);
	make_id(roots[1], 3);
	gossip_set_roots(N.n[0].g, N.now, (const uint8_t(*)[GOSSIP_ID_LEN])roots, 2);
	run_for(10 * MS);
	assert_true(N.n[0].wants[2] && N.n[0].wants[3]);
	assert_int_equal(wanted_members(), 0);
	/* It learns the records of nodes 3..19 and its own (never wanted). */
	for (int k = 0; k < 20; k++) {
		struct gossip_blob *b;

		if (k == 1 || k == 2)
			continue;
		b = gossip_blob_new(MEMBER, N.n[k].id, 1, (const uint8_t *)"rec", 3);
		assert_int_equal(gossip_put(N.n[0].g, N.now, b, GOSSIP_QUIET), 0);
		gossip_blob_unref(b);
	}
	N.n[0].deadline = N.now;
	run_for(1 * SEC);
	assert_false(N.n[0].wants[1]);
	assert_int_equal(wanted_members(), 4);
	assert_true(N.n[0].wants[2] && N.n[0].wants[3]); /* nothing up yet */
	for (int j = 3; j < 20 && dead < 0; j++)
		if (N.n[0].wants[j + 1])
			dead = j;
	for (int round = 0; round < 4; round++) {
		connect_wanted(dead);
		run_for(2 * SEC);
	}
	assert_false(N.n[0].wants[dead + 1]); /* not up after 5 s: given up */
	assert_int_equal(wanted_members(), 4);
	assert_false(N.n[0].wants[2] || N.n[0].wants[3]); /* 4 up: no roots */
	/* Every 30 s (+-25 %) one is replaced; the backed-off one stays out. */
	calls = N.n[0].want_calls;
	for (int round = 0; round < 12; round++) {
		connect_wanted(dead);
		run_for(10 * SEC);
		assert_false(N.n[0].wants[dead + 1]);
		assert_false(N.n[0].wants[2] || N.n[0].wants[3]); /* 3 or 4 up: no roots */
	}
	assert_true(N.n[0].want_calls >= calls + 4);
	assert_int_equal(wanted_members(), 4);
	/* Three of the four go down: fewer than half up, so the roots again. */
	connect_wanted(dead);
	run_for(10 * MS);
	for (int j = 3, downs = 0; j < 20 && downs < 3; j++)
		if (N.n[0].wants[j + 1] && up_at_0(j)) {
			link_down(0, j);
			downs++;
		}
	run_for(2 * SEC);
	assert_true(N.n[0].wants[2] && N.n[0].wants[3]);
	net_free();
}

static uint64_t drop_until;

/* Node 0's announcements of the change are lost (its anti-entropy answers,
 * later, get through). */
static bool drop_announce(struct net *net, struct tmsg *m)
{
	return m->buf[0] == WIRE_GOSSIP_ANNOUNCE && m->from[0] == 1 && net->now < drop_until;
}

/* Announcements lost: anti-entropy finds the difference (after the settle
 * time) and repairs it; a node that joins empty gets the whole set. */
static void anti_entropy_repairs(void **state)
{
	struct gossip_blob *b, *many[200];

	(void)state;
	net_init(3, 1200, NULL);
	N.filter = drop_announce;
	link_up(0, 1);
	link_up(1, 2);
	run_for(1 * SEC);
	drop_until = N.now + 3 * SEC;
	b = put(0, OTHER, 77, 1, 300, 1);
	run_for(5 * SEC);
	assert_false(holds(1, b)); /* not yet: the change is still settling */
	run_for(20 * SEC);
	assert_true(holds(1, b));
	assert_true(N.filtered > 0);
	N.filter = NULL;
	for (int k = 0; k < 200; k++) {
		many[k] = item(OTHER, 300 + (unsigned)k, 1, 400, (uint8_t)k);
		assert_int_equal(gossip_put(N.n[0].g, N.now, many[k], GOSSIP_QUIET), 0);
	}
	/* 200 items appear at node 0 unannounced (as if loaded from its cache):
	 * nodes 1 and 2 (linked to node 1 only) get them all. */
	run_for(40 * SEC);
	for (int k = 0; k < 200; k++) {
		assert_true(holds(1, many[k]) && holds(2, many[k]));
		gossip_blob_unref(many[k]);
	}
	assert_true(holds(2, b));
	assert_true(stats(1).ae_descents > 0);
	gossip_blob_unref(b);
	net_free();
}

/* When sets agree, a round of anti-entropy is one 22-byte summary each way
 * at most: nothing else is sent. */
static void quiet_when_in_sync(void **state)
{
	struct gossip_blob *b[50];
	uint64_t before;

	(void)state;
	net_init(2, 1200, NULL);
	for (int k = 0; k < 50; k++) {
		b[k] = item(OTHER, 400 + (unsigned)k, 1, 500, (uint8_t)k);
		assert_int_equal(gossip_put(N.n[0].g, N.now, b[k], GOSSIP_QUIET), 0);
		assert_int_equal(gossip_put(N.n[1].g, N.now, b[k], GOSSIP_QUIET), 0);
		gossip_blob_unref(b[k]);
	}
	link_up(0, 1);
	run_for(1 * SEC);
	before = stats(0).tx_bytes + stats(1).tx_bytes;
	memset(N.by_type, 0, sizeof(N.by_type));
	run_for(100 * SEC);
	assert_int_equal(N.by_type[WIRE_GOSSIP_TREE] + N.by_type[WIRE_GOSSIP_DIGEST] +
	                     N.by_type[WIRE_GOSSIP_ANNOUNCE] + N.by_type[WIRE_GOSSIP_PULL] +
	                     N.by_type[WIRE_GOSSIP_ITEM],
	                 0);
	/* Two engines, one round each per 2 s (+-25 %), 22 bytes a round. */
	assert_true(stats(0).tx_bytes + stats(1).tx_bytes - before <= 2 * 70 * 22);
	net_free();
}

/* A session going down mid-transfer: the item comes from the other source. */
static void source_goes_down(void **state)
{
	struct gossip_blob *b;

	(void)state;
	net_init(3, 1200, NULL);
	b = put(0, REVOKE, 5, 1, 50000, 8);
	assert_int_equal(gossip_put(N.n[2].g, N.now, b, GOSSIP_QUIET), 0);
	link_up(0, 1);
	link_up(2, 1);
	run_for(300 * MS);
	link_down(0, 1);
	run_for(30 * SEC);
	assert_true(holds(1, b));
	gossip_blob_unref(b);
	net_free();
}

/* Node 1's items do not reach node 0 until drop_until. */
static bool drop_items_from_1(struct net *net, struct tmsg *m)
{
	return m->buf[0] == WIRE_GOSSIP_ITEM && m->from[0] == 2 && net->now < drop_until;
}

static unsigned credit_of(int i, int j)
{
	struct gossip_peer_stats ps;

	assert_true(gossip_get_peer_stats(N.n[i].g, N.n[j].id, &ps));
	return ps.credit;
}

/* A neighbour whose pulls time out loses its credit; going down and up
 * does not restore it; serving does, and what it could not serve meanwhile
 * arrives in the end. */
static void credit_lost_and_regained(void **state)
{
	struct gossip_blob *b[40];

	(void)state;
	net_init(2, 1200, NULL);
	N.filter = drop_items_from_1;
	link_up(0, 1);
	run_for(1 * SEC);
	assert_int_equal(credit_of(0, 1), 256);
	drop_until = N.now + 30 * SEC;
	for (int k = 0; k < 10; k++) {
		b[k] = put(1, OTHER, 700 + (unsigned)k, 1, 300, (uint8_t)k);
		run_for(3 * SEC);
	}
	assert_int_equal(credit_of(0, 1), 0);
	assert_false(holds(0, b[0]));
	link_down(0, 1);
	run_for(1 * SEC);
	link_up(0, 1);
	assert_int_equal(credit_of(0, 1), 0); /* remembered */
	run_until(drop_until);
	for (int k = 10; k < 40; k++) {
		b[k] = put(1, OTHER, 700 + (unsigned)k, 1, 300, (uint8_t)k);
		run_for(200 * MS);
	}
	run_for(30 * SEC); /* the first ten come back by anti-entropy */
	for (int k = 0; k < 40; k++) {
		assert_true(holds(0, b[k]));
		gossip_blob_unref(b[k]);
	}
	assert_int_equal(credit_of(0, 1), 256);
	net_free();
}

/* ---- a member that announces what it does not serve ------------------------------ */

static unsigned liar_seq, liar_rate; /* fake items announced per 100 ms */
static bool liar_urgent;             /* ... including root sets and revocation lists */

/* The fake neighbour announces k items no one holds, and will serve none
 * of them: new ids every time, of every kind (or none urgent), up to 60 KB
 * each. */
static void liar_announce(unsigned k)
{
	static const uint8_t kinds[8] = {OTHER, MEMBER, OTHER, MEMBER, OTHER, REVOKE, OTHER, ROOTS};
	uint8_t msg[1200];
	size_t per = (N.mtu - WIRE_GOSSIP_LIST_HDR) / WIRE_GOSSIP_ENTRY;

	while (k > 0) {
		size_t m = k < per ? k : per, len = WIRE_GOSSIP_LIST_HDR;

		for (size_t j = 0; j < m; j++, liar_seq++) {
			struct wire_gossip_entry e = {.kind =
			                                  kinds[liar_seq % (liar_urgent ? 8 : 4)],
			                              .version = 1 + rng() % 1000,
			                              .chash = rng(),
			                              .len = 100 + (uint32_t)(rng() % 60000)};

			make_id(e.id, 0x4000 + (liar_seq & 0xfff));
			e.id[2] = 0xee;
			memcpy(e.id + 4, &liar_seq, sizeof(liar_seq));
			len += wire_gossip_entry_put(msg + len, &e);
		}
		wire_gossip_list_hdr_put(msg, WIRE_GOSSIP_ANNOUNCE, (uint8_t)m);
		from_fake(msg, len);
		k -= (unsigned)m;
	}
}

/* ... and claims a newer version of each of b[0..k), which it does not serve either. */
static void liar_claims(struct gossip_blob **b, int k)
{
	uint8_t msg[WIRE_GOSSIP_LIST_HDR + 2 * WIRE_GOSSIP_ENTRY];
	size_t len = wire_gossip_list_hdr_put(msg, WIRE_GOSSIP_ANNOUNCE, (uint8_t)k);

	for (int j = 0; j < k; j++) {
		struct wire_gossip_entry e = {.kind = b[j]->kind,
		                              .version = b[j]->version + 1000,
		                              .chash = b[j]->chash ^ 0x11e,
		                              .len = b[j]->len};

		memcpy(e.id, b[j]->id, GOSSIP_ID_LEN);
		len += wire_gossip_entry_put(msg + len, &e);
	}
	from_fake(msg, len);
}

static void urgent_kinds(struct gossip_conf *c)
{
	gossip_conf_urgent(c, ROOTS);
	gossip_conf_urgent(c, REVOKE);
}

#define LIAR_LIMIT 30 /* seconds a new item is waited for, at most */

/* Runs in steps of 10 ms until node 0 holds every one of b[0..k) or
 * LIAR_LIMIT seconds passed; each one's time from now in t[] (UINT64_MAX:
 * never). With liar, it announces liar_rate fake items every 100 ms and
 * claims newer versions of b[] every step. */
static void wait_held(struct gossip_blob **b, int k, uint64_t *t, bool liar)
{
	uint64_t t0 = N.now;
	int left = k;

	for (int j = 0; j < k; j++)
		t[j] = UINT64_MAX;
	for (unsigned step = 0; left > 0 && N.now - t0 < LIAR_LIMIT * SEC; step++) {
		if (liar) {
			liar_claims(b, k);
			if (step % 10 == 0)
				liar_announce(liar_rate);
		}
		run_for(10 * MS);
		for (int j = 0; j < k; j++)
			if (t[j] == UINT64_MAX && holds(0, b[j])) {
				t[j] = N.now - t0;
				left--;
			}
	}
}

static double secs(uint64_t t)
{
	return t == UINT64_MAX ? -1.0 : (double)t / (double)SEC;
}

/*
 * Honest nodes 0..3 (0 linked to 1 and 2, both linked to 3) and one more
 * neighbour of node 0, played by the test: it announces `rate` fake items
 * every 100 ms (never served: the test drops every PULL to it), from `lead`
 * before node 3, two honest hops from node 0, puts a new item and a new
 * revocation list, and it claims a newer version of both from the moment
 * they are put. Node 0 must get both about as fast as it does without the
 * liar (measured first): within 1.5 s more, one timeout of a pull to the
 * liar. (Before per-neighbour quotas, credit and round-robin dispatch,
 * node 0 had not got them after 300 s when flooded, and took 2.25 s when
 * the liar only claimed newer versions.)
 */
static void liar_attack(uint64_t lead, unsigned rate, bool urgent_fakes)
{
	struct gossip_blob *calm[2], *b[2];
	uint64_t t_calm[2], t[2];
	struct gossip_peer_stats ps;
	uint8_t fake[GOSSIP_ID_LEN];
	struct gossip_stats s;

	net_init(4, 1200, urgent_kinds);
	liar_rate = rate;
	liar_urgent = urgent_fakes;
	link_up(0, 1);
	link_up(0, 2);
	link_up(1, 3);
	link_up(2, 3);
	run_for(2 * SEC);
	/* Without the liar: the time it normally takes. */
	calm[0] = put(3, OTHER, 600, 1, 300, 1);
	calm[1] = put(3, REVOKE, 600, 1, 3000, 2);
	wait_held(calm, 2, t_calm, false);
	assert_true(t_calm[0] < SEC && t_calm[1] < SEC);
	make_id(fake, FAKE);
	gossip_peer_up(N.n[0].g, N.now, fake, 0);
	for (uint64_t t0 = N.now; N.now - t0 < lead;) {
		liar_announce(liar_rate);
		run_for(100 * MS);
	}
	b[0] = put(3, OTHER, 601, 1, 300, 3);
	b[1] = put(3, REVOKE, 601, 2, 3000, 4);
	wait_held(b, 2, t, true);
	s = stats(0);
	assert_true(gossip_get_peer_stats(N.n[0].g, fake, &ps));
	print_message("liar from %.0f s before: without it, item %.2f s, revocation list %.2f s; "
	              "with it, %.2f s and %.2f s (-1: not within %d s); node 0 holds %zu "
	              "wants, refused %llu, sent %llu pull records to the liar, its credit %u\n",
	              secs(lead), secs(t_calm[0]), secs(t_calm[1]), secs(t[0]), secs(t[1]),
	              LIAR_LIMIT, s.wants, (unsigned long long)s.drops[GOSSIP_DROP_QUEUE_FULL],
	              (unsigned long long)N.fake_pulls, ps.credit);
	assert_true(t[0] <= t_calm[0] + 1500 * MS);
	assert_true(t[1] <= t_calm[1] + 1500 * MS);
	/* The liar holds a bounded share of the wants, and gets few pulls. */
	assert_true(s.wants <= 8192 / 8 + 16 + 4);
	assert_true(N.fake_pulls <= 32 + (lead + 5 * SEC) / SEC * 4);
	for (int j = 0; j < 2; j++) {
		gossip_blob_unref(calm[j]);
		gossip_blob_unref(b[j]);
	}
	net_free();
}

/* 2 000 fake items a second for 20 s before (its credit spent). */
static void liar_cannot_stall(void **state)
{
	(void)state;
	liar_attack(20 * SEC, 200, true);
}

/* From 1 s before (still in good standing), and no urgent fakes, so that
 * its claim of the new revocation list is first; and a liar that only
 * claims newer versions, so that it has room to be asked first. */
static void fresh_liar_cannot_stall(void **state)
{
	(void)state;
	liar_attack(1 * SEC, 200, false);
	liar_attack(1 * SEC, 0, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(three_converge),
	    cmocka_unit_test(two_converge_many),
	    cmocka_unit_test(newer_version_wins),
	    cmocka_unit_test(rejected_not_forwarded),
	    cmocka_unit_test(removed_not_resurrected),
	    cmocka_unit_test(tombstones_bounded),
	    cmocka_unit_test(chunked_reassembly),
	    cmocka_unit_test(corrupted_piece_dropped),
	    cmocka_unit_test(small_mtu),
	    cmocka_unit_test(flood_rate_bounded),
	    cmocka_unit_test(garbage_counted),
	    cmocka_unit_test(neighbour_wishes),
	    cmocka_unit_test(anti_entropy_repairs),
	    cmocka_unit_test(quiet_when_in_sync),
	    cmocka_unit_test(source_goes_down),
	    cmocka_unit_test(credit_lost_and_regained),
	    cmocka_unit_test(liar_cannot_stall),
	    cmocka_unit_test(fresh_liar_cannot_stall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
