/*
 * src/quic's client with yip's own TLS engine behind the seam
 * (quic_tls_yip) against src/quic's server (GnuTLS, a self-signed
 * certificate), packets moved in memory: the handshake completes on both
 * ends, both agree on h3 and the suite, the server saw the configured SNI,
 * and the client's first flight is chromium-shaped on the wire (an 8-byte
 * DCID, an empty SCID, 1250 bytes: quic_tls_yip's shape op). A dial asking for another ALPN is
 * refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "quic/conn.h"
#include "quic/tls_yip.h"

static void addr4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &a->in4.sin_addr), 1);
}

static void handshake(void **state)
{
	struct quic_server_config scfg = {.self_name = "site.test"};
	struct quic_dial_config dcfg = {.sni = "site.test", .tls = &quic_tls_yip};
	union yip_sockaddr cl, sv;
	struct quic_server *s;
	struct quic_conn *c, *sc = NULL;
	struct quic_conn_info ci, si;
	uint8_t pkt[QUIC_PKT_MAX], reply[QUIC_PKT_MAX];
	char err[128];
	uint64_t now = 1000000000ULL;
	bool first = true;

	(void)state;
	addr4(&cl, "198.18.0.1", 40000);
	addr4(&sv, "198.18.0.2", 443);
	s = quic_server_new(&scfg, err, sizeof(err));
	assert_non_null(s);
	c = quic_conn_dial(&dcfg, &cl, &sv, now, err, sizeof(err));
	assert_non_null(c);
	for (int round = 0; round < 50 && (quic_conn_state(c) != QUIC_CONN_OPEN || sc == NULL ||
	                                   quic_conn_state(sc) != QUIC_CONN_OPEN);
	     round++) {
		size_t n, rl;
		struct quic_conn *got;

		while ((n = quic_conn_write(c, pkt, sizeof(pkt), now)) > 0) {
			if (first) {
				/* A long-header Initial: DCID 8 bytes, SCID none. */
				assert_int_equal(pkt[0] & 0xf0, 0xc0);
				assert_int_equal(pkt[5], 8);
				assert_int_equal(pkt[6 + 8], 0);
				assert_int_equal(n, 1250); /* chromium's first flight, IPv4 */
				first = false;
			}
			(void)quic_server_read(s, pkt, n, &sv, &cl, now, &got, reply, sizeof(reply),
			                       &rl);
			if (got != NULL)
				sc = got;
		}
		for (struct quic_conn *x = quic_server_next(s, NULL); x; x = quic_server_next(s, x))
			while ((n = quic_conn_write(x, pkt, sizeof(pkt), now)) > 0)
				(void)quic_conn_read(c, pkt, n, &sv, now);
		now += 1000000;
	}
	assert_int_equal(quic_conn_state(c), QUIC_CONN_OPEN);
	assert_non_null(sc);
	assert_int_equal(quic_conn_state(sc), QUIC_CONN_OPEN);
	quic_conn_info(c, &ci);
	quic_conn_info(sc, &si);
	assert_string_equal(ci.alpn, "h3");
	assert_string_equal(si.alpn, "h3");
	assert_string_equal(ci.cipher, si.cipher);
	assert_string_equal(si.sni, "site.test");
	quic_conn_free(c);
	quic_server_free(s);
}

static void refused_alpn(void **state)
{
	struct quic_dial_config dcfg = {.sni = "site.test", .alpn = "h2", .tls = &quic_tls_yip};
	union yip_sockaddr cl, sv;
	char err[128];

	(void)state;
	addr4(&cl, "198.18.0.1", 40000);
	addr4(&sv, "198.18.0.2", 443);
	assert_null(quic_conn_dial(&dcfg, &cl, &sv, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "h3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(handshake),
	    cmocka_unit_test(refused_alpn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
