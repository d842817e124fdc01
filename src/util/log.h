/* Logging to stderr with a timestamp and a level. */
#ifndef YIP_UTIL_LOG_H
#define YIP_UTIL_LOG_H

enum yip_log_level { YIP_LOG_ERROR, YIP_LOG_WARN, YIP_LOG_INFO, YIP_LOG_DEBUG };

void yip_log_set_level(enum yip_log_level level);
enum yip_log_level yip_log_get_level(void);
void yip_log(enum yip_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)  yip_log(YIP_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) yip_log(YIP_LOG_WARN, __VA_ARGS__)
#define log_info(...) yip_log(YIP_LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (yip_log_get_level() >= YIP_LOG_DEBUG)                                          \
			yip_log(YIP_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
