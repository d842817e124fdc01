/*
 * yip-gossip-sim: the gossip engine (src/gossip) at scale, with no
 * sockets. N engines run in one process on a discrete-event clock; a
 * message an engine sends reaches its neighbour after half the pair's
 * round trip, or is lost with probability --loss. Sessions are set up
 * when an engine wants a neighbour (one round trip, plus a second per lost
 * handshake message) and torn down when neither side wants the other.
 *
 * The network: every node starts holding every member's record (about
 * 290 bytes, protocol.md §12.5) and a revocation list of --rev-entries
 * entries, knows the two roots, and picks its neighbours. Then:
 *
 *   0 .. warm            the overlay forms
 *   warm .. +steady      steady state: every member re-signs its record
 *                        every --refresh seconds (random phase; by default
 *                        yipd's YIP_RECORD_RESIGN_S); control bytes are
 *                        counted per node. By default the window is long
 *                        enough for about 100 re-signed records (at least
 *                        120 s), since the cost is per record
 *   join                 a new member starts, knowing only the roots, and
 *                        publishes its record: time until 99 % (and 100 %)
 *                        of the others hold it
 *   join + after         the CA's next revocation list, revoking one
 *                        member, is given to a root: time until 99 % (and
 *                        100 %) hold it; each node that does drops the
 *                        member's record and its session with it, and
 *                        refuses it from then on
 *   end                  join + 2 x after
 *
 * Round trips: each node sits in one of five regions (weights below) and
 * has an access delay of 1-20 ms; a pair's RTT is the regions' RTT plus
 * both access delays, and each message gets 0-10 % more. A control byte
 * count includes what a gossip message costs on the wire inside a session
 * (61 bytes: IPv4 20, UDP 8, yip header 16, Ctrl kind 1, AEAD tag 16;
 * protocol.md §13) and the handshakes of new neighbour sessions.
 *
 * Usage: yip-gossip-sim [--nodes N] [--seed S] [--loss P] [--refresh SECS]
 *                       [--rev-entries K] [--degree D] [--warm SECS]
 *                       [--steady SECS] [--after SECS] [--out PREFIX [--command STRING]] [--check]
 * With --check, exits with status 1 unless the goals are met (99 %
 * within 10 s for the record and 30 s for the revocation, every node
 * reached in the end, at most 1 KB/s per node in steady state): ctest runs
 * a small network this way.
 * With --out, writes PREFIX.json (the results) and PREFIX.csv (the share of
 * nodes holding the new record and the new revocation list over time).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gossip/gossip.h"
#include "peer/peer.h"
#include "util/u64map.h"

#define NS_PER_MS 1000000ULL
#define NS_PER_S  1000000000ULL

#define KIND_RECORD 0xc4 /* as the membership objects' kind bytes */
#define KIND_REVOKE 0xc3
#define KIND_ROOTS  0xc2
#define RECORD_LEN  290
#define N_ROOTS     2
#define WIRE_OVER   61  /* per gossip message on the wire */
#define INIT_WIRE   177 /* Init 149 + UDP 8 + IPv4 20 */
#define RESP_WIRE   105 /* Resp 77 + UDP 8 + IPv4 20 */
#define HS_RETRY_NS NS_PER_S

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("yip-gossip-sim: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* ---- options and the model --------------------------------------------------- */

static struct {
	size_t nodes;
	uint64_t seed;
	double loss;
	double refresh_s;
	unsigned rev_entries;
	double warm_s, steady_s, after_s;
	const char *out, *command;
	bool check;
	unsigned degree;
} opt = {1000, 1, 0.01, YIP_RECORD_RESIGN_S, 100, 60, 0, 60, NULL, NULL, false, 6};

/* Round trips between regions, ms: Europe, US east, US west, Asia, Oceania. */
static const char *const region_names[5] = {"Europe", "US east", "US west", "Asia", "Oceania"};
static const unsigned region_weight[5] = {35, 25, 15, 20, 5};
static const unsigned region_rtt[5][5] = {
    {20, 85, 150, 230, 280},  {85, 20, 70, 200, 200},   {150, 70, 20, 140, 150},
    {230, 200, 140, 40, 120}, {280, 200, 150, 120, 30},
};

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t net_rng;

static double unif(void)
{
	return (double)(splitmix(&net_rng) >> 11) / (double)(1ULL << 53);
}

/* ---- nodes, sessions, events ---------------------------------------------------------- */

struct node {
	struct gossip *g;
	uint8_t id[GOSSIP_ID_LEN];
	uint64_t rng;
	uint64_t timer_at;
	uint64_t seq; /* its record's version */
	uint8_t region;
	uint8_t access_ms;
	bool alive, root, knows_rev;
	uint64_t got_join, got_rev; /* when it stored them; 0 = not yet */
	uint64_t wire_bytes, payload_bytes, msgs, hs;
	uint64_t w0_wire; /* wire_bytes at the start of the steady window */
};

enum ev_kind { EV_TIMER, EV_MSG, EV_UP, EV_WANT, EV_REFRESH, EV_APPLY_REV, EV_JOIN, EV_REVOKE };

struct ev {
	uint64_t t, seq;
	uint8_t kind;
	bool flag;
	uint32_t a, b;
	uint32_t len;
	uint8_t *msg;
};

static struct {
	struct node *nodes;
	size_t n; /* nodes in the array: opt.nodes + the joiner */
	uint32_t joiner, victim;
	struct u64map by_id;  /* first 8 id bytes | 1 -> node index + 1 */
	struct u64map pairs;  /* pair key -> 1 connecting, 2 up */
	struct u64map shared; /* item key -> canonical blob */
	struct ev *heap;
	size_t heap_n, heap_cap;
	uint64_t now, ev_seq;
	uint64_t t_join, t_rev, t_end, w0, w1;
	bool in_window;
	struct gossip_blob *rev_new;
	uint8_t net_id[GOSSIP_ID_LEN];
	/* counters */
	uint64_t lost, not_up, events, refused_hs, sessions_made;
	uint64_t win_changes; /* records re-signed in the steady window */
	uint64_t joiner_records, joiner_learned;
	uint64_t win_bytes_type[8], win_msgs_type[8], win_hs_bytes;
} S;

static void heap_push(struct ev e)
{
	size_t i;

	if (S.heap_n == S.heap_cap) {
		S.heap_cap = S.heap_cap ? S.heap_cap * 2 : 4096;
		if ((S.heap = realloc(S.heap, S.heap_cap * sizeof(*S.heap))) == NULL)
			die("out of memory");
	}
	e.seq = S.ev_seq++;
	i = S.heap_n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (S.heap[p].t < e.t || (S.heap[p].t == e.t && S.heap[p].seq < e.seq))
			break;
		S.heap[i] = S.heap[p];
		i = p;
	}
	S.heap[i] = e;
}

