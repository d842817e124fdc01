/*
 * The TLS 1.3 client engine (src/tls) against a real OpenSSL server in the
 * same process, over memory BIOs, with a self-signed certificate made here:
 * a full handshake with each of Chrome's three TLS 1.3 suites, data both
 * ways byte-exact (padding and full-size records included), KeyUpdate from
 * either side, close_notify both ways. The ClientHello is read back with
 * src/wire's decoder and as OpenSSL's server saw it; its JA4 is computed
 * from FoxIO's definition (mimicry.md §B.1) and must be Chrome's:
 * t13d1517h2_8daaf6152771_cb7bf5808d99. Refusals (a chosen X25519MLKEM768,
 * a HelloRetryRequest, a refused certificate) fail clearly and are counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "crypto/crypto.h"
#include "crypto/mlkem.h"
#include "tls/tls.h"
#include "wire/tls.h"

#define TESTRAND_SEED 0x7153u
#include "testrand.h"
#include "testcert.h"

#define SNI "www.example.com"

static void test_rand(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	fill_random(out, n);
}

/* ---- the server ---- */

/* The server's key and certificate: P-256 (ECDSA) unless a test picks RSA (PSS). */
static EVP_PKEY *server_key, *ec_key, *rsa_key;
static X509 *server_cert, *ec_cert, *rsa_cert;

/* OpenSSL's allocations, counted (main installs the counter first). */
static unsigned long allocs;

static void *count_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	allocs++;
	return malloc(n);
}

static void *count_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	allocs++;
	return realloc(p, n);
}

static void count_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free(p);
}

/* What the server's client_hello callback saw. */
static struct {
	size_t n_ciphers, n_exts, groups_len;
	uint16_t ciphers[64];
	int exts[64];
	uint8_t groups[64];
} seen;

static int hello_cb(SSL *ssl, int *al, void *arg)
{
	const unsigned char *p;
	int *exts;
	size_t n;

	(void)al;
	(void)arg;
	n = SSL_client_hello_get0_ciphers(ssl, &p);
	seen.n_ciphers = n / 2;
	for (size_t i = 0; i < n / 2 && i < 64; i++)
		seen.ciphers[i] = (uint16_t)(p[2 * i] << 8 | p[2 * i + 1]);
	if (SSL_client_hello_get1_extensions_present(ssl, &exts, &n) == 1) {
		seen.n_exts = n;
		memcpy(seen.exts, exts, (n < 64 ? n : 64) * sizeof(int));
		OPENSSL_free(exts);
	}
	if (SSL_client_hello_get0_ext(ssl, TLS_EXT_GROUPS, &p, &n) == 1 && n <= 64) {
		seen.groups_len = n;
		memcpy(seen.groups, p, n);
	}
	return SSL_CLIENT_HELLO_SUCCESS;
}

static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg)
{
	static const unsigned char want[] = {2, 'h', '2'};
	unsigned char *o;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&o, outlen, want, sizeof(want), in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = o;
	return SSL_TLSEXT_ERR_OK;
}

static int setup(void **state)
{
	(void)state;
	ec_key = EVP_EC_gen("P-256");
	ec_cert = self_signed(ec_key, SNI);
	rsa_key = EVP_RSA_gen(2048);
	rsa_cert = self_signed(rsa_key, SNI);
	server_key = ec_key;
	server_cert = ec_cert;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	X509_free(ec_cert);
	EVP_PKEY_free(ec_key);
	X509_free(rsa_cert);
	EVP_PKEY_free(rsa_key);
	return 0;
}

/* A connection: the engine, the server, and what each side received. */
struct conn {
	struct tls_client *c;
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rbio, *wbio;
	bool connected, closed, failed;
	enum tls_err err;
	uint8_t *cli_rx, *srv_rx;
	size_t cli_n, srv_n;
};

#define RX_MAX (1 << 20)

