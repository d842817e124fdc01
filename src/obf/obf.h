/*
 * Obfuscation (obf_psk): the layer that makes every datagram yip sends look
 * like uniformly random bytes, of lengths that do not name its type, to
 * anyone without the network's pre-shared key; and that lets a receiver
 * drop anything else before doing any other work. docs/obfuscation.md has
 * the threat model and the reasoning; docs/protocol.md §14 the format.
 *
 * Keys, from the 32-byte obf_psk (keyed BLAKE2b, RFC 7693):
 *
 *   hp  = BLAKE2b(outlen 32, key = psk, "yip-obf-v1 hp")   header protection (ChaCha20)
 *   tag = BLAKE2b(outlen 16, key = psk, "yip-obf-v1 tag")  frame tags (SipHash-2-4)
 *   env = BLAKE2b(outlen 32, key = psk, "yip-obf-v1 env")  envelopes (XChaCha20-Poly1305)
 *   pad = BLAKE2b(outlen 32, key = psk, "yip-obf-v1 pad")  frame padding (ChaCha20)
 *
 * A frame carries a datagram that has a 16-byte header followed by at least
 * 16 bytes that already look random (Data, Repair, Report and Ctrl: AEAD
 * ciphertext; a Relay: the obfuscated datagram it carries):
 *
 *   H' (16) | B (>= 16) | pad (p) | p' (1) | tag (8)
 *
 *   S   = B[0..16), the sample
 *   M   = ChaCha20(key hp, block counter = LE32(S[0..4)), nonce = S[4..16)), 64 bytes
 *   H'  = header XOR M[16*kind .. 16*kind+16)      (kinds 0..2; kind 3 has no header)
 *   p'  = p XOR M[48 + kind]
 *   tag = SipHash-2-4(key tag, H' | S | pad | p' | kind)
 *
 * kind: 0 a session datagram (Data, Repair, Report, Ctrl), 1 a Relay to a
 * rendezvous server, 2 a Relay from one, 3 junk (random bytes a receiver
 * that has the key throws away). Frames shorter than OBF_PAD_BELOW are
 * padded to a multiple of OBF_PAD_BUCKET with
 *
 *   pad = ChaCha20(key pad, block counter = 0, nonce = S[4..16))[0..p)
 *
 * which looks random to anyone without the key and costs no system call
 * per datagram (the system random generator does).
 *
 * An envelope carries a handshake (Init, Resp, Cookie), which has nothing
 * random to sample and fixed lengths:
 *
 *   N (24, random) | XChaCha20-Poly1305(key env, nonce N, ad empty,
 *                                       len u16 | datagram | zeros)
 *
 * and is padded to a length drawn uniformly from [its least length,
 * OBF_ENV_MAX].
 *
 * The module is pure apart from the system random generator (nonces,
 * padding, junk): no allocation, no I/O.
 */
#ifndef YIP_OBF_OBF_H
#define YIP_OBF_OBF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OBF_PSK_LEN      32
#define OBF_HDR          16 /* the masked header */
#define OBF_SAMPLE       16
#define OBF_TAG          8
#define OBF_TRAILER      (1 + OBF_TAG)                        /* p' and the tag */
#define OBF_FRAME_MIN    (OBF_HDR + OBF_SAMPLE + OBF_TRAILER) /* 41 */
#define OBF_PAD_BUCKET   64
#define OBF_PAD_BELOW    256 /* frames shorter than this are padded to a bucket */
#define OBF_ENV_NONCE    24
#define OBF_ENV_OVERHEAD (OBF_ENV_NONCE + 2 + 16) /* nonce, length, tag */
/* The longest envelope. A handshake with a certificate in it (an Init of
 * up to WIRE_INIT_MAX, 917 bytes) still gets a spread of lengths, and a
 * relayed envelope (a relay frame's 25 bytes more) fits a 1280-byte IPv6
 * path with its IPv6 and UDP headers: 1200 + 25 + 48 = 1273. */
#define OBF_ENV_MAX  1200
#define OBF_JUNK_MIN 64
#define OBF_JUNK_MAX 1024

/* Bytes obf_wrap adds at most to a datagram that is not a handshake (a
 * relayed one: two trailers). Handshakes grow to at most OBF_ENV_MAX (+ a
 * relay frame's header and trailer). */