static struct ev heap_pop(void)
{
	struct ev top = S.heap[0], last = S.heap[--S.heap_n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= S.heap_n)
			break;
		if (c + 1 < S.heap_n &&
		    (S.heap[c + 1].t < S.heap[c].t ||
		     (S.heap[c + 1].t == S.heap[c].t && S.heap[c + 1].seq < S.heap[c].seq)))
			c++;
		if (last.t < S.heap[c].t || (last.t == S.heap[c].t && last.seq < S.heap[c].seq))
			break;
		S.heap[i] = S.heap[c];
		i = c;
	}
	if (S.heap_n > 0)
		S.heap[i] = last;
	return top;
}

static void at(uint64_t t, uint8_t kind, uint32_t a, uint32_t b)
{
	heap_push((struct ev){.t = t, .kind = kind, .a = a, .b = b});
}

static uint64_t id_key(const uint8_t id[GOSSIP_ID_LEN])
{
	uint64_t k;

	memcpy(&k, id, sizeof(k));
	return k | 1;
}

static long node_of(const uint8_t id[GOSSIP_ID_LEN])
{
	uintptr_t v = (uintptr_t)u64map_get(&S.by_id, id_key(id));

	if (v == 0 || memcmp(S.nodes[v - 1].id, id, GOSSIP_ID_LEN) != 0)
		return -1;
	return (long)(v - 1);
}

static uint64_t pair_key(uint32_t a, uint32_t b)
{
	uint64_t lo = a < b ? a : b, hi = a < b ? b : a;

	return (lo * (uint64_t)(S.n + 1) + hi) * 2 + 1;
}

static uintptr_t pair_state(uint32_t a, uint32_t b)
{
	return (uintptr_t)u64map_get(&S.pairs, pair_key(a, b));
}

static void pair_set(uint32_t a, uint32_t b, uintptr_t st)
{
	if (st == 0)
		(void)u64map_del(&S.pairs, pair_key(a, b));
	else if (u64map_put(&S.pairs, pair_key(a, b), (void *)st) != 0)
		die("out of memory");
}

static uint64_t rtt_ns(uint32_t a, uint32_t b)
{
	const struct node *x = &S.nodes[a], *y = &S.nodes[b];

	return (uint64_t)(region_rtt[x->region][y->region] + x->access_ms + y->access_ms) *
	       NS_PER_MS;
}

/* ---- running an engine ------------------------------------------------------------ */

static void run_timers(uint32_t i)
{
	struct node *n = &S.nodes[i];
	uint64_t next = gossip_timers(n->g, S.now);

	if (next <= S.now)
		next = S.now + 1000; /* work due now: come back in a microsecond */
	if (next < n->timer_at) {
		n->timer_at = next;
		at(next, EV_TIMER, i, 0);
	}
}

