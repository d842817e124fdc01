/*
 * The sandbox (src/sandbox), each case in a child process: a call the
 * allow-list lacks kills the process with SIGSYS, one it has works, a call
 * allowed only with some arguments is killed with others, sandbox=log lets
 * everything through, and sandbox=off installs nothing. As root, the drop
 * to nobody leaves no capability and cannot be undone. sandbox_protect
 * locks memory; an unknown user is an error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

/* Runs fn in a child sandboxed as (mode, uses), staying the same user;
 * returns the child's wait status. */
static int in_child(enum yip_sandbox_mode mode, unsigned uses, const char *user, int (*fn)(void))
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct sandbox s;
		char err[256];
		struct passwd *me = getpwuid(geteuid());

		if (sandbox_init(&s, mode, user ? user : me->pw_name, uses, err, sizeof(err)) !=
		        0 ||
		    sandbox_enter(&s, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			_exit(99);
		}
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static bool killed_by_filter(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}

static bool exited(int status, int code)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static int call_getppid(void)
{
	return syscall(SYS_getppid) > 0 ? 0 : 1;
}

static int call_write(void)
{
	return write(STDERR_FILENO, "", 0) == 0 ? 0 : 1;
}

static int call_execve(void)
{
	char *argv[] = {"true", NULL};

	execve("/bin/true", argv, NULL);
	return 2;
}

static int unix_socket(void)
{
	return socket(AF_UNIX, SOCK_DGRAM, 0) >= 0 ? 0 : 1;
}

static int inet_socket(void)
{
	return socket(AF_INET, SOCK_DGRAM, 0) >= 0 ? 0 : 1;
}

static int open_read(void)
{
	return open("/etc/hosts", O_RDONLY | O_CLOEXEC) >= 0 ? 0 : 1;
}

static int open_write(void)
{
	open("/dev/null", O_WRONLY | O_CLOEXEC);
	return 3;
}

/* Memory: read and write, yes; executable, never (mmap or mprotect). */
static int map_rw(void)
{
	uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 1;
	m[0] = 1;
	return mprotect(m, 4096, PROT_READ) == 0 && munmap(m, 4096) == 0 ? 0 : 1;
}

static int map_exec(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m != MAP_FAILED ? 0 : 1;
}

static int protect_exec(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 1;
	return mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0 ? 0 : 1;
}

static int protect_wx(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 1;
	return mprotect(m, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) == 0 ? 0 : 1;
}

/* A directory of the test's, for files the children make. */
static char scratch[64];

static void scratch_file(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", scratch, name);
}

/* What the daemon writes in its state directory: a new file, 0600. */
static int create_new(void)
{
	char path[128];
	int fd;

	scratch_file(path, sizeof(path), "new");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd >= 0 && write(fd, "x", 1) == 1 && close(fd) == 0 ? 0 : 1;
}

static int create_new_0644(void)
{
	char path[128];

	scratch_file(path, sizeof(path), "new-0644");
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) >= 0 ? 0 : 1;
}

/* An existing file opened for writing (truncated), which O_EXCL would refuse. */
static int truncate_existing(void)
{
	char path[128];

	scratch_file(path, sizeof(path), "old");
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) >= 0 ? 0 : 1;
}

/* The process's own memory, for writing: code patched through it would need
 * no executable mapping. (Root may open it; a dropped user may not.) */
static int open_own_memory(void)
{
	return open("/proc/self/mem", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) >= 0 ? 0 : 1;
}

static int open_read_nonblock(void)
{
	return open("/etc/hosts", O_RDONLY | O_NONBLOCK | O_CLOEXEC) >= 0 ? 0 : 1;
}

static int open_path_only(void)
{
	return open("/etc/hosts", O_PATH | O_CLOEXEC) >= 0 ? 0 : 1;
}

static int open_read_nofollow(void)
{
	return open("/etc/hosts", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY) >= 0 ? 0 : 1;
}

/* open(2) itself, which glibc never calls (open is openat(AT_FDCWD)). */
static int sys_open_read(void)
{
#ifdef SYS_open
	return syscall(SYS_open, "/etc/hosts", O_RDONLY | O_CLOEXEC) >= 0 ? 0 : 1;
#else
	return 4; /* no such call here */
#endif
}

static int status_fields(void)
{
	char line[256];
	int ok = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return 1;
	while (fgets(line, sizeof(line), f) != NULL) {
		ok += strcmp(line, "NoNewPrivs:\t1\n") == 0;
		ok += strcmp(line, "Seccomp:\t2\n") == 0;
	}
	fclose(f);
	return ok == 2 ? 0 : 1;
}

