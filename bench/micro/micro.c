/*
 * yip-micro: what one packet costs on yip's data path, measured in memory.
 *
 *   1. the library floor: libsodium ChaCha20-Poly1305 (IETF), and our
 *      wrappers yip_aead_seal/yip_aead_open around it;
 *   2. datagram framing as the engine does it: the 16-byte header written
 *      and sealed as associated data; the header parsed and the rest opened;
 *   3. Reed-Solomon: ISA-L ec_encode_data as the floor, fec_encode_add per
 *      source symbol, fec_decode per block with sources lost;
 *   4. the engine: two struct yip_device back to back in memory (the pair of
 *      tests/lib/pair.h). A's yip_device_tx of a 1400-byte UDP-in-IPv4
 *      packet, the datagrams caught by A's io callbacks, then B's
 *      yip_device_rx delivering to its tun_write callback: egress alone,
 *      ingress alone, and both in one loop.
 *
 * Every figure is the median over --runs runs (31 by default) of a tight
 * loop timed with clock_gettime(CLOCK_MONOTONIC). Each loop is calibrated
 * first so that one run lasts about --run-ms milliseconds. All benchmarks run
 * interleaved (run r of each, then run r + 1), so that load from other
 * processes on a shared machine falls on all of them alike and any two
 * figures can be compared; a run during which the process lost the CPU is
 * repeated.
 *
 * With --callgrind the program also runs itself under valgrind's callgrind
 * (if valgrind is installed) to count instructions per packet.
 *
 * Usage: yip-micro [--runs N] [--run-ms MS] [--quick] [--markdown FILE]
 *                  [--command STRING] [--callgrind]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <isa-l/erasure_code.h>
#include <sodium.h>

#include "crypto/crypto.h"
#include "fec/fec.h"
#include "fec/policy.h"
#include "pair.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/wire.h"

extern char **environ;

#define MAX_RUNS    201
#define MAX_BENCHES 128
#define BUF_LEN     2048 /* largest AEAD payload measured, with room for header and tag */
#define SYM_LEN     1400 /* FEC symbol length */
#define SYM_STRIDE  1472 /* symbol buffers 64-byte aligned, as the engine's sym_cap */
#define GF_TBL      32   /* bytes of ISA-L tables per coefficient */
#define RECEIVER    0x5eed1234u

#define PKT_LEN     1400 /* inner packet of the pipeline: IPv4 + UDP + payload */
#define PIPE_BATCH  64   /* packets per egress batch (the daemon's UDP_BATCH) */
#define PIPE_SLOTS  (PIPE_BATCH * 4 + 64)
#define PKT_GAP_NS  1000 /* engine clock advance per packet: 1 Mpps */
#define WARMUP_PKTS 1088 /* the ARQ history has been allocated and grown past its first size */

static struct {
	unsigned runs;
	double run_ms;
	unsigned pipe_pkts;
	bool callgrind;
	const char *markdown;
	const char *command;
} opt = {31, 5.0, 4096, false, NULL, NULL};