static void teardown(uint32_t a, uint32_t b)
{
	if (pair_state(a, b) != 2) {
		pair_set(a, b, 0);
		return;
	}
	pair_set(a, b, 0);
	gossip_peer_down(S.nodes[a].g, S.now, S.nodes[b].id);
	run_timers(a);
	gossip_peer_down(S.nodes[b].g, S.now, S.nodes[a].id);
	run_timers(b);
}

/* Does a refuse a session with b? Only the revoked member, once a knows. */
static bool refuses(uint32_t a, uint32_t b)
{
	return (S.nodes[a].knows_rev && b == S.victim) || (S.nodes[b].knows_rev && a == S.victim);
}

/* ---- callbacks: they only record and schedule, never call an engine ------------------ */

static bool cb_accept(void *ctx, uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                      const uint8_t *bytes, size_t len)
{
	struct node *n = ctx;

	(void)version;
	(void)bytes;
	(void)len;
	/* Signatures are taken as good (the owner's work, not the engine's);
	 * a revoked member's record is refused once the node knows. */
	return !(kind == KIND_RECORD && n->knows_rev &&
	         memcmp(id, S.nodes[S.victim].id, GOSSIP_ID_LEN) == 0);
}

static void cb_send(void *ctx, const uint8_t nbr[GOSSIP_ID_LEN], const uint8_t *msg, size_t len)
{
	struct node *n = ctx;
	uint32_t a = (uint32_t)(n - S.nodes);
	long b = node_of(nbr);
	uint8_t *copy;

	n->wire_bytes += len + WIRE_OVER;
	n->payload_bytes += len;
	n->msgs++;
	if (S.in_window) {
		S.win_bytes_type[msg[0] & 7] += len + WIRE_OVER;
		S.win_msgs_type[msg[0] & 7]++;
	}
	if (b < 0 || pair_state(a, (uint32_t)b) != 2) {
		S.not_up++;
		return;
	}
	if (unif() < opt.loss) {
		S.lost++;
		return;
	}
	if ((copy = malloc(len)) == NULL)
		die("out of memory");
	memcpy(copy, msg, len);
	heap_push((struct ev){.t = S.now + rtt_ns(a, (uint32_t)b) / 2 *
	                                       (1000 + splitmix(&net_rng) % 101) / 1000,
	                      .kind = EV_MSG,
	                      .a = a,
	                      .b = (uint32_t)b,
	                      .len = (uint32_t)len,
	                      .msg = copy});
}

static void cb_want(void *ctx, const uint8_t id[GOSSIP_ID_LEN], bool want)
{
	struct node *n = ctx;
	long b = node_of(id);

	if (b >= 0)
		heap_push((struct ev){.t = S.now,
		                      .kind = EV_WANT,
		                      .flag = want,
		                      .a = (uint32_t)(n - S.nodes),
		                      .b = (uint32_t)b});
}

static void cb_stored(void *ctx, const struct gossip_blob *b)
{
	struct node *n = ctx;

	/* The new member learning the network: 99 % of the records. */
	if (n == &S.nodes[S.joiner] && b->kind == KIND_RECORD &&
	    ++S.joiner_records == (opt.nodes * 99 + 99) / 100)
		S.joiner_learned = S.now;
	if (b->kind == KIND_RECORD && n->got_join == 0 &&
	    memcmp(b->id, S.nodes[S.joiner].id, GOSSIP_ID_LEN) == 0)
		n->got_join = S.now;
	if (b->kind == KIND_REVOKE && b->version == S.rev_new->version && n->got_rev == 0) {
		n->got_rev = S.now;
		at(S.now, EV_APPLY_REV, (uint32_t)(n - S.nodes), 0);
	}
}

static uint64_t cb_rand(void *ctx)
{
	return splitmix(&((struct node *)ctx)->rng);
}

/* One copy of each version in the process, as many daemons would each hold their own. */
static struct gossip_blob *cb_share(void *ctx, struct gossip_blob *b)
{
	uint64_t key = ((uint64_t)b->kind << 56) ^ id_key(b->id);
	struct gossip_blob *c = u64map_get(&S.shared, key);

	(void)ctx;
	if (c != NULL && c->kind == b->kind && memcmp(c->id, b->id, GOSSIP_ID_LEN) == 0 &&
	    c->version == b->version && c->chash == b->chash && c->len == b->len &&
	    memcmp(c->bytes, b->bytes, b->len) == 0) {
		gossip_blob_ref(c);
		return c;
	}
	if (c == NULL || b->version > c->version) {
		gossip_blob_ref(b);
		if (u64map_put(&S.shared, key, b) != 0)
			die("out of memory");
		gossip_blob_unref(c);
	}
	return b;
}

/* ---- items ----------------------------------------------------------------------------- */

static struct gossip_blob *record_blob(uint32_t i, uint64_t seq)
{
	uint8_t bytes[RECORD_LEN];
	uint64_t s = seq ^ ((uint64_t)i << 32);
	struct gossip_blob *b;

