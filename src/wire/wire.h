/*
 * yip's wire format, all of it: every datagram and every plaintext layout
 * inside one, with its constants, lengths, an encoder and a bounds-checked
 * decoder. Nothing else in src/ reads or writes a datagram by offset.
 * docs/protocol.md explains the fields; this header is the byte-level truth.
 * Multi-byte fields are little-endian.
 *
 * Datagrams (the first byte is the type; the sizes, in bytes, are the
 * shortest its decoders accept and the longest where there is a limit,
 * asserted at the end of this file):
 */
// clang-format off
/*
 *   Init    149-917  1 0 0 0 | sender u32 | Noise msg1 (e 32, s 48, payload 29+) | mac1 16 | mac2 16
 *   Resp     77-845  2 0 0 0 | sender u32 | receiver u32 | Noise msg2 (e 32, payload 17+) | mac1 16
 *   Cookie       64  3 0 0 0 | receiver u32 | nonce 24 | XChaCha20-Poly1305(cookie 16)
 *   Data        32+  4 idx block u16 | receiver u32 | counter u64 | AEAD(inner packet)
 *   Repair      44+  5 idx block u16 | receiver u32 | counter u64 | AEAD(repair prefix 2, symbol 10+)
 *   Report   72-328  6 0 0 0 | receiver u32 | counter u64 | AEAD(loss report 40+)
 *   Ctrl        34+  7 0 0 0 | receiver u32 | counter u64 | AEAD(control message 2+)
 *   Relay       17+  8 dir 0 0 | token u64 | relay id u32 | a whole datagram of another type
 */
// clang-format on
/*
 * wire_classify checks what it can before the AEAD is opened: Report from
 * 32 bytes and Ctrl from 33 pass it, and wire_report_get, wire_ctrl_get and
 * wire_ctrl_gossip refuse the short plaintexts once opened. The largest
 * Init and Resp carry a certificate of WIRE_HS_CERT_MAX bytes; the largest
 * Report, WIRE_REPORT_MAX_NACKS NACKs.
 *
 * The 16-byte header of Data, Repair and Report (struct wire_hdr) is the
 * AEAD's associated data. In Data, idx is the packet's position in FEC
 * block `block` and its group's lanes (wire_fec_idx), WIRE_FEC_NONE when
 * it is in no block, WIRE_FEC_ARQ for a retransmission (whose plaintext
 * starts with the ARQ prefix). In Repair, idx is the repair symbol's index
 * in its block and the lanes, the same way. A block id is the traffic
 * class of its packets (top 2 bits) and the block's number in that class's
 * sequence (14 bits, wrapping): the receiver can tell which block of a
 * class follows which.
 *
 * Plaintexts:
 *
 *   Init payload:  TAI64N timestamp 12 | ciphers offered u8 (bit set) | [certificate]
 *   Resp payload:  cipher chosen u8 | [certificate]
 *   (the sender's membership certificate, a whole object of src/wire/member.h,
 *   at most WIRE_HS_CERT_MAX bytes, in a CA-gated network; nothing otherwise)
 *   Repair:        k u8 | r u8 | symbol
 *   Symbol:        counter u64 | length u16 | packet | zero padding to the block's symbol length
 *   ARQ (Data):    original counter u64 | packet
 *   Report:        version u8 (1) | nacks u8 | 0 u16 | received u32 | span u32 | bursts u32
 *                  | burst_sum u32 | recovered u32 | unrecovered u32 | ts_us u32
 *                  | echo_ts_us u32 | echo_delay_us u32 | nack counter u64 * nacks
 *
 * mac1 = BLAKE2b(outlen 16, key = BLAKE2b-256("yip-mac1-v1" || receiver static public key),
 *                message = every byte of the datagram before mac1).
 * It lets a receiver drop handshakes from anyone who does not know its
 * public key before doing any Diffie-Hellman work.
 *
 * mac2 = BLAKE2b(outlen 16, key = the cookie the responder last gave the
 *                initiator's address, message = every byte of the Init before mac2),
 * or zeros without a cookie. A responder under load does Diffie-Hellman
 * only for an Init whose mac2 proves it comes from the address it claims
 * (docs/protocol.md, "Cookies"); to others it answers with a Cookie.
 */
