/* SPEC parsing for yip-linkem: "loss=0.5%,delay=20ms,rate=100mbit". */
#include "linkem.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TIME_NS   3600000000000ull /* one hour */
#define MAX_RATE_BPS  1000000000000ull /* 1 Tbit/s */
#define MIN_RATE_BPS  1000ull
#define MAX_QUEUE     1000000u
#define MAX_BURST     1000000.0
#define MAX_SPEC_ITEM 256

static const char known_keys[] =
    "loss, burst, delay, jitter, reorder, reorder_gap, dup, rate, queue";

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void lk_spec_init(struct lk_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->queue = LK_DEFAULT_QUEUE;
	s->reorder_gap_ns = LK_DEFAULT_REORDER_GAP;
}

/* A plain decimal number ("12", "0.5", ".25"), no sign, no exponent, no
 * hex, no inf/nan; *END points at what follows (the unit). */
static int parse_number(const char *text, double *out, const char **end)
{
	const char *p = text;
	int digits = 0;
	char *e;

	while (*p >= '0' && *p <= '9') {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return -1;
	errno = 0;
	*out = strtod(text, &e);
	if (errno != 0 || e != p)
		return -1;
	*end = p;
	return 0;
}

static int parse_percent(const char *key, const char *val, double *out, char *err, size_t errlen)
{
	const char *unit;
	double v;

	if (parse_number(val, &v, &unit) < 0 || strcmp(unit, "%") != 0)
		return fail(err, errlen, "%s=%s: expected a percentage such as 0.5%%", key, val);
	if (v > 100.0)
		return fail(err, errlen, "%s=%s: percentage above 100%%", key, val);
	*out = v / 100.0;
	return 0;
}

static int parse_time(const char *key, const char *val, uint64_t *out, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1.0}};
	const char *unit;
	double v;
	size_t i;

	if (parse_number(val, &v, &unit) < 0)
		return fail(err, errlen, "%s=%s: expected a time such as 20ms or 500us", key, val);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(unit, units[i].name) == 0) {
			double ns = v * units[i].ns;

			if (ns > (double)MAX_TIME_NS)
				return fail(err, errlen, "%s=%s: longer than one hour", key, val);
			*out = (uint64_t)(ns + 0.5);
			return 0;
		}
	}
	return fail(err, errlen, "%s=%s: time needs a unit: s, ms, us or ns", key, val);
}

static int parse_rate(const char *key, const char *val, uint64_t *out, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		double bps;
	} units[] = {{"bit", 1.0}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}};
	const char *unit;
	double v;
	size_t i;

	if (parse_number(val, &v, &unit) < 0)
		return fail(err, errlen, "%s=%s: expected a rate such as 100mbit", key, val);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(unit, units[i].name) == 0) {
			double bps = v * units[i].bps;

			if (bps < (double)MIN_RATE_BPS || bps > (double)MAX_RATE_BPS)
				return fail(err, errlen,
				            "%s=%s: rate must be between 1kbit and 1tbit", key,
				            val);
			*out = (uint64_t)(bps + 0.5);
			return 0;
		}
	}
	return fail(err, errlen, "%s=%s: rate needs a unit: bit, kbit, mbit, gbit or tbit", key,
	            val);
}

