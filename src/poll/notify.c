/* The service manager's notification socket (notify.h). */
#include "poll/notify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_US 1000ULL
#define NS_PER_S  1000000000ULL

int yip_notify_parse(const char *value, struct sockaddr_un *out, socklen_t *len)
{
	size_t n;

	memset(out, 0, sizeof(*out));
	out->sun_family = AF_UNIX;
	if (value == NULL)
		return -1;
	n = strlen(value);
	if (n < 2 || n > sizeof(out->sun_path) - (value[0] == '@' ? 0 : 1))
		return -1;
	if (value[0] != '/' && value[0] != '@')
		return -1;
	memcpy(out->sun_path, value, n);
	if (value[0] == '@')
		out->sun_path[0] = '\0'; /* abstract: the length says where it ends */
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (value[0] == '@' ? 0 : 1));
	return 0;
}

uint64_t yip_notify_watchdog(const char *usec, const char *pid, pid_t self)
{
	unsigned long long us, p;
	char *end;

	if (usec == NULL || *usec < '0' || *usec > '9')
		return 0;
	errno = 0;
	us = strtoull(usec, &end, 10);
	if (errno != 0 || *end != '\0' || us == 0 || us > UINT64_MAX / NS_PER_US)
		return 0;
	if (pid != NULL && *pid != '\0') {
		if (*pid < '0' || *pid > '9')
			return 0;
		errno = 0;
		p = strtoull(pid, &end, 10);
		if (errno != 0 || *end != '\0' || p != (unsigned long long)self)
			return 0;
	}
	return us * NS_PER_US / 2;
}

int yip_notify_open(struct yip_notify *n, const char *socket_name, uint64_t watchdog_ns, char *err,
                    size_t errlen)
{
	struct sockaddr_un sa;
	socklen_t len;

	memset(n, 0, sizeof(*n));
	n->fd = -1;
	if (socket_name == NULL || *socket_name == '\0')
		return 0;
	if (yip_notify_parse(socket_name, &sa, &len) != 0) {
		snprintf(err, errlen,
		         "NOTIFY_SOCKET=%s: not an absolute path or an @abstract name that fits",
		         socket_name);
		return -1;
	}
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->fd < 0) {
		snprintf(err, errlen, "NOTIFY_SOCKET: socket: %s", strerror(errno));
		return -1;
	}
	if (connect(n->fd, (const struct sockaddr *)&sa, len) != 0) {
		snprintf(err, errlen, "NOTIFY_SOCKET=%s: connect: %s", socket_name,
		         strerror(errno));
		close(n->fd);
		n->fd = -1;
		return -1;
	}
	n->watchdog_ns = watchdog_ns;
	return 0;
}

bool yip_notify_on(const struct yip_notify *n)
{
	return n->fd >= 0;
}

void yip_notify_send(const struct yip_notify *n, const char *msg)
{
	if (n->fd < 0)
		return;
	/* A full queue or a service manager gone: nothing to do about it here. */
	(void)!send(n->fd, msg, strlen(msg), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The status as one line, at most YIP_NOTIFY_STATUS_MAX - 1 bytes. */
static void keep_status(struct yip_notify *n, const char *status)
{
	size_t i = 0;

	for (; status[i] != '\0' && i < sizeof(n->status) - 1; i++)
		n->status[i] = status[i] == '\n' ? ' ' : status[i];
	n->status[i] = '\0';
}

void yip_notify_ready(struct yip_notify *n, const char *status)
{
	char msg[64 + YIP_NOTIFY_STATUS_MAX];

	if (status != NULL)
		keep_status(n, status);
	snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld%s%s", (long)getpid(),
	         status != NULL ? "\nSTATUS=" : "", status != NULL ? n->status : "");
	yip_notify_send(n, msg);
}

void yip_notify_reloading(struct yip_notify *n)
{
	struct timespec ts;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	         (unsigned long long)ts.tv_sec * 1000000ULL +
	             (unsigned long long)ts.tv_nsec / 1000);
	yip_notify_send(n, msg);
}

void yip_notify_stopping(struct yip_notify *n)
{
	yip_notify_send(n, "STOPPING=1");
}

uint64_t yip_notify_tick(struct yip_notify *n, uint64_t now)
{
	if (n->fd < 0 || n->watchdog_ns == 0)
		return 0;
	if (now >= n->next_watchdog) {
		yip_notify_send(n, "WATCHDOG=1");
		n->next_watchdog = now + n->watchdog_ns;
	}
	return n->next_watchdog;
}

bool yip_notify_status_due(const struct yip_notify *n, uint64_t now)
{
	return n->fd >= 0 && now >= n->next_status;
}

void yip_notify_status(struct yip_notify *n, uint64_t now, const char *status)
{
	char msg[16 + YIP_NOTIFY_STATUS_MAX], line[YIP_NOTIFY_STATUS_MAX];

	n->next_status = now + NS_PER_S;
	memcpy(line, n->status, sizeof(line));
	keep_status(n, status);
	if (strcmp(line, n->status) == 0)
		return;
	snprintf(msg, sizeof(msg), "STATUS=%s", n->status);
	yip_notify_send(n, msg);
}

void yip_notify_close(struct yip_notify *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