#ifndef YIP_WIRE_WIRE_H
#define YIP_WIRE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "crypto/crypto.h"
#include "noise/noise.h"

#define WIRE_WUR __attribute__((warn_unused_result))

enum wire_type {
	WIRE_INIT = 1,
	WIRE_RESP = 2,
	WIRE_COOKIE = 3, /* a responder under load answers an Init with a cookie */
	WIRE_DATA = 4,
	WIRE_REPAIR = 5,
	WIRE_REPORT = 6,
	WIRE_CTRL = 7,  /* a sealed control message: node <-> rendezvous server, or paths */
	WIRE_RELAY = 8, /* a datagram for another node, through a rendezvous server */
};

/* Data's idx for a packet in no FEC block, and for a retransmission. */
#define WIRE_FEC_NONE 0xff
#define WIRE_FEC_ARQ  0xfe

/*
 * The idx of an FEC symbol (a source in Data, a repair in Repair): its
 * index in the block in the low 6 bits, and in the top 2 the number of
 * lanes its group is interleaved over, as a power of two (0: 1 lane, 1: 2,
 * 2: 4). Every block of a group says the same. A Data idx of 0xc0 or more
 * is no source (WIRE_FEC_NONE, WIRE_FEC_ARQ).
 */
#define WIRE_FEC_INDEX_MASK 0x3f
#define WIRE_FEC_MAX_LANES  4

static inline bool wire_fec_symbol(uint8_t idx)
{
	return idx < 0xc0;
}

static inline unsigned wire_fec_index(uint8_t idx)
{
	return idx & WIRE_FEC_INDEX_MASK;
}

/* The lanes of a symbol's group (idx must be a symbol's: wire_fec_symbol). */
static inline unsigned wire_fec_lanes(uint8_t idx)
{
	return 1u << (idx >> 6);
}

/* A symbol's idx: index < 64, lanes 1, 2 or 4. */
static inline uint8_t wire_fec_idx(unsigned index, unsigned lanes)
{
	return (uint8_t)((index & WIRE_FEC_INDEX_MASK) | (lanes >= 4 ? 2u : lanes - 1) << 6);
}

/* A block id: class (0..3) and number (14 bits). */
#define WIRE_BLOCK_BITS 14
#define WIRE_BLOCK_MASK ((1u << WIRE_BLOCK_BITS) - 1)

static inline uint16_t wire_block(unsigned cls, unsigned num)
{
	return (uint16_t)((cls & 3) << WIRE_BLOCK_BITS | (num & WIRE_BLOCK_MASK));
}

static inline unsigned wire_block_class(uint16_t id)
{
	return id >> WIRE_BLOCK_BITS;
}

static inline unsigned wire_block_num(uint16_t id)
{
	return id & WIRE_BLOCK_MASK;
}

/* ---- byte order ---------------------------------------------------------- */

