/*
 * The TUN device, and configuring it over rtnetlink.
 *
 * Each configuration step is one request sent with NLM_F_ACK, answered by
 * the kernel with an NLMSG_ERROR carrying 0 or a negative errno. The socket
 * asks for extended acks so that, when the kernel explains a refusal (say
 * "Nexthop device is not up"), the explanation reaches the user as well.
 */
#include "tun/tun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <linux/virtio_net.h>

#include "addr/addr.h"

/*
 * Large enough for any single reply to our small requests. (Not
 * MNL_SOCKET_BUFFER_SIZE: that calls sysconf, which would make this a VLA.)
 * Buffers are aligned for the netlink headers that libmnl lays over them.
 */
#define NL_BUFSIZE 8192

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int tun_open(const char *name, bool tap, bool offload, bool multiqueue, bool *vnet,
             char actual[IFNAMSIZ], char *err, size_t errlen)
{
	struct ifreq ifr;
	int fd, e;

	*vnet = offload && !tap;

	memset(&ifr, 0, sizeof(ifr));
	if (name && strlen(name) >= IFNAMSIZ) {
		set_err(err, errlen, "interface name %s is longer than %d characters", name,
		        IFNAMSIZ - 1);
		return -1;
	}
	/* An empty name lets the kernel pick one (tun0, tun1, ...). */
	if (name)
		memcpy(ifr.ifr_name, name, strlen(name));
	/* Without IFF_NO_PI every packet would carry a 4-byte protocol header. */
	ifr.ifr_flags = (short)((tap ? IFF_TAP : IFF_TUN) | IFF_NO_PI | (*vnet ? IFF_VNET_HDR : 0) |
	                        (multiqueue ? IFF_MULTI_QUEUE : 0));

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		set_err(err, errlen, "cannot open /dev/net/tun: %s", strerror(errno));
		return -1;
	}
	/* EBUSY: a daemon killed a moment ago may still hold the device while the
	 * kernel tears its io_uring down; give it a little time. */
	for (int tries = 0; ioctl(fd, TUNSETIFF, &ifr) < 0; tries++) {
		if (errno == EBUSY && tries < 20) {
			usleep(10000);
			continue;
		}
		e = errno;
		close(fd);
		set_err(err, errlen, "cannot create %s device %s: %s", tap ? "TAP" : "TUN",
		        name && *name ? name : "tun%d", strerror(e));
		return -1;
	}
	if (*vnet) {
		int hdr = sizeof(struct virtio_net_hdr);
		unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;

		/* Without offloads the header stays (all zero); packets are normal. */
		if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 || ioctl(fd, TUNSETOFFLOAD, off) < 0)
			ioctl(fd, TUNSETOFFLOAD, 0);
	}
	memcpy(actual, ifr.ifr_name, IFNAMSIZ);
	actual[IFNAMSIZ - 1] = '\0';
	return fd;
}

int tun_netlink_open(struct tun_netlink *n, const char *ifname, char *err, size_t errlen)
{
	int on = 1;

	memset(n, 0, sizeof(*n));
	n->ifindex = (int)if_nametoindex(ifname);
	if (n->ifindex == 0) {
		set_err(err, errlen, "no interface %s: %s", ifname, strerror(errno));
		return -1;
	}
	snprintf(n->name, sizeof(n->name), "%s", ifname);
	n->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!n->nl) {
		set_err(err, errlen, "cannot open rtnetlink socket: %s", strerror(errno));
		return -1;
	}
	if (mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		set_err(err, errlen, "cannot bind rtnetlink socket: %s", strerror(errno));
		tun_netlink_close(n);
		return -1;
	}
	/*
	 * Error replies then carry the kernel's explanation, and not a copy of
	 * our request. Both are refinements: kernels without them still work.
	 */
	mnl_socket_setsockopt(n->nl, NETLINK_EXT_ACK, &on, sizeof(on));
	mnl_socket_setsockopt(n->nl, NETLINK_CAP_ACK, &on, sizeof(on));
	n->portid = mnl_socket_get_portid(n->nl);
	return 0;
}

void tun_netlink_close(struct tun_netlink *n)
{
	if (n->nl)
		mnl_socket_close(n->nl);
	n->nl = NULL;
}

/* What the kernel answered to one request. */
struct reply {
	unsigned seq;   /* of the request */
	int error;      /* 0 or an errno */
	char text[128]; /* the kernel's explanation, if it gave one */
};

