/*
 * yip-rdv-bench: what the rendezvous server's engine (src/rendezvous)
 * sustains on this machine, in memory, with no sockets:
 *
 *   1. registrations: N nodes (100 000 by default), each with its own key
 *      pair and address, complete a real Noise IK handshake with the
 *      server and register two local addresses. The nodes' side (keys,
 *      Inits, reading the Resps, sealing the REGISTERs) is prepared outside
 *      the timed part; what is timed is the server's: rdv_rx of every Init
 *      (answering with a Resp) and then of every REGISTER (answering with
 *      REGISTERED). Reported per second of wall time and of CPU time;
 *   2. memory per registered node: the growth of the process's resident
 *      set over the registrations divided by N (everything the nodes' side
 *      needs is allocated and touched before), next to an estimate from
 *      sizeof(struct rdv_node), malloc's overhead and the four maps' slots;
 *   3. the relay: two of the nodes are introduced (LOOKUP, ASK, ANSWER),
 *      then one sends the other Relay datagrams carrying 1400 bytes each;
 *      rdv_rx forwards them into a ring of 64 send buffers, as the daemon
 *      does into its sendmmsg batch. Median of 7 runs, in datagrams/s.
 *
 * The per-source and global Init budgets (struct rdv_config init_rate,
 * init_global) are lifted, so that the engine's cost is measured rather
 * than the policy; the daemon keeps the defaults (20 000 Inits/s in all).
 *
 * Usage: yip-rdv-bench [--nodes N] [--relay-dgrams M] [--markdown FILE]
 *                      [--command STRING]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "rdvclient.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"
#include "wire/wire.h"

#define RING       64   /* send buffers, as the daemon's batch */
#define RELAY_LEN  1400 /* payload of a relayed datagram */
#define RELAY_RUNS 7
#define STEP_NS    1000 /* engine clock advance per datagram */

static struct {
	size_t nodes;
	uint64_t relay_dgrams;
	const char *markdown, *command;
} opt = {100000, 1000000, NULL, NULL};

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("yip-rdv-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident set size in bytes, from /proc/self/statm. */
static size_t rss(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL || fscanf(f, "%lu %lu", &size, &resident) != 2)
		die("cannot read /proc/self/statm");
	fclose(f);
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- the server's I/O: a ring of send buffers; the last datagram is kept ---------- */

static struct {
	uint8_t buf[RING][RDV_MAX_DGRAM];
	unsigned next;
	const uint8_t *last;
	size_t last_len;
	uint64_t sent;
} ring;

static uint8_t *io_buf(void *ctx)
{
	(void)ctx;
	return ring.buf[ring.next];
}

static void io_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	(void)sock;
	(void)to;
	ring.last = ring.buf[ring.next];
	ring.last_len = len;
	ring.next = (ring.next + 1) % RING;
	ring.sent++;
}

/* ---- the benchmark ----------------------------------------------------------------- */

struct node_prep {
	uint8_t init[WIRE_INIT_LEN];
	uint8_t reg[WIRE_DATA_MIN + WIRE_CTRL_MAX];
	uint16_t reg_len;
	uint8_t resp[WIRE_RESP_LEN];
};

struct results {
	double x25519_us; /* CPU time of one X25519 operation (libsodium) */
	size_t nodes;
	double hs_wall, hs_cpu, reg_wall, reg_cpu;
	size_t rss_before, rss_after;
	double per_node_est, map_slots;
	size_t node_size;
	double relay_dps[RELAY_RUNS], relay_median;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* CPU time of one X25519 scalar multiplication: a handshake costs the server five. */
static double x25519_us(void)
{
	uint8_t sk[YIP_KEY_LEN], pk[YIP_KEY_LEN], out[YIP_KEY_LEN];
	const int n = 2000;
	double c0;

	yip_key_generate(sk);
	yip_key_public(pk, sk);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < n; i++) {
		if (yip_dh(out, sk, pk) != 0)
			die("X25519 failed");
		pk[0] ^= out[1];
	}
	return (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / n * 1e6;
}

static void node_addr(struct rdvc *c, size_t i)
{
	c->addr.in4.sin_family = AF_INET;
	c->addr.in4.sin_port = htons((uint16_t)(1024 + i % 60000));
	c->addr.in4.sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)i); /* 10.0.0.0/8 */
}

