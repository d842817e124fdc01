#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "util/log.h"

/* Every daemon, sandboxed. */
#define ALL (SANDBOX_YIPD | SANDBOX_RENDEZVOUS)

/*
 * The allow-list: the system calls the daemons make once set up, found
 * with strace -f on real runs under both drivers (traffic, rekeys every
 * second, yipctl and yip-rendezvous status queries, the relay, host names
 * resolved again over DNS, SIGUSR1, shutdown), and the whole netns suite
 * run with sandbox=log, which logged no call outside it. A call the table
 * does not name kills the process (sandbox=log: is logged by the kernel and
 * allowed). Names are libseccomp's; a name this architecture lacks is
 * skipped, which is why a call is sometimes listed with its other names
 * (epoll_wait is epoll_pwait on arm64; stat, fstat and lstat are newfstatat
 * in glibc on x86-64). Calls whose arguments are checked too are in
 * add_arg_rules.
 */
static const struct {
	const char *name;
	unsigned uses;
} allow[] = {
    /* Memory: malloc and free (glibc's per-thread arenas use mprotect),
     * open_memstream for the status text, sodium_free at exit. mmap and
     * mprotect are in add_arg_rules: never PROT_EXEC. mremap keeps a
     * mapping's protection (it takes none). */
    {"brk", ALL},
    {"munmap", ALL},
    {"mremap", ALL},
    {"madvise", ALL},
    {"munlock", ALL},

    /* The event loop: epoll, the signalfd, the clock (where the vDSO
     * falls back to the system call), signal masks (abort). */
    {"epoll_wait", ALL},
    {"epoll_pwait", ALL},
    {"epoll_ctl", ALL},
    {"read", ALL},
    {"clock_gettime", ALL},
    {"gettimeofday", ALL},
    {"restart_syscall", ALL},
    {"rt_sigreturn", ALL},
    {"rt_sigprocmask", ALL},

    /* io_uring: submitting to and waiting on the ring made before. Not
     * io_uring_setup or io_uring_register: no new ring, no registration;
     * and the ring itself takes only the operations uring.c submits
     * (restrict_ring there), so it cannot reach around this filter. */
    {"io_uring_enter", SANDBOX_URING},

    /* The UDP sockets: batched receives and sends, the GSO fallback
     * (sendmsg), netlink replies of getifaddrs (recvmsg). */
    {"recvmmsg", ALL},
    {"sendmmsg", ALL},
    {"recvmsg", ALL},
    {"sendmsg", ALL},
    {"close", ALL},

    /* Extra sockets for many-ports probing (socket is checked in
     * add_arg_rules), one datagram at a time; this node's addresses for
     * peers behind the same NAT (getifaddrs: a netlink socket). */
    {"bind", SANDBOX_YIPD},
    {"setsockopt", SANDBOX_YIPD | SANDBOX_TCP},
    {"getsockname", SANDBOX_YIPD | SANDBOX_TCP},

    /* TCP: yipd's TLS links (a connect to a tls:// peer or server) and
     * the rendezvous TLS front: connections accepted (accept4, below)
     * and set up (setsockopt), the decoy dialed (socket in add_arg_rules,
     * connect), its bytes relayed (sendto, recvfrom, below) and shut down. */
    {"connect", SANDBOX_RESOLVE | SANDBOX_TCP},
    {"shutdown", SANDBOX_TCP},

    /* The TUN device (read is above) and the log on standard error. */
    {"write", ALL},
    {"writev", ALL},

    /* The control socket: clients (SO_PEERCRED is getsockopt), requests
     * and replies, and the socket file checked and removed at exit. The
     * metrics endpoint (src/ctl/httpd.c; both daemons, listener opened
     * before the sandbox) needs only these and epoll_ctl. */
    {"accept4", ALL},
    {"recvfrom", ALL},
    {"sendto", ALL},
    {"getsockopt", ALL},
    {"newfstatat", ALL},
    {"fstat", ALL},
    {"lstat", ALL},
    {"stat", ALL},
    {"unlinkat", ALL},
    {"unlink", ALL},

    /* Threads: the workers and the resolver wait and wake, and are
     * joined at exit; the process ends. */
    {"futex", ALL},
    {"getpid", ALL},
    {"gettid", ALL},
    {"exit", ALL},
    {"exit_group", ALL},

    /* libsodium's random numbers: session indices, ephemeral keys,
     * relay tokens. */
    {"getrandom", ALL},

    /* Resolving host names again (getaddrinfo, on the resolver thread):
     * files read-only and ioctl FIONREAD (in add_arg_rules), DNS over UDP
     * or TCP to the name servers of resolv.conf. */
    {"poll", SANDBOX_RESOLVE},
    {"ppoll", SANDBOX_RESOLVE},
    {"lseek", SANDBOX_RESOLVE},
    /* glibc reading a resolv.conf that changed: with no search or domain
     * line, the host name's domain is the default (gethostname). */
    {"uname", SANDBOX_RESOLVE},

#ifdef YIP_SANITIZE
    /* ASan and UBSan builds (make debug): the sanitizers' runtime takes
     * its alternate signal stack down at exit and asks who it runs as. */
    {"sigaltstack", ALL},
    {"getresuid", ALL},
    {"getresgid", ALL},
#endif
};

