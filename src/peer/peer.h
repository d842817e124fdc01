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
#include "util/bucket.h"
#include "cookie/cookie.h"
#include "crypto/crypto.h"
#include "fec/fec.h"
#include "fec/policy.h"
#include "flow/flow.h"
#include "link/link.h"
#include "mac/mac.h"
#include "membership/member.h"
#include "noise/noise.h"
#include "obf/obf.h"
#include "replay/replay.h"
#include "wire/wire.h"

struct route_table;

/* Bytes a datagram adds to the inner packet at most (a repair's). */
#define YIP_DGRAM_OVERHEAD WIRE_MAX_OVERHEAD

/* Largest datagram yip sends or accepts: a relayed repair of the largest TAP
 * frame (the MTU plus an Ethernet header and a VLAN tag), obfuscated. */
#define YIP_MAX_DGRAM (YIP_MAX_MTU + 18 + YIP_DGRAM_OVERHEAD + WIRE_RELAY_HDR + OBF_MAX_GROWTH)

/* Packets held per peer while its handshake runs; the oldest is dropped. */
#define YIP_QUEUE_LEN 16

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

/* A session's keys. They live in a key slot (struct yip_key_store) from
 * the handshake that makes them until they are cleared. */
struct yip_keypair {
	bool initiator; /* we sent the Init that made these keys */
	uint32_t local_index;
	uint32_t remote_index;
	uint64_t created; /* monotonic ns */
	uint64_t send_counter;
	struct yip_cipher_key send; /* both under the cipher the handshake chose */
	struct yip_cipher_key recv;
	struct replay_window replay;
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

/*
 * Loss recovery (see docs/protocol.md, "Loss recovery"). Its buffers are
 * allocated when a peer first needs them and released after it has been
 * idle for YIP_RECOVERY_IDLE_NS: a configured peer that carries nothing
 * holds none of them.
 */
#define YIP_RX_BLOCKS        64   /* FEC blocks being reassembled per peer */
#define YIP_RX_AT_SHIFT      14   /* arrival times in a block: 16 us units, 1 s in 16 bits */
#define YIP_RX_CHUNK         64   /* symbol buffers allocated at a time for reassembly */
#define YIP_RX_SLOTS         1024 /* symbol buffers per peer for reassembly, at most */
#define YIP_MISS_SLOTS       1024 /* missing counters tracked per peer for NACKs */
#define YIP_ARQ_TRIES        3
#define YIP_NACK_GRACE_NS    (8 * 1000000ULL)  /* FEC gets this long to rebuild a packet */
#define YIP_ORDER_WAIT_NS    YIP_NACK_GRACE_NS /* and later sources wait that long for it */
#define YIP_RETX_MIN         (64u << 10)       /* bytes of ARQ history to start with */
#define YIP_RETX_MAX         (32u << 20)       /* and at most */
#define YIP_RECOVERY_IDLE_NS (10 * 1000000000ULL)

/* A block being filled or repaired: one lane of a class's group. */
struct yip_tx_block {
	uint8_t k, r; /* target sources, repairs (the code: repair j of r) */
	uint8_t n;    /* sources added */
	uint8_t send; /* repairs to send: r, or fewer for a block closed short */
	uint8_t sent; /* repairs sent after closing */
	uint16_t id;
	uint16_t len; /* longest symbol so far */
	uint8_t *rep; /* FEC_MAX_R symbols of dev->sym_cap bytes, or NULL (none yet) */
};

/*
 * A class's blocks, filled together: packet i of the group goes to lane
 * i mod lanes (fec_params.lanes: 1, or FEC_BULK_LANES for bulk traffic
 * while loss is bursty; a group of more than one lane starts at a block
 * number that is a multiple of its lanes). The group closes when every lane has K sources
 * or its hold time is up; then the lanes' repairs go out a round at a time
 * (repair j of every lane), one round after every `lanes` later packets of
 * the class, the rest when the drain time passes.
 */
struct yip_tx_group {
	bool open;
	uint8_t lanes;
	uint16_t n;        /* sources added over all lanes */
	uint16_t since;    /* class packets sent since it closed */
	uint64_t opened;   /* monotonic ns */
	uint64_t drain_at; /* when unsent repairs must go out */
	struct yip_tx_block lane[FEC_BULK_LANES];
};

struct yip_rx_block {
	bool used, done;
	bool passed; /* the order stopped waiting for its missing sources */
	uint16_t id;
	uint8_t lanes;      /* of its group (every symbol says) */
	uint8_t k, r;       /* k = 0 until a repair says */
	uint16_t len;       /* symbol length (from a repair) */
	uint32_t kp_index;  /* keys the block's sources were sealed with */
	uint64_t first;     /* monotonic ns */
	uint64_t have_src;  /* bitmaps: sources held (arrived or rebuilt), */
	uint64_t delivered; /* sources delivered (or given up), */
	uint16_t have_rep;  /* repairs held */
	uint16_t src_len[FEC_MAX_K];
	uint16_t src_at[FEC_MAX_K]; /* when each source came: after first, >> YIP_RX_AT_SHIFT */
	uint16_t slot_src[FEC_MAX_K];
	uint16_t slot_rep[FEC_MAX_R];
};

/* The blocks being reassembled and the free symbol buffers: allocated with
 * the first block, released with the buffers when idle (31 KiB a peer that
 * a configured but silent peer does not hold). */
struct yip_rx_state {
	struct yip_rx_block blocks[YIP_RX_BLOCKS];
	uint16_t free_slots[YIP_RX_SLOTS];
};

/* A bulk packet kept for ARQ; its bytes lie in the history's data ring. */
struct yip_retx {
	uint64_t counter; /* counter it was last sent with: increasing along the history */
	uint64_t orig;    /* counter it was first sent with: what a resend names */
	uint64_t sent;    /* monotonic ns */
	uint32_t off;     /* where its bytes start in the data ring */
	uint16_t len;
	uint8_t tries;
};

/*
 * The ARQ history: the bulk packets sent lately under one session, oldest
 * first. Its size follows the bandwidth-delay product: it doubles, up to
 * YIP_RETX_MAX, when it is three quarters full and its oldest copy is
 * younger than the horizon (long enough for two NACKs to reach us), or when
 * a copy that young would have to be evicted.
 */
struct yip_retx_ring {
	struct yip_retx *rec; /* rec_cap records, a ring: the oldest at head */
	uint8_t *data;        /* cap bytes, a ring of packets */
	uint32_t cap, rec_cap, head, count, wpos;
	uint32_t bytes;   /* of the packets kept */
	uint32_t session; /* local index of the keys the kept counters belong to */
	uint64_t evicted; /* newest counter evicted + 1 (0: none yet) */
};

/*
 * Where a class's stream of FEC sources stands at the receiver: the next
 * source to deliver (its group, and its place there: sources were sent
 * round-robin over the group's lanes, see struct yip_tx_group). Sources
 * after a missing one wait in their blocks until it is rebuilt, or for
 * YIP_ORDER_WAIT_NS at most.
 */
struct yip_rx_order {
	bool started;
	uint8_t lanes;    /* the group's, once its first block (lane 0) was seen */
	uint16_t group;   /* number of the group's first block (wire_block_num) */
	uint16_t pos;     /* the source's place in the group: index x lanes + lane */
	uint64_t stalled; /* since when the next source has been missing (0: it is not) */
};

struct yip_missing {
	uint64_t counter;
	uint64_t seen; /* when the gap was noticed, 0 = empty */
	uint64_t last_nack;
	uint8_t nacks;
};

struct yip_fec {
	/* sender */
	struct yip_tx_group tx[FLOW_CLASSES][2]; /* [class][open, draining] */
	struct fec_params params[FLOW_CLASSES];
	uint16_t next_block[FLOW_CLASSES]; /* per class (wire_block) */
	double loss;                       /* estimated from the peer's reports */
	double burst;
	uint64_t bursty_at; /* when the burst estimate last reached FEC_BURSTY (0: never) */
	uint32_t loss_runs; /* loss runs the peer's reports counted (report.c, up to a bound) */
	uint64_t loss_seen; /* last report that showed loss */
	uint64_t acc_start; /* reports being added up into one sample */
	uint32_t acc_span, acc_received;
	struct yip_retx_ring retx;
	uint64_t tx_active; /* last bulk packet kept or repair block opened */
	/* receiver */
	struct yip_rx_state *rx; /* NULL until a block is needed */
	struct yip_rx_order order[FLOW_CLASSES];
	uint8_t *pool[YIP_RX_SLOTS / YIP_RX_CHUNK]; /* chunks of YIP_RX_CHUNK symbols */
	unsigned n_chunks;
	unsigned n_free;
	struct yip_missing *missing; /* YIP_MISS_SLOTS, or NULL until a gap */
	uint64_t rx_active;          /* last symbol kept or gap seen */
	uint32_t track_index;        /* keys whose counters the statistics follow */
	uint64_t highest;            /* highest counter received under them */
	bool tracking;
	uint32_t rep_received, rep_bursts, rep_burst_sum, rep_recovered, rep_unrecovered;
	uint64_t rep_highest; /* highest at the last report */
	uint64_t report_due;  /* next report, 0 = none pending */
	uint64_t rx_loss_at;  /* last gap seen in the peer's counters */
	uint64_t nack_at;     /* a gap's first NACK is due (0 = none) */
	uint64_t last_log;    /* last debug line with these counters */
	uint64_t last_report;
	uint32_t peer_ts;    /* newest timestamp in the peer's reports */
	uint64_t peer_ts_at; /* when it arrived */
	uint64_t srtt;       /* smoothed RTT, ns (0 = unknown) */
	/* The path's base RTT: the least sample of this epoch and the last one
	 * (report.c, "Congestion"), and the newest sample. */
	uint64_t rtt_min, rtt_min_prev, rtt_epoch, rtt_last;
};

/*
 * Where a datagram came from: an address, and, for one a rendezvous server
 * relayed, which server and the sender's relay id there.
 */
struct yip_from {
	union yip_sockaddr addr; /* the sender's, or the server's when relayed */
	int server;              /* -1: direct; else the index of the relaying server */
	uint32_t relay_id;       /* relayed: the sender's relay id at that server */
	uint32_t link; /* the link it arrived by (link/link.h): YIP_LINK_MAIN, or another */
};

/* A way to reach a peer (docs/nat.md, "Paths"). */
enum yip_path_kind { YIP_PATH_DIRECT = 0, YIP_PATH_RELAY = 1 };

/* Where a path came from. */
enum yip_path_origin {
	YIP_ORIGIN_CONFIG = 0, /* the peer's endpoint= */
	YIP_ORIGIN_SERVER,     /* an address a rendezvous server told us (INTRO) */
	YIP_ORIGIN_PEER,       /* an address the peer wrote to us from */
	YIP_ORIGIN_RELAY,      /* through a rendezvous server */
};

struct yip_path {
	uint8_t kind;            /* enum yip_path_kind */
	uint8_t origin;          /* enum yip_path_origin */
	int8_t server;           /* relay: the server's index */
	bool validated;          /* an authenticated datagram came back on it */
	union yip_sockaddr addr; /* direct: the peer's address */
	uint32_t link;           /* direct: the link it uses (YIP_LINK_MAIN: the main socket) */
	uint32_t relay_id;       /* relay: the peer's id at the server */
	uint64_t added;
	uint64_t last_rx;  /* last authenticated datagram on it, 0 = never */
	uint64_t rtt;      /* smoothed probe round trip, ns (0 = unknown) */
	uint64_t probe_at; /* when the last probe went out on it */
	uint64_t probe_nonce;
	unsigned unanswered; /* probes since the last answer */
	unsigned inits;      /* Inits sent on it in this handshake attempt series */
};

/* Inits a direct path a server or record told us of gets in one series of
 * handshake attempts until it answers (the series lasts rekey_attempt): an
 * address we were only told of has not said it wants anything from us. */
#define YIP_UNVALIDATED_INITS 3

#define YIP_MAX_PATHS 12

/* Prefixes a dynamic peer may hold (a certificate's). */
#define YIP_PEER_ALLOWED 8
/* Peers a CA-gated node adds at run time, at most. */
#define YIP_MAX_DYNAMIC_PEERS 1024
/* How long a member's own record is valid, and the age at which it is
 * signed again. A record is also signed again at once
 * when its endpoints or certificate change, so this does not bound how
 * stale endpoints are; it sets the steady cost of gossip, since every node
 * receives every re-signed record (docs/gossip.md, "Cost": about
 * 65 + 1 500 N / YIP_RECORD_RESIGN_S bytes a second per node for N
 * members). bench/gossip-sim uses the same values. */
#define YIP_RECORD_LIFETIME_S (12 * 3600)
#define YIP_RECORD_RESIGN_S   (YIP_RECORD_LIFETIME_S / 2)

struct yip_member;
struct yip_members;

struct yip_peer {
	struct yip_device *dev;
	bool is_server;            /* a rendezvous server: a session for control messages only */
	bool dynamic;              /* added at run time (yip_device_peer_add); removable */
	bool root;                 /* listed in the root set we hold */
	uint64_t added;            /* when a dynamic peer was added (monotonic ns) */
	bool gossip_up;            /* gossip was told its session is up */
	size_t slot;               /* its place in dev->peers; static peers keep theirs for life */
	struct yip_peer *key_next; /* the next peer in its chain of the device's key table */
	/* Its prefixes besides its key-derived address (a dynamic peer's: routes to remove). */
	struct yip_cidr allowed[YIP_PEER_ALLOWED];
	uint8_t n_allowed;
	struct yip_member *member; /* what its certificate says (CA-gated networks), or NULL */
	uint64_t timer_at;         /* when its timers want to run (UINT64_MAX: nothing due) */
	size_t heap_pos;           /* its slot in the device's timer heap */
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t mac1_key[YIP_KEY_LEN]; /* for messages we send to this peer */
	uint8_t address[YIP_ADDR_LEN]; /* key-derived fd00::/8 address */
	/* The current path: its destination (the server's address when
	 * relayed). has_endpoint: there is one. */
	bool has_endpoint;
	union yip_sockaddr endpoint;
	unsigned persistent_keepalive; /* seconds, 0 = off */

