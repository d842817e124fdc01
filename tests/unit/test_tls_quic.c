/*
 * The TLS client engine's QUIC mode (src/tls, cfg.quic) against a GnuTLS
 * 3.7 server session in QUIC mode in the same process (the hooks ngtcp2's
 * GnuTLS binding drives: handshake bytes per encryption level in and out,
 * secrets per level, quic_transport_parameters as a registered extension).
 * For each of the three TLS 1.3 suites: the handshake completes with ALPN
 * h3 on both sides, both sides hold the same handshake and application
 * secrets, each side's transport parameters reach the other byte-exact.
 * The hello is chromium 156's QUIC hello (tests/tls/quic_chromium.md): no
 * session id, no GREASE, the 12 extensions, permuted; the transport
 * parameters are chromium's (tls_quic_tp_put). Refusals: a server without
 * transport parameters, bytes at the wrong level, a record-layer call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tls/tls.h"
#include "wire/tls.h"

#define TESTRAND_SEED 0x9001u
#include "testrand.h"

#define SNI "www.example.com"

static void test_rand(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	fill_random(out, n);
}

static gnutls_certificate_credentials_t cred;

/* The server's transport parameters (any well-formed bytes: the engine
 * hands them out as they are). */
static const uint8_t server_tp[] = {
    0x00, 0x04, 0xde, 0xad, 0xbe, 0xef, /* original_destination_connection_id */
    0x01, 0x02, 0x67, 0x10,             /* max_idle_timeout 10000 */
    0x04, 0x04, 0x80, 0x10, 0x00, 0x00, /* initial_max_data */
    0x0f, 0x03, 0x01, 0x02, 0x03,       /* initial_source_connection_id */
    0x20, 0x02, 0x44, 0x00,             /* max_datagram_frame_size 1024 */
};

/* One side's secrets at a level (rx, tx from that side's view). */
struct secrets {
	uint8_t rx[48], tx[48];
	size_t len;
	bool rx_set, tx_set;
};

/* The GnuTLS server and what went between it and the client. */
struct conn {
	gnutls_session_t s;
	struct tls_client *c;
	bool send_tp;
	/* Server to client, per level. */
	uint8_t q[3][16384];
	size_t qn[3];
	struct secrets cs[3], ss[3];
	uint16_t cipher;
	uint8_t client_tp[TLS_QUIC_TP_MAX];
	size_t client_tp_len;
	bool got_client_tp;
	int alert;
	unsigned hellos; /* ClientHellos the client sent */
};

/* The last handshake_suite's count of hellos. */
static unsigned last_hellos;

static int level_of(gnutls_record_encryption_level_t l)
{
	switch (l) {
	case GNUTLS_ENCRYPTION_LEVEL_INITIAL:
		return TLS_LEVEL_INITIAL;
	case GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE:
		return TLS_LEVEL_HANDSHAKE;
	case GNUTLS_ENCRYPTION_LEVEL_APPLICATION:
		return TLS_LEVEL_APP;
	default:
		return -1; /* early data: never */
	}
}

static gnutls_record_encryption_level_t gnutls_level(enum tls_level l)
{
	return l == TLS_LEVEL_INITIAL     ? GNUTLS_ENCRYPTION_LEVEL_INITIAL
	       : l == TLS_LEVEL_HANDSHAKE ? GNUTLS_ENCRYPTION_LEVEL_HANDSHAKE
	                                  : GNUTLS_ENCRYPTION_LEVEL_APPLICATION;
}

static int s_read(gnutls_session_t s, gnutls_record_encryption_level_t level,
                  gnutls_handshake_description_t htype, const void *data, size_t n)
{
	struct conn *k = gnutls_session_get_ptr(s);
	int l = level_of(level);

	if (htype == GNUTLS_HANDSHAKE_CHANGE_CIPHER_SPEC)
		return 0;
	assert_true(l >= 0);
	assert_true(k->qn[l] + n <= sizeof(k->q[l]));
	memcpy(k->q[l] + k->qn[l], data, n);
	k->qn[l] += n;
	return 0;
}