static void introduce(struct rdv_server *s, struct rdvc *a, struct rdvc *b, uint64_t now)
{
	struct wire_ctrl q = {.kind = WIRE_CTRL_LOOKUP, .id = 1}, m;
	uint8_t d[WIRE_DATA_MIN + WIRE_CTRL_MAX];
	size_t len;

	memcpy(q.key, b->pub, YIP_KEY_LEN);
	len = rdvc_seal_ctrl(a, &q, d);
	rdv_rx(s, now, RDV_SOCK_MAIN, &a->addr, d, len);
	if (ring.last == NULL || !rdvc_open(b, ring.last, ring.last_len, &m) ||
	    m.kind != WIRE_CTRL_ASK)
		die("no ASK for the lookup");
	q = (struct wire_ctrl){.kind = WIRE_CTRL_ANSWER, .id = m.id, .flags = WIRE_CTRL_ACCEPT};
	memcpy(q.key, a->pub, YIP_KEY_LEN);
	len = rdvc_seal_ctrl(b, &q, d);
	rdv_rx(s, now, RDV_SOCK_MAIN, &b->addr, d, len);
	if (s->stats.intros != 1)
		die("the two nodes were not introduced");
}

static void run(struct results *r)
{
	struct rdv_io io = {NULL, io_buf, io_send};
	struct rdv_config cfg;
	struct rdv_server *s = calloc(1, sizeof(*s));
	struct rdvc *c = calloc(opt.nodes, sizeof(*c));
	struct node_prep *p = calloc(opt.nodes, sizeof(*p));
	uint8_t relay[WIRE_RELAY_HDR + RELAY_LEN];
	uint64_t now = YIP_NS_PER_S, wall = 1700000000ULL * YIP_NS_PER_S;
	double t0, c0;
	char err[128];

	if (s == NULL || c == NULL || p == NULL)
		die("out of memory");
	memset(ring.buf, 0, sizeof(ring.buf)); /* touched now, not during the measurement */
	rdv_config_default(&cfg);
	yip_key_generate(cfg.private_key);
	cfg.max_nodes = opt.nodes;
	cfg.init_rate = 30000;        /* per source (a uint16 bucket of twice this) */
	cfg.init_global = UINT32_MAX; /* in all */
	cfg.init_load = UINT32_MAX;   /* and no cookies: every Init is answered with a Resp */
	cfg.relay_rate = 1ULL << 34;
	cfg.relay_burst = 1ULL << 62; /* the relay's budget never runs out here */
	if (rdv_init(s, &cfg, &io, err, sizeof(err)) != 0)
		die("%s", err);

	fprintf(stderr, "yip-rdv-bench: preparing %zu nodes (keys and Inits)...\n", opt.nodes);
	for (size_t i = 0; i < opt.nodes; i++) {
		rdvc_init(&c[i], NULL, "10.0.0.1", 1024);
		node_addr(&c[i], i);
		if (rdvc_init_msg(&c[i], s->public_key, wall,
		                  YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305),
		                  p[i].init) != WIRE_INIT_LEN)
			die("Init %zu", i);
	}

	/* The server answers every Init (timed); the Resps are kept for the nodes. */
	r->rss_before = rss();
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (size_t i = 0; i < opt.nodes; i++) {
		ring.last = NULL;
		rdv_rx(s, now, RDV_SOCK_MAIN, &c[i].addr, p[i].init, WIRE_INIT_LEN);
		if (ring.last == NULL || ring.last_len != WIRE_RESP_LEN)
			die("no Resp for node %zu (drops: rate_limited %llu, full %llu)", i,
			    (unsigned long long)s->drops[RDV_DROP_RATE_LIMITED],
			    (unsigned long long)s->drops[RDV_DROP_FULL]);
		memcpy(p[i].resp, ring.last, WIRE_RESP_LEN);
		now += STEP_NS;
	}
	r->hs_wall = clock_s(CLOCK_MONOTONIC) - t0;
	r->hs_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;

	/* The nodes read their Resps and seal a REGISTER each (not timed). */
	fprintf(stderr, "yip-rdv-bench: %zu handshakes done; sealing REGISTERs...\n", opt.nodes);
	for (size_t i = 0; i < opt.nodes; i++) {
		struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER,
		                        .flags = WIRE_CTRL_RELAY,
		                        .nat = WIRE_NAT_EIM,
		                        .n_cands = 2};

		if (!rdvc_resp(&c[i], p[i].resp, WIRE_RESP_LEN))
			die("node %zu cannot read its Resp", i);
		reg.cands[0] = c[i].addr;
		reg.cands[1].in6.sin6_family = AF_INET6;
		reg.cands[1].in6.sin6_port = htons(51820);
		reg.cands[1].in6.sin6_addr.s6_addr[0] = 0x20;
		reg.cands[1].in6.sin6_addr.s6_addr[15] = 1;
		p[i].reg_len = (uint16_t)rdvc_seal_ctrl(&c[i], &reg, p[i].reg);
	}

	/* The server takes every REGISTER (timed). */
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (size_t i = 0; i < opt.nodes; i++) {
		ring.last = NULL;
		rdv_rx(s, now, RDV_SOCK_MAIN, &c[i].addr, p[i].reg, p[i].reg_len);
		if (ring.last == NULL)
			die("no REGISTERED for node %zu", i);
		if (i < 2 && !rdvc_open(&c[i], ring.last, ring.last_len, &(struct wire_ctrl){0}))
			die("node %zu cannot open its REGISTERED", i);
		now += STEP_NS;
	}
	r->reg_wall = clock_s(CLOCK_MONOTONIC) - t0;
	r->reg_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	r->rss_after = rss();
	if (s->stats.registrations != opt.nodes || s->n_nodes != opt.nodes)
		die("%llu registrations of %zu nodes", (unsigned long long)s->stats.registrations,
		    opt.nodes);
	r->nodes = opt.nodes;
	r->node_size = sizeof(struct rdv_node);
	/* calloc rounds a chunk to 16 bytes and adds 8; each map holds one slot
	 * (16 bytes) per node at a load between 1/4 and 1/2. */
	r->map_slots = (double)(s->by_key.mask + 1 + s->by_index.mask + 1 + s->by_token.mask + 1 +
	                        s->by_relay.mask + 1) /
	               (double)opt.nodes;
	r->per_node_est = (double)((r->node_size + 8 + 15) & ~(size_t)15) +
	                  r->map_slots * sizeof(struct u64map_slot);

	/* The relay between two introduced nodes. */
	introduce(s, &c[0], &c[1], now);
	memset(relay, 0xab, sizeof(relay));
	wire_relay_put(relay, WIRE_RELAY_TO_SERVER, c[0].token, c[1].relay_id);
	for (int run = 0; run < RELAY_RUNS; run++) {
		uint64_t before = s->stats.relayed_dgrams;

		t0 = clock_s(CLOCK_MONOTONIC);
		for (uint64_t k = 0; k < opt.relay_dgrams; k++) {
			rdv_rx(s, now, RDV_SOCK_MAIN, &c[0].addr, relay, sizeof(relay));
			now += STEP_NS / 10;
		}
		r->relay_dps[run] = (double)opt.relay_dgrams / (clock_s(CLOCK_MONOTONIC) - t0);
		if (s->stats.relayed_dgrams - before != opt.relay_dgrams)
			die("%llu of %llu datagrams relayed",
			    (unsigned long long)(s->stats.relayed_dgrams - before),
			    (unsigned long long)opt.relay_dgrams);
	}
	qsort(r->relay_dps, RELAY_RUNS, sizeof(double), cmp_double);
	r->relay_median = r->relay_dps[RELAY_RUNS / 2];

	rdv_free(s);
	free(s);
	for (size_t i = 0; i < opt.nodes; i++)
		rdvc_wipe(&c[i]);
	free(c);
	free(p);
}