static void conn_open(struct conn *k, const char *suite, tls_verify_fn *verify, void *vctx)
{
	struct tls_client_config cfg = {
	    .sni = SNI, .rand = test_rand, .verify = verify, .verify_ctx = vctx};

	memset(k, 0, sizeof(*k));
	k->ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(k->ctx);
	SSL_CTX_set_min_proto_version(k->ctx, TLS1_3_VERSION);
	assert_int_equal(SSL_CTX_set_ciphersuites(k->ctx, suite), 1);
	assert_int_equal(SSL_CTX_use_certificate(k->ctx, server_cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(k->ctx, server_key), 1);
	SSL_CTX_set_client_hello_cb(k->ctx, hello_cb, NULL);
	SSL_CTX_set_alpn_select_cb(k->ctx, alpn_cb, NULL);
	k->ssl = SSL_new(k->ctx);
	k->rbio = BIO_new(BIO_s_mem());
	k->wbio = BIO_new(BIO_s_mem());
	SSL_set_bio(k->ssl, k->rbio, k->wbio);
	SSL_set_accept_state(k->ssl);
	k->cli_rx = malloc(RX_MAX);
	k->srv_rx = malloc(RX_MAX);
	k->c = tls_client_new(&cfg);
	assert_non_null(k->c);
}

static void conn_close(struct conn *k)
{
	tls_client_free(k->c);
	SSL_free(k->ssl);
	SSL_CTX_free(k->ctx);
	free(k->cli_rx);
	free(k->srv_rx);
}

/* Server bytes into the engine, in pieces of odd sizes. */
static void to_client(struct conn *k, const uint8_t *p, size_t n)
{
	while (n > 0) {
		struct tls_event ev;
		size_t piece = n < 777 ? n : 777;
		size_t used = tls_client_recv(k->c, p, piece, &ev);

		assert_true(used > 0 || piece == 0);
		p += used;
		n -= used;
		switch (ev.kind) {
		case TLS_EV_CONNECTED:
			k->connected = true;
			break;
		case TLS_EV_DATA:
			assert_true(k->cli_n + ev.len <= RX_MAX);
			memcpy(k->cli_rx + k->cli_n, ev.data, ev.len);
			k->cli_n += ev.len;
			break;
		case TLS_EV_CLOSED:
			k->closed = true;
			break;
		case TLS_EV_FAILED:
			k->failed = true;
			k->err = ev.err;
			return;
		default:
			break;
		}
	}
}

/* Moves bytes both ways until neither side has any. */
static void pump(struct conn *k)
{
	uint8_t buf[65536];

	for (int round = 0; round < 100; round++) {
		bool moved = false;
		const uint8_t *out;
		size_t n;
		int r;

		out = tls_client_out(k->c, &n);
		if (n > 0) {
			assert_int_equal(BIO_write(k->rbio, out, (int)n), (int)n);
			tls_client_out_done(k->c, n);
			moved = true;
		}
		if (!SSL_is_init_finished(k->ssl)) {
			(void)SSL_do_handshake(k->ssl);
		} else {
			size_t got;

			while (SSL_read_ex(k->ssl, k->srv_rx + k->srv_n, RX_MAX - k->srv_n, &got))
				k->srv_n += got;
		}
		while ((r = BIO_read(k->wbio, buf, sizeof(buf))) > 0) {
			to_client(k, buf, (size_t)r);
			moved = true;
		}
		if (!moved)
			return;
	}
	fail_msg("pump did not settle");
}

/* len bytes from the client in records of at most rec bytes, with padding. */
static void client_send(struct conn *k, const uint8_t *p, size_t len, size_t rec, size_t pad)
{
	static uint8_t out[TLS_REC_MAX];

	while (len > 0) {
		size_t n = len < rec ? len : rec;
		size_t pd = n + pad <= TLS_REC_PLAIN ? pad : 0;
		size_t w = tls_client_seal(k->c, out, sizeof(out), p, n, pd);

		assert_int_equal(w, TLS_SEAL_OVERHEAD + n + pd);
		assert_int_equal(BIO_write(k->rbio, out, (int)w), (int)w);
		p += n;
		len -= n;
	}
	pump(k);
}

static void handshake_suite(const char *suite, uint16_t id)
{
	struct conn k;
	size_t n;
	const uint8_t *alpn;
	uint8_t *data = malloc(100000);
	size_t w;

	fill_random(data, 100000);
	conn_open(&k, suite, tls_verify_any, NULL);
	pump(&k);
	assert_false(k.failed);
	assert_true(k.connected);
	assert_true(tls_client_connected(k.c));
	assert_int_equal(tls_client_cipher(k.c), id);
	alpn = tls_client_alpn(k.c, &n);
	assert_int_equal(n, 2);
	assert_memory_equal(alpn, "h2", 2);
	assert_true(SSL_is_init_finished(k.ssl));

	/* Client to server: small records, padded ones, full-size ones. */
	client_send(&k, data, 1000, 100, 0);
	client_send(&k, data + 1000, 3000, 1000, 300);
	client_send(&k, data + 4000, 40000, TLS_REC_PLAIN, 0);
	assert_int_equal(k.srv_n, 44000);
	assert_memory_equal(k.srv_rx, data, 44000);
	/* A record too long for TLS is refused. */
	assert_int_equal(tls_client_seal(k.c, data, 100000, data, TLS_REC_PLAIN + 1, 0), 0);
	assert_int_equal(tls_client_seal(k.c, data, 100000, data, 100, TLS_REC_PLAIN), 0);

	/* Server to client: OpenSSL cuts 50000 bytes into full records. */
	assert_true(SSL_write_ex(k.ssl, data, 50000, &w) && w == 50000);
	pump(&k);
	assert_int_equal(k.cli_n, 50000);
	assert_memory_equal(k.cli_rx, data, 50000);

	/* KeyUpdate from the client, asking for one back. */
	assert_true(tls_client_key_update(k.c, true));
	pump(&k);
	client_send(&k, data, 5000, 2000, 0);
	assert_true(SSL_write_ex(k.ssl, data + 50000, 5000, &w));
	pump(&k);
	assert_int_equal(k.srv_n, 49000);
	assert_memory_equal(k.srv_rx + 44000, data, 5000);
	assert_int_equal(k.cli_n, 55000);
	assert_memory_equal(k.cli_rx + 50000, data + 50000, 5000);
	assert_int_equal(tls_client_stats(k.c)->key_updates_out, 1);
	assert_int_equal(tls_client_stats(k.c)->key_updates_in, 1);

	/* KeyUpdate from the server, asking for one back. */
	assert_int_equal(SSL_key_update(k.ssl, SSL_KEY_UPDATE_REQUESTED), 1);
	assert_true(SSL_write_ex(k.ssl, data, 7000, &w));
	pump(&k);
	assert_int_equal(tls_client_stats(k.c)->key_updates_in, 2);
	assert_int_equal(tls_client_stats(k.c)->key_updates_out, 2);
	client_send(&k, data + 7000, 7000, 7000, 0);
	assert_int_equal(k.srv_n, 56000);
	assert_memory_equal(k.srv_rx + 49000, data + 7000, 7000);
	assert_int_equal(k.cli_n, 62000);
	assert_memory_equal(k.cli_rx + 55000, data, 7000);

	/* close_notify both ways. */
	tls_client_close(k.c);
	assert_int_equal(tls_client_seal(k.c, data, 100000, data, 10, 0), 0);
	pump(&k);
	assert_int_equal(SSL_get_error(k.ssl, 0), SSL_ERROR_ZERO_RETURN);
	(void)SSL_shutdown(k.ssl);
	pump(&k);
	assert_true(k.closed);
	assert_false(k.failed);
	conn_close(&k);
	free(data);
}

static void handshake_aes128(void **state)
{
	(void)state;
	handshake_suite("TLS_AES_128_GCM_SHA256", 0x1301);
}

static void handshake_aes256(void **state)
{
	(void)state;
	handshake_suite("TLS_AES_256_GCM_SHA384", 0x1302);
}

static void handshake_chacha(void **state)
{
	(void)state;
	handshake_suite("TLS_CHACHA20_POLY1305_SHA256", 0x1303);
}

/* An RSA certificate: OpenSSL signs CertificateVerify with RSA-PSS (0x0804). */
static void handshake_rsa_pss(void **state)
{
	(void)state;
	server_key = rsa_key;
	server_cert = rsa_cert;
	handshake_suite("TLS_AES_128_GCM_SHA256", 0x1301);
	server_key = ec_key;
	server_cert = ec_cert;
}

/* Sealing and opening records allocates nothing, in the engine or in libcrypto. */
static void no_alloc_per_record(void **state)
{
	static uint8_t wire[2 * 200 * (1000 + TLS_SEAL_OVERHEAD)];
	uint8_t data[1000];
	struct conn k;
	unsigned long before;
	size_t n = 0, w;
	int r;

	(void)state;
	fill_random(data, sizeof(data));
	before = allocs;
	conn_open(&k, "TLS_CHACHA20_POLY1305_SHA256", tls_verify_any, NULL);
	pump(&k);
	assert_true(k.connected);
	assert_true(allocs > before); /* the counter sees libcrypto's allocations */
	before = allocs;
	for (int i = 0; i < 200; i++)
		n += tls_client_seal(k.c, wire + n, sizeof(wire) - n, data, sizeof(data), i % 16);
	assert_int_equal(allocs, before);
	assert_int_equal(BIO_write(k.rbio, wire, (int)n), (int)n);
	pump(&k);
	assert_int_equal(k.srv_n, 200 * sizeof(data));
	for (int i = 0; i < 200; i++)
		assert_true(SSL_write_ex(k.ssl, data, sizeof(data), &w));
	r = BIO_read(k.wbio, wire, sizeof(wire));
	assert_true(r > 0);
	before = allocs;
	to_client(&k, wire, (size_t)r);
	assert_int_equal(allocs, before);
	assert_int_equal(k.cli_n, 200 * sizeof(data));
	conn_close(&k);
}

/* ---- the ClientHello ---- */

static const uint16_t want_ciphers[] = {0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f,
                                        0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013,
                                        0xc014, 0x009c, 0x009d, 0x002f, 0x0035};

static const uint16_t want_sigalgs[] = {0x0904, 0x0905, 0x0906, 0x0403, 0x0804, 0x0401,
                                        0x0503, 0x0805, 0x0501, 0x0806, 0x0601};

static const uint16_t want_groups[] = {TLS_GROUP_MLKEM768X, TLS_GROUP_X25519, TLS_GROUP_P256,
                                       TLS_GROUP_P384};

static int cmp16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static void hex_sha12(char out[13], const char *s)
{
	uint8_t h[SHA256_DIGEST_LENGTH];

	SHA256((const uint8_t *)s, strlen(s), h);
	for (int i = 0; i < 6; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

/* JA4 (FoxIO technical_details/JA4.md) of a decoded hello, TCP. */
static void ja4(char *out, size_t cap, const struct tls_ch_view *v)
{
	uint16_t list[TLS_CH_LIST_MAX];
	char s[2048], b[13], c[13];
	size_t n = 0, ne = 0, len = 0;
	uint16_t top = 0;
	bool sni = false, alpn = false;

	for (size_t i = 0; i < v->n_versions; i++)
		if (!tls_grease(v->versions[i]) && v->versions[i] > top)
			top = v->versions[i];
	for (size_t i = 0; i < v->n_ciphers; i++)
		if (!tls_grease(v->ciphers[i]))
			list[n++] = v->ciphers[i];
	qsort(list, n, sizeof(list[0]), cmp16);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, sizeof(s) - len, "%s%04x", i ? "," : "", list[i]);
	hex_sha12(b, s);
	for (size_t i = 0; i < v->n_exts; i++) {
		if (tls_grease(v->exts[i]))
			continue;
		ne++;
		sni |= v->exts[i] == TLS_EXT_SNI;
		alpn |= v->exts[i] == TLS_EXT_ALPN;
	}
	{
		size_t m = 0;

		for (size_t i = 0; i < v->n_exts; i++)
			if (!tls_grease(v->exts[i]) && v->exts[i] != TLS_EXT_SNI &&
			    v->exts[i] != TLS_EXT_ALPN)
				list[m++] = v->exts[i];
		qsort(list, m, sizeof(list[0]), cmp16);
		len = 0;
		for (size_t i = 0; i < m; i++)
			len += (size_t)snprintf(s + len, sizeof(s) - len, "%s%04x", i ? "," : "",
			                        list[i]);
		len += (size_t)snprintf(s + len, sizeof(s) - len, "_");
		for (size_t i = 0, k = 0; i < v->n_sigalgs; i++)
			if (!tls_grease(v->sigalgs[i]))
				len += (size_t)snprintf(s + len, sizeof(s) - len, "%s%04x",
				                        k++ ? "," : "", v->sigalgs[i]);
		hex_sha12(c, s);
	}
	snprintf(out, cap, "t%s%c%02zu%02zu%c%c_%s_%s", top == 0x0304 ? "13" : "12",
	         sni ? 'd' : 'i', n, ne, alpn ? (char)v->alpn[1] : '0',
	         alpn ? (char)v->alpn[v->alpn[0]] : '0', b, c);
}

static void decode_hello(struct tls_ch_view *v, const struct tls_client *c)
{
	size_t n;
	const uint8_t *ch = tls_client_hello(c, &n);

	assert_true(n > TLS_HS_HDR && ch[0] == TLS_HS_CLIENT_HELLO);
	assert_true(tls_ch_get(v, ch + TLS_HS_HDR, n - TLS_HS_HDR));
}

static void hello_fields(void **state)
{
	static const uint16_t want_exts[] = {
	    TLS_EXT_SNI,           TLS_EXT_STATUS_REQUEST, TLS_EXT_GROUPS,   TLS_EXT_POINT_FORMATS,
	    TLS_EXT_SIGALGS,       TLS_EXT_ALPN,           TLS_EXT_SCT,      TLS_EXT_EMS,
	    TLS_EXT_COMPRESS_CERT, TLS_EXT_SESSION_TICKET, TLS_EXT_VERSIONS, TLS_EXT_PSK_MODES,
	    TLS_EXT_KEY_SHARE,     TLS_EXT_ALPS,           TLS_EXT_ECH,      TLS_EXT_RENEGOTIATION,
	    TLS_EXT_TRUST_ANCHORS,
	};
	/* chromium 156's trust anchor ids as captured: the first, the
	 * ninth and the last of 28. */
	static const uint8_t first[] = {5, 0x82, 0xdf, 0x13, 0x02, 0x01},
	                     ninth[] = {8, 0x83, 0x9a, 0x64, 0x8c, 0x9b, 0x2d, 0x01, 0x07},
	                     last[] = {4, 0xd6, 0x79, 0x09, 0x0f};
	struct tls_ch_view v;
	struct conn k;
	uint16_t exts[TLS_CH_LIST_MAX];
	char j[64];
	size_t n, out_len;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	conn_open(&k, "TLS_AES_128_GCM_SHA256", tls_verify_any, NULL);
	decode_hello(&v, k.c);
	(void)tls_client_hello(k.c, &n);
	/* One record, TLS 1.0 on the record layer as Chrome has it. */
	{
		const uint8_t *o = tls_client_out(k.c, &out_len);

		assert_int_equal(out_len, TLS_REC_HDR + n);
		assert_int_equal(o[0], 22);
		assert_int_equal(o[1] << 8 | o[2], 0x0301);
	}
	assert_int_equal(v.legacy_version, 0x0303);
	assert_int_equal(v.sid_len, 32);
	assert_int_equal(v.n_ciphers, 16);
	assert_true(tls_grease(v.ciphers[0]));
	assert_memory_equal(v.ciphers + 1, want_ciphers, sizeof(want_ciphers));
	assert_int_equal(v.n_exts, 19);
	assert_true(tls_grease(v.exts[0]) && tls_grease(v.exts[18]));
	assert_true(v.exts[0] != v.exts[18]);
	memcpy(exts, v.exts + 1, 17 * sizeof(uint16_t));
	qsort(exts, 17, sizeof(exts[0]), cmp16);
	{
		uint16_t w[17];

		memcpy(w, want_exts, sizeof(w));
		qsort(w, 17, sizeof(w[0]), cmp16);
		assert_memory_equal(exts, w, sizeof(w));
	}
	assert_int_equal(v.n_groups, 5);
	assert_true(tls_grease(v.groups[0]));
	assert_memory_equal(v.groups + 1, want_groups, sizeof(want_groups));
	assert_int_equal(v.n_sigalgs, 12);
	assert_true(tls_grease(v.sigalgs[0]));
	assert_memory_equal(v.sigalgs + 1, want_sigalgs, sizeof(want_sigalgs));
	assert_int_equal(v.n_anchors, 28);
	assert_int_equal(v.anchors_len, 184);
	assert_memory_equal(v.anchors, first, sizeof(first));
	assert_memory_equal(v.anchors + 8 * 6, ninth, sizeof(ninth));
	assert_memory_equal(v.anchors + v.anchors_len - sizeof(last), last, sizeof(last));
	assert_int_equal(v.n_shares, 3);
	assert_int_equal(v.share_groups[0], v.groups[0]);
	assert_int_equal(v.share_lens[0], 1);
	assert_int_equal(v.share_groups[1], 0x11ec);
	assert_int_equal(v.share_lens[1], 1216);
	assert_int_equal(v.share_groups[2], 0x001d);
	assert_int_equal(v.share_lens[2], 32);
	assert_int_equal(v.n_versions, 3);
	assert_true(tls_grease(v.versions[0]));
	assert_int_equal(v.versions[1], 0x0304);
	assert_int_equal(v.versions[2], 0x0303);
	assert_int_equal(v.n_compress, 1);
	assert_int_equal(v.compress[0], 2);
	assert_int_equal(v.sni_len, strlen(SNI));
	assert_memory_equal(v.sni, SNI, strlen(SNI));
	assert_int_equal(v.alpn_len, 12);
	assert_memory_equal(v.alpn, "\x02h2\x08http/1.1", 12);
	assert_true(v.ech_payload_len == 144 || v.ech_payload_len == 176 ||
	            v.ech_payload_len == 208 || v.ech_payload_len == 240);
	/* The ML-KEM-768 encapsulation key: every 12-bit coefficient below q. */
	assert_non_null(v.mlkem);
	for (size_t i = 0; i < 384; i++) {
		const uint8_t *p = v.mlkem + 3 * i;

		assert_true((p[0] | (p[1] & 0xf) << 8) < 3329);
		assert_true((p[1] >> 4 | p[2] << 4) < 3329);
	}
	/* The hybrid's X25519 half is a key of its own, as chromium's is. */
	assert_non_null(v.x25519);
	assert_memory_not_equal(v.mlkem + TLS_MLKEM768_EK_LEN, v.x25519, TLS_X25519_LEN);
	ja4(j, sizeof(j), &v);
	assert_string_equal(j, "t13d1517h2_8daaf6152771_cb7bf5808d99");

	/* What OpenSSL's server saw. */
	pump(&k);
	assert_true(k.connected);
	assert_int_equal(seen.n_ciphers, 16);
	assert_memory_equal(seen.ciphers + 1, want_ciphers, sizeof(want_ciphers));
	/* OpenSSL 3.0 lists the 13 extensions it knows (not GREASE, brotli,
	 * ALPS, ECH), in the order they came. */
	assert_int_equal(seen.n_exts, 13);
	for (size_t i = 0, at = 0; i < seen.n_exts; i++, at++) {
		while (at < v.n_exts && v.exts[at] != seen.exts[i])
			at++;
		assert_true(at < v.n_exts);
	}
	assert_int_equal(seen.groups_len, 12);
	assert_int_equal(seen.groups[4] << 8 | seen.groups[5], 0x11ec);
	assert_int_equal(seen.groups[6] << 8 | seen.groups[7], 0x001d);
	conn_close(&k);
}

/* Twenty hellos: twenty extension orders, GREASE valid and distinct where it must be. */
static void hello_permutation(void **state)
{
	struct tls_client_config cfg = {.sni = SNI, .rand = test_rand, .verify = tls_verify_any};
	uint16_t orders[20][19];
	unsigned distinct = 0;

	(void)state;
	for (int i = 0; i < 20; i++) {
		struct tls_client *c = tls_client_new(&cfg);
		struct tls_ch_view v;
		char j[64];

		assert_non_null(c);
		decode_hello(&v, c);
		assert_int_equal(v.n_exts, 19);
		memcpy(orders[i], v.exts, sizeof(orders[i]));
		assert_true(tls_grease(v.ciphers[0]) && tls_grease(v.groups[0]) &&
		            tls_grease(v.versions[0]) && tls_grease(v.sigalgs[0]) &&
		            tls_grease(v.exts[0]) && tls_grease(v.exts[18]));
		assert_true(v.exts[0] != v.exts[18]);
		assert_int_equal(v.share_groups[0], v.groups[0]);
		ja4(j, sizeof(j), &v);
		assert_string_equal(j, "t13d1517h2_8daaf6152771_cb7bf5808d99");
		tls_client_free(c);
	}
	for (int i = 0; i < 20; i++) {
		bool unique = true;

		for (int k = 0; k < 20; k++)
			if (k != i && memcmp(orders[i] + 1, orders[k] + 1, 17 * 2) == 0)
				unique = false;
		distinct += unique;
	}
	assert_true(distinct >= 19);
	/* GREASE values by rule: 0x?a?a with both nibbles equal. */
	assert_true(tls_grease(0x0a0a) && tls_grease(0xfafa));
	assert_false(tls_grease(0x0a1a) || tls_grease(0x1301) || tls_grease(0x0b0b));
}

/* No SNI: the extension is left out, and JA4 says so. */
static void hello_no_sni(void **state)
{
	struct tls_client_config cfg = {.rand = test_rand, .verify = tls_verify_any};
	struct tls_client *c = tls_client_new(&cfg);
	struct tls_ch_view v;
	char j[64];

	(void)state;
	assert_non_null(c);
	decode_hello(&v, c);
	assert_null(v.sni);
	ja4(j, sizeof(j), &v);
	assert_string_equal(j, "t13i1516h2_8daaf6152771_cb7bf5808d99");
	tls_client_free(c);
}

/* A server with only P-256 (or P-384) asks for a retry: a second hello
 * with that share alone, the same choices otherwise, and a handshake. */
static void retry_group(const char *groups, uint16_t group, size_t share_len)
{
	struct conn k;
	struct tls_ch_view v1, v2;
	uint8_t data[3000];
	size_t w;

	fill_random(data, sizeof(data));
	conn_open(&k, "TLS_AES_256_GCM_SHA384", tls_verify_any, NULL);
	assert_int_equal(SSL_set1_groups_list(k.ssl, groups), 1);
	decode_hello(&v1, k.c);
	pump(&k);
	assert_false(k.failed);
	assert_true(k.connected);
	decode_hello(&v2, k.c);
	assert_int_equal(v2.n_shares, 1);
	assert_int_equal(v2.share_groups[0], group);
	assert_int_equal(v2.share_lens[0], share_len);
	assert_memory_equal(v2.random, v1.random, TLS_RANDOM_LEN);
	assert_int_equal(v2.n_exts, v1.n_exts);
	assert_memory_equal(v2.exts, v1.exts, v1.n_exts * sizeof(v1.exts[0]));
	assert_memory_equal(v2.ciphers, v1.ciphers, v1.n_ciphers * sizeof(v1.ciphers[0]));
	client_send(&k, data, sizeof(data), 1000, 0);
	assert_int_equal(k.srv_n, sizeof(data));
	assert_memory_equal(k.srv_rx, data, sizeof(data));
	assert_true(SSL_write_ex(k.ssl, data, sizeof(data), &w));
	pump(&k);
	assert_int_equal(k.cli_n, sizeof(data));
	assert_memory_equal(k.cli_rx, data, sizeof(data));
	conn_close(&k);
}

static void retry_p256(void **state)
{
	(void)state;
	retry_group("P-256", TLS_GROUP_P256, 65);
}

static void retry_p384(void **state)
{
	(void)state;
	retry_group("P-384", TLS_GROUP_P384, 97);
}

/* ---- refusals ---- */

static bool verify_no(void *ctx, const struct tls_chain *chain, const char *sni)
{
	(void)ctx;
	(void)chain;
	assert_string_equal(sni, SNI);
	return false;
}

static void refused_certificate(void **state)
{
	struct conn k;

	(void)state;
	conn_open(&k, "TLS_AES_128_GCM_SHA256", verify_no, NULL);
	pump(&k);
	assert_true(k.failed);
	assert_int_equal(k.err, TLS_ERR_CERT);
	assert_int_equal(tls_client_stats(k.c)->fail[TLS_ERR_CERT], 1);
	assert_false(SSL_is_init_finished(k.ssl));
	conn_close(&k);
}

static void pinned_key(void **state)
{
	uint8_t pin[32], *spki = NULL;
	int n = i2d_PUBKEY(server_key, &spki);
	struct conn k;

	(void)state;
	assert_true(n > 0);
	SHA256(spki, (size_t)n, pin);
	OPENSSL_free(spki);
	conn_open(&k, "TLS_AES_128_GCM_SHA256", tls_verify_pin, pin);
	pump(&k);
	assert_true(k.connected);
	conn_close(&k);
	pin[0] ^= 1;
	conn_open(&k, "TLS_AES_128_GCM_SHA256", tls_verify_pin, pin);
	pump(&k);
	assert_true(k.failed);
	assert_int_equal(k.err, TLS_ERR_CERT);
	conn_close(&k);
}

static void ca_store(void **state)
{
	X509_STORE *store = X509_STORE_new();
	struct conn k;

	(void)state;
	assert_int_equal(X509_STORE_add_cert(store, server_cert), 1);
	conn_open(&k, "TLS_AES_256_GCM_SHA384", tls_verify_store, store);
	pump(&k);
	assert_true(k.connected);
	conn_close(&k);
	X509_STORE_free(store);
	store = X509_STORE_new();
	conn_open(&k, "TLS_AES_256_GCM_SHA384", tls_verify_store, store);
	pump(&k);
	assert_int_equal(k.err, TLS_ERR_CERT);
	conn_close(&k);
	X509_STORE_free(store);
}

/* A ServerHello made by hand: group and random as given, the key share
 * share_len bytes of key (of 9s if NULL; the group's length if 0). */
static size_t server_hello_share(uint8_t *out, const struct tls_client *c, uint16_t group, bool hrr,
                                 const uint8_t *key, size_t share_len)
{
	static const uint8_t hrr_random[32] = {
	    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c,
	    0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb,
	    0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
	};
	size_t chn, n = 0, ext;
	const uint8_t *ch = tls_client_hello(c, &chn);
	size_t share = share_len ? share_len : group == TLS_GROUP_MLKEM768X ? 1120 : 32;

	n = TLS_REC_HDR + TLS_HS_HDR;
	out[n++] = 3;
	out[n++] = 3;
	if (hrr)
		memcpy(out + n, hrr_random, 32);
	else
		memset(out + n, 7, 32);
	n += 32;
	out[n++] = 32;
	memcpy(out + n, ch + TLS_HS_HDR + 35, 32);
	n += 32;
	out[n++] = 0x13;
	out[n++] = 0x01;
	out[n++] = 0;
	ext = n;
	n += 2;
	memcpy(out + n, "\x00\x2b\x00\x02\x03\x04", 6);
	n += 6;
	out[n++] = 0x00;
	out[n++] = 0x33;
	if (hrr) {
		out[n++] = 0;
		out[n++] = 2;
		out[n++] = (uint8_t)(group >> 8);
		out[n++] = (uint8_t)group;
	} else {
		out[n++] = (uint8_t)((share + 4) >> 8);
		out[n++] = (uint8_t)(share + 4);
		out[n++] = (uint8_t)(group >> 8);
		out[n++] = (uint8_t)group;
		out[n++] = (uint8_t)(share >> 8);
		out[n++] = (uint8_t)share;
		if (key)
			memcpy(out + n, key, share);
		else
			memset(out + n, 9, share);
		n += share;
	}
	out[ext] = (uint8_t)((n - ext - 2) >> 8);
	out[ext + 1] = (uint8_t)(n - ext - 2);
	tls_hs_put(out + TLS_REC_HDR, TLS_HS_SERVER_HELLO, n - TLS_REC_HDR - TLS_HS_HDR);
	tls_rec_put(out, TLS_CT_HANDSHAKE, 0x0303, (uint16_t)(n - TLS_REC_HDR));
	return n;
}

static void refused_server_hellos(void **state)
{
	static const struct {
		uint16_t group;
		bool hrr;
		size_t share;
		enum tls_err err;
	} cases[] = {
	    {TLS_GROUP_MLKEM768X, false, 1119, TLS_ERR_MLKEM},
	    {TLS_GROUP_MLKEM768X, false, 32, TLS_ERR_MLKEM},
	    {TLS_GROUP_X25519, true, 0, TLS_ERR_HRR},
	    {TLS_GROUP_MLKEM768X, true, 0, TLS_ERR_HRR},
	    {0x001e, true, 0, TLS_ERR_HRR}, /* x448, never offered */
	    {TLS_GROUP_P256, false, 0, TLS_ERR_PARAMETER},
	};
	struct tls_client_config cfg = {.sni = SNI, .rand = test_rand, .verify = tls_verify_any};
	uint8_t sh[2048];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tls_client *c = tls_client_new(&cfg);
		struct tls_event ev;
		size_t n = server_hello_share(sh, c, cases[i].group, cases[i].hrr, NULL,
		                              cases[i].share),
		       out_len;
		const uint8_t *out;

		tls_client_out_done(c, TLS_OUT_BUF);
		assert_int_equal(tls_client_recv(c, sh, n, &ev), n);
		assert_int_equal(ev.kind, TLS_EV_FAILED);
		assert_int_equal(ev.err, cases[i].err);
		assert_int_equal(tls_client_stats(c)->fail[cases[i].err], 1);
		/* A fatal alert, in the clear: there are no keys yet. */
		out = tls_client_out(c, &out_len);
		assert_int_equal(out_len, 7);
		assert_int_equal(out[0], TLS_CT_ALERT);
		assert_int_equal(out[5], 2);
		/* Whatever follows is dropped. */
		assert_int_equal(tls_client_recv(c, sh, 10, &ev), 10);
		assert_int_equal(ev.kind, TLS_EV_FAILED);
		tls_client_free(c);
	}
}

/* Garbage and oversize records fail the connection, never read past. */
static void refused_records(void **state)
{
	struct tls_client_config cfg = {.sni = SNI, .rand = test_rand, .verify = tls_verify_any};
	static const uint8_t bad_type[] = {0x30, 3, 3, 0, 1, 0};
	static const uint8_t oversize[] = {22, 3, 3, 0x41, 0x01};
	static const uint8_t app_early[] = {23, 3, 3, 0, 20};
	static const uint8_t http[] = "GET / HTTP/1.1\r\n";
	const uint8_t *in[] = {bad_type, oversize, app_early, http};
	size_t lens[] = {sizeof(bad_type), sizeof(oversize), sizeof(app_early), sizeof(http)};
	enum tls_err want[] = {TLS_ERR_DECODE, TLS_ERR_DECODE, TLS_ERR_UNEXPECTED, TLS_ERR_DECODE};
	uint8_t buf[64];

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		struct tls_client *c = tls_client_new(&cfg);
		struct tls_event ev = {0};
		size_t used = 0;

		memset(buf, 0, sizeof(buf));
		memcpy(buf, in[i], lens[i]);
		while (used < sizeof(buf) && ev.kind != TLS_EV_FAILED)
			used += tls_client_recv(c, buf + used, sizeof(buf) - used, &ev);
		assert_int_equal(ev.kind, TLS_EV_FAILED);
		assert_int_equal(ev.err, want[i]);
		tls_client_free(c);
	}
}