static volatile uint64_t sink; /* keeps results observable */

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("yip-micro: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *xalloc(size_t len)
{
	void *p = aligned_alloc(64, (len + 63) & ~(size_t)63);

	if (p == NULL)
		die("out of memory");
	memset(p, 0, len);
	return p;
}

/* ---- measurement ------------------------------------------------------------------------- */

typedef void (*loop_fn)(void *arg, uint64_t n);

struct summary {
	double median, p25, p75, min;
};

struct bench {
	char name[96];
	loop_fn fn; /* NULL: samples filled in by the caller (the pipeline) */
	void *arg;
	double bytes;   /* payload per operation, for Gbit/s */
	uint64_t iters; /* operations per run */
	unsigned n;     /* samples */
	double ns[MAX_RUNS];
	struct summary s;
};

static struct bench benches[MAX_BENCHES];
static unsigned n_benches;

static __attribute__((format(printf, 3, 4))) struct bench *bench_new(loop_fn fn, void *arg,
                                                                     const char *fmt, ...)
{
	struct bench *b;
	va_list ap;

	if (n_benches == MAX_BENCHES)
		die("too many benchmarks");
	b = &benches[n_benches++];
	memset(b, 0, sizeof(*b));
	va_start(ap, fmt);
	vsnprintf(b->name, sizeof(b->name), fmt, ap);
	va_end(ap);
	b->fn = fn;
	b->arg = arg;
	return b;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, unsigned n, double q)
{
	double pos = q * (n - 1);
	unsigned i = (unsigned)pos;

	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (sorted[i + 1] - sorted[i]) * (pos - i);
}

static void bench_finish(struct bench *b)
{
	double v[MAX_RUNS];

	if (b->n == 0)
		return;
	memcpy(v, b->ns, sizeof(v[0]) * b->n);
	qsort(v, b->n, sizeof(v[0]), cmp_double);
	b->s.median = quantile(v, b->n, 0.5);
	b->s.p25 = quantile(v, b->n, 0.25);
	b->s.p75 = quantile(v, b->n, 0.75);
	b->s.min = v[0];
}

static double gbps(const struct bench *b)
{
	return b->s.median > 0 ? b->bytes * 8 / b->s.median : 0;
}

/* Half the interquartile range, in percent of the median. */
static double spread(const struct bench *b)
{
	return b->s.median > 0 ? (b->s.p75 - b->s.p25) / 2 / b->s.median * 100 : 0;
}

static uint64_t time_loop(const struct bench *b, uint64_t n)
{
	uint64_t t0 = now_ns();

	b->fn(b->arg, n);
	return now_ns() - t0;
}

/* Operations per run so that one run lasts about opt.run_ms; the first runs also warm up. */
static uint64_t calibrate(const struct bench *b)
{
	double target = opt.run_ms * 1e6;
	uint64_t n = 1;

	for (;;) {
		uint64_t t = time_loop(b, n);

		if ((double)t >= target * 0.8 || n >= (1ULL << 32))
			return n;
		if ((double)t < target / 100)
			n *= 10;
		else
			n = (uint64_t)((double)n * target / (double)t * 1.05) + 1;
	}
}

static void calibrate_range(unsigned first, unsigned count)
{
	for (unsigned i = first; i < first + count; i++)
		benches[i].iters = calibrate(&benches[i]);
}

/*
 * Time this thread has spent runnable but waiting for a CPU (the scheduler's
 * run_delay, second field of /proc/thread-self/schedstat), or 0 if unknown.
 */
static int schedstat_fd = -1;

static uint64_t run_delay_ns(void)
{
	unsigned long long on_cpu, waited;
	char buf[128];
	ssize_t n;

	if (schedstat_fd < 0)
		return 0;
	n = pread(schedstat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%llu %llu", &on_cpu, &waited) == 2 ? waited : 0;
}

#define MAX_REPEATS 3
#define MAX_WAITED  10 /* per cent of a run spent waiting for the CPU before it is repeated */
static unsigned runs_total, runs_repeated, runs_preempted;
static uint64_t timed_wall, timed_waited; /* over the runs kept */

/* Accounts for one run; returns true if it is to be kept. */
static bool run_done(unsigned attempt, uint64_t wall, uint64_t waited)
{
	bool ok = waited * 100 <= wall * MAX_WAITED;

	if (!ok && attempt < MAX_REPEATS) {
		runs_repeated++;
		return false;
	}
	runs_total++;
	runs_preempted += !ok;
	timed_wall += wall;
	timed_waited += waited;
	return true;
}

/* One run of a loop, repeated (up to MAX_REPEATS times) if the thread waited long for the CPU. */
static void sample(struct bench *b)
{
	for (unsigned attempt = 0;; attempt++) {
		uint64_t w0 = run_delay_ns(), t = time_loop(b, b->iters);

		if (run_done(attempt, t, run_delay_ns() - w0)) {
			b->ns[b->n++] = (double)t / (double)b->iters;
			return;
		}
	}
}

static void progress(const char *what)
{
	fprintf(stderr, "yip-micro: %s\n", what);
}

/* ---- 1, 2: AEAD and framing ------------------------------------------------------------- */

#define N_SIZES 5
static const size_t aead_sizes[N_SIZES] = {64, 512, 1300, 1400, 1420};

enum { A_SODIUM_SEAL, A_YIP_SEAL, A_FRAME_SEAL, A_SODIUM_OPEN, A_YIP_OPEN, A_FRAME_OPEN, A_OPS };

struct aead_arg {
	size_t len;
	uint8_t key[YIP_KEY_LEN];
	uint8_t ad[WIRE_DATA_HDR];
	uint8_t *m;   /* plaintext */
	uint8_t *c;   /* m sealed under nonce 0 with ad */
	uint8_t *out; /* where the loops write */
	uint8_t *d;   /* a data datagram carrying m under counter 0 */
	uint64_t bad;
};

static void sodium_nonce(uint8_t npub[crypto_aead_chacha20poly1305_ietf_NPUBBYTES], uint64_t n)
{
	memset(npub, 0, 4);
	wire_put64(npub + 4, n);
}

static void loop_sodium_seal(void *arg, uint64_t n)
{
	struct aead_arg *x = arg;
	uint8_t npub[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];

	for (uint64_t i = 0; i < n; i++) {
		sodium_nonce(npub, i);
		crypto_aead_chacha20poly1305_ietf_encrypt(x->out, NULL, x->m, x->len, x->ad,
		                                          sizeof(x->ad), NULL, npub, x->key);
	}
}

static void loop_yip_seal(void *arg, uint64_t n)
{
	struct aead_arg *x = arg;

	for (uint64_t i = 0; i < n; i++)
		yip_aead_seal(x->out, x->key, i, x->ad, sizeof(x->ad), x->m, x->len);
}

/* Data datagram as seal_send() builds it: header, then the packet sealed from where it lies. */
static __attribute__((noinline)) void loop_frame_seal(void *arg, uint64_t n)
{
	struct aead_arg *x = arg;

	for (uint64_t i = 0; i < n; i++) {
		wire_data_header(x->out, WIRE_DATA, WIRE_FEC_NONE, 0, RECEIVER, i);
		yip_aead_seal(x->out + WIRE_DATA_HDR, x->key, i, x->out, WIRE_DATA_HDR, x->m,
		              x->len);
	}
}

static void loop_sodium_open(void *arg, uint64_t n)
{
	struct aead_arg *x = arg;
	uint8_t npub[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++) {
		sodium_nonce(npub, 0);
		bad += crypto_aead_chacha20poly1305_ietf_decrypt(x->out, NULL, NULL, x->c,
		                                                 x->len + YIP_AEAD_TAG, x->ad,
		                                                 sizeof(x->ad), npub, x->key) != 0;
	}
	x->bad += bad;
}

static void loop_yip_open(void *arg, uint64_t n)
{
	struct aead_arg *x = arg;
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		bad += yip_aead_open(x->out, x->key, 0, x->ad, sizeof(x->ad), x->c,
		                     x->len + YIP_AEAD_TAG) != 0;
	x->bad += bad;
}

/* As frame_open() does it: classify, decode the header, open with it as AD. */
static __attribute__((noinline)) void loop_frame_open(void *arg, uint64_t n)
{
	struct aead_arg *x = arg;
	size_t dlen = WIRE_DATA_HDR + x->len + YIP_AEAD_TAG;
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct wire_hdr h;

		if (wire_classify(x->d, dlen) != WIRE_DATA || !wire_hdr_get(&h, x->d, dlen) ||
		    h.receiver != RECEIVER) {
			bad++;
			continue;
		}
		bad += yip_aead_open(x->out, x->key, h.counter, x->d, WIRE_DATA_HDR,
		                     x->d + WIRE_DATA_HDR, dlen - WIRE_DATA_HDR) != 0;
	}
	x->bad += bad;
}

static struct aead_arg *aead_arg_new(size_t len)
{
	struct aead_arg *x = xalloc(sizeof(*x));

	x->len = len;
	randombytes_buf(x->key, sizeof(x->key));
	randombytes_buf(x->ad, sizeof(x->ad));
	x->m = xalloc(BUF_LEN);
	x->c = xalloc(BUF_LEN);
	x->out = xalloc(BUF_LEN);
	x->d = xalloc(BUF_LEN);
	randombytes_buf(x->m, len);
	yip_aead_seal(x->c, x->key, 0, x->ad, sizeof(x->ad), x->m, len);
	wire_data_header(x->d, WIRE_DATA, WIRE_FEC_NONE, 0, RECEIVER, 0);
	yip_aead_seal(x->d + WIRE_DATA_HDR, x->key, 0, x->d, WIRE_DATA_HDR, x->m, len);
	return x;
}

static struct bench *aead_bench[A_OPS][N_SIZES];
static struct aead_arg *aead_args[N_SIZES];

static void setup_aead(void)
{
	static const loop_fn fns[A_OPS] = {loop_sodium_seal, loop_yip_seal, loop_frame_seal,
	                                   loop_sodium_open, loop_yip_open, loop_frame_open};
	static const char *const names[A_OPS] = {"libsodium encrypt", "yip_aead_seal",
	                                         "header + seal",     "libsodium decrypt",
	                                         "yip_aead_open",     "parse + open"};

	for (unsigned s = 0; s < N_SIZES; s++) {
		unsigned first = n_benches;
		char what[80];

		aead_args[s] = aead_arg_new(aead_sizes[s]);
		for (unsigned o = 0; o < A_OPS; o++) {
			aead_bench[o][s] =
			    bench_new(fns[o], aead_args[s], "%s %zu B", names[o], aead_sizes[s]);
			aead_bench[o][s]->bytes = (double)aead_sizes[s];
		}
		snprintf(what, sizeof(what), "calibrating AEAD and framing, %zu B", aead_sizes[s]);
		progress(what);
		calibrate_range(first, A_OPS);
	}
}

/* ---- 3: Reed-Solomon -------------------------------------------------------------------- */

#define N_CODES 5
static const unsigned codes[N_CODES][2] = {{1, 1}, {1, 2}, {16, 4}, {32, 8}, {32, 16}};

struct fec_arg {
	unsigned k, r, lost;
	uint8_t *mem;
	uint8_t *src[FEC_MAX_K], *rep[FEC_MAX_R], *tails[FEC_MAX_R];
	uint8_t hdr[WIRE_SYM_HDR];
	uint8_t *whole; /* header and packet in one buffer: WIRE_SYM_HDR + SYM_LEN bytes */
	bool have_src[FEC_MAX_K], have_rep[FEC_MAX_R];
	unsigned char *tbls; /* ISA-L tables of a Cauchy matrix, for ec_encode_data */
	uint64_t bad;
};

static struct fec_arg *fec_arg_new(unsigned k, unsigned r, unsigned lost)
{
	struct fec_arg *x = xalloc(sizeof(*x));
	unsigned char matrix[(FEC_MAX_K + FEC_MAX_R) * FEC_MAX_K];

	x->k = k;
	x->r = r;
	x->lost = lost;
	x->mem = xalloc((size_t)(k + r) * SYM_STRIDE);
	for (unsigned i = 0; i < k; i++) {
		x->src[i] = x->mem + (size_t)i * SYM_STRIDE;
		randombytes_buf(x->src[i], SYM_LEN);
		x->have_src[i] = true;
	}
	for (unsigned j = 0; j < r; j++) {
		x->rep[j] = x->mem + (size_t)(k + j) * SYM_STRIDE;
		x->tails[j] = x->rep[j] + WIRE_SYM_HDR;
		x->have_rep[j] = true;
	}
	randombytes_buf(x->hdr, sizeof(x->hdr));
	x->whole = xalloc(WIRE_SYM_HDR + SYM_LEN);
	randombytes_buf(x->whole, WIRE_SYM_HDR + SYM_LEN);
	x->tbls = xalloc((size_t)k * r * GF_TBL);
	gf_gen_cauchy1_matrix(matrix, (int)(k + r), (int)k);
	ec_init_tables((int)k, (int)r, matrix + (size_t)k * k, x->tbls);
	return x;
}

/* Encodes the block, loses x->lost sources spread over it, and checks that decoding restores them.
 */
static void fec_arg_lose(struct fec_arg *x)
{
	uint8_t *orig = xalloc((size_t)x->k * SYM_LEN);
	int got;

	for (unsigned j = 0; j < x->r; j++)
		memset(x->rep[j], 0, SYM_LEN);
	for (unsigned i = 0; i < x->k; i++) {
		fec_encode_add(x->r, i, x->src[i], SYM_LEN, x->rep);
		memcpy(orig + (size_t)i * SYM_LEN, x->src[i], SYM_LEN);
	}
	for (unsigned j = 0; j < x->lost; j++) {
		unsigned i = j * x->k / x->lost;

		x->have_src[i] = false;
		memset(x->src[i], 0xaa, SYM_LEN);
	}
	got = fec_decode(x->k, x->r, SYM_LEN, x->src, x->have_src, x->rep, x->have_rep);
	if (got != (int)x->lost)
		die("fec_decode K=%u R=%u lost %u returned %d", x->k, x->r, x->lost, got);
	for (unsigned i = 0; i < x->k; i++)
		if (memcmp(orig + (size_t)i * SYM_LEN, x->src[i], SYM_LEN) != 0)
			die("fec_decode K=%u R=%u lost %u: source %u wrong", x->k, x->r, x->lost,
			    i);
	free(orig);
}

static void loop_isal_encode(void *arg, uint64_t n)
{
	struct fec_arg *x = arg;

	for (uint64_t i = 0; i < n; i++)
		ec_encode_data(SYM_LEN, (int)x->k, (int)x->r, x->tbls, x->src, x->rep);
}

/* One operation = one source symbol folded into the R repairs. */
static void loop_encode_add(void *arg, uint64_t n)
{
	struct fec_arg *x = arg;

	for (uint64_t i = 0; i < n; i++)
		fec_encode_add(x->r, (unsigned)(i % x->k), x->src[i % x->k], SYM_LEN, x->rep);
}

/* As fec_tx_packet() does it: header and packet copied into one buffer, one call. */
static void loop_encode_add_engine(void *arg, uint64_t n)
{
	struct fec_arg *x = arg;

	for (uint64_t i = 0; i < n; i++) {
		unsigned s = (unsigned)(i % x->k);

		memcpy(x->whole, x->hdr, WIRE_SYM_HDR);
		memcpy(x->whole + WIRE_SYM_HDR, x->src[s], SYM_LEN);
		fec_encode_add(x->r, s, x->whole, WIRE_SYM_HDR + SYM_LEN, x->rep);
	}
}

/* The same symbol folded in with one call, as if header and packet were contiguous. */
static void loop_encode_add_whole(void *arg, uint64_t n)
{
	struct fec_arg *x = arg;

	for (uint64_t i = 0; i < n; i++)
		fec_encode_add(x->r, (unsigned)(i % x->k), x->whole, WIRE_SYM_HDR + SYM_LEN,
		               x->rep);
}

static void loop_decode(void *arg, uint64_t n)
{
	struct fec_arg *x = arg;
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++)
		bad += fec_decode(x->k, x->r, SYM_LEN, x->src, x->have_src, x->rep, x->have_rep) !=
		       (int)x->lost;
	x->bad += bad;
}

