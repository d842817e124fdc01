/*
 * Membership in a CA-gated network (docs/membership.md): what the objects
 * of src/wire/member.h mean, how they are signed and checked, their text
 * form, and their description for people.
 *
 * Keys and their roles (never interchangeable):
 *   - the CA key: Ed25519, kept offline by yip-ca; it signs certificates,
 *     root sets and revocation lists;
 *   - a member's yip key: X25519, its identity in handshakes;
 *   - a member's record-signing key: Ed25519, derived from its yip private
 *     key (member_sign_keypair); it signs the member's records and its
 *     certificate request. A certificate binds the two public keys.
 *
 * Every signature covers a context string per kind of object followed by
 * the object's bytes (src/wire/member.h), so no signature verifies as
 * another kind's.
 *
 * Time: functions take the current Unix time; this module reads no clock.
 * A certificate is valid from not_before - MEMBER_SKEW_S to
 * not_after + MEMBER_SKEW_S (both clocks may be off by five minutes), and a
 * record until its expires + MEMBER_SKEW_S.
 *
 * The parse functions check structure only (MEMBER_OK or MEMBER_MALFORMED);
 * the check functions check signatures, network, time, revocation and
 * serials. Nothing here allocates except member_revocations_sign and
 * member_unarmor (temporary buffers, freed before they return).
 */
#ifndef YIP_MEMBERSHIP_MEMBER_H
#define YIP_MEMBERSHIP_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/member.h"

#define MEMBER_SKEW_S      300 /* clock skew tolerated on validity windows */
#define MEMBER_SIGN_PUBLIC 32  /* Ed25519 public key */
#define MEMBER_SIGN_SECRET 64  /* Ed25519 secret key, libsodium's layout (seed | public) */
#define MEMBER_HASH_LEN    32  /* a certificate's hash: BLAKE2b-256 of its bytes */

/* ---- verdicts --------------------------------------------------------------- */

enum member_verdict {
	MEMBER_OK = 0,
	MEMBER_MALFORMED,     /* not a well-formed object of the expected kind */
	MEMBER_BAD_SIGNATURE, /* a member's own signature (record, request) does not verify */
	MEMBER_WRONG_CA,      /* the CA signature does not verify under the configured CA key:
	                         issued by another CA, or altered */
	MEMBER_WRONG_NETWORK, /* issued for another network */
	MEMBER_EXPIRED,       /* past not_after (a record: past expires), skew allowed */
	MEMBER_NOT_YET_VALID, /* before not_before, skew allowed */
	MEMBER_REVOKED,       /* the member's key or this certificate is on the revocation list */
	MEMBER_KEY_MISMATCH,  /* the certificate is for another key than the one presented */
	MEMBER_OLDER,         /* a root set or revocation list older than one already seen */
	MEMBER_VERDICT_COUNT
};

/* "ok", "malformed", "bad_signature", "wrong_ca", "wrong_network", "expired",
 * "not_yet_valid", "revoked", "key_mismatch", "older"; "?" for others. */
const char *member_verdict_name(enum member_verdict v);

/* One sentence for an operator, e.g. "signed by another CA, or altered". */
const char *member_verdict_text(enum member_verdict v);

/* ---- kinds ------------------------------------------------------------------ */

/* "certificate", "root set", "revocation list", "member record",
 * "certificate request"; NULL for a byte that is no kind. */
const char *member_kind_name(uint8_t kind);

/* The label of the text form: "CERTIFICATE", "ROOT SET", "REVOCATION LIST",
 * "MEMBER RECORD", "CERTIFICATE REQUEST"; NULL for no kind. */
const char *member_kind_label(uint8_t kind);

/* ---- keys ------------------------------------------------------------------- */

/*
 * The record-signing key pair of the member whose yip private key is given:
 * seed = BLAKE2b-256(key = yip_private, message = "yip record signing key v1"),
 * then Ed25519 from that seed. Deterministic, so a member keeps one secret.
 */
void member_sign_keypair(const uint8_t yip_private[YIP_KEY_LEN],
                         uint8_t ed_public[MEMBER_SIGN_PUBLIC],
                         uint8_t ed_secret[MEMBER_SIGN_SECRET]);

/* A CA key pair from a 32-byte seed (what a CA key file holds). */
void member_ca_keypair(const uint8_t seed[32], uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                       uint8_t ca_secret[MEMBER_SIGN_SECRET]);

/* ---- certificates ------------------------------------------------------------- */

struct member_cert {
	struct wire_cert f;         /* the fields */
	size_t len;                 /* bytes in raw */
	uint8_t raw[WIRE_CERT_MAX]; /* the certificate as signed, signature included */
};

/* Decodes a certificate: MEMBER_OK or MEMBER_MALFORMED. */
enum member_verdict member_cert_parse(struct member_cert *c, const uint8_t *in, size_t len);

/* Signs fields (its sig is ignored) with the CA's secret key into c.
 * 0, or -1 if a field is invalid (as the decoder would refuse it). */
