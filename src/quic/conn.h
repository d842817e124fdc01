/*
 * One QUIC v1 connection (RFC 9000) on ngtcp2 0.12, either end, with no
 * I/O: packets in (quic_conn_read, quic_server_read), packets out
 * (quic_conn_write, quic_conn_send_datagram), the caller's clock (`now`,
 * nanoseconds of a monotonic clock) and the caller's sockets. yipd's QUIC
 * link (src/loop/quic.c) carries its datagrams in DATAGRAM frames (RFC
 * 9221), one yip datagram a QUIC packet; the unit test drives two ends in
 * memory.
 *
 * Client: quic_conn_dial. Its TLS sits behind a small seam (quic/tls.h):
 * GnuTLS through ngtcp2_crypto_gnutls for now, yip's own Chrome-shaped
 * engine later. Its connection IDs are shaped as Chrome's: a zero-length
 * source CID and an 8-byte random destination CID.
 *
 * Server: struct quic_server, the connections of one listening UDP
 * socket, demultiplexed by destination CID. It answers only QUIC v1
 * Initials of at least 1200 bytes (others: a version negotiation packet,
 * rate limited and never larger than what came in), holds at most so many
 * connections, handshakes in flight and connections per source address,
 * and counts every packet it drops (struct quic_server_stats). Each
 * server connection may carry a stream handler (struct
 * quic_stream_handler): the HTTP/3 decoy (quic/h3.h) a prober meets.
 *
 * Memory: one allocation per connection (plus ngtcp2's and GnuTLS's),
 * none per packet.
 */
#ifndef YIP_QUIC_CONN_H
#define YIP_QUIC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"

/* max_datagram_frame_size advertised (as Chrome does). */
#define QUIC_DGRAM_FRAME_MAX 65536
/* The largest UDP payload sent: ngtcp2's default ceiling (its PMTUD's
 * too); a packet buffer of this size always suffices. */
#define QUIC_PKT_MAX 1452
/* The smallest client Initial a server answers (RFC 9000 §14.1). */
#define QUIC_INITIAL_MIN 1200
/* The server's connection IDs, and the client's first destination CID. */
#define QUIC_SCID_LEN 8
/* A DATAGRAM packet's overhead (docs/protocol.md): the short header's
 * first byte, an 8-byte destination CID (the server's; the client's is
 * empty, counted as the larger), a packet number of at most 4 bytes, the
 * AEAD tag (16), the DATAGRAM frame's type (1) and a 2-byte length. The
 * largest datagram a packet carries is QUIC_PKT_MAX less this: 1420. */
#define QUIC_DGRAM_OVERHEAD (1 + QUIC_SCID_LEN + 4 + 16 + 1 + 2)
/* Idle timeout both ends advertise (max_idle_timeout), ns. */
#define QUIC_IDLE_TIMEOUT (30ULL * 1000 * 1000 * 1000)

/* Congestion control inside ngtcp2 (it has no "none"; docs/transports.md). */
enum quic_cc {
	QUIC_CC_BBR = 0,
	QUIC_CC_BBR2, /* yipd's default: docs/transports.md */
	QUIC_CC_CUBIC,
	QUIC_CC_RENO,
};

enum quic_conn_state {
	QUIC_CONN_HANDSHAKE, /* handshake under way */
	QUIC_CONN_OPEN,      /* handshake done: datagrams flow */
	QUIC_CONN_DONE,      /* closed, timed out or failed: quic_conn_why says which */
};

/* What quic_conn_read, quic_conn_expire and quic_server_read report (a bit set). */
#define QUIC_CONN_OPENED 0x1u /* the handshake completed during this call */
#define QUIC_CONN_ENDED  0x2u /* the connection is over (state QUIC_CONN_DONE) */
#define QUIC_CONN_NEW    0x4u /* quic_server_read: this packet made a new connection */

struct quic_conn;
struct quic_server;
struct quic_tls_ops; /* quic/tls.h */

/* Called for every DATAGRAM frame received, during quic_conn_read. */
typedef void (*quic_dgram_fn)(void *user, struct quic_conn *c, const uint8_t *p, size_t len);

struct quic_dial_config {
	const char *sni;  /* server name sent; NULL: none */
	const char *alpn; /* the ALPN offered; NULL: "h3" */
	enum quic_cc cc;
	/* The client's TLS (quic/tls.h); NULL: GnuTLS (quic_tls_gnutls). */
	const struct quic_tls_ops *tls;
};

