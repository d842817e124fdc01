/*
 * The TLS client engine's QUIC mode (src/tls, cfg.quic) on arbitrary
 * server handshake bytes at arbitrary encryption levels: the state machine,
 * the level checks and every decoder behind them, EncryptedExtensions'
 * transport parameters included. The input is a first byte (the size of
 * the pieces each chunk is handed over in, 0 for whole) and then chunks of
 * [level][length, 2 bytes big-endian][bytes]. The client's randomness is
 * fixed (tls_rand.h), so the seed corpus (flights of a GnuTLS QUIC server
 * session, tls_quic_seeds.c) completes real handshakes the fuzzer then
 * mutates. What must hold: secrets come at the Handshake, then the
 * application level, once each, of the suite's hash length; the server's
 * transport parameters, once handed out, parse whole; a failure names an
 * error and leaves the client unconnected.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tls/tls.h"
#include "check.h"
#include "tls_rand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned secrets_seen;

static bool on_secret(void *ctx, enum tls_level level, uint16_t cipher, const uint8_t *rx,
                      const uint8_t *tx, size_t len)
{
	(void)ctx;
	(void)rx;
	(void)tx;
	CHECK(cipher >= 0x1301 && cipher <= 0x1303);
	CHECK(len == (cipher == 0x1302 ? 48u : 32u));
	CHECK(level == (secrets_seen == 0 ? TLS_LEVEL_HANDSHAKE : TLS_LEVEL_APP));
	CHECK(secrets_seen < 2);
	secrets_seen++;
	return true;
}

/* The transport parameters the fuzzer's client (and tls_quic_seeds.c) sends. */
static const uint8_t client_tp[] = {0x01, 0x04, 0x80, 0x00, 0x75, 0x30, 0x0f,
                                    0x00, 0x20, 0x04, 0x80, 0x01, 0x00, 0x00};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_client_config cfg = {
	    .sni = "www.example.com",
	    .rand = tls_rand,
	    .verify = tls_verify_any,
	    .quic = true,
	    .quic_tp = client_tp,
	    .quic_tp_len = sizeof(client_tp),
	    .secret = on_secret,
	};
	struct tls_client *c;
	enum tls_level lvl;
	size_t piece, n;

	if (size == 0)
		return 0;
	tls_rand_reset();
	secrets_seen = 0;
	c = tls_client_new(&cfg);
	CHECK(c != NULL);
	piece = data[0] == 0 ? SIZE_MAX : data[0];
	data++;
	size--;
	(void)tls_client_quic_out(c, &lvl, &n);
	CHECK(lvl == TLS_LEVEL_INITIAL && n > 0);
	tls_client_out_done(c, n);
	while (size >= 3) {
		enum tls_level level = (enum tls_level)(data[0] % 3);
		size_t len = (size_t)data[1] << 8 | data[2];

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		while (len > 0) {
			struct tls_event ev;
			size_t k = len < piece ? len : piece;
			const uint8_t *tp;

			tls_client_quic_recv(c, level, data, k, &ev);
			data += k;
			size -= k;
			len -= k;
			if (ev.kind == TLS_EV_FAILED)
				CHECK(ev.err != TLS_ERR_NONE && !tls_client_connected(c));
			if (ev.kind == TLS_EV_CONNECTED)
				CHECK(secrets_seen == 2);
			tp = tls_client_quic_peer_tp(c, &n);
			if (tp != NULL)
				CHECK(n <= TLS_QUIC_TP_MAX && tls_quic_tp_ok(tp, n));
			(void)tls_client_quic_out(c, &lvl, &n);
			tls_client_out_done(c, n);
		}
	}
	tls_client_free(c);
	return 0;
}
