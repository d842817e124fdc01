/*
 * The rendezvous server's engine (yip-rendezvous). Nodes open a Noise IK
 * session to it (the same Init and Resp as between peers, to the server's
 * static key), register their candidate addresses, and ask for each other
 * by public key; the server asks the node asked for, and only if it accepts
 * the asker as a peer are both introduced, at the same moment, so they can
 * punch. Nodes that accepted each other may also send datagrams to each
 * other through the server (Relay): it forwards them without being able to
 * read them. A second port answers WHOAMI, so a node can tell whether its
 * NAT maps one port per destination. See docs/nat.md.
 *
 * Like the peer engine it does no I/O and reads no clock: the daemon feeds
 * it datagrams and the time and it answers through struct rdv_io.
 */
#ifndef YIP_RENDEZVOUS_RENDEZVOUS_H
#define YIP_RENDEZVOUS_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "cookie/cookie.h"
#include "crypto/crypto.h"
#include "membership/member.h"
#include "obf/obf.h"
#include "util/bucket.h"
#include "util/u64map.h"
#include "wire/wire.h"

/* Datagrams the server sends are at most this long (a relayed datagram). */
#define RDV_MAX_DGRAM 65535

#define RDV_SOCK_MAIN 0 /* registrations, lookups, relay */
#define RDV_SOCK_ALT  1 /* the second port: WHOAMI only */
#define RDV_SOCKS     2 /* the UDP sockets */
/* Not a socket: the TLS front's streams, each known by a synthetic address
 * (rdv_stream_addr); everything the main socket takes, over TCP. */
#define RDV_SOCK_STREAM 2

/*
 * A stream's synthetic address: 100::/64 (RFC 6666, the discard-only
 * prefix: no packet comes from it or goes to it), the low 64 bits the
 * front's name for the connection (non-zero), port 9 (discard, as the
 * prefix is: an address on the wire has a port). A UDP datagram from
 * that prefix is dropped before anything else is looked at; no node is
 * ever told of such an address as a candidate.
 */
#define RDV_STREAM_PORT 9
void rdv_stream_addr(union yip_sockaddr *a, uint64_t id);
bool rdv_is_stream_addr(const union yip_sockaddr *a);
/* The id of a synthetic address (0 if it is not one). */
uint64_t rdv_stream_id(const union yip_sockaddr *a);
/* A synthetic address whose id has this bit names a QUIC connection of
 * the QUIC listener (one connection, datagrams in DATAGRAM frames), the
 * others a TLS front's stream; to the engine both are RDV_SOCK_STREAM. */
#define RDV_QUIC_ID_BIT (1ULL << 63)
bool rdv_is_quic_addr(const union yip_sockaddr *a);

#define RDV_DROP_REASONS(X)                                                                        \
	X(MALFORMED, "malformed")               /* unknown type or bad length */                   \
	X(BAD_MAC1, "bad_mac1")                 /* Init not addressed to our key */                \
	X(UNDER_LOAD, "under_load")             /* Init answered with a cookie: too many Inits */  \
	X(RATE_LIMITED, "rate_limited")         /* Init over the per-source or global budget */    \
	X(HANDSHAKE_FAILED, "handshake_failed") /* Noise failed, or no cipher in common */         \
	X(STALE_INIT, "stale_init")             /* Init timestamp not newer: a replay */           \
	X(OLD_INIT, "old_init")     /* Init timestamp over 120 s from our clock: a replay? */      \
	X(INIT_FLOOR, "init_floor") /* a new key's Init not newer than the replay floor */         \
	X(FULL, "full")             /* Init from a new node while max_nodes are in */              \
	X(UNKNOWN_INDEX, "unknown_index")   /* Ctrl for no session */                              \
	X(EXPIRED, "expired")               /* Ctrl under keys past their lifetime */              \
	X(REPLAY, "replay")                 /* Ctrl counter already seen or too old */             \
	X(DECRYPT, "decrypt")               /* Ctrl failed authentication */                       \
	X(BAD_CTRL, "bad_ctrl")             /* malformed or unexpected control message */          \
	X(NOT_FOR_SERVER, "not_for_server") /* a datagram type nodes send only to each other */    \
	X(RELAY_OFF, "relay_off")           /* Relay while relaying is off */                      \
	X(RELAY_TOKEN, "relay_token")       /* Relay with no registered node's token */            \
	X(RELAY_SOURCE, "relay_source")     /* Relay from somewhere else than its node */          \
	X(RELAY_NOT_ALLOWED, "relay_not_allowed") /* to a node that did not accept the sender */   \
	X(RELAY_RATE, "relay_rate")               /* over the sender's bytes per second */         \
	X(ASKS, "asks")               /* lookup while too many of the node's are open */           \
	X(LOOKUP_RATE, "lookup_rate") /* LOOKUP over the node's lookups per second */              \
	X(CHALLENGE, "challenge")     /* PROBE_OK that answers no challenge of ours */             \
	X(NOT_MEMBER,                                                                              \
	  "not_member") /* REGISTER, LOOKUP, ANSWER or Relay from a node not admitted */           \
	X(MEMBER_RATE, "member_rate") /* a second MEMBER from one node within a second */          \
	X(OBF, "obf") /* obf_psk: not authentic (foreign, tampered, another key, or plain) */      \
	X(STREAM_SOURCE, "stream_source") /* UDP from 100::/64, or a stream without its address */

