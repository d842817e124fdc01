/*
 * Writes the seed corpus of fuzz_tls_quic: a GnuTLS 3.7 QUIC server
 * session's handshake bytes to the fuzzer's client (its fixed randomness,
 * tls_rand.h, and its transport parameters), one file per TLS 1.3 suite,
 * in the fuzzer's chunk format. Built and run by hand from the tree's root
 * after make build:
 *
 *   cc -Isrc -Itests/fuzz tests/fuzz/tls_quic_seeds.c build/libyip-engine.a \
 *      -lgnutls -lssl -lcrypto -lsodium -lisal -lm -o /tmp/tls_quic_seeds && /tmp/tls_quic_seeds
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tls/tls.h"
#include "tls_rand.h"

static const uint8_t client_tp[] = {0x01, 0x04, 0x80, 0x00, 0x75, 0x30, 0x0f,
                                    0x00, 0x20, 0x04, 0x80, 0x01, 0x00, 0x00};
static const uint8_t server_tp[] = {0x00, 0x04, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02,
                                    0x67, 0x10, 0x0f, 0x03, 0x01, 0x02, 0x03};

/* The server's bytes, in the fuzzer's chunk format, in the order sent. */
static uint8_t flight[65536];
static size_t flight_n;

static int level_of(gnutls_record_encryption_level_t l)
{
	return l == GNUTLS_ENCRYPTION_LEVEL_INITIAL     ? 0
	       : l == GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE ? 1
	                                                : 2;
}

static int s_read(gnutls_session_t s, gnutls_record_encryption_level_t level,
                  gnutls_handshake_description_t htype, const void *data, size_t n)
{
	(void)s;
	if (htype == GNUTLS_HANDSHAKE_CHANGE_CIPHER_SPEC)
		return 0;
	if (flight_n + 3 + n > sizeof(flight) || n > 0xffff)
		return -1;
	flight[flight_n++] = (uint8_t)level_of(level);
	flight[flight_n++] = (uint8_t)(n >> 8);
	flight[flight_n++] = (uint8_t)n;
	memcpy(flight + flight_n, data, n);
	flight_n += n;
	return 0;
}

static int s_secret(gnutls_session_t s, gnutls_record_encryption_level_t l, const void *r,
                    const void *w, size_t n)
{
	(void)s, (void)l, (void)r, (void)w, (void)n;
	return 0;
}

static int tp_recv(gnutls_session_t s, const unsigned char *d, size_t n)
{
	(void)s, (void)d, (void)n;
	return 0;
}

static int tp_send(gnutls_session_t s, gnutls_buffer_t out)
{
	(void)s;
	return gnutls_buffer_append_data(out, server_tp, sizeof(server_tp)) == 0 ? 0 : -1;
}

static ssize_t no_pull(gnutls_transport_ptr_t p, void *b, size_t n)
{
	(void)b, (void)n;
	gnutls_transport_set_errno((gnutls_session_t)p, EAGAIN);
	return -1;
}

static bool c_secret(void *ctx, enum tls_level level, uint16_t cipher, const uint8_t *rx,
                     const uint8_t *tx, size_t len)
{
	(void)ctx, (void)level, (void)cipher, (void)rx, (void)tx, (void)len;
	return true;
}

int main(void)
{
	static const char *prios[] = {"+AES-128-GCM", "+AES-256-GCM", "+CHACHA20-POLY1305"};
	static const gnutls_datum_t h3 = {(unsigned char *)"h3", 2};
	gnutls_certificate_credentials_t cred;
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	time_t now = time(NULL);
	if (gnutls_global_init() != 0) /* yip skips the load-time set-up */
		return 1;

	gnutls_x509_privkey_init(&key);
	gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
	                             GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	gnutls_x509_crt_init(&crt);
	gnutls_x509_crt_set_version(crt, 3);
	gnutls_x509_crt_set_serial(crt, "\x01", 1);
	gnutls_x509_crt_set_activation_time(crt, now - 3600);
	gnutls_x509_crt_set_expiration_time(crt, now + 86400 * 3650);
	gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "www.example.com", 15);
	gnutls_x509_crt_set_key(crt, key);
	gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
	gnutls_certificate_allocate_credentials(&cred);
	gnutls_certificate_set_x509_key(cred, &crt, 1, key);
	for (unsigned i = 0; i < 3; i++) {
		struct tls_client_config cfg = {
		    .sni = "www.example.com",
		    .rand = tls_rand,
		    .verify = tls_verify_any,
		    .quic = true,
		    .quic_tp = client_tp,
		    .quic_tp_len = sizeof(client_tp),
		    .secret = c_secret,
		};
		char prio[256], path[256];
		gnutls_session_t s;
		struct tls_client *c;
		enum tls_level lvl;
		const uint8_t *p;
		size_t n, off;
		int rv = GNUTLS_E_AGAIN;
		FILE *f;
		uint8_t lead = 0;

		tls_rand_reset();
		c = tls_client_new(&cfg);
		snprintf(prio, sizeof(prio),
		         "NORMAL:-VERS-ALL:+VERS-TLS1.3:%%DISABLE_TLS13_COMPAT_MODE:-CIPHER-ALL:%s",
		         prios[i]);
		gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA);
		gnutls_priority_set_direct(s, prio, NULL);
		gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
		gnutls_alpn_set_protocols(s, &h3, 1, GNUTLS_ALPN_MANDATORY);
		gnutls_handshake_set_read_function(s, s_read);
		gnutls_handshake_set_secret_function(s, s_secret);
		gnutls_session_ext_register(s, "QUIC Transport Parameters", 0x39, GNUTLS_EXT_TLS,
		                            tp_recv, tp_send, NULL, NULL, NULL,
		                            GNUTLS_EXT_FLAG_TLS | GNUTLS_EXT_FLAG_CLIENT_HELLO |
		                                GNUTLS_EXT_FLAG_EE);
		gnutls_transport_set_ptr(s, s);
		gnutls_transport_set_pull_function(s, no_pull);
		flight_n = 0;
		p = tls_client_quic_out(c, &lvl, &n);
		gnutls_handshake_write(s, GNUTLS_ENCRYPTION_LEVEL_INITIAL, p, n);
		tls_client_out_done(c, n);
		rv = gnutls_handshake(s);
		/* The client's side, to get its Finished to the server. */
		for (off = 0; off < flight_n;) {
			struct tls_event ev;
			size_t len = (size_t)flight[off + 1] << 8 | flight[off + 2];

			tls_client_quic_recv(c, (enum tls_level)flight[off], flight + off + 3, len,
			                     &ev);
			off += 3 + len;
		}
		p = tls_client_quic_out(c, &lvl, &n);
		gnutls_handshake_write(s, GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE, p, n);
		rv = gnutls_handshake(s);
		if (rv != 0 || !tls_client_connected(c)) {
			fprintf(stderr, "%s: handshake failed (%d, %s)\n", prios[i], rv,
			        tls_err_name(tls_client_err(c)));
			return 1;
		}
		snprintf(path, sizeof(path), "tests/fuzz/corpus/tls_quic/suite-%u", i + 1);
		f = fopen(path, "wb");
		if (!f || fwrite(&lead, 1, 1, f) != 1 ||
		    fwrite(flight, 1, flight_n, f) != flight_n || fclose(f) != 0) {
			perror(path);
			return 1;
		}
		tls_client_free(c);
		gnutls_deinit(s);
	}
	gnutls_certificate_free_credentials(cred);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return 0;
}
