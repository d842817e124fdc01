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
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
	    cmocka_unit_test(test_drop_to_nobody),
	    cmocka_unit_test(test_unknown_user),
	    cmocka_unit_test(test_protect_locks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