static int reply_attr(const struct nlattr *attr, void *data)
{
	struct reply *r = data;

	if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
	    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
		snprintf(r->text, sizeof(r->text), "%s", mnl_attr_get_str(attr));
	return MNL_CB_OK;
}

/*
 * Takes over NLMSG_ERROR from libmnl to keep the extended-ack text. Stale
 * answers to earlier requests (ones we stopped waiting for) are skipped.
 */
static int reply_error(const struct nlmsghdr *nlh, void *data)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	struct reply *r = data;
	size_t offset = sizeof(*e);

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (nlh->nlmsg_seq != r->seq)
		return MNL_CB_OK;
	r->error = -e->error;
	if (e->error && (nlh->nlmsg_flags & NLM_F_ACK_TLVS)) {
		/* Unless capped, our whole request is echoed before the attributes. */
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			offset += e->msg.nlmsg_len - sizeof(e->msg);
		if (offset <= nlh->nlmsg_len - mnl_nlmsg_size(0))
			mnl_attr_parse(nlh, (unsigned)offset, reply_attr, r);
	}
	return MNL_CB_STOP;
}

/* Sends one request and waits for its ack. Returns 0 or an errno, filling r. */
static int request(struct tun_netlink *n, struct nlmsghdr *nlh, struct reply *r)
{
	alignas(struct nlmsghdr) char buf[NL_BUFSIZE];
	mnl_cb_t ctl[NLMSG_MIN_TYPE] = {[NLMSG_ERROR] = reply_error};
	ssize_t len;
	int ret;

	memset(r, 0, sizeof(*r));
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = r->seq = ++n->seq;
	if (mnl_socket_sendto(n->nl, nlh, nlh->nlmsg_len) < 0)
		return r->error = errno;
	for (;;) {
		len = mnl_socket_recvfrom(n->nl, buf, sizeof(buf));
		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0)
			return r->error = errno;
		/* Sequence 0 turns off libmnl's check; reply_error does its own. */
		ret =
		    mnl_cb_run2(buf, (size_t)len, 0, n->portid, NULL, r, ctl, MNL_ARRAY_SIZE(ctl));
		if (ret == MNL_CB_ERROR)
			return r->error = errno;
		if (ret == MNL_CB_STOP)
			break;
	}
	return r->error;
}

