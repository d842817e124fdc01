/*
 * The wire format byte by byte: every encoder against the layout in
 * docs/protocol.md written out by hand, every decoder's refusals, and
 * classification by type and length.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "wire/wire.h"

static void header_layout(void **state)
{
	static const uint8_t want[WIRE_DATA_HDR] = {
	    5,    3,    0x34, 0x12,                         /* type, idx, block 0x1234 */
	    0x44, 0x33, 0x22, 0x11,                         /* receiver 0x11223344 */
	    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* counter */
	};
	struct wire_hdr h = {WIRE_REPAIR, 3, 0x1234, 0x11223344, 0x0102030405060708ULL}, g;
	uint8_t d[WIRE_DATA_MIN] = {0};

	(void)state;
	wire_hdr_put(d, &h);
	assert_memory_equal(d, want, sizeof(want));
	assert_true(wire_hdr_get(&g, d, sizeof(d)));
	assert_int_equal(g.type, WIRE_REPAIR);
	assert_int_equal(g.idx, 3);
	assert_int_equal(g.block, 0x1234);
	assert_int_equal(g.receiver, 0x11223344);
	assert_true(g.counter == 0x0102030405060708ULL);
	/* A header alone, without room for the tag, is not a datagram. */
	assert_false(wire_hdr_get(&g, d, WIRE_DATA_MIN - 1));
	assert_int_equal(wire_plain_len(WIRE_DATA_MIN + 100), 100);
	assert_int_equal(wire_plain_len(3), 0);
}

/* An FEC symbol's idx: its index and its group's lanes, apart from the
 * Data idx values that are no symbol. */
static void fec_idx(void **state)
{
	(void)state;
	for (unsigned lanes = 1; lanes <= WIRE_FEC_MAX_LANES; lanes *= 2)
		for (unsigned i = 0; i < 64; i++) {
			uint8_t idx = wire_fec_idx(i, lanes);

			assert_true(wire_fec_symbol(idx));
			assert_int_equal(wire_fec_index(idx), i);
			assert_int_equal(wire_fec_lanes(idx), lanes);
		}
	assert_int_equal(wire_fec_idx(5, 1), 5); /* one lane: the index alone */
	assert_int_equal(wire_fec_idx(63, 4), 0xbf);
	assert_false(wire_fec_symbol(0xc0));
	assert_false(wire_fec_symbol(WIRE_FEC_ARQ));
	assert_false(wire_fec_symbol(WIRE_FEC_NONE));
}

static void handshake_layouts(void **state)
{
	uint8_t d[WIRE_INIT_LEN] = {0}, pl[WIRE_INIT_PAYLOAD];
	struct wire_init_payload p = {.ciphers = 3}, q;
	struct wire_init mi;
	struct wire_resp mr;
	uint8_t c;

	(void)state;
	assert_ptr_equal(wire_init_put(d, 0xa1b2c3d4), d + 8);
	assert_memory_equal(d, "\x01\x00\x00\x00\xd4\xc3\xb2\xa1", 8);
	assert_true(wire_init_get(&mi, d, WIRE_INIT_LEN));
	assert_int_equal(mi.sender, 0xa1b2c3d4);
	assert_ptr_equal(mi.msg1, d + WIRE_INIT_MSG1);
	assert_int_equal(mi.msg1_len, WIRE_MSG1_LEN);
	assert_false(wire_init_get(&mi, d, WIRE_INIT_LEN - 1));
	/* Longer with a certificate in the payload, up to WIRE_INIT_MAX (the
	 * decoder reads only the header; the length says where the MACs are). */
	assert_true(wire_init_get(&mi, d, WIRE_INIT_LEN + 300));
	assert_int_equal(mi.msg1_len, WIRE_MSG1_LEN + 300);
	assert_true(wire_init_get(&mi, d, WIRE_INIT_MAX));
	assert_false(wire_init_get(&mi, d, WIRE_INIT_MAX + 1));
	d[1] = 1; /* reserved bytes must be zero */
	assert_false(wire_init_get(&mi, d, WIRE_INIT_LEN));

	memset(d, 0, sizeof(d));
	assert_ptr_equal(wire_resp_put(d, 7, 9), d + 12);
	assert_memory_equal(d, "\x02\x00\x00\x00\x07\x00\x00\x00\x09\x00\x00\x00", 12);
	assert_true(wire_resp_get(&mr, d, WIRE_RESP_LEN));
	assert_int_equal(mr.sender, 7);
	assert_int_equal(mr.receiver, 9);
	assert_int_equal(mr.msg2_len, WIRE_MSG2_LEN);
	assert_true(wire_resp_get(&mr, d, WIRE_RESP_MAX));
	assert_int_equal(mr.msg2_len, WIRE_MSG2_LEN + WIRE_HS_CERT_MAX);
	assert_false(wire_resp_get(&mr, d, WIRE_RESP_LEN - 1));
	assert_false(wire_resp_get(&mr, d, WIRE_RESP_MAX + 1));
	assert_false(wire_init_get(&mi, d, WIRE_INIT_LEN)); /* a Resp is not an Init */

	memset(p.tai64n, 0xee, sizeof(p.tai64n));
	wire_init_payload_put(pl, &p);
	assert_int_equal(pl[YIP_TAI64N_LEN], 3);
	assert_true(wire_init_payload_get(&q, pl, sizeof(pl)));
	assert_memory_equal(&q, &p, sizeof(p));
	assert_false(wire_init_payload_get(&q, pl, sizeof(pl) - 1));
	wire_resp_payload_put(pl, 1);
	assert_true(wire_resp_payload_get(&c, pl, 1));
	assert_int_equal(c, 1);
	assert_false(wire_resp_payload_get(&c, pl, 2));
}

