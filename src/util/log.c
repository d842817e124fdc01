#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic int current = YIP_LOG_INFO;
static enum yip_log_format format = YIP_LOG_TEXT;
static bool journal;

static const char *const names[] = {"error", "warn", "info", "debug"};
static const char prio[] = {'3', '4', '6', '7'}; /* sd-daemon(3): SD_ERR .. SD_DEBUG */

void yip_log_set_level(enum yip_log_level level)
{
	atomic_store_explicit(&current, (int)level, memory_order_relaxed);
}

enum yip_log_level yip_log_get_level(void)
{
	return (enum yip_log_level)atomic_load_explicit(&current, memory_order_relaxed);
}

void yip_log_set_format(enum yip_log_format f)
{
	format = f;
}

void yip_log_set_journal(bool on)
{
	journal = on;
}

const char *yip_log_level_name(enum yip_log_level level)
{
	return (unsigned)level <= YIP_LOG_DEBUG ? names[level] : "?";
}

int yip_log_level_parse(const char *s, enum yip_log_level *out)
{
	static const struct {
		const char *name;
		enum yip_log_level level;
	} t[] = {{"error", YIP_LOG_ERROR},  {"err", YIP_LOG_ERROR}, {"warn", YIP_LOG_WARN},
	         {"warning", YIP_LOG_WARN}, {"info", YIP_LOG_INFO}, {"debug", YIP_LOG_DEBUG}};

	for (size_t i = 0; s != NULL && i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(s, t[i].name) == 0) {
			*out = t[i].level;
			return 0;
		}
	return -1;
}

int yip_log_format_parse(const char *s, enum yip_log_format *out)
{
	if (s != NULL && strcmp(s, "text") == 0)
		*out = YIP_LOG_TEXT;
	else if (s != NULL && strcmp(s, "json") == 0)
		*out = YIP_LOG_JSON;
	else
		return -1;
	return 0;
}

/* A decimal number up to stop; false if there is none or it overflows. */
static bool decimal(const char **p, char stop, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s != stop)
		return false;
	*p = s + (stop != '\0');
	*out = v;
	return true;
}

bool yip_log_journal_stream(const char *value, uint64_t dev, uint64_t ino)
{
	uint64_t d, i;

	if (value == NULL || !decimal(&value, ':', &d) || !decimal(&value, '\0', &i))
		return false;
	return d == dev && i == ino;
}

/* The length of the UTF-8 sequence at s (1 to 4), or 0 if none starts there. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

size_t yip_log_json_escape(char *out, size_t outlen, const char *msg)
{
	const unsigned char *s = (const unsigned char *)msg;
	size_t o = 0;

	if (outlen == 0)
		return 0;
	while (*s != '\0') {
		char esc[8];
		size_t n = utf8_len(s), elen;

		if (*s == '"' || *s == '\\') {
			esc[0] = '\\', esc[1] = (char)*s, elen = 2;
		} else if (*s == '\n') {
			memcpy(esc, "\\n", 2), elen = 2;
		} else if (*s == '\t') {
			memcpy(esc, "\\t", 2), elen = 2;
		} else if (*s < 0x20 || *s == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *s), elen = 6;
		} else if (n == 0) {
			memcpy(esc, "\\ufffd", 6), elen = 6; /* not UTF-8 */
			n = 1;
		} else {
			memcpy(esc, s, n), elen = n;
		}
		if (n == 0)
			n = 1;
		if (o + elen >= outlen)
			break;
		memcpy(out + o, esc, elen);
		o += elen;
		s += n;
	}
	out[o] = '\0';
	return o;
}

