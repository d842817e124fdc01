/*
 * The daemon's side of the control socket. Everything is non-blocking and
 * driven by the event loop: one client at a time is served (others get a
 * short "busy" reply and are closed), the request must arrive within
 * YIP_CTL_REQUEST_MS and the reply be read within YIP_CTL_REPLY_MS, so a
 * slow or hostile client costs the data path a few system calls at most.
 */
#include "ctl/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "poll/poll.h"
#include "util/clock.h"
#include "util/log.h"

#define ACCEPT_BURST 16 /* connections taken per wakeup */

static const char busy_reply[] = "{\"error\":\"busy: another client is being served\"}\n";
static const char denied_reply[] = "{\"error\":\"permission denied\"}\n";
static const char oom_reply[] = "{\"error\":\"out of memory\"}\n";
static const char timeout_reply[] = "{\"error\":\"timed out waiting for the request\"}\n";

static void server_reset(struct yip_ctl_server *s)
{
	if (s->dirfd >= 0)
		close(s->dirfd);
	memset(s, 0, sizeof(*s));
	s->fd = s->client = s->dirfd = -1;
}

/*
 * Closes a connection after reading (and discarding) what the client may
 * still have queued: a Unix socket closed with unread data makes the peer's
 * next read fail with ECONNRESET instead of seeing the end of the reply.
 */
static void close_conn(int fd)
{
	char junk[512];

	for (int i = 0; i < 4 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

static void drop_client(struct yip_ctl_server *s)
{
	if (s->client < 0)
		return;
	if (s->poll != NULL)
		yip_poll_del(s->poll, s->client);
	close_conn(s->client);
	if (s->resp != oom_reply)
		free(s->resp);
	s->client = -1;
	s->resp = NULL;
	s->resp_len = s->resp_off = s->req_len = 0;
	s->writing = false;
	s->deadline = 0;
}

/*
 * Makes room for our socket at path: nothing there is fine, a socket no one
 * listens on (a daemon that died) is removed, anything else is an error.
 */
static int clear_stale(int dirfd, const char *name, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, rc;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket; not replacing it", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (const struct sockaddr *)&sa, sizeof(sa));
	if (rc == 0 || errno == EAGAIN || errno == EINPROGRESS) {
		close(fd);
		snprintf(err, errlen, "%s is in use by another yipd", path);
		return -1;
	}
	rc = errno;
	close(fd);
	if (rc != ECONNREFUSED && rc != ENOENT) {
		snprintf(err, errlen, "%s: %s", path, strerror(rc));
		return -1;
	}
	if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove stale %s: %s", path, strerror(errno));
		return -1;
	}
	log_info("removed stale control socket %s", path);
	return 0;
}

/*
 * Opens dir (made 0700 if missing) without following a symbolic link, and
 * checks who could put something else in place of our socket there.
 * Returns the directory's fd, or -1 with a message in err.
 */
static int open_dir(const char *dir, uid_t owner, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s %s", dir,
		         errno == ELOOP || errno == ENOTDIR
		             ? "is not a directory (a symbolic link is not followed)"
		             : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
	} else if (st.st_uid != 0 && st.st_uid != owner) {
		snprintf(err, errlen,
		         "%s belongs to uid %u, neither root nor the daemon's user (uid %u); "
		         "refusing to put the control socket there",
		         dir, (unsigned)st.st_uid, (unsigned)owner);
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
		         "%s has mode %04o: others could replace the control socket; refusing "
		         "it (chmod go-w %s)",
		         dir, (unsigned)(st.st_mode & 07777), dir);
	} else {
		return fd;
	}
	close(fd);
	return -1;
}

int yip_ctl_server_open(struct yip_ctl_server *s, const char *dir, const char *device, uid_t owner,
                        char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int rc;

	s->dirfd = -1;
	server_reset(s);
	s->owner = owner;
	if (yip_ctl_socket_path(s->path, sizeof(s->path), dir, device) != 0) {
		snprintf(err, errlen, "control socket path %s/%s%s is invalid or too long", dir,
		         device, YIP_CTL_SUFFIX);
		return -1;
	}
	s->name = strrchr(s->path, '/') + 1;
	s->dirfd = open_dir(dir, owner, err, errlen);
	if (s->dirfd < 0 || clear_stale(s->dirfd, s->name, s->path, err, errlen) != 0) {
		server_reset(s);
		return -1;
	}
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		server_reset(s);
		return -1;
	}
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	/* The file is made 0600 and never accessible to others, not even
	 * briefly. No chmod afterwards: it would follow whatever is at the path
	 * by then, and fchmod on the socket does not reach the file. */
	old = umask(0177);
	rc = bind(s->fd, (const struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0) {
		snprintf(err, errlen, "cannot bind %s: %s", s->path, strerror(errno));
		close(s->fd);
		server_reset(s);
		return -1;
	}
	errno = 0;
	if (listen(s->fd, 8) != 0 || fstatat(s->dirfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISSOCK(st.st_mode) || (st.st_mode & 0177) != 0) {
		snprintf(err, errlen, "%s: %s", s->path,
		         errno != 0 ? strerror(errno) : "not the 0600 socket just made");
		unlinkat(s->dirfd, s->name, 0);
		close(s->fd);
		server_reset(s);
		return -1;
	}
	s->st = st;
	return 0;
}

/* Only root and the daemon's own user may ask (the file mode already says so). */
static bool peer_allowed(const struct yip_ctl_server *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	return cred.uid == 0 || cred.uid == s->owner;
}

/* A short reply to a client that will not be served; it fits any socket buffer. */
static void refuse(struct yip_ctl_server *s, int fd, const char *reply)
{
	ssize_t n = send(fd, reply, strlen(reply), MSG_DONTWAIT | MSG_NOSIGNAL);

	(void)n;
	close_conn(fd);
	s->refused++;
}

static void on_client(void *ctx, uint32_t events);

/* The listening socket is readable: takes one client, turns others away. */
static void on_listen(void *ctx, uint32_t events)
{
	struct yip_ctl_server *s = ctx;
	uint64_t now = yip_now_mono();

	(void)events;
	for (int i = 0; i < ACCEPT_BURST && s->fd >= 0; i++) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_debug("ctl: accept: %s", strerror(errno));
			return;
		}
		if (!peer_allowed(s, fd)) {
			refuse(s, fd, denied_reply);
			continue;
		}
		if (s->client >= 0) {
			refuse(s, fd, busy_reply);
			continue;
		}
		if (yip_poll_add(s->poll, fd, EPOLLIN | EPOLLRDHUP, on_client, s) != 0) {
			log_debug("ctl: epoll_ctl: %s", strerror(errno));
			close(fd);
			continue;
		}
		s->client = fd;
		s->req_len = 0;
		s->writing = false;
		s->deadline = now + YIP_CTL_REQUEST_MS * YIP_NS_PER_MS;
	}
}