/* Sets GnuTLS up (its global state: about 1.5 MiB resident with the
 * libraries it pulls in). The binary skips GnuTLS's own set-up at load
 * time, so a node with no QUIC link never pays for it; a daemon calls this
 * while it sets up, before its sandbox closes (GnuTLS reads its system
 * configuration). quic_conn_dial and quic_server_new call it too, for tools
 * and tests. 0 on success. */
int quic_lib_init(void);

/*
 * A client connection from local to remote (the addresses of the caller's
 * connected UDP socket; local may be the unspecified address). Its first
 * flight waits for quic_conn_write. NULL with err.
 */
struct quic_conn *quic_conn_dial(const struct quic_dial_config *cfg,
                                 const union yip_sockaddr *local, const union yip_sockaddr *remote,
                                 uint64_t now, char *err, size_t errlen);

/* Frees a client connection (a server's belong to the server: quic_server_close
 * them). Secrets wiped. NULL is fine. */
void quic_conn_free(struct quic_conn *c);

/* Where received datagrams go; and the caller's pointer, kept for it. */
void quic_conn_set_recv(struct quic_conn *c, quic_dgram_fn fn, void *user);
void *quic_conn_user(const struct quic_conn *c);

/*
 * One UDP payload that arrived on this connection's path from `from`
 * (NULL: the remote address it has). Datagrams in it go to the recv
 * function; QUIC_CONN_* bits. A packet that does not decrypt is dropped
 * and counted (stats.dropped); a fatal error ends the connection.
 */
unsigned quic_conn_read(struct quic_conn *c, const uint8_t *pkt, size_t len,
                        const union yip_sockaddr *from, uint64_t now);

/*
 * The next packet the connection wants to send (handshake, ACKs,
 * retransmitted CRYPTO or stream data, PINGs, CONNECTION_CLOSE): its
 * length in pkt (cap >= QUIC_PKT_MAX), 0 when nothing more waits. Call
 * until 0 after every read, expiry and send.
 */
size_t quic_conn_write(struct quic_conn *c, uint8_t *pkt, size_t cap, uint64_t now);

/*
 * One packet carrying the len-byte datagram d in a DATAGRAM frame (with
 * ACKs and whatever else fits): its length in pkt, *carried true. 0 (and
 * *carried false) when it cannot go now: congestion control, the
 * server's amplification limit, not open, or larger than
 * quic_conn_dgram_max; the caller queues or drops it. A length with
 * *carried false: the packet holds other frames only (send it: the keep
 * stream's bytes, conn.c, or frames the datagram did not fit beside);
 * call again.
 */
size_t quic_conn_send_datagram(struct quic_conn *c, const uint8_t *d, size_t len, uint8_t *pkt,
                               size_t cap, uint64_t now, bool *carried);

/* The largest datagram that fits in one packet now (the path's UDP payload
 * less QUIC's overhead; docs/protocol.md); 0 while not open. */
size_t quic_conn_dgram_max(const struct quic_conn *c);

/* When quic_conn_expire is due next (ns, the caller's clock); UINT64_MAX: never. */
uint64_t quic_conn_expiry(const struct quic_conn *c);
/* Runs the timers due at now (loss detection, ACK delay, idle timeout,
 * keep-alive); QUIC_CONN_* bits. Then quic_conn_write until 0. */
unsigned quic_conn_expire(struct quic_conn *c, uint64_t now);

/* Starts closing: a CONNECTION_CLOSE waits for quic_conn_write and the state is
 * QUIC_CONN_DONE ("closed") from now on. */
void quic_conn_close(struct quic_conn *c, uint64_t now);

/* Sends a PING every interval (ns) while idle, so that NATs keep the path
 * open; 0: never. */
void quic_conn_keepalive(struct quic_conn *c, uint64_t interval);

enum quic_conn_state quic_conn_state(const struct quic_conn *c);
/* Why it ended: "closed" (either end), "idle timeout", "handshake timeout",
 * "tls: ..." (the handshake failed), "quic: ..." (a protocol error), "reset"
 * (a stateless reset); NULL while it has not. */
