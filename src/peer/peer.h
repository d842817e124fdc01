/*
 * The session engine: peers, their handshakes, keys and timers, and the
 * data path between the TUN side and the UDP side. It does no I/O and reads
 * no clocks; the event loop feeds it datagrams, packets and the time, and it
 * answers through struct yip_io. One engine serves one device.
 */
#ifndef YIP_PEER_PEER_H
#define YIP_PEER_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "config/config.h"
#include "crypto/crypto.h"
#include "fec/policy.h"
#include "flow/flow.h"
#include "link/link.h"
#include "membership/member.h"
#include "obf/obf.h"
#include "wire/wire.h"

struct route_table;

/* The engine and its peers; their state is private to src/peer (state.h). */
struct yip_device;
struct yip_peer;

/* Bytes a datagram adds to the inner packet at most (a repair's). */
#define YIP_DGRAM_OVERHEAD WIRE_MAX_OVERHEAD

/* Largest datagram yip sends or accepts: a relayed repair of the largest TAP
 * frame (the MTU plus an Ethernet header and a VLAN tag), obfuscated. */
#define YIP_MAX_DGRAM (YIP_MAX_MTU + 18 + YIP_DGRAM_OVERHEAD + WIRE_RELAY_HDR + OBF_MAX_GROWTH)

/*
 * Why a datagram or packet was dropped. Every drop increments exactly one
 * counter. Not drops: keepalives (empty by design), and repair symbols that
 * arrive for a block already complete, or twice (they had nothing to do).
 */
#define YIP_DROP_REASONS(X)                                                                        \
	X(MALFORMED, "malformed")       /* unknown type, bad length or reserved bits */            \
	X(TRUNCATED, "truncated")       /* larger than the receive buffer */                       \
	X(BAD_MAC1, "bad_mac1")         /* handshake not addressed to our key */                   \
	X(UNDER_LOAD, "under_load")     /* Init answered with a cookie: too many Inits */          \
	X(RATE_LIMITED, "rate_limited") /* Init over its source's or its peer's budget */          \
	X(BAD_COOKIE, "bad_cookie")     /* Cookie for no Init of ours, or it does not open */      \
	X(HANDSHAKE_FAILED,                                                                        \
	  "handshake_failed")             /* Noise failed, no common cipher, no free index */      \
	X(UNKNOWN_PEER, "unknown_peer")   /* valid Init from a key not configured */               \
	X(NOT_ADMITTED, "not_admitted")   /* its certificate was refused (members by verdict) */   \
	X(STALE_INIT, "stale_init")       /* Init timestamp not newer: replay */                   \
	X(GLARE, "glare")                 /* Init ignored: our own Init wins */                    \
	X(UNKNOWN_INDEX, "unknown_index") /* no session with that receiver index */                \
	X(REPLAY, "replay")               /* data counter already seen or too old */               \
	X(DECRYPT, "decrypt")             /* data failed authentication */                         \
	X(EXPIRED, "expired")             /* data under keys past their lifetime */                \
	X(BAD_INNER, "bad_inner")         /* decrypted payload is not an IP packet */              \
	X(SOURCE_NOT_ALLOWED, "source_not_allowed") /* inner source outside allowed_ips */         \
	X(NO_ROUTE, "no_route")                     /* TUN packet to no peer's allowed_ips */      \
	X(NO_ENDPOINT, "no_endpoint")               /* peer has no known address */                \
	X(QUEUE_FULL, "queue_full") /* during a handshake: the oldest queued, or no memory */      \
	X(HANDSHAKE_TIMEOUT, "handshake_timeout") /* queued packets dropped: peer unreachable */   \
	X(TOO_BIG, "too_big")                     /* TUN packet larger than the MTU */             \
	X(SEND_FAILED, "send_failed")             /* the kernel refused a send */                  \
	X(TUN_WRITE_FAILED, "tun_write_failed")                                                    \
	X(BAD_REPAIR, "bad_repair")       /* repair symbol inconsistent with its block */          \
	X(BAD_REPORT, "bad_report")       /* malformed loss report */                              \
	X(FEC_DUPLICATE, "fec_duplicate") /* rebuilt packet that had already arrived */            \
	X(ARQ_DUPLICATE, "arq_duplicate") /* resent packet that had already arrived */             \
	X(BAD_RELAY, "bad_relay") /* relayed, but not by a server we use or not with our token */  \
	X(BAD_CTRL, "bad_ctrl")   /* control message malformed or not expected from its sender */  \
	X(AQM, "aqm") /* segment dropped to tell the inner TCP of a standing queue (CoDel) */      \
	X(OBF, "obf") /* obf_psk: not authentic (foreign, tampered, another key, or plain) */

