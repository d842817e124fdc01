/*
 * yipd's TLS links (docs/transports.md): yip datagrams framed
 * (wire/stream.h) in TLS connections over TCP (tlslink/conn.h), one link
 * (link/link.h, YIP_LINK_TLS) per connection. Connections are dialed to
 * the peers whose endpoint is tls://, and to rendezvous servers the
 * engine asks for one over TLS; they are accepted on listen_tls. Each
 * link is reliable: the engine sends no FEC or ARQ on it. An accepted
 * connection on which nothing authenticates within 15 s of its handshake
 * is closed; accepting is rate-limited and bounded per source. A datagram the
 * connection cannot take now (its queue is full: the path is slower than
 * what is sent) is dropped and counted, never waited for.
 *
 * The connections are watched in an epoll set of their own, itself one
 * fd of the loop's registry (src/poll), so both I/O drivers serve them
 * alike.
 */
#ifndef YIP_LOOP_TLS_H
#define YIP_LOOP_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "config/config.h"
#include "crypto/crypto.h"
#include "link/link.h"
#include "poll/poll.h"
#include "util/bucket.h"
#include "wire/stream.h"

#define LOOP_TLS_CONNS 256 /* TLS connections at once, both ways */
#define LOOP_TLS_DIALS (YIP_MAX_PEERS + YIP_MAX_RENDEZVOUS)

struct yip_device;
struct tls_conn;
struct tls_server_ctx;
struct loop_tls;

/* One connection and the link it is. */
struct loop_tls_conn {
	struct loop_tls *t;
	struct tls_conn *c;
	int64_t link;     /* its id once open, else -1 */
	int dial;         /* the dial it is for, or -1: accepted */
	uint32_t watched; /* the events epoll watches for it */
	uint64_t started; /* when it was dialed or accepted */
	uint64_t last_rx; /* when a frame last came */
	bool dirty;       /* frames wait in pend */
	bool let_go;      /* to close at the next flush (loop_tls_undial_server) */
	bool proven;      /* accepted: a datagram on it authenticated (yip_device_link_proven) */
	uint64_t opened_at;
	size_t pend_len;
	struct wire_stream_rx rx;
	uint8_t pend[WIRE_STREAM_MAX + WIRE_STREAM_HDR]; /* frames not yet written */
};

/* Somewhere this node dials: a tls:// peer, or a server over TLS. */
struct loop_tls_dial {
	bool used;
	bool wanted; /* dialed again when it ends (a server let go: not) */
	bool server; /* a rendezvous server: index server; else the peer with key */
	size_t index;
	uint8_t key[YIP_KEY_LEN];
	union yip_sockaddr addr;
	char sni[254]; /* "": none */
	bool reality;  /* to a REALITY front: sealed to front_pub with short_id */
	uint8_t front_pub[YIP_KEY_LEN], short_id[8];
	int conn; /* its connection, or -1 */
	uint64_t next_at;
	uint64_t backoff;
	uint64_t failures;
	char why[160]; /* why the last connection ended */
};

struct loop_tls_stats {
	uint64_t dialed, accepted, opened, closed, failed, refused_full, refused_busy, bad_frames;
	uint64_t frames_in, frames_out;
};

struct loop_tls {
	struct yip_device *dev;
	struct yip_links *links;
	uint32_t link_from; /* the first link id it may take */
	int epfd;
	int listen_fd; /* -1: no listen_tls */
	union yip_sockaddr listen;
	struct tls_server_ctx *srv;
	struct loop_tls_conn *conn[LOOP_TLS_CONNS];
	size_t n_conns;
	struct loop_tls_dial *dials; /* LOOP_TLS_DIALS, allocated when the first is set */
	size_t n_dials;
	unsigned pad_records, pad_max;
	/* The configuration's tls:// rendezvous lines: where, and the SNI. */
	struct loop_tls_line {
		bool tls;
		union yip_sockaddr addr;
		char sni[254];
		bool reality; /* reality://: the front's key and short id */
		uint8_t front_pub[YIP_KEY_LEN], short_id[8];
	} lines[YIP_MAX_RENDEZVOUS_LINES];
	struct loop_tls_stats stats;
	struct yip_bucket accepts;      /* new connections on listen_tls */
	uint8_t dgram[WIRE_STREAM_MAX]; /* the engine builds its datagrams here */
	uint8_t rbuf[WIRE_STREAM_MAX];  /* plaintext read from a connection */
};

/*
 * Sets up: listens on cfg's listen_tls (with its certificate, or a
 * self-signed one for host_name) and notes the tls:// peers to dial. Link
 * ids from link_from on are its own. 0, or -1 with err.
 */
int loop_tls_setup(struct loop_tls *t, const struct yip_config *cfg, const char *host_name,
                   struct yip_links *links, uint32_t link_from, char *err, size_t errlen);
/* Registers its epoll set with the loop's registry; 0, or -1 with errno. */
int loop_tls_watch(struct loop_tls *t, struct yip_poll *p);
void loop_tls_attach(struct loop_tls *t, struct yip_device *dev);
void loop_tls_free(struct loop_tls *t);

/* Dials what is due, ends what timed out; the next deadline (0: none). */
uint64_t loop_tls_tick(struct loop_tls *t, uint64_t now);
/* Writes what the engine sent since the last flush. */
void loop_tls_flush(struct loop_tls *t);

/* Dials rendezvous server k over TLS as the configuration's rendezvous
 * line `line` says, and keeps it up (dialing again after it ends). */
int loop_tls_dial_server(struct loop_tls *t, uint64_t now, size_t k, size_t line);

/* Server k is reached over UDP again: its connection goes, not dialed again. */
void loop_tls_undial_server(struct loop_tls *t, size_t k);

/* What yipctl shows of the connection that is link `link`: false if none is. */
struct loop_tls_link_info {
	const char *version, *cipher, *sni, *alpn;
	bool accepted;
	bool reality; /* dialed to a REALITY front */
	union yip_sockaddr peer;
};
bool loop_tls_link_info(const struct loop_tls *t, uint32_t link, struct loop_tls_link_info *out);

/* Why the last dial to server k failed, while it has no link open; NULL: none. */
const char *loop_tls_server_error(const struct loop_tls *t, size_t k);

#endif