const char *quic_conn_why(const struct quic_conn *c);
const union yip_sockaddr *quic_conn_peer(const struct quic_conn *c);
bool quic_conn_is_server(const struct quic_conn *c);

/* What yipctl shows: "QUICv1", the cipher suite (as TLS names it), the SNI
 * sent or received, the ALPN agreed (NULL: none). */
struct quic_conn_info {
	const char *version;
	const char *cipher;
	const char *sni;
	const char *alpn;
	bool server;
};
void quic_conn_info(const struct quic_conn *c, struct quic_conn_info *out);

struct quic_conn_stats {
	uint64_t pkts_in, pkts_out, bytes_in, bytes_out; /* UDP payloads */
	uint64_t dgrams_in, dgrams_out;                  /* DATAGRAM frames */
	uint64_t dgram_blocked; /* quic_conn_send_datagram could not send now */
	uint64_t dgram_too_big; /* ... larger than quic_conn_dgram_max */
	uint64_t dropped;       /* packets quic_conn_read refused (ngtcp2 errors short of fatal) */
	uint64_t dgram_lost;    /* DATAGRAM frames ngtcp2 declared lost (may be spurious) */
	uint64_t rtt_ns, cwnd, bytes_in_flight; /* now (smoothed RTT) */
};
void quic_conn_stats(const struct quic_conn *c, struct quic_conn_stats *out);

/* ---- Streams, for a server connection's handler (the HTTP/3 decoy) ---- */

/* Laid out as ngtcp2_vec and nghttp3_vec. */
struct quic_vec {
	uint8_t *base;
	size_t len;
};

/*
 * A server connection's stream handler: the callbacks ngtcp2 makes about
 * streams, passed on to a per-connection object. Every function returns
 * 0, or a negative value to end the connection (a protocol error). The
 * server calls open once per connection when its handshake completes
 * (NULL: no handler on this connection) and free when the connection goes.
 */
struct quic_stream_handler {
	void *(*open)(void *arg, struct quic_conn *c);
	void (*free)(void *h);
	int (*recv_stream_data)(void *h, int64_t stream_id, const uint8_t *data, size_t len,
	                        bool fin);
	int (*acked_stream_data_offset)(void *h, int64_t stream_id, uint64_t offset,
	                                uint64_t datalen);
	int (*stream_close)(void *h, int64_t stream_id, bool has_app_error, uint64_t app_error);
	/* The peer reset its sending side / asked us to stop sending. NULL: ignored. */
	int (*stream_reset)(void *h, int64_t stream_id, uint64_t app_error);
	int (*stream_stop_sending)(void *h, int64_t stream_id, uint64_t app_error);
	/* Flow control opened on a stream (nghttp3_conn_unblock_stream). NULL: ignored. */
	int (*extend_max_stream_data)(void *h, int64_t stream_id);
	/*
	 * Asked by quic_conn_write: the stream data waiting to go, as
	 * nghttp3_conn_writev_stream gives it: *stream_id (-1: none), *fin, up
	 * to veccnt vectors; the number of vectors, or negative to end.
	 */
	int (*writev_stream)(void *h, int64_t *stream_id, bool *fin, struct quic_vec *vec,
	                     size_t veccnt);
	/* n bytes of stream_id were put in a packet (nghttp3_conn_add_write_offset). */
	int (*add_write_offset)(void *h, int64_t stream_id, size_t n);
	/* The stream is blocked by flow control / shut for writing (nghttp3_conn_block_stream,
	 * nghttp3_conn_shutdown_stream_write). */
	int (*block_stream)(void *h, int64_t stream_id);
	int (*shutdown_stream_write)(void *h, int64_t stream_id);
};

/* What a handler calls back on its connection (ngtcp2_conn_*); 0 or negative. */
int quic_conn_open_uni_stream(struct quic_conn *c, int64_t *stream_id);
/* The handler consumed n bytes of stream_id: open flow control by as much. */
int quic_conn_extend_stream(struct quic_conn *c, int64_t stream_id, size_t n);
int quic_conn_shutdown_stream(struct quic_conn *c, int64_t stream_id, uint64_t app_error);
int quic_conn_shutdown_stream_read(struct quic_conn *c, int64_t stream_id, uint64_t app_error);
/* Stream data waits in the handler: quic_conn_write will ask for it. */
void quic_conn_stream_ready(struct quic_conn *c);
/* The handler's object (what open returned), or NULL. */
void *quic_conn_handler(const struct quic_conn *c);