enum yip_drop {
#define X(name, str) YIP_DROP_##name,
	YIP_DROP_REASONS(X)
#undef X
	    YIP_DROP_COUNT
};

const char *yip_drop_name(enum yip_drop d);

/* What the engine needs from the outside world. */
struct yip_io {
	void *ctx;
	/*
	 * The links datagrams leave on and arrive by (link/link.h), owned by
	 * the I/O layer; the engine reads the table at every send. It must
	 * hold YIP_LINK_MAIN.
	 */
	const struct yip_links *links;
	/* Delivers a decrypted packet to the device. */
	void (*tun_write)(void *ctx, const uint8_t *pkt, size_t len);
	/* Wall clock in ns since the Unix epoch, for TAI64N timestamps. */
	uint64_t (*wall_ns)(void *ctx);
	/*
	 * Optional. When set, the engine does not encrypt data datagrams for
	 * a batching link (YIP_LINK_BATCH) itself: it writes the plaintext of
	 * len bytes after the hdr-byte header at d and asks for d + hdr to be
	 * sealed in place (tag appended) with key and counter before the
	 * datagram leaves; the I/O layer batches these for its worker threads.
	 * Called before the link's send for that datagram.
	 */
	void (*seal_later)(void *ctx, uint8_t *d, size_t hdr, size_t len,
	                   const struct yip_cipher_key *key, uint64_t counter);
	/*
	 * Optional. Writes up to max of this node's own addresses, with the
	 * port it listens on, as candidates for peers behind the same NAT
	 * (docs/nat.md); returns how many.
	 */
	size_t (*local_addrs)(void *ctx, union yip_sockaddr *out, size_t max);
	/*
	 * Optional, for many-ports probing (docs/nat.md): opens one more UDP
	 * socket on an ephemeral port as a link (YIP_LINK_UDP, not batching)
	 * and returns its id (> 0), or -1; what arrives on it comes in through
	 * yip_device_rx_link with that id. link_close closes one the engine
	 * opened.
	 */
	int64_t (*link_open)(void *ctx);
	/*
	 * Dial rendezvous server k over QUIC or TLS, as the configuration's
	 * rendezvous line `line` (a quic:// or tls:// one) says, and keep the
	 * connection up; once it is, the daemon calls yip_device_server_link.
	 * NULL: no such links.
	 */
	void (*dial_server)(void *ctx, size_t k, size_t line);
	/* Server k is reached another way now (UDP again, or TLS after QUIC):
	 * the link dial_server opened for it may go, and is not dialed again
	 * until dial_server asks. */
	void (*undial_server)(void *ctx, size_t k);
	void (*link_close)(void *ctx, uint32_t link);
};

/*
 * A datagram the I/O layer has already tried to open on a worker thread
 * (see yip_device_rx_key): the engine uses the result if the keys it would
 * have used are the same ones.
 */
struct yip_preopened {
	const uint8_t *plain; /* NULL: nothing pre-opened */
	size_t len;
	int result;                       /* 0 authentic, -1 not */
	const struct yip_cipher_key *key; /* what it was opened with */
};

