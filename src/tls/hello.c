/*
 * The ClientHello's per-connection choices, made as Chrome makes them.
 * tls_ch_put (src/wire/tls.c) writes the fixed parts. Where each value
 * comes from (../shared/reference/mimicry.md §B, which cites uTLS's
 * HelloChrome_133 in u_parrots.go and BoringSSL's behaviour):
 *
 *   - cipher suites: GREASE, then 1301 1302 1303 c02b c02f c02c c030 cca9
 *     cca8 c013 c014 009c 009d 002f 0035 (HelloChrome_133; sorted, their
 *     JA4 hash is 8daaf6152771);
 *   - extensions: GREASE (empty) first and GREASE (one zero byte) last,
 *     between them in a fresh random order each connection (Chrome since
 *     110 permutes every extension but GREASE, padding and pre_shared_key):
 *     server_name, extended_master_secret, renegotiation_info,
 *     supported_groups (GREASE, 11ec, 001d, 0017, 0018), ec_point_formats
 *     (uncompressed), session_ticket (empty), ALPN (h2, http/1.1),
 *     status_request (OCSP), signature_algorithms (0403 0804 0401 0503 0805
 *     0501 0806 0601), signed_certificate_timestamp, key_share (GREASE with
 *     one zero byte, X25519MLKEM768 of 1216 bytes, X25519), psk_key_exchange_modes
 *     (psk_dhe_ke), supported_versions (GREASE, 1.3, 1.2), compress_certificate
 *     (brotli), application_settings 0x44cd (h2), encrypted_client_hello
 *     0xfe0d as GREASE (outer, HKDF-SHA256/AES-128-GCM, a random config id,
 *     a random 32-byte enc, a random payload of 144, 176, 208 or 240 bytes:
 *     HelloChrome_133's candidate lengths 128..224 plus the 16-byte tag);
 *   - GREASE: one random value per role as BoringSSL has them (cipher,
 *     group, the two extensions, version); the group's is shared by
 *     supported_groups and key_share, and the second extension's differs
 *     from the first (BoringSSL flips it by 0x1010 when they collide);
 *   - legacy_session_id: 32 random bytes (middlebox compatibility), random:
 *     32 random bytes.
 *
 * The X25519MLKEM768 share is an ML-KEM-768 encapsulation key in form (3 x
 * 256 coefficients of 12 bits, each below q = 3329, then a 32-byte seed
 * rho) followed by the X25519 key. Nothing can decapsulate to it: this
 * client never accepts that group from a server (tls.c).
 */
#include <string.h>

#include "tls/tls.h"

#define MLKEM_Q 3329

static uint16_t grease_value(tls_rand_fn *rand, void *ctx)
{
	uint8_t b;

	rand(ctx, &b, 1);
	b &= 0xf;
	return (uint16_t)((b << 12) | 0x0a00 | (b << 4) | 0x0a);
}

/* A uniform value below n (n small) by rejection. */
static unsigned rand_below(tls_rand_fn *rand, void *ctx, unsigned n)
{
	unsigned limit = 65536 - 65536 % n;
	uint8_t b[2];
	unsigned v;

	do {
		rand(ctx, b, 2);
		v = (unsigned)b[0] << 8 | b[1];
	} while (v >= limit);
	return v % n;
}

/* An encapsulation key's 768 coefficients, two to three bytes, then rho. */
static void mlkem_key(uint8_t *ek, tls_rand_fn *rand, void *ctx)
{
	for (size_t i = 0; i < 768; i += 2) {
		unsigned a = rand_below(rand, ctx, MLKEM_Q), b = rand_below(rand, ctx, MLKEM_Q);
		uint8_t *p = ek + i / 2 * 3;

		p[0] = (uint8_t)a;
		p[1] = (uint8_t)(a >> 8 | (b & 0xf) << 4);
		p[2] = (uint8_t)(b >> 4);
	}
	rand(ctx, ek + 1152, 32);
}

void tls_hello_choose(struct tls_ch *ch, tls_rand_fn *rand, void *rand_ctx, const char *sni,
                      const uint8_t x25519[TLS_X25519_LEN], uint8_t mlkem[TLS_MLKEMX_LEN],
                      uint8_t ech[TLS_ECH_GREASE_MAX])
{
	static const uint16_t ech_lens[4] = {144, 176, 208, 240};
	uint8_t b;

	memset(ch, 0, sizeof(*ch));
	rand(rand_ctx, ch->random, TLS_RANDOM_LEN);
	rand(rand_ctx, ch->sid, TLS_SID_MAX);
	ch->grease_cipher = grease_value(rand, rand_ctx);
	ch->grease_group = grease_value(rand, rand_ctx);
	ch->grease_ext1 = grease_value(rand, rand_ctx);
	ch->grease_ext2 = grease_value(rand, rand_ctx);
	if (ch->grease_ext2 == ch->grease_ext1)
		ch->grease_ext2 ^= 0x1010;
	ch->grease_version = grease_value(rand, rand_ctx);
	/* Fisher-Yates over the extensions between the two GREASE ones. */
	memcpy(ch->order, tls_ch_exts, sizeof(ch->order));
	for (unsigned i = TLS_CH_EXTS - 1; i > 0; i--) {
		unsigned j = rand_below(rand, rand_ctx, i + 1);
		uint16_t t = ch->order[i];

		ch->order[i] = ch->order[j];
		ch->order[j] = t;
	}
	ch->sni = sni;
	ch->sni_len = sni ? strlen(sni) : 0;
	mlkem_key(mlkem, rand, rand_ctx);
	memcpy(mlkem + TLS_MLKEM768_EK_LEN, x25519, TLS_X25519_LEN);
	ch->mlkem = mlkem;
	ch->x25519 = x25519;
	rand(rand_ctx, &ch->ech_config_id, 1);
	rand(rand_ctx, &b, 1);
	ch->ech_payload_len = ech_lens[b & 3];
	rand(rand_ctx, ech, 32 + ch->ech_payload_len);
	ch->ech_enc = ech;
	ch->ech_payload = ech + 32;
}
