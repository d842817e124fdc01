/*
 * The TLS client engine (src/tls) on arbitrary server bytes: the record
 * layer, the handshake's state machine and every decoder behind it. The
 * client's randomness is fixed (tls_rand.h), so the seed corpus, server
 * flights recorded from OpenSSL by tls_seeds.c, completes real handshakes
 * and opens real records (three suites, application data, KeyUpdate,
 * tickets, close_notify) that the fuzzer then mutates. The first byte
 * sets the size of the pieces the input is handed over in. Once
 * connected, the client seals, pads and updates its keys too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tls/tls.h"
#include "check.h"
#include "tls_rand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rec[TLS_REC_MAX];
	struct tls_client_config cfg = {
	    .sni = "www.example.com", .rand = tls_rand, .verify = tls_verify_any};
	struct tls_client *c;
	size_t piece, n;

	if (size == 0)
		return 0;
	tls_rand_reset();
	c = tls_client_new(&cfg);
	CHECK(c != NULL);
	piece = data[0] == 0 ? size : data[0];
	data++;
	size--;
	(void)tls_client_out(c, &n);
	tls_client_out_done(c, n);
	while (size > 0) {
		struct tls_event ev;
		size_t k = tls_client_recv(c, data, size < piece ? size : piece, &ev);

		CHECK(k > 0 && k <= size);
		data += k;
		size -= k;
		if (ev.kind == TLS_EV_DATA)
			CHECK(ev.len <= TLS_REC_PLAIN);
		if (ev.kind == TLS_EV_FAILED)
			CHECK(ev.err != TLS_ERR_NONE && !tls_client_connected(c));
		(void)tls_client_out(c, &n);
		tls_client_out_done(c, n);
		if (tls_client_connected(c)) {
			n = tls_client_seal(c, rec, sizeof(rec), data, size < 64 ? size : 64,
			                    size % 32);
			CHECK(n == 0 || n <= sizeof(rec));
			if (size % 7 == 0)
				(void)tls_client_key_update(c, size % 2);
		}
	}
	tls_client_close(c);
	tls_client_free(c);
	return 0;
}