/* ---- the report ------------------------------------------------------------------------- */

static void cpu_model(char *out, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(out, len, "unknown CPU");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *v = strchr(line, ':');

		if (strncmp(line, "model name", 10) == 0 && v != NULL) {
			v += 2;
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, len, "%s", v);
			break;
		}
	}
	fclose(f);
}

static void put_row(FILE *f, bool md, const char *name, const char *value)
{
	if (md && name[0] == ' ')
		fprintf(f, "| &emsp;%-42s | %14s |\n", name + 2,
		        value); /* a detail of the row above */
	else if (md)
		fprintf(f, "| %-44s | %14s |\n", name, value);
	else
		fprintf(f, "  %-44s %14s\n", name, value);
}

static void report(FILE *f, const struct results *r, bool md)
{
	double n = (double)r->nodes, both_wall = r->hs_wall + r->reg_wall,
	       both_cpu = r->hs_cpu + r->reg_cpu;
	double rss_node = ((double)r->rss_after - (double)r->rss_before) / n;
	char v[64];

	if (md)
		fprintf(f, "| | |\n|---|---:|\n");
	snprintf(v, sizeof(v), "%.0f", n / both_wall);
	put_row(f, md, "registrations/s (handshake + REGISTER), wall", v);
	snprintf(v, sizeof(v), "%.0f", n / both_cpu);
	put_row(f, md, "registrations/s, CPU time", v);
	snprintf(v, sizeof(v), "%.0f", n / r->hs_wall);
	put_row(f, md, "  handshakes/s alone (Init -> Resp), wall", v);
	snprintf(v, sizeof(v), "%.0f", n / r->reg_wall);
	put_row(f, md, "  REGISTERs/s alone, wall", v);
	snprintf(v, sizeof(v), "%.1f us", both_cpu / n * 1e6);
	put_row(f, md, "CPU per registration", v);
	snprintf(v, sizeof(v), "%.1f us", r->x25519_us);
	put_row(f, md, "  one X25519 operation (the server does 5)", v);
	snprintf(v, sizeof(v), "%.0f B", rss_node);
	put_row(f, md, "memory per registered node (RSS growth / N)", v);
	snprintf(v, sizeof(v), "%.0f B", r->per_node_est);
	put_row(f, md, "  estimate: node + malloc + map slots", v);
	snprintf(v, sizeof(v), "%zu B", r->node_size);
	put_row(f, md, "  of which sizeof(struct rdv_node)", v);
	snprintf(v, sizeof(v), "%.1f", r->map_slots);
	put_row(f, md, "  map slots per node (4 maps, 16 B each)", v);
	snprintf(v, sizeof(v), "%.1f MiB",
	         ((double)r->rss_after - (double)r->rss_before) / 1048576);
	put_row(f, md, "RSS growth for all nodes", v);
	snprintf(v, sizeof(v), "%.0f", r->relay_median);
	put_row(f, md, "relayed datagrams/s (1400-byte payload)", v);
	snprintf(v, sizeof(v), "%.1f Gbit/s", r->relay_median * RELAY_LEN * 8 / 1e9);
	put_row(f, md, "  payload through rdv_rx", v);
	snprintf(v, sizeof(v), "%.0f ns", 1e9 / r->relay_median);
	put_row(f, md, "  per relayed datagram", v);
}