static inline void wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint16_t wire_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void wire_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void wire_put64(uint8_t *p, uint64_t v)
{
	wire_put32(p, (uint32_t)v);
	wire_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t wire_get64(const uint8_t *p)
{
	return (uint64_t)wire_get32(p) | (uint64_t)wire_get32(p + 4) << 32;
}

/* ---- classification -------------------------------------------------------- */

/*
 * Classifies a datagram by its first word and length. Returns the wire_type,
 * or 0 if the datagram is malformed (unknown type, non-zero reserved bytes,
 * wrong length for its type). The decoders below assume a datagram that
 * passed this check only as far as they say.
 */
int wire_classify(const uint8_t *d, size_t len) WIRE_WUR;

/* ---- handshakes ------------------------------------------------------------ */

/* The Noise prologue of every handshake, node to node and node to
 * rendezvous server: both ends must use the same. */
#define WIRE_PROLOGUE     "yip-v1"
#define WIRE_PROLOGUE_LEN (sizeof(WIRE_PROLOGUE) - 1)

#define WIRE_MAC_LEN      16
#define WIRE_INIT_PAYLOAD (YIP_TAI64N_LEN + 1) /* timestamp, ciphers offered */
#define WIRE_RESP_PAYLOAD 1                    /* the cipher chosen */
#define WIRE_MSG1_LEN     (NOISE_MSG1_OVERHEAD + WIRE_INIT_PAYLOAD)
#define WIRE_MSG2_LEN     (NOISE_MSG2_OVERHEAD + WIRE_RESP_PAYLOAD)
#define WIRE_INIT_MSG1    8  /* offset of the Noise message in an Init */
#define WIRE_RESP_MSG2    12 /* ... and in a Resp */
#define WIRE_INIT_MAC1    (WIRE_INIT_MSG1 + WIRE_MSG1_LEN) /* offsets of an Init's MACs */
#define WIRE_INIT_MAC2    (WIRE_INIT_MAC1 + WIRE_MAC_LEN)
#define WIRE_INIT_LEN     (WIRE_INIT_MAC2 + WIRE_MAC_LEN)
#define WIRE_RESP_LEN     (WIRE_RESP_MSG2 + WIRE_MSG2_LEN + WIRE_MAC_LEN)

/* A responder refuses an Init whose timestamp is older than this by its
 * own clock, whether or not it remembers the sender: a recorded Init
 * replayed later gets no answer (docs/protocol.md, "Replayed Inits"). Two
 * clocks may differ by up to this much. */
#define WIRE_INIT_MAX_AGE_NS (120ULL * 1000000000ULL)

/* The certificate an Init or Resp payload may carry after its fixed part
 * (src/wire/member.h's WIRE_CERT_MAX, asserted there), and the longest
 * Init and Resp that makes. */
#define WIRE_HS_CERT_MAX 768
#define WIRE_INIT_MAX    (WIRE_INIT_LEN + WIRE_HS_CERT_MAX)
#define WIRE_RESP_MAX    (WIRE_RESP_LEN + WIRE_HS_CERT_MAX)

_Static_assert(WIRE_INIT_LEN == 149, "Init is 149 bytes (docs/protocol.md)");
_Static_assert(WIRE_RESP_LEN == 77, "Resp is 77 bytes (docs/protocol.md)");

struct wire_init {
	uint32_t sender;     /* the initiator's index for this handshake */
	const uint8_t *msg1; /* msg1_len bytes */
	size_t msg1_len;     /* WIRE_MSG1_LEN, more with a certificate */
};

struct wire_resp {
	uint32_t sender;     /* the responder's index for the new session */
	uint32_t receiver;   /* the initiator's index from the Init */
	const uint8_t *msg2; /* msg2_len bytes */
	size_t msg2_len;     /* WIRE_MSG2_LEN, more with a certificate */
};

/* Writes an Init's header into d (WIRE_INIT_LEN bytes, more with a
 * certificate); returns where the Noise message goes. mac1 is added last.
 * The decoders take WIRE_INIT_LEN to WIRE_INIT_MAX (WIRE_RESP_LEN to
 * WIRE_RESP_MAX) bytes. */
uint8_t *wire_init_put(uint8_t *d, uint32_t sender);
bool wire_init_get(struct wire_init *m, const uint8_t *d, size_t len) WIRE_WUR;

uint8_t *wire_resp_put(uint8_t *d, uint32_t sender, uint32_t receiver);
bool wire_resp_get(struct wire_resp *m, const uint8_t *d, size_t len) WIRE_WUR;

/* The plaintexts carried inside the Noise messages. */
struct wire_init_payload {
	uint8_t tai64n[YIP_TAI64N_LEN];
	uint8_t ciphers; /* YIP_CIPHER_BIT set */
};

void wire_init_payload_put(uint8_t out[WIRE_INIT_PAYLOAD], const struct wire_init_payload *p);
bool wire_init_payload_get(struct wire_init_payload *p, const uint8_t *in, size_t len) WIRE_WUR;

void wire_resp_payload_put(uint8_t out[WIRE_RESP_PAYLOAD], uint8_t cipher);
bool wire_resp_payload_get(uint8_t *cipher, const uint8_t *in, size_t len) WIRE_WUR;

/* The mac1 key for messages sent to the owner of public key pub. */
void wire_mac1_key(uint8_t key[YIP_KEY_LEN], const uint8_t pub[YIP_KEY_LEN]);

/* Writes mac1 into the last WIRE_MAC_LEN bytes of msg (len includes them). */
void wire_mac1_put(uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN]);

/* Checks the mac1 in the last WIRE_MAC_LEN bytes of msg in constant time. */
bool wire_mac1_ok(const uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN]) WIRE_WUR;

