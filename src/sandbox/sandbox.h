/*
 * The daemons' sandbox (docs/security.md). yipd and yip-rendezvous set up
 * as root: the device, its addresses and routes, the sockets, the control
 * socket, the worker threads and the io_uring ring. Then sandbox_enter
 * drops them to an unprivileged user (every thread, with every capability
 * gone), sets no_new_privs, and installs a seccomp allow-list of the
 * system calls they make from then on; anything else kills the process
 * (or, with sandbox=log, is only logged by the kernel). Key material is
 * kept out of core dumps and swap (sandbox_protect, sandbox_key_memory,
 * sandbox_nodump).
 */
#ifndef YIP_SANDBOX_SANDBOX_H
#define YIP_SANDBOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"

/* Without user=: the package's own system user if the host has one, else nobody. */
#define SANDBOX_OWN_USER     "yip"
#define SANDBOX_DEFAULT_USER "nobody"

/* What a daemon does once sandboxed; each adds its system calls to the allow-list. */
enum {
	SANDBOX_YIPD = 1u << 0,       /* yipd's loop: TUN, UDP, extra sockets, control socket */
	SANDBOX_URING = 1u << 1,      /* io=uring, io=uring-busy */
	SANDBOX_RESOLVE = 1u << 2,    /* re-resolving host names (getaddrinfo) */
	SANDBOX_RENDEZVOUS = 1u << 3, /* yip-rendezvous's loop */
	SANDBOX_MEMBERS = 1u << 4,    /* SIGHUP reads membership files; state_dir is written */
	SANDBOX_READ = 1u << 5,       /* SIGHUP reads files again (read-only) */
	SANDBOX_TCP = 1u << 6, /* TLS over TCP: yipd's links, the rendezvous front and its decoy */
};

struct sandbox {
	enum yip_sandbox_mode mode;
	bool drop; /* change to uid and gid (false: the user is root) */
	uid_t uid; /* who the daemon runs as once sandboxed */
	gid_t gid;
	char user[64]; /* that user's name */
	unsigned uses; /* SANDBOX_* */
};

/*
 * Prepares s: looks user up (NULL: SANDBOX_OWN_USER if it exists, else
 * SANDBOX_DEFAULT_USER) so that a name
 * that does not exist is an error before anything is set up. With mode
 * off nothing is looked up and the daemon keeps running as it started.
 * Returns 0, or -1 with a message in err.
 */
int sandbox_init(struct sandbox *s, enum yip_sandbox_mode mode, const char *user, unsigned uses,
                 char *err, size_t errlen);

/* The uid the daemon runs as once sandboxed (its current one if it will not change). */
uid_t sandbox_uid(const struct sandbox *s);

/*
 * Enters the sandbox, in every thread of the process: the user's groups,
 * gid and uid (all capabilities go with root), no_new_privs, not dumpable,
 * and the seccomp allow-list for s->uses. Does nothing with mode off or
 * s NULL. Returns 0, or -1 with a message in err (the daemon must stop:
 * it may be half way).
 */
int sandbox_enter(const struct sandbox *s, char *err, size_t errlen);

/*
 * For yipd's privileged half (src/privsep), which stays root to open the
 * configuration file and change its device's routes: every capability
 * but CAP_NET_ADMIN and CAP_DAC_READ_SEARCH gone for good (bounding set
 * too), no_new_privs, and a seccomp allow-list of the few calls it makes.
 * Nothing with mode off. 0, or -1 with a message in err.
 */
int sandbox_enter_privileged(enum yip_sandbox_mode mode, char *err, size_t errlen);

/* Core dumps off and /proc/self and ptrace closed to non-root (PR_SET_DUMPABLE 0). */
void sandbox_nodump(void);

/*
 * Keeps len bytes at p (key material) out of core dumps (MADV_DONTDUMP) and
 * out of swap (mlock), for the whole pages they span. Best effort: a
 * failure is logged once and the daemon goes on.
 */
void sandbox_protect(const void *p, size_t len);

/*
 * len bytes of memory for key material that is mostly never used (the
 * engine's key slots): out of core dumps, and locked in RAM page by page
 * as it is first touched (mlock2 MLOCK_ONFAULT), so pages never used take
 * no RAM. Called before sandbox_enter (locking needs the privilege or the
 * limit then). NULL if it cannot be mapped; a failure to lock is logged
 * once and the memory is used anyway. sandbox_key_memory_free unmaps it.
 */
void *sandbox_key_memory(size_t len);
void sandbox_key_memory_free(void *mem, size_t len);

/* Warns if the file at path, which holds a private key, is open to other users. */
void sandbox_check_secret_file(const char *path);

/* "on", "log", "off". */
const char *sandbox_mode_name(enum yip_sandbox_mode m);

#endif
