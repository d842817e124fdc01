/*
 * The files of the peer module, bottom to top. Each file calls only the
 * files listed above it; where a lower file needs something done above it,
 * it returns what happened and its caller acts. The layering check
 * (scripts/layering.py, in make check) enforces the order.
 *
 *   timer.c      the peers' deadlines: a heap, so a tick costs only the due peers
 *   index.c      a datagram finds its peer: session index or static key
 *   session.c    key slots (previous, current, next; handshakes) and their lifetimes
 *   path.c       a peer's candidate paths and the current one
 *   icmp.c       ICMP unreachable replies (builds them; sends nothing)
 *   frame.c      seal and send, open, deliver: the engine's only yip_io calls
 *   protect.c    loss recovery, sending side: FEC blocks, ARQ history
 *   recover.c    loss recovery, receiving side: reassembly, loss, NACKs
 *   report.c     loss reports both ways; RTT
 *   peers.c      the peer table: adding, freeing, a peer's routes
 *   members.c    membership: certificates, admission, roots, revocations, introductions
 *   handshake.c  Noise IK: Inits, Resps, turning them into sessions
 *   ping.c       reachability pings: a PROBE on every path, for yipctl ping
 *   punch.c      path probes: which paths work, how fast, which to use
 *   rendezvous.c the node's side of the rendezvous servers: register, look up, introductions
 *   records.c    member records: our own, checking others', calling the member one names
 *   datapath.c   TUN -> peer, peer -> TUN, the send queue
 *   rules.c      the timer rules: rekey, keepalives, dead peers, member sweeps, gossip's turn
 *   info.c       what the engine tells about itself: yip_device_*_info, counters
 *   device.c     lifecycle, datagram dispatch
 *
 * Not part of the module's interface (that is peer.h).
 */
#ifndef YIP_PEER_INTERNAL_H
#define YIP_PEER_INTERNAL_H

#include "membership/member.h"
#include "peer/peer.h"
#include "peer/state.h"

/* Counter limits: rekey well before the nonce space could ever wrap. */
#define YIP_REKEY_AFTER_MESSAGES  (1ULL << 60)
#define YIP_REJECT_AFTER_MESSAGES (UINT64_MAX - (1ULL << 13))

static inline uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The link with this id in the I/O layer's table (link/link.h), or NULL if it is gone. */
static inline const struct yip_link *link_of(const struct yip_device *dev, uint32_t id)
{
	return yip_link_get(dev->io.links, id);
}

/* Whether datagrams on link id are delivered reliably and in order: no
 * FEC, no ARQ, no NACKs over it. */
static inline bool link_reliable(const struct yip_device *dev, uint32_t id)
{
	const struct yip_link *lk = link_of(dev, id);

	return lk != NULL && (lk->flags & YIP_LINK_RELIABLE);
}

/* ---- timer.c: the peers' deadlines ------------------------------------- */

/* Room in the heap for n peers (the device's peers; it never shrinks). */
int timer_reserve(struct yip_device *dev, size_t n);
void timer_init_peer(struct yip_peer *p);
/* The peer's timers run by `when` (an earlier deadline wins). */
void timer_set(struct yip_peer *p, uint64_t when);
void timer_del(struct yip_peer *p);
/* The most overdue peer, out of the heap; NULL when none is due by now. */
struct yip_peer *timer_pop_due(struct yip_device *dev, uint64_t now);
uint64_t timer_next(const struct yip_device *dev);
void timer_free(struct yip_device *dev);

/* Asks for the device's own timers (rendezvous servers) to run by `when`. */
static inline void schedule(struct yip_device *dev, uint64_t when)
{
	if (when < dev->next_timer)
		dev->next_timer = when;
}

/* Asks for peer p's timers to run by `when`. A server's session is a
 * device timer. */
static inline void schedule_peer(struct yip_peer *p, uint64_t when)
{
	if (p->is_server)
		schedule(p->dev, when);
	else if (when < p->timer_at)
		timer_set(p, when);
}

/* ---- index.c: session index -> peer, static key -> peer ---------------- */

