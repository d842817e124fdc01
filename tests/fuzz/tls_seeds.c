/*
 * Writes the seed corpora of fuzz_tls_client and fuzz_tls_wire: a real
 * OpenSSL 3 server's bytes to the fuzzer's client (tls_rand.h), one file
 * per TLS 1.3 suite (handshake, tickets, application data, a KeyUpdate,
 * close_notify), and the hello and the server's messages as fuzz_tls_wire
 * inputs. Built and run by hand from the tree's root after make build:
 *
 *   cc -Isrc -Itests/fuzz tests/fuzz/tls_seeds.c build/libyip-engine.a \
 *      -lssl -lcrypto -lsodium -lisal -lm -o /tmp/tls_seeds && /tmp/tls_seeds
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tls/tls.h"
#include "tls_rand.h"

static void save(const char *dir, const char *name, uint8_t lead, const uint8_t *p, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "tests/fuzz/corpus/%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&lead, 1, 1, f) != 1 || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int main(void)
{
	static const char *suites[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
	                               "TLS_CHACHA20_POLY1305_SHA256"};
	static uint8_t rec[65536], flight[200000], buf[65536];
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);

	X509_set_version(x, 2);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"x", -1, -1, 0);
	X509_set_issuer_name(x, name);
	X509_sign(x, key, EVP_sha256());
	/* Sessions 0-2: one per suite. Session 3: a server with P-256 only,
	 * whose HelloRetryRequest the client answers (its EC key is not the
	 * fuzzer's to fix, so the replayed flight fails after the ServerHello). */
	for (int s = 0; s < 4; s++) {
		struct tls_client_config cfg = {
		    .sni = "www.example.com", .rand = tls_rand, .verify = tls_verify_any};
		SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
		SSL *ssl;
		BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
		struct tls_client *c;
		size_t fn = 0, n, w;
		const uint8_t *out;
		char fname[32];
		int r;
		unsigned events = 0;

		SSL_CTX_set_ciphersuites(ctx, suites[s % 3]);
		if (s == 3)
			SSL_CTX_set1_groups_list(ctx, "P-256");
		SSL_CTX_use_certificate(ctx, x);
		SSL_CTX_use_PrivateKey(ctx, key);
		ssl = SSL_new(ctx);
		SSL_set_bio(ssl, rb, wb);
		SSL_set_accept_state(ssl);
		tls_rand_reset();
		c = tls_client_new(&cfg);
		for (int round = 0; round < 12; round++) {
			out = tls_client_out(c, &n);
			BIO_write(rb, out, (int)n);
			tls_client_out_done(c, n);
			if (!SSL_is_init_finished(ssl))
				SSL_do_handshake(ssl);
			else
				while (SSL_read_ex(ssl, buf, sizeof(buf), &w))
					;
			if (round == 3) {
				SSL_write_ex(ssl, "hello from the server", 21, &w);
				SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED);
				SSL_write_ex(ssl, "after the update", 16, &w);
			}
			if (round == 6)
				SSL_shutdown(ssl);
			while ((r = BIO_read(wb, rec, sizeof(rec))) > 0) {
				size_t used = 0;

				if (s == 0 && round == 0) {
					/* The ServerHello's body for fuzz_tls_wire. */
					save("tls_wire", "server_hello", 1, rec + 9,
					     (size_t)(rec[6] << 16 | rec[7] << 8 | rec[8]));
				}
				memcpy(flight + fn, rec, (size_t)r);
				fn += (size_t)r;
				while (used < (size_t)r) {
					struct tls_event ev;

					used +=
					    tls_client_recv(c, rec + used, (size_t)r - used, &ev);
					events |= 1u << ev.kind;
				}
			}
		}
		/* The session must have connected, carried data and closed. */
		if (s < 3 && events != (1u << TLS_EV_NONE | 1u << TLS_EV_CONNECTED |
		                        1u << TLS_EV_DATA | 1u << TLS_EV_CLOSED)) {
			fprintf(stderr, "tls_seeds: %s: %s\n", suites[s % 3],
			        tls_err_name(tls_client_err(c)));
			return 1;
		}
		snprintf(fname, sizeof(fname), "session_%d", s);
		save("tls_client", fname, 0, flight, fn);
		if (s == 0) {
			out = tls_client_hello(c, &n);
			save("tls_wire", "client_hello", 0, out + TLS_HS_HDR, n - TLS_HS_HDR);
			save("tls_wire", "hello_roundtrip", 9, (const uint8_t *)"www.example.com",
			     15);
		}
		tls_client_free(c);
		SSL_free(ssl);
		SSL_CTX_free(ctx);
	}
	X509_free(x);
	EVP_PKEY_free(key);
	return 0;
}