/* An Init's mac1 (over what comes before it) and mac2 (over all before
 * mac2); len is the Init's length (the _n forms) or WIRE_INIT_LEN. */
static inline void wire_init_mac1_put_n(uint8_t *d, size_t len, const uint8_t key[YIP_KEY_LEN])
{
	wire_mac1_put(d, len - WIRE_MAC_LEN, key);
}

static inline bool wire_init_mac1_ok_n(const uint8_t *d, size_t len, const uint8_t key[YIP_KEY_LEN])
{
	return len >= WIRE_INIT_LEN && wire_mac1_ok(d, len - WIRE_MAC_LEN, key);
}

static inline void wire_init_mac1_put(uint8_t d[WIRE_INIT_LEN], const uint8_t key[YIP_KEY_LEN])
{
	wire_init_mac1_put_n(d, WIRE_INIT_LEN, key);
}

static inline bool wire_init_mac1_ok(const uint8_t d[WIRE_INIT_LEN], const uint8_t key[YIP_KEY_LEN])
{
	return wire_init_mac1_ok_n(d, WIRE_INIT_LEN, key);
}

#define WIRE_COOKIE_LEN   16 /* a cookie, and the key of a mac2 */
#define WIRE_COOKIE_NONCE 24
#define WIRE_COOKIE_MSG   (4 + 4 + WIRE_COOKIE_NONCE + WIRE_COOKIE_LEN + YIP_AEAD_TAG)

_Static_assert(WIRE_COOKIE_MSG == 64, "a Cookie is 64 bytes (docs/protocol.md)");

/* Writes mac2 (keyed by cookie) into the last WIRE_MAC_LEN bytes of an Init
 * of len bytes (at least WIRE_INIT_LEN). */
void wire_mac2_put_n(uint8_t *d, size_t len, const uint8_t cookie[WIRE_COOKIE_LEN]);

/* Checks an Init's mac2 against cookie in constant time. */
bool wire_mac2_ok_n(const uint8_t *d, size_t len, const uint8_t cookie[WIRE_COOKIE_LEN]) WIRE_WUR;

/* The same for an Init of WIRE_INIT_LEN bytes. */
static inline void wire_mac2_put(uint8_t d[WIRE_INIT_LEN], const uint8_t cookie[WIRE_COOKIE_LEN])
{
	wire_mac2_put_n(d, WIRE_INIT_LEN, cookie);
}

static inline bool wire_mac2_ok(const uint8_t d[WIRE_INIT_LEN],
                                const uint8_t cookie[WIRE_COOKIE_LEN])
{
	return wire_mac2_ok_n(d, WIRE_INIT_LEN, cookie);
}

/* A Cookie message: the receiver is the Init's sender index. */
struct wire_cookie {
	uint32_t receiver;
	const uint8_t *nonce;  /* WIRE_COOKIE_NONCE bytes */
	const uint8_t *sealed; /* the cookie and its tag */
};

/* Writes a Cookie's header into d (WIRE_COOKIE_MSG bytes); returns where the
 * nonce goes (the sealed cookie follows it). */
uint8_t *wire_cookie_put(uint8_t *d, uint32_t receiver);
bool wire_cookie_get(struct wire_cookie *m, const uint8_t *d, size_t len) WIRE_WUR;

/* ---- Data, Repair and Report ------------------------------------------------ */

#define WIRE_DATA_HDR 16 /* struct wire_hdr on the wire; the AEAD's associated data */
#define WIRE_DATA_MIN (WIRE_DATA_HDR + YIP_AEAD_TAG)
#define WIRE_OVERHEAD WIRE_DATA_MIN /* bytes a Data datagram adds to an inner packet */

struct wire_hdr {
	uint8_t type;
	uint8_t idx;
	uint16_t block;
	uint32_t receiver; /* the receiver's session index */
	uint64_t counter;  /* the AEAD nonce; strictly increasing per session */
};

void wire_hdr_put(uint8_t d[WIRE_DATA_HDR], const struct wire_hdr *h);

/* Decodes the header of a Data, Repair or Report datagram of len bytes
 * (false if len < WIRE_DATA_MIN). The type is not checked here. */
bool wire_hdr_get(struct wire_hdr *h, const uint8_t *d, size_t len) WIRE_WUR;

