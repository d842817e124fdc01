/*
 * The TLS layouts of src/wire (wire/tls.h) byte by byte: record and
 * handshake headers at their limits, what the ClientHello encoder refuses,
 * and each server message decoder's refusals (unknown or repeated
 * extensions, vectors that overrun, trailing bytes, empty chains).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "wire/tls.h"

static void record_header(void **state)
{
	uint8_t h[TLS_REC_HDR];
	struct tls_rec r;

	(void)state;
	tls_rec_put(h, TLS_CT_APP, 0x0303, TLS_REC_CIPHER);
	assert_int_equal(tls_rec_get(&r, h, 4, TLS_REC_CIPHER), 0);
	assert_int_equal(tls_rec_get(&r, h, 5, TLS_REC_CIPHER), 1);
	assert_int_equal(r.type, TLS_CT_APP);
	assert_int_equal(r.version, 0x0303);
	assert_int_equal(r.len, TLS_REC_CIPHER);
	/* One byte over the limit, an unknown type, a version not 3.x. */
	assert_int_equal(tls_rec_get(&r, h, 5, TLS_REC_CIPHER - 1), -1);
	h[0] = 24;
	assert_int_equal(tls_rec_get(&r, h, 5, TLS_REC_CIPHER), -1);
	h[0] = TLS_CT_HANDSHAKE;
	h[1] = 2;
	assert_int_equal(tls_rec_get(&r, h, 5, TLS_REC_CIPHER), -1);
}

static void handshake_header(void **state)
{
	uint8_t m[TLS_HS_HDR + 3] = {0};
	const uint8_t *body;
	size_t len;
	uint8_t type;

	(void)state;
	tls_hs_put(m, TLS_HS_FINISHED, 3);
	assert_memory_equal(m, "\x14\x00\x00\x03", 4);
	assert_int_equal(tls_hs_get(m, sizeof(m), &type, &body, &len), sizeof(m));
	assert_int_equal(type, TLS_HS_FINISHED);
	assert_int_equal(len, 3);
	assert_ptr_equal(body, m + TLS_HS_HDR);
	/* Not all there yet. */
	assert_int_equal(tls_hs_get(m, sizeof(m) - 1, &type, &body, &len), 0);
	assert_int_equal(tls_hs_get(m, 3, &type, &body, &len), 0);
}

static void hello_refusals(void **state)
{
	static uint8_t key[TLS_MLKEMX_LEN], ech[32 + 240], out[TLS_CH_MAX];
	char sni[300];
	struct tls_ch ch;

	(void)state;
	memset(&ch, 0, sizeof(ch));
	memcpy(ch.order, tls_ch_exts, sizeof(ch.order));
	ch.grease_cipher = ch.grease_group = ch.grease_version = 0x2a2a;
	ch.grease_ext1 = 0x0a0a;
	ch.grease_ext2 = 0x1a1a;
	ch.mlkem = key;
	ch.x25519 = key;
	ch.ech_enc = ech;
	ch.ech_payload = ech + 32;
	ch.ech_payload_len = 240;
	memset(sni, 'a', sizeof(sni));
	ch.sni = sni;
	ch.sni_len = 255;
	assert_true(tls_ch_put(out, sizeof(out), &ch) > 0);
	/* Too small a buffer. */
	assert_int_equal(tls_ch_put(out, 1000, &ch), 0);
	/* An SNI over 255 bytes. */
	ch.sni_len = 256;
	assert_int_equal(tls_ch_put(out, sizeof(out), &ch), 0);
	ch.sni_len = 3;
	/* The same GREASE extension twice, or a value not GREASE. */
	ch.grease_ext2 = ch.grease_ext1;
	assert_int_equal(tls_ch_put(out, sizeof(out), &ch), 0);
	ch.grease_ext2 = 0x1a1b;
	assert_int_equal(tls_ch_put(out, sizeof(out), &ch), 0);
	ch.grease_ext2 = 0x1a1a;
	/* An order that is not a permutation. */
	ch.order[3] = ch.order[4];
	assert_int_equal(tls_ch_put(out, sizeof(out), &ch), 0);
	ch.order[3] = 0x0015;
	assert_int_equal(tls_ch_put(out, sizeof(out), &ch), 0);
}