static void recovery_layouts(void **state)
{
	uint8_t buf[64] = {0};
	struct wire_sym s = {0x1122334455667788ULL, 5}, t;
	struct wire_repair r;
	struct wire_arq a;

	(void)state;
	wire_sym_put(buf, &s);
	assert_memory_equal(buf, "\x88\x77\x66\x55\x44\x33\x22\x11\x05\x00", WIRE_SYM_HDR);
	assert_true(wire_sym_get(&t, buf, WIRE_SYM_HDR + 5));
	assert_true(t.counter == s.counter && t.len == 5);
	/* A length that runs past the symbol is refused. */
	assert_false(wire_sym_get(&t, buf, WIRE_SYM_HDR + 4));
	assert_false(wire_sym_get(&t, buf, WIRE_SYM_HDR - 1));

	wire_repair_put(buf, 16, 4);
	wire_sym_put(buf + WIRE_REPAIR_PRE, &s);
	assert_true(wire_repair_get(&r, buf, WIRE_REPAIR_PRE + WIRE_SYM_HDR + 5));
	assert_int_equal(r.k, 16);
	assert_int_equal(r.r, 4);
	assert_ptr_equal(r.sym, buf + 2);
	assert_int_equal(r.symlen, WIRE_SYM_HDR + 5);
	assert_false(wire_repair_get(&r, buf, WIRE_REPAIR_PRE + WIRE_SYM_HDR - 1));

	wire_arq_put(buf, 300);
	assert_memory_equal(buf, "\x2c\x01\x00\x00\x00\x00\x00\x00", WIRE_ARQ_PRE);
	assert_true(wire_arq_get(&a, buf, 20));
	assert_true(a.counter == 300);
	assert_ptr_equal(a.pkt, buf + 8);
	assert_int_equal(a.len, 12);
	assert_true(wire_arq_get(&a, buf, 8) && a.len == 0);
	assert_false(wire_arq_get(&a, buf, 7));
}

