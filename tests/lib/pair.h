/*
 * Two engines back to back in memory, for unit tests, fuzzers and the
 * micro-benchmarks. Each node is a struct yip_device whose struct yip_io
 * callbacks capture what it sends (datagrams, in order, with their
 * destination) and what it delivers to its device (packets, counted and
 * optionally kept), and read a wall clock of the node's own. Nothing moves
 * between the nodes until the caller pumps one node's datagrams into the
 * other, all or some of them; time passes only as the caller passes it.
 *
 * Node i has the underlay address 192.0.2.(i+1):51820 and the inner address
 * 10.0.0.(i+1); each allows the other 10.0.0.(other+1)/32 (and, as every
 * engine does, the other's key-derived fd00::/8 address).
 *
 * Queues are fixed at init. A node asked to hold more than it can aborts
 * the process with a message (a test that overflows its queue is wrong),
 * unless discard_overflow is set: then what does not fit is counted in
 * overflow and thrown away.
 */
#ifndef YIP_TESTS_LIB_PAIR_H
#define YIP_TESTS_LIB_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "peer/peer.h"
#include "peer/state.h" /* the engines are embedded here */

/* Where every node's wall clock starts: 2023-11-14, ns since the epoch. */
#define PAIR_WALL_START (1700000000ULL * 1000000000ULL)

#define PAIR_PORT 51820

#define PAIR_MAX_SOCKS 4095 /* extra sockets a node may open in its life, at most */

struct pair_opts {
	unsigned mtu[2];       /* cfg.mtu of each node; 0: YIP_DEFAULT_MTU */
	unsigned ciphers[2];   /* cfg.ciphers of each node (YIP_CIPHER_BIT set); 0: auto */
	bool no_endpoint[2];   /* node i is not told where the other is */
	unsigned keepalive[2]; /* persistent_keepalive of each node, seconds; 0: off */
	bool tap;              /* both devices are TAP (Ethernet frames) rather than TUN */
	bool fec_off;          /* fec=off on both */
	/*
	 * seal_later: the engines leave sealing data datagrams to the I/O
	 * layer (struct yip_io.seal_later), as with worker threads; the pair
	 * seals them all when the datagrams leave (pair_pump, pair_flush).
	 * preopen: before an engine sees a datagram the pair opens it with the
	 * key yip_device_rx_key names and hands the result over with
	 * yip_device_preopened, as the workers do.
	 */
	bool seal_later, preopen;
	bool discard_overflow;              /* see above */
	const struct yip_timing *timing;    /* NULL: yip_timing_default */
	unsigned out_cap;                   /* datagrams each node holds; 0: 64 */
	unsigned keep_cap;                  /* delivered packets each node keeps; 0: none */
	size_t keep_len;                    /* bytes of room per kept packet; 0: 1500 */
	const uint8_t (*keys)[YIP_KEY_LEN]; /* the two private keys; NULL: fresh random ones */
	unsigned extra_socks;               /* extra sockets a node may open (link_open); 0: none */
	bool ca;                            /* both made for a CA-gated network (cfg.has_ca) */
	const uint8_t *obf_psk[2];          /* each node's obf_psk (32 bytes); NULL: off */
	unsigned obf_junk, obf_cover_ms;    /* for nodes with obf_psk */
	unsigned extra_peers;               /* node 0 also lists this many idle peers (random keys,
	                                       endpoints 198.18.x.y, allowed 10.1.x.y/32), after node 1 */
};

/* A datagram a node sent. buf holds YIP_MAX_DGRAM bytes, 64-byte aligned. */
struct pair_dgram {
	union yip_sockaddr to;
	size_t len;
	uint32_t train;
	uint32_t sock; /* YIP_LINK_MAIN: the main socket; else the extra socket's link */
	uint8_t *buf;
};

/* A packet a node delivered to its device (first keep_len bytes of it). */
struct pair_packet {
	size_t len;
	uint8_t *buf;
};

struct pair_seal; /* a sealing job (seal_later) */