	for (size_t k = 0; k < sizeof(bytes); k += 8) {
		uint64_t v = splitmix(&s);

		memcpy(bytes + k, &v, sizeof(bytes) - k < 8 ? sizeof(bytes) - k : 8);
	}
	if ((b = gossip_blob_new(KIND_RECORD, S.nodes[i].id, seq, bytes, sizeof(bytes))) == NULL)
		die("out of memory");
	(void)cb_share(NULL, b);
	return b;
}

/* A revocation list of entries, as protocol.md §12.4 sizes it. */
static struct gossip_blob *revocation_blob(uint64_t serial, unsigned entries)
{
	size_t len = 6 + 8 + 8 + 8 + 2 + (size_t)entries * 33 + 64;
	uint8_t *bytes = calloc(1, len);
	uint64_t s = serial * 7919;
	struct gossip_blob *b;

	if (bytes == NULL)
		die("out of memory");
	for (size_t k = 0; k < len; k++)
		bytes[k] = (uint8_t)splitmix(&s);
	if ((b = gossip_blob_new(KIND_REVOKE, S.net_id, serial, bytes, len)) == NULL)
		die("revocation list of %u entries is over the item limit", entries);
	free(bytes);
	(void)cb_share(NULL, b);
	return b;
}

static void start_node(uint32_t i)
{
	struct node *n = &S.nodes[i];
	struct gossip_conf c;
	uint8_t roots[N_ROOTS][GOSSIP_ID_LEN];

	gossip_conf_default(&c);
	memcpy(c.self, n->id, GOSSIP_ID_LEN);
	c.member_kind = KIND_RECORD;
	gossip_conf_urgent(&c, KIND_ROOTS); /* as yipd */
	gossip_conf_urgent(&c, KIND_REVOKE);
	c.degree = opt.degree;
	c.ctx = n;
	c.accept = cb_accept;
	c.send = cb_send;
	c.want = cb_want;
	c.stored = cb_stored;
	c.rand = cb_rand;
	c.share = cb_share;
	if ((n->g = gossip_new(&c, S.now)) == NULL)
		die("gossip_new failed");
	for (unsigned r = 0; r < N_ROOTS; r++)
		memcpy(roots[r], S.nodes[r].id, GOSSIP_ID_LEN);
	gossip_set_roots(n->g, S.now, (const uint8_t(*)[GOSSIP_ID_LEN])roots, N_ROOTS);
	n->alive = true;
	n->timer_at = UINT64_MAX;
}

/* ---- events ------------------------------------------------------------------------------ */

static void on_want(uint32_t a, uint32_t b, bool want)
{
	uintptr_t st = pair_state(a, b);

	if (!S.nodes[a].alive || !S.nodes[b].alive)
		return;
	if (want) {
		uint64_t d = rtt_ns(a, b);

		if (st != 0)
			return;
		if (refuses(a, b)) {
			S.refused_hs++;
			return; /* the engine gives up after connect_ns */
		}
		/* An Init or a Resp lost costs a retry a second later. */
		while (unif() < opt.loss || unif() < opt.loss)
			d += HS_RETRY_NS;
		pair_set(a, b, 1);
		heap_push((struct ev){.t = S.now + d, .kind = EV_UP, .a = a, .b = b});
		return;
	}
	if (!gossip_wants(S.nodes[b].g, S.nodes[a].id))
		teardown(a, b);
}

static void on_up(uint32_t a, uint32_t b)
{
	if (pair_state(a, b) != 1)
		return;
	if (refuses(a, b) || (!gossip_wants(S.nodes[a].g, S.nodes[b].id) &&
	                      !gossip_wants(S.nodes[b].g, S.nodes[a].id))) {
		pair_set(a, b, 0);
		return;
	}
	pair_set(a, b, 2);
	S.sessions_made++;
	S.nodes[a].wire_bytes += INIT_WIRE;
	S.nodes[b].wire_bytes += RESP_WIRE;
	S.nodes[a].hs++;
	if (S.in_window)
		S.win_hs_bytes += INIT_WIRE + RESP_WIRE;
	gossip_peer_up(S.nodes[a].g, S.now, S.nodes[b].id, 0);
	run_timers(a);
	gossip_peer_up(S.nodes[b].g, S.now, S.nodes[a].id, 0);
	run_timers(b);
}

static void on_refresh(uint32_t i)
{
	struct node *n = &S.nodes[i];
	struct gossip_blob *b;

	if (!n->alive)
		return;
	b = record_blob(i, ++n->seq);
	if (gossip_put(n->g, S.now, b, 0) != 0)
		die("node %u: gossip_put of its record failed", i);
	if (S.in_window)
		S.win_changes++;
	gossip_blob_unref(b);
	run_timers(i);
	at(S.now + (uint64_t)(opt.refresh_s * NS_PER_S), EV_REFRESH, i, 0);
}

