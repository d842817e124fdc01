/* yip-linkem: a userspace Ethernet link emulator (see README.md here).
 *
 * Shared declarations between the SPEC parser (spec.c) and the forwarding
 * engine (linkem.c). */
#ifndef YIP_LINKEM_H
#define YIP_LINKEM_H

#include <stddef.h>
#include <stdint.h>

/* Which keys a SPEC set, so that cross-key checks can tell "loss=0%" from
 * "no loss= at all". */
enum {
	LK_KEY_LOSS = 1u << 0,
	LK_KEY_BURST = 1u << 1,
	LK_KEY_DELAY = 1u << 2,
	LK_KEY_JITTER = 1u << 3,
	LK_KEY_REORDER = 1u << 4,
	LK_KEY_REORDER_GAP = 1u << 5,
	LK_KEY_DUP = 1u << 6,
	LK_KEY_RATE = 1u << 7,
	LK_KEY_QUEUE = 1u << 8,
};

#define LK_DEFAULT_QUEUE       1000u
#define LK_DEFAULT_REORDER_GAP 1000000ull /* ns */

/* The impairments of one direction. Probabilities are fractions in [0, 1],
 * times are nanoseconds. */
struct lk_spec {
	double loss;
	double burst; /* mean burst length in packets; 0 = independent loss */
	uint64_t delay_ns;
	uint64_t jitter_ns;
	double reorder;
	uint64_t reorder_gap_ns;
	double dup;
	uint64_t rate_bps; /* 0 = no rate limit */
	uint32_t queue;    /* rate-limit queue, packets */
	unsigned keys;     /* LK_KEY_* given */
};

/* Defaults: no impairment. */
void lk_spec_init(struct lk_spec *s);

/* Applies the comma-separated key=value list TEXT on top of S (later keys
 * override earlier ones). On error returns -1 with a message in ERR. */
int lk_spec_apply(struct lk_spec *s, const char *text, char *err, size_t errlen);

/* Checks constraints across keys once every SPEC of a direction is applied.
 * Returns -1 with a message in ERR on error. */
int lk_spec_check(const struct lk_spec *s, char *err, size_t errlen);

/* Gilbert-Elliott transition probabilities for S (valid after
 * lk_spec_check): p = good->bad, r = bad->good. */
void lk_spec_ge(const struct lk_spec *s, double *p, double *r);

/* One-line human description of S ("none" when there is no impairment). */
void lk_spec_describe(const struct lk_spec *s, char *buf, size_t len);

/* Parses a non-negative decimal integer (for --seed). */
int lk_parse_u64(const char *text, uint64_t *out);

#endif
