/* The daemon's side of a CA-gated network: files and the state directory (members.h). */
#include "loop/members.h"

#include <errno.h>
#include <sodium.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "membership/member.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/log.h"

#define FILE_MAX (1u << 20) /* the largest object's text form is well under this */

static const char *const STATE_ROOTS = "roots";
static const char *const STATE_REVOCATIONS = "revocations";
static const char *const STATE_RECORDS = "records"; /* member records, one after another */

/* Reads the object of kind `want` from the text file at path (relative to
 * dirfd, or AT_FDCWD) into a heap buffer *out of *len bytes. 0; -1 with a
 * message in err; -2 if the file does not exist. */
static int read_object(int dirfd, const char *path, uint8_t want, uint8_t **out, size_t *len,
                       char *err, size_t errlen)
{
	char *text = NULL, why[160];
	size_t n = 0, cap = WIRE_OBJ_MAX;
	/* In the state directory, not through a symbolic link. */
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | (dirfd != AT_FDCWD ? O_NOFOLLOW : 0)),
	    rc = -1, got;

	*out = NULL;
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return errno == ENOENT ? -2 : -1;
	}
	got = yip_read_fd(fd, FILE_MAX, &text, &n);
	*out = malloc(cap);
	if (got == -EFBIG) {
		snprintf(err, errlen, "%s: larger than %u bytes", path, FILE_MAX);
		goto done;
	}
	if (got == -ENOMEM || *out == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto done;
	}
	if (got != 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-got));
		goto done;
	}
	if (member_unarmor(text, n, want, *out, cap, len, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		goto done;
	}
	rc = 0;
done:
	close(fd);
	free(text);
	if (rc != 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * Writes len bytes of text to name in the state directory: a new file
 * name.new (a stale one, left by a crash, removed first), synced, and
 * renamed over the old, so a reader never sees half a file. The file is
 * always new (O_EXCL; the sandbox allows no other open for writing) and
 * no symbolic link is followed. 0, or -1 with errno set.
 */
static int save_file(struct loop_members *m, const char *name, const char *text, size_t len)
{
	char tmp[64];
	int fd, saved;

	snprintf(tmp, sizeof(tmp), "%s.new", name);
	if (unlinkat(m->dirfd, tmp, 0) != 0 && errno != ENOENT)
		return -1;
	fd = openat(m->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	errno = 0; /* a short write sets none */
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0) {
		saved = errno != 0 ? errno : EIO;
		close(fd);
		unlinkat(m->dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	if (close(fd) != 0 || renameat(m->dirfd, tmp, m->dirfd, name) != 0) {
		saved = errno;
		unlinkat(m->dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

/* Writes obj's text form to name in the state directory. */
static int save_object(struct loop_members *m, const char *name, const uint8_t *obj, size_t len)
{
	size_t cap = member_armor_size(len), n;
	char *text = malloc(cap);
	int rc = -1;

	if (text == NULL)
		return -1;
	n = member_armor(text, cap, obj, len);
	errno = 0;
	if (n > 0)
		rc = save_file(m, name, text, n);
	if (rc != 0)
		log_warn("state_dir %s: cannot save %s: %s", m->state_dir, name,
		         errno != 0 ? strerror(errno) : "cannot write its text form");
	free(text);
	return rc;
}

/* Keeps what the engine holds now in the state directory, if it is newer. */
static void save_state(struct loop_members *m, struct yip_device *dev)
{
	const struct member_roots *r = yip_device_roots(dev);
	const struct member_revocations *v = yip_device_revocations(dev);

	if (r != NULL && r->f.serial != m->saved_roots &&
	    save_object(m, STATE_ROOTS, r->raw, r->len) == 0)
		m->saved_roots = r->f.serial;
	if (v != NULL && v->f.serial != m->saved_revocations &&
	    save_object(m, STATE_REVOCATIONS, v->raw, v->len) == 0)
		m->saved_revocations = v->f.serial;
}

/* Offers one root set or revocation list file to the engine; logs what happened. */
static void offer(struct loop_members *m, struct yip_device *dev, int dirfd, const char *path,
                  uint8_t kind, bool saved)
{
	const char *what = kind == WIRE_OBJ_ROOTS ? "root set" : "revocation list";
	char err[256];
	uint8_t *obj;
	size_t len;
	enum member_verdict v;
	int rc = read_object(dirfd, path, kind, &obj, &len, err, sizeof(err));

	if (rc == -2 && saved)
		return; /* nothing saved yet */
	if (rc != 0) {
		log_warn("%s%s: %s", saved ? "state_dir " : "", what, err);
		return;
	}
	v = kind == WIRE_OBJ_ROOTS ? yip_device_offer_roots(dev, yip_now_mono(), obj, len)
	                           : yip_device_offer_revocations(dev, yip_now_mono(), obj, len);
	if (v == MEMBER_OLDER)
		log_warn("%s %s refused: older than the one held (serial %llu): a rollback", what,
		         path,
		         (unsigned long long)(kind == WIRE_OBJ_ROOTS
		                                  ? yip_device_roots(dev)->f.serial
		                                  : yip_device_revocations(dev)->f.serial));
	else if (v != MEMBER_OK)
		log_warn("%s %s refused: %s: %s", what, path, member_verdict_name(v),
		         member_verdict_text(v));
	else if (saved && kind == WIRE_OBJ_ROOTS)
		m->saved_roots = yip_device_roots(dev)->f.serial;
	else if (saved)
		m->saved_revocations = yip_device_revocations(dev)->f.serial;
	free(obj);
}

/* Warns when our certificate expires within MEMBERS_WARN_S. */
static void check_expiry(struct yip_device *dev)
{
	struct yip_members_info mi;
	uint64_t now = yip_now_wall() / YIP_NS_PER_S;
	char when[MEMBER_TIME_LEN];

	if (!yip_device_members_info(dev, &mi))
		return;
	member_format_time(when, mi.cert->f.not_after);
	if (mi.cert->f.not_after <= now + MEMBERS_WARN_S)
		log_warn(
		    "this node's certificate expires %s (%llu days): renew it (yip-ca sign-cert) "
		    "and send SIGHUP",
		    when,
		    (unsigned long long)(mi.cert->f.not_after > now
		                             ? (mi.cert->f.not_after - now) / 86400
		                             : 0));
}

static int load_cert(struct loop_members *m, struct yip_device *dev, bool first, char *err,
                     size_t errlen)
{
	char why[256];
	uint8_t *obj;
	size_t len;
	int rc;

	if (read_object(AT_FDCWD, m->cert_path, WIRE_OBJ_CERT, &obj, &len, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "cert %s", why);
		return -1;
	}
	rc = first ? yip_device_members_init(dev, m->ca, obj, len, why, sizeof(why))
	           : yip_device_renew_cert(dev, obj, len, why, sizeof(why));
	if (rc > 0)
		log_err("cert %s: %s; members will refuse this node until it is replaced",
		        m->cert_path, why);
	else if (rc < 0)
		snprintf(err, errlen, "cert %s: %s", m->cert_path, why);
	free(obj);
	return rc < 0 ? -1 : 0;
}

static void load_lists(struct loop_members *m, struct yip_device *dev)
{
	/* What the state directory holds first: a file older than that is a rollback. */
	offer(m, dev, m->dirfd, STATE_ROOTS, WIRE_OBJ_ROOTS, true);
	if (m->roots_path != NULL)
		offer(m, dev, AT_FDCWD, m->roots_path, WIRE_OBJ_ROOTS, false);
	offer(m, dev, m->dirfd, STATE_REVOCATIONS, WIRE_OBJ_REVOCATIONS, true);
	if (m->revocations_path != NULL)
		offer(m, dev, AT_FDCWD, m->revocations_path, WIRE_OBJ_REVOCATIONS, false);
	save_state(m, dev);
}

/* The records saved before: each offered to the engine (held if still valid). */
static void load_records(struct loop_members *m, struct yip_device *dev)
{
	static const char end_mark[] = "-----END YIP MEMBER RECORD-----";
	char *text = NULL, why[160];
	uint8_t *obj = malloc(WIRE_RECORD_MAX);
	size_t n = 0, len, held = 0, seen = 0;
	int fd = openat(m->dirfd, STATE_RECORDS, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 || obj == NULL || yip_read_fd(fd, FILE_MAX, &text, &n) != 0)
		goto done;
	for (char *at = text, *end; (end = strstr(at, end_mark)) != NULL; at = end) {
		end += sizeof(end_mark) - 1;
		seen++;
		if (member_unarmor(at, (size_t)(end - at), WIRE_OBJ_RECORD, obj, WIRE_RECORD_MAX,
		                   &len, why, sizeof(why)) == 0 &&
		    yip_device_offer_record(dev, yip_now_mono(), obj, len) == MEMBER_OK)
			held++;
	}
	log_info("state_dir: %zu of %zu saved member records still valid", held, seen);
done:
	if (fd >= 0)
		close(fd);
	free(text);
	free(obj);
}

struct save_walk {
	char *text;
	size_t len, cap;
	uint64_t sum; /* of the text: saved again only when it changes */
};

static void save_one(void *arg, const uint8_t *obj, size_t len)
{
	struct save_walk *w = arg;
	size_t need = member_armor_size(len);

	if (w->text == NULL || w->len + need > w->cap)
		return;
	w->len += member_armor(w->text + w->len, w->cap - w->len, obj, len);
}

void loop_members_tick(struct loop_members *m, struct yip_device *dev, uint64_t now)
{
	struct save_walk w = {.cap = FILE_MAX};
	size_t n;

	if (!m->on || now < m->records_at)
		return;
	m->records_at = now + MEMBERS_RECORDS_NS;
	w.text = malloc(w.cap);
	n = yip_device_records(dev, save_one, &w);
	if (w.text != NULL) {
		uint8_t h[8];

		crypto_generichash(h, sizeof(h), (const uint8_t *)w.text, w.len, NULL, 0);
		memcpy(&w.sum, h, sizeof(w.sum));
		w.sum += n; /* none saved yet is 0; an empty set hashes to something else */
	}
	if (w.text == NULL || w.sum == m->records_sum) {
		free(w.text);
		return;
	}
	if (save_file(m, STATE_RECORDS, w.text, w.len) == 0)
		m->records_sum = w.sum;
	else
		log_warn("state_dir %s: cannot save the member records: %s", m->state_dir,
		         strerror(errno));
	free(w.text);
}

/* "state_dir DIR: " and what is wrong with it, in err. */
static int __attribute__((format(printf, 4, 5)))
dir_error(char *err, size_t errlen, const char *dir, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "state_dir %s: ", dir);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * Opens the state directory dir, made 0700 if missing, for a daemon that
 * runs as uid once sandboxed; everything after goes through the returned
 * descriptor. Refused: a symbolic link (not followed; name the directory
 * itself), anything but a directory, one that belongs to another user
 * than root or uid, one that group or others may write to (whoever can
 * write there can put an older root set or revocation list in place, or
 * a link to elsewhere). Handed to uid:gid through the descriptor (fchown),
 * so a path swapped in the meantime cannot redirect it. The fd, or -1 with
 * the reason in err.
 */
static int open_dir(const char *dir, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return dir_error(err, errlen, dir, "cannot create: %s", strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if ((e == ELOOP || e == ENOTDIR) && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
			return dir_error(err, errlen, dir,
			                 "is a symbolic link, which is not followed; name the "
			                 "directory itself");
		if (e == ENOTDIR)
			return dir_error(err, errlen, dir, "is not a directory");
		return dir_error(err, errlen, dir, "%s", strerror(e));
	}
	if (fstat(fd, &st) != 0)
		dir_error(err, errlen, dir, "%s", strerror(errno));
	else if (st.st_uid != 0 && st.st_uid != uid)
		dir_error(err, errlen, dir,
		          "belongs to uid %u, neither root nor the daemon's user (uid %u); "
		          "refusing it (chown %u %s)",
		          (unsigned)st.st_uid, (unsigned)uid, (unsigned)uid, dir);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		dir_error(err, errlen, dir,
		          "mode %04o lets %s write to it, and so replace the root set and "
		          "revocation list kept there; refusing it (chmod go-w %s)",
		          (unsigned)(st.st_mode & 07777),
		          (st.st_mode & S_IWOTH) ? "every user" : "its group", dir);
	/* The daemon writes here after it drops to its user. */
	else if (st.st_uid != uid && uid != geteuid() && fchown(fd, uid, gid) != 0)
		dir_error(err, errlen, dir, "cannot hand it to uid %u: %s", (unsigned)uid,
		          strerror(errno));
	else
		return fd;
	close(fd);
	return -1;
}

int loop_members_setup(struct loop_members *m, const struct yip_config *cfg, uid_t uid, gid_t gid,
                       char *err, size_t errlen)
{
	const char *dir;

	memset(m, 0, sizeof(*m));
	m->dirfd = -1;
	if (!cfg->has_ca)
		return 0;
	m->on = true;
	memcpy(m->ca, cfg->ca_public, YIP_KEY_LEN);
	dir = cfg->state_dir ? cfg->state_dir : YIP_DEFAULT_STATE_DIR;
	m->cert_path = strdup(cfg->cert_path);
	m->roots_path = cfg->roots_path ? strdup(cfg->roots_path) : NULL;
	m->revocations_path = cfg->revocations_path ? strdup(cfg->revocations_path) : NULL;
	m->state_dir = strdup(dir);
	if (m->cert_path == NULL || m->state_dir == NULL ||
	    (cfg->roots_path && m->roots_path == NULL) ||
	    (cfg->revocations_path && m->revocations_path == NULL)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->dirfd = open_dir(dir, uid, gid, err, errlen);
	return m->dirfd >= 0 ? 0 : -1;
}

int loop_members_start(struct loop_members *m, struct yip_device *dev, char *err, size_t errlen)
{
	if (!m->on)
		return 0;
	if (load_cert(m, dev, true, err, errlen) != 0)
		return -1;
	load_lists(m, dev);
	load_records(m, dev);
	check_expiry(dev);
	return 0;
}

void loop_members_reload(struct loop_members *m, struct yip_device *dev)
{
	char err[512];

	if (!m->on)
		return; /* no ca in the configuration */
	log_info("reload: reading cert, roots and revocations again");
	if (load_cert(m, dev, false, err, sizeof(err)) != 0)
		log_warn("%s; keeping the certificate held", err);
	else
		log_info("cert %s: in use", m->cert_path);
	load_lists(m, dev);
	check_expiry(dev);
}

void loop_members_free(struct loop_members *m)
{
	if (m->dirfd >= 0)
		close(m->dirfd);
	free(m->cert_path);
	free(m->roots_path);
	free(m->revocations_path);
	free(m->state_dir);
	memset(m, 0, sizeof(*m));
	m->dirfd = -1;
}