/* Sends what the socket takes; drops the client when done or on error. */
static void write_reply(struct yip_ctl_server *s)
{
	while (s->resp_off < s->resp_len) {
		ssize_t n = send(s->client, s->resp + s->resp_off, s->resp_len - s->resp_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return; /* EPOLLOUT will bring us back */
			log_debug("ctl: client went away: %s", strerror(errno));
			drop_client(s);
			return;
		}
		s->resp_off += (size_t)n;
	}
	s->served++;
	drop_client(s);
}

/*
 * Reads what has arrived. Returns the length of the complete request line
 * (without its newline), YIP_CTL_MAX_REQUEST if it is too long, 0 with *eof
 * if the client closed without a request, or -1 to wait for more.
 */
static ssize_t read_request(struct yip_ctl_server *s, bool *eof)
{
	*eof = false;
	while (s->req_len < sizeof(s->req)) {
		ssize_t n =
		    recv(s->client, s->req + s->req_len, sizeof(s->req) - s->req_len, MSG_DONTWAIT);
		char *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -1;
			*eof = true;
			return 0;
		}
		if (n == 0) {
			*eof = true;
			return (ssize_t)s->req_len; /* a last line without newline counts */
		}
		nl = memchr(s->req + s->req_len, '\n', (size_t)n);
		if (nl != NULL)
			return nl - s->req;
		s->req_len += (size_t)n;
	}
	return YIP_CTL_MAX_REQUEST;
}

/* The client socket has events: reads the request, replies, closes. */
static void on_client(void *ctx, uint32_t events)
{
	struct yip_ctl_server *s = ctx;
	uint64_t now = yip_now_mono();
	ssize_t line;
	bool eof;

	(void)events; /* reads and writes tell us more than the flags would */
	if (s->client < 0)
		return;
	if (s->writing) {
		write_reply(s);
		return;
	}
	line = read_request(s, &eof);
	if (line < 0)
		return;
	if (line == 0 && eof) {
		drop_client(s); /* connected and left: nothing to answer */
		return;
	}
	s->resp = s->reply(s->reply_ctx, s->req, (size_t)line, &s->resp_len);
	if (s->resp == NULL) {
		s->resp = (char *)oom_reply;
		s->resp_len = sizeof(oom_reply) - 1;
	}
	log_debug("ctl: request '%.*s': %zu byte reply", (int)(line > 64 ? 64 : line), s->req,
	          s->resp_len);
	s->resp_off = 0;
	s->writing = true;
	s->deadline = now + YIP_CTL_REPLY_MS * YIP_NS_PER_MS;
	if (yip_poll_mod(s->poll, s->client, EPOLLOUT) != 0) {
		drop_client(s);
		return;
	}
	write_reply(s);
}

int yip_ctl_server_watch(struct yip_ctl_server *s, struct yip_poll *p, yip_ctl_reply_fn reply,
                         void *ctx)
{
	if (yip_poll_add(p, s->fd, EPOLLIN, on_listen, s) != 0)
		return -1;
	s->poll = p;
	s->reply = reply;
	s->reply_ctx = ctx;
	return 0;
}

uint64_t yip_ctl_server_expire(struct yip_ctl_server *s, uint64_t now)
{
	if (s->client < 0)
		return 0;
	if (now >= s->deadline) {
		log_debug("ctl: client too slow; dropped");
		if (!s->writing) {
			ssize_t n = send(s->client, timeout_reply, sizeof(timeout_reply) - 1,
			                 MSG_DONTWAIT | MSG_NOSIGNAL);

			(void)n;
		}
		drop_client(s);
		return 0;
	}
	return s->deadline;
}

void yip_ctl_server_close(struct yip_ctl_server *s)
{
	struct stat st;

	drop_client(s);
	if (s->fd >= 0) {
		if (s->poll != NULL)
			yip_poll_del(s->poll, s->fd);
		close(s->fd);
		/* Remove the file only if it is still the one we made (inode
		 * numbers are reused, so the change time must match too). A
		 * daemon that dropped to a user who may not write in the
		 * directory leaves it; the next start removes it as stale. */
		if (fstatat(s->dirfd, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_dev == s->st.st_dev && st.st_ino == s->st.st_ino &&
		    st.st_ctim.tv_sec == s->st.st_ctim.tv_sec &&
		    st.st_ctim.tv_nsec == s->st.st_ctim.tv_nsec &&
		    unlinkat(s->dirfd, s->name, 0) != 0)
			log_debug("ctl: %s left for the next start to remove: %s", s->path,
			          strerror(errno));
	}
	server_reset(s);
}