enum { E_ISAL, E_ADD, E_ADD_ENGINE, E_ADD_WHOLE, E_OPS };
static struct bench *enc_bench[N_CODES][E_OPS];
#define MAX_LOSSES 3
static struct bench *dec_bench[N_CODES][MAX_LOSSES];
static unsigned dec_lost[N_CODES][MAX_LOSSES];
static unsigned n_dec[N_CODES];

static void setup_fec(void)
{
	fec_init();
	progress("calibrating Reed-Solomon encoding");
	for (unsigned c = 0; c < N_CODES; c++) {
		unsigned k = codes[c][0], r = codes[c][1], first = n_benches;
		struct fec_arg *x = fec_arg_new(k, r, 0);

		enc_bench[c][E_ISAL] = bench_new(loop_isal_encode, x,
		                                 "ISA-L ec_encode_data K=%u R=%u, per block", k, r);
		enc_bench[c][E_ISAL]->bytes = (double)k * SYM_LEN;
		enc_bench[c][E_ADD] =
		    bench_new(loop_encode_add, x, "fec_encode_add K=%u R=%u, per source", k, r);
		enc_bench[c][E_ADD]->bytes = SYM_LEN;
		enc_bench[c][E_ADD_ENGINE] =
		    bench_new(loop_encode_add_engine, x,
		              "fec_encode_add 10 B + 1400 B, K=%u R=%u, per source", k, r);
		enc_bench[c][E_ADD_ENGINE]->bytes = SYM_LEN;
		enc_bench[c][E_ADD_WHOLE] =
		    bench_new(loop_encode_add_whole, x,
		              "fec_encode_add 1410 B in one call, K=%u R=%u, per source", k, r);
		enc_bench[c][E_ADD_WHOLE]->bytes = SYM_LEN;
		calibrate_range(first, E_OPS);
	}
	progress("calibrating Reed-Solomon decoding");
	for (unsigned c = 0; c < N_CODES; c++) {
		unsigned k = codes[c][0], r = codes[c][1], first = n_benches;
		unsigned want[MAX_LOSSES] = {1, r / 2, r};

		for (unsigned w = 0; w < MAX_LOSSES; w++) {
			unsigned lost = want[w];
			struct fec_arg *x;
			bool dup = false;

			for (unsigned v = 0; v < n_dec[c]; v++)
				dup |= dec_lost[c][v] == lost;
			if (lost == 0 || lost > k || dup)
				continue;
			x = fec_arg_new(k, r, lost);
			fec_arg_lose(x);
			dec_lost[c][n_dec[c]] = lost;
			dec_bench[c][n_dec[c]] = bench_new(
			    loop_decode, x, "fec_decode K=%u R=%u, %u lost, per block", k, r, lost);
			dec_bench[c][n_dec[c]]->bytes = (double)k * SYM_LEN;
			n_dec[c]++;
		}
		calibrate_range(first, n_dec[c]);
	}
}

/* ---- pieces of the engine's per-packet work ----------------------------------------------- */

#define RING_SLOTS 1024 /* a ring of packets, as the ARQ history keeps each bulk packet */

struct piece_arg {
	struct flow_table *flows;
	uint8_t *pkt;
	uint8_t *ring; /* RING_SLOTS slots of YIP_DEFAULT_MTU bytes */
	uint64_t now, i;
};

static void loop_flow_classify(void *arg, uint64_t n)
{
	struct piece_arg *x = arg;
	uint64_t acc = 0;

	for (uint64_t i = 0; i < n; i++) {
		acc += flow_classify(x->flows, x->pkt, PKT_LEN, x->now);
		x->now += PKT_GAP_NS;
	}
	sink += acc;
}

/* What retx_keep() does with every bulk packet: a copy into the next slot of a ring. */
static void loop_ring_copy(void *arg, uint64_t n)
{
	struct piece_arg *x = arg;

	for (uint64_t i = 0; i < n; i++, x->i++)
		memcpy(x->ring + (size_t)(x->i % RING_SLOTS) * YIP_DEFAULT_MTU, x->pkt, PKT_LEN);
	sink += x->ring[0];
}

static struct bench *piece_classify, *piece_copy;

static void make_packet(uint8_t *p, uint32_t seq);

static void setup_pieces(void)
{
	struct piece_arg *x = xalloc(sizeof(*x));
	unsigned first = n_benches;

	progress("calibrating pieces of the engine");
	x->flows = xalloc(sizeof(*x->flows));
	x->pkt = xalloc(PKT_LEN);
	x->ring = xalloc((size_t)RING_SLOTS * YIP_DEFAULT_MTU);
	x->now = YIP_NS_PER_S;
	make_packet(x->pkt, 1);
	piece_classify = bench_new(loop_flow_classify, x, "flow_classify, one flow, %d B", PKT_LEN);
	piece_copy =
	    bench_new(loop_ring_copy, x, "memcpy %d B into a %d-slot ring", PKT_LEN, RING_SLOTS);
	piece_classify->bytes = piece_copy->bytes = PKT_LEN;
	calibrate_range(first, 2);
}

/* ---- 4: the engine, two devices back to back ---------------------------------------------- */

enum params_mode { PARAMS_NONE, PARAMS_POLICY, PARAMS_FORCE };

struct pipe_cfg {
	const char *name;
	bool fec_off;
	enum params_mode mode;
	double loss; /* PARAMS_POLICY: the loss estimate the sender's policy is run at */
	uint8_t k, r;
	int drop_idx; /* >= 0: data datagrams at this FEC index never reach B */
	bool obf;     /* both engines with obf_psk (docs/obfuscation.md) */
};

static const struct pipe_cfg pipe_cfgs[] = {
    {"fec=off", true, PARAMS_NONE, 0, 0, 0, -1, false},
    {"FEC on, clean link", false, PARAMS_POLICY, 0, 0, 0, -1, false},
    {"FEC on, policy at 1 % loss", false, PARAMS_POLICY, 0.01, 0, 0, -1, false},
    {"FEC on, policy at 10 % loss", false, PARAMS_POLICY, 0.10, 0, 0, -1, false},
    {"FEC on, forced K=32 R=8", false, PARAMS_FORCE, 0, 32, 8, -1, false},
    {"FEC on, forced K=32 R=8, 1 source in 32 lost", false, PARAMS_FORCE, 0, 32, 8, 13, false},
    {"FEC on, clean link, obf_psk", false, PARAMS_POLICY, 0, 0, 0, -1, true},
};
#define N_PIPES  (sizeof(pipe_cfgs) / sizeof(pipe_cfgs[0]))
#define P_OFF    0
#define P_CLEAN  1
#define P_FORCED 4
#define P_LOSSY  5

struct pipe {
	const struct pipe_cfg *cfg;
	struct pair pair;        /* A = pair.n[0] sends, B = pair.n[1] receives */
	struct pair_node *a, *b; /* &pair.n[0], &pair.n[1] */
	uint64_t now;
	uint8_t *pkts; /* PIPE_BATCH packets of PKT_LEN bytes */
	uint64_t sent;
	struct fec_params bulk;               /* the sender's bulk parameters */
	uint64_t m_sent, m_datagrams, m_wire; /* while measured */
	struct bench *egress, *ingress, *both;
};

/* A's tx_drop in the lossy configuration: data datagrams at FEC index drop_idx never leave. */
static bool drop_fec_idx(void *arg, const uint8_t *d, size_t len)
{
	const struct pipe_cfg *c = arg;

	(void)len;
	return d[0] == WIRE_DATA && d[1] == (uint8_t)c->drop_idx;
}

/* An IPv4/UDP packet of PKT_LEN bytes from 10.0.0.1 to 10.0.0.2 with random payload. */
static void make_packet(uint8_t *p, uint32_t seq)
{
	randombytes_buf(p, PKT_LEN);
	memset(p, 0, 28);
	p[0] = 0x45;
	p[2] = (uint8_t)(PKT_LEN >> 8);
	p[3] = (uint8_t)PKT_LEN;
	p[8] = 64;
	p[9] = 17;
	inet_pton(AF_INET, "10.0.0.1", p + 12);
	inet_pton(AF_INET, "10.0.0.2", p + 16);
	p[20] = 0x30, p[21] = 0x39, p[22] = 0x30, p[23] = 0x39;
	p[24] = (uint8_t)((PKT_LEN - 20) >> 8);
	p[25] = (uint8_t)(PKT_LEN - 20);
	memcpy(p + 28, &seq, sizeof(seq));
}

static __attribute__((noinline)) void pipe_egress_batch(struct pipe *p)
{
	for (unsigned j = 0; j < PIPE_BATCH; j++) {
		yip_device_tx(&p->a->dev, p->now, p->pkts + (size_t)j * PKT_LEN, PKT_LEN);
		p->now += PKT_GAP_NS;
	}
	p->sent += PIPE_BATCH;
}