const char *sandbox_mode_name(enum yip_sandbox_mode m)
{
	return m == YIP_SANDBOX_ON ? "on" : m == YIP_SANDBOX_LOG ? "log" : "off";
}

int sandbox_init(struct sandbox *s, enum yip_sandbox_mode mode, const char *user, unsigned uses,
                 char *err, size_t errlen)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int rc;

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->uses = uses;
	s->uid = geteuid();
	s->gid = getegid();
	if (mode == YIP_SANDBOX_OFF)
		return 0;
	if (user == NULL || *user == '\0') {
		rc = getpwnam_r(SANDBOX_OWN_USER, &pw, buf, sizeof(buf), &found);
		user = found != NULL ? SANDBOX_OWN_USER : SANDBOX_DEFAULT_USER;
	}
	snprintf(s->user, sizeof(s->user), "%s", user);
	rc = getpwnam_r(user, &pw, buf, sizeof(buf), &found);
	if (found == NULL) {
		snprintf(err, errlen,
		         "user '%s' %s; create it (useradd --system --no-create-home --shell "
		         "/usr/sbin/nologin %s) or name another with user=",
		         user, rc != 0 ? strerror(rc) : "does not exist", user);
		return -1;
	}
	s->uid = pw.pw_uid;
	s->gid = pw.pw_gid;
	s->drop = pw.pw_uid != geteuid();
	if (s->drop && geteuid() != 0) {
		snprintf(err, errlen, "cannot change to user '%s': not started as root", user);
		return -1;
	}
	return 0;
}

uid_t sandbox_uid(const struct sandbox *s)
{
	return s != NULL ? s->uid : geteuid();
}

/* The user's groups, then gid, then uid, in every thread (glibc applies
 * them process-wide); root's capabilities go with uid 0. */
static int drop_user(const struct sandbox *s, char *err, size_t errlen)
{
	uid_t r, e, saved;

	if (initgroups(s->user, s->gid) != 0 || setresgid(s->gid, s->gid, s->gid) != 0 ||
	    setresuid(s->uid, s->uid, s->uid) != 0) {
		snprintf(err, errlen, "cannot change to user '%s': %s", s->user, strerror(errno));
		return -1;
	}
	/* Proof it cannot be undone. */
	if (getresuid(&r, &e, &saved) != 0 || r != s->uid || e != s->uid || saved != s->uid ||
	    setresuid(0, 0, 0) == 0) {
		snprintf(err, errlen, "changing to user '%s' did not hold", s->user);
		return -1;
	}
	return 0;
}

/* Adds rule (allow) for the call named, if this architecture has it. */
static int add_named(scmp_filter_ctx ctx, const char *name, unsigned n,
                     const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, cmp);
}

/*
 * Open flags (the low 32 bits: the kernel reads an int). A read: O_RDONLY
 * with nothing but these, which glibc's fopen "re", its resolver and NSS
 * files and the daemons' own reads use; not O_CREAT or O_TRUNC (a read-only
 * open may truncate), O_PATH, O_NONBLOCK, O_DIRECTORY, O_TMPFILE...
 */
#define READ_EXTRA    (O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_LARGEFILE)
#define FLAGS_MASK(x) ((scmp_datum_t)(uint32_t) ~(uint32_t)(x))
/* A write: a new file only (O_EXCL: never one that exists, so never
 * /proc/self/mem, a device or a file to truncate), mode 0600; what
 * loop/members.c makes in the state directory, then renames. */
#define WRITE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)