	/* Candidate paths and the one in use (-1: none yet). */
	struct yip_path paths[YIP_MAX_PATHS];
	unsigned n_paths;
	int path;
	uint64_t path_since;
	uint8_t nat;          /* the peer's NAT class, enum wire_nat, from an INTRO */
	uint64_t lookup_at;   /* next LOOKUP to the rendezvous servers (0: none due) */
	uint32_t lookup_id;   /* of the last one */
	uint64_t lookup_wait; /* after an UNKNOWN: doubles up to a minute */
	bool lookup_unknown;  /* the last LOOKUP was answered UNKNOWN */
	uint64_t intro_at;    /* last INTRO about this peer, 0 = never */
	uint64_t probe_next;  /* next path probing round */
	unsigned probe_rounds;
	bool has_reflexive; /* the peer's reflexive address, from an INTRO */
	union yip_sockaddr reflexive;
	struct yip_many_ports *many; /* a many-ports probe under way, or NULL */
	uint64_t many_next;          /* no new one before this */
	unsigned many_tries;

	/* Handshake we initiated and are waiting on: its state in a key slot
	 * while hs_pending, else NULL. */
	bool hs_pending;
	struct noise_hs *hs;
	uint32_t hs_index;
	uint64_t hs_first; /* when this attempt series began */
	uint64_t hs_next;  /* when to retransmit */
	unsigned hs_tries;
	uint8_t last_tai64n[YIP_TAI64N_LEN]; /* newest Init timestamp accepted */
	uint64_t last_init_rx;               /* when the last Init from it was accepted */
	uint64_t old_init_logged;            /* when an Init too old by our clock was last logged */
	struct cookie_jar cookie;            /* the cookie it gave us under load */

