/*
 * Every TLS decoder in src/wire (wire/tls.h) on arbitrary bytes. The first
 * byte picks the layout; the rest is the input. Whatever a decoder hands
 * back must lie inside the input (ASan catches reads past it), and a
 * ClientHello the encoder writes must decode to what was put in.
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
	switch (data[0] % 10) {
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
	}
	return 0;
}
