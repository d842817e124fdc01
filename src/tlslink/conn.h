/*
 * One TLS connection over TCP, either end: a plaintext byte stream in both
 * directions over a non-blocking socket. The client end is yip's own TLS
 * 1.3 client (src/tls: the Chrome-shaped ClientHello); the server end is
 * OpenSSL's libssl, as real web servers run it, or yip's own server engine
 * for a connection the REALITY front has shaped (tls_conn_adopt). What the stream carries is
 * the caller's: yipd's TLS link frames datagrams in it (tlslink.h,
 * wire/stream.h), yip-rendezvous's front first looks at what a visitor
 * sends and then either does the same or hands the stream to its decoy.
 *
 * Using it: tls_conn_dial or tls_conn_accept, then watch tls_conn_fd for
 * tls_conn_events and call tls_conn_handle with what epoll reported. It
 * says (TLS_CONN_*) when the handshake completed, when plaintext is
 * waiting (tls_conn_read until it returns 0) and when the connection is
 * over. tls_conn_write protects and queues plaintext; what the socket does
 * not take at once waits in the connection, at most TLS_CONN_OUT_MAX bytes
 * of records: past that, writes are refused (the caller drops and counts),
 * never blocking. The socket is set up to keep its own unsent queue small
 * (TCP_NOTSENT_LOWAT) with TCP_NODELAY on, so a stream of datagrams sees
 * latency rather than a deep buffer.
 *
 * Memory: one allocation per connection (plus the client engine's, or
 * OpenSSL's), none per record.
 */
#ifndef YIP_TLSLINK_CONN_H
#define YIP_TLSLINK_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "reality/reality.h"

/*
 * The queue: records waiting in the connection past what the socket took.
 * Writes are refused once its oldest byte has waited TLS_CONN_SOJOURN (the
 * path is slower than what is written: the writer should drop, and an
 * inner TCP sees that loss), or past TLS_CONN_OUT_MAX bytes. A short
 * stall (the outer TCP repairing a loss, one round trip) is absorbed
 * rather than dropped. Its memory grows from 64 KiB as it is used.
 */
#define TLS_CONN_OUT_MAX (4096 * 1024)
#define TLS_CONN_SOJOURN (40ULL * 1000 * 1000) /* ns */
/* The socket's unsent queue (TCP_NOTSENT_LOWAT). */
#define TLS_CONN_NOTSENT_LOWAT (128 * 1024)
/* Congestion control asked for on every connection (docs/transports.md). */
#define TLS_CONN_CC "bbr"

/* The server side's certificate, key and policy: one per listener. */
struct tls_server_ctx;

struct tls_ctx_config {
	const char *cert_path; /* PEM chain, leaf first; NULL with key_path NULL: self-signed */
	const char *key_path;  /* PEM private key */
	/* No certificate given: a fresh self-signed one for this name, like a
	 * default Debian web server's (CN = the host name, ssl-cert's
	 * snakeoil). NULL: "localhost". */
	const char *self_name;
	/* ALPN protocols the server will select, in its order of preference
	 * (a client's first match wins), NULL-terminated; NULL: none selected. */
	const char *const *alpn;
};

/*
 * Loads what libssl and libcrypto read once (their configuration file, the
 * algorithms a connection uses), so that no connection needs a file after
 * the daemon is sandboxed. Call before any other function here. 0, or -1.
 */
int tls_conn_init(void);

/* Loads the certificate and key (or makes a self-signed pair); NULL with err. */
struct tls_server_ctx *tls_server_ctx_new(const struct tls_ctx_config *cfg, char *err,
                                          size_t errlen);
void tls_server_ctx_free(struct tls_server_ctx *s);

/* How a connection ended, or where it stands. */
enum tls_conn_state {
	TLS_CONN_TCP,       /* dialing: the TCP connect is under way */
	TLS_CONN_HANDSHAKE, /* TLS handshake under way */
	TLS_CONN_OPEN,      /* plaintext flows */
	TLS_CONN_DONE,      /* closed or failed: tls_conn_why says which */
};

/* What tls_conn_handle reports (a bit set). */
#define TLS_CONN_OPENED 0x1u /* the handshake completed during this call */
#define TLS_CONN_DATA   0x2u /* plaintext waits: tls_conn_read it */
#define TLS_CONN_ENDED  0x4u /* the connection is over (state TLS_CONN_DONE) */

