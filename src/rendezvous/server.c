/*
 * The rendezvous server: sessions, registrations, introductions and the
 * relay. Every node is found by a keyed hash of its public key, by its
 * session indices, by its relay token and by its relay id (four maps onto
 * one struct rdv_node); nodes are kept in order of their last
 * authenticated datagram (guests of a members-only server in the order
 * they came), so expiry looks only at the oldest. Everything for a node
 * goes to the address it showed is its own (docs/rendezvous.md, "What the
 * server refuses"); forgotten nodes' Init timestamps are remembered while
 * a replay of their Inits could still pass the clock.
 */
#include "rendezvous/rendezvous.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noise/noise.h"
#include "util/bucket.h"
#include "util/clock.h"
#include "util/log.h"

#define NODE_TTL     (60 * YIP_NS_PER_S)  /* forgotten this long after its last datagram */
#define KEYS_REJECT  (360 * YIP_NS_PER_S) /* session keys older than this are refused */
#define ASK_TTL      (3 * YIP_NS_PER_S)   /* an unanswered ASK becomes UNKNOWN */
#define MAX_ASKS     16                   /* open lookups per node */
#define ASKS_HINT    64                   /* the asks' map starts with room for this many */
#define MAX_ALLOWED  4096                 /* nodes one node may relay to */
#define MEMBER_GAP   (1 * YIP_NS_PER_S)   /* one certificate check per node this often */
#define GUEST_TTL    (10 * YIP_NS_PER_S)  /* members only: an unadmitted node lives this long */
#define PROBE_GAP    (1 * YIP_NS_PER_S)   /* one challenge per node this often */
#define CREDIT_MAX   65536                /* bytes an unconfirmed address may have in hand */
#define LOOKUP_RATE  10                   /* LOOKUPs a second per node ... */
#define LOOKUP_BURST 32                   /* ... and at once */

static const char *const drop_names[] = {
#define X(name, str) str,
    RDV_DROP_REASONS(X)
#undef X
};

const char *rdv_drop_name(enum rdv_drop d)
{
	return d < RDV_DROP_COUNT ? drop_names[d] : "?";
}

void rdv_config_default(struct rdv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->relay = true;
	c->relay_rate = 128ULL << 20; /* 128 MiB/s: a relayed TCP flow is not throttled */
	c->relay_burst = 8ULL << 20;
	c->max_nodes = 100000;
	c->init_rate = 20;
	c->init_global = 2000; /* a core does about 3 700 (docs/benchmarks/rendezvous.md) */
	c->init_load = 500;
}

static void drop(struct rdv_server *s, enum rdv_drop d)
{
	s->drops[d]++;
}

/* ---- streams' synthetic addresses ------------------------------------------------- */

void rdv_stream_addr(union yip_sockaddr *a, uint64_t id)
{
	memset(a, 0, sizeof(*a));
	a->in6.sin6_family = AF_INET6;
	a->in6.sin6_port = htons(RDV_STREAM_PORT);
	a->in6.sin6_addr.s6_addr[0] = 0x01;
	for (int i = 0; i < 8; i++)
		a->in6.sin6_addr.s6_addr[15 - i] = (uint8_t)(id >> (8 * i));
}

bool rdv_is_stream_addr(const union yip_sockaddr *a)
{
	static const uint8_t prefix[8] = {0x01};

	return a->sa.sa_family == AF_INET6 &&
	       memcmp(a->in6.sin6_addr.s6_addr, prefix, sizeof(prefix)) == 0;
}

uint64_t rdv_stream_id(const union yip_sockaddr *a)
{
	uint64_t id = 0;

	if (!rdv_is_stream_addr(a))
		return 0;
	for (int i = 8; i < 16; i++)
		id = id << 8 | a->in6.sin6_addr.s6_addr[i];
	return id;
}

bool rdv_is_quic_addr(const union yip_sockaddr *a)
{
	return (rdv_stream_id(a) & RDV_QUIC_ID_BIT) != 0;
}

static uint64_t key_hash(const struct rdv_server *s, const uint8_t key[YIP_KEY_LEN])
{
	uint8_t h[crypto_shorthash_BYTES];
	uint64_t v;

	crypto_shorthash(h, key, YIP_KEY_LEN, s->hash_key);
	memcpy(&v, h, sizeof(v));
	return v != 0 ? v : 1;
}

/* A random non-zero value not yet in map. */
static uint64_t fresh(const struct u64map *m, uint64_t mask)
{
	uint64_t v;

	do
		randombytes_buf(&v, sizeof(v));
	while ((v & mask) == 0 || u64map_get(m, v & mask) != NULL);
	return v & mask;
}

/* The node with this key (h its key_hash), or NULL. */
static struct rdv_node *find_h(const struct rdv_server *s, const uint8_t key[YIP_KEY_LEN],
                               uint64_t h)
{
	struct rdv_node *n = u64map_get(&s->by_key, h);

	return n != NULL && sodium_memcmp(n->key, key, YIP_KEY_LEN) == 0 ? n : NULL;
}

static struct rdv_node *find(const struct rdv_server *s, const uint8_t key[YIP_KEY_LEN])
{
	return find_h(s, key, key_hash(s, key));
}

/* ---- replayed Inits ---------------------------------------------------------------- */

/* The wall clock (ns since the epoch) at monotonic time now (rdv_clock). */
static uint64_t wall_ns(const struct rdv_server *s, uint64_t now)
{
	int64_t t = (int64_t)now + s->wall_offset;

	return t > 0 ? (uint64_t)t : 0;
}

/* Is Init timestamp ts within WIRE_INIT_MAX_AGE_NS of our clock, either way?
 * (Two clocks may differ by that much: docs/rendezvous.md.) */
static bool init_time_ok(const struct rdv_server *s, uint64_t now, const uint8_t *ts)
{
	uint64_t w = wall_ns(s, now);
	uint8_t newest[YIP_TAI64N_LEN];

	if (!s->clock_known)
		return true;
	yip_tai64n(newest, w + WIRE_INIT_MAX_AGE_NS);
	return yip_tai64n_fresh(ts, w, WIRE_INIT_MAX_AGE_NS) &&
	       memcmp(ts, newest, YIP_TAI64N_LEN) <= 0;
}

size_t rdv_seen_max(const struct rdv_server *s)
{
	uint64_t n = (uint64_t)s->cfg.init_global * RDV_SEEN_SPAN_S;

	if (s->cfg.seen_max != 0)
		return s->cfg.seen_max;
	return n < RDV_SEEN_LIMIT ? (size_t)n : RDV_SEEN_LIMIT;
}

static int seen_cmp(const struct rdv_server *s, size_t a, size_t b)
{
	return memcmp(s->seen[a].ts, s->seen[b].ts, YIP_TAI64N_LEN);
}

/* Records where entry i is (the key is in the map already: cannot fail). */
static void seen_place(struct rdv_server *s, size_t i)
{
	u64map_put(&s->by_seen, s->seen[i].key_hash, (void *)(uintptr_t)(i + 1));
}

static void seen_swap(struct rdv_server *s, size_t a, size_t b)
{
	struct rdv_seen t = s->seen[a];

	s->seen[a] = s->seen[b];
	s->seen[b] = t;
	seen_place(s, a);
	seen_place(s, b);
}

