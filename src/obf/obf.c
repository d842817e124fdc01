#include "obf/obf.h"

#include <sodium.h>
#include <string.h>

#include "wire/wire.h"

/* Every handshake, certificate and all, fits an envelope with room to vary. */
_Static_assert(WIRE_RESP_MAX <= WIRE_INIT_MAX, "the Init is the longest handshake");
_Static_assert(WIRE_INIT_MAX + OBF_ENV_OVERHEAD < OBF_ENV_MAX, "an Init fits an envelope");

#define LABEL_HP  "yip-obf-v1 hp"
#define LABEL_TAG "yip-obf-v1 tag"
#define LABEL_ENV "yip-obf-v1 env"
#define LABEL_PAD "yip-obf-v1 pad"

/* The mask block: three 16-byte header masks, then one pad-length mask per kind. */
#define MASK_LEN 64
#define MASK_PAD 48

/* Longest tag input: H', S, the largest pad, p', kind. */
#define TAG_IN_MAX (OBF_HDR + OBF_SAMPLE + 255 + 2)

_Static_assert(OBF_PAD_BELOW <= 256, "a pad length fits in one byte");
_Static_assert(3 * OBF_HDR + OBF_KINDS <= MASK_LEN, "the masks fit in one ChaCha20 block");

static void derive(uint8_t *out, size_t outlen, const char *label, const uint8_t psk[OBF_PSK_LEN])
{
	crypto_generichash(out, outlen, (const uint8_t *)label, strlen(label), psk, OBF_PSK_LEN);
}

void obf_keys_init(struct obf_keys *k, const uint8_t psk[OBF_PSK_LEN])
{
	derive(k->hp, sizeof(k->hp), LABEL_HP, psk);
	derive(k->tag, sizeof(k->tag), LABEL_TAG, psk);
	derive(k->env, sizeof(k->env), LABEL_ENV, psk);
	derive(k->pad, sizeof(k->pad), LABEL_PAD, psk);
}

void obf_keys_wipe(struct obf_keys *k)
{
	sodium_memzero(k, sizeof(*k));
}

size_t obf_frame_pad(size_t len)
{
	size_t w = len + OBF_TRAILER;

	if (w >= OBF_PAD_BELOW)
		return 0;
	return (w + OBF_PAD_BUCKET - 1) / OBF_PAD_BUCKET * OBF_PAD_BUCKET - w;
}

/* M = ChaCha20(hp, counter = LE32(S[0..4)), nonce = S[4..16)): the first block. */
static void mask(const struct obf_keys *k, const uint8_t sample[OBF_SAMPLE], uint8_t m[MASK_LEN])
{
	static const uint8_t zero[MASK_LEN];

	crypto_stream_chacha20_ietf_xor_ic(m, zero, MASK_LEN, sample + 4, wire_get32(sample),
	                                   k->hp);
}

/* tag = SipHash-2-4(H' | S | pad | p' | kind); tail is pad and p' (tail_len bytes). */
static void tag(const struct obf_keys *k, enum obf_kind kind, const uint8_t *d, const uint8_t *tail,
                size_t tail_len, uint8_t out[OBF_TAG])
{
	uint8_t in[TAG_IN_MAX];
	size_t n = OBF_HDR + OBF_SAMPLE;

	memcpy(in, d, n);
	memcpy(in + n, tail, tail_len);
	n += tail_len;
	in[n++] = (uint8_t)kind;
	crypto_shorthash_siphash24(out, in, n, k->tag);
}

size_t obf_frame_seal(const struct obf_keys *k, enum obf_kind kind, uint8_t *d, size_t len,
                      size_t pad)
{
	uint8_t m[MASK_LEN];
	uint8_t *tail = d + len;

	if (len < OBF_HDR + OBF_SAMPLE || pad > 255 || kind >= OBF_KINDS)
		return 0;
	mask(k, d + OBF_HDR, m);
	if (kind != OBF_JUNK)
		for (size_t i = 0; i < OBF_HDR; i++)
			d[i] ^= m[OBF_HDR * kind + i];
	/* The pad: ChaCha20(key pad, counter 0, nonce = S[4..16)), which only
	 * a holder of the key can tell from random bytes, and which costs no
	 * system call (the system random generator is one per call). */
	if (pad > 0) {
		memset(tail, 0, pad);
		crypto_stream_chacha20_ietf_xor_ic(tail, tail, pad, d + OBF_HDR + 4, 0, k->pad);
	}
	tail[pad] = (uint8_t)(pad ^ m[MASK_PAD + kind]);
	tag(k, kind, d, tail, pad + 1, tail + pad + 1);
	return len + pad + OBF_TRAILER;
}