	/* previous: receive-only after a rekey; current: send and receive;
	 * next: made by an Init we answered, promoted on first use by the peer.
	 * Each in a key slot, NULL when there is none. */
	struct yip_keypair *prev, *cur, *next;
	uint64_t prev_retire;

	uint64_t last_rx;          /* any authenticated datagram */
	uint64_t last_rx_data;     /* authenticated non-keepalive */
	uint64_t last_tx;          /* any datagram sent */
	uint64_t last_tx_data;     /* non-keepalive data sent */
	uint64_t first_unanswered; /* first data sent since last rx, 0 = none */
	uint64_t hs_unanswered;    /* first Init since the last completed handshake, 0 = none */
	bool hs_hint_logged;       /* the "no answer" hint was logged for it */
	uint64_t cover_at;         /* next cover datagram (obf_cover_ms), 0 = none due */

	uint8_t *queue; /* YIP_QUEUE_LEN slots of dev->pkt_max bytes, NULL while empty */
	uint16_t queue_len[YIP_QUEUE_LEN];
	unsigned queue_head, queue_count;

	struct yip_fec fec;
	struct yip_peer_stats stats;
};

/* A rendezvous server the node uses (docs/nat.md). */
enum yip_server_state {
	YIP_SERVER_CONNECTING = 0, /* handshake not done */
	YIP_SERVER_REGISTERING,    /* REGISTER sent, no REGISTERED yet */
	YIP_SERVER_REGISTERED,
	YIP_SERVER_REFUSED, /* a members-only server refused our certificate (or we sent none) */
};

struct yip_server {
	struct yip_peer peer;             /* the session with it, as with a peer */
	uint8_t state;                    /* enum yip_server_state */
	bool relay;                       /* it relays for us */
	uint64_t token;                   /* our relay token there (secret) */
	uint32_t relay_id;                /* our relay id there */
	uint16_t alt_port;                /* its second port, 0: none */
	union yip_sockaddr reflexive;     /* our address as it sees it */
	union yip_sockaddr reflexive_alt; /* ... as its second port sees it */
	bool has_reflexive, has_reflexive_alt;
	uint32_t whoami_id;
	uint64_t registered_at, last_registered; /* first and last REGISTERED */
	uint64_t register_at;                    /* next REGISTER due */
	unsigned unanswered;                     /* REGISTERs since the last REGISTERED */
	bool member_sent;                        /* our certificate, this session */
	uint8_t refused;                         /* REFUSED's reason (YIP_SERVER_REFUSED) */
	uint64_t lookups, intros, unknowns, asks;
	uint64_t cands_refused; /* introduced addresses we will not send to (loopback, ...) */
};

/* Handshake budgets (docs/protocol.md, "Cookies"). */
#define YIP_INIT_BUCKETS 1024                 /* per-source budgets, by hashed address */
#define YIP_INIT_RATE    20                   /* Inits a second from one address */
#define YIP_INIT_LOAD    100                  /* Inits a second past which cookies are needed */
#define YIP_INIT_PEER_NS (50ULL * 1000000ULL) /* one accepted Init per peer this often */
#define YIP_COOKIE_RATE  10000                /* Cookie answers a second at most, burst as many */

struct yip_index_slot {
	uint32_t index; /* 0 = empty */
	struct yip_peer *peer;
};

/*
 * Key slots: where session keys and the state of handshakes we initiate
 * live (session.c). A peer holds a slot only while it has such a secret:
 * a configured peer that never talks holds none. A peer holds at most
 * YIP_KEY_SLOTS_PER_PEER at once (previous, current and next keys, and a
 * pending handshake). The slots come from the memory yip_device_key_memory
 * gave the engine (the daemon locks it in RAM and keeps it out of core
 * dumps), handed out lowest first so that only what was used is resident;
 * without it, each slot is allocated on the heap. Every slot is wiped when
 * it is given back.
 */
union yip_key_slot {
	struct yip_keypair kp;
	struct noise_hs hs;
	union yip_key_slot *free_next; /* a free slot of the given memory */
};

#define YIP_KEY_SLOTS_PER_PEER 4

struct yip_key_store {
	union yip_key_slot *mem; /* the given memory, n slots of it; NULL: none */
	size_t n, used;          /* slots in it, and handed out at least once */
	union yip_key_slot *free;
	size_t held;      /* slots held now, given memory or heap */
	uint64_t refused; /* slots asked for when the given memory was full */
};

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

struct yip_device {
	struct yip_io io;
	uint8_t private_key[YIP_KEY_LEN];
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t mac1_key[YIP_KEY_LEN]; /* for messages sent to us */
	uint8_t address[YIP_ADDR_LEN];
	unsigned mtu;
	unsigned pkt_max; /* largest packet (or TAP frame) from the device */
	unsigned sym_cap; /* bytes of one FEC symbol buffer */
	bool fec_off;
	unsigned ciphers; /* YIP_CIPHER_BIT set we offer and accept */
	struct yip_timing t;
	struct flow_table *flows;
	struct mac_table *macs; /* TAP mode only; NULL in TUN mode */

