/* The client's side of the control socket: one request, one reply (see ctl.h). */
#include "ctl/ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int yip_ctl_ask(const char *path, const char *request, int timeout_s, char **out, size_t *out_len,
                int *conn_errno, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = timeout_s};
	char line[YIP_CTL_MAX_REQUEST + 1], *buf;
	size_t len = 0, cap = 4096;
	int fd, n;

	*conn_errno = 0;
	n = snprintf(line, sizeof(line), "%s\n", request);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		snprintf(err, errlen, "request too long");
		return -1;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: path too long for a Unix socket", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
		*conn_errno = errno;
		snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		snprintf(err, errlen, "cannot send to %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	shutdown(fd, SHUT_WR);
	buf = malloc(cap);
	for (;;) {
		ssize_t r;

		if (buf == NULL) {
			snprintf(err, errlen, "out of memory");
			close(fd);
			return -1;
		}
		if (len + 1 == cap) {
			char *nb = cap >= YIP_CTL_MAX_REPLY ? NULL : realloc(buf, cap * 2);

			if (nb == NULL) {
				snprintf(err, errlen, "the reply from %s is too long", path);
				free(buf);
				close(fd);
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		r = recv(fd, buf + len, cap - 1 - len, 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET && len > 0))
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "reading from %s: %s", path,
			         errno == EAGAIN || errno == EWOULDBLOCK ? "timed out"
			                                                 : strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}