struct yip_peer_stats {
	uint64_t rx_bytes, tx_bytes; /* inner bytes */
	uint64_t rx_packets, tx_packets;
	uint64_t lost;                /* datagrams from the peer that never arrived (gaps) */
	uint64_t fec_recovered;       /* packets rebuilt from repair symbols */
	uint64_t fec_unrecovered;     /* packets of blocks that could not be rebuilt */
	uint64_t fec_late;            /* rebuilt after later packets had to go on without them */
	uint64_t arq_recovered;       /* retransmissions received and delivered */
	uint64_t arq_sent;            /* retransmissions we sent on request */
	uint64_t nacks_sent;          /* missing counters we asked the peer for */
	uint64_t nacks_received;      /* counters the peer asked us for */
	uint64_t arq_history_miss;    /* ... older than every copy kept, the oldest still young */
	uint64_t arq_late;            /* ... kept, but past their time or tries */
	uint64_t arq_congested;       /* ... not resent: the path was queueing (congestion loss) */
	uint64_t loss_congested;      /* loss windows not let raise the estimate: queueing */
	uint64_t repair_sent;         /* repair symbols sent */
	uint64_t repair_bytes;        /* bytes of redundancy sent (repair datagrams) */
	uint64_t wire_bytes;          /* every byte of every datagram we sent */
	uint64_t handshakes;          /* completed */
	uint64_t last_handshake_wall; /* ns since epoch, 0 = never */
	uint64_t roams;
};

#define YIP_MAX_PATHS 12

/* Prefixes a dynamic peer may hold (a certificate's). */
#define YIP_PEER_ALLOWED 8
/* Peers a CA-gated node adds at run time, at most. */
#define YIP_MAX_DYNAMIC_PEERS 1024
/* Configured peers yip_device_peer_set may add after start-up, beyond the
 * configuration's, and the allowed_ips prefixes it may add for them: the
 * key memory and the route table are sized for these up front (memory that
 * is reserved, not touched, until a peer uses it). */
#define YIP_MAX_ADDED_PEERS    256
#define YIP_MAX_ADDED_PREFIXES 4096
/* How long a member's own record is valid, and the age at which it is
 * signed again. A record is also signed again at once
 * when its endpoints or certificate change, so this does not bound how
 * stale endpoints are; it sets the steady cost of gossip, since every node
 * receives every re-signed record (docs/gossip.md, "Cost": about
 * 65 + 1 500 N / YIP_RECORD_RESIGN_S bytes a second per node for N
 * members). bench/gossip-sim uses the same values. */
#define YIP_RECORD_LIFETIME_S (12 * 3600)
#define YIP_RECORD_RESIGN_S   (YIP_RECORD_LIFETIME_S / 2)

struct yip_timing {
	uint64_t rekey_after;   /* initiator rekeys a session this old */
	uint64_t reject_after;  /* keys are unusable past this age */
	uint64_t rekey_attempt; /* give a handshake series up after this long */
	uint64_t retry_base;    /* first handshake retransmit; doubles */
	uint64_t retry_max;
	uint64_t keepalive;    /* passive keepalive after receiving data */
	uint64_t dead_after;   /* no reply to data for this long: new handshake */
	uint64_t prev_overlap; /* previous keys kept this long after a rekey */
};

/* A handshake unanswered this long gets an explanation in the log and in
 * yipctl show (docs/obfuscation.md, "When the keys differ"). */
#define YIP_NO_ANSWER_NS (5ULL * 1000000000ULL)

/* Default timing. */
void yip_timing_default(struct yip_timing *t);

/* Rekeys every interval ns instead (tests); keys live three intervals. */
void yip_timing_rekey(struct yip_timing *t, uint64_t interval);

/*
 * Builds an engine from a configuration (keys, peers, allowed_ips, MTU).
 * Returns 0, or -1 with a message in err.
 */
int yip_device_init(struct yip_device *dev, const struct yip_config *cfg, const struct yip_io *io,
                    const struct yip_timing *t, char *err, size_t errlen);

/* Frees everything and wipes every key. */
void yip_device_free(struct yip_device *dev);

/* The bytes of a struct yip_device, for the caller to allocate (the daemon
 * puts it in locked memory). */
size_t yip_device_size(void);