static void report_layout(void **state)
{
	struct wire_report r =
	                       {
	                           .received = 1,
	                           .span = 2,
	                           .bursts = 3,
	                           .burst_sum = 4,
	                           .recovered = 5,
	                           .unrecovered = 6,
	                           .ts_us = 7,
	                           .echo_ts_us = 8,
	                           .echo_delay_us = 9,
	                           .n_nacks = 2,
	                           .nacks = {0x10, 0x0102030405060708ULL},
	                       },
	                   g;
	uint8_t b[WIRE_REPORT_MAX];
	size_t len = wire_report_put(b, &r);

	(void)state;
	assert_int_equal(len, WIRE_REPORT_FIXED + 16);
	assert_memory_equal(b, "\x01\x02\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00", 12);
	assert_memory_equal(b + 36, "\x09\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00", 12);
	assert_memory_equal(b + 48, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
	assert_true(wire_report_get(&g, b, len));
	assert_int_equal(g.n_nacks, 2);
	assert_true(g.received == 1 && g.span == 2 && g.bursts == 3 && g.burst_sum == 4);
	assert_true(g.recovered == 5 && g.unrecovered == 6);
	assert_true(g.ts_us == 7 && g.echo_ts_us == 8 && g.echo_delay_us == 9);
	assert_true(g.nacks[0] == 0x10 && g.nacks[1] == 0x0102030405060708ULL);

	/* Refusals: a length that does not match the NACK count, a version,
	 * reserved bytes, too many NACKs, too short. */
	assert_false(wire_report_get(&g, b, len - 1));
	assert_false(wire_report_get(&g, b, len + 8));
	b[0] = 2;
	assert_false(wire_report_get(&g, b, len));
	b[0] = 1;
	b[3] = 1;
	assert_false(wire_report_get(&g, b, len));
	b[3] = 0;
	b[1] = WIRE_REPORT_MAX_NACKS + 1;
	assert_false(wire_report_get(&g, b, WIRE_REPORT_FIXED + 8 * (WIRE_REPORT_MAX_NACKS + 1)));
	assert_false(wire_report_get(&g, b, WIRE_REPORT_FIXED - 1));

	/* An encoder asked for more NACKs than fit writes what fits. */
	r.n_nacks = 200;
	assert_int_equal(wire_report_put(b, &r), WIRE_REPORT_MAX);
	assert_int_equal(b[1], WIRE_REPORT_MAX_NACKS);
}

static void classify(void **state)
{
	uint8_t d[WIRE_REPORT_MAX + WIRE_DATA_MIN] = {0};

	(void)state;
	assert_int_equal(wire_classify(d, 3), 0);
	d[0] = WIRE_INIT;
	assert_int_equal(wire_classify(d, WIRE_INIT_LEN), WIRE_INIT);
	assert_int_equal(wire_classify(d, WIRE_INIT_LEN + 1), WIRE_INIT);
	assert_int_equal(wire_classify(d, WIRE_INIT_MAX), WIRE_INIT);
	assert_int_equal(wire_classify(d, WIRE_INIT_MAX + 1), 0);
	assert_int_equal(wire_classify(d, WIRE_INIT_LEN - 1), 0);
	d[0] = WIRE_RESP;
	assert_int_equal(wire_classify(d, WIRE_RESP_LEN), WIRE_RESP);
	assert_int_equal(wire_classify(d, WIRE_RESP_MAX), WIRE_RESP);
	assert_int_equal(wire_classify(d, WIRE_RESP_MAX + 1), 0);
	d[2] = 1;
	assert_int_equal(wire_classify(d, WIRE_RESP_LEN), 0);
	d[0] = WIRE_DATA; /* idx and block are free in Data */
	assert_int_equal(wire_classify(d, WIRE_DATA_MIN), WIRE_DATA);
	assert_int_equal(wire_classify(d, WIRE_DATA_MIN - 1), 0);
	d[0] = WIRE_REPAIR;
	assert_int_equal(wire_classify(d, WIRE_MAX_OVERHEAD), WIRE_REPAIR);
	assert_int_equal(wire_classify(d, WIRE_MAX_OVERHEAD - 1), 0);
	d[0] = WIRE_REPORT;
	assert_int_equal(wire_classify(d, WIRE_DATA_MIN + 40), 0); /* reserved byte set */
	d[2] = 0;
	assert_int_equal(wire_classify(d, WIRE_DATA_MIN + 40), WIRE_REPORT);
	d[0] = 3;
	assert_int_equal(wire_classify(d, 100), 0);
}

static void set4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static void ctrl_layout(void **state)
{
	struct wire_ctrl c = {.kind = WIRE_CTRL_REGISTERED,
	                      .flags = WIRE_CTRL_RELAY,
	                      .token = 0x0102030405060708ULL,
	                      .relay_id = 0xaabbccdd,
	                      .alt_port = 7001},
	                 g;
	static const uint8_t want[] = {
	    16,   1,                                        /* kind, flags */
	    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* token */
	    0xdd, 0xcc, 0xbb, 0xaa,                         /* relay id */
	    0x59, 0x1b,                                     /* alt port 7001 */
	    4,    0x50, 0xc3, 203,  0,    113,  9,          /* 203.0.113.9:50000 */
	};
	uint8_t b[WIRE_CTRL_MAX + 1];
	size_t len;

	(void)state;
	set4(&c.addr, "203.0.113.9", 50000);
	len = wire_ctrl_put(b, &c);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, sizeof(want));
	assert_true(wire_ctrl_get(&g, b, len));
	assert_int_equal(g.kind, c.kind);
	assert_true(g.token == c.token && g.relay_id == c.relay_id && g.alt_port == 7001);
	assert_true(yip_sockaddr_eq(&g.addr, &c.addr));
	/* One byte more or less is not the message. */
	assert_false(wire_ctrl_get(&g, b, len - 1));
	b[len] = 0;
	assert_false(wire_ctrl_get(&g, b, len + 1));
	/* Nor is an address of another family, or without a port. */
	b[16] = 5;
	assert_false(wire_ctrl_get(&g, b, len));
	b[16] = 4;
	b[17] = b[18] = 0;
	assert_false(wire_ctrl_get(&g, b, len));
	/* Unknown kinds are refused both ways. */
	b[0] = 99;
	assert_false(wire_ctrl_get(&g, b, len));
	c.kind = 99;
	assert_int_equal(wire_ctrl_put(b, &c), 0);
}