static __attribute__((noinline)) void pipe_ingress_batch(struct pipe *p)
{
	pair_pump(&p->pair, 0, p->now, NULL, NULL);
}

/* Batches of PIPE_BATCH packets: all of A's egress, then all of B's ingress. */
static void pipe_split(struct pipe *p, unsigned npkts, uint64_t *egress, uint64_t *ingress)
{
	for (unsigned i = 0; i < npkts; i += PIPE_BATCH) {
		uint64_t t0 = now_ns(), t1, t2;

		pipe_egress_batch(p);
		t1 = now_ns();
		pipe_ingress_batch(p);
		t2 = now_ns();
		*egress += t1 - t0;
		*ingress += t2 - t1;
	}
}

/* One packet at a time: A's egress, then B's ingress of what it produced. */
static void pipe_both(struct pipe *p, unsigned npkts)
{
	for (unsigned i = 0; i < npkts; i++) {
		yip_device_tx(&p->a->dev, p->now, p->pkts + (size_t)(i % PIPE_BATCH) * PKT_LEN,
		              PKT_LEN);
		p->now += PKT_GAP_NS;
		pair_pump(&p->pair, 0, p->now, NULL, NULL);
	}
	p->sent += npkts;
}

static void pipe_params(struct pipe *p)
{
	const struct pipe_cfg *c = p->cfg;
	struct yip_fec *f = &p->a->dev.peers[0]->fec;

	if (c->mode == PARAMS_POLICY) {
		f->loss = c->loss;
		for (int cls = 0; cls < FLOW_CLASSES; cls++)
			fec_policy((enum flow_class)cls, c->loss, 1, 0, true, &f->params[cls]);
	} else if (c->mode == PARAMS_FORCE) {
		f->params[FLOW_BULK].k = c->k;
		f->params[FLOW_BULK].r = c->r;
	}
	p->bulk = f->params[FLOW_BULK];
}

/* Two engines with a session between them, the sender's FEC parameters set, warmed up. */
static struct pipe *pipe_new(const struct pipe_cfg *c)
{
	struct pipe *p = xalloc(sizeof(*p));
	struct yip_timing t;
	static const uint8_t psk[32] = {0x0b, 0xf5};
	struct pair_opts o = {.fec_off = c->fec_off, .timing = &t, .out_cap = PIPE_SLOTS};
	char err[256];

	if (c->obf)
		o.obf_psk[0] = o.obf_psk[1] = psk;
	p->cfg = c;
	p->now = YIP_NS_PER_S;
	yip_timing_default(&t);
	t.rekey_after = 3600 * YIP_NS_PER_S; /* no rekey while measuring */
	t.reject_after = 3 * t.rekey_after;
	if (pair_init(&p->pair, &o, err, sizeof(err)) != 0)
		die("pair_init: %s", err);
	p->a = &p->pair.n[0];
	p->b = &p->pair.n[1];
	p->pkts = xalloc((size_t)PIPE_BATCH * PKT_LEN);
	for (unsigned j = 0; j < PIPE_BATCH; j++)
		make_packet(p->pkts + (size_t)j * PKT_LEN, j);

	/* Handshake: the first packet waits for it, then goes. */
	yip_device_tx(&p->a->dev, p->now, p->pkts, PKT_LEN);
	pair_settle(&p->pair, p->now);
	if (!yip_peer_established(p->a->dev.peers[0], p->now) || p->b->packets != 1)
		die("%s: no session between the engines", c->name);
	pipe_params(p);
	if (c->drop_idx >= 0) {
		p->a->tx_drop = drop_fec_idx;
		p->a->tx_drop_arg = (void *)c;
	}
	/* Not through pipe_*_batch(): callgrind counts only what runs inside those. */
	pipe_both(p, WARMUP_PKTS);
	/* Nothing but data may flow; B's loss reports would change A's parameters. */
	if (p->b->nout != 0)
		die("%s: the receiver answered", c->name);
	if (c->mode == PARAMS_FORCE && p->a->dev.peers[0]->stats.repair_sent == 0)
		die("%s: no repair symbols sent", c->name);
	return p;
}

static uint64_t drops(const struct yip_device *dev)
{
	uint64_t n = 0;

	for (int d = 0; d < YIP_DROP_COUNT; d++)
		n += dev->drops[d];
	return n;
}

static void pipe_check(const struct pipe *p)
{
	uint64_t lag = p->sent + 1 - p->b->packets; /* +1: the handshake's packet */

	if (drops(&p->a->dev) || drops(&p->b->dev))
		die("%s: the engines dropped datagrams", p->cfg->name);
	/* With losses, the last blocks may still wait for their repairs. */
	if (p->b->packets > p->sent + 1 || lag > (p->cfg->drop_idx >= 0 ? 2u * PIPE_BATCH : 0u))
		die("%s: %llu packets sent, %llu delivered", p->cfg->name,
		    (unsigned long long)p->sent + 1, (unsigned long long)p->b->packets);
}

static void pipe_free(struct pipe *p)
{
	pair_free(&p->pair);
	free(p->pkts);
	free(p);
}

static struct pipe *pipes[N_PIPES];

static void setup_pipeline(void)
{
	progress("setting up the engines");
	for (unsigned c = 0; c < N_PIPES; c++) {
		struct pipe *p = pipe_new(&pipe_cfgs[c]);

		p->egress = bench_new(NULL, p, "pipeline egress: %s", p->cfg->name);
		p->ingress = bench_new(NULL, p, "pipeline ingress: %s", p->cfg->name);
		p->both = bench_new(NULL, p, "pipeline egress + ingress: %s", p->cfg->name);
		p->egress->bytes = p->ingress->bytes = p->both->bytes = PKT_LEN;
		p->egress->iters = p->ingress->iters = p->both->iters = opt.pipe_pkts;
		pipes[c] = p;
	}
}

/* One split run and one joint run of a configuration, each repeated if preempted. */
static void pipe_sample(struct pipe *p)
{
	for (unsigned attempt = 0;; attempt++) {
		uint64_t eg = 0, in = 0, d0 = p->a->datagrams, b0 = p->a->wire_bytes;
		uint64_t w0 = run_delay_ns(), t0 = now_ns(), t;

		pipe_split(p, opt.pipe_pkts, &eg, &in);
		t = now_ns() - t0;
		p->m_sent += opt.pipe_pkts;
		p->m_datagrams += p->a->datagrams - d0;
		p->m_wire += p->a->wire_bytes - b0;
		if (run_done(attempt, t, run_delay_ns() - w0)) {
			p->egress->ns[p->egress->n++] = (double)eg / opt.pipe_pkts;
			p->ingress->ns[p->ingress->n++] = (double)in / opt.pipe_pkts;
			break;
		}
	}
	for (unsigned attempt = 0;; attempt++) {
		uint64_t w0 = run_delay_ns(), t0 = now_ns(), t;

		pipe_both(p, opt.pipe_pkts);
		t = now_ns() - t0;
		if (run_done(attempt, t, run_delay_ns() - w0)) {
			p->both->ns[p->both->n++] = (double)t / opt.pipe_pkts;
			break;
		}
	}
}

/*
 * Every benchmark, interleaved: run r of each, then run r + 1, so that load
 * from elsewhere falls on all of them alike and any two figures can be compared.
 */
static void run_all(void)
{
	for (unsigned r = 0; r < opt.runs; r++) {
		if (r % 10 == 0) {
			char what[64];

			snprintf(what, sizeof(what), "timing: round %u of %u", r + 1, opt.runs);
			progress(what);
		}
		for (unsigned i = 0; i < n_benches; i++)
			if (benches[i].fn != NULL)
				sample(&benches[i]);
		for (unsigned c = 0; c < N_PIPES; c++)
			pipe_sample(pipes[c]);
	}
	for (unsigned i = 0; i < n_benches; i++)
		bench_finish(&benches[i]);
	for (unsigned s = 0; s < N_SIZES; s++)
		if (aead_args[s]->bad)
			die("%zu B: %llu authentication failures", aead_sizes[s],
			    (unsigned long long)aead_args[s]->bad);
	for (unsigned c = 0; c < N_CODES; c++)
		for (unsigned v = 0; v < n_dec[c]; v++)
			if (((struct fec_arg *)dec_bench[c][v]->arg)->bad)
				die("fec_decode K=%u R=%u failed while timed", codes[c][0],
				    codes[c][1]);
	for (unsigned c = 0; c < N_PIPES; c++)
		pipe_check(pipes[c]);
}

/* ---- instruction counts under callgrind --------------------------------------------------- */

struct cg_item {
	const char *what; /* --count argument */
	unsigned cfg;     /* pipeline configuration */
	const char *toggle;
	const char *label;
	bool ok;
	double ir, d1, ll; /* per operation: instructions, L1 data misses, last-level misses */
};