/* Calls allowed only with certain arguments. */
static int add_arg_rules(scmp_filter_ctx ctx, const struct sandbox *s)
{
	static const struct {
		int family;
		unsigned uses;
	} families[] = {
	    /* Extra sockets; DNS; the TLS front's decoy. */
	    {AF_INET, SANDBOX_YIPD | SANDBOX_RESOLVE | SANDBOX_TCP},
	    {AF_INET6, SANDBOX_YIPD | SANDBOX_RESOLVE | SANDBOX_TCP},
	    /* getifaddrs. */
	    {AF_NETLINK, SANDBOX_YIPD},
	    /* nscd, which getaddrinfo asks first. */
	    {AF_UNIX, SANDBOX_RESOLVE},
	};
	/* Memory that is never executable (W^X, as OpenSSH has it): code can
	 * neither be mapped nor made from data. mmap2 where it exists. */
	const struct scmp_arg_cmp no_exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	int rc = 0;

	rc = add_named(ctx, "mmap", 1, &no_exec);
	if (rc == 0)
		rc = add_named(ctx, "mmap2", 1, &no_exec);
	if (rc == 0)
		rc = add_named(ctx, "mprotect", 1, &no_exec);
	/* New sockets, of these families only. */
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]) && rc == 0; i++)
		if (families[i].uses & s->uses)
			rc = seccomp_rule_add(
			    ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
			    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i].family, 0));
	/* Signals to this process only (abort raises SIGABRT in itself). */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		                      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid(), 0));
	if (rc != 0 || !(s->uses & (SANDBOX_RESOLVE | SANDBOX_MEMBERS | SANDBOX_READ)))
		return rc;
	/* Files, to read only: hosts, resolv.conf, nsswitch.conf, gai.conf; a
	 * member's certificate, root set and revocation list, the rendezvous
	 * server's revocation list (SIGHUP). openat only: glibc's open is
	 * openat(AT_FDCWD) on Linux. The path is not the filter's to see: what
	 * may be read is what the daemon's user may read. */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
	                      SCMP_A2(SCMP_CMP_MASKED_EQ, FLAGS_MASK(READ_EXTRA), O_RDONLY));
	/* The state directory: a new file written, synced and renamed over the
	 * old (loop/members.c), which removes a stale one first. */
	if (rc == 0 && (s->uses & SANDBOX_MEMBERS))
		rc = seccomp_rule_add(
		    ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 2,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, FLAGS_MASK(O_LARGEFILE), WRITE_FLAGS),
		    SCMP_A3(SCMP_CMP_MASKED_EQ, 07777, 0600));
	if (rc == 0 && (s->uses & SANDBOX_MEMBERS))
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(renameat), 0);
	/* renameat where there is none (arm64), with no flags (no exchange, no whiteout). */
	if (rc == 0 && (s->uses & SANDBOX_MEMBERS)) {
		const struct scmp_arg_cmp no_flags = SCMP_A4(SCMP_CMP_EQ, 0, 0);

		rc = add_named(ctx, "renameat2", 1, &no_flags);
	}
	if (rc == 0 && (s->uses & SANDBOX_MEMBERS))
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fsync), 0);
	if (rc != 0 || !(s->uses & SANDBOX_RESOLVE))
		return rc;
	/* How long the name server's answer is. */
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
	                        SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)FIONREAD, 0));
}

static int install_filter(const struct sandbox *s, char *err, size_t errlen)
{
	uint32_t deflt = s->mode == YIP_SANDBOX_LOG ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS;
	scmp_filter_ctx ctx = seccomp_init(deflt);
	int rc;

	if (ctx == NULL) {
		snprintf(err, errlen, "seccomp: cannot set up a filter");
		return -1;
	}
	/* All threads (the workers exist already), and no_new_privs with it. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	for (size_t i = 0; i < sizeof(allow) / sizeof(allow[0]) && rc == 0; i++) {
		int nr;

		if (!(allow[i].uses & s->uses))
			continue;
		nr = seccomp_syscall_resolve_name(allow[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a system call on this architecture */
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	}
	if (rc == 0)
		rc = add_arg_rules(ctx, s);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		snprintf(err, errlen, "seccomp: cannot install the filter: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

int sandbox_enter(const struct sandbox *s, char *err, size_t errlen)
{
	if (s == NULL || s->mode == YIP_SANDBOX_OFF)
		return 0;
	if (s->drop && drop_user(s, err, errlen) != 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		snprintf(err, errlen, "no_new_privs: %s", strerror(errno));
		return -1;
	}
	/* Changing uid resets it to the fs.suid_dumpable default: set it again. */
	sandbox_nodump();
	/* The log's strftime reads /etc/localtime the first time: now, not
	 * under the filter. */
	tzset();
	if (install_filter(s, err, errlen) != 0)
		return -1;
	log_info("sandbox %s: running as %s (uid %u, gid %u)%s, no_new_privs, seccomp allow-list",
	         sandbox_mode_name(s->mode), s->user, (unsigned)s->uid, (unsigned)s->gid,
	         s->drop ? " with no capabilities" : ", as started");
	return 0;
}

void sandbox_nodump(void)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		log_warn("cannot turn core dumps off: %s", strerror(errno));
}