int index_add(struct yip_device *dev, struct yip_peer *p, uint32_t *out);
void index_del(struct yip_device *dev, uint32_t index);
struct yip_peer *index_find(const struct yip_device *dev, uint32_t index);
/* Grows the session index table for n peers and servers (rehashes). 0, or -1. */
int index_reserve(struct yip_device *dev, size_t n);
/* Grows the key table for n peers (before they are added). 0, or -1. */
int index_key_reserve(struct yip_device *dev, size_t n);
/* Enters p, already in dev->peers, in the key table (grown as needed). 0, or -1. */
int index_key_add(struct yip_device *dev, struct yip_peer *p);
void index_key_del(struct yip_device *dev, struct yip_peer *p);
struct yip_peer *index_key_find(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN]);

/* ---- session.c: key slots and their lifetimes ------------------------------ */

/* A zeroed key slot (union yip_key_slot), or NULL: the device's key memory
 * is used up (counted in dev->keys.refused), or the heap is. */
void *session_slot_new(struct yip_device *dev);
/* The slot, wiped, to hold a keypair instead (a handshake's, for its keys). */
struct yip_keypair *session_slot_reuse(void *slot);
/* Wipes the slot and gives it back; NULL is ignored. */
void session_slot_free(struct yip_device *dev, void *slot);
/* Ends the session in *kp, if any: its index goes, its slot is wiped and
 * given back, and *kp becomes NULL. */
void session_clear(struct yip_device *dev, struct yip_keypair **kp);
/* Marks freshly split keys usable; wall is the time of day, for yipctl. */
void session_install(struct yip_peer *p, struct yip_keypair *kp, uint64_t now, uint64_t wall);
/* current -> previous (kept prev_overlap for late datagrams); current empty. */
void session_retire_current(struct yip_peer *p, uint64_t now);
/* next -> current, the old current retired: the peer used our Resp's keys. */
void session_promote(struct yip_peer *p, uint64_t now);
struct yip_keypair *session_for_index(struct yip_peer *p, uint32_t index);
bool session_usable(const struct yip_peer *p, uint64_t now);
/* The age at which this side rekeys its current session. */
uint64_t session_rekey_age(const struct yip_peer *p);
/* True if the current session is due a rekey by age or message count. */
bool session_rekey_due(const struct yip_peer *p, uint64_t now);
/* Expires keys past their lifetime; returns the next expiry. */
uint64_t session_timers(struct yip_peer *p, uint64_t now);

/* ---- path.c: candidate paths and the current one -------------------------------- */

int path_find(const struct yip_peer *p, int kind, const union yip_sockaddr *addr, int server,
              uint32_t relay_id);
/* The path a datagram came by, or -1. */
int path_from(const struct yip_peer *p, const struct yip_from *from);
/* Adds a candidate (or finds it); its index, or -1 if the table is full. */
int path_add(struct yip_peer *p, uint64_t now, int kind, const union yip_sockaddr *addr, int server,
             uint32_t relay_id, int origin);
/* A configured direct path to addr over link (yip_device_link_path); as path_add. */
int path_add_link(struct yip_peer *p, uint64_t now, const union yip_sockaddr *addr, uint32_t link);
/* Makes path i current (logs the change). */
void path_use(struct yip_peer *p, uint64_t now, int i);
void path_clear_current(struct yip_peer *p);
/* Forgets path i (the current one too). */
void path_remove(struct yip_peer *p, int i);
/* "direct a.b.c.d:p" or "relayed via a.b.c.d:p". */
void path_format(const struct yip_peer *p, int i, char *out, size_t len);
/* The path `from` names, added (not validated, not made current) if new;
 * -1 if the table is full of validated paths. */
int path_note(struct yip_peer *p, uint64_t now, const struct yip_from *from);
/* An authenticated datagram came by `from`; probe: only a path probe. */
void path_confirm(struct yip_peer *p, uint64_t now, const struct yip_from *from, bool probe);
/* Validated, and heard from within window. */
bool path_alive(const struct yip_peer *p, int i, uint64_t now, uint64_t window);
/* Whether path i can carry a datagram now (a relay needs a registered server). */
bool path_sendable(const struct yip_peer *p, int i);
/* Whether the current path runs over a reliable link: data goes plainly,
 * without FEC or ARQ (link/link.h). */