size_t yip_log_line(char *out, size_t outlen, enum yip_log_level level, uint64_t wall_ns,
                    const char *msg)
{
	char stamp[40] = "";
	size_t o = 0;
	int w;

	if (outlen < 2)
		return 0;
	if ((unsigned)level > YIP_LOG_DEBUG)
		level = YIP_LOG_DEBUG;
	if (!journal) {
		time_t t = (time_t)(wall_ns / 1000000000ULL);
		struct tm tm;
		size_t n;

		gmtime_r(&t, &tm);
		n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(stamp + n, sizeof(stamp) - n, ".%03uZ",
		         (unsigned)(wall_ns % 1000000000ULL / 1000000ULL));
	}
	if (journal)
		w = snprintf(out, outlen, "<%c>", prio[level]);
	else if (format == YIP_LOG_TEXT)
		w = snprintf(out, outlen, "%s %-5s ", stamp, names[level]);
	else
		w = 0;
	o = w < 0 ? 0 : (size_t)w < outlen ? (size_t)w : outlen - 1;
	if (format == YIP_LOG_JSON) {
		w = journal ? snprintf(out + o, outlen - o, "{\"level\":\"%s\",\"msg\":\"",
		                       names[level])
		            : snprintf(out + o, outlen - o,
		                       "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
		                       names[level]);
		o += w < 0 ? 0 : (size_t)w < outlen - o ? (size_t)w : outlen - o - 1;
		/* room for the closing "}\n */
		if (outlen - o > 4)
			o += yip_log_json_escape(out + o, outlen - o - 3, msg);
		w = snprintf(out + o, outlen - o, "\"}\n");
	} else {
		w = snprintf(out + o, outlen - o, "%s\n", msg);
	}
	o += w < 0 ? 0 : (size_t)w < outlen - o ? (size_t)w : outlen - o - 1;
	if (out[o - 1] != '\n') { /* cut short: end the line all the same */
		out[o - 1] = '\n';
	}
	return o;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void emit(enum yip_log_level level, const char *msg)
{
	char line[6 * YIP_LOG_MSG_MAX + 128];
	int saved = errno;

	yip_log_line(line, sizeof(line), level, clock_ns(CLOCK_REALTIME), msg);
	fputs(line, stderr); /* one locked write of stdio's per line */
	errno = saved;
}

static void vlog(enum yip_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void vlog(enum yip_log_level level, const char *fmt, va_list ap)
{
	char msg[YIP_LOG_MSG_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	emit(level, msg);
}

void yip_log(enum yip_log_level level, const char *fmt, ...)
{
	va_list ap;

	if ((int)level > atomic_load_explicit(&current, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

/* ---- Rate limiting ---- */

#define PROBE 8 /* slots looked at per (site, key) */

struct slot {
	const struct yip_log_site *site; /* NULL: free */
	uint64_t key;
	uint64_t start; /* monotonic ns the window began */
	uint32_t lines, suppressed;
	enum yip_log_level level;
};

static struct slot slots[YIP_LOG_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t yip_log_key(const void *bytes, size_t len)
{
	const unsigned char *b = bytes;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h != 0 ? h : 1;
}

static size_t slot_hash(const struct yip_log_site *site, uint64_t key)
{
	uint64_t h = ((uint64_t)(uintptr_t)site ^ key) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) % YIP_LOG_SLOTS;
}

/* The end of a path: "loop/loop.c" of ".../src/loop/loop.c". */
static const char *short_file(const char *f)
{
	const char *s = strstr(f, "src/");

	return s != NULL ? s + 4 : f;
}

/* Called with slots_lock held: the window of s is over; says what it left out. */
static void window_end(struct slot *s)
{
	char msg[160];

	if (s->suppressed > 0) {
		snprintf(msg, sizeof(msg), "suppressed %" PRIu32 " similar message%s (%s:%d)",
		         s->suppressed, s->suppressed == 1 ? "" : "s", short_file(s->site->file),
		         s->site->line);
		emit(s->level, msg);
	}
	s->site = NULL;
}

void yip_log_limited(struct yip_log_site *site, uint64_t key, uint64_t now_ns,
                     enum yip_log_level level, const char *fmt, ...)
{
	size_t h = slot_hash(site, key);
	struct slot *s = NULL, *victim = NULL;
	bool quiet;
	va_list ap;

	if ((int)level > atomic_load_explicit(&current, memory_order_relaxed))
		return;
	if (now_ns == 0)
		now_ns = clock_ns(CLOCK_MONOTONIC);
	pthread_mutex_lock(&slots_lock);
	for (size_t i = 0; i < PROBE && s == NULL; i++) {
		struct slot *c = &slots[(h + i) % YIP_LOG_SLOTS];

		if (c->site == site && c->key == key)
			s = c;
		else if (c->site == NULL || now_ns - c->start >= YIP_LOG_WINDOW_NS) {
			if (victim == NULL || victim->site != NULL)
				victim = c; /* a free slot, or one whose window is over */
		} else if (victim == NULL || (victim->site != NULL && c->start < victim->start))
			victim = c;
	}
	if (s != NULL && now_ns - s->start >= YIP_LOG_WINDOW_NS)
		window_end(s); /* its window is over: a new one begins below */
	else if (s == NULL && victim->site != NULL)
		window_end(victim); /* the table is full here: the oldest makes room */
	if (s == NULL || s->site == NULL) {
		if (s == NULL)
			s = victim;
		*s = (struct slot){.site = site, .key = key, .start = now_ns, .level = level};
	}
	quiet = s->lines >= YIP_LOG_BURST;
	if (quiet)
		s->suppressed++;
	else
		s->lines++;
	if (level < s->level)
		s->level = level;
	pthread_mutex_unlock(&slots_lock);
	if (quiet)
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void yip_log_tick(uint64_t now_ns)
{
	if (now_ns == 0)
		now_ns = clock_ns(CLOCK_MONOTONIC);
	pthread_mutex_lock(&slots_lock);
	for (size_t i = 0; i < YIP_LOG_SLOTS; i++)
		if (slots[i].site != NULL && now_ns - slots[i].start >= YIP_LOG_WINDOW_NS)
			window_end(&slots[i]);
	pthread_mutex_unlock(&slots_lock);
}

void yip_log_limit_reset(void)
{
	pthread_mutex_lock(&slots_lock);
	memset(slots, 0, sizeof(slots));
	pthread_mutex_unlock(&slots_lock);
}
