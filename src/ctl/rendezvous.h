/*
 * yip-rendezvous's status over the control socket (docs/control.md,
 * "yip-rendezvous"): the same socket server and request lines as yipd's
 * (src/ctl/server.c, yip_ctl_parse_request), its own JSON document, and
 * its rendering for people. Pure: a reply is built from the engine's state
 * and the daemon's counters, and rendering reads any bytes at all.
 */
#ifndef YIP_CTL_RENDEZVOUS_H
#define YIP_CTL_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr/addr.h"
#include "reality/reality.h"
#include "rendezvous/rendezvous.h"

#define YIP_RDV_CTL_NAME "rendezvous" /* the socket is <dir>/rendezvous.sock */

/* Why a TLS visitor went to the decoy (docs/rendezvous.md, "The TLS front"). */
#define YIP_RDV_DECOY_REASONS(X)                                                                   \
	X(NOT_FRAME, "not_frame")                 /* its first bytes were not a whole frame */     \
	X(NOT_AUTHENTICATED, "not_authenticated") /* a frame the engine did not take */            \
	X(IDLE, "idle") /* it sent nothing while the decoy answered, closed or it left */

enum yip_rdv_decoy_reason {
#define X(name, str) YIP_RDV_DECOY_##name,
	YIP_RDV_DECOY_REASONS(X)
#undef X
	    YIP_RDV_DECOY_COUNT
};

const char *yip_rdv_decoy_name(unsigned r);

/* The TLS front's counters (src/rdvloop/front.c). */
struct yip_rdv_front {
	union yip_sockaddr listen; /* its TCP address */
	bool decoy;                /* a decoy server, else the built-in site */
	union yip_sockaddr decoy_addr;
	uint64_t open;          /* connections open now */
	uint64_t tcp_accepted;  /* connections accepted */
	uint64_t tcp_refused;   /* ... closed at once: over the total or per-source limit */
	uint64_t tls_failed;    /* TLS handshakes that failed (garbage, a replay, a reset) */
	uint64_t tls_timeouts;  /* ... not done within 10 s */
	uint64_t yip_streams;   /* connections whose first frame authenticated */
	uint64_t decoy_streams; /* connections served by the decoy (or the site) */
	uint64_t decoy_reasons[YIP_RDV_DECOY_COUNT];
	uint64_t decoy_failed;   /* the decoy could not be reached: the visitor was closed */
	uint64_t site_requests;  /* built-in site: requests answered */
	uint64_t frames_in;      /* frames handed to the engine */
	uint64_t frames_out;     /* frames written into yip streams */
	uint64_t stream_broken;  /* yip streams closed: a frame length of 0 or too long */
	uint64_t stream_full;    /* frames dropped: the stream's queue was full */
	uint64_t stream_stale;   /* frames dropped: for a stream that is gone */
	uint64_t stream_too_big; /* frames dropped: a datagram longer than a frame */
};

/*
 * How a connection to the REALITY front ended (docs/rendezvous.md, "The
 * REALITY front"): the seal's verdict on a whole first record (enum
 * reality_verdict: REALITY_AUTHENTICATED, or why it was spliced), or one
 * of these. Every connection gets exactly one, when it is decided.
 */
#define YIP_RDV_REALITY_MORE(X)                                                                    \
	X(NOT_TLS, "not_tls")         /* its first bytes are no TLS handshake record */            \
	X(TOO_BIG, "record_too_big")  /* a first record over 16 KiB */                             \
	X(SPLIT, "split_hello")       /* a hello that does not fit its first record */             \
	X(EARLY, "early")             /* closed, or the target spoke, before it was whole */       \
	X(FALLBACK, "fallback")       /* sealed, but the target's answer cannot be shaped */       \
	X(TARGET_DOWN, "target_down") /* the target could not be reached: closed */

enum {
	YIP_RDV_REALITY_FIRST_MORE = REALITY_VERDICTS - 1,
#define X(name, str) YIP_RDV_REALITY_##name,
	YIP_RDV_REALITY_MORE(X)
#undef X
	    YIP_RDV_REALITY_OUTCOMES
};

const char *yip_rdv_reality_outcome_name(unsigned o);