/* Writes "<what> <ifname>: <reason>" to err and returns -1. */
static int fail(const struct tun_netlink *n, const struct reply *r, char *err, size_t errlen,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(const struct tun_netlink *n, const struct reply *r, char *err, size_t errlen,
                const char *fmt, ...)
{
	char what[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (r->text[0])
		set_err(err, errlen, "%s %s: %s (%s)", what, n->name, strerror(r->error), r->text);
	else
		set_err(err, errlen, "%s %s: %s", what, n->name, strerror(r->error));
	return -1;
}

/* Starts an RTM_NEWLINK request for our interface. */
static struct nlmsghdr *newlink(const struct tun_netlink *n, char *buf)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = RTM_NEWLINK;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = n->ifindex;
	return nlh;
}

/* Sets one 32-bit link attribute; what names it in the error message. */
static int set_link_u32(struct tun_netlink *n, uint16_t attr, uint32_t value, const char *what,
                        char *err, size_t errlen)
{
	alignas(struct nlmsghdr) char buf[NL_BUFSIZE];
	struct nlmsghdr *nlh = newlink(n, buf);
	struct reply r;
	char label[64];

	mnl_attr_put_u32(nlh, attr, value);
	if (request(n, nlh, &r)) {
		snprintf(label, sizeof(label), "cannot set %s %u on", what, value);
		return fail(n, &r, err, errlen, "%s", label);
	}
	return 0;
}

int tun_set_mtu(struct tun_netlink *n, unsigned mtu, char *err, size_t errlen)
{
	return set_link_u32(n, IFLA_MTU, mtu, "MTU", err, errlen);
}

int tun_set_txqueuelen(struct tun_netlink *n, unsigned qlen, char *err, size_t errlen)
{
	return set_link_u32(n, IFLA_TXQLEN, qlen, "txqueuelen", err, errlen);
}

int tun_set_up(struct tun_netlink *n, bool multicast, char *err, size_t errlen)
{
	alignas(struct nlmsghdr) char buf[NL_BUFSIZE];
	struct nlmsghdr *nlh = newlink(n, buf);
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct reply r;

	/* ifi_change says which flags to touch: set IFF_UP, clear IFF_MULTICAST.
	 * A point-to-point tunnel has no use for MLD reports and router
	 * solicitations, which would only be dropped as unroutable. */
	ifi->ifi_flags = IFF_UP | (multicast ? IFF_MULTICAST : 0);
	ifi->ifi_change = IFF_UP | IFF_MULTICAST;
	if (request(n, nlh, &r))
		return fail(n, &r, err, errlen, "cannot bring up");
	return 0;
}

/* Length of the family's addresses in bytes, or 0 if the family is unknown. */
static size_t addr_len(const struct yip_cidr *c)
{
	return c->family == AF_INET ? 4 : c->family == AF_INET6 ? 16 : 0;
}

/* RTM_NEWADDR or RTM_DELADDR of c on our interface. */
static int address(struct tun_netlink *n, const struct yip_cidr *c, bool add, char *err,
                   size_t errlen)
{
	alignas(struct nlmsghdr) char buf[NL_BUFSIZE];
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	struct reply r;
	char text[YIP_ADDRSTRLEN];
	size_t len = addr_len(c);

	if (!len || c->plen > len * 8) {
		set_err(err, errlen, "cannot %s address: bad family or prefix length",
		        add ? "add" : "remove");
		return -1;
	}
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = add ? RTM_NEWADDR : RTM_DELADDR;
	/* REPLACE makes re-adding an address we configured before harmless. */
	nlh->nlmsg_flags = add ? NLM_F_CREATE | NLM_F_REPLACE : 0;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (unsigned char)c->family;
	ifa->ifa_prefixlen = c->plen;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (unsigned)n->ifindex;
	/*
	 * The address is used as given, host bits and all: for an interface
	 * address they are the point. Without a peer address, IFA_ADDRESS
	 * equals IFA_LOCAL, as "ip address add" sends it.
	 */
	mnl_attr_put(nlh, IFA_LOCAL, len, c->addr);
	mnl_attr_put(nlh, IFA_ADDRESS, len, c->addr);
	if (add && c->family == AF_INET6) {
		/*
		 * Duplicate address detection would keep the address
		 * "tentative", unusable as a source, for a second or more, and
		 * a point-to-point tunnel has no neighbours to clash with.
		 * IFA_FLAGS supersedes the 8-bit ifa_flags; set both so older
		 * kernels understand too.
		 */
		ifa->ifa_flags = IFA_F_NODAD;
		mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
	}
	/* Adding what is there, or removing what is not, is done already. */
	if (request(n, nlh, &r) && r.error != (add ? EEXIST : EADDRNOTAVAIL)) {
		yip_cidr_format(c, text, sizeof(text));
		return fail(n, &r, err, errlen,
		            add ? "cannot add address %s to" : "cannot remove address %s from",
		            text);
	}
	return 0;
}

int tun_add_address(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen)
{
	return address(n, c, true, err, errlen);
}

int tun_del_address(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen)
{
	return address(n, c, false, err, errlen);
}

/* RTM_NEWROUTE or RTM_DELROUTE of c through our interface, in the main table. */
static int route(struct tun_netlink *n, const struct yip_cidr *c, bool add, char *err,
                 size_t errlen)
{
	alignas(struct nlmsghdr) char buf[NL_BUFSIZE];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	struct reply r;
	char text[YIP_ADDRSTRLEN];
	uint8_t dst[16] = {0};
	size_t len = addr_len(c);
	unsigned i;

	if (!len || c->plen > len * 8) {
		set_err(err, errlen, "cannot %s route: bad family or prefix length",
		        add ? "add" : "remove");
		return -1;
	}
	/* The kernel refuses a destination with host bits set; clear them. */
	memcpy(dst, c->addr, len);
	for (i = c->plen; i < len * 8; i++)
		dst[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE;
	/* EXCL, as "ip route add": an existing route is reported, and left alone. */
	nlh->nlmsg_flags = add ? NLM_F_CREATE | NLM_F_EXCL : 0;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (unsigned char)c->family;
	rtm->rtm_dst_len = c->plen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	/* No gateway: destinations are reached straight through the tunnel. */
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, len, dst);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)n->ifindex);
	/* Deleting matches destination, table and device: only our own route goes. */
	if (request(n, nlh, &r) && r.error != (add ? EEXIST : ESRCH)) {
		yip_cidr_format(c, text, sizeof(text));
		return fail(n, &r, err, errlen,
		            add ? "cannot add route %s on" : "cannot remove route %s on", text);
	}
	return 0;
}

int tun_add_route(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen)
{
	return route(n, c, true, err, errlen);
}

int tun_del_route(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen)
{
	return route(n, c, false, err, errlen);
}