/* A node learned the new revocation list: the revoked member goes. */
static void on_apply_rev(uint32_t i)
{
	struct node *n = &S.nodes[i];

	n->knows_rev = true;
	if (i == S.victim)
		return;
	(void)gossip_remove(n->g, S.now, KIND_RECORD, S.nodes[S.victim].id);
	run_timers(i);
	if (pair_state(i, S.victim) != 0)
		teardown(i, S.victim);
}

static void on_join(void)
{
	uint32_t j = S.joiner;
	struct gossip_blob *b;

	start_node(j);
	S.nodes[j].seq = 1;
	b = record_blob(j, 1);
	if (gossip_put(S.nodes[j].g, S.now, b, 0) != 0)
		die("joiner: gossip_put failed");
	gossip_blob_unref(b);
	run_timers(j);
	at(S.now + (uint64_t)(opt.refresh_s * NS_PER_S), EV_REFRESH, j, 0);
}

static void on_revoke(void)
{
	/* The CA's new list, handed to root 0 (as a SIGHUP reload would). */
	if (gossip_put(S.nodes[0].g, S.now, S.rev_new, 0) != 0)
		die("root: gossip_put of the revocation list failed");
	S.nodes[0].got_rev = S.now;
	on_apply_rev(0);
	run_timers(0);
}

/* ---- results ------------------------------------------------------------------------------ */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted delays (ns after t0) of the nodes that count (alive, not the joiner,
 * not the victim), UINT64_MAX for those that never got it; returns how many. */
static size_t delays(bool rev, uint64_t *out)
{
	size_t k = 0;

	for (uint32_t i = 0; i < opt.nodes; i++) {
		const struct node *n = &S.nodes[i];
		uint64_t got = rev ? n->got_rev : n->got_join;
		uint64_t t0 = rev ? S.t_rev : S.t_join;

		if (i == S.victim)
			continue;
		out[k++] = got == 0 ? UINT64_MAX : got - t0;
	}
	qsort(out, k, sizeof(*out), cmp_u64);
	return k;
}

static double quantile_s(const uint64_t *d, size_t k, double q)
{
	size_t idx = (size_t)(q * (double)k + 0.999999);

	if (idx == 0)
		idx = 1;
	if (idx > k || d[idx - 1] == UINT64_MAX)
		return -1;
	return (double)d[idx - 1] / NS_PER_S;
}

static double rss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

static const char *const type_names[8] = {"?",        "SUMMARY", "TREE", "DIGEST",
                                          "ANNOUNCE", "PULL",    "ITEM", "?"};

static void usage(void)
{
	fputs("usage: yip-gossip-sim [--nodes N] [--seed S] [--loss P] [--refresh SECS]\n"
	      "                      [--rev-entries K] [--degree D] [--warm SECS]\n"
	      "                      [--steady SECS] [--after SECS] [--out PREFIX [--command "
	      "STRING]] [--check]\n",
	      stderr);
	exit(2);
}

static double num_arg(int argc, char **argv, int *i)
{
	char *end;
	double v;

	if (*i + 1 >= argc)
		usage();
	v = strtod(argv[++*i], &end);
	if (*end != '\0' || v < 0)
		die("%s: not a number: %s", argv[*i - 1], argv[*i]);
	return v;
}

