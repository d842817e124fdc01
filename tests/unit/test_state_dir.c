/*
 * The state directory of a CA-gated node (src/loop/members.c): made 0700
 * when missing and handed to the daemon's user; refused, with
 * "state_dir PATH: what is wrong", when it is a symbolic link, not a
 * directory, writable by group or others, or owned by someone other than
 * root or the daemon's user (whoever can write there could roll the root
 * set or revocation list back).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loop/members.h"

static char base[64], path[128];

/* loop_members_setup for a daemon that runs as uid (gid the same) with
 * state_dir=dir; 0 or -1, err filled. */
static int setup_as(const char *dir, uid_t uid, char *err, size_t errlen)
{
	struct yip_config cfg;
	struct loop_members m;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.has_ca = true;
	cfg.cert_path = "node.crt"; /* not read here */
	cfg.state_dir = (char *)dir;
	err[0] = '\0';
	rc = loop_members_setup(&m, &cfg, uid, (gid_t)uid, err, errlen);
	loop_members_free(&m);
	return rc;
}

static int setup_files(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/yip-test-state-XXXXXX");
	return mkdtemp(base) != NULL ? 0 : -1;
}

static int teardown_files(void **state)
{
	char cmd[96];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void at(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", base, name);
}

/* err is "state_dir PATH: " then what. */
static void says(const char *err, const char *what)
{
	char want[256];

	snprintf(want, sizeof(want), "state_dir %s: %s", path, what);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("wanted '%s...', got '%s'", want, err);
}

static void made_when_missing(void **state)
{
	struct stat st;
	char err[256];

	(void)state;
	at("new");
	assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 077, 0);
	/* Again: it is there now, and fine. */
	assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), 0);
}

static void symlink_refused(void **state)
{
	char err[256], target[128];

	(void)state;
	at("real");
	snprintf(target, sizeof(target), "%s", path);
	assert_int_equal(mkdir(target, 0700), 0);
	at("link");
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), -1);
	says(err, "is a symbolic link");
	/* A link to nowhere is not followed to make a directory there either. */
	at("dangling");
	snprintf(target, sizeof(target), "%s/nowhere", base);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), -1);
	says(err, "is a symbolic link");
	assert_int_equal(access(target, F_OK), -1);
}

static void not_a_directory(void **state)
{
	char err[256];
	int fd;

	(void)state;
	at("file");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), -1);
	says(err, "is not a directory");
}

static void writable_by_others_refused(void **state)
{
	static const mode_t modes[] = {0777, 0770, 0720, 0702, 01777, 0730};
	char err[256], name[32];

	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(name, sizeof(name), "mode-%04o", (unsigned)modes[i]);
		at(name);
		assert_int_equal(mkdir(path, 0700), 0);
		assert_int_equal(chmod(path, modes[i]), 0);
		assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), -1);
		snprintf(name, sizeof(name), "mode %04o", (unsigned)modes[i]);
		says(err, name);
	}
	/* Readable by others is fine: nothing in it is secret. */
	at("mode-0755");
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(setup_as(path, geteuid(), err, sizeof(err)), 0);
}

/* As root: a directory of another user is refused; root's is handed to the
 * daemon's user; the daemon's user's own is fine. */
static void owner_checked(void **state)
{
	struct stat st;
	char err[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	at("foreign");
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, 4242, 4242), 0);
	assert_int_equal(setup_as(path, 65534, err, sizeof(err)), -1);
	says(err, "belongs to uid 4242");
	assert_int_equal(setup_as(path, 4242, err, sizeof(err)), 0);
	at("roots");
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(setup_as(path, 65534, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65534);
	assert_int_equal(st.st_mode & 07777, 0700);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(made_when_missing), cmocka_unit_test(symlink_refused),
	    cmocka_unit_test(not_a_directory),   cmocka_unit_test(writable_by_others_refused),
	    cmocka_unit_test(owner_checked),
	};

	return cmocka_run_group_tests(tests, setup_files, teardown_files);
}
