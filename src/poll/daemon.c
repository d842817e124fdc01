#include "poll/daemon.h"

#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/log.h"

int daemon_signalfd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

bool daemon_signals(int sigfd, void (*status)(void *arg), void (*reload)(void *arg), void *arg)
{
	struct signalfd_siginfo si;

	while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			status(arg);
		} else if (si.ssi_signo == SIGHUP && reload != NULL) {
			reload(arg);
		} else if (si.ssi_signo == SIGHUP) {
			log_info("SIGHUP: configuration reload is not supported yet; ignoring");
		} else {
			log_info("signal %u: shutting down", si.ssi_signo);
			return false;
		}
	}
	return true;
}

void daemon_log_status(const char *text)
{
	for (const char *line = text, *end; *line != '\0'; line = end + (*end != '\0')) {
		end = line + strcspn(line, "\n");
		log_info("status: %.*s", (int)(end - line), line);
	}
}
