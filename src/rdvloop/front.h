/*
 * yip-rendezvous's TLS front (docs/rendezvous.md, "The TLS front"): a TCP
 * listener whose connections are TLS servers (src/tlslink, OpenSSL). A
 * visitor whose first plaintext bytes are a whole frame (wire/stream.h)
 * that authenticates with the engine is a yip node: its frames go to
 * rdv_rx as RDV_SOCK_STREAM from the connection's synthetic address, and
 * what the engine sends to that address goes into its stream. Everything
 * else is relayed, byte for byte and the bytes already read first, to the
 * decoy web server (plain TCP), or answered by a small built-in site when
 * there is none. The decoy connection is opened when the TLS handshake
 * completes, so that a visitor who sends nothing sees the decoy's own
 * timing.
 *
 * Its fds live in the loop's epoll set with tags below YIP_POLL_OWN
 * (src/poll): the loop hands their events to rdv_front_event.
 */
#ifndef YIP_RDVLOOP_FRONT_H
#define YIP_RDVLOOP_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "addr/addr.h"
#include "ctl/rendezvous.h"
#include "rendezvous/rendezvous.h"

#define FRONT_MAX_CONNS      1024 /* TCP connections at once */
#define FRONT_MAX_HANDSHAKES 256  /* ... of them in their TLS handshake */
#define FRONT_PER_SOURCE     32   /* ... from one source (an IPv4 address, an IPv6 /64) */
#define FRONT_HANDSHAKE_S    10   /* a TLS handshake not done by then is closed */
#define FRONT_SITE_IDLE_S    60   /* the built-in site closes a connection idle this long */

struct rdv_front_config {
	int fd; /* a listening TCP socket (rdv_front_listen); the front's from now on */
	const char *cert_path, *key_path;
	bool decoy; /* relay to decoy_addr, else the built-in site */
	union yip_sockaddr decoy_addr;
};

/* A non-blocking listening TCP socket on a; -1 with err. */
int rdv_front_listen(const union yip_sockaddr *a, char *err, size_t errlen);

struct rdv_front;

/* Loads the certificate and key and watches the listener in epfd; the
 * engine gets the yip streams' frames. NULL with err (fd closed). */
struct rdv_front *rdv_front_new(const struct rdv_front_config *c, struct rdv_server *srv, int epfd,
                                char *err, size_t errlen);

/* Closes every connection (streams gone for the engine) and the listener. */
void rdv_front_free(struct rdv_front *f);

/* An epoll event whose tag is the front's. */
void rdv_front_event(struct rdv_front *f, uint64_t now, const struct epoll_event *ev);

/* The engine's send to a stream (rdv_io.send with RDV_SOCK_STREAM). */
void rdv_front_send(struct rdv_front *f, const union yip_sockaddr *to, const uint8_t *d,
                    size_t len);

/* Handshake deadlines and the site's idle connections; call about once a second. */
void rdv_front_timers(struct rdv_front *f, uint64_t now);

const struct yip_rdv_front *rdv_front_status(const struct rdv_front *f);

#endif