bool path_reliable(const struct yip_peer *p);
/* Forgets every path over link (yip_device_link_closed). */
void path_forget_link(struct yip_peer *p, uint32_t link);
/*
 * Writes the relay header for the current path (or path i) at d if it is
 * relayed, and sets *to; returns the header's length (0: direct). The
 * datagram itself goes right after it.
 */
size_t path_prefix(const struct yip_peer *p, uint8_t *d, const union yip_sockaddr **to);
size_t path_prefix_for(const struct yip_peer *p, int i, uint8_t *d, const union yip_sockaddr **to);

/* ---- icmp.c: destination unreachable, built into out (dev->scratch) ----------- */

/* Returns the reply's length, 0 if none is due (rate limit, or not allowed). */
size_t icmp_unreachable(struct yip_device *dev, uint64_t now, const uint8_t *pkt, size_t len,
                        uint8_t *out);

/* ---- frame.c: the engine's only yip_io calls ------------------------------------ */

uint64_t frame_wall(struct yip_device *dev);
/* Sends the len-byte datagram d straight to `to` on link (YIP_LINK_MAIN: the main socket). */
void frame_send_to(struct yip_device *dev, const union yip_sockaddr *to, uint32_t link,
                   const uint8_t *d, size_t len);
/* Sends the len-byte datagram d (not sealed: a Cookie) back the way a
 * datagram came: to its source, or through the server that relayed it to
 * the sender's relay id there. */
void frame_send_back(struct yip_device *dev, const struct yip_from *from, const uint8_t *d,
                     size_t len);
/* Sends the len-byte handshake datagram d to p on path i (wrapped if relayed). */
void frame_send_path(struct yip_peer *p, int i, const uint8_t *d, size_t len);
/* Seals a control message to p (a server or a peer) and sends it on its
 * current path, or on path i >= 0, or straight to `to` (on link) when to
 * is not NULL. */
void frame_send_ctrl(struct yip_peer *p, uint64_t now, const struct wire_ctrl *c, int path,
                     const union yip_sockaddr *to, uint32_t link);
/* The same for a Ctrl plaintext already encoded (msg, len bytes: a GOSSIP). */
void frame_send_ctrl_bytes(struct yip_peer *p, uint64_t now, const uint8_t *msg, size_t len,
                           int path, const union yip_sockaddr *to, uint32_t link);
/*
 * Seals pre || pkt as a datagram of the given type under p's current keys
 * and sends it. Returns the counter used. pre (at most 16 bytes) is copied
 * in front of the packet.
 */
uint64_t frame_send(struct yip_peer *p, uint64_t now, uint8_t type, uint8_t idx, uint16_t block,
                    const uint8_t *pre, size_t prelen, const uint8_t *pkt, size_t len);
/* Where an IP packet's destination (dst) or source address lies, its family
 * and its length from its header; NULL if it is not a well-formed IP packet. */
const uint8_t *frame_inner_addr(const uint8_t *pkt, size_t len, bool dst, int *family,
                                size_t *total);
/* Writes a packet the engine made itself (ICMP) to the device. */
void frame_tun_write(struct yip_device *dev, const uint8_t *pkt, size_t len);

/* An authenticated Data, Repair or Report datagram, decrypted into dev->scratch. */
struct frame_rx {
	struct wire_hdr h;
	struct yip_peer *p;
	struct yip_keypair *kp; /* the keys it was opened with */
	const uint8_t *plain;
	size_t len;
};

/*
 * Finds the session by index, checks age and replay window, authenticates
 * and decrypts; then records what an authenticated datagram proves
 * (replay window, liveness). Which path it came by is the caller's to
 * record (path_confirm). False if dropped (counted).
 */
bool frame_open(struct yip_device *dev, uint64_t now, const uint8_t *d, size_t len,
                struct frame_rx *rx);
