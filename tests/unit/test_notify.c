/* Unit tests for poll/notify: NOTIFY_SOCKET forms, the watchdog interval,
 * and the datagrams sent to a real socket. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "poll/notify.h"

static void test_parse(void **state)
{
	struct sockaddr_un sa;
	socklen_t len;
	char longpath[sizeof(sa.sun_path) + 2];

	(void)state;
	assert_int_equal(yip_notify_parse("/run/systemd/notify", &sa, &len), 0);
	assert_string_equal(sa.sun_path, "/run/systemd/notify");
	assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 20);
	assert_int_equal(sa.sun_family, AF_UNIX);

	assert_int_equal(yip_notify_parse("@abc", &sa, &len), 0);
	assert_int_equal(sa.sun_path[0], '\0');
	assert_memory_equal(sa.sun_path + 1, "abc", 3);
	assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 4); /* no NUL after */

	assert_int_equal(yip_notify_parse("relative/path", &sa, &len), -1);
	assert_int_equal(yip_notify_parse("", &sa, &len), -1);
	assert_int_equal(yip_notify_parse("@", &sa, &len), -1);
	assert_int_equal(yip_notify_parse(NULL, &sa, &len), -1);
	/* a path must fit with its NUL; an abstract name fills sun_path */
	memset(longpath, 'a', sizeof(longpath));
	longpath[0] = '/';
	longpath[sizeof(sa.sun_path)] = '\0';
	assert_int_equal(yip_notify_parse(longpath, &sa, &len), -1);
	longpath[sizeof(sa.sun_path) - 1] = '\0';
	assert_int_equal(yip_notify_parse(longpath, &sa, &len), 0);
	longpath[0] = '@';
	longpath[sizeof(sa.sun_path) - 1] = 'a';
	longpath[sizeof(sa.sun_path)] = '\0';
	assert_int_equal(yip_notify_parse(longpath, &sa, &len), 0);
	assert_int_equal(len, sizeof(sa));
	longpath[sizeof(sa.sun_path)] = 'a';
	longpath[sizeof(sa.sun_path) + 1] = '\0';
	assert_int_equal(yip_notify_parse(longpath, &sa, &len), -1);
}

static void test_watchdog(void **state)
{
	(void)state;
	assert_int_equal(yip_notify_watchdog("1000000", NULL, 42), 500000000ULL);
	assert_int_equal(yip_notify_watchdog("1000000", "", 42), 500000000ULL);
	assert_int_equal(yip_notify_watchdog("1000000", "42", 42), 500000000ULL);
	assert_int_equal(yip_notify_watchdog("1000000", "43", 42), 0);
	assert_int_equal(yip_notify_watchdog("1000000", "x", 42), 0);
	assert_int_equal(yip_notify_watchdog(NULL, NULL, 42), 0);
	assert_int_equal(yip_notify_watchdog("0", NULL, 42), 0);
	assert_int_equal(yip_notify_watchdog("-5", NULL, 42), 0);
	assert_int_equal(yip_notify_watchdog("12s", NULL, 42), 0);
	assert_int_equal(yip_notify_watchdog("99999999999999999999999", NULL, 42), 0);
}

static int listener(const char *name)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(yip_notify_parse(name, &sa, &len), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

static void expect(int fd, const char *want_prefix)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	assert_true(n > 0);
	buf[n] = '\0';
	if (strncmp(buf, want_prefix, strlen(want_prefix)) != 0)
		fail_msg("got '%s', want '%s...'", buf, want_prefix);
}

static void nothing(int fd)
{
	char buf[64];

	assert_true(recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0);
}

static void test_send(void **state)
{
	struct yip_notify n;
	char name[64], err[256], ready[64];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@yip-test-notify-%d", (int)getpid());
	fd = listener(name);
	assert_int_equal(yip_notify_open(&n, name, 500000000ULL, err, sizeof(err)), 0);
	assert_true(yip_notify_on(&n));

	snprintf(ready, sizeof(ready), "READY=1\nMAINPID=%d\nSTATUS=1/2 up", (int)getpid());
	yip_notify_ready(&n, "1/2 up");
	expect(fd, ready);
	yip_notify_reloading(&n);
	expect(fd, "RELOADING=1\nMONOTONIC_USEC=");
	yip_notify_stopping(&n);
	expect(fd, "STOPPING=1");

	/* the watchdog: at once, then not before its interval */
	assert_int_equal(yip_notify_tick(&n, 1000), 1000 + 500000000ULL);
	expect(fd, "WATCHDOG=1");
	assert_int_equal(yip_notify_tick(&n, 2000), 1000 + 500000000ULL);
	nothing(fd);
	yip_notify_tick(&n, 1000 + 500000000ULL);
	expect(fd, "WATCHDOG=1");

	/* STATUS: only when it changes, at most once a second, on one line */
	assert_true(yip_notify_status_due(&n, 0));
	yip_notify_status(&n, 10, "1/2 up"); /* what READY said */
	nothing(fd);
	assert_false(yip_notify_status_due(&n, 11));
	assert_true(yip_notify_status_due(&n, 10 + 1000000000ULL));
	yip_notify_status(&n, 10 + 1000000000ULL, "2/2 up\nsecond line");
	expect(fd, "STATUS=2/2 up second line");

	yip_notify_close(&n);
	assert_false(yip_notify_on(&n));
	yip_notify_stopping(&n); /* a no-op now */
	nothing(fd);
	close(fd);
}

static void test_none(void **state)
{
	struct yip_notify n;
	char err[256];

	(void)state;
	assert_int_equal(yip_notify_open(&n, NULL, 0, err, sizeof(err)), 0);
	assert_false(yip_notify_on(&n));
	assert_int_equal(yip_notify_tick(&n, 5), 0);
	yip_notify_ready(&n, "x"); /* no-ops */
	assert_int_equal(yip_notify_open(&n, "", 0, err, sizeof(err)), 0);
	assert_false(yip_notify_on(&n));
	assert_int_equal(yip_notify_open(&n, "not/absolute", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NOTIFY_SOCKET"));
	assert_false(yip_notify_on(&n));
	/* nobody listening there */
	assert_int_equal(yip_notify_open(&n, "@yip-test-nobody-here", 0, err, sizeof(err)), -1);
	assert_false(yip_notify_on(&n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_watchdog),
	    cmocka_unit_test(test_send),
	    cmocka_unit_test(test_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
