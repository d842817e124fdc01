/*
 * yip-rendezvous's QUIC listener (docs/rendezvous.md, "QUIC"): one UDP
 * socket whose packets go to a QUIC server (src/quic, ngtcp2). A
 * connection whose DATAGRAM frames authenticate with the engine is a yip
 * node's: each datagram goes to rdv_rx as RDV_SOCK_STREAM from the
 * connection's synthetic address (rdv_stream_addr with RDV_QUIC_ID_BIT),
 * and what the engine sends to that address goes out in one DATAGRAM
 * frame. The engine sees a QUIC node as it sees a TLS front's stream: the
 * relay works between UDP, TLS and QUIC nodes alike, and the server's
 * PROBE by UDP moves a node back to UDP.
 *
 * Limits (the QUIC server's: connections, handshakes in flight, per
 * source address; its idle timeout) and counters in struct yip_rdv_quic.
 * No allocation per packet.
 */
#ifndef YIP_RDVLOOP_QUIC_H
#define YIP_RDVLOOP_QUIC_H

#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "ctl/rendezvous.h"
#include "rendezvous/rendezvous.h"

#define RDV_QUIC_CONNS 256 /* connections at once */

struct rdv_quic_config {
	int fd;                    /* a bound UDP socket; the listener's from now on */
	union yip_sockaddr listen; /* its address */
	/* The certificate chain and key, PEM, read before the sandbox; NULL:
	 * a self-signed certificate. */
	const uint8_t *cert_pem, *key_pem;
	size_t cert_len, key_len;
};

struct rdv_quic;

/* A non-blocking UDP socket bound to a; -1 with err. */
int rdv_quic_listen(const union yip_sockaddr *a, char *err, size_t errlen);

/* NULL with err (fd closed). */
struct rdv_quic *rdv_quic_new(const struct rdv_quic_config *c, struct rdv_server *srv, char *err,
                              size_t errlen);
/* Closes every connection (gone for the engine) and the socket. NULL is fine. */
void rdv_quic_free(struct rdv_quic *q);

int rdv_quic_fd(const struct rdv_quic *q);
/* The socket is readable. */
void rdv_quic_readable(struct rdv_quic *q, uint64_t now);
/* The engine's send to a QUIC node (rdv_io.send, RDV_SOCK_STREAM, rdv_is_quic_addr). */
void rdv_quic_send(struct rdv_quic *q, const union yip_sockaddr *to, const uint8_t *d, size_t len);
/* When rdv_quic_timers is due; then run it. */
uint64_t rdv_quic_expiry(struct rdv_quic *q);
void rdv_quic_timers(struct rdv_quic *q, uint64_t now);

const struct yip_rdv_quic *rdv_quic_status(struct rdv_quic *q);

#endif