static int s_secret(gnutls_session_t s, gnutls_record_encryption_level_t level, const void *rd,
                    const void *wr, size_t n)
{
	struct conn *k = gnutls_session_get_ptr(s);
	int l = level_of(level);

	assert_true(l > 0 && n <= 48);
	k->ss[l].len = n;
	if (rd) {
		memcpy(k->ss[l].rx, rd, n);
		k->ss[l].rx_set = true;
	}
	if (wr) {
		memcpy(k->ss[l].tx, wr, n);
		k->ss[l].tx_set = true;
	}
	return 0;
}

static int s_alert(gnutls_session_t s, gnutls_record_encryption_level_t level,
                   gnutls_alert_level_t alevel, gnutls_alert_description_t desc)
{
	struct conn *k = gnutls_session_get_ptr(s);

	(void)level;
	(void)alevel;
	k->alert = (int)desc;
	return 0;
}

static int tp_recv(gnutls_session_t s, const unsigned char *data, size_t n)
{
	struct conn *k = gnutls_session_get_ptr(s);

	assert_true(n <= sizeof(k->client_tp));
	memcpy(k->client_tp, data, n);
	k->client_tp_len = n;
	k->got_client_tp = true;
	return 0;
}

static int tp_send(gnutls_session_t s, gnutls_buffer_t out)
{
	struct conn *k = gnutls_session_get_ptr(s);

	if (!k->send_tp)
		return 0; /* nothing: GnuTLS leaves the extension out */
	return gnutls_buffer_append_data(out, server_tp, sizeof(server_tp)) == 0
	           ? (int)sizeof(server_tp)
	           : -1;
}

static ssize_t no_pull(gnutls_transport_ptr_t p, void *buf, size_t n)
{
	(void)buf;
	(void)n;
	gnutls_transport_set_errno((gnutls_session_t)p, EAGAIN);
	return -1;
}

static ssize_t no_push(gnutls_transport_ptr_t p, const void *buf, size_t n)
{
	(void)p;
	(void)buf;
	(void)n;
	fail_msg("a QUIC session pushed a record");
	return -1;
}

static bool c_secret(void *ctx, enum tls_level level, uint16_t cipher, const uint8_t *rx,
                     const uint8_t *tx, size_t n)
{
	struct conn *k = ctx;

	assert_true(level == TLS_LEVEL_HANDSHAKE || level == TLS_LEVEL_APP);
	assert_true(n == 32 || n == 48);
	memcpy(k->cs[level].rx, rx, n);
	memcpy(k->cs[level].tx, tx, n);
	k->cs[level].len = n;
	k->cs[level].rx_set = k->cs[level].tx_set = true;
	k->cipher = cipher;
	return true;
}

static int setup(void **state)
{
	/* yip skips GnuTLS's load-time set-up (src/quic/conn.c). */
	if (gnutls_global_init() != 0)
		return -1;
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	time_t now = time(NULL);

	(void)state;
	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(
	    gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
	                                 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
	    0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
	assert_int_equal(gnutls_x509_crt_set_serial(crt, "\x01", 1), 0);
	assert_int_equal(gnutls_x509_crt_set_activation_time(crt, now - 3600), 0);
	assert_int_equal(gnutls_x509_crt_set_expiration_time(crt, now + 86400), 0);
	assert_int_equal(
	    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, SNI, strlen(SNI)),
	    0);
	assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
	assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_certificate_allocate_credentials(&cred), 0);
	assert_int_equal(gnutls_certificate_set_x509_key(cred, &crt, 1, key), 0);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gnutls_certificate_free_credentials(cred);
	return 0;
}