/* Checks a decrypted inner packet (allowed source, TAP learning) and writes
 * it to the device. True if delivered; a refusal is counted. */
bool frame_deliver(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len);
/* The device's traffic counters for p's current path's kind (metrics). */
struct yip_traffic *frame_traffic(struct yip_peer *p);

/* ---- protect.c: loss recovery, sending side ------------------------------------- */

int protect_init(struct yip_peer *p);
/* Gives back every buffer (they come again when needed). */
void protect_free(struct yip_peer *p);
/* Sends a packet (len > 0) of class cls, folded into its FEC block. */
void protect_packet(struct yip_peer *p, uint64_t now, enum flow_class cls, const uint8_t *pkt,
                    size_t len);
/* Closes open blocks and sends every repair still owed (before a key change). */
void protect_flush(struct yip_peer *p, uint64_t now);
uint64_t protect_timers(struct yip_peer *p, uint64_t now);
/* The path's base RTT in ns: its least RTT sample of the last 10-20 s (0 = none yet). */
uint64_t protect_base_rtt(const struct yip_peer *p);
/*
 * Whether the path to the peer is queueing: its newest RTT sample, if it
 * is less than a second old, stands well above its base RTT, so loss now
 * is a full queue's (congestion) and not the link's.
 */
bool protect_queueing(const struct yip_peer *p, uint64_t now);
/* The peer misses the packet sent with this counter under the keys kp (those
 * its report came under): send it again if kept, unless the path is
 * queueing. */
void protect_retransmit(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                        uint64_t counter);
/* Bytes the sending side holds now (repair buffers, ARQ history). */
uint64_t protect_memory(const struct yip_peer *p);

/* ---- recover.c: loss recovery, receiving side ------------------------------------ */

/* A source of an FEC block: kept for its block and delivered, after the
 * sources sent before it in its class or once they are given up. */
void recover_source(struct yip_peer *p, uint64_t now, const struct frame_rx *rx);
void recover_repair(struct yip_peer *p, uint64_t now, const struct frame_rx *rx);
uint64_t recover_timers(struct yip_peer *p, uint64_t now);
/* Gives back every buffer (they come again when needed). */
void recover_free(struct yip_peer *p);
/* Every authenticated datagram: gaps in the counters, report scheduling.
 * reliable: it came over a reliable link, where a gap is no loss (those
 * counters went out on other paths) and is not NACKed. */
void recover_observe(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                     uint64_t counter, bool data, bool reliable);
/*
 * A resend (ARQ) that came under the keys kp names the counter its packet
 * was first sent with: true if that packet may be delivered now, which
 * marks it delivered (replay window, missing counters) so that it never is
 * again, whether the original, a rebuild or another resend comes later.
 */
bool recover_arq(struct yip_peer *p, struct yip_keypair *kp, uint64_t counter);
/* Missing counters of the keys the peer's reports go under (p->cur) that are
 * due a NACK now (at most max); *next: when the next one is due. */
unsigned recover_nacks_due(struct yip_peer *p, uint64_t now, uint64_t *out, unsigned max,
                           uint64_t *next);
/* Bytes the receiving side holds now (reassembly buffers, missing counters). */
uint64_t recover_memory(const struct yip_peer *p);

/* ---- report.c: loss reports ----------------------------------------------------- */

uint64_t report_timers(struct yip_peer *p, uint64_t now);
/* A report that came under the keys kp. */
void report_receive(struct yip_peer *p, uint64_t now, const struct yip_keypair *kp,
                    const uint8_t *plain, size_t len);

/* ---- peers.c: the peer table ----------------------------------------------------------- */

/* Room in every table for n peers (the configured ones, before they are
 * added one by one), so that adding them leaves no holes in the heap. */
int peers_reserve(struct yip_device *dev, size_t n);
/*
 * A new peer with static key pub, appended to dev->peers with its
 * key-derived address routed to it; everything it needs is allocated here.
 * configured: from the configuration (max_configured applies), else a
 * member or a root (max_dynamic). NULL with a message in err (already a
 * peer, table full, out of memory).
 */