	/*
	 * The peers, each on the heap: the configured ones first (slots
	 * 0..n_static-1, fixed for life), then the dynamic ones, which
	 * yip_device_peer_add appends and yip_device_peer_remove takes out (the
	 * last one moves into the hole). keytab finds a peer by its static key.
	 */
	struct yip_peer **peers;
	size_t n_peers, cap_peers, n_static, max_dynamic;
	bool clock_seen;          /* the timers have run: the paths set up before know their time */
	struct yip_peer **keytab; /* chained by key_next; keytab_mask + 1 buckets */
	size_t keytab_mask;
	struct yip_members *members; /* CA-gated network state (membership.c), or NULL */
	struct yip_server *servers;  /* rendezvous servers, n_servers of them */
	size_t n_servers;
	bool relay_off;         /* relay=off */
	uint64_t nat_keepalive; /* ns between datagrams that hold NAT mappings; 0 = off */
	uint8_t nat;            /* our NAT class, enum wire_nat, as the servers show it */
	uint8_t *member_cert;   /* our certificate for members-only servers, or NULL */
	size_t member_cert_len;
	/* Handshake floods (docs/protocol.md, "Cookies"): cookies under load,
	 * and a budget of Inits per source address. */
	struct cookie_checker cookies;
	uint8_t hash_key[16];
	struct yip_many_pool *many_pool; /* extra sockets of many-ports probing, or NULL */
	struct yip_bucket init_bucket[YIP_INIT_BUCKETS]; /* Inits per source (hashed) */
	/* Cookie answers (YIP_COOKIE_RATE a second): a flood of Inits faster
	 * than that costs a mac1 check each, not a sealed answer. */
	struct yip_bucket cookie_bucket;
	struct route_table *routes; /* inner prefix -> peer */
	uint64_t icmp_window;
	unsigned icmp_sent;