/* chromium's transport parameters, with this run's random choices. */
static size_t chromium_tp(uint8_t *out, size_t cap)
{
	struct tls_quic_tp tp = {
	    .max_idle_timeout = 30000,
	    .max_udp_payload_size = 1472,
	    .initial_max_data = 15728640,
	    .initial_max_stream_data_bidi_local = 6291456,
	    .initial_max_stream_data_bidi_remote = 6291456,
	    .initial_max_stream_data_uni = 6291456,
	    .initial_max_streams_bidi = 100,
	    .initial_max_streams_uni = 103,
	    .max_datagram_frame_size = 65536,
	    .google_options = {'O', 'R', 'I', 'G'},
	    .grease_version = 0x4a4a0a9a,
	    .grease_version_first = true,
	    .grease_id = 27 + 31 * 0x17f0c3b5aaULL,
	    .grease_len = 9,
	};

	for (unsigned i = 0; i < TLS_QUIC_TPS; i++)
		tp.order[i] = (uint8_t)((i * 5 + 3) % TLS_QUIC_TPS);
	fill_random(tp.grease, tp.grease_len);
	return tls_quic_tp_put(out, cap, &tp);
}

static uint8_t client_tp[256];
static size_t client_tp_len;

static void conn_open(struct conn *k, const char *prio, bool send_tp)
{
	static const gnutls_datum_t h3 = {(unsigned char *)"h3", 2};
	struct tls_client_config cfg = {
	    .sni = SNI,
	    .rand = test_rand,
	    .verify = tls_verify_any,
	    .quic = true,
	    .secret = c_secret,
	};

	memset(k, 0, sizeof(*k));
	k->send_tp = send_tp;
	k->alert = -1;
	client_tp_len = chromium_tp(client_tp, sizeof(client_tp));
	assert_true(client_tp_len > 0);
	cfg.quic_tp = client_tp;
	cfg.quic_tp_len = client_tp_len;
	cfg.secret_ctx = k;
	assert_int_equal(gnutls_init(&k->s, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA), 0);
	gnutls_session_set_ptr(k->s, k);
	assert_int_equal(gnutls_priority_set_direct(k->s, prio, NULL), 0);
	assert_int_equal(gnutls_credentials_set(k->s, GNUTLS_CRD_CERTIFICATE, cred), 0);
	assert_int_equal(gnutls_alpn_set_protocols(k->s, &h3, 1, GNUTLS_ALPN_MANDATORY), 0);
	gnutls_handshake_set_read_function(k->s, s_read);
	gnutls_handshake_set_secret_function(k->s, s_secret);
	gnutls_alert_set_read_function(k->s, s_alert);
	assert_int_equal(
	    gnutls_session_ext_register(k->s, "QUIC Transport Parameters", 0x39, GNUTLS_EXT_TLS,
	                                tp_recv, tp_send, NULL, NULL, NULL,
	                                GNUTLS_EXT_FLAG_TLS | GNUTLS_EXT_FLAG_CLIENT_HELLO |
	                                    GNUTLS_EXT_FLAG_EE),
	    0);
	gnutls_transport_set_ptr(k->s, k->s);
	gnutls_transport_set_pull_function(k->s, no_pull);
	gnutls_transport_set_push_function(k->s, no_push);
	k->c = tls_client_new(&cfg);
	assert_non_null(k->c);
}

static void conn_close(struct conn *k)
{
	tls_client_free(k->c);
	gnutls_deinit(k->s);
}

/*
 * Moves handshake bytes both ways until neither side has any; the
 * client's events land in evs (the last one kept, CONNECTED if seen).
 * Returns the server's last gnutls_handshake result.
 */
