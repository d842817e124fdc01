#include "udp/udp.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

/*
 * The receive buffer must outlast the daemon's own drop rule (shape.c: a
 * datagram that waited in the socket longer than twice CoDel's interval +
 * 100 ms is dropped): otherwise the kernel drops first, at the tail, in
 * runs. An inner BBR keeps up to its window's allowance for ACK
 * aggregation (100 ms of its rate) queued where the tunnel is slowest,
 * which is this socket when the receiving daemon is short of CPU: 16 MB
 * overflowed at 1.6 Gbit/s and 20 ms RTT (0.4-0.6 % of BBR's segments
 * lost on a clean link, UdpRcvbufErrors), 64 MB did not. The kernel
 * charges what is queued, not the size, so an idle socket costs nothing.
 */
#define SOCKET_RCVBUF (64 << 20)
#define SOCKET_SNDBUF (16 << 20)

void udp_set_buffers(int fd)
{
	int rcv = SOCKET_RCVBUF, snd = SOCKET_SNDBUF;

	/* The *FORCE variants ignore rmem_max/wmem_max when we are privileged. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &snd, sizeof(snd)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
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
	/* A daemon that was just killed may hold the port a few ms longer while
	 * the kernel tears its io_uring down: wait for it, briefly. */
	for (int tries = 0; bind(fd, &addr->sa, yip_sockaddr_len(addr)) != 0; tries++) {
		if (errno != EADDRINUSE || tries >= 20) {
			*err_out = errno;
			close(fd);
			return -1;
		}
		usleep(10000);
	}
	udp_set_buffers(fd);
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

int udp_batch_init(struct udp_batch *b, int fd, int family, size_t buf_size, bool rx, bool offload)
{
	int one = 1;

	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->family = family;
	/* Receive timestamps let the loop see how long datagrams waited in the
	 * socket: a standing queue there is congestion (see src/aqm/shape.c, CoDel). */
	if (rx)
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	if (rx && offload && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0) {
		b->gro = true;
		buf_size = UDP_GRO_BUF;
	}
	if (!rx && offload) {
		/* UDP_SEGMENT exists (4.18+) if the socket accepts it as a default. */
		int seg = 0;

		b->gso = setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0;
	}
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

void udp_msg_info(struct msghdr *h, uint16_t *seg, uint64_t *stamp)
{
	*seg = 0;
	*stamp = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			if (v > 0 && v < 65536)
				*seg = (uint16_t)v;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			*stamp = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		}
	}
}