/* ---- Server ---- */

struct quic_server_config {
	/* The certificate chain (leaf first) and private key, PEM, in memory
	 * (the caller read tls_cert / tls_key). NULL: a fresh self-signed
	 * certificate for self_name (NULL: "localhost"). */
	const uint8_t *cert_pem, *key_pem;
	size_t cert_len, key_len;
	const char *self_name;
	/* The ALPN selected; NULL: "h3". */
	const char *alpn;
	enum quic_cc cc;
	/* Limits; 0: the defaults (QUIC_SERVER_*). */
	unsigned max_conns, max_handshakes, max_per_source;
	unsigned vn_per_sec; /* version negotiation packets a second */
	/* Every server connection's stream handler (NULL: none) and its arg. */
	const struct quic_stream_handler *streams;
	void *streams_arg;
	/* Called just before the server frees one of its connections (idle,
	 * closed, failed, quic_server_close), so the caller forgets it. */
	void (*gone)(void *arg, struct quic_conn *c);
	void *gone_arg;
	/* Where every server connection's datagrams go (quic_conn_set_recv
	 * changes one connection's). */
	quic_dgram_fn recv;
	void *recv_user;
};

#define QUIC_SERVER_MAX_CONNS      256
#define QUIC_SERVER_MAX_HANDSHAKES 64
#define QUIC_SERVER_MAX_PER_SOURCE 8
#define QUIC_SERVER_VN_PER_SEC     50

/* Every packet the server did not give a connection, by reason, and more. */
struct quic_server_stats {
	uint64_t drop_short;       /* too short to be QUIC, or a header that does not parse */
	uint64_t drop_unknown;     /* a short header (or a non-Initial) for no connection */
	uint64_t drop_small;       /* an Initial shorter than QUIC_INITIAL_MIN */
	uint64_t drop_not_initial; /* ngtcp2_accept refused it (not a valid first packet) */
	uint64_t drop_version;     /* another version: answered with version negotiation... */
	uint64_t vn_sent;          /* ... or not, rate limit reached: drop_vn_limited */
	uint64_t drop_vn_limited;
	uint64_t drop_full;       /* max_conns reached */
	uint64_t drop_handshakes; /* max_handshakes in flight reached */
	uint64_t drop_per_source; /* max_per_source from one address reached */
	uint64_t drop_nomem;      /* a connection could not be made */
	uint64_t drop_conn;       /* a connection's own read refused it */
	uint64_t accepted, opened, expired, closed, failed;
	uint64_t conns, handshakes; /* now */
};

/* NULL with err (a certificate or key that does not load). */
struct quic_server *quic_server_new(const struct quic_server_config *cfg, char *err, size_t errlen);
/* Frees every connection (gone called for each) and the server. NULL is fine. */
void quic_server_free(struct quic_server *s);

/*
 * One UDP payload that arrived at the listener (local: its address) from
 * `from`. It goes to the connection its destination CID names, or makes a
 * new one (a QUIC v1 Initial, limits permitting); *conn is that
 * connection (NULL: the packet was dropped and counted, or answered). A
 * version negotiation answer is written into reply (cap bytes) and its
 * length in *reply_len (0: none): send it to `from`. QUIC_CONN_* bits.
 */
unsigned quic_server_read(struct quic_server *s, const uint8_t *pkt, size_t len,
                          const union yip_sockaddr *local, const union yip_sockaddr *from,
                          uint64_t now, struct quic_conn **conn, uint8_t *reply, size_t cap,
                          size_t *reply_len);

/* Iterates the server's connections: NULL gives the first; NULL at the end. */
struct quic_conn *quic_server_next(struct quic_server *s, struct quic_conn *prev);

/* The earliest quic_conn_expiry of its connections. */
uint64_t quic_server_expiry(struct quic_server *s);
/* Runs every connection's timers due at now and frees (gone first) those that are
 * over and have nothing left to send. Then quic_conn_write each until 0. */
void quic_server_expire(struct quic_server *s, uint64_t now);

/* Frees one of its connections now (gone first; no CONNECTION_CLOSE). */
void quic_server_close(struct quic_server *s, struct quic_conn *c);

const struct quic_server_stats *quic_server_stats(const struct quic_server *s);

#endif