static int pump(struct conn *k, struct tls_event *last)
{
	int srv = GNUTLS_E_AGAIN;
	bool moved = true, connected = false;

	memset(last, 0, sizeof(*last));
	while (moved) {
		enum tls_level lvl;
		size_t n;
		const uint8_t *p = tls_client_quic_out(k->c, &lvl, &n);

		moved = false;
		if (n > 0) {
			if (lvl == TLS_LEVEL_INITIAL && p[0] == TLS_HS_CLIENT_HELLO)
				k->hellos++;
			assert_int_equal(gnutls_handshake_write(k->s, gnutls_level(lvl), p, n), 0);
			tls_client_out_done(k->c, n);
			moved = true;
		}
		if (srv != 0) {
			srv = gnutls_handshake(k->s);
			if (srv < 0 && gnutls_error_is_fatal(srv))
				return srv;
		}
		/* The server's bytes to the client, a level at a time, in
		 * pieces of odd sizes (as CRYPTO frames would bring them). */
		for (int l = 0; l < 3; l++) {
			size_t off = 0;

			while (off < k->qn[l]) {
				size_t take = k->qn[l] - off < 333 ? k->qn[l] - off : 333;
				struct tls_event ev;

				tls_client_quic_recv(k->c, (enum tls_level)l, k->q[l] + off, take,
				                     &ev);
				off += take;
				if (ev.kind == TLS_EV_CONNECTED)
					connected = true;
				if (ev.kind != TLS_EV_NONE)
					*last = ev;
				if (ev.kind == TLS_EV_FAILED) {
					k->qn[l] = 0;
					return srv;
				}
			}
			if (k->qn[l])
				moved = true;
			k->qn[l] = 0;
		}
	}
	if (connected && last->kind == TLS_EV_NONE)
		last->kind = TLS_EV_CONNECTED;
	return srv;
}

static void handshake_suite(const char *prio, uint16_t id, size_t hlen)
{
	struct conn k;
	struct tls_event ev;
	gnutls_datum_t alpn;
	size_t n;
	const uint8_t *tp;

	conn_open(&k, prio, true);
	assert_int_equal(pump(&k, &ev), 0);
	assert_int_equal(ev.kind, TLS_EV_CONNECTED);
	assert_true(tls_client_connected(k.c));
	assert_int_equal(tls_client_cipher(k.c), id);
	assert_int_equal(k.cipher, id);
	/* ALPN h3 on both sides. */
	assert_non_null(tls_client_alpn(k.c, &n));
	assert_int_equal(n, 2);
	assert_memory_equal(tls_client_alpn(k.c, &n), "h3", 2);
	assert_int_equal(gnutls_alpn_get_selected_protocol(k.s, &alpn), 0);
	assert_int_equal(alpn.size, 2);
	assert_memory_equal(alpn.data, "h3", 2);
	/* The same secrets at both levels: the client's rx is the server's tx. */
	for (int l = TLS_LEVEL_HANDSHAKE; l <= TLS_LEVEL_APP; l++) {
		assert_true(k.cs[l].rx_set && k.cs[l].tx_set);
		assert_true(k.ss[l].rx_set && k.ss[l].tx_set);
		assert_int_equal(k.cs[l].len, hlen);
		assert_int_equal(k.ss[l].len, hlen);
		assert_memory_equal(k.cs[l].rx, k.ss[l].tx, hlen);
		assert_memory_equal(k.cs[l].tx, k.ss[l].rx, hlen);
	}
	assert_memory_not_equal(k.cs[TLS_LEVEL_HANDSHAKE].rx, k.cs[TLS_LEVEL_APP].rx, hlen);
	/* Transport parameters both ways, byte-exact. */
	assert_true(k.got_client_tp);
	assert_int_equal(k.client_tp_len, client_tp_len);
	assert_memory_equal(k.client_tp, client_tp, client_tp_len);
	tp = tls_client_quic_peer_tp(k.c, &n);
	assert_non_null(tp);
	assert_int_equal(n, sizeof(server_tp));
	assert_memory_equal(tp, server_tp, sizeof(server_tp));
	/* No alert either way, no record ever. */
	assert_int_equal(k.alert, -1);
	assert_int_equal(tls_client_quic_alert(k.c), 0);
	assert_int_equal(tls_client_stats(k.c)->records_out, 0);
	last_hellos = k.hellos;
	conn_close(&k);
}

#define PRIO "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE:-CIPHER-ALL:"

static void handshake_aes128(void **state)
{
	(void)state;
	handshake_suite(PRIO "+AES-128-GCM", 0x1301, 32);
}

static void handshake_aes256(void **state)
{
	(void)state;
	handshake_suite(PRIO "+AES-256-GCM", 0x1302, 48);
}