static void seen_up(struct rdv_server *s, size_t i)
{
	while (i > 0 && seen_cmp(s, i, (i - 1) / 2) < 0) {
		seen_swap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void seen_down(struct rdv_server *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->n_seen && seen_cmp(s, l, m) < 0)
			m = l;
		if (r < s->n_seen && seen_cmp(s, r, m) < 0)
			m = r;
		if (m == i)
			return;
		seen_swap(s, i, m);
		i = m;
	}
}

static void seen_remove(struct rdv_server *s, size_t i)
{
	u64map_del(&s->by_seen, s->seen[i].key_hash);
	if (i != --s->n_seen) {
		s->seen[i] = s->seen[s->n_seen];
		seen_place(s, i);
		seen_down(s, i);
		seen_up(s, i);
	}
	if (s->n_seen == 0) {
		/* Empty after a flood: give the memory back. */
		free(s->seen);
		s->seen = NULL;
		s->cap_seen = 0;
		u64map_shrink(&s->by_seen, 0);
	}
}

/* Timestamps the memory could not keep: no unknown key's Init may be as old. */
static void seen_lost(struct rdv_server *s, const uint8_t ts[YIP_TAI64N_LEN])
{
	if (memcmp(ts, s->seen_floor, YIP_TAI64N_LEN) > 0)
		memcpy(s->seen_floor, ts, YIP_TAI64N_LEN);
	s->stats.seen_overflows++;
}

/* The place of key_hash's entry + 1, 0 if none. */
static size_t seen_find(const struct rdv_server *s, uint64_t key_hash)
{
	return (size_t)(uintptr_t)u64map_get(&s->by_seen, key_hash);
}

/* A node with this key hash and newest Init timestamp ts is being forgotten. */
static void seen_add(struct rdv_server *s, uint64_t now, uint64_t key_hash,
                     const uint8_t ts[YIP_TAI64N_LEN])
{
	size_t i = seen_find(s, key_hash);

	/* Out of the window, its Inits are refused by the clock alone. */
	if (!s->clock_known || !yip_tai64n_fresh(ts, wall_ns(s, now), WIRE_INIT_MAX_AGE_NS))
		return;
	if (i != 0) {
		if (memcmp(ts, s->seen[i - 1].ts, YIP_TAI64N_LEN) > 0) {
			memcpy(s->seen[i - 1].ts, ts, YIP_TAI64N_LEN);
			seen_down(s, i - 1);
		}
		return;
	}
	if (s->n_seen >= rdv_seen_max(s)) {
		seen_lost(s, s->seen[0].ts);
		seen_remove(s, 0);
	}
	if (s->n_seen == s->cap_seen) {
		size_t cap = s->cap_seen ? 2 * s->cap_seen : 64;
		struct rdv_seen *a = realloc(s->seen, cap * sizeof(*a));

		if (a == NULL) {
			seen_lost(s, ts);
			return;
		}
		s->seen = a;
		s->cap_seen = cap;
	}
	i = s->n_seen;
	s->seen[i].key_hash = key_hash;
	memcpy(s->seen[i].ts, ts, YIP_TAI64N_LEN);
	if (u64map_put(&s->by_seen, key_hash, (void *)(uintptr_t)(i + 1)) != 0) {
		seen_lost(s, ts);
		return;
	}
	s->n_seen++;
	seen_up(s, i);
}

/* Forgets what left the window; when the oldest that remains leaves it. */
static uint64_t seen_expire(struct rdv_server *s, uint64_t now)
{
	uint8_t oldest[YIP_TAI64N_LEN];
	uint64_t w = wall_ns(s, now), secs, ns, at;

	if (!s->clock_known || s->n_seen == 0)
		return UINT64_MAX;
	yip_tai64n(oldest, w > WIRE_INIT_MAX_AGE_NS ? w - WIRE_INIT_MAX_AGE_NS : 0);
	while (s->n_seen > 0 && memcmp(s->seen[0].ts, oldest, YIP_TAI64N_LEN) < 0)
		seen_remove(s, 0);
	if (s->n_seen == 0)
		return UINT64_MAX;
	/* The label is 2^62 + seconds, then nanoseconds, big-endian. */
	secs = 0;
	for (int b = 0; b < 8; b++)
		secs = secs << 8 | s->seen[0].ts[b];
	secs -= 1ULL << 62;
	ns = (uint64_t)s->seen[0].ts[8] << 24 | (uint64_t)s->seen[0].ts[9] << 16 |
	     (uint64_t)s->seen[0].ts[10] << 8 | s->seen[0].ts[11];
	at = secs * YIP_NS_PER_S + ns + WIRE_INIT_MAX_AGE_NS;
	/* In monotonic time, a second later at the soonest (fewer wake-ups). */
	at = at > w ? now + (at - w) : now;
	return at > now + YIP_NS_PER_S ? at : now + YIP_NS_PER_S;
}

/* ---- the order of last activity ------------------------------------------------ */

/*
 * Two lists. Admitted nodes (every node of an open server) in order of
 * their last authenticated datagram, so expiry looks only at the oldest;
 * on a members-only server, the nodes not admitted (guests) apart, in the
 * order they came, each forgotten GUEST_TTL after it came whatever it
 * sends, and the first to go when room is needed.
 */
static void list_unlink(struct rdv_node **head, struct rdv_node **tail, struct rdv_node *n)
{
	if (n->lru_prev)
		n->lru_prev->lru_next = n->lru_next;
	else if (*head == n)
		*head = n->lru_next;
	if (n->lru_next)
		n->lru_next->lru_prev = n->lru_prev;
	else if (*tail == n)
		*tail = n->lru_prev;
	n->lru_prev = n->lru_next = NULL;
}

static void list_append(struct rdv_node **head, struct rdv_node **tail, struct rdv_node *n)
{
	n->lru_prev = *tail;
	n->lru_next = NULL;
	if (*tail)
		(*tail)->lru_next = n;
	else
		*head = n;
	*tail = n;
}

static void lru_unlink(struct rdv_server *s, struct rdv_node *n)
{
	if (n->guest)
		list_unlink(&s->guest_head, &s->guest_tail, n);
	else
		list_unlink(&s->lru_head, &s->lru_tail, n);
}

static void timer_at(struct rdv_server *s, uint64_t t)
{
	if (t < s->next_timer)
		s->next_timer = t;
}

static void touch(struct rdv_server *s, struct rdv_node *n, uint64_t now)
{
	n->last_rx = now;
	if (n->guest || s->lru_tail == n)
		return; /* a guest's time is up when it is up, whatever it sends */
	lru_unlink(s, n);
	list_append(&s->lru_head, &s->lru_tail, n);
	if (s->lru_head == n)
		timer_at(s, now + NODE_TTL);
}

size_t rdv_max_guests(const struct rdv_server *s)
{
	size_t g = (s->cfg.max_nodes + RDV_GUEST_SHARE - 1) / RDV_GUEST_SHARE;

	return g > 0 ? g : 1;
}

static void node_forget(struct rdv_server *s, uint64_t now, struct rdv_node *n);