static int parse_item(struct lk_spec *s, char *item, char *err, size_t errlen)
{
	char *eq = strchr(item, '=');
	const char *key = item, *val, *unit;
	double v;

	if (eq == NULL)
		return fail(err, errlen, "'%s': expected key=value", item);
	*eq = '\0';
	val = eq + 1;
	if (*val == '\0')
		return fail(err, errlen, "%s=: missing value", key);

	if (strcmp(key, "loss") == 0) {
		s->keys |= LK_KEY_LOSS;
		return parse_percent(key, val, &s->loss, err, errlen);
	}
	if (strcmp(key, "dup") == 0) {
		s->keys |= LK_KEY_DUP;
		return parse_percent(key, val, &s->dup, err, errlen);
	}
	if (strcmp(key, "reorder") == 0) {
		s->keys |= LK_KEY_REORDER;
		return parse_percent(key, val, &s->reorder, err, errlen);
	}
	if (strcmp(key, "delay") == 0) {
		s->keys |= LK_KEY_DELAY;
		return parse_time(key, val, &s->delay_ns, err, errlen);
	}
	if (strcmp(key, "jitter") == 0) {
		s->keys |= LK_KEY_JITTER;
		return parse_time(key, val, &s->jitter_ns, err, errlen);
	}
	if (strcmp(key, "reorder_gap") == 0) {
		s->keys |= LK_KEY_REORDER_GAP;
		return parse_time(key, val, &s->reorder_gap_ns, err, errlen);
	}
	if (strcmp(key, "rate") == 0) {
		s->keys |= LK_KEY_RATE;
		return parse_rate(key, val, &s->rate_bps, err, errlen);
	}
	if (strcmp(key, "burst") == 0) {
		if (parse_number(val, &v, &unit) < 0 || *unit != '\0')
			return fail(err, errlen,
			            "burst=%s: expected a mean burst length in packets", val);
		if (v < 1.0 || v > MAX_BURST)
			return fail(err, errlen, "burst=%s: must be between 1 and %.0f packets",
			            val, MAX_BURST);
		s->keys |= LK_KEY_BURST;
		s->burst = v;
		return 0;
	}
	if (strcmp(key, "queue") == 0) {
		if (parse_number(val, &v, &unit) < 0 || *unit != '\0')
			return fail(err, errlen, "queue=%s: expected a whole number of packets",
			            val);
		if (v < 1.0 || v > (double)MAX_QUEUE)
			return fail(err, errlen, "queue=%s: must be between 1 and %u packets", val,
			            MAX_QUEUE);
		if (v != (double)(uint32_t)v)
			return fail(err, errlen, "queue=%s: expected a whole number of packets",
			            val);
		s->keys |= LK_KEY_QUEUE;
		s->queue = (uint32_t)v;
		return 0;
	}
	return fail(err, errlen, "unknown key '%s' (known: %s)", key, known_keys);
}

int lk_spec_apply(struct lk_spec *s, const char *text, char *err, size_t errlen)
{
	const char *p = text;

	while (*p != '\0') {
		char item[MAX_SPEC_ITEM];
		size_t n = strcspn(p, ",");

		if (n >= sizeof(item))
			return fail(err, errlen, "'%.40s...': item too long", p);
		memcpy(item, p, n);
		item[n] = '\0';
		/* Empty items ("loss=1%,,delay=1ms" or a trailing comma) are allowed. */
		if (n > 0 && parse_item(s, item, err, errlen) < 0)
			return -1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

int lk_spec_check(const struct lk_spec *s, char *err, size_t errlen)
{
	if ((s->keys & LK_KEY_BURST) && !(s->keys & LK_KEY_LOSS))
		return fail(err, errlen, "burst= needs loss= (the long-run loss rate)");
	if ((s->keys & LK_KEY_BURST) && s->loss > 0.0 && s->loss < 1.0) {
		double p, r;

		lk_spec_ge(s, &p, &r);
		if (p > 1.0)
			return fail(err, errlen,
			            "loss=%g%% with burst=%g is impossible: loss/(1-loss) must not "
			            "exceed burst (use a longer burst or a lower loss)",
			            s->loss * 100.0, s->burst);
	}
	return 0;
}

void lk_spec_ge(const struct lk_spec *s, double *p, double *r)
{
	*r = 1.0 / s->burst;
	*p = s->loss >= 1.0 ? 1.0 : s->loss * *r / (1.0 - s->loss);
}

static void append(char *buf, size_t len, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

void lk_spec_describe(const struct lk_spec *s, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (s->loss > 0.0) {
		append(buf, len, &off, "loss=%g%%", s->loss * 100.0);
		if (s->burst > 0.0)
			append(buf, len, &off, " (burst %g)", s->burst);
		append(buf, len, &off, " ");
	}
	if (s->delay_ns > 0)
		append(buf, len, &off, "delay=%.3fms ", (double)s->delay_ns / 1e6);
	if (s->jitter_ns > 0)
		append(buf, len, &off, "jitter=%.3fms ", (double)s->jitter_ns / 1e6);
	if (s->reorder > 0.0)
		append(buf, len, &off, "reorder=%g%% gap=%.3fms ", s->reorder * 100.0,
		       (double)s->reorder_gap_ns / 1e6);
	if (s->dup > 0.0)
		append(buf, len, &off, "dup=%g%% ", s->dup * 100.0);
	if (s->rate_bps > 0)
		append(buf, len, &off, "rate=%gmbit queue=%u ", (double)s->rate_bps / 1e6,
		       s->queue);
	if (off == 0)
		append(buf, len, &off, "none");
	else if (off < len)
		buf[off - 1] = '\0'; /* trailing space */
	else
		buf[len - 1] = '\0';
}

int lk_parse_u64(const char *text, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}
