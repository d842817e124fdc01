/* yip-linkem: a userspace Ethernet link emulator for tests and benchmarks.
 *
 * It forwards every frame received on one interface out of the other, like a
 * wire (MAC addresses and VLAN tags untouched), and applies per-direction
 * impairments: loss (independent or Gilbert-Elliott bursts), duplication, a
 * rate limit with a bounded FIFO, fixed delay, jitter that never reorders,
 * and explicit reordering. See README.md in this directory for the CLI
 * contract.
 *
 * Design: one thread per direction, SCHED_FIFO when allowed. Each reads its
 * input interface through an AF_PACKET TPACKET_V2 receive ring (no system
 * call per frame), copies each frame that survives loss into a preallocated
 * packet pool, stamps it with a departure time computed from the kernel's
 * receive timestamp and appends it to one of two time-ordered FIFOs
 * (in-order traffic, and frames held back by reorder=). Due frames leave in
 * sendmmsg() batches on a second AF_PACKET socket that bypasses the qdisc.
 * Between frames the thread sleeps in ppoll(): woken by the first frame after
 * a quiet spell, then (while frames keep coming) napping ~100 us between
 * looks at the ring, like a NIC's interrupt coalescing, and waking for
 * departures slightly early to spin the last microseconds (within a CPU
 * budget), since timer wakeups on a VM are late by ~100 us. With nothing in
 * flight it sleeps without a timeout. Both sockets carry a virtio-net header
 * so that frames whose checksum the sender left to offload (CHECKSUM_PARTIAL,
 * the default on veth) are forwarded with that offload request intact. */
#include "linkem.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG            "yip-linkem"
#define VNET_LEN        ((uint32_t)sizeof(struct virtio_net_hdr))
#define VLAN_LEN        4u
#define TX_BATCH        64u         /* frames per sendmmsg() */
#define RX_BUDGET       128u        /* frames taken from the ring before sending */
#define RING_BYTES      (16u << 20) /* receive ring per direction */
#define RING_BLOCK      (1u << 16)
#define POOL_MIN        16384u
#define POOL_MAX        262144u
#define SNDBUF_BYTES    (4 << 20)
#define LAT_INIT        100000ull    /* initial guess of the timer wakeup latency, ns */
#define LAT_MAX         500000ull    /* never wake up earlier than this */
#define SPIN_SHARE      10           /* spin at most 1/SPIN_SHARE of the time... */
#define SPIN_CAP        2000000ull   /* ...with bursts of up to this many ns */
#define COALESCE_NS     100000ull    /* receive coalescing nap while frames flow... */
#define BUSY_WINDOW     500000ull    /* ...that is, seen within this long */
#define ARRIVAL_MAX_AGE 100000000ull /* trust kernel timestamps this old at most */

enum { C_RX, C_TX, C_LOST, C_DUP, C_REORDERED, C_QDROPS, C_COUNT };

/* A FIFO of pool slot numbers; departure times within one FIFO never
 * decrease. */
struct fifo {
	uint32_t *slot;
	uint32_t mask, head, count;
};

struct dir {
	const char *name; /* "a2b" */
	struct lk_spec spec;
	const char *in_if, *out_if;
	int in_idx, out_idx;
	int rx_fd, tx_fd;

	/* receive ring */
	uint8_t *ring;
	size_t ring_len;
	uint32_t frame_size, frame_nr, ring_pos;

	/* packet pool: slot = virtio_net_hdr + frame */
	uint8_t *pool;
	size_t pool_len;
	uint32_t slot_size, pool_n;
	uint32_t *free_slot, free_n;
	uint64_t *dep_ns;
	uint32_t *len; /* frame length, without the virtio header */

	struct fifo normal, held;
	uint64_t last_normal, last_held; /* latest departure in each FIFO */

	/* rate limiter: serialization end times of queued frames */
	uint64_t *ser_end;
	uint32_t ser_mask, ser_head, ser_count;
	uint64_t ser_last, ser_rem;

	bool ge_bad;
	double ge_p, ge_r;
	uint64_t rng;

	/* timing: estimated timer wakeup latency, the spin budget, receive
	 * coalescing */
	uint64_t lat_est, spin_tokens, spin_refill;
	uint64_t last_rx, coalesce_ns;

	uint64_t c[C_COUNT];           /* owned by the direction's thread */
	_Atomic uint64_t pub[C_COUNT]; /* published copy, read by the main thread */
	uint64_t ring_drops;           /* main thread only (PACKET_STATISTICS) */

	bool warned_big, warned_down, warned_tx;
	pthread_t thread;
	bool started;
	char err[256];
};