static struct cg_item cg_items[] = {
    {"seal", 0, "loop_frame_seal*", "header + seal, 1400 B", false, 0, 0, 0},
    {"open", 0, "loop_frame_open*", "parse + open, 1400 B", false, 0, 0, 0},
    {"egress", P_OFF, "pipe_egress_batch*", "egress", false, 0, 0, 0},
    {"ingress", P_OFF, "pipe_ingress_batch*", "ingress", false, 0, 0, 0},
    {"egress", P_CLEAN, "pipe_egress_batch*", "egress", false, 0, 0, 0},
    {"ingress", P_CLEAN, "pipe_ingress_batch*", "ingress", false, 0, 0, 0},
    {"egress", P_FORCED, "pipe_egress_batch*", "egress", false, 0, 0, 0},
    {"ingress", P_FORCED, "pipe_ingress_batch*", "ingress", false, 0, 0, 0},
};
#define N_CG       (sizeof(cg_items) / sizeof(cg_items[0]))
#define CG_PACKETS 2048
#define CG_EVENTS  9 /* Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw */
enum cg_state { CG_NOT_RUN, CG_NO_PATH, CG_NO_VALGRIND, CG_PARTIAL, CG_OK };
static enum cg_state cg_state;
static double cg_seconds;

/* The child side: runs one loop whose instructions callgrind collects. */
static int count_mode(const char *what, unsigned cfg, unsigned n)
{
	if (strcmp(what, "seal") == 0 || strcmp(what, "open") == 0) {
		struct aead_arg *x = aead_arg_new(1400);

		if (strcmp(what, "seal") == 0)
			loop_frame_seal(x, n);
		else
			loop_frame_open(x, n);
		return x->bad ? 1 : 0;
	}
	if (cfg >= N_PIPES || (strcmp(what, "egress") != 0 && strcmp(what, "ingress") != 0))
		return 2;
	{
		struct pipe *p = pipe_new(&pipe_cfgs[cfg]);
		uint64_t eg = 0, in = 0;

		pipe_split(p, n, &eg, &in);
		pipe_check(p);
		pipe_free(p);
	}
	return 0;
}

/* Position of each event we want among the counts, from callgrind's "events:" line. */
static void cg_events(const char *line, int pos[CG_EVENTS])
{
	static const char *const names[CG_EVENTS] = {"Ir",   "Dr",   "Dw",   "I1mr", "D1mr",
	                                             "D1mw", "ILmr", "DLmr", "DLmw"};
	char buf[512], *tok, *save = NULL;
	int i = -1; /* the first word is "events:" */

	snprintf(buf, sizeof(buf), "%s", line);
	for (int e = 0; e < CG_EVENTS; e++)
		pos[e] = -1;
	for (tok = strtok_r(buf, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save), i++)
		for (int e = 0; e < CG_EVENTS; e++)
			if (strcmp(tok, names[e]) == 0)
				pos[e] = i;
}

/* Runs one loop under callgrind with its cache simulator; fills it->ir, d1, ll. */
static bool callgrind_one(const char *self, struct cg_item *it, bool *missing)
{
	char path[96], outarg[128], toggle[96], cfg[16], n[16], line[512];
	char *argv[] = {"valgrind",   "--tool=callgrind", "--cache-sim=yes", outarg, toggle,
	                (char *)self, "--count",          (char *)it->what,  cfg,    n,
	                NULL};
	unsigned long long v[CG_EVENTS] = {0};
	posix_spawn_file_actions_t fa;
	int pos[CG_EVENTS] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
	bool found = false;
	int status, rc;
	pid_t pid;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/yip-micro-callgrind.%d", (int)getpid());
	snprintf(outarg, sizeof(outarg), "--callgrind-out-file=%s", path);
	snprintf(toggle, sizeof(toggle), "--toggle-collect=%s", it->toggle);
	snprintf(cfg, sizeof(cfg), "%u", it->cfg);
	snprintf(n, sizeof(n), "%u", CG_PACKETS);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, "valgrind", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		*missing = rc == ENOENT;
		return false;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(path);
		return false;
	}
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "events:", 7) == 0) {
			cg_events(line, pos);
		} else if (strncmp(line, "totals:", 7) == 0) {
			/* Trailing zero counts may be left out. */
			char *p = line + 7, *end;
			unsigned long long x[CG_EVENTS + 8] = {0};

			for (int i = 0; i < CG_EVENTS + 8; i++, p = end) {
				x[i] = strtoull(p, &end, 10);
				if (end == p)
					break;
			}
			for (int e = 0; e < CG_EVENTS; e++)
				v[e] = pos[e] >= 0 ? x[pos[e]] : 0;
			found = pos[0] >= 0;
		}
	}
	fclose(f);
	unlink(path);
	if (!found)
		return false;
	it->ir = (double)v[0] / CG_PACKETS;
	it->d1 = (double)(v[4] + v[5]) / CG_PACKETS;
	it->ll = (double)(v[7] + v[8]) / CG_PACKETS;
	return true;
}

static void run_callgrind(void)
{
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	uint64_t t0 = now_ns();
	bool missing = false;
	unsigned ok = 0;

	if (len <= 0) {
		cg_state = CG_NO_PATH;
		return;
	}
	self[len] = '\0';
	progress("instruction counts under callgrind");
	for (unsigned i = 0; i < N_CG && !missing; i++) {
		cg_items[i].ok = callgrind_one(self, &cg_items[i], &missing);
		ok += cg_items[i].ok;
	}
	cg_seconds = (double)(now_ns() - t0) / 1e9;
	cg_state = missing ? CG_NO_VALGRIND : ok < N_CG ? CG_PARTIAL : CG_OK;
}

/* ---- the machine -------------------------------------------------------------------------- */

static void cpu_info(char *model, size_t mlen, char *feat, size_t flen)
{
	static const char *const want[] = {"ssse3", "avx2", "avx512f", "avx512bw", "gfni", "vaes"};
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	bool got_model = false, got_flags = false;

	snprintf(model, mlen, "unknown CPU");
	feat[0] = '\0';
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		char *v = strchr(line, ':');

		if (v == NULL)
			continue;
		v += 2;
		v[strcspn(v, "\n")] = '\0';
		if (!got_model && strncmp(line, "model name", 10) == 0) {
			snprintf(model, mlen, "%s", v);
			got_model = true;
		} else if (!got_flags && strncmp(line, "flags", 5) == 0) {
			char padded[8192 + 2];
			size_t used = 0;

			snprintf(padded, sizeof(padded), " %s ", v);
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
				char w[32];

				snprintf(w, sizeof(w), " %s ", want[i]);
				if (strstr(padded, w) != NULL && used + 16 < flen)
					used += (size_t)snprintf(feat + used, flen - used, "%s%s",
					                         used ? ", " : "", want[i]);
			}
			got_flags = true;
		}
	}
	if (f != NULL)
		fclose(f);
}

/* CPU time of this process. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Busy time of all CPUs together (user, nice, system, irq, softirq, steal), in ns. */
static uint64_t machine_busy_ns(void)
{
	unsigned long long v[8] = {0};
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;

	if (f != NULL) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		           &v[3], &v[4], &v[5], &v[6], &v[7]);
		fclose(f);
	}
	if (n != 8 || hz <= 0)
		return 0;
	return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * (1000000000ULL / (unsigned long long)hz);
}

static void loadavg(char *out, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a = 0, b = 0, c = 0;

	if (f == NULL || fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3)
		snprintf(out, len, "unknown");
	else
		snprintf(out, len, "%.2f / %.2f / %.2f", a, b, c);
	if (f != NULL)
		fclose(f);
}

/* ---- the report --------------------------------------------------------------------------- */

static FILE *md;

static __attribute__((format(printf, 1, 2))) void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(md, fmt, ap);
	va_end(ap);
}

/* "812 ns · 14.0 Gbit/s" */
static void cell(const struct bench *b)
{
	double g = gbps(b);

	out(" %.0f ns · %.*f Gbit/s |", b->s.median, g >= 100 ? 0 : g >= 10 ? 1 : 2, g);
}

/* "+3 ns (+0.4 %)" of b over floor */
static void over(const struct bench *b, const struct bench *base)
{
	double d = b->s.median - base->s.median;

	out(" %+.0f ns (%+.1f %%) |", d, d / base->s.median * 100);
}

static void report_aead(void)
{
	out("## 1. AEAD and datagram framing\n\n"
	    "ChaCha20-Poly1305 (IETF) with 16 bytes of associated data. Per datagram; Gbit/s of "
	    "plaintext. *Header + seal* is what `seal_send()` does for a data datagram: "
	    "`wire_data_header()` then `yip_aead_seal()` with the header as AD; *parse + open* is "
	    "the front of `open_datagram()`: `wire_classify()`, index and counter read, "
	    "`yip_aead_open()`.\n\n");
	out("| payload | libsodium encrypt (floor) | yip_aead_seal | wrapper over floor "
	    "| header + seal | framing over floor |\n|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned s = 0; s < N_SIZES; s++) {
		out("| %zu B |", aead_sizes[s]);
		cell(aead_bench[A_SODIUM_SEAL][s]);
		cell(aead_bench[A_YIP_SEAL][s]);
		over(aead_bench[A_YIP_SEAL][s], aead_bench[A_SODIUM_SEAL][s]);
		cell(aead_bench[A_FRAME_SEAL][s]);
		over(aead_bench[A_FRAME_SEAL][s], aead_bench[A_SODIUM_SEAL][s]);
		out("\n");
	}
	out("\n| payload | libsodium decrypt (floor) | yip_aead_open | wrapper over floor "
	    "| parse + open | framing over floor |\n|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned s = 0; s < N_SIZES; s++) {
		out("| %zu B |", aead_sizes[s]);
		cell(aead_bench[A_SODIUM_OPEN][s]);
		cell(aead_bench[A_YIP_OPEN][s]);
		over(aead_bench[A_YIP_OPEN][s], aead_bench[A_SODIUM_OPEN][s]);
		cell(aead_bench[A_FRAME_OPEN][s]);
		over(aead_bench[A_FRAME_OPEN][s], aead_bench[A_SODIUM_OPEN][s]);
		out("\n");
	}
	out("\n");
}

