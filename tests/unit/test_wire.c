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
	assert_false(wire_init_get(&mi, d, WIRE_INIT_LEN - 1));
	d[1] = 1; /* reserved bytes must be zero */
	assert_false(wire_init_get(&mi, d, WIRE_INIT_LEN));

	memset(d, 0, sizeof(d));
	assert_ptr_equal(wire_resp_put(d, 7, 9), d + 12);
	assert_memory_equal(d, "\x02\x00\x00\x00\x07\x00\x00\x00\x09\x00\x00\x00", 12);
	assert_true(wire_resp_get(&mr, d, WIRE_RESP_LEN));
	assert_int_equal(mr.sender, 7);
	assert_int_equal(mr.receiver, 9);
	assert_false(wire_resp_get(&mr, d, WIRE_INIT_LEN));
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
	assert_int_equal(wire_classify(d, WIRE_INIT_LEN + 1), 0);
	d[0] = WIRE_RESP;
	assert_int_equal(wire_classify(d, WIRE_RESP_LEN), WIRE_RESP);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(header_layout),    cmocka_unit_test(handshake_layouts),
	    cmocka_unit_test(recovery_layouts), cmocka_unit_test(report_layout),
	    cmocka_unit_test(classify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
