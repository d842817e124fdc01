/*
 * The TLS server engine (src/tls/server.c) on arbitrary client bytes after
 * a valid start: a yip client's hello (fixed randomness, tls_rand.h), a
 * ServerHello template built for it (the first input byte picks X25519 or
 * X25519MLKEM768, a suite, a ChangeCipherSpec and target record lengths),
 * the server's flight handed to that client. With bit 7 of the second
 * byte set, the client's real ChangeCipherSpec and Finished go first, so
 * the rest meets a connected server; the other bits set the size of the
 * pieces. Once connected, the server seals and pads too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "tls/server.h"
#include "tls/tls.h"
#include "check.h"
#include "tls_rand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One P-256 key and a certificate for it, made once. */
static EVP_PKEY *key;
static uint8_t cert[1024];
static size_t cert_len;

static void make_cert(void)
{
	X509 *x = X509_new();
	uint8_t *p = cert;
	int n;

	key = EVP_EC_gen("P-256");
	CHECK(key != NULL && x != NULL);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	CHECK(X509_sign(x, key, EVP_sha256()) > 0);
	n = i2d_X509(x, NULL);
	CHECK(n > 0 && (size_t)n <= sizeof(cert));
	cert_len = (size_t)i2d_X509(x, &p);
	X509_free(x);
}

static void drain_to(struct tls_client *c, struct tls_server *s)
{
	const uint8_t *p;
	size_t n;

	p = tls_server_out(s, &n);
	while (n > 0) {
		struct tls_event ev;
		size_t k = tls_client_recv(c, p, n, &ev);

		p += k;
		n -= k;
	}
	(void)tls_server_out(s, &n);
	tls_server_out_done(s, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t lens[] = {40, 900, 69, 18, 18};
	static uint8_t share[1120], rec[TLS_REC_MAX];
	struct tls_client_config ccfg = {.rand = tls_rand, .verify = tls_verify_any};
	struct tls_server_config cfg;
	const uint8_t *certs[1] = {cert};
	size_t cert_lens[1], piece, n, ch_len;
	uint8_t sh_buf[1400], random[TLS_RANDOM_LEN] = {0};
	struct tls_sh sh = {.random = random, .version = 0x0304, .share = share};
	struct tls_client *c;
	struct tls_server *s;
	const uint8_t *ch;
	enum tls_err err;

	if (size < 2)
		return 0;
	if (key == NULL)
		make_cert();
	cert_lens[0] = cert_len;
	tls_rand_reset();
	c = tls_client_new(&ccfg);
	CHECK(c != NULL);
	(void)tls_client_out(c, &n);
	tls_client_out_done(c, n);
	ch = tls_client_hello(c, &ch_len);
	sh.sid_len = ch[TLS_HS_HDR + 34];
	sh.sid = ch + TLS_HS_HDR + 35;
	sh.cipher = (uint16_t)(0x1301 + data[0] % 3);
	sh.share_group = data[0] & 4 ? TLS_GROUP_MLKEM768X : TLS_GROUP_X25519;
	sh.share_len = data[0] & 4 ? sizeof(share) : TLS_X25519_LEN;
	cfg = (struct tls_server_config){.rand = tls_rand,
	                                 .client_hello = ch,
	                                 .client_hello_len = ch_len,
	                                 .template_sh = sh_buf,
	                                 .template_sh_len = tls_sh_put(sh_buf, sizeof(sh_buf), &sh),
	                                 .alpn = (const uint8_t *)"h2",
	                                 .alpn_len = 2,
	                                 .chain = certs,
	                                 .chain_lens = cert_lens,
	                                 .chain_n = 1,
	                                 .key = key};
	s = tls_server_new(&cfg, &err);
	CHECK(s != NULL && err == TLS_ERR_NONE);
	drain_to(c, s);
	/* The flight as the front makes it, each record drained: a CCS, the
	 * target's lengths, the rest. */
	CHECK(!(data[0] & 8) || tls_server_ccs(s));
	for (size_t i = 0; data[0] & 16 && i < sizeof(lens) / sizeof(lens[0]); i++) {
		CHECK(tls_server_flight(s, lens[i]));
		drain_to(c, s);
	}
	CHECK(tls_server_flight_rest(s));
	drain_to(c, s);
	CHECK(tls_client_connected(c));
	piece = data[1] & 0x7f ? data[1] & 0x7f : size;
	if (data[1] & 0x80) {
		/* The client's own CCS and Finished first. */
		const uint8_t *p = tls_client_out(c, &n);
		struct tls_server_info info;

		while (n > 0) {
			struct tls_event ev;
			size_t k = tls_server_recv(s, p, n, &ev);

			CHECK(k > 0 && ev.kind != TLS_EV_FAILED);
			p += k;
			n -= k;
		}
		tls_server_info(s, &info);
		CHECK(info.connected);
	}
	data += 2;
	size -= 2;
	while (size > 0) {
		struct tls_event ev;
		struct tls_server_info info;
		size_t k = tls_server_recv(s, data, size < piece ? size : piece, &ev);

		CHECK(k > 0 && k <= size);
		data += k;
		size -= k;
		tls_server_info(s, &info);
		if (ev.kind == TLS_EV_DATA)
			CHECK(ev.len <= TLS_REC_PLAIN && info.connected);
		if (ev.kind == TLS_EV_FAILED)
			CHECK(ev.err != TLS_ERR_NONE && !info.connected);
		(void)tls_server_out(s, &n);
		tls_server_out_done(s, n);
		if (info.connected) {
			n = tls_server_seal(s, rec, sizeof(rec), data, size < 64 ? size : 64,
			                    size % 32);
			CHECK(n == 0 || n <= sizeof(rec));
		}
	}
	tls_server_close(s);
	tls_server_free(s);
	tls_client_free(c);
	return 0;
}
