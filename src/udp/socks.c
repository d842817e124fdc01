#include "udp/socks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "udp/udp.h"

/* ---- the link of one socket: datagrams sent at once, from s->txbuf ---- */

static uint8_t *link_buf(void *ctx, uint32_t link)
{
	const struct socks_one *o = ctx;

	(void)link;
	return o->set->txbuf;
}

static bool link_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                      uint32_t block)
{
	struct socks_one *o = ctx;
	struct socks *s = o->set;
	union yip_sockaddr dest;

	(void)link;
	(void)block; /* one datagram at a time: no batches to spread */
	if (o->fd < 0 || !udp_dest(s->family, to, &dest) ||
	    sendto(o->fd, s->txbuf, len, 0, &dest.sa, yip_sockaddr_len(&dest)) != (ssize_t)len) {
		s->send_failed++;
		return false;
	}
	s->sent++;
	return true;
}

static const struct yip_link_ops socks_ops = {
    .kind = YIP_LINK_UDP,
    .buf = link_buf,
    .send = link_send,
};

int socks_init(struct socks *s, int epfd, int family, struct yip_links *links, size_t buf_size)
{
	memset(s, 0, sizeof(*s));
	s->epfd = epfd;
	s->family = family;
	s->links = links;
	s->buf_size = buf_size;
	for (int i = 0; i <= SOCKS_MAX; i++) {
		s->sock[i].set = s;
		s->sock[i].fd = -1;
	}
	s->txbuf = malloc(buf_size);
	return s->txbuf != NULL ? 0 : -1;
}

static void close_one(struct socks *s, struct socks_one *o)
{
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, o->fd, NULL);
	close(o->fd);
	o->fd = -1;
	yip_link_del(s->links, o->link);
	s->open--;
}

void socks_free(struct socks *s)
{
	if (s->links == NULL)
		return; /* never set up */
	for (int i = 1; i <= SOCKS_MAX; i++)
		if (s->sock[i].fd >= 0)
			close_one(s, &s->sock[i]);
	free(s->txbuf);
	s->txbuf = NULL;
}

int64_t socks_open(struct socks *s)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct socks_one *o;
	int64_t link;
	int i, fd;

	for (i = 1; i <= SOCKS_MAX && s->sock[i].fd >= 0; i++)
		;
	if (i > SOCKS_MAX || (fd = udp_open_ephemeral(s->family)) < 0)
		return -1;
	o = &s->sock[i];
	ev.data.u32 = (uint32_t)(SOCKS_EV_BASE + i);
	link = yip_link_add(s->links, 1, &socks_ops, o, (uint32_t)s->buf_size, 0);
	if (link < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		if (link >= 0)
			yip_link_del(s->links, (uint32_t)link);
		close(fd);
		return -1;
	}
	o->fd = fd;
	o->link = (uint32_t)link;
	s->open++;
	return link;
}

void socks_close(struct socks *s, uint32_t link)
{
	const struct yip_link *lk = yip_link_get(s->links, link);

	if (lk != NULL && lk->ops == &socks_ops)
		close_one(s, lk->ctx);
}

bool socks_event(struct socks *s, uint32_t tag, uint8_t *buf, size_t cap, socks_rx_fn rx, void *arg)
{
	int i = (int)tag - SOCKS_EV_BASE;
	struct socks_one *o;

	if (tag < SOCKS_EV_BASE || i <= 0 || i > SOCKS_MAX)
		return false;
	o = &s->sock[i];
	for (int burst = 0; burst < 64 && o->fd >= 0; burst++) {
		union yip_sockaddr from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(o->fd, buf, cap, MSG_TRUNC, &from.sa, &flen);

		if (n < 0)
			break;
		if ((size_t)n > cap) {
			s->truncated++;
			continue;
		}
		s->received++;
		rx(arg, o->link, &from, buf, (size_t)n);
	}
	return true;
}