int main(int argc, char **argv)
{
	struct timespec w0, w1;
	uint64_t *dj, *dr, *per;
	size_t kj, kr;
	struct gossip_stats tot = {0};
	uint64_t drops[GOSSIP_DROP_COUNT] = {0};
	double wall, win_s, mean, p50, p99, max, root_rate;
	struct gossip_blob *rev_old, **recs;
	uint64_t rs = 0;
	int status = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--nodes") == 0)
			opt.nodes = (size_t)num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--seed") == 0)
			opt.seed = (uint64_t)num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--loss") == 0)
			opt.loss = num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--refresh") == 0)
			opt.refresh_s = num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--rev-entries") == 0)
			opt.rev_entries = (unsigned)num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--warm") == 0)
			opt.warm_s = num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--steady") == 0)
			opt.steady_s = num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--after") == 0)
			opt.after_s = num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			opt.out = argv[++i];
		else if (strcmp(argv[i], "--command") == 0 && i + 1 < argc)
			opt.command = argv[++i];
		else if (strcmp(argv[i], "--degree") == 0)
			opt.degree = (unsigned)num_arg(argc, argv, &i);
		else if (strcmp(argv[i], "--check") == 0)
			opt.check = true;
		else
			usage();
	}
	if (opt.degree < 1 || opt.degree > 32)
		die("--degree must be 1 to 32");
	if (opt.steady_s == 0) { /* not given: about 100 records re-signed in the window */
		opt.steady_s = 100 * opt.refresh_s / (double)opt.nodes;
		if (opt.steady_s < 120)
			opt.steady_s = 120;
	}
	if (opt.nodes < 10 || opt.loss >= 1 || opt.refresh_s < 1 || opt.steady_s < 1)
		die("need --nodes >= 10, --loss < 1, --refresh >= 1, --steady >= 1");
	clock_gettime(CLOCK_MONOTONIC, &w0);
	net_rng = opt.seed;

	S.n = opt.nodes + 1;
	S.joiner = (uint32_t)opt.nodes;
	if ((S.nodes = calloc(S.n, sizeof(*S.nodes))) == NULL || u64map_init(&S.by_id, S.n) != 0 ||
	    u64map_init(&S.pairs, 16 * S.n) != 0 || u64map_init(&S.shared, S.n + 2) != 0)
		die("out of memory");
	for (size_t k = 0; k < sizeof(S.net_id); k++)
		S.net_id[k] = (uint8_t)splitmix(&net_rng);
	for (uint32_t i = 0; i < S.n; i++) {
		struct node *n = &S.nodes[i];
		unsigned w = (unsigned)(splitmix(&net_rng) % 100), r = 0;

		for (size_t k = 0; k < GOSSIP_ID_LEN; k++)
			n->id[k] = (uint8_t)splitmix(&net_rng);
		n->rng = opt.seed * 1000003 + i;
		while (w >= region_weight[r])
			w -= region_weight[r++];
		n->region = (uint8_t)r;
		n->access_ms = (uint8_t)(1 + splitmix(&net_rng) % 20);
		n->root = i < N_ROOTS;
		n->timer_at = UINT64_MAX;
		if (u64map_put(&S.by_id, id_key(n->id), (void *)(uintptr_t)(i + 1)) != 0)
			die("out of memory");
	}
	/* The victim: a member that is neither a root nor the joiner. */
	S.victim = (uint32_t)(N_ROOTS + splitmix(&net_rng) % (opt.nodes - N_ROOTS));

	/* Everyone starts holding every record and the current revocation list. */
	rev_old = revocation_blob(1, opt.rev_entries);
	S.rev_new = revocation_blob(2, opt.rev_entries + 1);
	for (uint32_t i = 0; i < opt.nodes; i++)
		start_node(i);
	if ((recs = malloc(opt.nodes * sizeof(*recs))) == NULL)
		die("out of memory");
	for (uint32_t m = 0; m < opt.nodes; m++) {
		S.nodes[m].seq = 1 + splitmix(&net_rng) % 1000;
		recs[m] = record_blob(m, S.nodes[m].seq);
	}
	for (uint32_t i = 0; i < opt.nodes; i++) {
		for (uint32_t m = 0; m < opt.nodes; m++)
			if (gossip_put(S.nodes[i].g, 0, recs[m], GOSSIP_QUIET) != 0)
				die("preload failed");
		if (gossip_put(S.nodes[i].g, 0, rev_old, GOSSIP_QUIET) != 0)
			die("preload failed");
		run_timers(i);
		at((uint64_t)(unif() * opt.refresh_s * NS_PER_S), EV_REFRESH, i, 0);
	}
	for (uint32_t m = 0; m < opt.nodes; m++)
		gossip_blob_unref(recs[m]);
	free(recs);
	gossip_blob_unref(rev_old);
	fprintf(stderr, "yip-gossip-sim: %zu nodes loaded (%.1f MB resident)\n", opt.nodes,
	        rss_mb());

	S.w0 = (uint64_t)(opt.warm_s * NS_PER_S);
	S.w1 = S.w0 + (uint64_t)(opt.steady_s * NS_PER_S);
	S.t_join = S.w1;
	S.t_rev = S.t_join + (uint64_t)(opt.after_s * NS_PER_S);
	S.t_end = S.t_rev + (uint64_t)(opt.after_s * NS_PER_S);
	at(S.w0, EV_TIMER, UINT32_MAX, 1); /* window markers */
	at(S.w1, EV_TIMER, UINT32_MAX, 2);
	at(S.t_join, EV_JOIN, 0, 0);
	at(S.t_rev, EV_REVOKE, 0, 0);

	while (S.heap_n > 0) {
		struct ev e = heap_pop();

		if (e.t > S.t_end) {
			free(e.msg);
			break;
		}
		if (e.t / (30 * NS_PER_S) != S.now / (30 * NS_PER_S))
			fprintf(stderr, "yip-gossip-sim: %3.0f s of %.0f simulated, %llu events\n",
			        (double)e.t / NS_PER_S, (double)S.t_end / NS_PER_S,
			        (unsigned long long)S.events);
		S.now = e.t;
		S.events++;
		switch (e.kind) {
		case EV_TIMER:
			if (e.a == UINT32_MAX) {
				S.in_window = e.b == 1;
				for (uint32_t i = 0; e.b == 1 && i < opt.nodes; i++)
					S.nodes[i].w0_wire = S.nodes[i].wire_bytes;
				for (uint32_t i = 0; e.b == 2 && i < opt.nodes; i++)
					S.nodes[i].w0_wire =
					    S.nodes[i].wire_bytes - S.nodes[i].w0_wire;
				break;
			}
			if (e.t != S.nodes[e.a].timer_at)
				break; /* superseded */
			S.nodes[e.a].timer_at = UINT64_MAX;
			run_timers(e.a);
			break;
		case EV_MSG:
			if (pair_state(e.a, e.b) == 2) {
				gossip_rx(S.nodes[e.b].g, S.now, S.nodes[e.a].id, e.msg, e.len);
				run_timers(e.b);
			} else {
				S.not_up++;
			}
			free(e.msg);
			break;
		case EV_UP:
			on_up(e.a, e.b);
			break;
		case EV_WANT:
			on_want(e.a, e.b, e.flag);
			break;
		case EV_REFRESH:
			on_refresh(e.a);
			break;
		case EV_APPLY_REV:
			on_apply_rev(e.a);
			break;
		case EV_JOIN:
			on_join();
			break;
		case EV_REVOKE:
			on_revoke();
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &w1);
	wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;

	/* Results. */
	if ((dj = malloc(S.n * sizeof(*dj))) == NULL || (dr = malloc(S.n * sizeof(*dr))) == NULL ||
	    (per = malloc(S.n * sizeof(*per))) == NULL)
		die("out of memory");
	kj = delays(false, dj);
	kr = delays(true, dr);
	win_s = opt.steady_s;
	for (uint32_t i = 0; i < opt.nodes; i++)
		per[i] = S.nodes[i].w0_wire;
	qsort(per, opt.nodes, sizeof(*per), cmp_u64);
	mean = 0;
	for (uint32_t i = 0; i < opt.nodes; i++)
		mean += (double)per[i];
	mean /= (double)opt.nodes * win_s;
	p50 = (double)per[opt.nodes / 2] / win_s;
	p99 = (double)per[(opt.nodes * 99) / 100] / win_s;
	max = (double)per[opt.nodes - 1] / win_s;
	root_rate = (double)(S.nodes[0].w0_wire + S.nodes[1].w0_wire) / 2 / win_s;
	for (uint32_t i = 0; i < S.n; i++) {
		struct gossip_stats st;

		if (!S.nodes[i].alive)
			continue;
		gossip_get_stats(S.nodes[i].g, &st);
		for (unsigned d = 0; d < GOSSIP_DROP_COUNT; d++)
			drops[d] += st.drops[d];
		tot.accepted += st.accepted;
		tot.pulls += st.pulls;
		tot.ae_rounds += st.ae_rounds;
		tot.ae_descents += st.ae_descents;
		rs += st.memory;
	}

	printf("gossip simulation: %zu nodes (degree %u), %.0f %% loss, records re-signed every "
	       "%.0f s, "
	       "seed %llu\n",
	       opt.nodes, opt.degree, opt.loss * 100, opt.refresh_s, (unsigned long long)opt.seed);
	printf("  new member's record:  99 %% after %.2f s, 100 %% after %.2f s\n",
	       quantile_s(dj, kj, 0.99), quantile_s(dj, kj, 1.0));
	printf("  the new member held 99 %% of the records after %.1f s\n",
	       S.joiner_learned ? (double)(S.joiner_learned - S.t_join) / NS_PER_S : -1.0);
	printf("  revocation list:      99 %% after %.2f s, 100 %% after %.2f s\n",
	       quantile_s(dr, kr, 0.99), quantile_s(dr, kr, 1.0));
	printf("  steady state (%.0f s, %llu records re-signed), control bytes per node per "
	       "second: mean %.0f, median %.0f, p99 %.0f, max %.0f (roots %.0f)\n",
	       win_s, (unsigned long long)S.win_changes, mean, p50, p99, max, root_rate);
	printf("  by message (all nodes, B/s per node):");
	for (unsigned t = 1; t <= 6; t++)
		printf(" %s %.0f", type_names[t], (double)S.win_bytes_type[t] / opt.nodes / win_s);
	printf(" handshakes %.0f\n", (double)S.win_hs_bytes / opt.nodes / win_s);
	printf("  messages lost %llu, sent on no session %llu, refused handshakes %llu, "
	       "sessions made %llu\n",
	       (unsigned long long)S.lost, (unsigned long long)S.not_up,
	       (unsigned long long)S.refused_hs, (unsigned long long)S.sessions_made);
	printf("  engine drops:");
	for (unsigned d = 0; d < GOSSIP_DROP_COUNT; d++)
		if (drops[d] != 0)
			printf(" %s %llu", gossip_drop_name(d), (unsigned long long)drops[d]);
	printf("\n  engine memory per node %.0f KB (blobs counted in full); process %.0f MB; "
	       "%llu events in %.1f s\n",
	       (double)rs / (double)S.n / 1024, rss_mb(), (unsigned long long)S.events, wall);

	if (opt.out != NULL) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s.csv", opt.out);
		if ((f = fopen(path, "w")) == NULL)
			die("%s: cannot write", path);
		fprintf(f, "seconds,record_share,revocation_share\n");
		for (uint64_t t = 0; t <= (uint64_t)(opt.after_s * 10); t++) {
			uint64_t lim = t * NS_PER_S / 10;
			size_t a = 0, r = 0;

			while (a < kj && dj[a] <= lim)
				a++;
			while (r < kr && dr[r] <= lim)
				r++;
			fprintf(f, "%.1f,%.4f,%.4f\n", (double)t / 10, (double)a / (double)kj,
			        (double)r / (double)kr);
		}
		fclose(f);
		snprintf(path, sizeof(path), "%s.json", opt.out);
		if ((f = fopen(path, "w")) == NULL)
			die("%s: cannot write", path);
		fprintf(f,
		        "{\"nodes\": %zu, \"degree\": %u, \"loss\": %.4f, \"refresh_s\": %.0f, "
		        "\"steady_s\": %.0f, \"steady_changes\": %llu, \"rev_entries\": %u, "
		        "\"rev_bytes\": %u, \"record_bytes\": %u, \"seed\": %llu,\n"
		        " \"join_p99_s\": %.3f, \"join_p100_s\": %.3f, \"rev_p99_s\": %.3f, "
		        "\"rev_p100_s\": %.3f,\n"
		        " \"steady_mean_Bps\": %.1f, \"steady_p50_Bps\": %.1f, \"steady_p99_Bps\": "
		        "%.1f, "
		        "\"steady_max_Bps\": %.1f, \"steady_root_Bps\": %.1f,\n \"by_type_Bps\": {",
		        opt.nodes, opt.degree, opt.loss, opt.refresh_s, opt.steady_s,
		        (unsigned long long)S.win_changes, opt.rev_entries, S.rev_new->len,
		        RECORD_LEN, (unsigned long long)opt.seed, quantile_s(dj, kj, 0.99),
		        quantile_s(dj, kj, 1.0), quantile_s(dr, kr, 0.99), quantile_s(dr, kr, 1.0),
		        mean, p50, p99, max, root_rate);
		for (unsigned t = 1; t <= 6; t++)
			fprintf(f, "\"%s\": %.1f, ", type_names[t],
			        (double)S.win_bytes_type[t] / opt.nodes / win_s);
		fprintf(f, "\"handshakes\": %.1f},\n", (double)S.win_hs_bytes / opt.nodes / win_s);
		fprintf(f,
		        " \"joiner_learned_s\": %.1f, \"lost\": %llu, \"sessions\": %llu, "
		        "\"memory_per_node_kb\": %.0f, "
		        "\"rss_mb\": %.0f, \"wall_s\": %.1f, \"regions\": \"",
		        S.joiner_learned ? (double)(S.joiner_learned - S.t_join) / NS_PER_S : -1.0,
		        (unsigned long long)S.lost, (unsigned long long)S.sessions_made,
		        (double)rs / (double)S.n / 1024, rss_mb(), wall);
		for (unsigned r = 0; r < 5; r++)
			fprintf(f, "%s%s %u %%", r ? ", " : "", region_names[r], region_weight[r]);
		fprintf(f, "\",\n \"command\": \"");
		for (const char *c = opt.command ? opt.command : ""; *c != '\0'; c++)
			if (*c == '"' || *c == '\\')
				fprintf(f, "\\%c", *c);
			else if ((unsigned char)*c >= 0x20)
				fputc(*c, f);
		fprintf(f, "\"}\n");
		fclose(f);
	}

	if (opt.check) {
		double j99 = quantile_s(dj, kj, 0.99), j100 = quantile_s(dj, kj, 1.0);
		double r99 = quantile_s(dr, kr, 0.99), r100 = quantile_s(dr, kr, 1.0);

		if (j99 < 0 || j99 > 10 || j100 < 0 || r99 < 0 || r99 > 30 || r100 < 0 ||
		    mean > 1024) {
			printf("check: FAILED (goals: 99 %% within 10 s and 30 s, everyone in the "
			       "end, "
			       "<= 1024 B/s)\n");
			status = 1;
		} else {
			printf("check: goals met\n");
		}
	}
	for (uint32_t i = 0; i < S.n; i++)
		gossip_free(S.nodes[i].g);
	while (S.heap_n > 0)
		free(heap_pop().msg);
	for (size_t k = 0; k <= S.shared.mask; k++)
		if (S.shared.slots[k].key != 0)
			gossip_blob_unref(S.shared.slots[k].val);
	gossip_blob_unref(S.rev_new);
	u64map_free(&S.by_id);
	u64map_free(&S.pairs);
	u64map_free(&S.shared);
	free(S.heap);
	free(S.nodes);
	free(dj);
	free(dr);
	free(per);
	return status;
}