static void handshake_chacha(void **state)
{
	(void)state;
	handshake_suite(PRIO "+CHACHA20-POLY1305", 0x1303, 32);
}

/* A server that wants P-256: a HelloRetryRequest, answered at the Initial
 * level with a second hello (no ChangeCipherSpec), and the handshake
 * completes. */
static void retry_p256(void **state)
{
	(void)state;
	handshake_suite("NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE:-CIPHER-ALL:"
	                "+AES-128-GCM:-GROUP-ALL:+GROUP-SECP256R1",
	                0x1301, 32);
	assert_int_equal(last_hellos, 2);
	handshake_suite(PRIO "+AES-128-GCM", 0x1301, 32);
	assert_int_equal(last_hellos, 1);
}

/* The QUIC hello, read back: chromium's shape (tests/tls/quic_chromium.md). */
static void hello_shape(void **state)
{
	static const uint16_t want_exts[] = {0x0000, 0x000a, 0x000d, 0x0010, 0x001b, 0x002b,
	                                     0x002d, 0x0033, 0x0039, 0x44cd, 0xca34, 0xfe0d};
	static const uint16_t want_sigalgs[] = {0x0403, 0x0804, 0x0401, 0x0503, 0x0805,
	                                        0x0501, 0x0806, 0x0601, 0x0201};
	static const uint16_t want_groups[] = {0x11ec, 0x001d, 0x0017, 0x0018};
	uint16_t first_order[TLS_CH_LIST_MAX];
	unsigned differ = 0;

	(void)state;
	for (int run = 0; run < 20; run++) {
		struct conn k;
		struct tls_ch_view v;
		uint16_t sorted[TLS_CH_LIST_MAX];
		enum tls_level lvl;
		size_t n;
		const uint8_t *out;

		conn_open(&k, PRIO "+AES-128-GCM", true);
		out = tls_client_quic_out(k.c, &lvl, &n);
		assert_int_equal(lvl, TLS_LEVEL_INITIAL);
		assert_true(n > TLS_HS_HDR && out[0] == TLS_HS_CLIENT_HELLO); /* no record header */
		assert_true(tls_ch_get(&v, out + TLS_HS_HDR, n - TLS_HS_HDR));
		assert_int_equal(v.sid_len, 0);
		assert_int_equal(v.n_ciphers, 3);
		assert_int_equal(v.ciphers[0], 0x1301);
		assert_int_equal(v.ciphers[1], 0x1302);
		assert_int_equal(v.ciphers[2], 0x1303);
		assert_int_equal(v.n_exts, 12);
		memcpy(sorted, v.exts, sizeof(sorted));
		for (size_t i = 0; i < v.n_exts; i++)
			for (size_t j = i + 1; j < v.n_exts; j++)
				if (sorted[j] < sorted[i]) {
					uint16_t t = sorted[i];
					sorted[i] = sorted[j];
					sorted[j] = t;
				}
		assert_memory_equal(sorted, want_exts, sizeof(want_exts));
		assert_int_equal(v.n_sigalgs, 9);
		assert_memory_equal(v.sigalgs, want_sigalgs, sizeof(want_sigalgs));
		assert_int_equal(v.n_groups, 4);
		assert_memory_equal(v.groups, want_groups, sizeof(want_groups));
		assert_int_equal(v.n_versions, 1);
		assert_int_equal(v.versions[0], 0x0304);
		assert_int_equal(v.n_shares, 2);
		assert_int_equal(v.share_groups[0], 0x11ec);
		assert_int_equal(v.share_lens[0], 1216);
		assert_int_equal(v.share_groups[1], 0x001d);
		assert_int_equal(v.alpn_len, 3);
		assert_memory_equal(v.alpn, "\x02h3", 3);
		assert_int_equal(v.sni_len, strlen(SNI));
		assert_int_equal(v.n_anchors, 28);
		assert_true(v.ech_payload_len >= 144 && v.ech_payload_len <= 240);
		assert_int_equal(v.quic_tp_len, client_tp_len);
		assert_memory_equal(v.quic_tp, client_tp, client_tp_len);
		if (run == 0)
			memcpy(first_order, v.exts, sizeof(first_order));
		else
			differ += memcmp(first_order, v.exts, 12 * sizeof(uint16_t)) != 0;
		conn_close(&k);
	}
	assert_true(differ >= 18);
}