/* Kept for callers that build a header field by field. */
static inline void wire_data_header(uint8_t *d, uint8_t type, uint8_t idx, uint16_t block,
                                    uint32_t receiver, uint64_t counter)
{
	struct wire_hdr h = {type, idx, block, receiver, counter};

	wire_hdr_put(d, &h);
}

/* The plaintext length of a sealed Data/Repair/Report datagram of len bytes. */
static inline size_t wire_plain_len(size_t len)
{
	return len < WIRE_DATA_MIN ? 0 : len - WIRE_DATA_MIN;
}

/* ---- loss recovery plaintexts ------------------------------------------------ */

#define WIRE_SYM_HDR    10 /* counter u64 | length u16 */
#define WIRE_REPAIR_PRE 2  /* k u8 | r u8 */
#define WIRE_ARQ_PRE    8  /* original counter u64 */

/* Bytes a datagram adds to the inner packet at most: a repair's header, tag,
 * prefix and symbol header. */
#define WIRE_MAX_OVERHEAD (WIRE_DATA_MIN + WIRE_REPAIR_PRE + WIRE_SYM_HDR)

_Static_assert(WIRE_MAX_OVERHEAD == 44, "a repair adds 44 bytes (docs/protocol.md)");

/* A symbol's header: which counter the packet was sent with, and its length. */
struct wire_sym {
	uint64_t counter;
	uint16_t len;
};

void wire_sym_put(uint8_t out[WIRE_SYM_HDR], const struct wire_sym *s);

/* Decodes the header of a symbol of symlen bytes; false unless the packet
 * it names fits in the symbol. */
bool wire_sym_get(struct wire_sym *s, const uint8_t *sym, size_t symlen) WIRE_WUR;

/* A repair's plaintext: k sources and r repairs in its block, then the symbol. */
struct wire_repair {
	uint8_t k, r;
	const uint8_t *sym; /* symlen bytes */
	size_t symlen;
};

void wire_repair_put(uint8_t out[WIRE_REPAIR_PRE], uint8_t k, uint8_t r);

/* False if the plaintext is shorter than a prefix and a symbol header. */
bool wire_repair_get(struct wire_repair *m, const uint8_t *plain, size_t len) WIRE_WUR;

/* A retransmission's plaintext: the counter it was first sent with, then the packet. */
struct wire_arq {
	uint64_t counter;
	const uint8_t *pkt;
	size_t len;
};

void wire_arq_put(uint8_t out[WIRE_ARQ_PRE], uint64_t counter);
bool wire_arq_get(struct wire_arq *m, const uint8_t *plain, size_t len) WIRE_WUR;

/* ---- loss reports ----------------------------------------------------------- */

#define WIRE_REPORT_VERSION   1
#define WIRE_REPORT_FIXED     40
#define WIRE_REPORT_MAX_NACKS 32
#define WIRE_REPORT_MAX       (WIRE_REPORT_FIXED + 8 * WIRE_REPORT_MAX_NACKS)

struct wire_report {
	uint32_t received;      /* datagrams received since the last report */
	uint32_t span;          /* advance of the sender's counter over them */
	uint32_t bursts;        /* loss runs seen */
	uint32_t burst_sum;     /* datagrams in them */
	uint32_t recovered;     /* packets FEC rebuilt */
	uint32_t unrecovered;   /* packets of blocks FEC gave up */
	uint32_t ts_us;         /* the reporter's clock, for the echo */
	uint32_t echo_ts_us;    /* the peer's newest ts_us, 0 = none */
	uint32_t echo_delay_us; /* how long that one waited here */
	uint8_t n_nacks;
	uint64_t nacks[WIRE_REPORT_MAX_NACKS]; /* counters still missing */
};

/* Encodes r into out (WIRE_REPORT_MAX bytes); returns its length. */
size_t wire_report_put(uint8_t out[WIRE_REPORT_MAX], const struct wire_report *r);

/* False unless len is exactly a version-1 report (reserved bytes zero) with
 * at most WIRE_REPORT_MAX_NACKS counters. */
bool wire_report_get(struct wire_report *r, const uint8_t *in, size_t len) WIRE_WUR;

/* ---- control messages (Ctrl) ------------------------------------------------ */