struct tls_conn_stats {
	uint64_t bytes_in, bytes_out;     /* plaintext */
	uint64_t records_in, records_out; /* TLS records of application data */
	uint64_t refused;                 /* tls_conn_write refused: the queue was full */
	uint64_t queue_max;               /* the most bytes the queue held */
};

struct tls_conn;

struct tls_dial_config {
	const char *sni; /* server name sent; NULL: none (an address literal) */
	/* Record padding: the first pad_records records written get a random
	 * 0..pad_max bytes of TLS 1.3 padding each (docs/protocol.md). */
	unsigned pad_records, pad_max;
	/* A REALITY front (src/reality): the hello is sealed to front_pub with
	 * short_id, and only the front's own certificate for this dial is
	 * taken; a chain that is not (the real site's: the key or id is wrong,
	 * the clocks differ, or someone is in the way) fails the dial. */
	bool reality;
	uint8_t front_pub[REALITY_KEY_LEN];
	uint8_t short_id[WIRE_REALITY_SHORT_ID];
};

/*
 * Starts a non-blocking TCP connect to `to` and a TLS client on it; NULL
 * with err (no socket, no memory). The ClientHello goes out when the
 * connect completes.
 */
struct tls_conn *tls_conn_dial(const union yip_sockaddr *to, const struct tls_dial_config *cfg,
                               char *err, size_t errlen);

/* Takes an accepted, non-blocking TCP socket (its owner now) for a TLS server
 * end; NULL if out of memory (fd closed). */
struct tls_conn *tls_conn_accept(struct tls_server_ctx *srv, int fd,
                                 const union yip_sockaddr *from);

/*
 * A server end whose handshake yip's own TLS server (src/tls/server.h)
 * has done on fd already (the REALITY front's): the connection takes the
 * socket and the server (connected), with raw (raw_len bytes, at most two
 * records) the client sent that the server has not taken yet, and out
 * (out_len bytes) still to be sent before anything else. Its first
 * pad_records records get 0..pad_max bytes of padding each; sni is what
 * tls_conn_info names. NULL if out of memory or the server is not
 * connected (fd closed and the server freed either way).
 */
struct tls_adopt_config {
	const uint8_t *raw, *out;
	size_t raw_len, out_len;
	unsigned pad_records, pad_max;
	const char *sni;
};
struct tls_server;
struct tls_conn *tls_conn_adopt(int fd, const union yip_sockaddr *from, struct tls_server *own,
                                const struct tls_adopt_config *cfg);

/* Closes the socket and frees everything, secrets wiped. NULL is fine. */
void tls_conn_free(struct tls_conn *c);

int tls_conn_fd(const struct tls_conn *c);
enum tls_conn_state tls_conn_state(const struct tls_conn *c);
/* The epoll events to watch for now (EPOLLIN, and EPOLLOUT while connecting
 * or while records wait). */
uint32_t tls_conn_events(const struct tls_conn *c);

/* Called with the events epoll reported (or 0 to just retry); TLS_CONN_* bits. */
unsigned tls_conn_handle(struct tls_conn *c, uint32_t events);

/* Up to cap bytes of received plaintext; 0 when none waits. */
size_t tls_conn_read(struct tls_conn *c, uint8_t *buf, size_t cap);

/*
 * Protects len bytes (any length: split into records as needed) and
 * queues them; the socket gets them at once if it takes them. false, and
 * nothing queued, if the connection is not open or the queue has no room
 * for all of it (counted as refused).
 */
bool tls_conn_write(struct tls_conn *c, const uint8_t *p, size_t len);

/* Room left in the queue, in plaintext bytes a write of one record can take. */
size_t tls_conn_room(const struct tls_conn *c);

/* Sends close_notify (what is queued goes first) and ends the connection once it is out. */
void tls_conn_close(struct tls_conn *c);

/* Why it ended: "closed" (close_notify or EOF), "reset", "connect: ...",
 * "tls: <reason>", "timeout"; NULL while it has not. */
const char *tls_conn_why(const struct tls_conn *c);

/* The peer's TCP address. */
const union yip_sockaddr *tls_conn_peer(const struct tls_conn *c);

/* What yipctl shows: "TLSv1.3", the cipher suite's name, the SNI sent or
 * received (NULL: none), the ALPN agreed (NULL: none). */
struct tls_conn_info {
	const char *version;
	const char *cipher;
	const char *sni;
	const char *alpn;
	bool server; /* this end accepted */
};
void tls_conn_info(const struct tls_conn *c, struct tls_conn_info *out);
const struct tls_conn_stats *tls_conn_stats(const struct tls_conn *c);

#endif
