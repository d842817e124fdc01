/*
 * The membership objects of a CA-gated network (docs/membership.md), byte
 * by byte: certificates, root sets, revocation lists, member records and
 * certificate requests. Each has its constants, an encoder and a
 * bounds-checked decoder here; what the objects mean, and the signatures
 * over them, are src/membership's. docs/protocol.md ("Membership objects")
 * explains the fields; this header is the byte-level truth. Multi-byte
 * fields are little-endian.
 *
 * Every object starts with the same six bytes:
 *
 *   kind u8 | format version u8 (1) | length u32 (of the whole object)
 *
 * and ends with a 64-byte Ed25519 signature over
 *
 *   context string | 0x00 | every byte of the object before the signature
 *
 * where the context string is the object's own (WIRE_CTX_*), so a signature
 * over one kind of object never verifies as another.
 *
 *   Certificate (kind 0xc1, at most 768 B), signed by the CA:
 *     header | network | name | member key 32 | signing key 32
 *     | not_before u64 | not_after u64 | n u8 (0..8) | n prefixes
 *     | m u8 (0..8) | m groups | signature 64
 *   Root set (kind 0xc2), signed by the CA:
 *     header | network | serial u64 | issued_at u64 | n u8 (1..32)
 *     | n * (key 32 | a u8 (1..4) | a addresses) | signature 64
 *   Revocation list (kind 0xc3), signed by the CA:
 *     header | network | serial u64 | issued_at u64 | n u16 (0..4096)
 *     | n * (what u8 (1 key, 2 certificate hash) | 32 bytes) | signature 64
 *   Member record (kind 0xc4), signed by the member's signing key:
 *     header | certificate (a whole certificate object) | seq u64 | expires u64
 *     | n u8 (0..8) | n addresses | signature 64
 *   Certificate request (kind 0xc5, 134 B), signed by its own signing key:
 *     header | member key 32 | signing key 32 | signature 64
 *
 * A name (network, member name, group) is len u8 | len bytes. Network and
 * group names are [a-z0-9._-], 1..63 and 1..31 bytes; a member name is
 * 1..63 bytes of printable ASCII (0x20..0x7e) that neither starts nor ends
 * with a space. A prefix is family u8 (4 | 6) | length u8 | 4 or 16 bytes,
 * with every bit past the length zero. An address is the Ctrl encoding
 * (wire_addr_put: family u8 | port u16 | 4 or 16 bytes), never with port 0,
 * an unspecified (0.0.0.0, ::), multicast or broadcast address.
 * Decoders refuse duplicates among prefixes, groups, root keys and each
 * entry's addresses; revocation entries are in strictly ascending order
 * (memcmp of the 33 bytes), so every list has one encoding. Every decoder
 * refuses a wrong kind or version, a length field that is not the input's
 * length, trailing bytes, and all-zero keys.
 */
#ifndef YIP_WIRE_MEMBER_H
#define YIP_WIRE_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "crypto/crypto.h"
#include "wire/wire.h"

/* Object kinds: the first byte. Apart from the datagram types (1..8). */
enum wire_obj_kind {
	WIRE_OBJ_CERT = 0xc1,
	WIRE_OBJ_ROOTS = 0xc2,
	WIRE_OBJ_REVOCATIONS = 0xc3,
	WIRE_OBJ_RECORD = 0xc4,
	WIRE_OBJ_REQUEST = 0xc5,
};

#define WIRE_OBJ_VERSION 1 /* the format version every decoder here reads */
#define WIRE_OBJ_HDR     6 /* kind, version, length u32 */
#define WIRE_SIG_LEN     64
#define WIRE_SIGN_KEY    32 /* an Ed25519 public key */

/* Signing contexts, one per kind (the NUL that follows each is signed too). */
#define WIRE_CTX_CERT        "yip certificate v1"
#define WIRE_CTX_ROOTS       "yip root set v1"
#define WIRE_CTX_REVOCATIONS "yip revocation v1"
#define WIRE_CTX_RECORD      "yip member record v1"
#define WIRE_CTX_REQUEST     "yip certificate request v1"