static void markdown(const struct results *r)
{
	FILE *f = fopen(opt.markdown, "w");
	char cpu[160], date[32];
	struct utsname u;
	time_t t = time(NULL);

	if (f == NULL)
		die("%s: cannot write: %s", opt.markdown, strerror(errno));
	cpu_model(cpu, sizeof(cpu));
	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&t));
	fprintf(f,
	        "# The rendezvous server: registrations, memory, relay\n"
	        "\n"
	        "What the rendezvous server's engine (`src/rendezvous`) sustains in memory, no\n"
	        "sockets, on one core. Written by `%s` (`bench/rendezvous/bench.c`,\n"
	        "`build/yip-rdv-bench`) on %s: %s, %ld cores, Linux %s. The machine was\n"
	        "shared with other work; the CPU-time figures are the steadier ones.\n"
	        "\n",
	        opt.command ? opt.command : "yip-rdv-bench", date, cpu,
	        sysconf(_SC_NPROCESSORS_ONLN), u.release);
	fprintf(f, "%zu nodes, each with its own X25519 key pair and address:\n\n", r->nodes);
	report(f, r, true);
	fprintf(f,
	        "\n"
	        "How it is measured:\n"
	        "\n"
	        "- **Registrations.** Every node completes a real Noise IK handshake with the\n"
	        "  server and registers two local addresses. The nodes' side (key pairs, Inits,\n"
	        "  reading Resps, sealing REGISTERs) is prepared outside the timed loops; the\n"
	        "  timed part is the server's `rdv_rx` of every Init (two X25519 operations to\n"
	        "  read it, an ephemeral key and two more to answer: most of the cost) and of\n"
	        "  every REGISTER (one AEAD open, the REGISTERED sealed). The per-source and\n"
	        "  global Init budgets are lifted for the run: they are policy, not cost. The\n"
	        "  daemon keeps its defaults, 20 Inits/s per source address and 20 000/s in\n"
	        "  all (`struct rdv_config`), so a server admits at most 20 000 handshakes a\n"
	        "  second whatever its CPU.\n"
	        "- **Memory.** The growth of the resident set over the registrations, divided\n"
	        "  by the number of nodes (all of the nodes' side is allocated and touched\n"
	        "  before). The estimate adds `sizeof(struct rdv_node)` with malloc's rounding\n"
	        "  and header, and the slots of the four maps (key, session index, relay token,\n"
	        "  relay id), which grow by doubling when half full. A node that relays also\n"
	        "  keeps the relay ids of the nodes it was introduced to (4 bytes each, from 8\n"
	        "  entries up), and each open lookup 64 bytes until answered.\n"
	        "- **Relay.** Two of the registered nodes are introduced (LOOKUP, ASK, ANSWER);\n"
	        "  one sends the other Relay datagrams of %d bytes of payload, and `rdv_rx`\n"
	        "  checks the token, the source and both allow-lists, charges the rate bucket\n"
	        "  and writes the forwarded datagram into a ring of %d send buffers, as the\n"
	        "  daemon does into its `sendmmsg` batch. The figure is the median of %d runs\n"
	        "  of %llu datagrams; the system calls that move them (`recvmmsg`,\n"
	        "  `sendmmsg` with UDP GSO in `yip-rendezvous`) come on top.\n",
	        RELAY_LEN, RING, RELAY_RUNS, (unsigned long long)opt.relay_dgrams);
	if (fclose(f) != 0)
		die("%s: cannot write", opt.markdown);
	fprintf(stderr, "yip-rdv-bench: wrote %s\n", opt.markdown);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: yip-rdv-bench [--nodes N] [--relay-dgrams M] [--markdown FILE]\n"
	           "                     [--command STRING]\n"
	           "  --nodes N         nodes that register (default 100000)\n"
	           "  --relay-dgrams M  relayed datagrams per run (default 1000000)\n"
	           "  --markdown FILE   also write the report (Markdown) to FILE\n"
	           "  --command STRING  the command named in the report\n");
}

int main(int argc, char **argv)
{
	struct results r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
			opt.nodes = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--relay-dgrams") == 0 && i + 1 < argc)
			opt.relay_dgrams = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--markdown") == 0 && i + 1 < argc)
			opt.markdown = argv[++i];
		else if (strcmp(argv[i], "--command") == 0 && i + 1 < argc)
			opt.command = argv[++i];
		else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (opt.nodes < 2 || opt.nodes > 10000000 || opt.relay_dgrams == 0)
		die("--nodes must be 2 to 10000000 and --relay-dgrams at least 1");
	if (yip_crypto_init() != 0)
		die("libsodium failed to initialise");
	memset(&r, 0, sizeof(r));
	r.x25519_us = x25519_us();
	run(&r);
	printf("yip-rdv-bench: %zu nodes\n", r.nodes);
	report(stdout, &r, false);
	if (opt.markdown != NULL)
		markdown(&r);
	return 0;
}