/* Every kind survives a round trip with every field it carries. */
static void ctrl_kinds(void **state)
{
	static const uint8_t kinds[] = {
	    WIRE_CTRL_REGISTER,   WIRE_CTRL_LOOKUP, WIRE_CTRL_ANSWER,   WIRE_CTRL_WHOAMI,
	    WIRE_CTRL_REGISTERED, WIRE_CTRL_ASK,    WIRE_CTRL_INTRO,    WIRE_CTRL_UNKNOWN,
	    WIRE_CTRL_YOUARE,     WIRE_CTRL_PROBE,  WIRE_CTRL_PROBE_OK, WIRE_CTRL_MEMBER,
	    WIRE_CTRL_REFUSED,
	};
	static uint8_t cert[WIRE_CTRL_CERT_MAX];
	uint8_t b[WIRE_CTRL_MAX], again[WIRE_CTRL_MAX];

	(void)state;
	for (size_t k = 0; k < sizeof(kinds); k++) {
		struct wire_ctrl c = {.kind = kinds[k],
		                      .id = 7,
		                      .flags = 1,
		                      .nat = WIRE_NAT_APDM,
		                      .token = 9,
		                      .relay_id = 11,
		                      .alt_port = 13,
		                      .nonce = 15,
		                      .ts_us = 17,
		                      .reason = 19,
		                      .cert = cert,
		                      .cert_len = WIRE_CTRL_CERT_MAX,
		                      .n_cands = WIRE_MAX_CANDS},
		                 g;
		size_t len, len2;

		memset(c.key, 0x42, sizeof(c.key));
		memset(cert, 0x5a, sizeof(cert));
		set4(&c.addr, "192.0.2.1", 1);
		for (int i = 0; i < WIRE_MAX_CANDS; i++) {
			if (i % 2) {
				set4(&c.cands[i], "198.51.100.7", (uint16_t)(1000 + i));
			} else {
				memset(&c.cands[i], 0, sizeof(c.cands[i]));
				c.cands[i].in6.sin6_family = AF_INET6;
				c.cands[i].in6.sin6_port = htons((uint16_t)(2000 + i));
				c.cands[i].in6.sin6_addr.s6_addr[0] = 0x20;
				c.cands[i].in6.sin6_addr.s6_addr[15] = (uint8_t)i;
			}
		}
		len = wire_ctrl_put(b, &c);
		assert_true(len > 0 && len <= WIRE_CTRL_MAX);
		assert_true(wire_ctrl_get(&g, b, len));
		len2 = wire_ctrl_put(again, &g);
		assert_int_equal(len2, len);
		assert_memory_equal(again, b, len);
		for (size_t cut = 0; cut < len; cut++)
			assert_false(wire_ctrl_get(&g, b, cut));
	}
}

/* MEMBER carries 1 to WIRE_CTRL_CERT_MAX bytes of certificate, exactly;
 * REFUSED one reason byte. */
static void ctrl_member(void **state)
{
	static const uint8_t cert[] = {1, 2, 3};
	static const uint8_t want[] = {5, 3, 0, 1, 2, 3}; /* kind, length (LE), bytes */
	struct wire_ctrl c = {.kind = WIRE_CTRL_MEMBER, .cert = cert, .cert_len = 3}, g;
	uint8_t b[WIRE_CTRL_MAX + 2];
	size_t len;

	(void)state;
	len = wire_ctrl_put(b, &c);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, sizeof(want));
	assert_true(wire_ctrl_get(&g, b, len));
	assert_int_equal(g.cert_len, 3);
	assert_ptr_equal(g.cert, b + 3); /* points into the message */
	b[len] = 0;
	assert_false(wire_ctrl_get(&g, b, len + 1)); /* trailing byte */
	b[1] = 4;
	assert_false(wire_ctrl_get(&g, b, len)); /* longer than what follows */
	b[1] = 0, b[2] = 0;
	assert_false(wire_ctrl_get(&g, b, 3)); /* empty */
	b[1] = (WIRE_CTRL_CERT_MAX + 1) & 0xff, b[2] = (WIRE_CTRL_CERT_MAX + 1) >> 8;
	assert_false(wire_ctrl_get(&g, b, sizeof(b))); /* too long */
	c.cert_len = 0;
	assert_int_equal(wire_ctrl_put(b, &c), 0);
	c.cert_len = WIRE_CTRL_CERT_MAX + 1;
	assert_int_equal(wire_ctrl_put(b, &c), 0);

	c = (struct wire_ctrl){.kind = WIRE_CTRL_REFUSED, .reason = 7};
	assert_int_equal(wire_ctrl_put(b, &c), 2);
	assert_true(b[0] == 21 && b[1] == 7);
	assert_true(wire_ctrl_get(&g, b, 2) && g.reason == 7);
	assert_false(wire_ctrl_get(&g, b, 1));
}

