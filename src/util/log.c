#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static enum yip_log_level current = YIP_LOG_INFO;

void yip_log_set_level(enum yip_log_level level)
{
	current = level;
}

enum yip_log_level yip_log_get_level(void)
{
	return current;
}

void yip_log(enum yip_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;

	if (level > current)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %-5s ", stamp, ts.tv_nsec / 1000000, names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