struct pair_node {
	struct yip_device dev;
	union yip_sockaddr addr; /* where its datagrams come from; may be changed (roaming) */
	struct pair_dgram *out;  /* what it sent, oldest first */
	unsigned nout, out_cap;
	struct pair_packet *delivered; /* the first keep_cap packets delivered */
	unsigned ndelivered, keep_cap;
	size_t keep_len;
	uint64_t wall; /* ns since the epoch; every read advances it by 20 ms */

	uint64_t datagrams, wire_bytes;                 /* every send, kept or thrown away */
	uint64_t tx_dropped;                            /* sends tx_drop threw away */
	uint64_t overflow;                              /* sends and deliveries that did not fit */
	uint64_t packets, packet_bytes;                 /* every delivery, kept or not */
	unsigned max_socks, socks_opened, socks_closed; /* extra sockets (pair_opts.extra_socks) */
	uint64_t sock_closed[PAIR_MAX_SOCKS / 64 + 1];  /* which of them were closed */

	/* Optional: returns true for a datagram to throw away as it is sent. */
	bool (*tx_drop)(void *arg, const uint8_t *d, size_t len);
	void *tx_drop_arg;

	/* private */
	struct yip_links links; /* the main socket, then the extra ones (by number) */
	bool discard, seal_later, preopen;
	uint8_t *mem, *spare, *plain, *kept;
	struct pair_seal *jobs;
	unsigned njobs;
};

struct pair {
	struct pair_node n[2];
	struct pair_opts opts;
	uint8_t keys[2][YIP_KEY_LEN];
};

/*
 * Builds the two engines. The pair must stay where it is until pair_free
 * (the engines point at it). Returns 0, or -1 with a message in err.
 */
int pair_init(struct pair *p, const struct pair_opts *o, char *err, size_t errlen);

void pair_free(struct pair *p);

/* Rebuilds node i (same keys, empty queues) from p->opts, e.g. after changing its MTU. */
int pair_node_reset(struct pair *p, int i, char *err, size_t errlen);

/*
 * One node with any configuration and the pair's callbacks, queues and
 * clock (opts gives the queue sizes and the I/O options; its per-node
 * fields are ignored). Free with pair_node_free.
 */
int pair_node_init(struct pair_node *n, const struct yip_config *cfg, const struct yip_timing *t,
                   const struct pair_opts *o, char *err, size_t errlen);
void pair_node_free(struct pair_node *n);

/* True if the node closed extra socket sock (a closed socket receives nothing). */
bool pair_sock_closed(const struct pair_node *n, uint32_t sock);

/* Seals what seal_later left pending (nothing otherwise). */
void pair_flush(struct pair_node *n);

/* Hands one datagram to a node as coming from src (pre-opened if preopen is set). */
void pair_rx(struct pair_node *n, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len);

/*
 * Decides whether a datagram in transit arrives: true delivers it. i counts
 * the datagrams of this pump from 0.
 */
typedef bool (*pair_keep_fn)(void *arg, const struct pair_dgram *d, unsigned i);

/*
 * Hands what node `from` sent to the other node, oldest first, and empties
 * from's queue. keep (may be NULL: all arrive) decides for each datagram.
 * Returns how many datagrams were taken from the queue.
 */
unsigned pair_pump(struct pair *p, int from, uint64_t now, pair_keep_fn keep, void *arg);

/* Empties a node's queue without delivering anything; returns how many were in it. */
unsigned pair_discard(struct pair_node *n);

/* Pumps both ways until both queues are empty (at most 10 rounds). */
void pair_settle(struct pair *p, uint64_t now);

/* Runs both engines' timers; returns the earlier of their next deadlines. */
uint64_t pair_timers(struct pair *p, uint64_t now);

/* Forgets the packets kept so far (the counters stay). */
void pair_forget(struct pair_node *n);

/*
 * Random loss for pair_pump: each datagram is lost with probability
 * percent / 100, drawn from a linear congruential generator whose state the
 * caller owns, so a test's loss pattern is the same on every run.
 */
struct pair_loss {
	uint32_t state;
	unsigned percent;
};

bool pair_lose(uint32_t *state, unsigned percent);
bool pair_keep_lossy(void *arg, const struct pair_dgram *d, unsigned i);

#endif