/* A ServerHello body: version, random, session id of 1, suite, compression, exts. */
static size_t sh_body(uint8_t *b, const uint8_t *exts, size_t exts_len)
{
	size_t n = 0;

	b[n++] = 3;
	b[n++] = 3;
	memset(b + n, 0x11, 32);
	n += 32;
	b[n++] = 1;
	b[n++] = 0x42;
	b[n++] = 0x13;
	b[n++] = 0x01;
	b[n++] = 0;
	b[n++] = (uint8_t)(exts_len >> 8);
	b[n++] = (uint8_t)exts_len;
	memcpy(b + n, exts, exts_len);
	return n + exts_len;
}

static void server_hello(void **state)
{
	static const uint8_t good[] = {0x00, 0x2b, 0x00, 0x02, 0x03, 0x04, 0x00, 0x33,
	                               0x00, 0x06, 0x00, 0x1d, 0x00, 0x02, 0xaa, 0xbb};
	static const uint8_t twice[] = {0x00, 0x2b, 0x00, 0x02, 0x03, 0x04,
	                                0x00, 0x2b, 0x00, 0x02, 0x03, 0x04};
	static const uint8_t unknown[] = {0x00, 0x2b, 0x00, 0x02, 0x03,
	                                  0x04, 0x00, 0x10, 0x00, 0x00};
	static const uint8_t overrun[] = {0x00, 0x2b, 0x00, 0x03, 0x03, 0x04};
	static const uint8_t cookie[] = {0x00, 0x2c, 0x00, 0x03, 0x00, 0x01, 0x99};
	uint8_t b[128];
	struct tls_sh sh;
	size_t n;

	(void)state;
	n = sh_body(b, good, sizeof(good));
	assert_true(tls_sh_get(&sh, b, n));
	assert_false(sh.hrr);
	assert_int_equal(sh.version, 0x0304);
	assert_int_equal(sh.cipher, 0x1301);
	assert_int_equal(sh.sid_len, 1);
	assert_int_equal(sh.sid[0], 0x42);
	assert_int_equal(sh.share_group, 0x001d);
	assert_int_equal(sh.share_len, 2);
	assert_memory_equal(sh.share, "\xaa\xbb", 2);
	/* Trailing bytes, a short body, compression, repeated, unknown, overrun. */
	assert_false(tls_sh_get(&sh, b, n + 1));
	assert_false(tls_sh_get(&sh, b, n - 1));
	b[38] = 1;
	assert_false(tls_sh_get(&sh, b, n));
	assert_false(tls_sh_get(&sh, b, sh_body(b, twice, sizeof(twice))));
	assert_false(tls_sh_get(&sh, b, sh_body(b, unknown, sizeof(unknown))));
	assert_false(tls_sh_get(&sh, b, sh_body(b, overrun, sizeof(overrun))));
	/* A cookie only in a HelloRetryRequest. */
	assert_false(tls_sh_get(&sh, b, sh_body(b, cookie, sizeof(cookie))));
}