/*
 * Key memory (struct yip_key_store): the bytes the engine may need for
 * key slots at most (every peer it can have, and every rendezvous server,
 * with all its slots full), and handing it len bytes at mem (aligned for
 * union yip_key_slot) to take them from, before any handshake. The caller
 * keeps the memory until yip_device_free and protects it (locked, not in
 * core dumps); the engine wipes each slot when it gives it back. Without
 * it the engine takes each slot from the heap.
 */
size_t yip_device_key_memory_size(const struct yip_device *dev);
void yip_device_key_memory(struct yip_device *dev, void *mem, size_t len);

/* The memory that holds the rendezvous servers (our relay tokens there):
 * *len bytes at the pointer returned, for the daemon to protect. */
void *yip_device_servers_memory(struct yip_device *dev, size_t *len);

/*
 * A datagram arrived from src on the main link (YIP_LINK_MAIN). With obf_psk it is de-obfuscated
 * first (into dev->obfbuf); one that is not authentic is dropped (counted as obf) before anything
 * else.
 */
void yip_device_rx(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
                   const uint8_t *d, size_t len);

/* The same, by a link other than the main one (link/link.h). */
void yip_device_rx_link(struct yip_device *dev, uint64_t now, uint32_t link,
                        const union yip_sockaddr *src, const uint8_t *d, size_t len);

/*
 * The peer with key pub can be reached over link at addr (e.g. a TLS
 * connection the daemon opened to it): a candidate direct path, current if
 * the peer has none. 0, or -1 if there is no such peer or its paths are
 * full of validated ones.
 */
int yip_device_link_path(struct yip_device *dev, uint64_t now, const uint8_t pub[YIP_KEY_LEN],
                         uint32_t link, const union yip_sockaddr *addr);

/*
 * Rendezvous server k (in the configuration's order) can be reached over
 * link at addr (a TLS connection the daemon opened to it because the
 * engine asked, yip_io.dial_server): it becomes the server's path, and a
 * new session starts over it if the old one is not answered there. 0, or
 * -1 if there is no such server or no room for the path.
 */
int yip_device_server_link(struct yip_device *dev, uint64_t now, size_t k, uint32_t link,
                           const union yip_sockaddr *addr);

/* Whether an authenticated datagram came by link: a path over it is validated. */
bool yip_device_link_proven(const struct yip_device *dev, uint32_t link);

/* Link is going away: every path over it is forgotten (a current one too;
 * the peer then finds another). Afterwards no path names it. */
void yip_device_link_closed(struct yip_device *dev, uint32_t link);

/* The device produced an IP packet. */
void yip_device_tx(struct yip_device *dev, uint64_t now, const uint8_t *pkt, size_t len);

/*
 * For a data, repair or report datagram addressed to one of our sessions:
 * the key it would be opened with (NULL if none), so the I/O layer can copy
 * it, open the datagram on a worker thread and set dev->pre before
 * yip_device_rx. Reads engine state only; the pointer is good until the
 * engine next runs. Always NULL with obf_psk: the index is hidden until the
 * engine removes the obfuscation, so the engine opens every datagram itself.
 */
const struct yip_cipher_key *yip_device_rx_key(struct yip_device *dev, const uint8_t *d,
                                               size_t len);

/* Runs due timers; returns the monotonic time of the next deadline. */
uint64_t yip_device_timers(struct yip_device *dev, uint64_t now);

/* Counts a drop that happened outside the engine (e.g. in the I/O layer). */
void yip_device_drop(struct yip_device *dev, enum yip_drop d);

/* What the engine tells the outside world about itself (yipctl, status). */
struct yip_device_info {
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t address[YIP_ADDR_LEN];
	unsigned mtu;
	bool fec;
	size_t n_peers;
	size_t n_servers;
	const char *nat; /* our NAT mapping as the rendezvous servers show it */
	bool obf;        /* obf_psk is set */
	uint64_t drops[YIP_DROP_COUNT];
};