enum rdv_drop {
#define X(name, str) RDV_DROP_##name,
	RDV_DROP_REASONS(X)
#undef X
	    RDV_DROP_COUNT
};

const char *rdv_drop_name(enum rdv_drop d);

struct rdv_io {
	void *ctx;
	/* A buffer of RDV_MAX_DGRAM bytes to build the next datagram in. */
	uint8_t *(*buf)(void *ctx);
	/* Sends the datagram built in the last buf() from socket sock
	 * (RDV_SOCK_STREAM: into the stream of synthetic address to). */
	void (*send)(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len);
};

struct rdv_config {
	uint8_t private_key[YIP_KEY_LEN];
	bool relay;           /* forward Relay datagrams */
	uint64_t relay_rate;  /* bytes per second per node (what it sends through us) */
	uint64_t relay_burst; /* bytes a node may send at once above the rate */
	uint16_t alt_port;    /* the second port, told to nodes (0: none) */
	size_t max_nodes;     /* registered at once */
	unsigned init_rate;   /* Inits per second from one source address */
	unsigned init_global; /* Inits per second in all */
	unsigned init_load;   /* Inits per second past which a cookie is needed */
	bool obf;             /* obf_psk: every datagram obfuscated (docs/obfuscation.md) */
	uint8_t obf_psk[YIP_KEY_LEN];
	/* Forgotten nodes whose newest Init timestamp is remembered at most
	 * (0: rdv_seen_max's default, as many as init_global lets through). */
	size_t seen_max;
};

/* Defaults for what the daemon does not set. */
void rdv_config_default(struct rdv_config *c);

/* Session keys, as the server keeps them: raw, expanded per message (they are rare). */
struct rdv_keys {
	bool valid;
	uint8_t cipher; /* enum yip_cipher */
	uint32_t local, remote;
	uint64_t created;
	uint64_t send_counter;
	uint64_t win_top, win_bits; /* a 64-counter replay window: control traffic is sparse */
	uint8_t send[YIP_KEY_LEN], recv[YIP_KEY_LEN];
};

struct rdv_node_stats {
	uint64_t relay_in_dgrams, relay_in_bytes;   /* it sent through us */
	uint64_t relay_out_dgrams, relay_out_bytes; /* we delivered to it */
	uint64_t relay_refused;                     /* its Relay datagrams we dropped */
	uint64_t lookups, intros, unknowns;
};

/*
 * A node's authenticated datagrams came from `to`, not from its address: a
 * PROBE with a random nonce (challenge) goes there, at most every second
 * (challenged_at) and only as far as the bytes that came from there allow
 * (credit), and the node's address becomes `to` when it echoes the nonce
 * from there in a PROBE_OK. Allocated while it lasts.
 */
struct rdv_move {
	union yip_sockaddr to;
	uint8_t sock; /* RDV_SOCK_MAIN or RDV_SOCK_STREAM: where `to` is reached */
	uint32_t credit;
	uint64_t challenge, challenged_at;
};

/* Why a node is not admitted to a members-only server. */
#define RDV_REFUSED_NO_CERT 0 /* no MEMBER sent (yet); else an enum member_verdict */

