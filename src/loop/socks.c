#include "loop/socks.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "udp/udp.h"

void socks_init(struct socks *s, int epfd, int family)
{
	memset(s, 0, sizeof(*s));
	s->epfd = epfd;
	s->family = family;
	for (int i = 0; i <= SOCKS_MAX; i++)
		s->fd[i] = -1;
}

void socks_free(struct socks *s)
{
	for (int i = 1; i <= SOCKS_MAX; i++)
		socks_close(s, i);
}

int socks_open(struct socks *s)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int id, fd;

	for (id = 1; id <= SOCKS_MAX && s->fd[id] >= 0; id++)
		;
	if (id > SOCKS_MAX || (fd = udp_open_ephemeral(s->family)) < 0)
		return -1;
	ev.data.u32 = (uint32_t)(SOCKS_EV_BASE + id);
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		return -1;
	}
	s->fd[id] = fd;
	s->open++;
	return id;
}

void socks_close(struct socks *s, int id)
{
	if (id <= 0 || id > SOCKS_MAX || s->fd[id] < 0)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->fd[id], NULL);
	close(s->fd[id]);
	s->fd[id] = -1;
	s->open--;
}

bool socks_send(struct socks *s, int id, const union yip_sockaddr *to, const uint8_t *d, size_t len)
{
	union yip_sockaddr dest;

	if (id <= 0 || id > SOCKS_MAX || s->fd[id] < 0 || !udp_dest(s->family, to, &dest) ||
	    sendto(s->fd[id], d, len, 0, &dest.sa, yip_sockaddr_len(&dest)) != (ssize_t)len) {
		s->send_failed++;
		return false;
	}
	s->sent++;
	return true;
}

bool socks_event(struct socks *s, uint32_t tag, struct yip_device *dev, uint64_t now, uint8_t *buf,
                 size_t cap)
{
	int id = (int)tag - SOCKS_EV_BASE;

	if (tag < SOCKS_EV_BASE || id <= 0 || id > SOCKS_MAX)
		return false;
	for (int burst = 0; burst < 64 && s->fd[id] >= 0; burst++) {
		union yip_sockaddr from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(s->fd[id], buf, cap, MSG_TRUNC, &from.sa, &flen);

		if (n < 0)
			break;
		if ((size_t)n > cap) {
			yip_device_drop(dev, YIP_DROP_TRUNCATED);
			continue;
		}
		s->received++;
		yip_device_rx_on(dev, now, id, &from, buf, (size_t)n);
	}
	return true;
}