/* ---- a server flight rewritten ---- */

/* The server's handshake traffic secret, from OpenSSL's key log. */
static uint8_t s_hs_secret[32];

static void keylog_cb(const SSL *ssl, const char *line)
{
	static const char label[] = "SERVER_HANDSHAKE_TRAFFIC_SECRET ";
	const char *p;

	(void)ssl;
	if (strncmp(line, label, sizeof(label) - 1) != 0)
		return;
	p = strchr(line + sizeof(label) - 1, ' ');
	assert_non_null(p);
	for (size_t i = 0; i < sizeof(s_hs_secret); i++)
		assert_int_equal(sscanf(p + 1 + 2 * i, "%2hhx", &s_hs_secret[i]), 1);
}

/* HKDF-Expand-Label over SHA-256. */
static void expand_label_ctx(uint8_t *out, size_t n, const uint8_t secret[32], const char *label,
                             const uint8_t *ctx, size_t ctx_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
	EVP_KDF_CTX *k = EVP_KDF_CTX_new(kdf);
	/* HkdfLabel (RFC 8446 7.1): length, "tls13 " label, context. */
	char full[64];
	int full_len = snprintf(full, sizeof(full), "tls13 %s", label);
	uint8_t info[128] = {0, (uint8_t)n, (uint8_t)full_len};
	size_t i = 3;
	int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
	OSSL_PARAM prm[5];

	assert_true(full_len > 6 && (size_t)full_len < sizeof(full) && ctx_len <= 48);
	memcpy(info + i, full, (size_t)full_len);
	i += (size_t)full_len;
	info[i++] = (uint8_t)ctx_len;
	if (ctx_len > 0)
		memcpy(info + i, ctx, ctx_len);
	i += ctx_len;
	prm[0] = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	prm[1] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
	prm[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, 32);
	prm[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, i);
	prm[4] = OSSL_PARAM_construct_end();
	assert_int_equal(EVP_KDF_derive(k, out, n, prm), 1);
	EVP_KDF_CTX_free(k);
	EVP_KDF_free(kdf);
}

