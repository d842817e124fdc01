/*
 * The engine's state: the peers, their sessions, paths and loss recovery,
 * and the device that holds them. Private to src/peer (and its unit
 * tests): outside it, struct yip_device and struct yip_peer are opaque and
 * read through the functions of peer.h. The opaque check (scripts/opaque.py,
 * in make check) compiles every other file under src/ with YIP_PEER_OPAQUE
 * defined, so that including this header there fails.
 */
#ifndef YIP_PEER_STATE_H
#define YIP_PEER_STATE_H

#ifdef YIP_PEER_OPAQUE
#error "peer/state.h is private to src/peer: use the functions of peer/peer.h"
#endif

#include "cookie/cookie.h"
#include "fec/fec.h"
#include "fec/policy.h"
#include "mac/mac.h"
#include "noise/noise.h"
#include "peer/peer.h"
#include "replay/replay.h"
#include "util/bucket.h"

/* Packets held per peer while its handshake runs; the oldest is dropped. */
#define YIP_QUEUE_LEN 16

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
	uint32_t peer_ts;    /* newest timestamp in the peer's reports, not yet echoed */
	uint64_t peer_ts_at; /* when it arrived (0: none to echo) */
	uint64_t srtt;       /* smoothed RTT, ns (0 = unknown) */
	/* The path's base RTT: the least sample of this epoch and the last one
	 * (report.c, "Congestion"), and the newest sample and when it came. */
	uint64_t rtt_min, rtt_min_prev, rtt_epoch, rtt_last, rtt_last_at;
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

struct yip_member;
struct yip_members;

/*
 * A peer, or a rendezvous server's session (is_server). Its fields come in
 * groups, each owned by the files named in its heading: only they write it.
 */
struct yip_peer {
	/* -- Who it is and its place in the device's tables (peers.c, index.c,
	 * timer.c, members.c). */
	struct yip_device *dev;
	bool is_server;  /* a rendezvous server: a session for control messages only */
	bool configured; /* from the configuration (yip_device_peer_set); else a member or
	                  * a root added at run time (yip_device_peer_add) */
	bool root;       /* listed in the root set we hold */
	uint64_t added;  /* when a dynamic peer was added (monotonic ns) */
	size_t slot;     /* its place in dev->peers (a removal moves the last peer there) */
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t mac1_key[YIP_KEY_LEN]; /* for messages we send to this peer */
	uint8_t address[YIP_ADDR_LEN]; /* key-derived fd00::/8 address */
	struct yip_peer *key_next;     /* the next peer in its chain of the device's key table */
	uint64_t timer_at;             /* when its timers want to run (UINT64_MAX: nothing due) */
	size_t heap_pos;               /* its slot in the device's timer heap */
	/* Its prefixes besides its key-derived address, routed to it: a
	 * configured peer's allowed_ips, a member's certificate's. On the heap,
	 * n_allowed of them (NULL: none). */
	struct yip_cidr *allowed;
	size_t n_allowed;
	struct yip_member *member; /* what its certificate says (CA-gated networks), or NULL */
	bool gossip_up;            /* gossip was told its session is up (records.c) */

	/* -- Paths: the candidates and the one in use (path.c, punch.c,
	 * rendezvous.c). */
	/* The current path: its destination (the server's address when
	 * relayed). has_endpoint: there is one. */
	bool has_endpoint;
	union yip_sockaddr endpoint;
	struct yip_path paths[YIP_MAX_PATHS];
	unsigned n_paths;
	int path; /* the one in use, -1: none yet */
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

	/* -- Handshake and sessions (handshake.c, session.c). */
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

	/* -- Liveness: what was sent and heard when, and what the timer rules
	 * make of it (frame.c, datapath.c, rules.c). */
	unsigned persistent_keepalive; /* seconds, 0 = off */
	uint64_t last_rx;              /* any authenticated datagram */
	uint64_t last_rx_data;         /* authenticated non-keepalive */
	uint64_t last_tx;              /* any datagram sent */
	uint64_t last_tx_data;         /* non-keepalive data sent */
	uint64_t first_unanswered;     /* first data sent since last rx, 0 = none */
	uint64_t hs_unanswered;        /* first Init since the last completed handshake, 0 = none */
	bool hs_hint_logged;           /* the "no answer" hint was logged for it */
	uint64_t cover_at;             /* next cover datagram (obf_cover_ms), 0 = none due */

