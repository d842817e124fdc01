/* yipd's privileged half, and the daemon's calls to it (see privsep.h). */
#include "privsep/privsep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <sodium.h>

#include "sandbox/sandbox.h"
#include "tun/tun.h"
#include "util/log.h"
#include "wire/privsep.h"

#define CHILD_FD 3 /* the privileged half's end of the pair */

/* Sends a reply, with fd beside it if it is one. */
static void reply(int sock, bool ok, const char *text, int fd)
{
	uint8_t buf[WIRE_PRIVSEP_REPLY];
	struct iovec iov = {.iov_base = buf, .iov_len = wire_privsep_reply_put(buf, ok, text)};
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.space;
		msg.msg_controllen = sizeof(ctl.space);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* One request, done. */
static void serve(const char *path, struct tun_netlink *nl, const struct wire_privsep_req *req)
{
	char err[WIRE_PRIVSEP_TEXT + 1] = "";
	int rc, fd;

	switch (req->op) {
	case WIRE_PRIVSEP_CONFIG:
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			snprintf(err, sizeof(err), "%s: cannot open: %s", path, strerror(errno));
			reply(CHILD_FD, false, err, -1);
			return;
		}
		reply(CHILD_FD, true, NULL, fd);
		close(fd);
		return;
	case WIRE_PRIVSEP_ROUTE_ADD:
		rc = tun_add_route(nl, &req->cidr, err, sizeof(err));
		break;
	case WIRE_PRIVSEP_ROUTE_DEL:
		rc = tun_del_route(nl, &req->cidr, err, sizeof(err));
		break;
	case WIRE_PRIVSEP_ADDR_ADD:
		rc = tun_add_address(nl, &req->cidr, err, sizeof(err));
		break;
	case WIRE_PRIVSEP_ADDR_DEL:
		rc = tun_del_address(nl, &req->cidr, err, sizeof(err));
		break;
	default:
		rc = -1;
		snprintf(err, sizeof(err), "unknown request");
	}
	reply(CHILD_FD, rc == 0, err, -1);
}

/* The privileged half's life: set up, then one request at a time until the daemon goes. */
static void __attribute__((noreturn))
child(int sock, pid_t parent, const char *path, const char *ifname, enum yip_sandbox_mode mode)
{
	struct tun_netlink nl;
	char err[256];

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "yipd-priv", 0, 0, 0);
	/* Ctrl-C and SIGHUP are the daemon's to act on; it ends us by closing the pair. */
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (sock != CHILD_FD && (dup2(sock, CHILD_FD) != CHILD_FD || close(sock) != 0))
		_exit(1);
	/* Nothing of the daemon's: not its device, sockets or control socket. */
	close_range(CHILD_FD + 1, ~0u, 0);
	if (tun_netlink_open(&nl, ifname, err, sizeof(err)) != 0 ||
	    sandbox_enter_privileged(mode, err, sizeof(err)) != 0) {
		log_err("privileged half: %s", err);
		_exit(1);
	}
	for (;;) {
		uint8_t buf[WIRE_PRIVSEP_REQ + 1];
		struct wire_privsep_req req;
		ssize_t n = recv(CHILD_FD, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0); /* the daemon is gone */
		if (!wire_privsep_req_get(&req, buf, (size_t)n)) {
			reply(CHILD_FD, false, "malformed request", -1);
			continue;
		}
		serve(path, &nl, &req);
	}
}

int privsep_start(struct privsep *ps, const char *path, const char *ifname, bool separate,
                  enum yip_sandbox_mode mode, void *wipe, size_t wipe_len, char *err, size_t errlen)
{
	struct timeval tv = {.tv_sec = PRIVSEP_REPLY_MS / 1000,
	                     .tv_usec = (PRIVSEP_REPLY_MS % 1000) * 1000};
	pid_t parent = getpid();
	int sv[2];