int udp_recv(struct udp_batch *b)
{
	int n;

	for (unsigned i = 0; i < UDP_BATCH; i++) {
		struct msghdr *h = &b->msgs[i].msg_hdr;

		b->iov[i].iov_len = b->buf_size;
		h->msg_namelen = sizeof(b->addrs[i]);
		h->msg_flags = 0;
		h->msg_control = b->ctrl[i].buf;
		h->msg_controllen = sizeof(b->ctrl[i].buf);
	}
	n = recvmmsg(b->fd, b->msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			log_warn("recvmmsg: %s", strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++)
		udp_msg_info(&b->msgs[i].msg_hdr, &b->segs[i], &b->stamps[i]);
	b->count = (unsigned)n;
	return n;
}

uint8_t *udp_tx_buf(struct udp_batch *b)
{
	return b->count == UDP_BATCH ? NULL : udp_batch_buf(b, b->count);
}

bool udp_dest(int family, const union yip_sockaddr *to, union yip_sockaddr *a)
{
	*a = *to;
	if (family == AF_INET6) {
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
	return true;
}

int udp_open_ephemeral(int family)
{
	union yip_sockaddr any;
	int fd, off = 0;

	memset(&any, 0, sizeof(any));
	any.sa.sa_family = (sa_family_t)family;
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, &any.sa, yip_sockaddr_len(&any)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

bool udp_tx_push(struct udp_batch *b, const union yip_sockaddr *to, size_t len, uint32_t train)
{
	if (!udp_dest(b->family, to, &b->addrs[b->count]))
		return false;
	b->iov[b->count].iov_len = len;
	b->trains[b->count] = train;
	b->count++;
	return true;
}

/*
 * How many datagrams from first on can go as one GSO train: same
 * destination, equal sizes (the last may be shorter), within the kernel's
 * limits, and no two carrying symbols of the same FEC block.
 */
static unsigned train_len(const struct udp_batch *b, unsigned first)
{
	size_t size = b->iov[first].iov_len, total = size;
	unsigned n = 1;

	if (!b->gso)
		return 1;
	while (first + n < b->count && n < UDP_GSO_MAX_SEGS) {
		unsigned i = first + n;
		size_t len = b->iov[i].iov_len;
		bool clash = false;

		if (len > size || total + len > UDP_GSO_MAX_BYTES ||
		    !yip_sockaddr_eq(&b->addrs[i], &b->addrs[first]))
			break;
		for (unsigned j = first; b->trains[i] != 0 && j < i && !clash; j++)
			clash = b->trains[j] == b->trains[i];
		if (clash)
			break;
		total += len;
		n++;
		if (len < size)
			break; /* a shorter datagram ends the train */
	}
	return n;
}

/* Lays the queued datagrams out as messages; returns how many. */
static unsigned build_messages(struct udp_batch *b)
{
	unsigned m = 0;

	for (unsigned first = 0; first < b->count; m++) {
		struct msghdr *h = &b->msgs[m].msg_hdr;
		unsigned n = train_len(b, first);

		h->msg_name = &b->addrs[first];
		h->msg_namelen = yip_sockaddr_len(&b->addrs[first]);
		h->msg_iov = &b->iov[first];
		h->msg_iovlen = n;
		h->msg_control = NULL;
		h->msg_controllen = 0;
		h->msg_flags = 0;
		if (n > 1) {
			struct cmsghdr *c = &b->ctrl[m].align;
			uint16_t seg = (uint16_t)b->iov[first].iov_len;

			h->msg_control = b->ctrl[m].buf;
			h->msg_controllen = CMSG_SPACE(sizeof(seg));
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
		}
		b->segs[m] = (uint16_t)n;
		b->trains_sent++;
		b->train_dgrams += n;
		first += n;
	}
	return m;
}

/*
 * Sends the datagrams of GSO train m one by one, as they would have gone
 * without GSO, after the kernel refused the train as a whole: EINVAL when
 * its segment size does not fit the route's MTU (a single datagram would
 * have been fragmented instead), EIO when the route cannot offload the
 * checksum. Returns how many of them failed.
 */
static unsigned send_singly(struct udp_batch *b, unsigned m)
{
	struct msghdr h = b->msgs[m].msg_hdr;
	struct iovec *iov = h.msg_iov;
	unsigned failed = 0;

	h.msg_control = NULL;
	h.msg_controllen = 0;
	h.msg_iovlen = 1;
	for (unsigned i = 0; i < b->segs[m]; i++) {
		h.msg_iov = &iov[i];
		while (sendmsg(b->fd, &h, MSG_DONTWAIT) < 0) {
			if (errno != EINTR) {
				failed++;
				break;
			}
		}
	}
	return failed;
}

unsigned udp_tx_flush(struct udp_batch *b)
{
	unsigned done = 0, failed = 0, m;

	if (b->count == 0)
		return 0;
	m = build_messages(b);
	while (done < m) {
		int n = sendmmsg(b->fd, b->msgs + done, m - done, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Skip the message the kernel refused (unreachable, buffer
			 * full) and count its datagrams; the rest still go. A
			 * train refused for being a train goes datagram by datagram. */
			if (b->segs[done] > 1 && (errno == EINVAL || errno == EIO))
				failed += send_singly(b, done);
			else
				failed += b->segs[done];
			done++;
			continue;
		}
		done += (unsigned)n;
	}
	b->count = 0;
	return failed;
}

unsigned udp_path_payload(const union yip_sockaddr *to)
{
	union yip_sockaddr a = *to;
	int fd, mtu = 0;
	socklen_t len = sizeof(mtu);
	bool v4 = a.sa.sa_family == AF_INET;

	fd = socket(a.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (connect(fd, &a.sa, yip_sockaddr_len(&a)) != 0 ||
	    getsockopt(fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_MTU : IPV6_MTU, &mtu, &len) !=
	        0) {
		close(fd);
		return 0;
	}
	close(fd);
	return mtu > 0 ? (unsigned)mtu - (v4 ? 20 : 40) - 8 : 0;
}

static bool is_any(const union yip_sockaddr *a)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_addr.s_addr == htonl(INADDR_ANY);
	if (a->sa.sa_family == AF_INET6)
		return memcmp(&a->in6.sin6_addr, &any6, sizeof(any6)) == 0;
	return true; /* AF_UNSPEC: dual-stack any */
}

/* Whether an interface address is worth telling a peer about. */
static bool usable(const struct ifaddrs *ifa, int want, const char *skip)
{
	const struct sockaddr *sa = ifa->ifa_addr;

	if (sa == NULL || !(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK) ||
	    (skip != NULL && strcmp(ifa->ifa_name, skip) == 0) || sa->sa_family != want)
		return false;
	if (want == AF_INET) {
		uint32_t ip = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		return (ip >> 24) != 127 && (ip >> 16) != 0xa9fe && ip != 0 && (ip >> 28) != 0xe;
	}
	{
		const struct in6_addr *ip = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return !IN6_IS_ADDR_LINKLOCAL(ip) && !IN6_IS_ADDR_LOOPBACK(ip) &&
		       !IN6_IS_ADDR_MULTICAST(ip) && !IN6_IS_ADDR_UNSPECIFIED(ip) &&
		       !IN6_IS_ADDR_V4MAPPED(ip);
	}
}

size_t udp_local_addrs(const union yip_sockaddr *bound, int family, uint16_t port, const char *skip,
                       union yip_sockaddr *out, size_t max)
{
	static const int families[] = {AF_INET, AF_INET6};
	struct ifaddrs *list = NULL;
	size_t n = 0;

	if (max == 0)
		return 0;
	if (!is_any(bound)) {
		out[0] = *bound;
		if (out[0].sa.sa_family == AF_INET)
			out[0].in4.sin_port = htons(port);
		else
			out[0].in6.sin6_port = htons(port);
		return 1;
	}
	if (getifaddrs(&list) != 0)
		return 0;
	for (size_t f = 0; f < 2; f++) {
		if (families[f] == AF_INET6 && family == AF_INET)
			continue;
		for (const struct ifaddrs *ifa = list; ifa != NULL && n < max;
		     ifa = ifa->ifa_next) {
			union yip_sockaddr *a = &out[n];

			if (!usable(ifa, families[f], skip))
				continue;
			memset(a, 0, sizeof(*a));
			if (families[f] == AF_INET) {
				a->in4 = *(const struct sockaddr_in *)ifa->ifa_addr;
				a->in4.sin_port = htons(port);
			} else {
				a->in6 = *(const struct sockaddr_in6 *)ifa->ifa_addr;
				a->in6.sin6_port = htons(port);
				a->in6.sin6_scope_id = 0;
			}
			n++;
		}
	}
	freeifaddrs(list);
	return n;
}
