/*
 * Logging to stderr, one line per message, in one of three shapes:
 *
 *   text     "2026-12-07T23:00:00.123Z info  message" (the default)
 *   journal  "<6>message": under journald (JOURNAL_STREAM names stderr), a
 *            syslog priority prefix (sd-daemon(3): error 3, warn 4, info 6,
 *            debug 7) and no timestamp of our own (journald keeps one)
 *   json     {"ts":"2026-12-07T23:00:00.123Z","level":"info","msg":"message"},
 *            msg escaped (quotes, backslashes, control bytes, bytes that are
 *            not UTF-8); under journald the same after the "<N>" prefix,
 *            without "ts"
 *
 * Each line is written with one call, so lines of threads do not mix. The
 * level may change at any time (yipctl log); lines above it are not built.
 *
 * Rate-limited logging (log_limited) for events a peer or a packet can
 * repeat: per call site and key (a peer's public key, a source address; 0:
 * the site alone) at most YIP_LOG_BURST lines per YIP_LOG_WINDOW_NS, then
 * silence until the window ends, when one "suppressed N similar messages"
 * line says how many were left out (yip_log_tick, from the loop's timer,
 * writes it; so does the site's next line). The table of (site, key) is
 * fixed in size (YIP_LOG_SLOTS); when full, the oldest entry makes room.
 * Whatever counts the events counts them before it logs, so counters see
 * every one.
 */
#ifndef YIP_UTIL_LOG_H
#define YIP_UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum yip_log_level { YIP_LOG_ERROR, YIP_LOG_WARN, YIP_LOG_INFO, YIP_LOG_DEBUG };
enum yip_log_format { YIP_LOG_TEXT, YIP_LOG_JSON };

#define YIP_LOG_MSG_MAX   1024 /* bytes of a message; longer ones are cut */
#define YIP_LOG_BURST     10
#define YIP_LOG_WINDOW_NS (10ULL * 1000000000ULL)
#define YIP_LOG_SLOTS     256

void yip_log_set_level(enum yip_log_level level);
enum yip_log_level yip_log_get_level(void);
void yip_log_set_format(enum yip_log_format format);
/* On: journald's shape ("<N>" prefixes, no own timestamp). */
void yip_log_set_journal(bool on);

/* "error", "warn", "info", "debug". */
const char *yip_log_level_name(enum yip_log_level level);
/* Parses a level name (also "warning", "err"); 0, or -1. */
int yip_log_level_parse(const char *s, enum yip_log_level *out);
/* "text" or "json"; 0, or -1. */
int yip_log_format_parse(const char *s, enum yip_log_format *out);

/*
 * Whether JOURNAL_STREAM's value ("<dev>:<inode>", decimal) names the file
 * whose st_dev and st_ino are dev and ino. NULL or malformed: false.
 */
bool yip_log_journal_stream(const char *value, uint64_t dev, uint64_t ino);

/*
 * Builds the line (with its newline) for msg at level as the current
 * format and journal setting shape it, wall_ns the wall clock (ns since
 * the epoch), into out (size outlen, cut short if need be, always
 * terminated). Returns its length. What yip_log writes; for tests.
 */
size_t yip_log_line(char *out, size_t outlen, enum yip_log_level level, uint64_t wall_ns,
                    const char *msg);

/* msg as the inside of a JSON string into out (terminated, cut at a whole
 * escape if need be); returns the length. */
size_t yip_log_json_escape(char *out, size_t outlen, const char *msg);

void yip_log(enum yip_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A call site of log_limited (one static each). */
struct yip_log_site {
	const char *file;
	int line;
};

/*
 * Logs at level unless site's (site, key) pair has written YIP_LOG_BURST
 * lines in its current window. now_ns: monotonic; 0 means read the clock.
 */
void yip_log_limited(struct yip_log_site *site, uint64_t key, uint64_t now_ns,
                     enum yip_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Writes the "suppressed" lines of windows ended by now_ns (monotonic; 0:
 * read the clock) and frees their slots. Call about once a second. */
void yip_log_tick(uint64_t now_ns);

/* Forgets every (site, key) (tests). */
void yip_log_limit_reset(void);

/* A key for log_limited from bytes (a public key, an address): their hash, never 0. */
uint64_t yip_log_key(const void *bytes, size_t len);

#define log_err(...)  yip_log(YIP_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) yip_log(YIP_LOG_WARN, __VA_ARGS__)
#define log_info(...) yip_log(YIP_LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (yip_log_get_level() >= YIP_LOG_DEBUG)                                          \
			yip_log(YIP_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)

/* Rate-limited at this call site (and per key: 0 for none). */
#define log_limited(level, key, ...)                                                               \
	do {                                                                                       \
		static struct yip_log_site yip_log_site_ = {__FILE__, __LINE__};                   \
		if (yip_log_get_level() >= (level))                                                \
			yip_log_limited(&yip_log_site_, (key), 0, (level), __VA_ARGS__);           \
	} while (0)

#endif