struct yip_peer *peer_new(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN], bool configured,
                          char *err, size_t errlen);
/* The n prefixes at c become p's (routed to it, besides its key-derived
 * address), in place of the ones it had. 0; or -1 with a message in err if
 * one is another peer's or the route table is full, and p keeps its own. */
int peer_set_allowed(struct yip_peer *p, const struct yip_cidr *c, size_t n, char *err,
                     size_t errlen);
/* p's configured endpoint (endpoint=) becomes addr (NULL: none), as
 * yip_device_set_endpoint says. True if that changed anything. */
bool peer_set_endpoint(struct yip_peer *p, uint64_t now, const union yip_sockaddr *addr);
/* Routes prefix c to p (a configured allowed_ips entry). 0, or -1 with err. */
int peer_route_add(struct yip_peer *p, const struct yip_cidr *c, char *err, size_t errlen);
/* Takes p out of every table, wipes its keys and frees it. Its many-ports
 * probe must be over (punch_free) first. */
void peer_free(struct yip_peer *p);

/* ---- members.c: membership (its state and rules: members.h) --------------------------- */

#include "peer/members.h"

/* ---- handshake.c: Noise IK ------------------------------------------------------- */

/* Why handshakes may go unanswered, for the log and yipctl show. */
const char *handshake_hint(const struct yip_device *dev);
/* Begins a handshake series unless one is already running. */
void handshake_start(struct yip_peer *p, uint64_t now);
void handshake_abandon(struct yip_peer *p);
/* Retransmits and gives up; returns the next deadline. *gave_up: the series
 * ended unanswered (what waited for it must be dropped). */
uint64_t handshake_timers(struct yip_peer *p, uint64_t now, bool *gave_up);
void handshake_rx_init(struct yip_device *dev, uint64_t now, const struct yip_from *from,
                       const uint8_t *d, size_t len);
/* A Cookie message: the responder is under load; the next Init carries mac2. */
void handshake_rx_cookie(struct yip_device *dev, uint64_t now, const uint8_t *d, size_t len);
/* The peer whose handshake a valid Resp completed, or NULL (dropped, counted). */
struct yip_peer *handshake_rx_resp(struct yip_device *dev, uint64_t now,
                                   const struct yip_from *from, const uint8_t *d, size_t len);

/* ---- ping.c: reachability pings (yipctl ping) -------------------------------------- */

/* A PROBE_OK on path i with this nonce: true if it answers a ping (then
 * counted and measured), false if it is a path probe's. */
bool ping_pong(struct yip_peer *p, uint64_t now, int i, uint64_t nonce);

/* ---- punch.c: path probes ------------------------------------------------------------ */

/* A PROBE or PROBE_OK from peer p (anything else is counted as bad). */
void punch_ctrl(struct yip_peer *p, uint64_t now, const struct yip_from *from,
                const struct wire_ctrl *c);
/* New candidates: probe them now, fast. */
void punch_restart(struct yip_peer *p, uint64_t now);
uint64_t punch_timers(struct yip_peer *p, uint64_t now);
/* Ends a many-ports attempt under way (the peer goes away). */
void punch_free(struct yip_peer *p);

/* ---- rendezvous.c: the rendezvous servers -------------------------------------------- */

int rendezvous_init(struct yip_device *dev, const struct yip_config *cfg);
void rendezvous_free(struct yip_device *dev);
/* A control message from server sp. */
void rendezvous_ctrl(struct yip_peer *sp, uint64_t now, const struct yip_from *from,
                     const struct wire_ctrl *c);
/* The session with server sp is up (its handshake completed). */
void rendezvous_established(struct yip_peer *sp, uint64_t now);
/* A TLS link to server s is up and its path (yip_device_server_link). */
void rendezvous_link_opened(struct yip_server *s, uint64_t now);
/* Peer p needs a path: ask the servers for it. */
void rendezvous_lookup(struct yip_peer *p, uint64_t now);
/* The servers' timers. */
uint64_t rendezvous_timers(struct yip_device *dev, uint64_t now);
/* Peer p's lookups. */
uint64_t rendezvous_peer_timers(struct yip_peer *p, uint64_t now);