static void report_fec(void)
{
	out("## 2. Reed-Solomon FEC, %d-byte symbols\n\n", SYM_LEN);
	out("Encoding. The floor is ISA-L's `ec_encode_data()` over a whole block (Cauchy matrix "
	    "from `gf_gen_cauchy1_matrix()`); yip instead folds each source into the R repairs "
	    "as it is sent (`fec_encode_add()`, i.e. `ec_encode_data_update()`), so a block can "
	    "close at any K. The engine copies the 10-byte symbol header (counter, length) and "
	    "the packet into one buffer and folds it with one call: folded on its own, the "
	    "short header fell back to byte-at-a-time code and cost more than the packet. "
	    "Gbit/s of source data.\n\n");
	out("| K, R | ec_encode_data, per block | same, per source | fec_encode_add, per source "
	    "| over floor | as the engine calls it (copy %d B + one call) | one call over %d B |\n"
	    "|---|---:|---:|---:|---:|---:|---:|\n",
	    SYM_LEN, WIRE_SYM_HDR + SYM_LEN);
	for (unsigned c = 0; c < N_CODES; c++) {
		const struct bench *isal = enc_bench[c][E_ISAL];
		double per_src = isal->s.median / codes[c][0];
		double d = enc_bench[c][E_ADD]->s.median - per_src;

		out("| %u, %u |", codes[c][0], codes[c][1]);
		cell(isal);
		out(" %.0f ns |", per_src);
		cell(enc_bench[c][E_ADD]);
		out(" %+.0f ns (%+.0f %%) |", d, d / per_src * 100);
		cell(enc_bench[c][E_ADD_ENGINE]);
		cell(enc_bench[c][E_ADD_WHOLE]);
		out("\n");
	}
	out("\nDecoding: `fec_decode()` of one block with sources lost (spread over the block; "
	    "every repair present), including the decode matrix (inversion, ISA-L tables). Gbit/s "
	    "of the block's K × %d source bytes.\n\n"
	    "| K, R | lost | per block | per rebuilt symbol |\n|---|---:|---:|---:|\n",
	    SYM_LEN);
	for (unsigned c = 0; c < N_CODES; c++)
		for (unsigned v = 0; v < n_dec[c]; v++) {
			out("| %u, %u | %u |", codes[c][0], codes[c][1], dec_lost[c][v]);
			cell(dec_bench[c][v]);
			out(" %.0f ns |\n", dec_bench[c][v]->s.median / dec_lost[c][v]);
		}
	out("\n");
}

static void report_pipeline(void)
{
	out("## 3. The engine, in memory\n\n"
	    "Two `struct yip_device` back to back: A's `yip_device_tx()` of a %d-byte "
	    "UDP-in-IPv4 packet (one flow, classified bulk), the datagrams caught by A's "
	    "main link (`buf`/`send`, link/link.h), then B's `yip_device_rx()` of each, delivering "
	    "to "
	    "B's `tun_write` callback. Per inner packet; Gbit/s of inner packets. *Egress* and "
	    "*ingress* are timed separately over batches of %d packets (the daemon's UDP batch); "
	    "*both* runs A then B for one packet at a time. The engine's clock advances %d ns "
	    "per packet; timers are not run, so B sends no loss reports and A keeps the FEC "
	    "parameters set for the run (the bulk class's K and R: from `fec_policy()` at the "
	    "loss estimate shown, or forced into `peers[0].fec.params`). Repair symbols of "
	    "a block go out interleaved with the next block's packets. In the last row A's "
	    "callback throws away the data datagram at FEC index 13 of every block, so B "
	    "rebuilds one packet per 32 with `fec_decode()`. In the obf_psk row both engines "
	    "obfuscate every datagram (docs/obfuscation.md).\n\n",
	    PKT_LEN, PIPE_BATCH, PKT_GAP_NS);
	out("| configuration | bulk K, R | datagrams / packet | wire bytes / packet | egress "
	    "| ingress | both, one packet at a time |\n|---|---|---:|---:|---:|---:|---:|\n");
	for (unsigned c = 0; c < N_PIPES; c++) {
		const struct pipe *p = pipes[c];

		out("| %s |", p->cfg->name);
		if (p->cfg->fec_off)
			out(" — |");
		else
			out(" %u, %u |", p->bulk.k, p->bulk.r);
		out(" %.3f | %.0f |", (double)p->m_datagrams / (double)p->m_sent,
		    (double)p->m_wire / (double)p->m_sent);
		cell(p->egress);
		cell(p->ingress);
		cell(p->both);
		out("\n");
	}
	out("\nTwo pieces of the sender's per-packet work with FEC on, measured alone: "
	    "`flow_classify()` of the packet (5-tuple hash, table probe, averages), and a "
	    "%d-byte copy into the next slot of a ring of %d × %d bytes, as `retx_keep()` keeps "
	    "every bulk packet for ARQ (this copy is this program's stand-in, not the engine's "
	    "code).\n\n| piece | per packet |\n|---|---:|\n| flow_classify |",
	    PKT_LEN, RING_SLOTS, YIP_DEFAULT_MTU);
	cell(piece_classify);
	out("\n| copy into the ARQ ring |");
	cell(piece_copy);
	out("\n\n");
}

static void report_callgrind(void)
{
	out("## 4. Instructions (callgrind)\n\n");
	if (cg_state == CG_NOT_RUN || cg_state == CG_NO_PATH || cg_state == CG_NO_VALGRIND) {
		out("Not measured: %s.\n\n",
		    cg_state == CG_NOT_RUN       ? "run with --callgrind (make bench-micro does)"
		    : cg_state == CG_NO_VALGRIND ? "valgrind is not installed"
		                                 : "this program's path is unknown");
		return;
	}
	out("Per operation, counted by `valgrind --tool=callgrind --cache-sim=yes "
	    "--toggle-collect=FUNCTION` over %d operations after warm-up (this program runs "
	    "itself again with `--count`; %.0f s in all): instructions, and the misses of "
	    "callgrind's simulated L1 data cache and last-level cache (reads and writes). "
	    "Deterministic, unlike the times, but a model: under valgrind the libraries see "
	    "valgrind's CPU, which has no AVX-512, so ISA-L and libsodium run their AVX2 code "
	    "and the counts describe that path.%s\n\n",
	    CG_PACKETS, cg_seconds, cg_state == CG_OK ? "" : " Some runs failed (n/a).");
	out("| what | configuration | instructions | L1d misses | LL misses |\n"
	    "|---|---|---:|---:|---:|\n");
	for (unsigned i = 0; i < N_CG; i++) {
		const struct cg_item *it = &cg_items[i];
		bool in_pipe = strcmp(it->what, "egress") == 0 || strcmp(it->what, "ingress") == 0;

		out("| %s | %s |", it->label, in_pipe ? pipe_cfgs[it->cfg].name : "—");
		if (it->ok)
			out(" %.0f | %.1f | %.1f |\n", it->ir, it->d1, it->ll);
		else
			out(" n/a | n/a | n/a |\n");
	}
	out("\n");
}

static const struct bench *find_aead(unsigned op, size_t size)
{
	for (unsigned s = 0; s < N_SIZES; s++)
		if (aead_sizes[s] == size)
			return aead_bench[op][s];
	die("no AEAD size %zu", size);
}

/* A difference worth a sentence, or noise? */
static const char *noise_word(double d, const struct bench *a, const struct bench *b)
{
	double band = (a->s.p75 - a->s.p25) / 2 + (b->s.p75 - b->s.p25) / 2;

	return fabs(d) <= band ? " (within run-to-run noise)" : "";
}

static double med(const struct bench *b)
{
	return b->s.median;
}

