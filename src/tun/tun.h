/* The TUN device and its configuration over rtnetlink (libmnl). */
#ifndef YIP_TUN_TUN_H
#define YIP_TUN_TUN_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "addr/addr.h"

/*
 * Opens (creating if needed) the TUN (or TAP) device name with IFF_NO_PI,
 * non-blocking and close-on-exec. The kernel's chosen name is written to
 * actual (IFNAMSIZ bytes). Returns the fd, or -1 with a message in err.
 *
 * With offload (TUN only), every packet read or written carries a
 * struct virtio_net_hdr in front, and the kernel may hand over TCP
 * super-packets of up to 64 KB with their checksum left to us (TSO4, TSO6,
 * CSUM); *vnet tells whether that is on. With queues > 1 the device is
 * multi-queue and this opens one queue (call again with the same name for
 * the next).
 */
int tun_open(const char *name, bool tap, bool offload, bool multiqueue, bool *vnet,
             char actual[IFNAMSIZ], char *err, size_t errlen);

/* An rtnetlink socket for configuring one interface. */
struct tun_netlink {
	struct mnl_socket *nl;
	unsigned portid;
	unsigned seq;
	int ifindex;
	char name[IFNAMSIZ]; /* of that interface, for messages */
};

/* Opens an rtnetlink socket bound to interface ifname. Returns 0 or -1 with err. */
int tun_netlink_open(struct tun_netlink *n, const char *ifname, char *err, size_t errlen);
void tun_netlink_close(struct tun_netlink *n);

/* Each returns 0, or -1 with a message in err. "Already exists" counts as success. */
int tun_set_mtu(struct tun_netlink *n, unsigned mtu, char *err, size_t errlen);
int tun_set_txqueuelen(struct tun_netlink *n, unsigned qlen, char *err, size_t errlen);
/* Brings the link up; multicast stays on only if asked (TAP needs it for IPv6 ND). */
int tun_set_up(struct tun_netlink *n, bool multicast, char *err, size_t errlen);
/* IPv6 addresses are added with IFA_F_NODAD so they are usable at once. */
int tun_add_address(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen);
int tun_add_route(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen);
/* The reverse of the two above; what is not there counts as removed. */
int tun_del_address(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen);
int tun_del_route(struct tun_netlink *n, const struct yip_cidr *c, char *err, size_t errlen);

#endif