static void encrypted_extensions(void **state)
{
	static const uint8_t alpn[] = {0x00, 0x0a, 0x00, 0x10, 0x00, 0x06,
	                               0x00, 0x04, 0x03, 'h',  '2',  'x'};
	static const uint8_t two[] = {0x00, 0x0c, 0x00, 0x10, 0x00, 0x08, 0x00,
	                              0x06, 0x02, 'h',  '2',  0x02, 'h',  '3'};
	static const uint8_t other[] = {0x00, 0x08, 0x00, 0x1c, 0x00, 0x02,
	                                0x40, 0x01, 0x44, 0xcd, 0x00, 0x00};
	struct tls_ee ee;

	(void)state;
	assert_true(tls_ee_get(&ee, alpn, sizeof(alpn)));
	assert_int_equal(ee.alpn_len, 3);
	assert_memory_equal(ee.alpn, "h2x", 3);
	assert_false(ee.alps || ee.unsolicited);
	/* Two protocols is not a choice. */
	assert_false(tls_ee_get(&ee, two, sizeof(two)));
	/* record_size_limit was not offered; ALPS was. (The length says 8
	 * but 12 bytes follow: refused; with the right length, decoded.) */
	assert_false(tls_ee_get(&ee, other, sizeof(other)));
	{
		uint8_t fixed[sizeof(other)];

		memcpy(fixed, other, sizeof(other));
		fixed[1] = 10;
		assert_true(tls_ee_get(&ee, fixed, sizeof(fixed)));
		assert_true(ee.unsolicited);
		assert_true(ee.alps);
	}
	assert_true(tls_ee_get(&ee, (const uint8_t *)"\x00\x00", 2));
	assert_null(ee.alpn);
}

static void certificate(void **state)
{
	static const uint8_t one[] = {0x00, 0x00, 0x00, 0x08, 0x00, 0x00,
	                              0x03, 0xc1, 0xc2, 0xc3, 0x00, 0x00};
	static const uint8_t empty[] = {0x00, 0x00, 0x00, 0x00};
	static const uint8_t zero_len[] = {0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00};
	struct tls_chain chain;
	size_t ctx_len;
	uint16_t scheme;
	const uint8_t *sig;
	size_t sig_len;
	bool req;
	uint8_t level, desc;

	(void)state;
	assert_true(tls_cert_get(&chain, &ctx_len, one, sizeof(one)));
	assert_int_equal(ctx_len, 0);
	assert_int_equal(chain.n, 1);
	assert_int_equal(chain.len[0], 3);
	assert_ptr_equal(chain.der[0], one + 7);
	assert_false(tls_cert_get(&chain, &ctx_len, one, sizeof(one) - 1));
	assert_false(tls_cert_get(&chain, &ctx_len, empty, sizeof(empty)));
	assert_false(tls_cert_get(&chain, &ctx_len, zero_len, sizeof(zero_len) - 1));

	assert_true(
	    tls_cv_get(&scheme, &sig, &sig_len, (const uint8_t *)"\x04\x03\x00\x01\x55", 5));
	assert_int_equal(scheme, 0x0403);
	assert_int_equal(sig_len, 1);
	assert_false(tls_cv_get(&scheme, &sig, &sig_len, (const uint8_t *)"\x04\x03\x00\x00", 4));
	assert_false(
	    tls_cv_get(&scheme, &sig, &sig_len, (const uint8_t *)"\x04\x03\x00\x02\x55", 5));

	assert_true(tls_ku_get(&req, (const uint8_t *)"\x01", 1) && req);
	assert_true(tls_ku_get(&req, (const uint8_t *)"\x00", 1) && !req);
	assert_false(tls_ku_get(&req, (const uint8_t *)"\x02", 1));
	assert_true(tls_alert_get(&level, &desc, (const uint8_t *)"\x02\x28", 2));
	assert_int_equal(desc, TLS_ALERT_HANDSHAKE_FAILURE);
	assert_false(tls_alert_get(&level, &desc, (const uint8_t *)"\x03\x28", 2));
	/* A ticket: lifetime, age_add, nonce<1>, ticket<2> (not empty), extensions<2>. */
	assert_true(tls_nst_get((const uint8_t *)"\0\0\0\1\0\0\0\2\1\7\0\1\x99\0\0", 15));
	assert_false(tls_nst_get((const uint8_t *)"\0\0\0\1\0\0\0\2\1\7\0\0\0\0", 14));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(record_header),        cmocka_unit_test(handshake_header),
	    cmocka_unit_test(hello_refusals),       cmocka_unit_test(server_hello),
	    cmocka_unit_test(encrypted_extensions), cmocka_unit_test(certificate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