static void expand_label(uint8_t *out, size_t n, const uint8_t secret[32], const char *label)
{
	expand_label_ctx(out, n, secret, label, NULL, 0);
}

/* HKDF-Extract over SHA-256. */
static void extract(uint8_t out[32], const uint8_t salt[32], const uint8_t *ikm, size_t n)
{
	unsigned len = 32;

	assert_non_null(HMAC(EVP_sha256(), salt, 32, ikm, n, out, &len));
}

/* Opens (enc 0) or seals (enc 1) the AES-128-GCM record at rec in place,
 * sequence number seq; the body's length includes the tag. */
static void crypt_record(uint8_t *rec, size_t body_len, uint64_t seq, int enc)
{
	uint8_t key[16], iv[12];
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	size_t n = body_len - 16;
	int outl;

	expand_label(key, sizeof(key), s_hs_secret, "key");
	expand_label(iv, sizeof(iv), s_hs_secret, "iv");
	for (unsigned i = 0; i < 8; i++)
		iv[11 - i] ^= (uint8_t)(seq >> (8 * i));
	assert_int_equal(EVP_CipherInit_ex(x, EVP_aes_128_gcm(), NULL, key, iv, enc), 1);
	assert_int_equal(EVP_CipherUpdate(x, NULL, &outl, rec, TLS_REC_HDR), 1);
	assert_int_equal(EVP_CipherUpdate(x, rec + TLS_REC_HDR, &outl, rec + TLS_REC_HDR, (int)n),
	                 1);
	if (!enc)
		assert_int_equal(
		    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, 16, rec + TLS_REC_HDR + n), 1);
	assert_int_equal(EVP_CipherFinal_ex(x, rec + TLS_REC_HDR + n, &outl), 1);
	if (enc)
		assert_int_equal(
		    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, rec + TLS_REC_HDR + n), 1);
	EVP_CIPHER_CTX_free(x);
}