/* One candidate path, for yipctl. */
struct yip_path_info {
	char path[YIP_ADDRSTRLEN + 16]; /* "direct a.b.c.d:p", "relayed via ..." */
	const char *origin;             /* "config", "server", "peer", "relay" */
	bool validated;
	uint64_t rtt; /* ns, 0 = unknown */
};

struct yip_peer_info {
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t address[YIP_ADDR_LEN];
	bool has_endpoint;
	union yip_sockaddr endpoint;
	bool has_path;
	char path[YIP_ADDRSTRLEN + 16]; /* the current path, as in yip_path_info */
	uint64_t path_age;              /* ns since it became current */
	uint32_t path_link;             /* the link the current path uses (a relayed one: 0) */
	const char *relayed_why;        /* relayed: why not direct; NULL otherwise */
	const char *nat;                /* the peer's NAT mapping, from an introduction */
	unsigned n_paths;
	struct yip_path_info paths[YIP_MAX_PATHS];
	bool dynamic; /* added at run time (a member, a root), not configured */
	bool root;    /* listed in the root set */
	const struct member_cert
	    *cert; /* its certificate, NULL if none (good until the engine runs) */
	/* Its prefixes (a configured peer's allowed_ips, a member's
	 * certificate's), good until the engine runs. */
	const struct yip_cidr *allowed;
	size_t n_allowed;
	uint64_t last_rx; /* monotonic ns of its last authenticated datagram, 0 = never */
	bool handshaking; /* we sent an Init and wait for the answer */
	bool established;
	uint64_t unanswered; /* ns our handshakes have gone unanswered (0: they have not) */
	const char *hint; /* why, as far as we can tell, once that is YIP_NO_ANSWER_NS; or NULL */
	int cipher;       /* enum yip_cipher of the current session, -1 if none */
	uint64_t srtt;    /* smoothed RTT, ns (0 = unknown) */
	double loss;      /* loss rate estimated from the peer's reports */
	struct fec_params fec[FLOW_CLASSES];
	struct yip_peer_stats stats;
	uint64_t recovery_mem; /* bytes loss recovery holds for this peer now */
};

void yip_device_info(const struct yip_device *dev, struct yip_device_info *out);

/* A rendezvous server the node uses, for yipctl. */
struct yip_server_info {
	union yip_sockaddr addr;
	const char *state;   /* "connecting", "registering", "registered", "refused" */
	const char *refused; /* state "refused": "no_certificate" or a membership verdict's name */
	bool has_reflexive;
	union yip_sockaddr reflexive; /* our address as it sees it */
	bool relay;
	uint64_t registered_age; /* ns since it first accepted us, 0 = not registered */
	uint64_t lookups, intros, unknowns, asks;
	uint64_t cands_refused; /* introduced addresses we will not send to (loopback, ...) */
	bool has_path;
	uint32_t link;      /* the link its current path uses */
	const char *reason; /* why that link (a QUIC or TLS fallback's reason), or NULL */
	/* netcheck (docs/control.md): over UDP, our address as its second port
	 * sees it (a different one: our NAT maps per destination), the round
	 * trips of REGISTER and of WHOAMI (ns, 0 = not measured), and whether
	 * a REGISTER is unanswered. */
	bool udp;
	uint16_t alt_port;
	bool has_reflexive_alt;
	union yip_sockaddr reflexive_alt;
	uint64_t rtt, alt_rtt;
	bool pending;
};

/*
 * The node's certificate (docs/membership.md), sent to every rendezvous
 * server before registering, so a members-only server admits it. len 0
 * removes it. 0, or -1 if it is longer than WIRE_CTRL_CERT_MAX. Takes
 * effect at each server's next session or refusal retry.
 */
int yip_device_set_cert(struct yip_device *dev, const uint8_t *cert, size_t len);

/* Server i (0 <= i < n_servers); false if there is no such server. */
bool yip_device_server_info(const struct yip_device *dev, size_t i, uint64_t now,
                            struct yip_server_info *out);