static void report_reading(double max_spread, double median_spread)
{
	const struct bench *fs = find_aead(A_SODIUM_SEAL, 1420), *ys = find_aead(A_YIP_SEAL, 1420);
	const struct bench *fo = find_aead(A_SODIUM_OPEN, 1420), *yo = find_aead(A_YIP_OPEN, 1420);
	const struct bench *hs = find_aead(A_FRAME_SEAL, PKT_LEN),
	                   *ho = find_aead(A_FRAME_OPEN, PKT_LEN);
	const struct bench *ys14 = find_aead(A_YIP_SEAL, PKT_LEN),
	                   *yo14 = find_aead(A_YIP_OPEN, PKT_LEN);
	const struct bench *rep_seal = find_aead(A_FRAME_SEAL, 1420);
	const struct bench *rep_open = find_aead(A_FRAME_OPEN, 1420);
	const struct pipe *off = pipes[P_OFF], *clean = pipes[P_CLEAN];
	const struct pipe *forced = pipes[P_FORCED], *lossy = pipes[P_LOSSY];
	struct bench *const *enc = enc_bench[3];    /* K=32 R=8 */
	const struct bench *dec1 = dec_bench[3][0]; /* K=32 R=8, one lost */
	double d, d2, hdr, rep_per_pkt, pieces, rest;
	bool hdr_first;

	out("## Reading the numbers\n\n");
	rep_per_pkt = (double)forced->bulk.r / forced->bulk.k;
	hdr = med(enc[E_ADD_ENGINE]) - med(enc[E_ADD]);
	rest = med(forced->egress) - med(clean->egress) - med(enc[E_ADD_ENGINE]) -
	       rep_per_pkt * med(rep_seal);
	hdr_first = hdr > rest;

	out("**In short.** The library floor dominates: header + seal is %.0f %% of the fec=off "
	    "egress time and parse + open %.0f %% of the ingress time. Our own code adds %+.0f "
	    "ns%s and %+.0f ns%s in the AEAD wrappers (seal, open at 1420 B), %+.0f ns on egress "
	    "and %+.0f ns on ingress in the engine with fec=off, %+.0f ns more on egress with FEC "
	    "on over a clean link, and at K=%u R=%u %s the copy of each symbol into one "
	    "buffer before folding it (%.0f ns per packet).\n\n",
	    med(hs) / med(off->egress) * 100, med(ho) / med(off->ingress) * 100, med(ys) - med(fs),
	    noise_word(med(ys) - med(fs), ys, fs), med(yo) - med(fo),
	    noise_word(med(yo) - med(fo), yo, fo), med(off->egress) - med(hs),
	    med(off->ingress) - med(ho), med(clean->egress) - med(off->egress), forced->bulk.k,
	    forced->bulk.r,
	    hdr_first ? "the FEC path's own cost is chiefly" : "the FEC path's own costs include",
	    med(enc[E_ADD_ENGINE]) - med(enc[E_ADD_WHOLE]));

	d = med(ys) - med(fs);
	d2 = med(yo) - med(fo);
	out("**Crypto.** The floor is libsodium %s: %.0f ns to encrypt 1420 bytes (%.2f Gbit/s) "
	    "and %.0f ns to decrypt them (%.2f Gbit/s); at 64 bytes a call still costs %.0f ns, "
	    "so small packets pay mostly fixed cost. `yip_aead_seal` adds %+.0f ns%s and "
	    "`yip_aead_open` %+.0f ns%s at 1420 bytes: the wrappers only build the 12-byte "
	    "nonce. Framing a 1400-byte packet (header + seal) costs %+.0f ns over "
	    "`yip_aead_seal` alone%s, and parse + open %+.0f ns over `yip_aead_open`%s. ",
	    sodium_version_string(), med(fs), gbps(fs), med(fo), gbps(fo),
	    med(find_aead(A_SODIUM_SEAL, 64)), d, noise_word(d, ys, fs), d2, noise_word(d2, yo, fo),
	    med(hs) - med(ys14), noise_word(med(hs) - med(ys14), hs, ys14), med(ho) - med(yo14),
	    noise_word(med(ho) - med(yo14), ho, yo14));
	d = med(fs) - med(find_aead(A_SODIUM_SEAL, 1400));
	d2 = (med(find_aead(A_SODIUM_SEAL, 1400)) - med(find_aead(A_SODIUM_SEAL, 512))) /
	     (1400 - 512);
	out("Cost is not linear in length: libsodium takes %.0f ns more for 1420 bytes than for "
	    "1400, where its rate between 512 and 1400 bytes (%.2f ns per byte) predicts "
	    "%.0f ns; full-size packets at yip's default MTU of 1420 pay that step.\n\n",
	    d, d2, 20 * d2);

	d = med(off->egress) - med(hs);
	d2 = med(off->ingress) - med(ho);
	out("**Engine, FEC off.** Egress costs %.0f ns per 1400-byte packet (%.2f Gbit/s on one "
	    "core), against %.0f ns for header + seal alone: the rest of the engine's work (IP "
	    "header checks, route lookup, session checks, counters, the io callbacks) comes to "
	    "%+.0f ns (%+.1f %%)%s. Ingress costs %.0f ns against %.0f ns for parse + open: "
	    "%+.0f ns (%+.1f %%)%s for the index lookup, replay window, loss tracking, the inner "
	    "source check against allowed_ips and delivery. Both directions of one packet on one "
	    "core: %.0f ns, %.2f Gbit/s.\n\n",
	    med(off->egress), gbps(off->egress), med(hs), d, d / med(off->egress) * 100,
	    noise_word(d, off->egress, hs), med(off->ingress), med(ho), d2,
	    d2 / med(off->ingress) * 100, noise_word(d2, off->ingress, ho), med(off->both),
	    gbps(off->both));

	d = med(clean->egress) - med(off->egress);
	d2 = med(clean->ingress) - med(off->ingress);
	pieces = med(piece_classify) + med(piece_copy);
	out("**FEC on, clean link.** The policy gives bulk traffic no repairs (R = 0), yet egress "
	    "costs %+.0f ns (%+.1f %%)%s over fec=off: the sender classifies the packet's flow, "
	    "and keeps a copy of every bulk packet for ARQ in a ring of %d × %d bytes "
	    "(%.2f MB) whose slots it writes in turn. ",
	    d, d / med(off->egress) * 100, noise_word(d, clean->egress, off->egress), RING_SLOTS,
	    YIP_DEFAULT_MTU, RING_SLOTS * YIP_DEFAULT_MTU / 1e6);
	if (cg_items[2].ok && cg_items[4].ok)
		out("Callgrind counts %+.0f instructions and %+.1f L1 data cache misses per packet "
		    "for that (section 4): the copy writes about %d fresh cache lines. ",
		    cg_items[4].ir - cg_items[2].ir, cg_items[4].d1 - cg_items[2].d1,
		    (PKT_LEN + 63) / 64);
	out("Measured alone, `flow_classify()` takes %.0f ns and the copy %.0f ns",
	    med(piece_classify), med(piece_copy));
	if (pieces >= 0.7 * d)
		out(", most of the difference. ");
	else
		out("; together that is less than the difference in the pipeline, where the copy "
		    "shares the caches with everything else a packet touches (this VM exposes no "
		    "hardware performance counters to pin the rest down). ");
	out("Ingress changes by %+.0f ns%s: with no block open the receiver does the same work "
	    "in both modes.\n\n",
	    d2, noise_word(d2, clean->ingress, off->ingress));

	{
		const struct bench *isal = enc_bench[3][E_ISAL], *d16 = dec_bench[2][0];
		double per_src = med(isal) / codes[3][0];

		out("**FEC codec.** Folding sources into the repairs one at a time costs %.0f ns "
		    "per "
		    "1400-byte source at R=8 (`fec_encode_add()`), %s ISA-L's whole-block "
		    "`ec_encode_data()` at %.0f ns per source: the incremental design that lets a "
		    "block close at any K %s. Decoding rebuilds each missing source as a dot "
		    "product "
		    "over K symbols of the block (the sources present and as many repairs as "
		    "sources "
		    "are missing): with one source lost it costs %.0f ns at "
		    "K=32 and %.0f ns at K=16 (the decode matrix included), %.2f and %.2f times "
		    "what opening a 1400-byte datagram costs.\n\n",
		    med(enc[E_ADD]), med(enc[E_ADD]) <= per_src ? "less than" : "more than",
		    per_src,
		    med(enc[E_ADD]) <= per_src * 1.05 ? "costs nothing in encoding speed"
		                                      : "costs some encoding speed",
		    med(dec1), med(d16), med(dec1) / med(ho), med(d16) / med(ho));
	}

	d = med(forced->egress) - med(clean->egress);
	out("**FEC on, K=%u R=%u.** Egress costs %.0f ns per packet, %+.0f ns over the clean "
	    "link. `fec_encode_add()` as the engine calls it accounts for %.0f ns of that, of "
	    "which %.0f ns fold the 1400-byte packet and %.0f ns copy counter, length and "
	    "packet into one symbol buffer (one call over the 1410-byte symbol alone costs "
	    "%.0f ns; the copy costs %.0f ns per packet%s). Sealing "
	    "%.2f repair "
	    "datagrams per packet costs about %.0f ns (%.2f × header + seal at 1420 B), and "
	    "%.0f ns are left for block bookkeeping and the extra callbacks. ",
	    forced->bulk.k, forced->bulk.r, med(forced->egress), d, med(enc[E_ADD_ENGINE]),
	    med(enc[E_ADD]), hdr, med(enc[E_ADD_WHOLE]),
	    med(enc[E_ADD_ENGINE]) - med(enc[E_ADD_WHOLE]),
	    hdr_first ? ", the largest cost our own code adds to the FEC path" : "", rep_per_pkt,
	    rep_per_pkt * med(rep_seal), rep_per_pkt, rest);
	d = med(forced->ingress) - med(clean->ingress);
	out("Ingress costs %+.0f ns over the clean link: opening %.2f repairs per packet (about "
	    "%.0f ns), then copying every source into its block. ",
	    d, rep_per_pkt, rep_per_pkt * med(rep_open));
	d = med(lossy->ingress) - med(forced->ingress);
	out("With one source in 32 lost, ingress changes by %+.0f ns per packet%s: one "
	    "`fec_decode()` of the block costs %.0f ns, %.0f ns per packet, against about %.0f ns "
	    "per packet saved by the datagram that never arrives and is never opened.\n\n",
	    d, noise_word(d, lossy->ingress, forced->ingress), med(dec1), med(dec1) / 32,
	    med(ho) / 32);

	out("**Capacity.** Egress and ingress of a 1400-byte packet on one core:");
	for (unsigned c = 0; c < N_PIPES; c++) {
		const struct pipe *p = pipes[c];

		if (p->cfg->drop_idx >= 0)
			continue;
		if (p->cfg->fec_off)
			out(" %.2f Gbit/s with fec=off", gbps(p->both));
		else
			out(",%s %.2f Gbit/s at K=%u R=%u (%s)", c + 2 == N_PIPES ? " and" : "",
			    gbps(p->both), p->bulk.k, p->bulk.r, p->cfg->name);
	}
	out(". ChaCha20-Poly1305 sets the ceiling; FEC adds the sealing and opening of the "
	    "repairs (R/K more datagrams) and the encoding.\n\n");

	out("**Measurement.** A shared 2-core VM on which other benchmarks may have been "
	    "running (see the load above): every figure is the median of %u runs, all "
	    "benchmarks ran interleaved, and half the interquartile range was "
	    "%.1f %% of the median for the typical figure and at most %.1f %% (appendix). Read "
	    "differences of a few per cent, and anything marked as within noise, as no "
	    "difference.\n\n",
	    opt.runs, median_spread, max_spread);
}