/*
 * A server whose CertificateVerify names another signature scheme (its
 * flight opened with the key log's secret, the scheme rewritten, sealed
 * again): ML-DSA, which the hello offers and libcrypto 3.0 cannot verify,
 * fails the handshake as unsupported; GREASE or PKCS#1 v1.5, never valid
 * there, as a bad parameter.
 */
static void refused_signature_schemes(void **state)
{
	static const struct {
		uint16_t scheme;
		enum tls_err err;
	} cases[] = {
	    {0x0904, TLS_ERR_UNSUPPORTED}, {0x0905, TLS_ERR_UNSUPPORTED},
	    {0x0906, TLS_ERR_UNSUPPORTED}, {0x0a0a, TLS_ERR_PARAMETER},
	    {0x0401, TLS_ERR_PARAMETER},
	};
	static uint8_t flight[65536];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn k;
		const uint8_t *out;
		size_t n, at = 0;
		uint64_t seq = 0;
		bool rewritten = false;
		int r;

		conn_open(&k, "TLS_AES_128_GCM_SHA256", tls_verify_any, NULL);
		SSL_CTX_set_keylog_callback(k.ctx, keylog_cb);
		out = tls_client_out(k.c, &n);
		assert_int_equal(BIO_write(k.rbio, out, (int)n), (int)n);
		tls_client_out_done(k.c, n);
		(void)SSL_do_handshake(k.ssl);
		r = BIO_read(k.wbio, flight, sizeof(flight));
		assert_true(r > 0);
		/* Every handshake message of the flight in its own record or
		 * not: find CertificateVerify's scheme in the opened records. */
		while (at + TLS_REC_HDR <= (size_t)r) {
			size_t len = (size_t)(flight[at + 3] << 8 | flight[at + 4]);
			uint8_t *body = flight + at + TLS_REC_HDR;

			if (flight[at] == TLS_CT_APP) {
				crypt_record(flight + at, len, seq, 0);
				for (size_t m = 0; m + TLS_HS_HDR <= len - 17;) {
					size_t ml = (size_t)body[m + 1] << 16 | body[m + 2] << 8 |
					            body[m + 3];

					if (body[m] == TLS_HS_CERTIFICATE_VERIFY) {
						body[m + 4] = (uint8_t)(cases[i].scheme >> 8);
						body[m + 5] = (uint8_t)cases[i].scheme;
						rewritten = true;
					}
					m += TLS_HS_HDR + ml;
				}
				crypt_record(flight + at, len, seq++, 1);
			}
			at += TLS_REC_HDR + len;
		}
		assert_true(rewritten);
		to_client(&k, flight, (size_t)r);
		assert_true(k.failed);
		assert_int_equal(k.err, cases[i].err);
		assert_int_equal(tls_client_stats(k.c)->fail[cases[i].err], 1);
		conn_close(&k);
	}
}

