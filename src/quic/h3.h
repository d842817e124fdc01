/*
 * The QUIC listener's decoy: an HTTP/3 server (RFC 9114) for one QUIC
 * connection, on libnghttp3, that answers every request with the built-in
 * site (wire/http.h, the TLS front's: nginx's headers, 200 for the page,
 * 404 for other paths, 405 for other methods). To anything that is not a
 * yip node the listener is that web server; yip's own traffic rides DATAGRAM
 * frames beside it and never touches this (docs/quic-decoy.md).
 *
 * No I/O and nothing of the QUIC stack: the connection's owner passes in
 * the bytes of each stream as QUIC delivers them (yip_h3_read), the acks
 * and closes, and takes out what to send (yip_h3_writev, then
 * yip_h3_written with what QUIC took). What HTTP/3 asks of QUIC beyond
 * that (give flow-control credit back, STOP_SENDING, RESET_STREAM) comes
 * through the hooks. QPACK and the framing are nghttp3's.
 *
 * Bounded: YIP_H3_STREAMS request streams at a time in a fixed table,
 * YIP_H3_REQUESTS per connection, header sections of YIP_H3_FIELDS_MAX
 * bytes, YIP_H3_BODY_MAX request body bytes a stream (read, counted and
 * dropped). A request past a bound is refused (its stream reset with
 * H3_REQUEST_REJECTED, or H3_EXCESSIVE_LOAD for a body) and counted; a
 * stream nghttp3 finds malformed is reset by it and counted; an error that
 * ends the connection is a negative return, and yip_h3_error_code names the
 * application error to close the QUIC connection with.
 */
#ifndef YIP_QUIC_H3_H
#define YIP_QUIC_H3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Request streams open at once, as nginx's http3_max_concurrent_streams: the
 * QUIC server should advertise as many (initial_max_streams_bidi). */
#define YIP_H3_STREAMS    128
#define YIP_H3_REQUESTS   1000  /* requests a connection, as nginx's keepalive_requests */
#define YIP_H3_FIELDS_MAX 8192  /* a header section, as QPACK decodes it */
#define YIP_H3_BODY_MAX   65536 /* request body bytes a stream reads and drops */

/* What yip_h3_writev hands out: the layout of ngtcp2_vec and nghttp3_vec. */
struct yip_h3_vec {
	const uint8_t *base;
	size_t len;
};

struct yip_h3_hooks {
	void *ctx;
	/* n more bytes of stream sid consumed outside a yip_h3_read of it:
	 * extend the stream's and the connection's flow-control credit. */
	void (*consumed)(void *ctx, int64_t sid, uint64_t n);
	/* Send STOP_SENDING / RESET_STREAM on sid with that error code. */
	void (*stop_sending)(void *ctx, int64_t sid, uint64_t code);
	void (*reset_stream)(void *ctx, int64_t sid, uint64_t code);
};

struct yip_h3_stats {
	uint64_t requests;        /* answered */
	uint64_t status[4];       /* of those: 200, 404, 405, 400 */
	uint64_t refused_streams; /* past YIP_H3_STREAMS at once or YIP_H3_REQUESTS in all */
	uint64_t refused_headers; /* a header section past YIP_H3_FIELDS_MAX */
	uint64_t refused_body;    /* a body past YIP_H3_BODY_MAX */
	uint64_t malformed;       /* streams nghttp3 reset (bad headers, bad framing) */
	uint64_t body_bytes;      /* request body bytes read and dropped */
	uint64_t conn_errors;     /* errors that end the connection */
};

struct yip_h3;

/* A server for one connection, or NULL (out of memory). st, kept by the
 * caller, is added to (several connections may share one). */
struct yip_h3 *yip_h3_new(const struct yip_h3_hooks *hooks, struct yip_h3_stats *st);
void yip_h3_free(struct yip_h3 *h);

/* The three unidirectional streams a server opens (control, QPACK encoder,
 * QPACK decoder), once the QUIC handshake completes; 0 or negative. */
int yip_h3_bind(struct yip_h3 *h, int64_t control, int64_t qpack_enc, int64_t qpack_dec);

/* The next len bytes of peer stream sid (fin: its last). wall_s, Unix
 * seconds, dates an answer. Returns the bytes consumed, to extend the
 * stream's and the connection's flow control by (body bytes included), or
 * negative: the connection must close (yip_h3_error_code). */
int64_t yip_h3_read(struct yip_h3 *h, int64_t sid, const uint8_t *p, size_t len, bool fin,
                    uint64_t wall_s);

/* Data to send: up to n vecs for one stream, returned in *sid (-1: none),
 * *fin if they end it. Returns how many vecs (0 with *sid >= 0 and *fin: a
 * bare fin), or negative (yip_h3_error_code). Then yip_h3_written with the
 * bytes QUIC accepted (0 for a bare fin that it took). */
int yip_h3_writev(struct yip_h3 *h, int64_t *sid, bool *fin, struct yip_h3_vec *v, size_t n);
int yip_h3_written(struct yip_h3 *h, int64_t sid, size_t n);

/* QUIC's news: n more bytes of sid acked by the peer; sid cannot take
 * more until unblocked (flow control); sid is writable again; the peer
 * reset sid (its read side is gone); sid closed. 0 or negative. */
int yip_h3_acked(struct yip_h3 *h, int64_t sid, uint64_t n);
void yip_h3_block(struct yip_h3 *h, int64_t sid);
int yip_h3_unblock(struct yip_h3 *h, int64_t sid);
void yip_h3_shutdown_write(struct yip_h3 *h, int64_t sid);
int yip_h3_reset(struct yip_h3 *h, int64_t sid);
int yip_h3_closed(struct yip_h3 *h, int64_t sid, uint64_t app_error);

/* The HTTP/3 application error code to close the QUIC connection with
 * after a negative return rv. */
uint64_t yip_h3_error_code(int rv);

#endif