	struct yip_index_slot *index; /* open addressing, linear probing */
	size_t index_mask;
	struct yip_key_store keys; /* key slots (session.c) */

	uint8_t *scratch;         /* YIP_MAX_DGRAM bytes for decryption */
	uint8_t *deadbuf;         /* YIP_MAX_DGRAM bytes: a datagram for a link that is gone */
	struct yip_preopened pre; /* for the datagram being handled, if any */
	uint8_t *txsym;           /* sym_cap bytes: the FEC symbol being folded in */
	uint64_t next_timer;      /* earliest deadline of the servers' timers */
	struct yip_peer **heap;   /* peers by deadline (timer.c) */
	size_t heap_len, heap_cap;
	uint64_t timer_runs; /* peers' timers run so far (the timer benchmark) */
	uint64_t rtt_max;    /* the largest smoothed RTT a peer reported last */
	const struct yip_peer *rtt_max_peer;
	uint64_t drops[YIP_DROP_COUNT];
	/* obf_psk (docs/obfuscation.md): every datagram obfuscated. */
	bool obf;
	struct obf_keys obf_keys;
	uint8_t *obfbuf;    /* YIP_MAX_DGRAM: a received datagram, de-obfuscated */
	unsigned obf_junk;  /* junk datagrams before an Init on a direct path */
	uint64_t obf_cover; /* mean interval of cover datagrams when idle, ns; 0 = off */
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
static inline void yip_device_drop(struct yip_device *dev, enum yip_drop d)
{
	dev->drops[d]++;
}

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
	const char *relayed_why;        /* relayed: why not direct; NULL otherwise */
	const char *nat;                /* the peer's NAT mapping, from an introduction */
	unsigned n_paths;
	struct yip_path_info paths[YIP_MAX_PATHS];
	bool dynamic; /* added at run time (a member, a root) */
	bool root;    /* listed in the root set */
	const struct member_cert
	    *cert;         /* its certificate, NULL if none (good until the engine runs) */
	uint8_t n_allowed; /* a dynamic peer's prefixes (its certificate's) */
	struct yip_cidr allowed[YIP_PEER_ALLOWED];
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

/* "unknown", "none", "endpoint-independent", "per destination" (enum wire_nat). */
const char *yip_nat_name(unsigned nat);

/* Peer i (0 <= i < n_peers) as of now; false if there is no such peer. */
bool yip_device_peer_info(const struct yip_device *dev, size_t i, uint64_t now,
                          struct yip_peer_info *out);

/* The largest smoothed RTT to any peer, ns (0 = none known). */
uint64_t yip_device_rtt_max(const struct yip_device *dev);

/* The inner MTU the engine enforces. */
unsigned yip_device_mtu(const struct yip_device *dev);

/*
 * What a worker thread made of the datagram about to be handed to
 * yip_device_rx (see struct yip_preopened); NULL clears it. The pointers
 * must stay valid until it is cleared.
 */
void yip_device_preopened(struct yip_device *dev, const struct yip_preopened *pre);

/* Counts n drops that happened outside the engine. */
static inline void yip_device_drop_n(struct yip_device *dev, enum yip_drop d, uint64_t n)
{
	dev->drops[d] += n;
}

/*
 * The host name of a configured endpoint now resolves to addr (the daemon
 * re-resolves names; the engine does no I/O). i < n_static is configured
 * peer i, n_static + k is rendezvous server k. The configured path moves to addr and
 * becomes current if the old one was; a current path that authenticated
 * traffic came back on within dead_after stays current, kept as an address
 * the peer uses, until it falls silent and a new handshake tries every
 * path. Returns 0, or -1 if there is no such peer.
 */
int yip_device_set_endpoint(struct yip_device *dev, uint64_t now, size_t i,
                            const union yip_sockaddr *addr);

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
 * Removes a peer added at run time: its sessions end, its keys are wiped,
 * it leaves the timer heap, the index and key tables and the routes, and
 * its memory is freed. The last peer moves into its slot (peer numbers of
 * yip_device_peer_info change). -1 for a configured peer.
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