/*
 * X25519MLKEM768 chosen: a ServerHello whose share is an encapsulation to
 * the hello's ML-KEM key and an X25519 key, then EncryptedExtensions sealed
 * with a handshake secret this test derives itself (RFC 8446 7.1, the
 * secret ML-KEM's then X25519's): the client reads it. The same with one
 * byte of the ciphertext changed: its secret is another, so the record
 * does not open.
 */
static void hybrid_server(void **state)
{
	static const uint8_t ee[] = {TLS_HS_ENCRYPTED_EXTENSIONS, 0, 0, 2, 0, 0, TLS_CT_HANDSHAKE};
	static const uint8_t zero[32];

	(void)state;
	for (int flip = 0; flip < 2; flip++) {
		struct tls_client_config cfg = {
		    .sni = SNI, .rand = test_rand, .verify = tls_verify_any};
		struct tls_client *c = tls_client_new(&cfg);
		struct tls_ch_view v;
		uint8_t share[MLKEM768_CT_LEN + TLS_X25519_LEN], shared[64], m[32], priv[32];
		uint8_t early[32], derived[32], hs[32], th[32], sh[2048];
		size_t chn, n, used, out_len;
		const uint8_t *ch = tls_client_hello(c, &chn), *out;
		struct tls_event ev = {0};
		EVP_MD_CTX *x = EVP_MD_CTX_new();
		unsigned thl;

		tls_client_out_done(c, TLS_OUT_BUF);
		assert_true(tls_ch_get(&v, ch + TLS_HS_HDR, chn - TLS_HS_HDR));
		assert_non_null(v.mlkem);
		test_rand(NULL, m, sizeof(m));
		test_rand(NULL, priv, sizeof(priv));
		assert_int_equal(mlkem768_encaps(share, shared, v.mlkem, m), 0);
		assert_int_equal(yip_key_public(share + MLKEM768_CT_LEN, priv), 0);
		assert_int_equal(yip_dh(shared + 32, priv, v.mlkem + MLKEM768_EK_LEN), 0);
		n = server_hello_share(sh, c, TLS_GROUP_MLKEM768X, false, share, sizeof(share));
		/* (version, random, session id, suite, compression, extensions'
		 * length, supported_versions, key_share's header) */
		if (flip)
			sh[TLS_REC_HDR + TLS_HS_HDR + 2 + 32 + 1 + 32 + 2 + 1 + 2 + 6 + 8 + 100] ^=
			    1;
		/* The key schedule, from the secret the server holds. */
		extract(early, zero, zero, 32);
		assert_int_equal(EVP_Digest(NULL, 0, th, &thl, EVP_sha256(), NULL), 1);
		expand_label_ctx(derived, 32, early, "derived", th, 32);
		extract(hs, derived, shared, sizeof(shared));
		assert_int_equal(EVP_DigestInit_ex(x, EVP_sha256(), NULL), 1);
		assert_int_equal(EVP_DigestUpdate(x, ch, chn), 1);
		assert_int_equal(EVP_DigestUpdate(x, sh + TLS_REC_HDR, n - TLS_REC_HDR), 1);
		assert_int_equal(EVP_DigestFinal_ex(x, th, &thl), 1);
		EVP_MD_CTX_free(x);
		expand_label_ctx(s_hs_secret, 32, hs, "s hs traffic", th, 32);
		/* Then EncryptedExtensions (empty), sealed at sequence 0. */
		tls_rec_put(sh + n, TLS_CT_APP, 0x0303, sizeof(ee) + 16);
		memcpy(sh + n + TLS_REC_HDR, ee, sizeof(ee));
		crypt_record(sh + n, sizeof(ee) + 16, 0, 1);
		n += TLS_REC_HDR + sizeof(ee) + 16;
		used = 0;
		do
			used += tls_client_recv(c, sh + used, n - used, &ev);
		while (used < n && ev.kind != TLS_EV_FAILED);
		if (!flip) {
			assert_int_equal(used, n);
			assert_int_not_equal(ev.kind, TLS_EV_FAILED);
			assert_int_equal(tls_client_err(c), TLS_ERR_NONE);
			assert_int_equal(tls_client_cipher(c), 0x1301);
		} else {
			assert_int_equal(ev.kind, TLS_EV_FAILED);
			assert_int_not_equal(tls_client_err(c), TLS_ERR_NONE);
			out = tls_client_out(c, &out_len);
			assert_int_equal(out_len, 7); /* a fatal alert */
			assert_int_equal(out[0], TLS_CT_ALERT);
			assert_int_equal(out[5], 2);
		}
		tls_client_free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(handshake_aes128),
	    cmocka_unit_test(handshake_aes256),
	    cmocka_unit_test(handshake_chacha),
	    cmocka_unit_test(handshake_rsa_pss),
	    cmocka_unit_test(no_alloc_per_record),
	    cmocka_unit_test(hello_fields),
	    cmocka_unit_test(hello_permutation),
	    cmocka_unit_test(hello_no_sni),
	    cmocka_unit_test(retry_p256),
	    cmocka_unit_test(retry_p384),
	    cmocka_unit_test(refused_certificate),
	    cmocka_unit_test(pinned_key),
	    cmocka_unit_test(ca_store),
	    cmocka_unit_test(refused_server_hellos),
	    cmocka_unit_test(hybrid_server),
	    cmocka_unit_test(refused_records),
	    cmocka_unit_test(refused_signature_schemes),
	};

	if (!CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free))
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
