#include "udp/udp.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

#define SOCKET_BUFFER (4 << 20)

static void set_buffers(int fd)
{
	int size = SOCKET_BUFFER;

	/* The *FORCE variants ignore rmem_max/wmem_max when we are privileged. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static int bind_one(const union yip_sockaddr *addr, int *err_out)
{
	int fd, zero = 0;

	fd = socket(addr->sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err_out = errno;
		return -1;
	}
	if (addr->sa.sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, &addr->sa, yip_sockaddr_len(addr)) != 0) {
		*err_out = errno;
		close(fd);
		return -1;
	}
	set_buffers(fd);
	return fd;
}

static void set_port(union yip_sockaddr *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET)
		a->in4.sin_port = htons(port);
	else
		a->in6.sin6_port = htons(port);
}

int udp_open(const union yip_sockaddr *listen, bool port_given, uint16_t default_port,
             uint16_t fallback_port, uint16_t *bound_port, char *err, size_t errlen)
{
	union yip_sockaddr a = *listen;
	char s[YIP_ADDRSTRLEN];
	int fd, e = 0;

	if (a.sa.sa_family == AF_UNSPEC) {
		memset(&a, 0, sizeof(a));
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_addr = in6addr_any;
	}
	if (!port_given)
		set_port(&a, default_port);
	fd = bind_one(&a, &e);
	if (fd < 0 && !port_given && (e == EADDRINUSE || e == EACCES)) {
		yip_sockaddr_format(&a, s, sizeof(s));
		log_warn("cannot bind %s (%s), falling back to port %u", s, strerror(e),
		         fallback_port);
		set_port(&a, fallback_port);
		fd = bind_one(&a, &e);
	}
	if (fd < 0) {
		yip_sockaddr_format(&a, s, sizeof(s));
		snprintf(err, errlen, "cannot bind UDP %s: %s", s, strerror(e));
		return -1;
	}
	*bound_port = ntohs(a.sa.sa_family == AF_INET ? a.in4.sin_port : a.in6.sin6_port);
	return fd;
}

int udp_batch_init(struct udp_batch *b, int fd, int family, size_t buf_size)
{
	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->family = family;
	b->buf_size = buf_size;
	b->bufs = malloc(UDP_BATCH * buf_size);
	if (b->bufs == NULL)
		return -1;
	for (unsigned i = 0; i < UDP_BATCH; i++) {
		b->iov[i].iov_base = udp_batch_buf(b, i);
		b->iov[i].iov_len = buf_size;
		b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
		b->msgs[i].msg_hdr.msg_iovlen = 1;
		b->msgs[i].msg_hdr.msg_name = &b->addrs[i];
	}
	return 0;
}

void udp_batch_free(struct udp_batch *b)
{
	free(b->bufs);
	b->bufs = NULL;
}

int udp_recv(struct udp_batch *b)
{
	int n;

	for (unsigned i = 0; i < UDP_BATCH; i++) {
		b->iov[i].iov_len = b->buf_size;
		b->msgs[i].msg_hdr.msg_namelen = sizeof(b->addrs[i]);
		b->msgs[i].msg_hdr.msg_flags = 0;
	}
	n = recvmmsg(b->fd, b->msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			log_warn("recvmmsg: %s", strerror(errno));
		return 0;
	}
	b->count = (unsigned)n;
	return n;
}

uint8_t *udp_tx_buf(struct udp_batch *b, uint64_t *failed)
{
	if (b->count == UDP_BATCH)
		udp_tx_flush(b, failed);
	return udp_batch_buf(b, b->count);
}

bool udp_tx_push(struct udp_batch *b, const union yip_sockaddr *to, size_t len)
{
	union yip_sockaddr *a = &b->addrs[b->count];

	*a = *to;
	if (b->family == AF_INET6) {
		yip_sockaddr_to_v6(a);
	} else if (a->sa.sa_family != AF_INET) {
		/* An IPv4 socket can reach an IPv6 peer only via a mapped address. */
		const uint8_t *v6 = a->in6.sin6_addr.s6_addr;
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = a->in6.sin6_port};

		if (memcmp(v6, mapped, sizeof(mapped)) != 0)
			return false;
		memcpy(&v4.sin_addr, v6 + 12, 4);
		a->in4 = v4;
	}
	b->iov[b->count].iov_len = len;
	b->msgs[b->count].msg_hdr.msg_namelen = yip_sockaddr_len(a);
	b->count++;
	return true;
}

void udp_tx_flush(struct udp_batch *b, uint64_t *failed)
{
	unsigned done = 0;

	while (done < b->count) {
		int n = sendmmsg(b->fd, b->msgs + done, b->count - done, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Skip the datagram the kernel refused (unreachable, buffer
			 * full) and count it; the rest still go. */
			(*failed)++;
			done++;
			continue;
		}
		done += (unsigned)n;
	}
	b->count = 0;
}