/*
 * Reachability pings (yipctl ping, docs/control.md): a round is one PROBE,
 * sealed under the session, on every path to the peer that can carry one
 * (direct candidates and relays); the peer answers each on the path it came
 * by (PROBE_OK), which is the one it measures. At most one round per peer
 * every YIP_PING_GAP_MS, so a client looping on ping cannot flood.
 */
#define YIP_PING_GAP_MS 200

enum yip_ping_status {
	YIP_PING_SENT = 0,        /* a round went out */
	YIP_PING_NO_PEER = -1,    /* no peer has that key */
	YIP_PING_NO_SESSION = -2, /* no session yet: a handshake was started */
	YIP_PING_TOO_SOON = -3,   /* the last round is younger than YIP_PING_GAP_MS */
	YIP_PING_NO_PATH = -4,    /* a session, but no path can carry a probe now */
};

struct yip_ping_probe {
	bool relay;              /* through rendezvous server `server` */
	int server;              /* relay: the server's index */
	union yip_sockaddr addr; /* direct: the peer's address; relay: the server's */
	bool answered;
	uint64_t rtt; /* ns, once answered */
};

struct yip_ping_info {
	uint64_t round; /* rounds sent to the peer so far (0: none) */
	uint64_t age;   /* ns since the last round went out */
	unsigned n;     /* the last round's probes */
	struct yip_ping_probe probes[YIP_MAX_PATHS];
	/* The device's counters, every peer and round: probes sent, pongs
	 * matched, rounds refused as too soon. */
	uint64_t sent, pongs, refused;
};

/* Sends a round to the peer with key pub (enum yip_ping_status). */
int yip_device_ping(struct yip_device *dev, uint64_t now, const uint8_t pub[YIP_KEY_LEN]);

/* The last round to that peer as of now; false if there is no such peer. */
bool yip_device_ping_info(const struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN],
                          uint64_t now, struct yip_ping_info *out);

/*
 * Fresh probes to every rendezvous server with a session (yipctl netcheck):
 * a REGISTER now, and a WHOAMI to the second port of each reached over UDP;
 * their answers refresh what yip_device_server_info shows. At most once a
 * second: returns the servers asked, or -1 if the last call was too recent.
 */
int yip_device_netcheck(struct yip_device *dev, uint64_t now);

/* "unknown", "none", "endpoint-independent", "per destination" (enum wire_nat). */
const char *yip_nat_name(unsigned nat);

/* Peer i (0 <= i < n_peers) as of now; false if there is no such peer. */
bool yip_device_peer_info(const struct yip_device *dev, size_t i, uint64_t now,
                          struct yip_peer_info *out);

/* The largest smoothed RTT to any peer, ns (0 = none known). */
uint64_t yip_device_rtt_max(const struct yip_device *dev);

/* Peers' timers run so far (the timer benchmark's count). */
uint64_t yip_device_timer_runs(const struct yip_device *dev);

/* The inner MTU the engine enforces. */
unsigned yip_device_mtu(const struct yip_device *dev);

/*
 * What a worker thread made of the datagram about to be handed to
 * yip_device_rx (see struct yip_preopened); NULL clears it. The pointers
 * must stay valid until it is cleared.
 */
void yip_device_preopened(struct yip_device *dev, const struct yip_preopened *pre);

/* Counts n drops that happened outside the engine. */
void yip_device_drop_n(struct yip_device *dev, enum yip_drop d, uint64_t n);

/*
 * Device-level totals for metrics (docs/operations.md, "Metrics"): they only
 * grow, whatever happens to the peer table. Inner packets and bytes are
 * counted by the kind of the peer's current path when they are sent or
 * delivered (a relayed path, or a direct one by its link's kind).
 */
enum yip_traffic_kind {
	YIP_TRAFFIC_DIRECT = 0, /* direct over UDP */
	YIP_TRAFFIC_RELAYED,    /* through a rendezvous server's relay */
	YIP_TRAFFIC_TLS,        /* direct over a TLS (or REALITY) link */
	YIP_TRAFFIC_QUIC,       /* direct over a QUIC link */
	YIP_TRAFFIC_KINDS
};