/* n (admitted so far, or new) becomes a guest: GUEST_TTL from now, the
 * oldest guest forgotten if the guests' share is full. */
static void guest_make(struct rdv_server *s, struct rdv_node *n, uint64_t now)
{
	if (n->guest)
		return;
	while (s->n_guests >= rdv_max_guests(s) && s->guest_head != NULL) {
		s->stats.guests_evicted++;
		node_forget(s, now, s->guest_head);
	}
	lru_unlink(s, n);
	n->guest = true;
	n->guest_until = now + GUEST_TTL;
	list_append(&s->guest_head, &s->guest_tail, n);
	s->n_guests++;
	timer_at(s, n->guest_until);
}

/* A guest admitted: an ordinary node from now on. */
static void guest_admit(struct rdv_server *s, struct rdv_node *n, uint64_t now)
{
	if (!n->guest)
		return;
	lru_unlink(s, n);
	n->guest = false;
	s->n_guests--;
	touch(s, n, now);
}

/* ---- nodes ---------------------------------------------------------------------- */

static void keys_clear(struct rdv_server *s, struct rdv_keys *k)
{
	if (k->valid)
		u64map_del(&s->by_index, k->local);
	sodium_memzero(k, sizeof(*k));
}

static void node_free(struct rdv_server *s, struct rdv_node *n)
{
	keys_clear(s, &n->cur);
	keys_clear(s, &n->prev);
	u64map_del(&s->by_key, n->key_hash);
	u64map_del(&s->by_token, n->token);
	u64map_del(&s->by_relay, n->relay_id);
	lru_unlink(s, n);
	if (n->guest)
		s->n_guests--;
	free(n->move);
	free(n->allowed);
	sodium_memzero(n, sizeof(*n));
	free(n);
	s->n_nodes--;
}

/* Forgets n, but not its newest Init timestamp: a replay of its Inits
 * stays refused (above). */
static void node_forget(struct rdv_server *s, uint64_t now, struct rdv_node *n)
{
	seen_add(s, now, n->key_hash, n->last_tai64n);
	node_free(s, n);
}

/* A node not admitted (yet) to a members-only server comes as a guest. */
static struct rdv_node *node_new(struct rdv_server *s, uint64_t now, const uint8_t *key, bool guest)
{
	struct rdv_node *n = calloc(1, sizeof(*n));

	if (n == NULL)
		return NULL;
	memcpy(n->key, key, YIP_KEY_LEN);
	n->key_hash = key_hash(s, key);
	n->token = fresh(&s->by_token, UINT64_MAX);
	n->relay_id = (uint32_t)fresh(&s->by_relay, UINT32_MAX);
	n->since = now;
	n->bucket = s->cfg.relay_burst;
	n->bucket_at = now;
	if (u64map_put(&s->by_key, n->key_hash, n) != 0 ||
	    u64map_put(&s->by_token, n->token, n) != 0 ||
	    u64map_put(&s->by_relay, n->relay_id, n) != 0) {
		u64map_del(&s->by_key, n->key_hash);
		u64map_del(&s->by_token, n->token);
		free(n);
		return NULL;
	}
	s->n_nodes++;
	if (guest)
		guest_make(s, n, now);
	else
		touch(s, n, now);
	return n;
}

static bool allowed_has(const struct rdv_node *n, uint32_t id)
{
	for (unsigned i = 0; i < n->n_allowed; i++)
		if (n->allowed[i] == id)
			return true;
	return false;
}

/* Lets n relay to the node with relay id `id` (the oldest entry goes when full). */
static void allowed_add(struct rdv_node *n, uint32_t id)
{
	if (allowed_has(n, id))
		return;
	if (n->n_allowed == n->cap_allowed && n->cap_allowed < MAX_ALLOWED) {
		unsigned cap = n->cap_allowed ? n->cap_allowed * 2 : 8;
		uint32_t *a = realloc(n->allowed, cap * sizeof(*a));

		if (a != NULL) {
			n->allowed = a;
			n->cap_allowed = cap;
		}
	}
	if (n->n_allowed == n->cap_allowed) {
		if (n->n_allowed == 0)
			return;
		memmove(n->allowed, n->allowed + 1, (n->n_allowed - 1) * sizeof(*n->allowed));
		n->n_allowed--;
	}
	n->allowed[n->n_allowed++] = id;
}

/* ---- sending --------------------------------------------------------------------- */

/* Where the next datagram is built. */
static uint8_t *tx_buf(struct rdv_server *s)
{
	return s->txbuf = s->io.buf(s->io.ctx);
}

/*
 * Sends the len-byte datagram built in tx_buf(), obfuscated with obf_psk
 * (a Relay's payload is the sender's, wrapped already), if it is at most
 * cap bytes on the wire (an envelope's random length is drawn within cap).
 * Returns the bytes sent, 0 if none.
 */
static size_t tx_send(struct rdv_server *s, unsigned sock, const union yip_sockaddr *to, size_t len,
                      size_t cap)
{
	if (cap > RDV_MAX_DGRAM)
		cap = RDV_MAX_DGRAM;
	if (s->cfg.obf)
		len = obf_wrap(&s->obf_keys, s->txbuf, len, cap, false);
	else if (len > cap)
		len = 0;
	if (len > 0)
		s->io.send(s->io.ctx, sock, to, len);
	return len;
}

/* Seals c under n's keys and sends it to `to` (reached on sock) if that is
 * at most cap bytes on the wire; the bytes sent, 0 if none. Everything
 * leaves the main socket or a stream: the second port only listens. */
static size_t send_ctrl(struct rdv_server *s, struct rdv_node *n, unsigned sock,
                        const union yip_sockaddr *to, const struct wire_ctrl *c, size_t cap)
{
	struct rdv_keys *k = &n->cur;
	uint8_t msg[WIRE_CTRL_MAX], *d;
	size_t len = wire_ctrl_put(msg, c), wire = WIRE_DATA_MIN + len;
	struct yip_cipher_key key;
	struct wire_hdr h;

	if (s->cfg.obf)
		wire += obf_frame_pad(wire) + OBF_TRAILER;
	if (len == 0 || !k->valid || wire > cap)
		return 0;
	h = (struct wire_hdr){WIRE_CTRL, 0, 0, k->remote, k->send_counter++};
	d = tx_buf(s);
	wire_hdr_put(d, &h);
	yip_cipher_key_set(&key, (enum yip_cipher)k->cipher, k->send);
	yip_cipher_seal(d + WIRE_DATA_HDR, &key, h.counter, d, WIRE_DATA_HDR, msg, len);
	sodium_memzero(&key, sizeof(key));
	return tx_send(s, sock, to, WIRE_DATA_MIN + len, cap);
}

/* Answers, questions and introductions go to n's confirmed address only. */
static void reply(struct rdv_server *s, struct rdv_node *n, const struct wire_ctrl *c)
{
	if (n->confirmed)
		send_ctrl(s, n, n->sock, &n->addr, c, RDV_MAX_DGRAM);
}

/* What a node is told about a peer: its reflexive address first, then its
 * own; never a stream's synthetic address (it reaches nothing). */