struct rdv_node {
	uint8_t key[YIP_KEY_LEN];
	uint64_t key_hash; /* keyed hash of key: its slot in the server's map */
	uint8_t last_tai64n[YIP_TAI64N_LEN];
	/* Where everything for it goes: an address shown to be its own (the
	 * source of an Init whose keys it used, or one that echoed a
	 * challenge); before that (confirmed false), its Init's source. */
	union yip_sockaddr addr;
	uint8_t sock; /* where addr is reached: RDV_SOCK_MAIN or RDV_SOCK_STREAM */
	/* The source of its newest Init, until the keys that Init made (local
	 * index init_index; 0: none waiting) are used: only whoever got our
	 * Resp there can have them, so that address is the node's. */
	union yip_sockaddr init_addr;
	uint8_t init_sock;
	uint32_t init_index;
	bool confirmed;
	bool registered; /* it sent REGISTER */
	uint8_t flags, nat, n_cands;
	union yip_sockaddr cands[WIRE_MAX_CANDS];
	uint64_t token;
	uint32_t relay_id;
	struct rdv_keys cur, prev;
	uint64_t since, last_rx;
	uint64_t bucket, bucket_at; /* relay budget, bytes; when last topped up */
	struct yip_bucket lookups;  /* its LOOKUPs a second */
	struct rdv_move *move;      /* its datagrams come from elsewhere too, or NULL */
	unsigned open_asks;
	/* Members-only servers: the node's certificate was admitted (until
	 * member_until, Unix seconds, skew included), else why not. */
	bool member;
	uint8_t refused; /* RDV_REFUSED_NO_CERT or a member verdict */
	/* Members only, not admitted: forgotten at guest_until whatever it
	 * sends (the guests list, in the order they came). */
	bool guest;
	uint64_t guest_until;
	uint64_t member_until;
	uint64_t member_at; /* when its last MEMBER was checked */
	uint8_t cert_hash[MEMBER_HASH_LEN];
	uint32_t *allowed; /* relay ids of nodes it was introduced to */
	unsigned n_allowed, cap_allowed;
	struct rdv_node *lru_prev, *lru_next; /* its list: oldest last_rx (guests: oldest) first */
	struct rdv_node_stats stats;
};

/* Buckets for the per-source Init budget; a source hashes to one. */
#define RDV_INIT_BUCKETS 4096

/* An open lookup: the ASK to the target awaits its ANSWER. Asks all live
 * ASK_TTL, so the list in the order they were made is the order they
 * expire in: the timers look at its head only. */
struct rdv_ask {
	uint64_t asker, target; /* key_hash of both */
	uint8_t target_key[YIP_KEY_LEN];
	uint32_t asker_id; /* the asker's LOOKUP id */
	uint32_t id;       /* ours, in the ASK */
	uint64_t deadline;
	struct rdv_ask *prev, *next;
};

/*
 * Replayed Inits. An Init is refused if its timestamp is more than
 * WIRE_INIT_MAX_AGE_NS from the server's clock either way; within that
 * window, a key's newest timestamp is kept while the server knows the node
 * and, once it forgets it, in this memory until the timestamp leaves the
 * window (RDV_SEEN_SPAN_S at most after the Init was accepted). A min-heap
 * by timestamp, with a map from the key's keyed hash to its place. When it
 * is full, the oldest timestamp goes and becomes the floor: an Init of a key
 * the server neither knows nor remembers must be newer than the floor.
 */
struct rdv_seen {
	uint64_t key_hash;
	uint8_t ts[YIP_TAI64N_LEN];
};

#define RDV_SEEN_SPAN_S 240       /* 2 x WIRE_INIT_MAX_AGE_NS, in seconds */
#define RDV_SEEN_LIMIT  (1 << 22) /* the default's ceiling (4 M, about 200 MiB) */

struct rdv_stats {
	uint64_t handshakes, registrations, lookups, intros, unknowns, relayed_dgrams,
	    relayed_bytes;
	uint64_t admitted;                      /* MEMBERs whose certificate was accepted */
	uint64_t refused[MEMBER_VERDICT_COUNT]; /* ... refused, by verdict ([0]: no certificate) */
	uint64_t evicted;                       /* members dropped: revoked or expired */
	uint64_t guests_evicted; /* guests forgotten early to make room for a newcomer */
	uint64_t guests_expired; /* guests forgotten GUEST_TTL after they came */
	uint64_t seen_overflows; /* timestamps the replay memory let go early (the floor rose) */
	uint64_t challenges;     /* PROBEs sent to a node's new address */
	uint64_t unpaid;         /* ... not sent: more than the bytes that came from there */
	uint64_t moves;          /* new addresses confirmed by their PROBE_OK */
	uint64_t ask_visits;     /* asks the timers looked at (due ones, and one more if any) */
	uint64_t streams_gone;   /* nodes whose stream closed while it was their address */
};

/* Members only: guests (nodes not admitted) hold at most 1/RDV_GUEST_SHARE
 * of max_nodes (rdv_max_guests). */
#define RDV_GUEST_SHARE 4

/* A members-only server's gate: the CA, the network, and the revocation
 * list (owned by the caller, may be NULL; it must outlive its use). */
struct rdv_members {
	uint8_t ca_public[MEMBER_SIGN_PUBLIC];
	char network[WIRE_NETWORK_MAX + 1];
	const struct member_revocations *revs;
};