	/* -- Packets waiting for a session (datapath.c). */
	uint8_t *queue; /* YIP_QUEUE_LEN slots of dev->pkt_max bytes, NULL while empty */
	uint16_t queue_len[YIP_QUEUE_LEN];
	unsigned queue_head, queue_count;

	/* -- Loss recovery (protect.c, recover.c, report.c) and counters. */
	struct yip_fec fec;
	struct yip_peer_stats stats;

	/* -- Reachability pings (ping.c): the last round, NULL before the first. */
	struct yip_ping_round *ping;
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
	/* Round trips (netcheck): the last REGISTER and WHOAMI sent, and the
	 * last measured REGISTER -> REGISTERED and WHOAMI -> YOUARE, ns (0: none). */
	uint64_t register_sent, whoami_sent, rtt, alt_rtt;
	uint64_t registered_at, last_registered; /* first and last REGISTERED */
	uint64_t register_at;                    /* next REGISTER due */
	unsigned unanswered;                     /* REGISTERs since the last REGISTERED */
	bool member_sent;                        /* our certificate, this session */
	uint8_t refused;                         /* REFUSED's reason (YIP_SERVER_REFUSED) */
	uint64_t lookups, intros, unknowns, asks;
	uint64_t cands_refused; /* introduced addresses we will not send to (loopback, ...) */
	/* Reaching it (docs/transports.md, "Fallback"): by UDP (udp: a UDP
	 * line names it), over QUIC (quic_line >= 0: the configuration's
	 * rendezvous line that names it with quic://) and over TLS (tls_line,
	 * its tls:// line). Tried in that order. */
	bool udp;
	int quic_line;
	int tls_line;
	bool quic_asked;     /* the daemon was asked to dial it over QUIC ... */
	uint64_t quic_at;    /* ... then */
	uint64_t quic_ok_at; /* when a session over it last was up, 0: never */
	bool tls_asked;      /* the daemon was asked to dial it over TLS */
	const char *reason;  /* why the link it uses now is the one it uses */
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
	 * The peers, each on the heap and allocated when it is added: the
	 * configured ones (yip_device_peer_set, at start-up or later) and the
	 * members and roots a CA-gated node adds at run time, in the order they
	 * came. yip_device_peer_remove takes one out (the last one moves into
	 * the hole). keytab finds a peer by its static key. At most
	 * max_configured configured and max_dynamic other peers: the key memory
	 * and the route table are sized for them.
	 */
	struct yip_peer **peers;
	size_t n_peers, cap_peers, n_dynamic, max_configured, max_dynamic;
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
	struct yip_device_totals
	    totals; /* metrics' totals (frame.c, datapath.c, handshake.c, peers.c) */
	/* Reachability pings (ping.c): probes sent, pongs matched, rounds refused. */
	uint64_t ping_sent, ping_pongs, ping_refused;
	uint64_t netcheck_at; /* the last netcheck's fresh probes (rendezvous.c), 0 = never */
	/* obf_psk (docs/obfuscation.md): every datagram obfuscated. */
	bool obf;
	struct obf_keys obf_keys;
	uint8_t *obfbuf;    /* YIP_MAX_DGRAM: a received datagram, de-obfuscated */
	unsigned obf_junk;  /* junk datagrams before an Init on a direct path */
	uint64_t obf_cover; /* mean interval of cover datagrams when idle, ns; 0 = off */
};

/* Inside the engine a drop is counted in place, as peer.h's functions
 * (defined in info.c, their names in parentheses) do for the outside. */
#define yip_device_drop(dev, d)      ((void)((dev)->drops[(d)]++))
#define yip_device_drop_n(dev, d, n) ((void)((dev)->drops[(d)] += (n)))

#endif