static atomic_bool g_stop;
static atomic_bool g_failed;
static int g_stopfd = -1;
static pthread_t g_main;

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void msg(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": %s\n", buf);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " IF_A IF_B [--a2b SPEC] [--b2a SPEC] [--both SPEC]\n"
	           "                  [--seed N] [--stats FILE]\n"
	           "Forwards every Ethernet frame between IF_A and IF_B, impairing each\n"
	           "direction as its SPEC says. SPEC is a comma-separated list of:\n"
	           "  loss=P%%  burst=N  delay=T  jitter=T  reorder=P%%  reorder_gap=T\n"
	           "  dup=P%%  rate=R  queue=N\n"
	           "with T in s, ms, us or ns (20ms, 0.5ms, 250us) and R in bit, kbit, mbit,\n"
	           "gbit. --both applies to both directions, then --a2b/--b2a on top.\n"
	           "SIGUSR1 (and exit on SIGTERM/SIGINT) writes counters to --stats FILE.\n"
	           "See bench/linkem/README.md.\n");
}

static _Noreturn void bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void bad_usage(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": %s\n", buf);
	usage(stderr);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: small, fast, and plenty random for impairment decisions. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static inline bool chance(struct dir *d, double p)
{
	if (p <= 0.0)
		return false;
	if (p >= 1.0)
		return true;
	return rng_unit(&d->rng) < p;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* ---- FIFOs ---------------------------------------------------------------- */

static int fifo_init(struct fifo *f, uint32_t cap)
{
	uint32_t n = pow2_at_least(cap);

	f->slot = calloc(n, sizeof(*f->slot));
	if (f->slot == NULL)
		return -1;
	f->mask = n - 1;
	f->head = 0;
	f->count = 0;
	return 0;
}

static inline void fifo_push(struct fifo *f, uint32_t slot)
{
	f->slot[(f->head + f->count) & f->mask] = slot;
	f->count++;
}

static inline uint32_t fifo_peek(const struct fifo *f)
{
	return f->slot[f->head];
}

static inline void fifo_pop(struct fifo *f)
{
	f->head = (f->head + 1) & f->mask;
	f->count--;
}

/* ---- the impairment pipeline ---------------------------------------------- */

static void *dir_fail(struct dir *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records a fatal error of a direction's thread and wakes the main thread. */
static void *dir_fail(struct dir *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->err, sizeof(d->err), fmt, ap);
	va_end(ap);
	atomic_store(&g_failed, true);
	pthread_kill(g_main, SIGUSR2);
	return NULL;
}

static bool lose(struct dir *d)
{
	const struct lk_spec *s = &d->spec;

	if (s->loss <= 0.0)
		return false;
	if (s->loss >= 1.0)
		return true;
	if (s->burst <= 0.0)
		return rng_unit(&d->rng) < s->loss;
	/* Gilbert-Elliott: the good state loses nothing, the bad state loses
	 * everything; bursts last 1/r packets on average. */
	if (d->ge_bad) {
		if (rng_unit(&d->rng) < d->ge_r)
			d->ge_bad = false;
	} else if (rng_unit(&d->rng) < d->ge_p) {
		d->ge_bad = true;
	}
	return d->ge_bad;
}

/* Serialization time of LEN bytes at the configured rate, carrying the
 * sub-nanosecond remainder so that long-run throughput is exact. */
static uint64_t serialize_ns(struct dir *d, uint32_t len)
{
	uint64_t num = (uint64_t)len * 8u * 1000000000ull + d->ser_rem;

	d->ser_rem = num % d->spec.rate_bps;
	return num / d->spec.rate_bps;
}

/* Puts one copy of the frame at MAC (LEN bytes, VLAN tag in TCI/TPID when
 * HAS_VLAN, virtio header at VNET) into the pool and schedules it. */
static void enqueue(struct dir *d, const uint8_t *mac, uint32_t len,
                    const struct virtio_net_hdr *vnet, bool has_vlan, uint16_t tpid, uint16_t tci,
                    uint64_t now)
{
	const struct lk_spec *s = &d->spec;
	uint32_t wire = len + (has_vlan ? VLAN_LEN : 0);
	struct virtio_net_hdr *vh;
	uint64_t t = now;
	uint32_t slot;
	uint8_t *p;

	if (d->free_n == 0) {
		d->c[C_QDROPS]++;
		return;
	}
	if (s->rate_bps != 0) {
		uint64_t start;

		while (d->ser_count > 0 && d->ser_end[d->ser_head] <= now) {
			d->ser_head = (d->ser_head + 1) & d->ser_mask;
			d->ser_count--;
		}
		if (d->ser_count >= s->queue) {
			d->c[C_QDROPS]++;
			return;
		}
		start = d->ser_last > now ? d->ser_last : now;
		t = start + serialize_ns(d, wire);
		d->ser_end[(d->ser_head + d->ser_count) & d->ser_mask] = t;
		d->ser_count++;
		d->ser_last = t;
	}

	slot = d->free_slot[--d->free_n];
	p = d->pool + (size_t)slot * d->slot_size;
	vh = (struct virtio_net_hdr *)(void *)p;
	memset(vh, 0, sizeof(*vh));
	if (vnet->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		/* Let the kernel (or the receiver) finish the checksum, as the
		 * sender asked; a re-inserted VLAN tag moves the start. */
		vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		vh->csum_start = (uint16_t)(vnet->csum_start + (has_vlan ? VLAN_LEN : 0));
		vh->csum_offset = vnet->csum_offset;
	}
	p += VNET_LEN;
	if (has_vlan) {
		uint16_t be_tpid = htons(tpid), be_tci = htons(tci);

		memcpy(p, mac, 12);
		memcpy(p + 12, &be_tpid, 2);
		memcpy(p + 14, &be_tci, 2);
		memcpy(p + 16, mac + 12, len - 12);
	} else {
		memcpy(p, mac, len);
	}
	d->len[slot] = wire;

	t += s->delay_ns;
	if (s->jitter_ns != 0)
		t += (uint64_t)(rng_unit(&d->rng) * (double)(s->jitter_ns + 1));
	if (s->reorder > 0.0 && chance(d, s->reorder)) {
		/* Held back: later frames overtake it, held frames keep
		 * their own order. */
		if (t < d->last_normal)
			t = d->last_normal;
		t += s->reorder_gap_ns;
		if (t < d->last_held)
			t = d->last_held;
		d->last_held = t;
		d->dep_ns[slot] = t;
		fifo_push(&d->held, slot);
		d->c[C_REORDERED]++;
	} else {
		/* Jitter never reorders: never leave before an earlier frame. */
		if (t < d->last_normal)
			t = d->last_normal;
		d->last_normal = t;
		d->dep_ns[slot] = t;
		fifo_push(&d->normal, slot);
	}
}

static void handle_frame(struct dir *d, const struct tpacket2_hdr *h, uint32_t status, uint64_t now)
{
	struct virtio_net_hdr vnet;
	const uint8_t *mac;
	uint16_t tpid = ETH_P_8021Q;
	bool has_vlan;
	uint32_t len = h->tp_snaplen;

	d->c[C_RX]++;
	has_vlan = (status & TP_STATUS_VLAN_VALID) != 0;
	if (has_vlan && (status & TP_STATUS_VLAN_TPID_VALID))
		tpid = h->tp_vlan_tpid;
	if (h->tp_mac < VNET_LEN || (uint64_t)h->tp_mac + len > d->frame_size || len < ETH_HLEN) {
		d->c[C_QDROPS]++;
		return;
	}
	if (len != h->tp_len || len + (has_vlan ? VLAN_LEN : 0) > d->slot_size - VNET_LEN) {
		/* A GSO/GRO super-frame or a frame above the MTU. */
		d->c[C_QDROPS]++;
		if (!d->warned_big) {
			d->warned_big = true;
			msg("%s: dropping a %u-byte frame from %s, larger than the MTU;"
			    " turn GRO, GSO and TSO off on every interface on the path"
			    " (ethtool -K IF gro off gso off tso off); warning once",
			    d->name, h->tp_len, d->in_if);
		}
		return;
	}
	if (lose(d)) {
		d->c[C_LOST]++;
		return;
	}
	mac = (const uint8_t *)h + h->tp_mac;
	memcpy(&vnet, mac - VNET_LEN, sizeof(vnet));
	enqueue(d, mac, len, &vnet, has_vlan, tpid, h->tp_vlan_tci, now);
	if (d->spec.dup > 0.0 && chance(d, d->spec.dup)) {
		d->c[C_DUP]++;
		enqueue(d, mac, len, &vnet, has_vlan, tpid, h->tp_vlan_tci, now);
	}
}

static inline struct tpacket2_hdr *ring_frame(struct dir *d)
{
	return (struct tpacket2_hdr *)(void *)(d->ring + (size_t)d->ring_pos * d->frame_size);
}

static inline bool rx_pending(struct dir *d)
{
	return (__atomic_load_n(&ring_frame(d)->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* When the frame reached the interface, on the CLOCK_MONOTONIC scale: the
 * kernel stamps ring frames with CLOCK_REALTIME as it queues them, which
 * keeps our own wakeup latency out of the emulated delay. NOW_MONO and
 * NOW_REAL are the two clocks read together. */
static uint64_t arrival_ns(const struct tpacket2_hdr *h, uint64_t now_mono, uint64_t now_real)
{
	uint64_t stamp = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec, age;

	if (stamp > now_real)
		return now_mono;
	age = now_real - stamp;
	if (age > ARRIVAL_MAX_AGE || age > now_mono) /* clock stepped? */
		return now_mono;
	return now_mono - age;
}

static unsigned rx_drain(struct dir *d)
{
	struct timespec mono, real;
	uint64_t now_mono = 0, now_real = 0;
	unsigned n;

	for (n = 0; n < RX_BUDGET; n++) {
		struct tpacket2_hdr *h = ring_frame(d);
		uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);

		if (!(st & TP_STATUS_USER))
			break;
		if (n == 0) {
			clock_gettime(CLOCK_MONOTONIC, &mono);
			clock_gettime(CLOCK_REALTIME, &real);
			now_mono = ts_ns(&mono);
			now_real = ts_ns(&real);
		}
		handle_frame(d, h, st, arrival_ns(h, now_mono, now_real));
		__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
		if (++d->ring_pos == d->frame_nr)
			d->ring_pos = 0;
	}
	return n;
}

/* The FIFO whose head leaves first, if that is due by NOW. */
static inline struct fifo *due_fifo(struct dir *d, uint64_t now)
{
	struct fifo *best = NULL;
	uint64_t t = UINT64_MAX;

	if (d->normal.count > 0) {
		best = &d->normal;
		t = d->dep_ns[fifo_peek(&d->normal)];
	}
	if (d->held.count > 0 && d->dep_ns[fifo_peek(&d->held)] < t) {
		best = &d->held;
		t = d->dep_ns[fifo_peek(&d->held)];
	}
	return t <= now ? best : NULL;
}

static uint64_t next_departure(const struct dir *d)
{
	uint64_t t = UINT64_MAX;

	if (d->normal.count > 0)
		t = d->dep_ns[fifo_peek(&d->normal)];
	if (d->held.count > 0 && d->dep_ns[fifo_peek(&d->held)] < t)
		t = d->dep_ns[fifo_peek(&d->held)];
	return t;
}

/* Sends the N frames in SLOT[]; returns the slots to the pool. Returns -1
 * on a fatal error (the output interface is gone). */
static int tx_batch(struct dir *d, const uint32_t *slot, unsigned n)
{
	struct mmsghdr mm[TX_BATCH];
	struct iovec iov[TX_BATCH];
	unsigned i, off = 0, tries = 0;
	int rc = 0;

	memset(mm, 0, sizeof(mm[0]) * n);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = d->pool + (size_t)slot[i] * d->slot_size;
		iov[i].iov_len = VNET_LEN + d->len[slot[i]];
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	while (off < n) {
		int r = sendmmsg(d->tx_fd, mm + off, n - off, 0);

		if (r > 0) {
			off += (unsigned)r;
			d->c[C_TX] += (unsigned)r;
			tries = 0;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == ENOBUFS || errno == EAGAIN) && tries++ < 50) {
			struct timespec ts = {0, 20000};

			nanosleep(&ts, NULL);
			continue;
		}
		if (r < 0 && (errno == ENXIO || errno == ENODEV)) {
			dir_fail(d, "%s: sending on %s: %s (interface gone?)", d->name, d->out_if,
			         strerror(errno));
			rc = -1;
			break;
		}
		/* Drop this frame (interface down, frame too big for it...). */
		if (!d->warned_tx) {
			d->warned_tx = true;
			msg("%s: sending on %s: %s; dropping (warning once)", d->name, d->out_if,
			    r < 0 ? strerror(errno) : "nothing sent");
		}
		d->c[C_QDROPS]++;
		off++;
		tries = 0;
	}
	for (i = 0; i < n; i++)
		d->free_slot[d->free_n++] = slot[i];
	return rc;
}

static int tx_due(struct dir *d, uint64_t now)
{
	uint32_t slot[TX_BATCH];

	for (;;) {
		unsigned n = 0;
		struct fifo *f;

		while (n < TX_BATCH && (f = due_fifo(d, now)) != NULL) {
			slot[n++] = fifo_peek(f);
			fifo_pop(f);
		}
		if (n == 0)
			return 0;
		if (tx_batch(d, slot, n) < 0)
			return -1;
		if (n < TX_BATCH)
			return 0;
	}
}

static void publish(struct dir *d)
{
	int i;

	for (i = 0; i < C_COUNT; i++)
		atomic_store_explicit(&d->pub[i], d->c[i], memory_order_relaxed);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The wakeup latency estimate follows the upper part of the observed
 * distribution: it rises quickly and decays slowly. */
static void update_latency(struct dir *d, uint64_t woke, uint64_t deadline)
{
	uint64_t lat = woke > deadline ? woke - deadline : 0;

	if (lat > LAT_MAX)
		lat = LAT_MAX;
	if (lat > d->lat_est)
		d->lat_est += (lat - d->lat_est) / 4;
	else
		d->lat_est -= (d->lat_est - lat) / 32;
}

static void refill_spin(struct dir *d, uint64_t now)
{
	if (now > d->spin_refill) {
		d->spin_tokens += (now - d->spin_refill) / SPIN_SHARE;
		if (d->spin_tokens > SPIN_CAP)
			d->spin_tokens = SPIN_CAP;
	}
	d->spin_refill = now;
}

/* Waits for the last few microseconds before a departure without sleeping
 * (waking up from a sleep takes ~100 us on a virtual machine), but only
 * within the spin budget, and returns early when a frame arrives. */
static void spin_until(struct dir *d, uint64_t t)
{
	uint64_t start = now_ns(), now = start;

	while (now < t && !rx_pending(d) && !atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		cpu_relax();
		now = now_ns();
	}
	d->spin_tokens -= now - start < d->spin_tokens ? now - start : d->spin_tokens;
}

/* A non-negative integer up to MAX from the environment variable NAME, or
 * DEF. */
static unsigned env_uint(const char *name, unsigned def, unsigned max, struct dir *d)
{
	const char *env = getenv(name);
	unsigned long v;
	char *end;

	if (env == NULL || *env == '\0')
		return def;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (*end != '\0' || errno != 0 || env[0] < '0' || env[0] > '9' || v > max) {
		msg("%s: ignoring %s=%s (expected 0..%u)", d->name, name, env, max);
		return def;
	}
	return (unsigned)v;
}

/* A wire must not be preempted by the endpoints it serves: with normal
 * scheduling every frame forwarded to a local receiver wakes that receiver,
 * which preempts the forwarding thread, and throughput on a small machine
 * halves and varies wildly. So the forwarding threads run SCHED_FIFO
 * (priority LINKEM_RT_PRIO, default 1; 0 turns this off). They sleep
 * whenever there is nothing to do, and the kernel's RT throttling still
 * leaves other tasks their share. */
static void set_realtime(struct dir *d)
{
	struct sched_param sp;
	int prio = (int)env_uint("LINKEM_RT_PRIO", 1, 99, d), e;

	if (prio == 0)
		return;
	memset(&sp, 0, sizeof(sp));
	sp.sched_priority = prio;
	e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (e != 0)
		msg("%s: no real-time priority (%s); throughput may vary", d->name, strerror(e));
}

static void *dir_run(void *arg)
{
	struct dir *d = arg;
	struct pollfd pfd[2];

	/* Wake up on time: the default 50 us slack would be a visible error. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	set_realtime(d);
	pfd[0].fd = d->rx_fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = g_stopfd;
	pfd[1].events = POLLIN;
	d->coalesce_ns = env_uint("LINKEM_COALESCE_US", COALESCE_NS / 1000u, 10000, d) * 1000u;
	d->lat_est = LAT_INIT;
	d->spin_tokens = SPIN_CAP;
	d->spin_refill = now_ns();
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		uint64_t now, next, wait, deadline = 0;
		struct timespec ts, *tsp = NULL;
		unsigned got;
		bool busy;
		int r;

		got = rx_drain(d);
		now = now_ns();
		if (tx_due(d, now) < 0)
			break;
		publish(d);
		if (got > 0)
			d->last_rx = now;
		if (got == RX_BUDGET || rx_pending(d))
			continue;
		busy = d->coalesce_ns != 0 && now - d->last_rx < BUSY_WINDOW;
		wait = UINT64_MAX;
		next = next_departure(d);
		if (next != UINT64_MAX) {
			now = now_ns();
			if (next <= now)
				continue;
			wait = next - now;
			refill_spin(d, now);
			if (d->spin_tokens >= d->lat_est) {
				if (wait <= d->lat_est) {
					/* Too close to sleep without overshooting. */
					spin_until(d, next);
					continue;
				}
				/* Wake up early by the usual wakeup latency and
				 * spin the rest. */
				wait -= d->lat_est;
			}
		}
		if (busy && wait > d->coalesce_ns) {
			/* Frames are flowing: look at the ring again after a
			 * short nap instead of being woken by every frame. */
			wait = d->coalesce_ns;
		}
		if (wait != UINT64_MAX) {
			deadline = now + wait;
			ts.tv_sec = (time_t)(wait / 1000000000ull);
			ts.tv_nsec = (long)(wait % 1000000000ull);
			tsp = &ts;
		}
		pfd[0].revents = 0;
		r = busy ? ppoll(pfd + 1, 1, tsp, NULL) : ppoll(pfd, 2, tsp, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			dir_fail(d, "%s: ppoll: %s", d->name, strerror(errno));
			break;
		}
		if (r == 0 && tsp != NULL)
			update_latency(d, now_ns(), deadline);
		if (pfd[0].revents & (POLLERR | POLLNVAL)) {
			int e = 0;
			socklen_t el = sizeof(e);

			/* Reading SO_ERROR clears it. */
			getsockopt(d->rx_fd, SOL_SOCKET, SO_ERROR, &e, &el);
			if ((int)if_nametoindex(d->in_if) != d->in_idx) {
				dir_fail(d, "%s: interface %s disappeared", d->name, d->in_if);
				break;
			}
			if (!d->warned_down && e != 0) {
				d->warned_down = true;
				msg("%s: %s: %s (warning once)", d->name, d->in_if, strerror(e));
			}
		}
	}
	publish(d);
	return NULL;
}