void sandbox_protect(const void *p, size_t len)
{
	static bool warned_lock, warned_dump;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start, end;

	if (p == NULL || len == 0 || page <= 0)
		return;
	start = (uintptr_t)p & ~((uintptr_t)page - 1);
	end = ((uintptr_t)p + len + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	if (madvise((void *)start, end - start, MADV_DONTDUMP) != 0 && !warned_dump) {
		warned_dump = true;
		log_warn("cannot keep key material out of core dumps: %s", strerror(errno));
	}
	if (mlock((void *)start, end - start) != 0 && !warned_lock) {
		warned_lock = true;
		log_warn("cannot lock %zu bytes of key material in memory (%s); it may be "
		         "swapped out",
		         (size_t)(end - start), strerror(errno));
	}
}

void *sandbox_key_memory(size_t len)
{
	void *m;

	if (len == 0)
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
	         0);
	if (m == MAP_FAILED)
		return NULL;
	if (madvise(m, len, MADV_DONTDUMP) != 0)
		log_warn("cannot keep key memory out of core dumps: %s", strerror(errno));
	/* Locked as each page is first touched: only what is used is resident. */
	if (mlock2(m, len, MLOCK_ONFAULT) != 0)
		log_warn("cannot lock %zu bytes of key memory (%s); keys may be swapped out", len,
		         strerror(errno));
	return m;
}

void sandbox_key_memory_free(void *mem, size_t len)
{
	if (mem != NULL)
		munmap(mem, len);
}

void sandbox_check_secret_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || (st.st_mode & (S_IRWXG | S_IRWXO)) == 0)
		return;
	log_warn("%s holds a private key, and its mode %04o lets %s at it; chmod 600 %s", path,
	         (unsigned)(st.st_mode & 07777),
	         (st.st_mode & S_IRWXO) ? "every user" : "its group", path);
}

/*
 * What yipd's privileged half (src/privsep) may do once set up: wait for a
 * request on its socket pair and answer it, open the configuration file to
 * read, talk rtnetlink on the socket it opened before, log, and exit.
 */
static const char *const privileged_allow[] = {
    "read",         "recvmsg",         "sendmsg",       "recvfrom",     "sendto",
    "write",        "writev",          "close",         "fstat",        "newfstatat",
    "brk",          "munmap",          "clock_gettime", "gettimeofday", "getpid",
    "rt_sigreturn", "restart_syscall", "exit",          "exit_group",   "futex",
#ifdef YIP_SANITIZE
    "sigaltstack",  "getresuid",       "getresgid",     "madvise",      "mremap",
#endif
};

/* Keeps the capabilities in keep (a mask of CAP_* bits below 32) and no others, ever. */
static int keep_caps(uint32_t keep, char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};

	/* Only what we hold can be kept (a unit's CapabilityBoundingSet may lack some). */
	if (syscall(SYS_capget, &hdr, data) != 0) {
		snprintf(err, errlen, "capget: %s", strerror(errno));
		return -1;
	}
	keep &= data[0].permitted;
	/* Out of the bounding set too, where we may (CAP_SETPCAP; a service
	 * manager may have taken it): with no_new_privs and no execve allowed,
	 * the effective and permitted sets below are what counts. */
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (!(c < 32 && (keep & (1u << c))) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 &&
		    errno != EINVAL && errno != EPERM) {
			snprintf(err, errlen, "cannot drop capability %d: %s", c, strerror(errno));
			return -1;
		}
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = keep;
	if (syscall(SYS_capset, &hdr, data) != 0) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int sandbox_enter_privileged(enum yip_sandbox_mode mode, char *err, size_t errlen)
{
	uint32_t deflt = mode == YIP_SANDBOX_LOG ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS;
	const struct scmp_arg_cmp no_exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	scmp_filter_ctx ctx;
	int rc;

	if (mode == YIP_SANDBOX_OFF)
		return 0;
	if (keep_caps(1u << CAP_NET_ADMIN | 1u << CAP_DAC_READ_SEARCH, err, errlen) != 0)
		return -1;
	tzset();
	ctx = seccomp_init(deflt);
	if (ctx == NULL) {
		snprintf(err, errlen, "seccomp: cannot set up a filter");
		return -1;
	}
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	for (size_t i = 0; i < sizeof(privileged_allow) / sizeof(privileged_allow[0]) && rc == 0;
	     i++)
		rc = add_named(ctx, privileged_allow[i], 0, NULL);
	if (rc == 0)
		rc = add_named(ctx, "mmap", 1, &no_exec);
	/* The configuration file, to read only (as the daemon's own reads). */
	if (rc == 0)
		rc =
		    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
		                     SCMP_A2(SCMP_CMP_MASKED_EQ, FLAGS_MASK(READ_EXTRA), O_RDONLY));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		                      SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid(), 0));
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		snprintf(err, errlen, "seccomp: cannot install the filter: %s", strerror(-rc));
		return -1;
	}
	return 0;
}