static void test_kills_what_is_not_listed(void **state)
{
	(void)state;
	assert_true(exited(
	    in_child(YIP_SANDBOX_ON, SANDBOX_YIPD | SANDBOX_RESOLVE, NULL, status_fields), 0));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, call_getppid)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, call_execve)));
	assert_true(exited(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, call_write), 0));
	/* getppid is not in the list, but sandbox=log only logs it. */
	assert_true(exited(in_child(YIP_SANDBOX_LOG, SANDBOX_YIPD, NULL, call_getppid), 0));
	/* sandbox=off: no filter at all. */
	assert_true(exited(in_child(YIP_SANDBOX_OFF, SANDBOX_YIPD, NULL, call_getppid), 0));
}

static void test_arguments_checked(void **state)
{
	(void)state;
	/* yipd opens UDP sockets; a Unix socket only with name resolution (nscd). */
	assert_true(exited(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, inet_socket), 0));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, unix_socket)));
	assert_true(
	    exited(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD | SANDBOX_RESOLVE, NULL, unix_socket), 0));
	/* yip-rendezvous opens no socket once running. */
	assert_true(
	    killed_by_filter(in_child(YIP_SANDBOX_ON, SANDBOX_RENDEZVOUS, NULL, inet_socket)));
	/* Files: read-only, and only to resolve names. */
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, open_read)));
	assert_true(
	    exited(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD | SANDBOX_RESOLVE, NULL, open_read), 0));
	assert_true(killed_by_filter(
	    in_child(YIP_SANDBOX_ON, SANDBOX_YIPD | SANDBOX_RESOLVE, NULL, open_write)));
}

/* No memory is ever made executable once sandboxed, whatever the daemon
 * does: mmap and mprotect with PROT_EXEC kill the process (W^X, as
 * OpenSSH's sandbox has it). */
static void test_no_executable_memory(void **state)
{
	const unsigned every = SANDBOX_YIPD | SANDBOX_URING | SANDBOX_RESOLVE | SANDBOX_MEMBERS;

	(void)state;
	assert_true(exited(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, map_rw), 0));
	assert_true(exited(in_child(YIP_SANDBOX_ON, SANDBOX_RENDEZVOUS, NULL, map_rw), 0));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD, NULL, map_exec)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, every, NULL, map_exec)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, every, NULL, protect_exec)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, every, NULL, protect_wx)));
	assert_true(killed_by_filter(
	    in_child(YIP_SANDBOX_ON, SANDBOX_RENDEZVOUS | SANDBOX_READ, NULL, map_exec)));
	assert_true(killed_by_filter(
	    in_child(YIP_SANDBOX_ON, SANDBOX_RENDEZVOUS | SANDBOX_READ, NULL, protect_exec)));
	/* sandbox=log logs it and lets it through, like any call refused. */
	assert_true(exited(in_child(YIP_SANDBOX_LOG, SANDBOX_YIPD, NULL, map_exec), 0));
}

/* Files once sandboxed: read-only opens with no flag but O_CLOEXEC,
 * O_NOFOLLOW and O_NOCTTY; and, for the state directory, only new files
 * (O_CREAT | O_EXCL), mode 0600, so no file that exists can be opened for
 * writing (not /proc/self/mem, not one to truncate). */
static void test_files_narrowed(void **state)
{
	const unsigned members = SANDBOX_YIPD | SANDBOX_MEMBERS;
	char path[128];
	int fd;

	(void)state;
	snprintf(scratch, sizeof(scratch), "/tmp/yip-test-sandbox-XXXXXX");
	assert_non_null(mkdtemp(scratch));
	scratch_file(path, sizeof(path), "old");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && write(fd, "old", 3) == 3 && close(fd) == 0);

	assert_true(exited(in_child(YIP_SANDBOX_ON, members, NULL, open_read), 0));
	assert_true(exited(in_child(YIP_SANDBOX_ON, members, NULL, open_read_nofollow), 0));
	assert_true(exited(in_child(YIP_SANDBOX_ON, members, NULL, create_new), 0));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, members, NULL, create_new_0644)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, members, NULL, truncate_existing)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, members, NULL, open_own_memory)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, members, NULL, open_read_nonblock)));
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, members, NULL, open_path_only)));
	assert_true(killed_by_filter(
	    in_child(YIP_SANDBOX_ON, SANDBOX_RENDEZVOUS | SANDBOX_READ, NULL, open_read_nonblock)));
	/* Without the state directory, no file is written at all. */
	assert_true(killed_by_filter(
	    in_child(YIP_SANDBOX_ON, SANDBOX_YIPD | SANDBOX_RESOLVE, NULL, create_new)));
#ifdef SYS_open
	assert_true(killed_by_filter(in_child(YIP_SANDBOX_ON, members, NULL, sys_open_read)));
#endif
	/* What was made, and that the old file is untouched. */
	{
		struct stat st;

		scratch_file(path, sizeof(path), "new");
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
		unlink(path);
		scratch_file(path, sizeof(path), "old");
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, 3);
		unlink(path);
	}
	rmdir(scratch);
}