static void intro(struct rdv_server *s, struct rdv_node *to, uint32_t id,
                  const struct rdv_node *about)
{
	struct wire_ctrl c = {
	    .kind = WIRE_CTRL_INTRO, .id = id, .relay_id = about->relay_id, .nat = about->nat};

	memcpy(c.key, about->key, YIP_KEY_LEN);
	if (!rdv_is_stream_addr(&about->addr))
		c.cands[c.n_cands++] = about->addr;
	for (unsigned i = 0; i < about->n_cands && c.n_cands < WIRE_MAX_CANDS; i++)
		if (!yip_sockaddr_eq(&about->cands[i], &about->addr) &&
		    !rdv_is_stream_addr(&about->cands[i]))
			c.cands[c.n_cands++] = about->cands[i];
	reply(s, to, &c);
	to->stats.intros++;
}

static void unknown(struct rdv_server *s, struct rdv_node *to, uint32_t id, const uint8_t *key)
{
	struct wire_ctrl c = {.kind = WIRE_CTRL_UNKNOWN, .id = id};

	memcpy(c.key, key, YIP_KEY_LEN);
	reply(s, to, &c);
	to->stats.unknowns++;
	s->stats.unknowns++;
}

/* The node's registration, as it stands, told to it. */
static void registered(struct rdv_server *s, struct rdv_node *n)
{
	struct wire_ctrl r = {.kind = WIRE_CTRL_REGISTERED};

	r.flags = s->cfg.relay ? WIRE_CTRL_RELAY : 0;
	r.token = n->token;
	r.relay_id = n->relay_id;
	r.alt_port = s->cfg.alt_port;
	r.addr = n->addr;
	reply(s, n, &r);
}

/* ---- handshakes ------------------------------------------------------------------- */

/* A token bucket per source: true (and one token less) if one is left
 * after refilling. The source is what one sender controls: an IPv4
 * address (also IPv4-mapped, as a dual-stack socket shows it) or an IPv6
 * /64, so that one host's 2^64 addresses share one budget. A stream is a
 * source of its own (the front bounds the streams of one address). */
static bool init_allowed(struct rdv_server *s, uint64_t now, const union yip_sockaddr *src)
{
	uint8_t source[16], h[crypto_shorthash_BYTES];
	size_t n;
	uint64_t v;
	size_t i;

	_Static_assert(YIP_SOURCE_LEN <= sizeof(source), "a source fits");
	if (rdv_is_stream_addr(src)) {
		memcpy(source, src->in6.sin6_addr.s6_addr, sizeof(source));
		n = sizeof(source);
	} else {
		n = yip_sockaddr_source(src, source);
	}

	crypto_shorthash(h, source, n, s->hash_key);
	memcpy(&v, h, sizeof(v));
	i = v % RDV_INIT_BUCKETS;
	return yip_bucket_take(&s->init_bucket[i], now, s->cfg.init_rate,
	                       2ULL * s->cfg.init_rate) &&
	       yip_bucket_take(&s->init_global, now, s->cfg.init_global, s->cfg.init_global);
}

/* ChaCha20-Poly1305 when offered: the server keeps raw keys and expands
 * none, so the cheaper key setup wins; AES-256-GCM for a node that offers
 * nothing else. */
static int cipher_choose(unsigned offered)
{
	if (offered & YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305))
		return YIP_CIPHER_CHACHA20_POLY1305;
	if ((offered & YIP_CIPHER_BIT(YIP_CIPHER_AES256_GCM)) &&
	    yip_cipher_available(YIP_CIPHER_AES256_GCM))
		return YIP_CIPHER_AES256_GCM;
	return -1;
}

/* An Init from src (reached on sock); its node if it was accepted (a Resp
 * sent), else NULL. */