/*
 * A Ctrl datagram is sealed like a Report, under a session between a node
 * and a rendezvous server, or between two peers (path probes). Its
 * plaintext is one message: kind u8, then the kind's fields in the order of
 * struct wire_ctrl below (only those the kind has). An address is
 * family u8 (4 or 6) | port u16 | 4 or 16 bytes (IPv4-mapped IPv6 is sent as 4,
 * and refused as 6, so every address has one encoding).
 *
 *   node -> server
 *     REGISTER   flags u8 | nat u8 | n u8 | n addresses (local candidates)
 *     LOOKUP     id u32 | key 32 (whom the node wants to reach)
 *     ANSWER     id u32 | key 32 | flags u8 (WIRE_CTRL_ACCEPT: key is a peer of ours)
 *     WHOAMI     id u32
 *     MEMBER     length u16 | certificate (docs/membership.md; to a server
 *                that admits only its network's members)
 *   server -> node
 *     REGISTERED flags u8 | token u64 | relay id u32 | alt port u16 | address (reflexive)
 *     ASK        id u32 | key 32 (a node that asks for us)
 *     INTRO      id u32 | key 32 | relay id u32 | nat u8 | n u8 | n addresses (the peer's)
 *     UNKNOWN    id u32 | key 32 (not registered, or it did not accept us)
 *     YOUARE     id u32 | address (where the WHOAMI came from)
 *     REFUSED    reason u8 (the server admits only certified members: 0 = no
 *                certificate sent, else the certificate's membership verdict)
 *   peer <-> peer
 *     PROBE      nonce u64 | ts_us u32
 *     PROBE_OK   nonce u64 | ts_us u32 (the PROBE's, echoed)
 *     GOSSIP     a gossip message, to the end (src/wire/gossip.h; not a
 *                struct wire_ctrl: see wire_ctrl_gossip)
 */
enum wire_ctrl_kind {
	WIRE_CTRL_REGISTER = 1,
	WIRE_CTRL_LOOKUP = 2,
	WIRE_CTRL_ANSWER = 3,
	WIRE_CTRL_WHOAMI = 4,
	WIRE_CTRL_MEMBER = 5,
	WIRE_CTRL_REGISTERED = 16,
	WIRE_CTRL_ASK = 17,
	WIRE_CTRL_INTRO = 18,
	WIRE_CTRL_UNKNOWN = 19,
	WIRE_CTRL_YOUARE = 20,
	WIRE_CTRL_REFUSED = 21,
	WIRE_CTRL_PROBE = 32,
	WIRE_CTRL_PROBE_OK = 33,
	WIRE_CTRL_GOSSIP = 48,
};

/* The gossip message a Ctrl plaintext carries (kind GOSSIP): its bytes and
 * length; false if the plaintext is of another kind or carries nothing. */
static inline bool wire_ctrl_gossip(const uint8_t *in, size_t len, const uint8_t **msg,
                                    size_t *mlen)
{
	if (len < 2 || in[0] != WIRE_CTRL_GOSSIP)
		return false;
	*msg = in + 1;
	*mlen = len - 1;
	return true;
}

#define WIRE_CTRL_RELAY  0x01 /* REGISTER: relay for me; REGISTERED: relaying is on */
#define WIRE_CTRL_ACCEPT 0x01 /* ANSWER */

/* How a node's NAT maps its port (REGISTER, INTRO). */
enum wire_nat {
	WIRE_NAT_UNKNOWN = 0,
	WIRE_NAT_NONE = 1, /* the node's own address is what servers see */
	WIRE_NAT_EIM = 2,  /* one external port whatever the destination */
	WIRE_NAT_APDM = 3, /* a new external port per destination ("symmetric") */
	WIRE_NAT_COUNT
};

#define WIRE_ADDR_MAX      19   /* family, port, IPv6 address */
#define WIRE_MAX_CANDS     8    /* addresses in one REGISTER or INTRO */
#define WIRE_CTRL_CERT_MAX 1024 /* a certificate in MEMBER (src/wire/member.h: WIRE_CERT_MAX) */
/* The longest message: MEMBER (the others are at most 191 bytes, INTRO). */
#define WIRE_CTRL_MAX (1 + 2 + WIRE_CTRL_CERT_MAX)
_Static_assert(1 + 4 + YIP_KEY_LEN + 4 + 1 + 1 + WIRE_MAX_CANDS * WIRE_ADDR_MAX <= WIRE_CTRL_MAX,
               "INTRO fits");

