/*
 * Membership's state and rules (members.c), in the peer module's private
 * interface: internal.h includes this where members.c stands in its file
 * order. docs/membership.md tells the design.
 */
#ifndef YIP_PEER_MEMBERS_H
#define YIP_PEER_MEMBERS_H

#include "membership/member.h"
#include "peer/state.h"

/* What a peer's certificate says (CA-gated networks). */
struct yip_member {
	struct member_cert cert;
};

#define RECORDS_WANT_QUEUE 64 /* members gossip wants us to call, waiting */

/*
 * An introduction to a member we hold nothing of (no peer, no record): a
 * rendezvous server told us where it is after it asked for us. It creates
 * no peer and makes us send nothing: anyone can ask a server about us. It
 * waits here for the member's own Init, which carries its certificate;
 * once that admits it, the new peer takes these paths (peer_new). The
 * table is small and the oldest entry makes room.
 */
#define MEMBERS_INTROS    32
#define MEMBERS_INTRO_NS  (30 * YIP_NS_PER_S) /* an introduction waits this long */
#define MEMBERS_ASK_RATE  10                  /* asks about unknown keys accepted a second */
#define MEMBERS_ASK_BURST 20
struct yip_intro {
	uint8_t key[YIP_KEY_LEN];
	uint64_t at; /* 0: a free entry */
	uint8_t n_cands;
	union yip_sockaddr cands[WIRE_MAX_CANDS];
	int server;        /* the server that introduced it, for a relay path; -1: none */
	uint32_t relay_id; /* its relay id there */
	uint8_t nat;
};

struct gossip;

/* A CA-gated node's membership state (docs/membership.md). */
struct yip_members {
	uint8_t ca[MEMBER_SIGN_PUBLIC];
	char network[WIRE_NETWORK_MAX + 1];
	bool has_cert;
	struct member_cert cert; /* ours, sent in every handshake */
	bool has_roots;
	struct member_roots roots;
	struct member_revocations *revs;        /* NULL: none yet */
	uint64_t no_cert;                       /* admissions refused: no certificate */
	uint64_t refused[MEMBER_VERDICT_COUNT]; /* ... by the certificate's verdict */
	uint64_t admitted, removed;
	uint64_t roots_older, revs_older; /* root sets, revocation lists refused as older */
	uint64_t sweep_at;                /* next look for expired or revoked members */
	bool has_record;
	struct member_record record; /* ours, signed (records.c) */
	uint64_t record_at;          /* when it was signed (monotonic ns) */
	/* Gossip (records.c): the engine, the time of the call under way (for
	 * its callbacks), what of ours it holds, and what its callbacks asked
	 * for, done once the call has returned. */
	struct gossip *gossip;
	uint64_t gossip_now;
	uint64_t gossip_at; /* when its timers are due (device.c runs them) */
	uint64_t record_put, roots_put, revs_put;
	uint8_t want[RECORDS_WANT_QUEUE][YIP_KEY_LEN];
	unsigned n_want;
	bool gossip_roots, gossip_revs; /* a newer one arrived */
	uint64_t lookup_window;         /* lookups of unknown addresses: this second's */
	unsigned lookups;
	struct member_record scratch; /* for checking a record */
	struct yip_intro *intros;     /* MEMBERS_INTROS of them, allocated when first needed */
	struct yip_bucket ask_bucket; /* asks about unknown keys we accept */
	uint64_t intros_held, intros_used, asks_refused;
};

/* Keeps the server's introduction of a member we hold nothing of (see
 * struct yip_intro); server -1 for no relay path. */
void members_intro_hold(struct yip_device *dev, uint64_t now, const uint8_t key[YIP_KEY_LEN],
                        const union yip_sockaddr *cands, unsigned n, int server, uint32_t relay_id,
                        uint8_t nat);
/* A member just admitted, or named by a record, takes the paths its
 * introduction gave, if one waits. */
void members_intro_take(struct yip_peer *p, uint64_t now);
/* May we accept one more ask about a key we do not know (MEMBERS_ASK_RATE)? */
bool members_ask_allowed(struct yip_device *dev, uint64_t now);
/* Frees the membership state (the device goes away). */
void members_release(struct yip_device *dev);
/* The wall clock in Unix seconds, for certificate checks. */
uint64_t members_unix(struct yip_device *dev);
/* True on a CA-gated node (it has a certificate of its own). */
bool members_on(const struct yip_device *dev);
/*
 * Admission of the certificate cert (len bytes, 0: none) presented for
 * key in a handshake: parsed into out and checked against the CA, the
 * network, the time and the revocation list. A refusal is counted by its
 * verdict (no certificate: MEMBER_MALFORMED, counted as no_cert).
 */
enum member_verdict members_admit(struct yip_device *dev, const uint8_t key[YIP_KEY_LEN],
                                  const uint8_t *cert, size_t len, struct member_cert *out);
/* Records c as p's certificate (the first for a dynamic peer counts as an
 * admission); a dynamic peer's routes become c's prefixes (and its
 * key-derived address). 0, or -1 (out of memory). */
int peer_set_member(struct yip_peer *p, const struct member_cert *c);
/* Adopts a revocation list (len bytes) as yip_device_offer_revocations
 * says; *adopted: it is new, so the members it revokes must go now (the
 * caller removes them: rules.c). */
enum member_verdict members_offer_revocations(struct yip_device *dev, const uint8_t *obj,
                                              size_t len, bool *adopted);
/* Why member p must be removed now ("certificate revoked", "certificate
 * expired", "idle": not a root, no session, silent for MEMBERS_IDLE_NS), or
 * NULL. unix_now: members_unix. Cheap checks only (times, a hash, binary
 * searches): the signatures were checked at admission. */
const char *members_expels(struct yip_device *dev, const struct yip_peer *p, uint64_t now,
                           uint64_t unix_now);
/* A stranger whose certificate c was just admitted becomes a dynamic peer
 * with key, taking the paths its introduction gave, if one waits. NULL
 * (logged) if it cannot be added. */
struct yip_peer *members_join(struct yip_device *dev, uint64_t now, const uint8_t key[YIP_KEY_LEN],
                              const struct member_cert *c);

#endif