static void ctrl_addresses(void **state)
{
	struct wire_ctrl c = {.kind = WIRE_CTRL_YOUARE, .id = 1}, g;
	uint8_t b[WIRE_CTRL_MAX];
	size_t len;

	(void)state;
	/* An IPv4-mapped IPv6 address (a dual-stack socket's view) goes as IPv4. */
	memset(&c.addr, 0, sizeof(c.addr));
	c.addr.in6.sin6_family = AF_INET6;
	c.addr.in6.sin6_port = htons(7000);
	inet_pton(AF_INET6, "::ffff:203.0.113.5", &c.addr.in6.sin6_addr);
	len = wire_ctrl_put(b, &c);
	assert_int_equal(len, 1 + 4 + 7);
	assert_int_equal(b[5], 4);
	assert_true(wire_ctrl_get(&g, b, len));
	assert_int_equal(g.addr.sa.sa_family, AF_INET);
	assert_true(yip_sockaddr_eq(&g.addr, &c.addr));
	/* Too many candidates, an address without a port, an unknown NAT class. */
	c = (struct wire_ctrl){.kind = WIRE_CTRL_REGISTER, .n_cands = WIRE_MAX_CANDS + 1};
	assert_int_equal(wire_ctrl_put(b, &c), 0);
	c.n_cands = 1;
	set4(&c.cands[0], "10.0.0.1", 0);
	assert_int_equal(wire_ctrl_put(b, &c), 0);
	set4(&c.cands[0], "10.0.0.1", 5);
	len = wire_ctrl_put(b, &c);
	assert_true(wire_ctrl_get(&g, b, len));
	b[2] = WIRE_NAT_COUNT;
	assert_false(wire_ctrl_get(&g, b, len));
	b[2] = 0;
	b[3] = WIRE_MAX_CANDS + 1;
	assert_false(wire_ctrl_get(&g, b, len));
}

static void relay_layout(void **state)
{
	uint8_t d[WIRE_RELAY_HDR + 4] = {0};
	struct wire_relay m;

	(void)state;
	wire_relay_put(d, WIRE_RELAY_FROM_SERVER, 0x1122334455667788ULL, 0x01020304);
	memcpy(d + WIRE_RELAY_HDR,
	       "\x04"
	       "abc",
	       4);
	assert_memory_equal(d, "\x08\x01\x00\x00\x88\x77\x66\x55\x44\x33\x22\x11\x04\x03\x02\x01",
	                    WIRE_RELAY_HDR);
	assert_int_equal(wire_classify(d, sizeof(d)), WIRE_RELAY);
	assert_true(wire_relay_get(&m, d, sizeof(d)));
	assert_int_equal(m.dir, WIRE_RELAY_FROM_SERVER);
	assert_true(m.token == 0x1122334455667788ULL && m.relay_id == 0x01020304);
	assert_ptr_equal(m.payload, d + WIRE_RELAY_HDR);
	assert_int_equal(m.len, 4);
	/* Nothing carried, another direction, reserved bytes. */
	assert_false(wire_relay_get(&m, d, WIRE_RELAY_HDR));
	assert_int_equal(wire_classify(d, WIRE_RELAY_HDR), 0);
	d[1] = 2;
	assert_false(wire_relay_get(&m, d, sizeof(d)));
	assert_int_equal(wire_classify(d, sizeof(d)), 0);
	d[1] = 0;
	d[3] = 1;
	assert_false(wire_relay_get(&m, d, sizeof(d)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(header_layout),     cmocka_unit_test(fec_idx),
	    cmocka_unit_test(handshake_layouts), cmocka_unit_test(recovery_layouts),
	    cmocka_unit_test(report_layout),     cmocka_unit_test(classify),
	    cmocka_unit_test(ctrl_layout),       cmocka_unit_test(ctrl_kinds),
	    cmocka_unit_test(ctrl_member),       cmocka_unit_test(ctrl_addresses),
	    cmocka_unit_test(relay_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