/* chromium's transport parameters, read back with the walker. */
static void tp_shape(void **state)
{
	uint8_t b[256];
	size_t n = chromium_tp(b, sizeof(b)), off = 0, vl;
	uint64_t id, seen_ids[TLS_QUIC_TPS];
	const uint8_t *v;
	unsigned count = 0, grease = 0;
	int r;

	(void)state;
	assert_true(n > 0);
	assert_true(tls_quic_tp_ok(b, n));
	while ((r = tls_quic_tp_next(b, n, &off, &id, &v, &vl)) == 1) {
		assert_true(count < TLS_QUIC_TPS);
		seen_ids[count++] = id;
		if (id >= 27 && (id - 27) % 31 == 0 && id > 0x3128) {
			grease++;
			assert_int_equal(vl, 9);
		}
		if (id == 0x01)
			assert_memory_equal(v, "\x80\x00\x75\x30", 4);
		if (id == 0x03)
			assert_memory_equal(v, "\x45\xc0", 2);
		if (id == 0x0f)
			assert_int_equal(vl, 0);
		if (id == 0x11)
			assert_memory_equal(v, "\0\0\0\x01\x4a\x4a\x0a\x9a\0\0\0\x01", 12);
		if (id == 0x3128)
			assert_memory_equal(v, "ORIG", 4);
	}
	assert_int_equal(r, 0);
	assert_int_equal(count, TLS_QUIC_TPS);
	assert_int_equal(grease, 1);
	(void)seen_ids;
	/* Truncations never parse; a repeated id is refused. */
	for (size_t cut = 1; cut < n; cut++) {
		size_t o = 0;
		const uint8_t *vv;
		while ((r = tls_quic_tp_next(b, n - cut, &o, &id, &vv, &vl)) == 1)
			;
		if (r == 0)
			assert_true(o == n - cut); /* ended on a boundary */
	}
	assert_false(tls_quic_tp_ok((const uint8_t *)"\x01\x01\x05\x01\x01\x05", 6));
	assert_false(tls_quic_tp_ok((const uint8_t *)"\x01\x05\x05", 3));
	assert_true(tls_quic_tp_ok(NULL, 0));
}

/* tls_quic_tp_chromium: chromium's values, a fresh order each time, the
 * GREASE parameter and version in form. */
static void tp_chromium(void **state)
{
	uint8_t first[TLS_QUIC_TPS];
	unsigned differ = 0;

	(void)state;
	for (int run = 0; run < 20; run++) {
		struct tls_quic_tp tp;
		uint8_t b[256];
		size_t n, off = 0, vl;
		uint64_t id, ids = 0;
		const uint8_t *v;
		unsigned count = 0;

		tls_quic_tp_chromium(&tp, test_rand, NULL, NULL, 0);
		assert_int_equal(tp.max_idle_timeout, 30000);
		assert_int_equal(tp.max_udp_payload_size, 1472);
		assert_int_equal(tp.initial_max_data, 15728640);
		assert_int_equal(tp.initial_max_streams_uni, 103);
		assert_int_equal(tp.max_datagram_frame_size, 65536);
		assert_int_equal(tp.grease_version & 0x0f0f0f0f, 0x0a0a0a0a);
		assert_true(tp.grease_id >= 27 && (tp.grease_id - 27) % 31 == 0 &&
		            tp.grease_id < ((uint64_t)1 << 62));
		assert_true(tp.grease_len <= TLS_QUIC_TP_GREASE_MAX);
		n = tls_quic_tp_put(b, sizeof(b), &tp);
		assert_true(n > 0 && tls_quic_tp_ok(b, n));
		while (tls_quic_tp_next(b, n, &off, &id, &v, &vl) == 1) {
			count++;
			if (id < 64)
				ids |= (uint64_t)1 << id;
			else if (id != 0x3128)
				assert_int_equal(b[off - vl - 1 - 8] >> 6,
				                 3); /* GREASE id in 8 bytes */
		}
		assert_int_equal(count, TLS_QUIC_TPS);
		assert_int_equal(ids, 0x1000283faULL); /* 01 03..09 0f 11 20 */
		if (run == 0)
			memcpy(first, tp.order, sizeof(first));
		else
			differ += memcmp(first, tp.order, sizeof(first)) != 0;
	}
	assert_true(differ >= 18);
}