#define WIRE_NETWORK_MAX      63
#define WIRE_MEMBER_NAME_MAX  63
#define WIRE_GROUP_MAX        31
#define WIRE_CERT_PREFIXES    8
#define WIRE_CERT_GROUPS      8
#define WIRE_ROOTS_MAX_ROOTS  32
#define WIRE_ROOT_ADDRS       4
#define WIRE_REVOKED_MAX      4096
#define WIRE_REVOKED_ENTRY    33 /* what u8 | 32 bytes */
#define WIRE_RECORD_ENDPOINTS 8

/* The largest of each object (and the request's only length). */
#define WIRE_PREFIX_MAX 18 /* family, length, IPv6 address */
#define WIRE_CERT_MAX                                                                              \
	(WIRE_OBJ_HDR + 1 + WIRE_NETWORK_MAX + 1 + WIRE_MEMBER_NAME_MAX + 2 * 32 + 16 + 1 +        \
	 WIRE_CERT_PREFIXES * WIRE_PREFIX_MAX + 1 + WIRE_CERT_GROUPS * (1 + WIRE_GROUP_MAX) +      \
	 WIRE_SIG_LEN)
#define WIRE_ROOTS_MAX                                                                             \
	(WIRE_OBJ_HDR + 1 + WIRE_NETWORK_MAX + 16 + 1 +                                            \
	 WIRE_ROOTS_MAX_ROOTS * (YIP_KEY_LEN + 1 + WIRE_ROOT_ADDRS * WIRE_ADDR_MAX) +              \
	 WIRE_SIG_LEN)
#define WIRE_REVOCATIONS_MAX                                                                       \
	(WIRE_OBJ_HDR + 1 + WIRE_NETWORK_MAX + 16 + 2 + WIRE_REVOKED_MAX * WIRE_REVOKED_ENTRY +    \
	 WIRE_SIG_LEN)
#define WIRE_RECORD_MAX                                                                            \
	(WIRE_OBJ_HDR + WIRE_CERT_MAX + 16 + 1 + WIRE_RECORD_ENDPOINTS * WIRE_ADDR_MAX +           \
	 WIRE_SIG_LEN)
#define WIRE_REQUEST_LEN (WIRE_OBJ_HDR + YIP_KEY_LEN + WIRE_SIGN_KEY + WIRE_SIG_LEN)
#define WIRE_OBJ_MAX     WIRE_REVOCATIONS_MAX /* the largest of all */

_Static_assert(WIRE_CERT_MAX <= 768, "a certificate is at most 768 bytes");
_Static_assert(WIRE_RECORD_MAX <= 1100, "a record fits a 1280-byte path with room to spare");
_Static_assert(WIRE_REQUEST_LEN == 134, "a request is 134 bytes (docs/protocol.md)");

/* The common header of every object. */
struct wire_obj_hdr {
	uint8_t kind;
	uint8_t version;
	uint32_t length; /* of the whole object, header and signature included */
};

/* Reads the header; false if len < WIRE_OBJ_HDR. Nothing else is checked. */
bool wire_obj_hdr_get(struct wire_obj_hdr *h, const uint8_t *in, size_t len) WIRE_WUR;

/* The bytes a signature covers: all of an object of len bytes but the last
 * WIRE_SIG_LEN (0 if len is shorter). */
static inline size_t wire_obj_signed_len(size_t len)
{
	return len < WIRE_SIG_LEN ? 0 : len - WIRE_SIG_LEN;
}

/* The context string of a kind (WIRE_CTX_*), NULL for an unknown kind. */
const char *wire_obj_context(uint8_t kind);

/* Names as above. s is NUL-terminated. */
bool wire_network_ok(const char *s);
bool wire_group_ok(const char *s);
bool wire_member_name_ok(const char *s);

/* True for an address a record or root set may carry: AF_INET or AF_INET6,
 * non-zero port, not unspecified, multicast or broadcast. */
bool wire_endpoint_ok(const union yip_sockaddr *a);

/* ---- certificate ---------------------------------------------------------------- */