int member_cert_sign(struct member_cert *c, const struct wire_cert *fields,
                     const uint8_t ca_secret[MEMBER_SIGN_SECRET]);

/*
 * Is c, by itself, a valid certificate of network under the CA at time now?
 * In this order, the cheap checks before the signature: MEMBER_MALFORMED,
 * MEMBER_WRONG_NETWORK, MEMBER_NOT_YET_VALID, MEMBER_EXPIRED, then
 * MEMBER_WRONG_CA (the Ed25519 verification), else MEMBER_OK.
 */
enum member_verdict member_cert_check(const struct member_cert *c,
                                      const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                      const char *network, uint64_t now_unix);

struct member_revocations;

/*
 * Admission of a peer that presented c for the static key it proved in a
 * handshake: member_cert_check's cheap checks, then MEMBER_KEY_MISMATCH if c
 * is for another key, then MEMBER_REVOKED if revs (may be NULL) lists it,
 * and only then the signature (MEMBER_WRONG_CA): a stranger's certificate
 * that fails a cheap check costs no Ed25519 verification.
 */
enum member_verdict member_cert_admit(const struct member_cert *c,
                                      const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                      const char *network, const struct member_revocations *revs,
                                      const uint8_t presented_key[YIP_KEY_LEN], uint64_t now_unix);

/* BLAKE2b-256 of the certificate's bytes: what a revocation by hash names. */
void member_cert_hash(const struct member_cert *c, uint8_t out[MEMBER_HASH_LEN]);

/* ---- certificate requests ------------------------------------------------------ */

struct member_request {
	struct wire_request f;
	size_t len;
	uint8_t raw[WIRE_REQUEST_LEN];
};

/* The request of the member whose yip private key is given: its public
 * key and signing key, signed by the signing key (proof of possession).
 * 0, or -1 if the private key is all zeros. */
int member_request_make(struct member_request *r, const uint8_t yip_private[YIP_KEY_LEN]);

enum member_verdict member_request_parse(struct member_request *r, const uint8_t *in, size_t len);

/* MEMBER_OK, or MEMBER_BAD_SIGNATURE if the self-signature does not verify. */
enum member_verdict member_request_check(const struct member_request *r);

/* ---- root sets ------------------------------------------------------------------ */

struct member_roots {
	struct wire_roots f;
	size_t len;
	uint8_t raw[WIRE_ROOTS_MAX];
};

enum member_verdict member_roots_parse(struct member_roots *r, const uint8_t *in, size_t len);

/* Signs fields into r; 0, or -1 if a field is invalid. */
int member_roots_sign(struct member_roots *r, const struct wire_roots *fields,
                      const uint8_t ca_secret[MEMBER_SIGN_SECRET]);

/*
 * MEMBER_WRONG_CA, MEMBER_WRONG_NETWORK, or MEMBER_OLDER if r's serial is
 * below seen_serial (the highest serial of a valid set seen so far; 0 if
 * none), else MEMBER_OK. An equal serial is MEMBER_OK: the same set again.
 */
enum member_verdict member_roots_check(const struct member_roots *r,
                                       const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                       const char *network, uint64_t seen_serial);

/* True if a should replace b: a higher serial. */
bool member_roots_newer(const struct member_roots *a, const struct member_roots *b);

/* ---- revocation lists ----------------------------------------------------------- */

/*
 * A revocation list. It is large (WIRE_REVOCATIONS_MAX is 135 KB): keep it on
 * the heap. f.entries is NULL here; member_revocations_entries gives them,
 * so the struct may be copied with memcpy.
 */
struct member_revocations {
	struct wire_revocations f;
	size_t len;
	uint8_t raw[WIRE_REVOCATIONS_MAX];
};

enum member_verdict member_revocations_parse(struct member_revocations *r, const uint8_t *in,
                                             size_t len);

/* The list's f.n entries of WIRE_REVOKED_ENTRY bytes, in ascending order. */
const uint8_t *member_revocations_entries(const struct member_revocations *r);

/*
 * Signs a list of n entries (WIRE_REVOKED_ENTRY bytes each, in any order,
 * duplicates allowed: they are sorted and merged) into r. 0; -1 if an entry
 * or the network is invalid, or more than WIRE_REVOKED_MAX remain; -2 if
 * out of memory.
 */
int member_revocations_sign(struct member_revocations *r, const char *network, uint64_t serial,
                            uint64_t issued_at, const uint8_t *entries, size_t n,
                            const uint8_t ca_secret[MEMBER_SIGN_SECRET]);

/* As member_roots_check. */
enum member_verdict member_revocations_check(const struct member_revocations *r,
                                             const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                             const char *network, uint64_t seen_serial);

bool member_revocations_newer(const struct member_revocations *a,
                              const struct member_revocations *b);

/* True if r lists id (32 bytes) as what (enum wire_revoked_what); a binary search. */
bool member_revocations_has(const struct member_revocations *r, uint8_t what, const uint8_t *id);

