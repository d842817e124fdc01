/*
 * The ClientHello's per-connection choices, made as Chrome makes them.
 * tls_ch_put (src/wire/tls.c) writes the fixed parts. Where each value
 * comes from: Debian 12's chromium 156 as captured
 * (docs/benchmarks/log/chromium-hello.md), on the ground of
 * ../shared/reference/mimicry.md §B (uTLS's HelloChrome_133, BoringSSL's
 * behaviour):
 *
 *   - cipher suites: GREASE, then 1301 1302 1303 c02b c02f c02c c030 cca9
 *     cca8 c013 c014 009c 009d 002f 0035 (sorted, their JA4 hash is
 *     8daaf6152771);
 *   - extensions: GREASE (empty) first and GREASE (one zero byte) last,
 *     between them in a fresh random order each connection (Chrome since
 *     110 permutes every extension but GREASE, padding and pre_shared_key):
 *     server_name, extended_master_secret, renegotiation_info,
 *     supported_groups (GREASE, 11ec, 001d, 0017, 0018), ec_point_formats
 *     (uncompressed), session_ticket (empty), ALPN (h2, http/1.1),
 *     status_request (OCSP), signature_algorithms (GREASE, the ML-DSA
 *     trio 0904 0905 0906, 0403 0804 0401 0503 0805 0501 0806 0601),
 *     signed_certificate_timestamp, key_share (GREASE with one zero byte,
 *     X25519MLKEM768 of 1216 bytes, X25519), psk_key_exchange_modes
 *     (psk_dhe_ke), supported_versions (GREASE, 1.3, 1.2), compress_certificate
 *     (brotli), application_settings 0x44cd (h2), trust_anchors 0xca34
 *     (chromium's 28 ids, always the same, src/wire/tls.c),
 *     encrypted_client_hello 0xfe0d as GREASE (outer,
 *     HKDF-SHA256/AES-128-GCM, a random config id, a random 32-byte enc, a
 *     random payload of 144, 176, 208 or 240 bytes: candidate lengths
 *     128..224 plus the 16-byte tag);
 *     with these 17 JA4 is t13d1517h2_8daaf6152771_cb7bf5808d99, chromium's;
 *   - GREASE: one random value per role as BoringSSL has them (cipher,
 *     group, the two extensions, version, signature algorithm), each drawn
 *     on its own; the group's is shared by
 *     supported_groups and key_share, and the second extension's differs
 *     from the first (BoringSSL flips it by 0x1010 when they collide);
 *   - legacy_session_id: 32 random bytes (middlebox compatibility), random:
 *     32 random bytes.
 *
 * The hello of a QUIC connection (quic) is chromium 156's QUIC hello as
 * captured (tests/tls/quic_chromium.md): the same random, key shares, ECH
 * GREASE and trust anchors, but no GREASE at all, no legacy_session_id, the
 * three TLS 1.3 suites, 12 extensions in a fresh random order (trust_anchors,
 * server_name, psk_key_exchange_modes, signature_algorithms without ML-DSA
 * and with rsa_pkcs1_sha1 last, quic_transport_parameters,
 * compress_certificate, supported_versions 1.3 alone, ECH GREASE,
 * application_settings h3, supported_groups, ALPN h3, key_share). The
 * transport parameters themselves are the caller's (tls_quic_tp_put for
 * chromium's).
 *
 * The X25519MLKEM768 share is the caller's (tls.c makes a fresh ML-KEM-768
 * key pair and an X25519 key of its own for it: chromium's hybrid half is
 * not its x25519 share).
 */
#include <string.h>

#include "tls/tls.h"

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

void tls_hello_choose(struct tls_ch *ch, tls_rand_fn *rand, void *rand_ctx, const char *sni,
                      const uint8_t x25519[TLS_X25519_LEN], const uint8_t mlkem[TLS_MLKEMX_LEN],
                      uint8_t ech[TLS_ECH_GREASE_MAX], bool quic)
{
	static const uint16_t ech_lens[4] = {144, 176, 208, 240};
	unsigned n = quic ? TLS_CH_QUIC_EXTS : TLS_CH_EXTS;
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
	ch->grease_sigalg = grease_value(rand, rand_ctx);
	/* Fisher-Yates over the extensions between the two GREASE ones. */
	if (quic)
		memcpy(ch->order, tls_ch_quic_exts, sizeof(tls_ch_quic_exts));
	else
		memcpy(ch->order, tls_ch_exts, sizeof(ch->order));
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = rand_below(rand, rand_ctx, i + 1);
		uint16_t t = ch->order[i];

		ch->order[i] = ch->order[j];
		ch->order[j] = t;
	}
	ch->quic = quic;
	ch->sni = sni;
	ch->sni_len = sni ? strlen(sni) : 0;
	ch->mlkem = mlkem;
	ch->x25519 = x25519;
	rand(rand_ctx, &ch->ech_config_id, 1);
	rand(rand_ctx, &b, 1);
	ch->ech_payload_len = ech_lens[b & 3];
	rand(rand_ctx, ech, 32 + ch->ech_payload_len);
	ch->ech_enc = ech;
	ch->ech_payload = ech + 32;
}

void tls_quic_tp_chromium(struct tls_quic_tp *tp, tls_rand_fn *rand, void *rand_ctx,
                          const uint8_t *scid, size_t scid_len)
{
	uint8_t b[8];
	uint64_t n = 0;
	uint32_t v;

	memset(tp, 0, sizeof(*tp));
	tp->max_idle_timeout = 30000;
	tp->max_udp_payload_size = 1472;
	tp->initial_max_data = 15728640;
	tp->initial_max_stream_data_bidi_local = 6291456;
	tp->initial_max_stream_data_bidi_remote = 6291456;
	tp->initial_max_stream_data_uni = 6291456;
	tp->initial_max_streams_bidi = 100;
	tp->initial_max_streams_uni = 103;
	tp->max_datagram_frame_size = 65536;
	tp->scid = scid;
	tp->scid_len = scid_len;
	memcpy(tp->google_options, "ORIG", 4);
	/* A GREASE version: every byte 0x?a, the high nibbles random. */
	rand(rand_ctx, b, 5);
	v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	tp->grease_version = (v & 0xf0f0f0f0u) | 0x0a0a0a0au;
	tp->grease_version_first = b[4] & 1;
	/* A GREASE id 27 + 31 N below 2^62, an 8-byte varint; its value
	 * 0..15 random bytes (chromium's, 11 seen: 1 to 15). */
	rand(rand_ctx, b, 8);
	for (unsigned i = 0; i < 8; i++)
		n = n << 8 | b[i];
	tp->grease_id = 27 + 31 * (n % ((((uint64_t)1 << 62) - 27) / 31));
	tp->grease_len = rand_below(rand, rand_ctx, 16);
	rand(rand_ctx, tp->grease, tp->grease_len);
	for (unsigned i = 0; i < TLS_QUIC_TPS; i++)
		tp->order[i] = (uint8_t)i;
	for (unsigned i = TLS_QUIC_TPS - 1; i > 0; i--) {
		unsigned j = rand_below(rand, rand_ctx, i + 1);
		uint8_t t = tp->order[i];

		tp->order[i] = tp->order[j];
		tp->order[j] = t;
	}
}