/* The REALITY front's counters (src/rdvloop/reality.c). */
struct yip_rdv_reality {
	union yip_sockaddr listen, target;
	uint64_t open;     /* connections open now */
	uint64_t pending;  /* ... of them not decided yet */
	uint64_t accepted; /* connections accepted */
	uint64_t refused;  /* ... closed at once: over the total, undecided or per-source limit */
	uint64_t outcome[YIP_RDV_REALITY_OUTCOMES];
	uint64_t spliced;     /* connections spliced to the target */
	uint64_t tls_failed;  /* authenticated handshakes that failed, or timed out */
	uint64_t yip_streams; /* authenticated connections whose handshake completed */
	uint64_t frames_in, frames_out;
	uint64_t stream_broken, stream_full, stream_stale, stream_too_big; /* as the TLS front's */
	uint64_t bytes_to_target, bytes_from_target;                       /* spliced bytes */
};

/* The QUIC listener's counters (docs/rendezvous.md, "QUIC"). */
struct yip_rdv_quic {
	union yip_sockaddr listen; /* its UDP address */
	uint64_t open;             /* connections open now */
	uint64_t handshaking;      /* ... of them in their QUIC handshake */
	uint64_t accepted;         /* connections begun (an Initial taken) */
	uint64_t refused;   /* Initials dropped: over the total, handshake or per-source limit */
	uint64_t failed;    /* handshakes that failed */
	uint64_t timeouts;  /* ... not done in time */
	uint64_t idle;      /* connections closed idle */
	uint64_t yip_conns; /* connections whose first datagram authenticated */
	uint64_t decoy_requests; /* HTTP/3 requests the decoy answered */
	uint64_t dgrams_in;      /* datagrams handed to the engine */
	uint64_t dgrams_out;     /* datagrams sent in DATAGRAM frames */
	uint64_t dgram_too_big;  /* datagrams dropped: longer than the connection takes */
	uint64_t dgram_stale;    /* datagrams dropped: for a connection that is gone */
	uint64_t dgram_refused;  /* datagrams dropped: ngtcp2 refused them (congestion, state) */
	uint64_t not_quic;       /* UDP datagrams to the port that are no QUIC packet we take */
};

/* What the daemon adds to the engine's state. */
struct yip_rdv_status {
	const struct yip_rdv_front *front;     /* NULL: no TLS front */
	const struct yip_rdv_reality *reality; /* NULL: no REALITY front */
	const struct yip_rdv_quic *quic;       /* NULL: no QUIC listener */
	const struct rdv_server *srv;
	union yip_sockaddr listen; /* the main socket's address */
	uint16_t alt_port;         /* the second socket's port; 0: none */
	uint64_t now;              /* monotonic ns, the clock the engine is fed */
	uint64_t now_wall_s;       /* Unix seconds at the same moment */
	uint64_t rx_dgrams;        /* datagrams received on both sockets */
	uint64_t
	    rx_truncated;   /* longer than the receive buffer: dropped, not given to the engine */
	uint64_t tx_dgrams; /* handed to the kernel */
	uint64_t tx_failed; /* refused by the kernel, or for a family the socket cannot reach */
	bool udp_gso;
	uint64_t udp_trains, udp_train_dgrams; /* messages sent, and the datagrams in them */
};

/* "unknown", "none", "endpoint-independent", "per-destination" (enum wire_nat). */
const char *yip_rdv_nat_name(unsigned nat);

/*
 * The reply to one request line (as for yip_ctl_parse_request): "show"
 * (everything, every node), "show <node public key>" (that node only) or
 * "stats" (everything but the nodes). A JSON document and a newline,
 * NUL-terminated, in a heap buffer the caller frees; *out_len is its length
 * without the NUL. A bad request or an unknown node gives {"error": "..."}.
 * NULL only when out of memory.
 */
char *yip_rdv_ctl_reply(const struct yip_rdv_status *st, const char *line, size_t len,
                        size_t *out_len);

/*
 * Writes a reply of len bytes (any bytes at all) to out for people: the
 * server, its counters and drops, then at most max_nodes nodes (and how
 * many more there are). now_s is the current Unix time. Missing or
 * mistyped fields show as unknown. Returns 0, or -1 with a message in err
 * when the reply is not a JSON object or is an error reply.
 */
int yip_rdv_ctl_render(FILE *out, const char *json, size_t len, uint64_t now_s, size_t max_nodes,
                       char *err, size_t errlen);

/*
 * The server's counters as Prometheus text (docs/operations.md, "Metrics";
 * src/ctl/metrics.c), with start_s the process's start in Unix seconds (0:
 * unknown). A heap buffer the caller frees, NUL-terminated; NULL only when
 * out of memory.
 */
char *yip_rdv_metrics(const struct yip_rdv_status *st, uint64_t start_s, size_t *out_len);

#endif