int obf_frame_open(const struct obf_keys *k, unsigned accept, const uint8_t *d, size_t len,
                   uint8_t hdr[OBF_HDR], size_t *plain_len)
{
	uint8_t m[MASK_LEN], t[OBF_TAG];

	if (len < OBF_FRAME_MIN)
		return -1;
	mask(k, d + OBF_HDR, m);
	for (int kind = 0; kind < OBF_KINDS; kind++) {
		size_t pad = d[len - OBF_TRAILER] ^ m[MASK_PAD + kind];
		const uint8_t *tail;

		if (!(accept & 1U << kind) || len < OBF_FRAME_MIN + pad)
			continue;
		tail = d + len - OBF_TRAILER - pad;
		tag(k, (enum obf_kind)kind, d, tail, pad + 1, t);
		if (sodium_memcmp(t, d + len - OBF_TAG, OBF_TAG) != 0)
			continue;
		for (size_t i = 0; i < OBF_HDR; i++)
			hdr[i] = kind == OBF_JUNK ? 0 : d[i] ^ m[OBF_HDR * kind + i];
		*plain_len = len - OBF_TRAILER - pad;
		sodium_memzero(m, sizeof(m));
		return kind;
	}
	return -1;
}

size_t obf_env_seal(const struct obf_keys *k, uint8_t *out, size_t total, const uint8_t *msg,
                    size_t len)
{
	uint8_t *n = out, *c = out + OBF_ENV_NONCE;
	size_t plain = total - OBF_ENV_NONCE - crypto_aead_xchacha20poly1305_ietf_ABYTES;
	unsigned long long clen;

	if (len > 0xffff || total < len + OBF_ENV_OVERHEAD)
		return 0;
	randombytes_buf(n, OBF_ENV_NONCE);
	/* The plaintext is built where the ciphertext goes: sealed in place. */
	wire_put16(c, (uint16_t)len);
	memcpy(c + 2, msg, len);
	memset(c + 2 + len, 0, plain - 2 - len);
	crypto_aead_xchacha20poly1305_ietf_encrypt(c, &clen, c, plain, NULL, 0, NULL, n, k->env);
	return total;
}

size_t obf_env_open(const struct obf_keys *k, const uint8_t *d, size_t len, uint8_t *out)
{
	unsigned long long plen;
	size_t n;

	if (len < OBF_ENV_OVERHEAD || len > OBF_ENV_MAX)
		return 0;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(
	        out, &plen, NULL, d + OBF_ENV_NONCE, len - OBF_ENV_NONCE, NULL, 0, d, k->env) != 0)
		return 0;
	n = wire_get16(out);
	if (n == 0 || n + 2 > plen)
		return 0;
	memmove(out, out + 2, n);
	return n;
}

size_t obf_junk_len(void)
{
	return OBF_JUNK_MIN + randombytes_uniform(OBF_JUNK_MAX - OBF_JUNK_MIN + 1);
}

/* An envelope's length: uniform over [least, OBF_ENV_MAX], within cap. */
static size_t env_len(size_t len, size_t cap)
{
	size_t least = len + OBF_ENV_OVERHEAD, most = cap < OBF_ENV_MAX ? cap : OBF_ENV_MAX;

	if (least > most)
		return 0;
	return least + randombytes_uniform((uint32_t)(most - least + 1));
}