/* "direct", "relayed", "tls", "quic". */
const char *yip_traffic_kind_name(unsigned k);

struct yip_traffic {
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets;
};

struct yip_device_totals {
	struct yip_traffic by_kind[YIP_TRAFFIC_KINDS];
	uint64_t hs_initiated;         /* handshake series started with a peer */
	uint64_t hs_completed;         /* sessions made with a peer (either side) */
	uint64_t hs_failed;            /* series given up without an answer (rekey_attempt) */
	struct yip_peer_stats removed; /* the peers removed so far, summed */
};

void yip_device_totals(const struct yip_device *dev, struct yip_device_totals *out);

/*
 * The host name of a configured endpoint now resolves to addr (the daemon
 * re-resolves names; the engine does no I/O): of the peer with public key
 * pub, or of rendezvous server k (in the configuration's order; the
 * servers are fixed for the device's life). The configured path moves to
 * addr and becomes current if the old one was; a current path that
 * authenticated traffic came back on within dead_after stays current, kept
 * as an address the peer uses, until it falls silent and a new handshake
 * tries every path. Returns 0, or -1 if there is no such peer or server.
 */
int yip_device_set_endpoint(struct yip_device *dev, uint64_t now, const uint8_t pub[YIP_KEY_LEN],
                            const union yip_sockaddr *addr);
int yip_device_set_server_endpoint(struct yip_device *dev, uint64_t now, size_t k,
                                   const union yip_sockaddr *addr);

/* Which fields of a struct yip_peer_config yip_device_peer_set takes. */
enum yip_peer_field {
	YIP_PEER_SET_ENDPOINT = 1 << 0,    /* has_endpoint and endpoint (none: no endpoint) */
	YIP_PEER_SET_ALLOWED_IPS = 1 << 1, /* allowed_ips: they replace the peer's */
	YIP_PEER_SET_KEEPALIVE = 1 << 2,   /* persistent_keepalive */
	YIP_PEER_SET_ALL = (1 << 3) - 1,
};

/*
 * Sets the configured peer pc->public_key from a configuration block, as
 * wg set does: of an existing peer, the fields in `fields` (enum
 * yip_peer_field) change and the others keep their values; its sessions,
 * counters and paths other than the configured endpoint are untouched. A
 * key that is not a peer yet adds a configured peer (the fields not given
 * are empty: no endpoint, no prefixes besides its key-derived address, no
 * keepalive), its memory allocated now. New allowed IPs are routed to the
 * peer, and those it no longer has are not; if one is another peer's, the
 * peer keeps the ones it had and nothing changes. Returns 0, or -1 with a
 * message in err (a member added at run time, a prefix another peer holds,
 * the table full, out of memory).
 */
int yip_device_peer_set(struct yip_device *dev, uint64_t now, const struct yip_peer_config *pc,
                        unsigned fields, char *err, size_t errlen);

/* The peer with this public key, or NULL. */
struct yip_peer *yip_device_peer(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN]);

/*
 * Adds a peer at run time (a CA-gated device only: yip_device_init with
 * cfg->has_ca): its prefixes (at most YIP_PEER_ALLOWED) and its key-derived
 * address route to it, its endpoints are candidate paths, keepalive is its
 * persistent keepalive in seconds (0: off). Everything it needs is
 * allocated now. NULL with a message in err.
 */
struct yip_peer *yip_device_peer_add(struct yip_device *dev, uint64_t now,
                                     const uint8_t pub[YIP_KEY_LEN], const struct yip_cidr *allowed,
                                     size_t n_allowed, const union yip_sockaddr *endpoints,
                                     size_t n_endpoints, unsigned keepalive, char *err,
                                     size_t errlen);

/*
 * Removes a peer, configured or added at run time: its sessions end, its
 * keys are wiped, its session indices are freed, it leaves the timer heap
 * and the key table, its routes go, and its memory is freed. The last peer
 * moves into its slot (peer numbers of yip_device_peer_info change). 0, or
 * -1 if p is not a peer of dev.
 */