	memset(ps, 0, sizeof(*ps));
	ps->fd = -1;
	if (strlen(path) >= sizeof(ps->path) || strlen(ifname) >= sizeof(ps->ifname)) {
		snprintf(err, errlen, "configuration path too long");
		return -1;
	}
	snprintf(ps->path, sizeof(ps->path), "%s", path);
	snprintf(ps->ifname, sizeof(ps->ifname), "%s", ifname);
	if (!separate)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	ps->pid = fork();
	if (ps->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (ps->pid == 0) {
		/* The daemon's secrets are no business of this process. */
		if (wipe != NULL)
			sodium_memzero(wipe, wipe_len);
		close(sv[0]);
		child(sv[1], parent, ps->path, ps->ifname, mode);
	}
	close(sv[1]);
	ps->fd = sv[0];
	setsockopt(ps->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

/* Not waited for: the sandbox has no wait4, and the half exits as it reads the close. */
void privsep_stop(struct privsep *ps)
{
	if (ps->fd >= 0)
		close(ps->fd);
	ps->fd = -1;
	ps->pid = 0;
}

/* One request to the privileged half and its answer (and the descriptor, if fd). */
static int ask(struct privsep *ps, const struct wire_privsep_req *req, int *fd, char *err,
               size_t errlen)
{
	uint8_t out[WIRE_PRIVSEP_REQ], in[WIRE_PRIVSEP_REPLY + 1];
	char text[WIRE_PRIVSEP_TEXT + 1];
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = in, .iov_len = sizeof(in)};
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = ctl.space,
	                     .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c;
	ssize_t n;
	bool ok;
	int got = -1;

	wire_privsep_req_put(out, req);
	if (send(ps->fd, out, sizeof(out), MSG_NOSIGNAL) != (ssize_t)sizeof(out)) {
		snprintf(err, errlen, "the privileged half is gone: %s", strerror(errno));
		return -1;
	}
	do
		n = recvmsg(ps->fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		snprintf(err, errlen, "the privileged half did not answer: %s",
		         n == 0 ? "it is gone" : strerror(errno));
		return -1;
	}
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)) && got < 0)
			memcpy(&got, CMSG_DATA(c), sizeof(int));
	if ((msg.msg_flags & MSG_TRUNC) || !wire_privsep_reply_get(&ok, text, in, (size_t)n)) {
		snprintf(err, errlen, "the privileged half answered nonsense");
		ok = false;
		text[0] = '\0';
	} else if (!ok) {
		snprintf(err, errlen, "%s", text);
	}
	if (ok && fd != NULL && got >= 0) {
		*fd = got;
		return 0;
	}
	if (got >= 0)
		close(got);
	if (ok && fd != NULL) {
		snprintf(err, errlen, "the privileged half sent no file");
		return -1;
	}
	return ok ? 0 : -1;
}

int privsep_open_config(struct privsep *ps, char *err, size_t errlen)
{
	struct wire_privsep_req req = {.op = WIRE_PRIVSEP_CONFIG};
	int fd = -1;

	if (ps->fd < 0) {
		fd = open(ps->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			snprintf(err, errlen, "%s: cannot open: %s", ps->path, strerror(errno));
		return fd;
	}
	return ask(ps, &req, &fd, err, errlen) == 0 ? fd : -1;
}

/* A route or address change, here or by the privileged half. */
static int prefix(struct privsep *ps, enum wire_privsep_op op, const struct yip_cidr *c, char *err,
                  size_t errlen)
{
	struct wire_privsep_req req = {.op = op, .cidr = *c};
	struct tun_netlink nl;
	int rc;

	if (ps->fd >= 0)
		return ask(ps, &req, NULL, err, errlen);
	if (tun_netlink_open(&nl, ps->ifname, err, errlen) != 0)
		return -1;
	rc = op == WIRE_PRIVSEP_ROUTE_ADD   ? tun_add_route(&nl, c, err, errlen)
	     : op == WIRE_PRIVSEP_ROUTE_DEL ? tun_del_route(&nl, c, err, errlen)
	     : op == WIRE_PRIVSEP_ADDR_ADD  ? tun_add_address(&nl, c, err, errlen)
	                                    : tun_del_address(&nl, c, err, errlen);
	tun_netlink_close(&nl);
	return rc;
}

int privsep_route(struct privsep *ps, const struct yip_cidr *c, bool add, char *err, size_t errlen)
{
	return prefix(ps, add ? WIRE_PRIVSEP_ROUTE_ADD : WIRE_PRIVSEP_ROUTE_DEL, c, err, errlen);
}

int privsep_address(struct privsep *ps, const struct yip_cidr *c, bool add, char *err,
                    size_t errlen)
{
	return prefix(ps, add ? WIRE_PRIVSEP_ADDR_ADD : WIRE_PRIVSEP_ADDR_DEL, c, err, errlen);
}