#define OBF_MAX_GROWTH (2 * OBF_TRAILER)

enum obf_kind { OBF_SESSION = 0, OBF_RELAY_UP = 1, OBF_RELAY_DOWN = 2, OBF_JUNK = 3, OBF_KINDS };

struct obf_keys {
	uint8_t hp[32];
	uint8_t tag[16];
	uint8_t env[32];
	uint8_t pad[32];
};

void obf_keys_init(struct obf_keys *k, const uint8_t psk[OBF_PSK_LEN]);
void obf_keys_wipe(struct obf_keys *k);

/* Random padding for a frame whose datagram is len bytes: what makes the
 * frame a multiple of OBF_PAD_BUCKET if it is shorter than OBF_PAD_BELOW. */
size_t obf_frame_pad(size_t len);

/*
 * Makes a frame of the len-byte datagram at d (an OBF_HDR-byte header, then
 * at least OBF_SAMPLE bytes), in place: pad random bytes and the trailer
 * are appended. Returns the frame's length (len + pad + OBF_TRAILER), or 0
 * if len is too short.
 */
size_t obf_frame_seal(const struct obf_keys *k, enum obf_kind kind, uint8_t *d, size_t len,
                      size_t pad);

/*
 * Checks a frame of len bytes against every kind in accept (a bit set of
 * 1 << kind), cheapest first. On success writes the unmasked header to
 * hdr, the datagram's length (header and body, no padding or trailer) to
 * *plain_len and returns the kind; -1 if no kind's tag matches. d is not
 * changed. Constant-time in the tag compare.
 */
int obf_frame_open(const struct obf_keys *k, unsigned accept, const uint8_t *d, size_t len,
                   uint8_t hdr[OBF_HDR], size_t *plain_len);

/*
 * An envelope of total bytes (at least len + OBF_ENV_OVERHEAD) around the
 * len-byte datagram msg, written to out. Returns total, or 0 if it does
 * not fit. out and msg must not overlap.
 */
size_t obf_env_seal(const struct obf_keys *k, uint8_t *out, size_t total, const uint8_t *msg,
                    size_t len);

/* Opens an envelope of len bytes into out (len bytes of room); the
 * datagram starts at out. Returns its length, 0 if not authentic. */
size_t obf_env_open(const struct obf_keys *k, const uint8_t *d, size_t len, uint8_t *out);

/*
 * Obfuscates the plain datagram at d (len bytes, in a buffer of cap bytes)
 * in place, by its type byte: Init, Resp and Cookie in an envelope of a
 * random length; Data, Repair, Report and Ctrl in a session frame; a Relay
 * in a relay frame of its direction, around its payload wrapped first if
 * inner_plain (a node) or as it is (a server, which forwards a payload
 * already wrapped). Type 0 (WIRE_JUNK) asks for len bytes of junk.
 * Returns the length to send, 0 if the datagram cannot be wrapped (an
 * unknown type, too short, or no room).
 */
size_t obf_wrap(const struct obf_keys *k, uint8_t *d, size_t len, size_t cap, bool inner_plain);

/* What obf_open made of a datagram. */
enum obf_result {
	OBF_OK = 0,      /* out holds the plain datagram */
	OBF_BAD = -1,    /* not authentic, or not a layout allowed here: drop and count */
	OBF_IGNORED = -2 /* authentic junk: discard (not a drop) */
};

/*
 * Removes the obfuscation of the len-byte datagram d into out (len bytes
 * of room; not overlapping d). relay_dir is the direction of Relay this
 * receiver takes (WIRE_RELAY_FROM_SERVER at a node, WIRE_RELAY_TO_SERVER
 * at a server; -1 none); open_inner: open a Relay's payload too (a node),
 * else it is copied as it is (a server forwards it). The plain datagram's
 * type is checked against how it came: a session frame must hold Data,
 * Repair, Report or Ctrl, an envelope Init, Resp or Cookie, a relay frame
 * a Relay of relay_dir (its payload, when opened, anything but a Relay).
 */
enum obf_result obf_open(const struct obf_keys *k, const uint8_t *d, size_t len, uint8_t *out,
                         size_t *out_len, int relay_dir, bool open_inner);

/* A junk length: uniform in [OBF_JUNK_MIN, OBF_JUNK_MAX]. */
size_t obf_junk_len(void);

#endif