struct wire_cert {
	char network[WIRE_NETWORK_MAX + 1];
	char name[WIRE_MEMBER_NAME_MAX + 1];
	uint8_t key[YIP_KEY_LEN];        /* the member's yip (X25519) public key */
	uint8_t sign_key[WIRE_SIGN_KEY]; /* the member's record-signing (Ed25519) key */
	uint64_t not_before, not_after;  /* Unix seconds; not_before < not_after */
	uint8_t n_prefixes;
	struct yip_cidr prefixes[WIRE_CERT_PREFIXES]; /* the member's allowed IPs */
	uint8_t n_groups;
	char groups[WIRE_CERT_GROUPS][WIRE_GROUP_MAX + 1];
	uint8_t sig[WIRE_SIG_LEN];
};

/* Encodes c, its signature included, into out (cap bytes); returns the
 * length, or 0 if a field is invalid (as the decoder would refuse it) or
 * the object does not fit. */
size_t wire_cert_put(uint8_t *out, size_t cap, const struct wire_cert *c);
bool wire_cert_get(struct wire_cert *c, const uint8_t *in, size_t len) WIRE_WUR;

/* ---- root set ------------------------------------------------------------------- */

struct wire_root {
	uint8_t key[YIP_KEY_LEN]; /* the root node's yip public key */
	uint8_t n_addrs;
	union yip_sockaddr addrs[WIRE_ROOT_ADDRS];
};

struct wire_roots {
	char network[WIRE_NETWORK_MAX + 1];
	uint64_t serial;    /* the version: a node refuses a set older than one it has */
	uint64_t issued_at; /* Unix seconds, for people */
	uint8_t n_roots;
	struct wire_root roots[WIRE_ROOTS_MAX_ROOTS];
	uint8_t sig[WIRE_SIG_LEN];
};

size_t wire_roots_put(uint8_t *out, size_t cap, const struct wire_roots *r);
bool wire_roots_get(struct wire_roots *r, const uint8_t *in, size_t len) WIRE_WUR;

/* ---- revocation list ------------------------------------------------------------ */

enum wire_revoked_what {
	WIRE_REVOKED_KEY = 1,  /* a member's yip public key: every certificate for it */
	WIRE_REVOKED_CERT = 2, /* one certificate, by its hash (src/membership) */
};

struct wire_revocations {
	char network[WIRE_NETWORK_MAX + 1];
	uint64_t serial;
	uint64_t issued_at;
	uint16_t n;
	/* n * WIRE_REVOKED_ENTRY bytes, strictly ascending. The decoder points
	 * it into its input (the entries end where the signature starts); the
	 * encoder copies from it. */
	const uint8_t *entries;
	uint8_t sig[WIRE_SIG_LEN];
};

size_t wire_revocations_put(uint8_t *out, size_t cap, const struct wire_revocations *r);
bool wire_revocations_get(struct wire_revocations *r, const uint8_t *in, size_t len) WIRE_WUR;

/* ---- member record -------------------------------------------------------------- */

struct wire_record {
	uint64_t seq;     /* newer supersedes older; Unix milliseconds at signing */
	uint64_t expires; /* Unix seconds */
	uint8_t n_endpoints;
	union yip_sockaddr endpoints[WIRE_RECORD_ENDPOINTS];
	uint8_t sig[WIRE_SIG_LEN];
};

/* Encodes a record around cert (a whole certificate object of cert_len
 * bytes, which must decode); 0 as for wire_cert_put. */
size_t wire_record_put(uint8_t *out, size_t cap, const uint8_t *cert, size_t cert_len,
                       const struct wire_record *r);

/* Decodes a record and the certificate inside it, which starts at
 * in + WIRE_OBJ_HDR and is *cert_len bytes long. */
bool wire_record_get(struct wire_record *r, struct wire_cert *cert, size_t *cert_len,
                     const uint8_t *in, size_t len) WIRE_WUR;

/* ---- certificate request -------------------------------------------------------- */

struct wire_request {
	uint8_t key[YIP_KEY_LEN];
	uint8_t sign_key[WIRE_SIGN_KEY];
	uint8_t sig[WIRE_SIG_LEN];
};

void wire_request_put(uint8_t out[WIRE_REQUEST_LEN], const struct wire_request *r);
bool wire_request_get(struct wire_request *r, const uint8_t *in, size_t len) WIRE_WUR;

#endif
