/*
 * Every TLS decoder in src/wire (wire/tls.h) on arbitrary bytes. The first
 * byte picks the layout; the rest is the input. Whatever a decoder hands
 * back must lie inside the input (ASan catches reads past it), and a
 * ClientHello the encoder writes must decode to what was put in (the QUIC
 * hello and its transport parameters too). 10: the transport parameters
 * walker: every value inside, offsets only forward, and tls_quic_tp_ok
 * true only when the walk ends cleanly.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/tls.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tls_ch_view v;
	const uint8_t *in, *p;
	size_t len, n;

	if (size == 0)
		return 0;
	in = data + 1;
	len = size - 1;
	switch (data[0] % 12) {
	case 0:
		if (tls_ch_get(&v, in, len)) {
			CHECK(inside(v.sni, v.sni_len, in, len));
			CHECK(inside(v.alpn, v.alpn_len, in, len));
			CHECK(v.mlkem == NULL || inside(v.mlkem, TLS_MLKEMX_LEN, in, len));
			CHECK(v.sid_len <= TLS_SID_MAX);
		}
		break;
	case 1: {
		struct tls_sh sh;

		if (tls_sh_get(&sh, in, len)) {
			CHECK(inside(sh.random, TLS_RANDOM_LEN, in, len));
			CHECK(inside(sh.sid, sh.sid_len, in, len) && sh.sid_len <= TLS_SID_MAX);
			CHECK(inside(sh.share, sh.share_len, in, len));
			CHECK(inside(sh.cookie, sh.cookie_len, in, len));
			CHECK(!sh.hrr || sh.share == NULL);
		}
		break;
	}
	case 2: {
		struct tls_ee ee;

		if (tls_ee_get(&ee, in, len))
			CHECK(inside(ee.alpn, ee.alpn_len, in, len));
		break;
	}
	case 3: {
		struct tls_chain ch;

		if (tls_cert_get(&ch, &n, in, len)) {
			CHECK(ch.n > 0 && ch.n <= TLS_CHAIN_MAX);
			for (size_t i = 0; i < ch.n; i++)
				CHECK(ch.len[i] > 0 && inside(ch.der[i], ch.len[i], in, len));
		}
		break;
	}
	case 4: {
		uint16_t scheme;

		if (tls_cv_get(&scheme, &p, &n, in, len))
			CHECK(n > 0 && inside(p, n, in, len));
		break;
	}
	case 5:
		(void)tls_nst_get(in, len);
		break;
	case 6: {
		bool req;
		uint8_t level, desc;

		(void)tls_ku_get(&req, in, len);
		(void)tls_alert_get(&level, &desc, in, len);
		break;
	}
	case 7: {
		struct tls_rec r;

		if (tls_rec_get(&r, in, len, TLS_REC_CIPHER) == 1)
			CHECK(r.len <= TLS_REC_CIPHER && len >= TLS_REC_HDR);
		break;
	}
	case 8: {
		uint8_t type;

		n = tls_hs_get(in, len, &type, &p, &len);
		CHECK(n == 0 || (n == TLS_HS_HDR + len && inside(p, len, in, size - 1)));
		break;
	}
	case 9: {
		/* A hello built from the input's bytes decodes to what went in. */
		static uint8_t key[TLS_MLKEMX_LEN], ech[32 + 240], out[TLS_CH_MAX];
		struct tls_ch ch;

		memset(&ch, 0, sizeof(ch));
		memcpy(ch.order, tls_ch_exts, sizeof(ch.order));
		for (unsigned i = 0; i + 1 < len && i < TLS_CH_EXTS; i++) {
			unsigned j = in[i] % TLS_CH_EXTS;
			uint16_t t = ch.order[i];

			ch.order[i] = ch.order[j];
			ch.order[j] = t;
		}
		ch.grease_cipher = ch.grease_group = ch.grease_version = 0x3a3a;
		ch.grease_ext1 = 0x0a0a;
		ch.grease_ext2 = 0x1a1a;
		ch.grease_sigalg = 0x4a4a;
		ch.sni = (const char *)in;
		ch.sni_len = len > 255 ? 255 : len;
		ch.mlkem = key;
		ch.x25519 = key;
		ch.ech_enc = ech;
		ch.ech_payload = ech + 32;
		ch.ech_payload_len = 144 + (len % 4) * 32;
		if (len % 3 == 0) {
			/* A second hello: one share, the input as the cookie. */
			ch.retry_group = TLS_GROUP_P256;
			ch.retry_share = key;
			ch.retry_share_len = 65;
			ch.cookie = in;
			ch.cookie_len = len > 200 ? 200 : len;
		}
		n = tls_ch_put(out, sizeof(out), &ch);
		CHECK(n > TLS_HS_HDR);
		CHECK(tls_ch_get(&v, out + TLS_HS_HDR, n - TLS_HS_HDR));
		CHECK(v.n_exts == (ch.sni_len ? 19u : 18u) + (ch.cookie_len > 0) &&
		      v.n_ciphers == 16);
		CHECK(v.n_shares == (ch.retry_group ? 1u : 3u));
		CHECK(v.sni_len == ch.sni_len &&
		      (ch.sni_len == 0 || memcmp(v.sni, in, v.sni_len) == 0));
		CHECK(v.ech_payload_len == ch.ech_payload_len);
		CHECK(v.n_sigalgs == 12 && v.sigalgs[0] == 0x4a4a && v.n_anchors == 28);
		break;
	}
	case 10: {
		size_t off = 0, vl, count = 0;
		uint64_t id;
		const uint8_t *v_;
		int r;

		while ((r = tls_quic_tp_next(in, len, &off, &id, &v_, &vl)) == 1) {
			CHECK(off <= len && inside(v_, vl, in, len));
			count++;
		}
		CHECK(r == 0 || r == -1);
		if (tls_quic_tp_ok(in, len))
			CHECK(r == 0 && off == len);
		if (r == -1)
			CHECK(!tls_quic_tp_ok(in, len));
		(void)count;
		break;
	}
	case 11: {
		/* A QUIC hello with chromium-shaped parameters from the input's bytes. */
		static uint8_t key[TLS_MLKEMX_LEN], ech[32 + 240], out[TLS_CH_MAX], tpb[512];
		struct tls_quic_tp tp;
		struct tls_ch ch;
		size_t tpn;

		memset(&tp, 0, sizeof(tp));
		for (unsigned i = 0; i < TLS_QUIC_TPS; i++)
			tp.order[i] = (uint8_t)i;
		for (unsigned i = 0; i < len && i < TLS_QUIC_TPS; i++) {
			unsigned j = in[i] % TLS_QUIC_TPS;
			uint8_t t = tp.order[i];

			tp.order[i] = tp.order[j];
			tp.order[j] = t;
		}
		tp.max_idle_timeout = len > 0 ? (uint64_t)in[0] << 24 : 30000;
		tp.initial_max_data = (uint64_t)len << 40;
		tp.grease_id = 27 + 31 * (uint64_t)len * 0x1234567;
		tp.grease_len = len % (TLS_QUIC_TP_GREASE_MAX + 1);
		tp.scid = in;
		tp.scid_len = len > 20 ? 20 : len;
		tpn = tls_quic_tp_put(tpb, sizeof(tpb), &tp);
		CHECK(tpn > 0 && tls_quic_tp_ok(tpb, tpn));
		memset(&ch, 0, sizeof(ch));
		ch.quic = true;
		memcpy(ch.order, tls_ch_quic_exts, sizeof(tls_ch_quic_exts));
		for (unsigned i = 0; i < len && i < TLS_CH_QUIC_EXTS; i++) {
			unsigned j = in[len - 1 - i] % TLS_CH_QUIC_EXTS;
			uint16_t t = ch.order[i];

			ch.order[i] = ch.order[j];
			ch.order[j] = t;
		}
		ch.sni = (const char *)in;
		ch.sni_len = len > 255 ? 255 : len;
		ch.mlkem = key;
		ch.x25519 = key;
		ch.ech_enc = ech;
		ch.ech_payload = ech + 32;
		ch.ech_payload_len = 144 + (len % 4) * 32;
		ch.quic_tp = tpb;
		ch.quic_tp_len = tpn;
		n = tls_ch_put(out, sizeof(out), &ch);
		CHECK(n > TLS_HS_HDR);
		CHECK(tls_ch_get(&v, out + TLS_HS_HDR, n - TLS_HS_HDR));
		CHECK(v.n_exts == (ch.sni_len ? 12u : 11u) && v.n_ciphers == 3 && v.sid_len == 0);
		CHECK(v.quic_tp_len == tpn && memcmp(v.quic_tp, tpb, tpn) == 0);
		CHECK(v.n_sigalgs == 9 && v.n_groups == 4 && v.n_shares == 2 && v.n_versions == 1);
		break;
	}
	}
	return 0;
}