/* ---- setup ---------------------------------------------------------------- */

static int if_info(const char *name, int *index, uint32_t *mtu, bool *up)
{
	struct ifreq ifr;
	int fd, rc = -1;

	if (strlen(name) >= IFNAMSIZ) {
		msg("interface name '%s' is too long", name);
		return -1;
	}
	*index = (int)if_nametoindex(name);
	if (*index == 0) {
		msg("interface %s: %s", name, strerror(errno));
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		msg("socket: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		msg("interface %s: SIOCGIFMTU: %s", name, strerror(errno));
		goto out;
	}
	*mtu = ifr.ifr_mtu > 0 ? (uint32_t)ifr.ifr_mtu : 1500;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		msg("interface %s: SIOCGIFFLAGS: %s", name, strerror(errno));
		goto out;
	}
	*up = (ifr.ifr_flags & IFF_UP) != 0;
	rc = 0;
out:
	close(fd);
	return rc;
}

static int sockopt(int fd, int level, int name, const void *val, socklen_t len, const char *what)
{
	if (setsockopt(fd, level, name, val, len) < 0) {
		msg("%s: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

static int packet_socket(void)
{
	/* Protocol 0: receives nothing until bound to the interface. */
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0)
		msg("socket(AF_PACKET): %s%s", strerror(errno),
		    errno == EPERM ? " (needs root or CAP_NET_RAW)" : "");
	return fd;
}

static int open_rx(struct dir *d)
{
	struct tpacket_req req;
	struct sockaddr_ll sll;
	struct packet_mreq mr;
	int one = 1, ver = TPACKET_V2;

	d->rx_fd = packet_socket();
	if (d->rx_fd < 0)
		return -1;
	if (sockopt(d->rx_fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one), "PACKET_VNET_HDR") <
	        0 ||
	    sockopt(d->rx_fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof(ver), "PACKET_VERSION") <
	        0 ||
	    sockopt(d->rx_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one),
	            "PACKET_IGNORE_OUTGOING") < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.tp_block_size = RING_BLOCK > d->frame_size ? RING_BLOCK : d->frame_size;
	req.tp_frame_size = d->frame_size;
	req.tp_block_nr = RING_BYTES / req.tp_block_size;
	if (req.tp_block_nr < 16)
		req.tp_block_nr = 16;
	req.tp_frame_nr = req.tp_block_nr * (req.tp_block_size / req.tp_frame_size);
	if (sockopt(d->rx_fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req), "PACKET_RX_RING") < 0)
		return -1;
	d->frame_nr = req.tp_frame_nr;
	d->ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
	d->ring = mmap(NULL, d->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, d->rx_fd, 0);
	if (d->ring == MAP_FAILED) {
		d->ring = NULL;
		msg("mmap of the receive ring: %s", strerror(errno));
		return -1;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = d->in_idx;
	if (bind(d->rx_fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		msg("bind to %s: %s", d->in_if, strerror(errno));
		return -1;
	}
	memset(&mr, 0, sizeof(mr));
	mr.mr_ifindex = d->in_idx;
	mr.mr_type = PACKET_MR_PROMISC;
	return sockopt(d->rx_fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr),
	               "promiscuous mode");
}

static int open_tx(struct dir *d)
{
	struct sockaddr_ll sll;
	int one = 1, sndbuf = SNDBUF_BYTES;

	d->tx_fd = packet_socket();
	if (d->tx_fd < 0)
		return -1;
	if (sockopt(d->tx_fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one), "PACKET_VNET_HDR") <
	        0 ||
	    sockopt(d->tx_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one),
	            "PACKET_QDISC_BYPASS") < 0)
		return -1;
	if (setsockopt(d->tx_fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		setsockopt(d->tx_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = 0; /* send only */
	sll.sll_ifindex = d->out_idx;
	if (bind(d->tx_fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		msg("bind to %s: %s", d->out_if, strerror(errno));
		return -1;
	}
	return 0;
}

/* Pool size: twice what the configured delay holds at the rate limit (or at
 * 10 Gbit/s of 1500-byte frames without one), plus the rate queue. */
static uint32_t pool_slots(const struct lk_spec *s)
{
	double hold =
	    (double)(s->delay_ns + s->jitter_ns + (s->reorder > 0.0 ? s->reorder_gap_ns : 0));
	double bps = s->rate_bps != 0 ? (double)s->rate_bps : 10e9;
	double n = hold / 1e9 * bps / (8.0 * 1500.0) * 2.0 + 4096.0;

	if (s->rate_bps != 0)
		n += s->queue;
	if (n < POOL_MIN)
		n = POOL_MIN;
	if (n > POOL_MAX)
		n = POOL_MAX;
	return (uint32_t)n;
}

static int dir_setup(struct dir *d, uint32_t max_mtu, uint64_t seed, unsigned which)
{
	uint32_t i, need;

	/* Ring frame: tpacket2 header and sockaddr_ll (TPACKET2_HDRLEN), up to
	 * 16 bytes of link header alignment, the virtio header, the frame. */
	need = TPACKET_ALIGN(TPACKET2_HDRLEN + 16) + VNET_LEN + ETH_HLEN + VLAN_LEN + max_mtu + 64;
	d->frame_size = pow2_at_least(need);
	d->slot_size = d->frame_size;

	d->rng = seed ^ (which == 0 ? 0x5a2b5a2b5a2b5a2bull : 0xb2a0b2a0b2a0b2a0ull);
	rng_next(&d->rng);
	if (d->spec.burst > 0.0 && d->spec.loss > 0.0 && d->spec.loss < 1.0)
		lk_spec_ge(&d->spec, &d->ge_p, &d->ge_r);

	d->pool_n = pool_slots(&d->spec);
	for (;;) {
		d->pool_len = (size_t)d->pool_n * d->slot_size;
		d->pool = mmap(NULL, d->pool_len, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (d->pool != MAP_FAILED)
			break;
		d->pool = NULL;
		if (d->pool_n <= POOL_MIN) {
			msg("allocating the packet pool: %s", strerror(errno));
			return -1;
		}
		d->pool_n /= 2;
	}
	d->free_slot = calloc(d->pool_n, sizeof(*d->free_slot));
	d->dep_ns = calloc(d->pool_n, sizeof(*d->dep_ns));
	d->len = calloc(d->pool_n, sizeof(*d->len));
	if (d->free_slot == NULL || d->dep_ns == NULL || d->len == NULL ||
	    fifo_init(&d->normal, d->pool_n) < 0 || fifo_init(&d->held, d->pool_n) < 0) {
		msg("out of memory");
		return -1;
	}
	/* Hand out low slots first: the busy set stays small and cache-hot. */
	for (i = 0; i < d->pool_n; i++)
		d->free_slot[i] = d->pool_n - 1 - i;
	d->free_n = d->pool_n;
	if (d->spec.rate_bps != 0) {
		uint32_t n = pow2_at_least(d->spec.queue);

		d->ser_end = calloc(n, sizeof(*d->ser_end));
		if (d->ser_end == NULL) {
			msg("out of memory");
			return -1;
		}
		d->ser_mask = n - 1;
	}
	if (open_rx(d) < 0 || open_tx(d) < 0)
		return -1;
	return 0;
}

/* ---- statistics ----------------------------------------------------------- */

static void collect_ring_drops(struct dir *d)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	/* Reading resets the kernel's counters; accumulate. */
	if (d->rx_fd >= 0 && getsockopt(d->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		d->ring_drops += st.tp_drops;
}

static int format_dir(char *buf, size_t len, struct dir *d)
{
	uint64_t v[C_COUNT];
	int i;

	collect_ring_drops(d);
	for (i = 0; i < C_COUNT; i++)
		v[i] = atomic_load_explicit(&d->pub[i], memory_order_relaxed);
	/* Frames the ring had no room for were received and dropped by us. */
	return snprintf(
	    buf, len, "%s rx=%llu tx=%llu lost=%llu dup=%llu reordered=%llu queue_drops=%llu\n",
	    d->name, (unsigned long long)(v[C_RX] + d->ring_drops), (unsigned long long)v[C_TX],
	    (unsigned long long)v[C_LOST], (unsigned long long)v[C_DUP],
	    (unsigned long long)v[C_REORDERED], (unsigned long long)(v[C_QDROPS] + d->ring_drops));
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Writes the counters to PATH, replacing the file atomically when it is a
 * regular file (readers never see half a file). */
static void write_stats(const char *path, struct dir *dirs)
{
	char buf[512], tmp[4200];
	struct stat stbuf;
	int n, m, fd;
	bool atomic_replace;

	if (path == NULL)
		return;
	n = format_dir(buf, sizeof(buf), &dirs[0]);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	m = format_dir(buf + n, sizeof(buf) - (size_t)n, &dirs[1]);
	if (m < 0 || (size_t)(n + m) >= sizeof(buf))
		return;
	n += m;

	if (lstat(path, &stbuf) == 0)
		atomic_replace = S_ISREG(stbuf.st_mode);
	else
		atomic_replace = errno == ENOENT;
	if (atomic_replace &&
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) < sizeof(tmp)) {
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			int bad = write_all(fd, buf, (size_t)n);

			if (close(fd) < 0)
				bad = -1;
			if (bad == 0 && rename(tmp, path) == 0)
				return;
			unlink(tmp);
		}
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, buf, (size_t)n) < 0)
		msg("writing stats to %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* ---- main ----------------------------------------------------------------- */

static void apply_specs(struct lk_spec *s, const char *what, char **list, int n)
{
	char err[256];
	int i;

	for (i = 0; i < n; i++)
		if (lk_spec_apply(s, list[i], err, sizeof(err)) < 0)
			bad_usage("bad SPEC for %s '%s': %s", what, list[i], err);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"a2b", required_argument, NULL, 'a'},
	    {"b2a", required_argument, NULL, 'b'},
	    {"both", required_argument, NULL, 'x'},
	    {"seed", required_argument, NULL, 's'},
	    {"stats", required_argument, NULL, 'S'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct dir dirs[2];
	char **both, **a2b, **b2a, err[256], desc[256];
	int nboth = 0, na2b = 0, nb2a = 0, c, i, rc = 0;
	const char *stats = NULL, *if_a, *if_b;
	uint64_t seed = 0;
	bool have_seed = false, up[2];
	uint32_t mtu[2], max_mtu;
	int idx[2];
	sigset_t sigs;

	/* Signals are taken by sigwaitinfo() in this thread only, from the
	 * start: a SIGTERM during setup still exits cleanly. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	both = calloc((size_t)argc + 1, sizeof(*both));
	a2b = calloc((size_t)argc + 1, sizeof(*a2b));
	b2a = calloc((size_t)argc + 1, sizeof(*b2a));
	if (both == NULL || a2b == NULL || b2a == NULL) {
		msg("out of memory");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			a2b[na2b++] = optarg;
			break;
		case 'b':
			b2a[nb2a++] = optarg;
			break;
		case 'x':
			both[nboth++] = optarg;
			break;
		case 's':
			if (lk_parse_u64(optarg, &seed) < 0)
				bad_usage("--seed %s: expected a non-negative integer", optarg);
			have_seed = true;
			break;
		case 'S':
			if (optarg[0] == '\0')
				bad_usage("--stats needs a file name");
			stats = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2)
		bad_usage("expected two interfaces, got %d argument%s", argc - optind,
		          argc - optind == 1 ? "" : "s");
	if_a = argv[optind];
	if_b = argv[optind + 1];
	if (strcmp(if_a, if_b) == 0)
		bad_usage("IF_A and IF_B are the same interface (%s)", if_a);
	if (if_a[0] == '\0' || if_b[0] == '\0')
		bad_usage("empty interface name");

	dirs[0].name = "a2b";
	dirs[0].in_if = if_a;
	dirs[0].out_if = if_b;
	dirs[1].name = "b2a";
	dirs[1].in_if = if_b;
	dirs[1].out_if = if_a;
	for (i = 0; i < 2; i++) {
		lk_spec_init(&dirs[i].spec);
		apply_specs(&dirs[i].spec, "--both", both, nboth);
		dirs[i].rx_fd = dirs[i].tx_fd = -1;
	}
	apply_specs(&dirs[0].spec, "--a2b", a2b, na2b);
	apply_specs(&dirs[1].spec, "--b2a", b2a, nb2a);
	for (i = 0; i < 2; i++)
		if (lk_spec_check(&dirs[i].spec, err, sizeof(err)) < 0)
			bad_usage("bad SPEC for %s: %s", dirs[i].name, err);
	free(both);
	free(a2b);
	free(b2a);

	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
		       ((uint64_t)getpid() << 40);
	}

	if (if_info(if_a, &idx[0], &mtu[0], &up[0]) < 0 ||
	    if_info(if_b, &idx[1], &mtu[1], &up[1]) < 0)
		return 1;
	if (idx[0] == idx[1])
		bad_usage("IF_A and IF_B are the same interface");
	for (i = 0; i < 2; i++)
		if (!up[i])
			msg("warning: interface %s is down", i == 0 ? if_a : if_b);
	max_mtu = mtu[0] > mtu[1] ? mtu[0] : mtu[1];
	if (max_mtu > 65535 - 256) {
		msg("MTU %u is too large", max_mtu);
		return 1;
	}

	g_main = pthread_self();
	g_stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g_stopfd < 0) {
		msg("eventfd: %s", strerror(errno));
		return 1;
	}
	dirs[0].in_idx = dirs[1].out_idx = idx[0];
	dirs[0].out_idx = dirs[1].in_idx = idx[1];
	for (i = 0; i < 2; i++)
		if (dir_setup(&dirs[i], max_mtu, seed, (unsigned)i) < 0)
			return 1;

	for (i = 0; i < 2; i++) {
		lk_spec_describe(&dirs[i].spec, desc, sizeof(desc));
		msg("%s %s -> %s: %s", dirs[i].name, dirs[i].in_if, dirs[i].out_if, desc);
	}
	for (i = 0; i < 2; i++) {
		int e = pthread_create(&dirs[i].thread, NULL, dir_run, &dirs[i]);

		if (e != 0) {
			msg("pthread_create: %s", strerror(e));
			return 1;
		}
		dirs[i].started = true;
	}
	write_stats(stats, dirs);
	msg("seed=%llu, forwarding", (unsigned long long)seed);

	for (;;) {
		int sig = sigwaitinfo(&sigs, NULL);

		if (sig < 0) {
			if (errno == EINTR)
				continue;
			msg("sigwaitinfo: %s", strerror(errno));
			rc = 1;
			break;
		}
		if (sig == SIGUSR1) {
			write_stats(stats, dirs);
			continue;
		}
		if (sig == SIGUSR2) {
			if (!atomic_load(&g_failed))
				continue;
			rc = 1;
			break;
		}
		break; /* SIGINT, SIGTERM, SIGHUP */
	}

	atomic_store(&g_stop, true);
	{
		uint64_t one = 1;

		if (write(g_stopfd, &one, sizeof(one)) < 0)
			msg("eventfd write: %s", strerror(errno));
	}
	for (i = 0; i < 2; i++)
		if (dirs[i].started)
			pthread_join(dirs[i].thread, NULL);
	write_stats(stats, dirs);
	for (i = 0; i < 2; i++)
		if (dirs[i].err[0] != '\0')
			msg("%s", dirs[i].err);
	return rc;
}