/* getaddrinfo of a name that is in no hosts file: 0 if it returned. */
static int lookup(void)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *res = NULL;

	if (getaddrinfo("nothing.yip.test", NULL, &hints, &res) == 0)
		freeaddrinfo(res);
	return 0;
}

/*
 * resolv.conf edited while the daemon runs (DHCP, an administrator): the
 * next lookup makes glibc read it again, and with no search or domain line
 * it asks for the host name (uname) to find its own domain. As root, in a
 * mount and network namespace of the child's own, with a resolv.conf of
 * the test's bound over /etc/resolv.conf.
 */
static void test_resolv_conf_changed(void **state)
{
	char conf[128];
	int go[2], ready[2], status;
	pid_t pid;
	FILE *f;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(scratch, sizeof(scratch), "/tmp/yip-test-sandbox-XXXXXX");
	assert_non_null(mkdtemp(scratch));
	scratch_file(conf, sizeof(conf), "resolv.conf");
	f = fopen(conf, "we");
	assert_non_null(f);
	fprintf(f, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
	fclose(f);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sandbox s;
		char err[256], c;
		struct passwd *me = getpwuid(geteuid());

		if (unshare(CLONE_NEWNS | CLONE_NEWNET) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount(conf, "/etc/resolv.conf", NULL, MS_BIND, NULL) != 0)
			_exit(98);
		lookup(); /* resolv.conf read, as at start */
		if (sandbox_init(&s, YIP_SANDBOX_ON, me->pw_name, SANDBOX_YIPD | SANDBOX_RESOLVE,
		                 err, sizeof(err)) != 0 ||
		    sandbox_enter(&s, err, sizeof(err)) != 0)
			_exit(99);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(97);
		_exit(lookup());
	}
	{
		char c;

		assert_int_equal(read(ready[0], &c, 1), 1);
	}
	f = fopen(conf, "ae");
	assert_non_null(f);
	fprintf(f, "nameserver 127.0.0.2\n");
	fclose(f);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	unlink(conf);
	rmdir(scratch);
	assert_true(exited(status, 0));
}

/* Checked in /proc/self/status: the calls that would ask are not allowed. */
static int dropped(void)
{
	char line[256];
	int ok = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return 1;
	while (fgets(line, sizeof(line), f) != NULL) {
		ok += strcmp(line, "Uid:\t65534\t65534\t65534\t65534\n") == 0;
		ok += strcmp(line, "CapEff:\t0000000000000000\n") == 0;
		ok += strcmp(line, "CapPrm:\t0000000000000000\n") == 0;
		ok += strcmp(line, "NoNewPrivs:\t1\n") == 0;
	}
	fclose(f);
	return ok == 4 ? 0 : 2;
}

static void test_drop_to_nobody(void **state)
{
	struct passwd *nobody = getpwnam("nobody");

	if (geteuid() != 0 || nobody == NULL || nobody->pw_uid != 65534)
		skip();
	(void)state;
	/* Files may be read with SANDBOX_RESOLVE: /proc/self/status is read so. */
	assert_true(
	    exited(in_child(YIP_SANDBOX_ON, SANDBOX_YIPD | SANDBOX_RESOLVE, "nobody", dropped), 0));
}

static void test_unknown_user(void **state)
{
	struct sandbox s;
	char err[256];

	(void)state;
	assert_int_equal(
	    sandbox_init(&s, YIP_SANDBOX_ON, "yip-no-such-user", SANDBOX_YIPD, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "user 'yip-no-such-user' does not exist"));
	/* Off: nothing is looked up. */
	assert_int_equal(
	    sandbox_init(&s, YIP_SANDBOX_OFF, "yip-no-such-user", SANDBOX_YIPD, err, sizeof(err)),
	    0);
	assert_int_equal(sandbox_uid(&s), geteuid());
}

static long vm_locked_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void test_protect_locks(void **state)
{
	static uint8_t keys[3 * 4096];
	long before = vm_locked_kb();

	(void)state;
#ifdef YIP_SANITIZE
	skip(); /* ASan's mlock does nothing (it would lock the shadow memory too) */
#endif
	sandbox_protect(keys + 100, 5000);
	/* The pages the region spans: two of them, at least. */
	assert_true(vm_locked_kb() >= before + 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kills_what_is_not_listed),
	    cmocka_unit_test(test_arguments_checked),
	    cmocka_unit_test(test_no_executable_memory),
	    cmocka_unit_test(test_files_narrowed),
	    cmocka_unit_test(test_resolv_conf_changed),
	    cmocka_unit_test(test_drop_to_nobody),
	    cmocka_unit_test(test_unknown_user),
	    cmocka_unit_test(test_protect_locks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
