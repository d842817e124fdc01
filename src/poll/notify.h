/*
 * The service manager's notification socket (systemd's sd_notify protocol,
 * written directly: no libsystemd). One datagram per message, "KEY=value"
 * lines, to the AF_UNIX datagram socket named by $NOTIFY_SOCKET: a path, or
 * with a leading '@' an abstract name. The socket is connected once at
 * start, before the sandbox (the path may not be reachable by the sandbox's
 * user afterwards), and kept; sends are non-blocking and their failure is
 * ignored: the service manager may have gone, the daemon goes on.
 *
 * src/cmd reads the environment (NOTIFY_SOCKET, WATCHDOG_USEC,
 * WATCHDOG_PID) and hands the opened struct to the event loop.
 */
#ifndef YIP_POLL_NOTIFY_H
#define YIP_POLL_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#define YIP_NOTIFY_STATUS_MAX 200 /* bytes of a STATUS= line kept and compared */

struct yip_notify {
	int fd;                 /* -1: no notification socket (then every send is a no-op) */
	uint64_t watchdog_ns;   /* send WATCHDOG=1 this often (half of WATCHDOG_USEC); 0: never */
	uint64_t next_watchdog; /* monotonic ns of the next WATCHDOG=1 */
	uint64_t next_status;   /* monotonic ns from which STATUS= may be sent again */
	char status[YIP_NOTIFY_STATUS_MAX]; /* the STATUS= last sent */
};

/*
 * Parses the value of NOTIFY_SOCKET: an absolute path, or "@name" for the
 * abstract namespace (the '@' becomes a NUL byte). 0 with the address and
 * its length, or -1 (empty, relative, too long for sun_path).
 */
int yip_notify_parse(const char *value, struct sockaddr_un *out, socklen_t *len);

/*
 * The watchdog ping interval in ns: half of WATCHDOG_USEC (decimal
 * microseconds, > 0), when WATCHDOG_PID is NULL, empty or equal to self;
 * 0 otherwise (no watchdog, or one meant for another process, or a value
 * that does not parse).
 */
uint64_t yip_notify_watchdog(const char *usec, const char *pid, pid_t self);

/*
 * Fills n: with socket (NOTIFY_SOCKET's value; NULL or empty: none) a
 * connected, non-blocking, close-on-exec datagram socket to it; and the
 * watchdog interval (0: none). 0, or -1 with a message in err (n is then a
 * usable no-op: fd -1).
 */
int yip_notify_open(struct yip_notify *n, const char *socket, uint64_t watchdog_ns, char *err,
                    size_t errlen);

/* True if n has a socket to send to. */
bool yip_notify_on(const struct yip_notify *n);

/* Sends msg (newline-separated assignments) as one datagram; no-op without a socket. */
void yip_notify_send(const struct yip_notify *n, const char *msg);

/* "READY=1\nMAINPID=<pid>\nSTATUS=<status>" (status NULL: none); remembers status. */
void yip_notify_ready(struct yip_notify *n, const char *status);

/* "RELOADING=1\nMONOTONIC_USEC=<CLOCK_MONOTONIC us>". */
void yip_notify_reloading(struct yip_notify *n);

/* "STOPPING=1". */
void yip_notify_stopping(struct yip_notify *n);

/*
 * For the loop's timer at now (monotonic ns): WATCHDOG=1 when due. Returns
 * the monotonic ns of the next ping, or 0 when there is no watchdog.
 */
uint64_t yip_notify_tick(struct yip_notify *n, uint64_t now);

/*
 * Whether a STATUS= may be sent at now (at most once a second); the loop
 * then builds the line and calls yip_notify_status.
 */
bool yip_notify_status_due(const struct yip_notify *n, uint64_t now);

/* STATUS=<status> if it differs from the last one sent; the next may follow 1 s after now. */
void yip_notify_status(struct yip_notify *n, uint64_t now, const char *status);

/* Closes the socket (n becomes a no-op). */
void yip_notify_close(struct yip_notify *n);

#endif