/* ---- records.c: member records ---------------------------------------------------- */

/* Our record, signed again if our endpoints or certificate changed or it
 * is YIP_RECORD_RESIGN_S old; NULL on a node that is not CA-gated. */
const struct member_record *records_own(struct yip_device *dev, uint64_t now);
/* Is bytes (len) a valid record of the member with this key, at version
 * seq? Parsed into out; the verdict as member_record_check's. */
enum member_verdict records_check(struct yip_device *dev, const uint8_t *bytes, size_t len,
                                  const uint8_t key[YIP_KEY_LEN], uint64_t seq,
                                  struct member_record *out);
/* The peer for the member a (valid) record names, made if need be, with the
 * record's certificate and endpoints; call: start a handshake if no session. */
struct yip_peer *records_connect(struct yip_device *dev, uint64_t now,
                                 const struct member_record *r, bool call);
/* Starts the gossip engine (our record, root set and revocation list as
 * items; the roots as first neighbours). 0, or -1. */
/* The peer for a member whose valid record we hold (made if need be, not
 * called), or NULL: we hold none. */
struct yip_peer *records_peer(struct yip_device *dev, uint64_t now, const uint8_t key[YIP_KEY_LEN]);
int records_gossip_start(struct yip_device *dev, uint64_t now);
/* A gossip message from peer p. */
void records_gossip_rx(struct yip_peer *p, uint64_t now, const uint8_t *msg, size_t len);
/* Tells gossip whether p's session is up, if that changed. */
void records_session(struct yip_peer *p, uint64_t now);
/* Gives gossip our record (when it changed), root set and revocation list
 * (when newer), calls the members it wants, runs its timers; returns its
 * next deadline. */
uint64_t records_gossip_timers(struct yip_device *dev, uint64_t now);
/* The root set or revocation list gossip holds for our network, or NULL. */
const uint8_t *records_gossip_item(struct yip_device *dev, uint8_t kind, size_t *len);
/* Forgets every record that expired (the record, or its certificate). */
void records_gossip_expire(struct yip_device *dev, uint64_t now);
/* Forgets every record of a member the revocation list held revokes. */
void records_gossip_revoked(struct yip_device *dev, uint64_t now);
/* A packet for addr (family AF_INET or AF_INET6) has no route: the member
 * whose record covers it (a certificate prefix, or its key-derived
 * address) becomes a peer and is called. True if one was. */
bool records_lookup(struct yip_device *dev, uint64_t now, int family, const uint8_t *addr);
/* A record from the cache: checked, and held by gossip without announcing it. */
enum member_verdict records_offer(struct yip_device *dev, uint64_t now, const uint8_t *obj,
                                  size_t len);
/* Calls fn for every record gossip holds; returns how many. */
size_t records_each(struct yip_device *dev, void (*fn)(void *arg, const uint8_t *obj, size_t len),
                    void *arg);

/* ---- datapath.c: TUN -> peer, peer -> TUN ------------------------------------------ */

/* Sends one inner packet under the current keys; len 0 is a keepalive. */
void datapath_send(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len);
/* A handshake we initiated completed: send what waited, or a keepalive so
 * the responder learns we switched. */
void datapath_established(struct yip_peer *p, uint64_t now);
void datapath_queue_drop(struct yip_peer *p, enum yip_drop why);
/* A Data, Repair, Report or Ctrl datagram. */
void datapath_rx(struct yip_device *dev, uint64_t now, const struct yip_from *from,
                 const uint8_t *d, size_t len);

/* ---- rules.c: the timer rules ------------------------------------------------------ */

/* yip_device_offer_revocations: adopts the list and, if it is new, removes
 * the members it revokes at once and tells gossip. */
enum member_verdict rules_offer_revocations(struct yip_device *dev, uint64_t now,
                                            const uint8_t *obj, size_t len);

#endif