/* What the report says about the run itself. */
static struct {
	char date[64], load0[64], load1[64], cmdline[1024];
	double seconds;     /* wall time of everything */
	double timed;       /* wall time of the timed benchmarks */
	double waited;      /* share of the kept runs' time spent waiting for a CPU; < 0 unknown */
	double others_cpus; /* CPUs the rest of the machine kept busy meanwhile, on average */
} run;

static void report(void)
{
	struct utsname u;
	char model[256], feat[128];
	double max_spread = 0, spreads[MAX_BENCHES];
	char repeat_note[256];

	cpu_info(model, sizeof(model), feat, sizeof(feat));
	uname(&u);
	for (unsigned i = 0; i < n_benches; i++) {
		spreads[i] = spread(&benches[i]);
		if (spreads[i] > max_spread)
			max_spread = spreads[i];
	}
	qsort(spreads, n_benches, sizeof(spreads[0]), cmp_double);

	out("# Micro-benchmarks: what one packet costs\n\n"
	    "Generated by `bench/micro/micro.c`; do not edit, rerun `make bench-micro`.\n\n");
	out("- **Date:** %s\n", run.date);
	out("- **Command:** `%s`\n", run.cmdline);
	out("- **Machine:** %s, %ld online CPUs (%s); %s %s %s\n", model,
	    sysconf(_SC_NPROCESSORS_ONLN), feat[0] ? feat : "no SIMD flags found", u.sysname,
	    u.release, u.machine);
	out("- **Software:** libsodium %s, ISA-L (system package), compiled with %s\n",
	    sodium_version_string(),
#ifdef __clang__
	    "clang " __clang_version__
#else
	    "gcc " __VERSION__
#endif
	);
	out("- **Load:** load average (1/5/15 min) %s at the start, %s at the end. During the "
	    "%.0f s of timed loops everything else on the machine kept %.2f of its %ld CPUs busy "
	    "on average",
	    run.load0, run.load1, run.timed, run.others_cpus, sysconf(_SC_NPROCESSORS_ONLN));
	if (run.waited >= 0)
		out(", and this program waited for a CPU (run-queue delay) for %.1f %% of the time "
		    "of the runs it kept",
		    run.waited * 100);
	out(".\n");
	if (schedstat_fd >= 0)
		snprintf(repeat_note, sizeof(repeat_note),
		         "A run during which the program waited for a CPU more than %d %% of its "
		         "time was thrown away and run again, up to %d times (%u runs thrown away; "
		         "%u of the %u kept still waited longer).",
		         MAX_WAITED, MAX_REPEATS, runs_repeated, runs_preempted, runs_total);
	else
		snprintf(repeat_note, sizeof(repeat_note),
		         "(No scheduler statistics here: runs were not checked for preemption.)");
	out("- **Method:** every figure is the median of %u runs of a tight loop timed with "
	    "`clock_gettime(CLOCK_MONOTONIC)`, each loop calibrated to about %.0f ms per run "
	    "(the pipeline: %u packets per run). All benchmarks ran interleaved (run r of each, "
	    "then run r + 1), so load from elsewhere fell on all of them alike and any two "
	    "figures compare. %s Wall time %.0f s in all.\n\n",
	    opt.runs, opt.run_ms, opt.pipe_pkts, repeat_note, run.seconds);

	report_aead();
	report_fec();
	report_pipeline();
	report_callgrind();
	report_reading(max_spread, quantile(spreads, n_benches, 0.5));

	out("## Appendix: every measurement\n\n"
	    "ns per operation over %u runs: median, quartiles, fastest run; operations per "
	    "run.\n\n"
	    "| benchmark | median | p25 | p75 | min | ops / run | Gbit/s |\n"
	    "|---|---:|---:|---:|---:|---:|---:|\n",
	    opt.runs);
	for (unsigned i = 0; i < n_benches; i++) {
		const struct bench *b = &benches[i];

		out("| %s | %.1f | %.1f | %.1f | %.1f | %llu | %.2f |\n", b->name, b->s.median,
		    b->s.p25, b->s.p75, b->s.min, (unsigned long long)b->iters, gbps(b));
	}
}

/* ---- main --------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
	        "usage: yip-micro [--runs N] [--run-ms MS] [--quick] [--markdown FILE]\n"
	        "                 [--command STRING] [--callgrind]\n"
	        "  --runs N         runs per figure, median reported (default 31)\n"
	        "  --run-ms MS      length of one run of a loop (default 5)\n"
	        "  --quick          7 runs of 1 ms: a smoke test, not a measurement\n"
	        "  --markdown FILE  also write the report (Markdown) to FILE\n"
	        "  --command S      the command to name in the report (default: this one)\n"
	        "  --callgrind      count instructions per packet under valgrind, if installed\n");
	exit(2);
}

static unsigned parse_unsigned(const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		usage();
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	size_t used = 0;
	uint64_t t0, t1, c0, b0;
	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	time_t wall = time(NULL);
	char *buf = NULL;
	size_t buflen = 0;

	if (yip_crypto_init() != 0)
		die("sodium_init failed");
	yip_log_set_level(YIP_LOG_WARN);
	if (argc == 5 && strcmp(argv[1], "--count") == 0)
		return count_mode(argv[2], parse_unsigned(argv[3], 0, 1000),
		                  parse_unsigned(argv[4], 1, 1u << 30));

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			opt.runs = parse_unsigned(argv[++i], 3, MAX_RUNS);
		else if (strcmp(argv[i], "--run-ms") == 0 && i + 1 < argc)
			opt.run_ms = parse_unsigned(argv[++i], 1, 1000);
		else if (strcmp(argv[i], "--quick") == 0)
			opt.runs = 7, opt.run_ms = 1, opt.pipe_pkts = 1024;
		else if (strcmp(argv[i], "--markdown") == 0 && i + 1 < argc)
			opt.markdown = argv[++i];
		else if (strcmp(argv[i], "--command") == 0 && i + 1 < argc)
			opt.command = argv[++i];
		else if (strcmp(argv[i], "--callgrind") == 0)
			opt.callgrind = true;
		else
			usage();
	}
	if (opt.command != NULL) {
		snprintf(run.cmdline, sizeof(run.cmdline), "%s", opt.command);
	} else {
		for (int i = 0; i < argc && used + 2 < sizeof(run.cmdline); i++)
			used += (size_t)snprintf(run.cmdline + used, sizeof(run.cmdline) - used,
			                         "%s%s", i ? " " : "", argv[i]);
	}

	strftime(run.date, sizeof(run.date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&wall));
	loadavg(run.load0, sizeof(run.load0));
	t0 = now_ns();
	c0 = cpu_ns();
	b0 = machine_busy_ns();
	setup_aead();
	setup_fec();
	setup_pieces();
	setup_pipeline();
	run_all();
	t1 = now_ns();
	run.timed = (double)(t1 - t0) / 1e9;
	run.waited =
	    schedstat_fd >= 0 && timed_wall ? (double)timed_waited / (double)timed_wall : -1;
	run.others_cpus =
	    ((double)(machine_busy_ns() - b0) - (double)(cpu_ns() - c0)) / (double)(t1 - t0);
	if (run.others_cpus < 0)
		run.others_cpus = 0;
	if (opt.callgrind)
		run_callgrind();
	loadavg(run.load1, sizeof(run.load1));
	run.seconds = (double)(now_ns() - t0) / 1e9;

	md = open_memstream(&buf, &buflen);
	if (md == NULL)
		die("open_memstream: %s", strerror(errno));
	report();
	fclose(md);
	fwrite(buf, 1, buflen, stdout);
	if (opt.markdown != NULL) {
		FILE *f = fopen(opt.markdown, "w");

		if (f == NULL || fwrite(buf, 1, buflen, f) != buflen || fclose(f) != 0)
			die("%s: cannot write: %s", opt.markdown, strerror(errno));
		fprintf(stderr, "yip-micro: wrote %s\n", opt.markdown);
	}
	free(buf);
	for (unsigned c = 0; c < N_PIPES; c++)
		pipe_free(pipes[c]);
	return 0;
}
