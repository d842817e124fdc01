/*
 * yipd's QUIC links (docs/transports.md): yip datagrams in DATAGRAM frames
 * (RFC 9221) of QUIC v1 connections (quic/conn.h), one link (link/link.h,
 * YIP_LINK_QUIC) per connection. Connections are dialed to the peers whose
 * endpoint is quic://, each from a connected UDP socket of its own on an
 * ephemeral port, and accepted on listen_quic (one UDP socket, the
 * server's demultiplexing by connection ID). A link is not reliable (QUIC
 * datagrams are not retransmitted): FEC and ARQ stay on. An accepted link
 * on which nothing authenticates within 15 s of its handshake is closed. A
 * datagram the connection cannot send now (congestion control) is dropped
 * and counted, never waited for.
 *
 * The sockets are watched in an epoll set of their own, one fd of the
 * loop's registry (src/poll), so both I/O drivers serve them alike; QUIC's
 * timers are the loop's timeout (loop_quic_tick).
 */
#ifndef YIP_LOOP_QUIC_H
#define YIP_LOOP_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "config/config.h"
#include "crypto/crypto.h"
#include "link/link.h"
#include "peer/peer.h"
#include "poll/poll.h"
#include "quic/conn.h"
#include "quic/decoy.h"
#include "util/clock.h"

#define LOOP_QUIC_CONNS 256 /* QUIC links at once, both ways */
#define LOOP_QUIC_DIALS YIP_MAX_PEERS
#define LOOP_QUIC_RXQ   8 /* datagrams one packet may hand the engine */
/* Datagrams that wait for ngtcp2's congestion window, per connection, and
 * how long one may wait (then it is dropped, oldest first): a blocked
 * datagram waits rather than being lost, so the inner flows see delay
 * where the window is short, not loss that yip's FEC would read as the
 * path's and answer with more repairs. */
#define LOOP_QUIC_TXQ         1024
#define LOOP_QUIC_TXQ_SOJOURN (30 * YIP_NS_PER_MS)

struct yip_device;
struct quic_conn;
struct quic_server;
struct loop_quic;

struct loop_quic_conn {
	struct loop_quic *t;
	struct quic_conn *c;
	int fd;       /* a dialed connection's socket; -1: accepted (the listener's) */
	int64_t link; /* its id once open, else -1 */
	int dial;     /* the dial it is for, or -1: accepted */
	uint64_t started, opened_at, logged_at;
	bool proven;
	/* Datagrams waiting for the congestion window (a ring; taken when
	 * the connection first blocks, freed with it). */
	struct loop_quic_txe {
		uint64_t at;
		uint16_t len;
		uint8_t d[QUIC_PKT_MAX];
	} * txq;
	unsigned txq_head, txq_n;
	/* Stall watch (loop_quic_tick): the window full and nothing acked. */
	uint64_t stuck_since, stuck_inflight;
};

struct loop_quic_dial {
	/* A rendezvous server's (loop_quic_dial_server): its index, and
	 * whether the engine still wants it (else not dialed again); let_go:
	 * to close at the next tick (undial, asked from inside the engine). */
	bool server, wanted, let_go;
	size_t index;
	uint8_t key[YIP_KEY_LEN];
	union yip_sockaddr addr;
	char sni[254];
	int conn; /* its slot, or -1 */
	uint64_t next_at, backoff, failures;
	char why[160];
};

struct loop_quic_stats {
	uint64_t dialed, accepted, opened, closed, failed;
	uint64_t decoy_only; /* accepted connections left to the decoy alone (no DATAGRAM, or
	                        nothing authenticated in 15 s) */
	uint64_t dgrams_in, dgrams_out, blocked, too_big, rx_overflow, send_errors;
	uint64_t queued;  /* datagrams that waited for the congestion window */
	uint64_t q_stale; /* dropped after LOOP_QUIC_TXQ_SOJOURN in the queue */
	uint64_t q_full;  /* dropped: the queue was full */
	uint64_t stalls;  /* connections given up: window full and stuck (stall_watch) */
};

struct loop_quic {
	struct yip_device *dev;
	struct yip_links *links;
	uint32_t link_from;
	int epfd;
	int listen_fd; /* -1: no listen_quic */
	union yip_sockaddr listen;
	struct quic_server *srv;
	struct loop_quic_conn *conn[LOOP_QUIC_CONNS];
	struct loop_quic_dial *dials;
	size_t n_dials;
	/* The configuration's quic:// rendezvous lines, by line: where to dial. */
	struct loop_quic_line {
		bool quic;
		union yip_sockaddr addr;
		char sni[254];
	} lines[YIP_MAX_RENDEZVOUS_LINES];
	enum quic_cc cc;
	struct loop_quic_stats stats;
	/* The HTTP/3 decoy on every accepted connection (docs/quic-decoy.md). */
	struct quic_decoy decoy;
	/* Datagrams a read handed over, for the engine once ngtcp2 has returned. */
	struct {
		size_t len;
		uint8_t d[YIP_MAX_DGRAM];
	} rxq[LOOP_QUIC_RXQ];
	unsigned n_rxq;
	/* Packets leave together (sendmmsg, UDP GSO trains) and are read
	 * together (recvmmsg): one system call per batch, not per packet.
	 * Allocated with the epoll set, only where QUIC is configured. */
	struct udp_batch *tx, *rx;
	uint8_t dgram[YIP_MAX_DGRAM];
	uint8_t pkt[2048];
};

int loop_quic_setup(struct loop_quic *t, const struct yip_config *cfg, const char *host_name,
                    struct yip_links *links, uint32_t link_from, char *err, size_t errlen);
int loop_quic_watch(struct loop_quic *t, struct yip_poll *p);
void loop_quic_attach(struct loop_quic *t, struct yip_device *dev);
void loop_quic_free(struct loop_quic *t);
/*
 * Dial rendezvous server k over QUIC as rendezvous line `line` (a quic://
 * one) says and keep it up (yip_io.dial_server): once open, the engine
 * gets yip_device_server_link. -1 if the line is not quic://.
 */
int loop_quic_dial_server(struct loop_quic *t, uint64_t now, size_t k, size_t line);
/* Server k is reached another way: its QUIC link goes at the next tick and
 * is not dialed again until loop_quic_dial_server asks (yip_io.undial_server). */
void loop_quic_undial_server(struct loop_quic *t, size_t k);
/* Runs QUIC's timers, dials what is due, ends what timed out; the next deadline (0: none). */
uint64_t loop_quic_tick(struct loop_quic *t, uint64_t now);
/* Writes every connection's pending packets (ACKs, handshake, close). */
void loop_quic_flush(struct loop_quic *t);

struct loop_quic_link_info {
	const char *version, *cipher, *sni, *alpn;
	bool accepted;
	union yip_sockaddr peer;
};
bool loop_quic_link_info(const struct loop_quic *t, uint32_t link, struct loop_quic_link_info *out);

#endif