size_t obf_wrap(const struct obf_keys *k, uint8_t *d, size_t len, size_t cap, bool inner_plain)
{
	uint8_t msg[WIRE_INIT_MAX];
	size_t total, inner, pad;

	if (len == 0)
		return 0;
	switch (d[0]) {
	case 0: /* junk */
		if (len < OBF_FRAME_MIN || len > cap)
			return 0;
		randombytes_buf(d, len - OBF_TRAILER);
		return obf_frame_seal(k, OBF_JUNK, d, len - OBF_TRAILER, 0);
	case WIRE_INIT:
	case WIRE_RESP:
	case WIRE_COOKIE:
		if (len > sizeof(msg) || (total = env_len(len, cap)) == 0)
			return 0;
		memcpy(msg, d, len);
		total = obf_env_seal(k, d, total, msg, len);
		sodium_memzero(msg, len);
		return total;
	case WIRE_DATA:
	case WIRE_REPAIR:
	case WIRE_REPORT:
	case WIRE_CTRL:
		pad = obf_frame_pad(len);
		if (len + pad + OBF_TRAILER > cap)
			return 0;
		return obf_frame_seal(k, OBF_SESSION, d, len, pad);
	case WIRE_RELAY:
		if (len < WIRE_RELAY_HDR ||
		    (d[1] != WIRE_RELAY_TO_SERVER && d[1] != WIRE_RELAY_FROM_SERVER))
			return 0;
		inner = len - WIRE_RELAY_HDR;
		if (inner_plain) {
			if (cap < WIRE_RELAY_HDR + OBF_TRAILER)
				return 0;
			inner = obf_wrap(k, d + WIRE_RELAY_HDR, inner,
			                 cap - WIRE_RELAY_HDR - OBF_TRAILER, false);
			if (inner == 0)
				return 0;
		}
		if (WIRE_RELAY_HDR + inner + OBF_TRAILER > cap)
			return 0;
		return obf_frame_seal(k,
		                      d[1] == WIRE_RELAY_TO_SERVER ? OBF_RELAY_UP : OBF_RELAY_DOWN,
		                      d, WIRE_RELAY_HDR + inner, 0);
	default:
		return 0;
	}
}

static bool session_type(uint8_t t)
{
	return t == WIRE_DATA || t == WIRE_REPAIR || t == WIRE_REPORT || t == WIRE_CTRL;
}

enum obf_result obf_open(const struct obf_keys *k, const uint8_t *d, size_t len, uint8_t *out,
                         size_t *out_len, int relay_dir, bool open_inner)
{
	unsigned accept = 1U << OBF_SESSION | 1U << OBF_JUNK;
	size_t plain, inner;
	enum obf_result r;
	int kind;

	if (relay_dir == WIRE_RELAY_TO_SERVER)
		accept |= 1U << OBF_RELAY_UP;
	else if (relay_dir == WIRE_RELAY_FROM_SERVER)
		accept |= 1U << OBF_RELAY_DOWN;
	kind = obf_frame_open(k, accept, d, len, out, &plain);
	switch (kind) {
	case OBF_SESSION:
		if (!session_type(out[0]))
			return OBF_BAD;
		memcpy(out + OBF_HDR, d + OBF_HDR, plain - OBF_HDR);
		*out_len = plain;
		return OBF_OK;
	case OBF_RELAY_UP:
	case OBF_RELAY_DOWN:
		if (out[0] != WIRE_RELAY || out[1] != (uint8_t)relay_dir)
			return OBF_BAD;
		inner = plain - WIRE_RELAY_HDR;
		if (!open_inner) {
			memcpy(out + WIRE_RELAY_HDR, d + WIRE_RELAY_HDR, inner);
			*out_len = plain;
			return OBF_OK;
		}
		r = obf_open(k, d + WIRE_RELAY_HDR, inner, out + WIRE_RELAY_HDR, &inner, -1, false);
		if (r != OBF_OK)
			return OBF_BAD; /* relayed junk is no more legitimate than any other forgery
			                 */
		*out_len = WIRE_RELAY_HDR + inner;
		return OBF_OK;
	case OBF_JUNK:
		return OBF_IGNORED;
	default:
		break;
	}
	plain = obf_env_open(k, d, len, out);
	if (plain == 0 || (out[0] != WIRE_INIT && out[0] != WIRE_RESP && out[0] != WIRE_COOKIE))
		return OBF_BAD;
	*out_len = plain;
	return OBF_OK;
}