int yip_device_peer_remove(struct yip_device *dev, struct yip_peer *p);

/* ---- CA-gated networks (docs/membership.md, "Running a network") ---------------- */

/*
 * Makes the device a member: the CA's public key and our certificate (len
 * bytes). The network is the certificate's. 0; 1 if the certificate is
 * taken but not valid now (another CA's, expired, not yet valid, revoked,
 * another key's: err says which; members will refuse this node, configured
 * peers still work); -1 with a message in err if it is not a certificate.
 */
int yip_device_members_init(struct yip_device *dev, const uint8_t ca[MEMBER_SIGN_PUBLIC],
                            const uint8_t *cert, size_t len, char *err, size_t errlen);

/* Replaces our certificate (a renewal; rendezvous servers get it too,
 * yip_device_set_cert): it must be valid now and of the same network.
 * Sessions are kept. 0, or -1 with a message in err (the old
 * one stays). */
int yip_device_renew_cert(struct yip_device *dev, const uint8_t *cert, size_t len, char *err,
                          size_t errlen);

/*
 * A root set (len bytes) for the device: adopted if it verifies under the
 * CA, is of our network and its serial is at least the one we hold
 * (MEMBER_OK; the same serial again changes nothing); MEMBER_OLDER if its
 * serial is lower (a rollback, counted), or another verdict. Each root
 * we do not know becomes a peer we keep a session with.
 */
enum member_verdict yip_device_offer_roots(struct yip_device *dev, uint64_t now, const uint8_t *obj,
                                           size_t len);

/* A revocation list, as for root sets. Once adopted, members it revokes
 * are removed at once (sessions torn down, peers freed). */
enum member_verdict yip_device_offer_revocations(struct yip_device *dev, uint64_t now,
                                                 const uint8_t *obj, size_t len);

/* A member record from the daemon's cache: held (not announced) if valid
 * now; gossip calls the members it wants from what it holds, so a node
 * restarted while every root is down finds the members it knew. */
enum member_verdict yip_device_offer_record(struct yip_device *dev, uint64_t now,
                                            const uint8_t *obj, size_t len);

/* Calls fn with every member record the node holds (for the cache); how many. */
size_t yip_device_records(struct yip_device *dev,
                          void (*fn)(void *arg, const uint8_t *obj, size_t len), void *arg);

/* What we hold (NULL: none), for the daemon to keep in its state directory. */
const struct member_roots *yip_device_roots(const struct yip_device *dev);
const struct member_revocations *yip_device_revocations(const struct yip_device *dev);

struct yip_members_info {
	char network[WIRE_NETWORK_MAX + 1];
	const struct member_cert *cert;   /* ours */
	enum member_verdict cert_verdict; /* what a member checking it now would say */
	bool has_roots, has_revocations;
	const struct member_roots *roots;
	uint64_t roots_serial, revocations_serial;
	size_t n_revoked;
	uint64_t no_cert;                        /* handshakes refused: no certificate */
	uint64_t refused[MEMBER_VERDICT_COUNT];  /* ... by the certificate's verdict */
	uint64_t admitted, removed;              /* members added, and removed (revoked, expired) */
	uint64_t intros_held, intros_used;       /* introductions to unknown keys, used by one */
	uint64_t asks_refused;                   /* asks about unknown keys over the rate */
	uint64_t roots_older, revocations_older; /* sets and lists refused as rollbacks */
	bool gossip;                             /* the engine runs; then: */
	uint64_t gossip_items, gossip_neighbours, gossip_active;
	uint64_t gossip_tx_msgs, gossip_tx_bytes, gossip_rx_msgs, gossip_rx_bytes;
	uint64_t gossip_accepted, gossip_drops;
};

/* False if the device is not CA-gated. Pointers are good until the engine runs. */
bool yip_device_members_info(const struct yip_device *dev, struct yip_members_info *out);

/* True if the peer has a usable sending session. */
bool yip_peer_established(const struct yip_peer *p, uint64_t now);

#endif
