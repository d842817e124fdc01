/* What the event loops of both daemons (yipd's, yip-rendezvous's) do alike:
 * their signals and the way they log a status. */
#ifndef YIP_POLL_DAEMON_H
#define YIP_POLL_DAEMON_H

#include <stdbool.h>

/* Blocks SIGINT, SIGTERM, SIGUSR1 and SIGHUP and returns a non-blocking
 * signalfd for them, or -1. */
int daemon_signalfd(void);

/*
 * Handles the signals waiting on sigfd: SIGUSR1 calls status(arg), SIGHUP
 * calls reload(arg) (NULL: logged and ignored), SIGINT and SIGTERM are
 * logged and make it return false (the daemon should stop).
 */
bool daemon_signals(int sigfd, void (*status)(void *arg), void (*reload)(void *arg), void *arg);

/* Logs text one line at a time, each as "status: <line>". */
void daemon_log_status(const char *text);

#endif
