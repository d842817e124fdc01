/*
 * yip-rendezvous's REALITY front (docs/transports.md, "The REALITY front"):
 * a TCP listener in front of a real web site, the target. Every
 * connection is mirrored: what the visitor sends goes to the target as it
 * comes, so the target sees the visitor's own bytes at the visitor's own
 * pace. Once the visitor's first record is whole, the front decides:
 *
 *   - a ClientHello sealed to the front's key (src/reality) is a yip
 *     node's. The front waits for the target's answer to that same hello
 *     and answers the node itself, in the target's shape: the target's
 *     ServerHello with the front's random and key share, a
 *     ChangeCipherSpec where the target sent one, and its encrypted
 *     records at the target's record lengths, each sent as the target's
 *     arrives (src/tls's server, its certificate the front's, from
 *     reality_cert_make). The target's connection is then closed; the
 *     node's stream carries frames (wire/stream.h) as the TLS front's do.
 *   - anything else (another hello, garbage, a hello spread over records,
 *     a record over 16 KiB, nothing at all) is spliced to the target byte
 *     for byte, both ways, until either side closes; a reset is passed on
 *     as a reset.
 *
 * Every connection ends in exactly one counted verdict (struct
 * yip_rdv_reality). Bounded: REALITY_MAX_CONNS connections, of them
 * REALITY_MAX_PENDING undecided, REALITY_PER_SOURCE per source; two
 * buffers of REALITY_BUF a connection, taken when it is accepted.
 *
 * Its fds live in the loop's epoll set with tags below YIP_POLL_OWN, as
 * the TLS front's do (a server has one or the other).
 */
#ifndef YIP_RDVLOOP_REALITY_H
#define YIP_RDVLOOP_REALITY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "addr/addr.h"
#include "ctl/rendezvous.h"
#include "reality/reality.h"
#include "rendezvous/rendezvous.h"

#define REALITY_MAX_CONNS   1024
#define REALITY_MAX_PENDING 256 /* connections not decided yet */
#define REALITY_PER_SOURCE  32  /* from one source (an IPv4 address, an IPv6 /64) */
#define REALITY_UNDECIDED_S 300 /* an undecided connection the target keeps open this long */
#define REALITY_FLIGHT_S    10  /* an authenticated handshake not done by then is closed */

struct rdv_reality_config {
	int fd; /* a listening TCP socket (rdv_front_listen); the front's from now on */
	union yip_sockaddr target;
	struct reality_server_config seal;
};

struct rdv_reality;

/* NULL with err (fd closed). */
struct rdv_reality *rdv_reality_new(const struct rdv_reality_config *c, struct rdv_server *srv,
                                    int epfd, char *err, size_t errlen);
void rdv_reality_free(struct rdv_reality *r);
void rdv_reality_event(struct rdv_reality *r, uint64_t now, const struct epoll_event *ev);
/* The engine's send to a node's stream. */
void rdv_reality_send(struct rdv_reality *r, const union yip_sockaddr *to, const uint8_t *d,
                      size_t len);
/* Deadlines; about once a second. */
void rdv_reality_timers(struct rdv_reality *r, uint64_t now);
const struct yip_rdv_reality *rdv_reality_status(const struct rdv_reality *r);

#endif