struct wire_ctrl {
	uint8_t kind;
	uint32_t id;              /* request or WHOAMI id */
	uint8_t key[YIP_KEY_LEN]; /* a node's static public key */
	uint8_t flags;            /* WIRE_CTRL_RELAY, WIRE_CTRL_ACCEPT */
	uint8_t nat;              /* enum wire_nat */
	uint64_t token;           /* REGISTERED: the node's relay token (secret) */
	uint32_t relay_id;        /* REGISTERED: the node's; INTRO: the peer's */
	uint16_t alt_port;        /* REGISTERED: the server's second port, 0 = none */
	union yip_sockaddr addr;  /* REGISTERED, YOUARE: the reflexive address */
	uint8_t n_cands;          /* REGISTER, INTRO */
	union yip_sockaddr cands[WIRE_MAX_CANDS];
	uint64_t nonce; /* PROBE, PROBE_OK */
	uint32_t ts_us; /* PROBE, PROBE_OK */
	uint8_t reason; /* REFUSED */
	/* MEMBER: 1..WIRE_CTRL_CERT_MAX bytes; a decoded message points into its input */
	const uint8_t *cert;
	uint16_t cert_len;
};

/* Encodes the fields of c's kind into out (WIRE_CTRL_MAX bytes); returns the
 * length, 0 for an unknown kind, a bad address or too many candidates. */
size_t wire_ctrl_put(uint8_t out[WIRE_CTRL_MAX], const struct wire_ctrl *c);

/* False unless in is exactly one message of a known kind with valid
 * addresses (family 4 or 6, non-zero port) and at most WIRE_MAX_CANDS of them. */
bool wire_ctrl_get(struct wire_ctrl *c, const uint8_t *in, size_t len) WIRE_WUR;

/* One address, as above; false if it is not AF_INET or AF_INET6 with a port. */
size_t wire_addr_put(uint8_t out[WIRE_ADDR_MAX], const union yip_sockaddr *a);
bool wire_addr_get(union yip_sockaddr *a, const uint8_t *in, size_t len, size_t *used) WIRE_WUR;

/* ---- relayed datagrams --------------------------------------------------------- */

/*
 * Relay: a whole datagram of another type (Init, Resp, Data, ...) between
 * two nodes, through a rendezvous server that cannot read it.
 *
 *   to the server   (dir 0): 8 0 0 0 | token u64 (the sender's) | relay id u32 (the receiver's)
 *   from the server (dir 1): 8 1 0 0 | token u64 (the receiver's) | relay id u32 (the sender's)
 *
 * The token is the secret a server gives each registered node in
 * REGISTERED: it proves a datagram to the server comes from that node, and
 * one from the server comes from the server. Relay ids are public names.
 */
#define WIRE_RELAY_HDR 16

enum wire_relay_dir { WIRE_RELAY_TO_SERVER = 0, WIRE_RELAY_FROM_SERVER = 1 };

struct wire_relay {
	uint8_t dir;
	uint64_t token;
	uint32_t relay_id;
	const uint8_t *payload; /* the datagram carried */
	size_t len;
};

void wire_relay_put(uint8_t d[WIRE_RELAY_HDR], uint8_t dir, uint64_t token, uint32_t relay_id);
bool wire_relay_get(struct wire_relay *m, const uint8_t *d, size_t len) WIRE_WUR;

/* The sizes in the table at the top of this file. */
_Static_assert(WIRE_INIT_MAX == 917 && WIRE_RESP_MAX == 845, "Init and Resp sizes");
_Static_assert(WIRE_DATA_MIN == 32, "Data is 32+ bytes");
_Static_assert(WIRE_DATA_MIN + WIRE_REPAIR_PRE + WIRE_SYM_HDR == 44, "Repair is 44+ bytes");
_Static_assert(WIRE_DATA_MIN + WIRE_REPORT_FIXED == 72 && WIRE_DATA_MIN + WIRE_REPORT_MAX == 328,
               "Report is 72-328 bytes");
_Static_assert(WIRE_RELAY_HDR + 1 == 17, "Relay is 17+ bytes");

#endif