static struct rdv_node *rx_init(struct rdv_server *s, uint64_t now, unsigned sock,
                                const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	uint8_t rs[YIP_KEY_LEN], payload[WIRE_INIT_PAYLOAD], chosen[WIRE_RESP_PAYLOAD];
	struct wire_init_payload pl;
	struct wire_init m;
	struct noise_hs hs;
	struct cookie_source csrc;
	struct rdv_node *n;
	struct rdv_keys k = {0};
	uint8_t *out;
	uint64_t h;
	size_t seen;
	int cipher;
	struct rdv_node *accepted = NULL;

	/* A node sends a server no certificate: an Init is exactly WIRE_INIT_LEN. */
	if (len != WIRE_INIT_LEN || !wire_init_get(&m, d, len)) {
		drop(s, RDV_DROP_MALFORMED);
		return NULL;
	}
	if (!wire_init_mac1_ok(d, s->mac1_key)) {
		drop(s, RDV_DROP_BAD_MAC1);
		return NULL;
	}
	/* Before any Diffie-Hellman: under load, only an Init that proves its
	 * address with a cookie (docs/protocol.md, "Cookies"); then the budgets. */
	/* With obf_psk no cookie is ever sent: it would answer a replayed Init
	 * (docs/obfuscation.md); the budgets below still bound the work. A
	 * stream needs none: its TCP handshake proved its address. */
	cookie_source_addr(&csrc, src);
	if (!s->cfg.obf && cookie_under_load(&s->cookies, now, s->cfg.init_load) &&
	    sock != RDV_SOCK_STREAM && !cookie_check(&s->cookies, now, &csrc, d, len)) {
		cookie_reply(&s->cookies, now, &csrc, d, len, tx_buf(s));
		tx_send(s, sock, src, WIRE_COOKIE_MSG, s->rx_len); /* smaller than the Init */
		drop(s, RDV_DROP_UNDER_LOAD);
		return NULL;
	}
	if (!init_allowed(s, now, src)) {
		drop(s, RDV_DROP_RATE_LIMITED);
		return NULL;
	}
	noise_hs_init(&hs, false, (const uint8_t *)WIRE_PROLOGUE, WIRE_PROLOGUE_LEN,
	              s->cfg.private_key, s->public_key, NULL);
	if (noise_read_msg1_static(&hs, m.msg1, WIRE_MSG1_LEN, rs) != 0 ||
	    noise_read_msg1_payload(&hs, m.msg1, WIRE_MSG1_LEN, payload, sizeof(payload)) !=
	        sizeof(payload) ||
	    !wire_init_payload_get(&pl, payload, sizeof(payload))) {
		drop(s, RDV_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	/* A replayed Init gets no answer, however late (docs/rendezvous.md):
	 * out of the window of our clock, not newer than the node's last, or
	 * than the last of a node we forgot, or than the floor. */
	if (!init_time_ok(s, now, pl.tai64n)) {
		drop(s, RDV_DROP_OLD_INIT);
		goto out;
	}
	h = key_hash(s, rs);
	n = find_h(s, rs, h);
	seen = n == NULL ? seen_find(s, h) : 0;
	if ((n != NULL && memcmp(pl.tai64n, n->last_tai64n, YIP_TAI64N_LEN) <= 0) ||
	    (seen != 0 && memcmp(pl.tai64n, s->seen[seen - 1].ts, YIP_TAI64N_LEN) <= 0)) {
		drop(s, RDV_DROP_STALE_INIT);
		goto out;
	}
	if (n == NULL && seen == 0 && memcmp(pl.tai64n, s->seen_floor, YIP_TAI64N_LEN) <= 0) {
		drop(s, RDV_DROP_INIT_FLOOR);
		goto out;
	}
	cipher = cipher_choose(pl.ciphers);
	if (cipher < 0) {
		drop(s, RDV_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	if (n == NULL) {
		/* Members only: a new node is a guest until its certificate is
		 * admitted. Guests hold at most their share of the table, and
		 * the oldest makes room for a newcomer when the table or the
		 * share is full: a member always finds a place that only
		 * members hold. */
		if (s->members_only && s->guest_head != NULL &&
		    (s->n_nodes >= s->cfg.max_nodes || s->n_guests >= rdv_max_guests(s))) {
			s->stats.guests_evicted++;
			node_forget(s, now, s->guest_head);
		}
		if (s->n_nodes >= s->cfg.max_nodes ||
		    (n = node_new(s, now, rs, s->members_only)) == NULL) {
			drop(s, RDV_DROP_FULL);
			goto out;
		}
		/* Known again: its timestamp lives in the node (set below). */
		if ((seen = seen_find(s, h)) != 0)
			seen_remove(s, seen - 1);
	}
	k.valid = true;
	k.cipher = (uint8_t)cipher;
	k.local = (uint32_t)fresh(&s->by_index, UINT32_MAX);
	k.remote = m.sender;
	k.created = now;
	out = tx_buf(s);
	wire_resp_payload_put(chosen, (uint8_t)cipher);
	if (u64map_put(&s->by_index, k.local, n) != 0 ||
	    noise_write_msg2(&hs, chosen, sizeof(chosen), wire_resp_put(out, k.local, k.remote),
	                     WIRE_MSG2_LEN) != WIRE_MSG2_LEN) {
		u64map_del(&s->by_index, k.local);
		drop(s, RDV_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	{
		uint8_t mac1[YIP_KEY_LEN];

		wire_mac1_key(mac1, rs); /* a Resp carries the mac1 of its receiver */
		wire_mac1_put(out, WIRE_RESP_LEN, mac1);
	}
	noise_split(&hs, k.send, k.recv, NULL);
	/* The node switches to these keys at once; the ones before stay for
	 * datagrams already on their way. */
	keys_clear(s, &n->prev);
	n->prev = n->cur;
	n->cur = k;
	memcpy(n->last_tai64n, pl.tai64n, YIP_TAI64N_LEN);
	/* The node completes only its newest Init: whatever it did before,
	 * these are the keys whose use proves src. */
	n->init_addr = *src;
	n->init_sock = (uint8_t)sock;
	n->init_index = k.local;
	if (!n->confirmed) {
		n->addr = *src; /* shown, not used, until the keys are */
		n->sock = (uint8_t)sock;
	}
	touch(s, n, now);
	s->stats.handshakes++;
	/* To the Init's source, not yet shown to be the node's: no longer than
	 * the Init (with obf_psk, the envelope's length is drawn up to it). */
	tx_send(s, sock, src, WIRE_RESP_LEN, s->rx_len);
	accepted = n;
out:
	noise_hs_wipe(&hs);
	sodium_memzero(&k, sizeof(k));
	sodium_memzero(payload, sizeof(payload));
	sodium_memzero(&pl, sizeof(pl));
	return accepted;
}

/* ---- control messages ------------------------------------------------------------- */

static bool window_ok(const struct rdv_keys *k, uint64_t c)
{
	if (c >= k->win_top)
		return true;
	return k->win_top - c <= 64 && !(k->win_bits & 1ULL << (k->win_top - c - 1));
}

static void window_mark(struct rdv_keys *k, uint64_t c)
{
	if (c >= k->win_top) {
		uint64_t shift = c + 1 - k->win_top;

		k->win_bits = shift >= 64 ? 0 : k->win_bits << shift;
		k->win_top = c + 1;
	}
	k->win_bits |= 1ULL << (k->win_top - c - 1);
}

/* Authenticates a Ctrl into s->scratch; the node (and in *kp the keys
 * that opened it), or NULL if dropped. */
static struct rdv_node *open_ctrl(struct rdv_server *s, uint64_t now, const uint8_t *d, size_t len,
                                  size_t *plen, struct rdv_keys **kp)
{
	struct yip_cipher_key key;
	struct rdv_keys *k = NULL;
	struct rdv_node *n;
	struct wire_hdr h;
	int rc;

	if (!wire_hdr_get(&h, d, len)) {
		drop(s, RDV_DROP_MALFORMED);
		return NULL;
	}
	n = u64map_get(&s->by_index, h.receiver);
	if (n != NULL)
		k = n->cur.valid && n->cur.local == h.receiver ? &n->cur : &n->prev;
	if (k == NULL || !k->valid || k->local != h.receiver) {
		drop(s, RDV_DROP_UNKNOWN_INDEX);
		return NULL;
	}
	if (now - k->created >= KEYS_REJECT) {
		drop(s, RDV_DROP_EXPIRED);
		return NULL;
	}
	if (!window_ok(k, h.counter)) {
		drop(s, RDV_DROP_REPLAY);
		return NULL;
	}
	*plen = wire_plain_len(len);
	if (*plen > WIRE_CTRL_MAX) {
		drop(s, RDV_DROP_BAD_CTRL);
		return NULL;
	}
	yip_cipher_key_set(&key, (enum yip_cipher)k->cipher, k->recv);
	rc = yip_cipher_open(s->scratch, &key, h.counter, d, WIRE_DATA_HDR, d + WIRE_DATA_HDR,
	                     len - WIRE_DATA_HDR);
	sodium_memzero(&key, sizeof(key));
	if (rc != 0) {
		drop(s, RDV_DROP_DECRYPT);
		return NULL;
	}
	window_mark(k, h.counter);
	touch(s, n, now);
	*kp = k;
	return n;
}

/* ---- addresses ------------------------------------------------------------------------- */

/* a, reached on sock, is n's: everything for n goes there from now on. */
static void confirm(struct rdv_node *n, unsigned sock, const union yip_sockaddr *a)
{
	n->addr = *a;
	n->sock = (uint8_t)sock;
	n->confirmed = true;
	if (n->move != NULL && n->move->sock == sock && yip_sockaddr_eq(&n->move->to, a)) {
		free(n->move);
		n->move = NULL;
	}
}

/*
 * n's authenticated datagram came from src, not from its confirmed address:
 * the node moved (its NAT gave it another port), or somebody with its own
 * keys sent it from someone else's address. Nothing goes to src but a
 * challenge, no more bytes of it than came from src, so that the server
 * can neither be turned against src nor made to amplify anything.
 */
static void moving(struct rdv_server *s, uint64_t now, struct rdv_node *n, unsigned sock,
                   const union yip_sockaddr *src)
{
	struct wire_ctrl p = {.kind = WIRE_CTRL_PROBE};
	struct rdv_move *m = n->move;
	size_t sent;

	if (m == NULL && (m = n->move = calloc(1, sizeof(*m))) == NULL)
		return; /* no memory: the node stays where it was */
	if (m->sock != sock || !yip_sockaddr_eq(&m->to, src)) {
		m->to = *src;
		m->sock = (uint8_t)sock;
		m->credit = 0;
		m->challenge = 0;
	}
	m->credit =
	    m->credit + s->rx_len > CREDIT_MAX ? CREDIT_MAX : m->credit + (uint32_t)s->rx_len;
	if (m->challenged_at != 0 && now - m->challenged_at < PROBE_GAP)
		return;
	do
		randombytes_buf(&p.nonce, sizeof(p.nonce));
	while (p.nonce == 0);
	sent = send_ctrl(s, n, sock, src, &p, m->credit);
	if (sent == 0) {
		s->stats.unpaid++; /* a later datagram from there pays for it */
		return;
	}
	m->credit -= (uint32_t)sent;
	m->challenge = p.nonce;
	m->challenged_at = now;
	s->stats.challenges++;
}

/* Is c, from src on sock, the echo of n's challenge? */
static bool challenge_met(const struct rdv_node *n, unsigned sock, const union yip_sockaddr *src,
                          const struct wire_ctrl *c)
{
	const struct rdv_move *m = n->move;

	return c->kind == WIRE_CTRL_PROBE_OK && m != NULL && m->challenge != 0 && m->sock == sock &&
	       yip_sockaddr_eq(src, &m->to) &&
	       sodium_memcmp(&c->nonce, &m->challenge, sizeof(c->nonce)) == 0;
}

/* ---- members-only servers ------------------------------------------------------------- */

static uint64_t unix_now(const struct rdv_server *s, uint64_t now)
{
	int64_t t = (int64_t)(now / YIP_NS_PER_S) + s->unix_offset;

	return t > 0 ? (uint64_t)t : 0;
}

/* May n register, look up, answer and relay? */
static bool admitted(const struct rdv_server *s, const struct rdv_node *n, uint64_t now)
{
	return !s->members_only || (n->member && unix_now(s, now) <= n->member_until);
}

static void refuse(struct rdv_server *s, struct rdv_node *n, uint8_t reason)
{
	struct wire_ctrl r = {.kind = WIRE_CTRL_REFUSED, .reason = reason};

	reply(s, n, &r);
}

static void on_member(struct rdv_server *s, uint64_t now, struct rdv_node *n,
                      const struct wire_ctrl *c)
{
	struct member_cert cert;
	enum member_verdict v;

	if (!s->members_only)
		return; /* an open server needs no certificate: nothing to do, nothing wrong */
	if (n->member_at != 0 && now - n->member_at < MEMBER_GAP) {
		drop(s, RDV_DROP_MEMBER_RATE);
		return;
	}
	n->member_at = now;
	v = member_cert_parse(&cert, c->cert, c->cert_len);
	if (v == MEMBER_OK)
		v = member_cert_admit(&cert, s->members.ca_public, s->members.network,
		                      s->members.revs, n->key, unix_now(s, now));
	if (v != MEMBER_OK) {
		n->member = false;
		n->refused = (uint8_t)v;
		s->stats.refused[v]++;
		refuse(s, n, (uint8_t)v);
		guest_make(s, n, now); /* a member that lost it has GUEST_TTL left */
		return;
	}
	n->member = true;
	n->member_until = cert.f.not_after + MEMBER_SKEW_S;
	member_cert_hash(&cert, n->cert_hash);
	s->stats.admitted++;
	guest_admit(s, n, now);
}

static bool still_admitted(const struct rdv_server *s, const struct rdv_node *n)
{
	const struct member_revocations *r = s->members.revs;

	return r == NULL || (!member_revocations_has(r, WIRE_REVOKED_KEY, n->key) &&
	                     !member_revocations_has(r, WIRE_REVOKED_CERT, n->cert_hash));
}

void rdv_set_members(struct rdv_server *s, uint64_t now, const struct rdv_members *m)
{
	bool same = s->members_only && m != NULL &&
	            memcmp(s->members.ca_public, m->ca_public, MEMBER_SIGN_PUBLIC) == 0 &&
	            strcmp(s->members.network, m->network) == 0;
	struct rdv_node *n, *next;

	s->members_only = m != NULL;
	if (m != NULL)
		memcpy(&s->members, m, sizeof(*m));
	else
		memset(&s->members, 0, sizeof(s->members));
	if (!s->members_only) {
		/* Open: every node is admitted. */
		while (s->guest_head != NULL)
			guest_admit(s, s->guest_head, now);
		return;
	}
	/* Another CA or network: nobody admitted before is known to be now.
	 * The same one with a new revocation list: forget whom it lists.
	 * Nodes of an open server that sent no certificate become guests. */
	for (n = s->lru_head; n != NULL; n = next) {
		next = n->lru_next;
		if (n->member && (!same || !still_admitted(s, n))) {
			s->stats.evicted++;
			node_forget(s, now, n);
		} else if (!n->member) {
			guest_make(s, n, now);
		}
	}
}

void rdv_clock(struct rdv_server *s, uint64_t now, uint64_t unix_s)
{
	s->unix_offset = (int64_t)unix_s - (int64_t)(now / YIP_NS_PER_S);
	s->wall_offset = (int64_t)(unix_s * YIP_NS_PER_S) - (int64_t)now;
	s->clock_known = true;
}

/* ---- lookups ---------------------------------------------------------------------------- */

static void on_lookup(struct rdv_server *s, uint64_t now, struct rdv_node *a,
                      const struct wire_ctrl *c)
{
	struct rdv_node *b = find(s, c->key);
	struct wire_ctrl ask = {.kind = WIRE_CTRL_ASK};
	struct rdv_ask *q;

	a->stats.lookups++;
	s->stats.lookups++;
	if (b == NULL || b == a || !b->registered || !admitted(s, b, now)) {
		unknown(s, a, c->id, c->key);
		return;
	}
	if (a->open_asks >= MAX_ASKS || (q = calloc(1, sizeof(*q))) == NULL) {
		drop(s, RDV_DROP_ASKS);
		return;
	}
	do
		ask.id = ++s->next_ask;
	while (ask.id == 0 || u64map_get(&s->asks, ask.id) != NULL);
	q->asker = a->key_hash;
	q->target = b->key_hash;
	memcpy(q->target_key, b->key, YIP_KEY_LEN);
	q->asker_id = c->id;
	q->deadline = now + ASK_TTL;
	if (u64map_put(&s->asks, ask.id, q) != 0) {
		free(q);
		drop(s, RDV_DROP_ASKS);
		return;
	}
	q->id = ask.id;
	q->prev = s->ask_tail;
	if (s->ask_tail != NULL)
		s->ask_tail->next = q;
	else
		s->ask_head = q;
	s->ask_tail = q;
	a->open_asks++;
	if (q->deadline < s->next_timer)
		s->next_timer = q->deadline;
	memcpy(ask.key, a->key, YIP_KEY_LEN);
	reply(s, b, &ask);
}

static void ask_done(struct rdv_server *s, struct rdv_ask *q, struct rdv_node *a)
{
	u64map_del(&s->asks, q->id);
	if (q->prev != NULL)
		q->prev->next = q->next;
	else
		s->ask_head = q->next;
	if (q->next != NULL)
		q->next->prev = q->prev;
	else
		s->ask_tail = q->prev;
	if (a != NULL && a->open_asks > 0)
		a->open_asks--;
	free(q);
	/* After a flood, give the table back (a quarter full at most after). */
	if (s->asks.count * 16 < s->asks.mask + 1 && s->asks.mask + 1 > 2 * ASKS_HINT)
		u64map_shrink(&s->asks, ASKS_HINT);
}

static void on_answer(struct rdv_server *s, struct rdv_node *b, const struct wire_ctrl *c)
{
	struct rdv_ask *q = u64map_get(&s->asks, c->id);
	struct rdv_node *a;

	if (q == NULL || q->target != b->key_hash) {
		drop(s, RDV_DROP_BAD_CTRL);
		return;
	}
	a = u64map_get(&s->by_key, q->asker);
	if (a == NULL || sodium_memcmp(a->key, c->key, YIP_KEY_LEN) != 0) {
		drop(s, RDV_DROP_BAD_CTRL);
		ask_done(s, q, a);
		return;
	}
	if (c->flags & WIRE_CTRL_ACCEPT) {
		/* Both said yes (a by asking): introduce them to each other at
		 * once, and let them relay to each other. */
		allowed_add(a, b->relay_id);
		allowed_add(b, a->relay_id);
		intro(s, a, q->asker_id, b);
		intro(s, b, 0, a);
		s->stats.intros++;
	} else {
		unknown(s, a, q->asker_id, b->key);
	}
	ask_done(s, q, a);
}

/* A Ctrl; the node whose keys it opened under, or NULL. */
static struct rdv_node *on_ctrl(struct rdv_server *s, uint64_t now, unsigned sock,
                                const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	struct wire_ctrl c, r = {0};
	struct rdv_keys *k;
	struct rdv_node *n;
	size_t plen;

	n = open_ctrl(s, now, d, len, &plen, &k);
	if (n == NULL)
		return NULL;
	if (n->init_index != 0 && k->local == n->init_index) {
		/* The first datagram under the keys its newest Init made: the
		 * Init's source got our Resp, so it is the node's. */
		n->init_index = 0;
		confirm(n, n->init_sock, &n->init_addr);
	}
	if (!wire_ctrl_get(&c, s->scratch, plen) ||
	    (sock == RDV_SOCK_ALT && c.kind != WIRE_CTRL_WHOAMI)) {
		drop(s, RDV_DROP_BAD_CTRL);
		return n;
	}
	/* From elsewhere than the node's address: the answer to our challenge,
	 * and the node has moved there; or reason to send one. (The second
	 * port sees another address of the node wherever its NAT maps per
	 * destination: that is what it is for.) */
	if (sock != RDV_SOCK_ALT && (sock != n->sock || !yip_sockaddr_eq(src, &n->addr))) {
		if (challenge_met(n, sock, src, &c)) {
			confirm(n, sock, src);
			s->stats.moves++;
			if (n->registered)
				registered(s, n); /* its REGISTERs went unanswered meanwhile */
			return n;
		}
		moving(s, now, n, sock, src);
	}
	if ((c.kind == WIRE_CTRL_REGISTER || c.kind == WIRE_CTRL_LOOKUP ||
	     c.kind == WIRE_CTRL_ANSWER) &&
	    !admitted(s, n, now)) {
		drop(s, RDV_DROP_NOT_MEMBER);
		/* A member whose certificate ran out is told so. */
		refuse(s, n, n->member ? (uint8_t)MEMBER_EXPIRED : n->refused);
		return n;
	}
	switch (c.kind) {
	case WIRE_CTRL_MEMBER:
		on_member(s, now, n, &c);
		break;
	case WIRE_CTRL_REGISTER:
		if (!n->registered)
			s->stats.registrations++;
		n->registered = true;
		n->flags = c.flags;
		n->nat = c.nat;
		n->n_cands = c.n_cands;
		memcpy(n->cands, c.cands, sizeof(n->cands));
		registered(s, n);
		break;
	case WIRE_CTRL_WHOAMI:
		/* What this port saw, told at the node's address (from the main
		 * port, which the node's NAT lets in). */
		r.kind = WIRE_CTRL_YOUARE;
		r.id = c.id;
		r.addr = *src;
		reply(s, n, &r);
		break;
	case WIRE_CTRL_LOOKUP:
		if (!n->registered) {
			drop(s, RDV_DROP_BAD_CTRL);
			return n;
		}
		if (!yip_bucket_take(&n->lookups, now, LOOKUP_RATE, LOOKUP_BURST)) {
			drop(s, RDV_DROP_LOOKUP_RATE);
			return n;
		}
		on_lookup(s, now, n, &c);
		break;
	case WIRE_CTRL_ANSWER:
		on_answer(s, n, &c);
		break;
	case WIRE_CTRL_PROBE_OK:
		drop(s, RDV_DROP_CHALLENGE); /* another nonce, or not from where we asked */
		break;
	default:
		drop(s, RDV_DROP_BAD_CTRL); /* a kind nodes send to each other, or we send */
	}
	return n;
}

/* ---- the relay ---------------------------------------------------------------------- */

/* A Relay; its sender if it came from the sender's confirmed address, else NULL. */
static struct rdv_node *on_relay(struct rdv_server *s, uint64_t now, unsigned sock,
                                 const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	struct rdv_node *a, *b;
	struct wire_relay m;
	uint8_t *out;

	if (sock == RDV_SOCK_ALT || !wire_relay_get(&m, d, len) || m.dir != WIRE_RELAY_TO_SERVER) {
		drop(s, RDV_DROP_MALFORMED);
		return NULL;
	}
	if (!s->cfg.relay) {
		drop(s, RDV_DROP_RELAY_OFF);
		return NULL;
	}
	a = u64map_get(&s->by_token, m.token);
	if (a == NULL) {
		drop(s, RDV_DROP_RELAY_TOKEN);
		return NULL;
	}
	if (!a->confirmed || a->sock != sock || !yip_sockaddr_eq(src, &a->addr)) {
		drop(s, RDV_DROP_RELAY_SOURCE);
		a->stats.relay_refused++;
		return NULL;
	}
	b = u64map_get(&s->by_relay, m.relay_id);
	if (b == NULL || !b->confirmed || !allowed_has(a, b->relay_id) ||
	    !allowed_has(b, a->relay_id)) {
		drop(s, RDV_DROP_RELAY_NOT_ALLOWED);
		a->stats.relay_refused++;
		return a;
	}
	if (!admitted(s, a, now) || !admitted(s, b, now)) {
		drop(s, RDV_DROP_NOT_MEMBER); /* a certificate ran out since the introduction */
		a->stats.relay_refused++;
		return a;
	}
	if (a->bucket < len) {
		uint64_t add = (now - a->bucket_at) * s->cfg.relay_rate / YIP_NS_PER_S;

		a->bucket =
		    a->bucket + add > s->cfg.relay_burst ? s->cfg.relay_burst : a->bucket + add;
		a->bucket_at = now;
		if (a->bucket < len) {
			drop(s, RDV_DROP_RELAY_RATE);
			a->stats.relay_refused++;
			return a;
		}
	}
	a->bucket -= len;
	out = tx_buf(s);
	wire_relay_put(out, WIRE_RELAY_FROM_SERVER, b->token, a->relay_id);
	memcpy(out + WIRE_RELAY_HDR, m.payload, m.len);
	tx_send(s, b->sock, &b->addr, len, RDV_MAX_DGRAM);
	a->stats.relay_in_dgrams++;
	a->stats.relay_in_bytes += m.len;
	b->stats.relay_out_dgrams++;
	b->stats.relay_out_bytes += m.len;
	s->stats.relayed_dgrams++;
	s->stats.relayed_bytes += m.len;
	return a;
}

/* ---- the engine ----------------------------------------------------------------------- */

int rdv_init(struct rdv_server *s, const struct rdv_config *cfg, const struct rdv_io *io, char *err,
             size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->io = *io;
	s->cfg = *cfg;
	if (yip_key_public(s->public_key, cfg->private_key) != 0) {
		snprintf(err, errlen, "the all-zero key is not a valid private key");
		return -1;
	}
	wire_mac1_key(s->mac1_key, s->public_key);
	cookie_checker_init(&s->cookies, s->public_key);
	randombytes_buf(s->hash_key, sizeof(s->hash_key));
	s->next_timer = UINT64_MAX;
	if (cfg->obf) {
		obf_keys_init(&s->obf_keys, cfg->obf_psk);
		s->obfbuf = malloc(RDV_MAX_DGRAM);
		if (s->obfbuf == NULL) {
			snprintf(err, errlen, "out of memory");
			rdv_free(s);
			return -1;
		}
	}
	if (u64map_init(&s->by_key, 1024) != 0 || u64map_init(&s->by_index, 2048) != 0 ||
	    u64map_init(&s->by_token, 1024) != 0 || u64map_init(&s->by_relay, 1024) != 0 ||
	    u64map_init(&s->asks, ASKS_HINT) != 0 || u64map_init(&s->by_seen, 0) != 0) {
		snprintf(err, errlen, "out of memory");
		rdv_free(s);
		return -1;
	}
	return 0;
}

void rdv_free(struct rdv_server *s)
{
	while (s->lru_head != NULL)
		node_free(s, s->lru_head);
	while (s->guest_head != NULL)
		node_free(s, s->guest_head);
	while (s->ask_head != NULL) {
		struct rdv_ask *q = s->ask_head;

		s->ask_head = q->next;
		free(q);
	}
	u64map_free(&s->by_key);
	u64map_free(&s->by_index);
	u64map_free(&s->by_token);
	u64map_free(&s->by_relay);
	u64map_free(&s->asks);
	u64map_free(&s->by_seen);
	free(s->seen);
	if (s->obfbuf != NULL)
		sodium_memzero(s->obfbuf, RDV_MAX_DGRAM);
	free(s->obfbuf);
	sodium_memzero(s, sizeof(*s));
}

uint64_t rdv_rx(struct rdv_server *s, uint64_t now, unsigned sock, const union yip_sockaddr *src,
                const uint8_t *d, size_t len)
{
	struct rdv_node *n = NULL;

	/* Nothing real comes from 100::/64, and a stream comes from nowhere else. */
	if ((sock == RDV_SOCK_STREAM) != rdv_is_stream_addr(src) || sock > RDV_SOCK_STREAM) {
		drop(s, RDV_DROP_STREAM_SOURCE);
		return 0;
	}
	s->rx_len = len;
	/* With obf_psk, anything that does not authenticate is dropped before
	 * any other work, and answered with nothing. */
	if (s->cfg.obf) {
		size_t plain;

		switch (obf_open(&s->obf_keys, d, len, s->obfbuf, &plain, WIRE_RELAY_TO_SERVER,
		                 false)) {
		case OBF_OK:
			d = s->obfbuf;
			len = plain;
			break;
		case OBF_IGNORED:
			return 0;
		default:
			drop(s, RDV_DROP_OBF);
			return 0;
		}
	}
	switch (wire_classify(d, len)) {
	case WIRE_INIT:
		if (sock == RDV_SOCK_ALT)
			drop(s, RDV_DROP_NOT_FOR_SERVER);
		else
			n = rx_init(s, now, sock, src, d, len);
		break;
	case WIRE_CTRL:
		n = on_ctrl(s, now, sock, src, d, len);
		break;
	case WIRE_RELAY:
		n = on_relay(s, now, sock, src, d, len);
		break;
	case WIRE_RESP:
	case WIRE_DATA:
	case WIRE_REPAIR:
	case WIRE_REPORT:
		drop(s, RDV_DROP_NOT_FOR_SERVER);
		break;
	default:
		drop(s, RDV_DROP_MALFORMED);
	}
	return n != NULL ? n->key_hash : 0;
}

void rdv_stream_gone(struct rdv_server *s, const union yip_sockaddr *addr, uint64_t node)
{
	struct rdv_node *n = node != 0 ? u64map_get(&s->by_key, node) : NULL;

	if (n == NULL || !rdv_is_stream_addr(addr))
		return;
	if (n->move != NULL && n->move->sock == RDV_SOCK_STREAM &&
	    yip_sockaddr_eq(&n->move->to, addr)) {
		free(n->move);
		n->move = NULL;
	}
	if (n->init_index != 0 && n->init_sock == RDV_SOCK_STREAM &&
	    yip_sockaddr_eq(&n->init_addr, addr))
		n->init_index = 0; /* whoever uses those keys now, it is not from there */
	if (n->sock == RDV_SOCK_STREAM && yip_sockaddr_eq(&n->addr, addr) && n->confirmed) {
		n->confirmed = false;
		s->stats.streams_gone++;
	}
}

uint64_t rdv_timers(struct rdv_server *s, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	while (s->lru_head != NULL && now - s->lru_head->last_rx >= NODE_TTL)
		node_forget(s, now, s->lru_head);
	while (s->guest_head != NULL && now >= s->guest_head->guest_until) {
		s->stats.guests_expired++;
		node_forget(s, now, s->guest_head);
	}
	next = seen_expire(s, now);
	if (s->lru_head != NULL && s->lru_head->last_rx + NODE_TTL < next)
		next = s->lru_head->last_rx + NODE_TTL;
	if (s->guest_head != NULL && s->guest_head->guest_until < next)
		next = s->guest_head->guest_until;
	/* Oldest first: the first not due yet is the next deadline. */
	while (s->ask_head != NULL) {
		struct rdv_ask *q = s->ask_head;
		struct rdv_node *a;

		s->stats.ask_visits++;
		if (now < q->deadline) {
			next = q->deadline < next ? q->deadline : next;
			break;
		}
		a = u64map_get(&s->by_key, q->asker);
		if (a != NULL)
			unknown(s, a, q->asker_id, q->target_key);
		ask_done(s, q, a);
	}
	s->next_timer = next;
	return next;
}

void rdv_each(const struct rdv_server *s, void (*fn)(void *arg, const struct rdv_node *n),
              void *arg)
{
	for (const struct rdv_node *n = s->guest_head; n != NULL; n = n->lru_next)
		fn(arg, n);
	for (const struct rdv_node *n = s->lru_head; n != NULL; n = n->lru_next)
		fn(arg, n);
}