struct rdv_server {
	struct rdv_io io;
	struct rdv_config cfg;
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t mac1_key[YIP_KEY_LEN];
	uint8_t hash_key[16]; /* for key_hash and the source buckets */
	struct cookie_checker cookies;
	struct u64map by_key, by_index, by_token, by_relay, asks;
	struct rdv_ask *ask_head, *ask_tail;      /* the asks, oldest first */
	size_t n_nodes, n_guests;                 /* guests among the nodes */
	struct rdv_node *lru_head, *lru_tail;     /* admitted (open server: all), idlest first */
	struct rdv_node *guest_head, *guest_tail; /* members only, not admitted: oldest first */
	uint32_t next_ask;
	struct yip_bucket init_bucket[RDV_INIT_BUCKETS]; /* Inits per source (hashed) */
	struct yip_bucket init_global;                   /* Inits in all */
	uint8_t scratch[WIRE_CTRL_MAX + 64];
	struct obf_keys obf_keys; /* cfg.obf */
	uint8_t *obfbuf;          /* RDV_MAX_DGRAM: a received datagram, de-obfuscated */
	uint8_t *txbuf;           /* the last io.buf() */
	size_t rx_len;            /* the datagram being handled, as it came (obfuscated) */
	uint64_t next_timer;
	bool members_only;
	struct rdv_members members;
	int64_t unix_offset;   /* Unix seconds minus monotonic seconds (rdv_clock) */
	int64_t wall_offset;   /* ... in nanoseconds */
	bool clock_known;      /* rdv_clock was called: Init timestamps are checked */
	struct rdv_seen *seen; /* the replay memory (above): n_seen of cap_seen */
	size_t n_seen, cap_seen;
	struct u64map by_seen;              /* key_hash -> place in seen + 1 */
	uint8_t seen_floor[YIP_TAI64N_LEN]; /* all zeros: none */
	uint64_t drops[RDV_DROP_COUNT];
	struct rdv_stats stats;
};

int rdv_init(struct rdv_server *s, const struct rdv_config *cfg, const struct rdv_io *io, char *err,
             size_t errlen);
void rdv_free(struct rdv_server *s);

/*
 * A datagram arrived on socket sock from src (RDV_SOCK_STREAM: a frame of
 * the stream whose synthetic address src is). Returns the key hash of the
 * node it authenticated as, 0 if it did not: an Init accepted (a Resp
 * sent), a Ctrl that opened under a session's keys, or a Relay from its
 * node's confirmed address. The TLS front takes a stream for a node's only
 * if its first frame returns non-zero.
 */
uint64_t rdv_rx(struct rdv_server *s, uint64_t now, unsigned sock, const union yip_sockaddr *src,
                const uint8_t *d, size_t len);

/*
 * The stream of synthetic address addr closed; node is what rdv_rx last
 * returned for it (0: none). If that node's address is the stream's, the
 * address is stale: nothing is sent to it or relayed to it until the node
 * shows another (a new Init, or the answer to a challenge, from its next
 * connection or over UDP). Its registration and session stay.
 */
void rdv_stream_gone(struct rdv_server *s, const union yip_sockaddr *addr, uint64_t node);

/*
 * Makes the server members-only (m not NULL): a node must send a MEMBER
 * with a certificate m admits for its key before it may register, look up
 * or answer; others get REFUSED. Called again (e.g. a new revocation list),
 * it re-checks every admitted node at once and forgets those no longer
 * admitted. NULL opens the server to every node again.
 */
void rdv_set_members(struct rdv_server *s, uint64_t now, const struct rdv_members *m);

/* Tells the engine the wall clock (Unix seconds) at monotonic time now, for
 * Init timestamps and certificate validity. Call at start and about once a
 * second. Until it is called, Init timestamps are compared only with the
 * node's previous one (an engine without a clock: tests). */
void rdv_clock(struct rdv_server *s, uint64_t now, uint64_t unix_s);

/* How many forgotten nodes' Init timestamps the server remembers at most. */
size_t rdv_seen_max(const struct rdv_server *s);

/* How many guests a members-only server holds at most. */
size_t rdv_max_guests(const struct rdv_server *s);

/* Runs due timers (expiry, unanswered asks); returns the next deadline. */
uint64_t rdv_timers(struct rdv_server *s, uint64_t now);

/* Calls fn for every node the server knows (registered or only
 * handshaken): the guests oldest first, then the others idlest first. */
void rdv_each(const struct rdv_server *s, void (*fn)(void *arg, const struct rdv_node *n),
              void *arg);

#endif
