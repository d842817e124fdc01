/* Time sources. The protocol engines never read clocks themselves: callers
 * pass monotonic nanoseconds in, so tests can drive time. */
#ifndef YIP_UTIL_CLOCK_H
#define YIP_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

#define YIP_NS_PER_MS 1000000ULL
#define YIP_NS_PER_S  1000000000ULL

static inline uint64_t yip_now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * YIP_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static inline uint64_t yip_now_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * YIP_NS_PER_S + (uint64_t)ts.tv_nsec;
}

#endif