/* A server that sends no transport parameters: missing_extension. */
static void refused_no_tp(void **state)
{
	struct conn k;
	struct tls_event ev;

	(void)state;
	conn_open(&k, PRIO "+AES-128-GCM", false);
	(void)pump(&k, &ev);
	assert_int_equal(ev.kind, TLS_EV_FAILED);
	assert_int_equal(ev.err, TLS_ERR_QUIC_TP);
	assert_int_equal(tls_client_quic_alert(k.c), TLS_ALERT_MISSING_EXTENSION);
	assert_int_equal(tls_client_stats(k.c)->fail[TLS_ERR_QUIC_TP], 1);
	assert_null(tls_client_quic_peer_tp(k.c, &(size_t){0}));
	conn_close(&k);
}

/* Handshake bytes at a level the handshake is not at, and the record API. */
static void refused_levels(void **state)
{
	struct conn k;
	struct tls_event ev;
	static const uint8_t junk[4] = {2, 0, 0, 0};

	(void)state;
	conn_open(&k, PRIO "+AES-128-GCM", true);
	tls_client_quic_recv(k.c, TLS_LEVEL_HANDSHAKE, junk, sizeof(junk), &ev);
	assert_int_equal(ev.kind, TLS_EV_FAILED);
	assert_int_equal(ev.err, TLS_ERR_UNEXPECTED);
	assert_int_equal(tls_client_quic_alert(k.c), TLS_ALERT_UNEXPECTED_MESSAGE);
	conn_close(&k);

	conn_open(&k, PRIO "+AES-128-GCM", true);
	assert_int_equal(tls_client_recv(k.c, junk, sizeof(junk), &ev), sizeof(junk));
	assert_int_equal(ev.kind, TLS_EV_FAILED);
	conn_close(&k);

	/* Connected: no seal, no KeyUpdate in QUIC. */
	conn_open(&k, PRIO "+AES-128-GCM", true);
	assert_int_equal(pump(&k, &ev), 0);
	assert_true(tls_client_connected(k.c));
	{
		uint8_t rec[64];
		assert_int_equal(tls_client_seal(k.c, rec, sizeof(rec), junk, 1, 0), 0);
		assert_false(tls_client_key_update(k.c, false));
	}
	conn_close(&k);
}

/* The engine's QUIC config checks. */
static void refused_configs(void **state)
{
	uint8_t big[TLS_QUIC_TP_MAX + 1] = {0};
	struct tls_client_config cfg = {
	    .rand = test_rand, .verify = tls_verify_any, .quic = true, .quic_tp = big};

	(void)state;
	assert_null(tls_client_new(&cfg)); /* no secret callback */
	cfg.secret = c_secret;
	cfg.quic_tp_len = sizeof(big);
	assert_null(tls_client_new(&cfg));
	cfg.quic_tp = NULL;
	cfg.quic_tp_len = 1;
	assert_null(tls_client_new(&cfg));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(handshake_aes128), cmocka_unit_test(handshake_aes256),
	    cmocka_unit_test(handshake_chacha), cmocka_unit_test(retry_p256),
	    cmocka_unit_test(hello_shape),      cmocka_unit_test(tp_shape),
	    cmocka_unit_test(tp_chromium),      cmocka_unit_test(refused_no_tp),
	    cmocka_unit_test(refused_levels),   cmocka_unit_test(refused_configs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