/* True if r revokes c: by its member key or by its hash. r may be NULL (false). */
bool member_is_revoked(const struct member_revocations *r, const struct member_cert *c);

/* ---- member records ------------------------------------------------------------- */

struct member_record {
	struct member_cert cert; /* the certificate inside the record */
	struct wire_record f;    /* seq, expires, endpoints, signature */
	size_t len;
	uint8_t raw[WIRE_RECORD_MAX];
};

/*
 * Builds and signs the record of the member holding cert: seq (Unix time in
 * milliseconds at signing, so it grows across restarts), expires (Unix
 * seconds) and n endpoints (at most WIRE_RECORD_ENDPOINTS, each
 * wire_endpoint_ok, no duplicates). sign_secret must be the secret of
 * cert's signing key. 0, or -1 if anything is invalid.
 */
int member_record_sign(struct member_record *r, const struct member_cert *cert, uint64_t seq,
                       uint64_t expires, const union yip_sockaddr *endpoints, size_t n,
                       const uint8_t sign_secret[MEMBER_SIGN_SECRET]);

enum member_verdict member_record_parse(struct member_record *r, const uint8_t *in, size_t len);

/*
 * Is r a valid record now? Its certificate passes member_cert_check (that
 * verdict), is not revoked by revs (may be NULL; MEMBER_REVOKED), the
 * record's signature verifies under the certificate's signing key
 * (MEMBER_BAD_SIGNATURE), and it has not expired (MEMBER_EXPIRED).
 */
enum member_verdict member_record_check(const struct member_record *r,
                                        const uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                                        const char *network, const struct member_revocations *revs,
                                        uint64_t now_unix);

/* True if a should replace b: the same member key and a higher seq. */
bool member_record_newer(const struct member_record *a, const struct member_record *b);

/* ---- text form ------------------------------------------------------------------ */

/*
 * One object per file:
 *
 *   # optional comment lines (yip-ca writes a summary here)
 *   -----BEGIN YIP CERTIFICATE-----
 *   base64 (RFC 4648, with padding), 64 characters a line
 *   -----END YIP CERTIFICATE-----
 *
 * The label is the kind's (member_kind_label); the object's own first byte
 * must agree with it.
 */
#define MEMBER_ARMOR_COLS 64

/* Bytes member_armor writes for an object of len bytes, the NUL included. */
size_t member_armor_size(size_t len);

/* Writes the text form of obj (a whole object; its first byte names its
 * kind) and a NUL into out. Returns the length without the NUL, or 0 for an
 * unknown kind or too small a buffer. */
size_t member_armor(char *out, size_t cap, const uint8_t *obj, size_t len);

/*
 * Reads the text form from text (tlen bytes; need not be NUL-terminated)
 * into out (cap bytes) and its length into *out_len. want is the kind
 * expected, or 0 for any (then out[0] says which). Blank lines, leading and
 * trailing spaces and tabs, CRLF line ends, a UTF-8 byte order mark and
 * '#' comment lines outside the armor are ignored; anything else is an
 * error. The object's header is checked (kind, version, length); its
 * fields are the parse functions' business. Returns 0, or -1 with a
 * message in err, e.g. "line 3: not base64 ('!' in column 7)", "this is a
 * root set, not a certificate", "truncated: 120 of 231 bytes".
 */
int member_unarmor(const char *text, size_t tlen, uint8_t want, uint8_t *out, size_t cap,
                   size_t *out_len, char *err, size_t errlen);

/* ---- descriptions ----------------------------------------------------------- */

/* "2025-03-01T12:00:00Z" (UTC, ISO 8601). out holds MEMBER_TIME_LEN bytes. */
#define MEMBER_TIME_LEN 32
void member_format_time(char out[MEMBER_TIME_LEN], uint64_t unix_s);

/*
 * Where now is in a validity window, in words: "expires in 364 days",
 * "expires in 5 hours", "expired 3 days ago", "not valid for another 2
 * days". Days are whole days rounded down; under a day, hours; under an
 * hour, minutes.
 */
void member_format_validity(char *out, size_t outlen, uint64_t not_before, uint64_t not_after,
                            uint64_t now);

/*
 * Describes an object in words, one line at a time ("  name:        laptop"),
 * for yip-ca show and yipctl: every field, times as UTC dates with how
 * long they are from now, keys as 64 hex digits (the form yip prints public
 * keys in everywhere), a member's key-derived address, a certificate's
 * hash. emit gets each line without a newline.
 */
typedef void member_emit_fn(void *arg, const char *line);

void member_cert_describe(const struct member_cert *c, uint64_t now, member_emit_fn *emit,
                          void *arg);
void member_request_describe(const struct member_request *r, member_emit_fn *emit, void *arg);
void member_roots_describe(const struct member_roots *r, member_emit_fn *emit, void *arg);
void member_revocations_describe(const struct member_revocations *r, member_emit_fn *emit,
                                 void *arg);
void member_record_describe(const struct member_record *r, uint64_t now, member_emit_fn *emit,
                            void *arg);

#endif
