/*
 * The loop's shaping (src/aqm/shape.c): CE marks keep the IPv4 header
 * checksum valid and touch only ECN-capable packets; SYNs are recognised
 * and clamped on the way in; the TUN-side queue is first in, first out and
 * says when it is full; CoDel's signals come only from a standing queue,
 * become marks or drops, and are counted; a TAP device is left alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../ref_csum.h"
#include "aqm/shape.h"

#define MS 1000000ULL

/* An IPv4 TCP packet of len bytes (>= 44): a 20-byte IP header with a valid
 * checksum and tos, then a TCP header with flags and a 4-byte MSS option. */
static void ipv4_tcp(uint8_t *p, size_t len, uint8_t tos, uint8_t flags, uint16_t mss)
{
	uint16_t c;

	memset(p, 0, len);
	p[0] = 0x45;
	p[1] = tos;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 6;
	memcpy(p + 12, (const uint8_t[]){10, 77, 0, 1, 10, 77, 0, 2}, 8);
	c = (uint16_t)~ref_sum(0, p, 20);
	p[10] = (uint8_t)(c >> 8);
	p[11] = (uint8_t)c;
	p[20 + 12] = 6 << 4; /* data offset: 24 bytes */
	p[20 + 13] = flags;
	p[20 + 20] = 2; /* MSS */
	p[20 + 21] = 4;
	p[20 + 22] = (uint8_t)(mss >> 8);
	p[20 + 23] = (uint8_t)mss;
}

static void ipv6_tcp(uint8_t *p, size_t len, uint8_t tclass, uint8_t flags)
{
	memset(p, 0, len);
	p[0] = (uint8_t)(0x60 | tclass >> 4);
	p[1] = (uint8_t)(tclass << 4);
	p[4] = (uint8_t)((len - 40) >> 8);
	p[5] = (uint8_t)(len - 40);
	p[6] = 6;
	p[7] = 64;
	p[40 + 12] = 5 << 4;
	p[40 + 13] = flags;
}

static void test_mark_ce(void **state)
{
	uint8_t p[1400], before[1400];

	(void)state;
	ipv4_tcp(p, sizeof(p), 0x02, 0x10, 0); /* ECT(0) */
	assert_true(shape_mark_ce(p, sizeof(p)));
	assert_int_equal(p[1] & 3, 3);
	assert_int_equal(ref_sum(0, p, 20), 0xffff); /* the header checksum still holds */

	ipv4_tcp(p, sizeof(p), 0xb8, 0x10, 0); /* DSCP EF, not ECN-capable */
	memcpy(before, p, sizeof(p));
	assert_false(shape_mark_ce(p, sizeof(p)));
	assert_memory_equal(p, before, sizeof(p));

	ipv4_tcp(p, sizeof(p), 0x01, 0x10, 0);
	p[0] = 0x44; /* IHL below 20 bytes */
	assert_false(shape_mark_ce(p, sizeof(p)));
	assert_false(shape_mark_ce(p, 19));

	ipv6_tcp(p, 100, 0x02, 0x10);
	assert_true(shape_mark_ce(p, 100));
	assert_int_equal(p[1] & 0x30, 0x30);
	ipv6_tcp(p, 100, 0x00, 0x10);
	assert_false(shape_mark_ce(p, 100));
	assert_false(shape_mark_ce(p, 39));
}

static void test_is_syn(void **state)
{
	uint8_t p[200];

	(void)state;
	ipv4_tcp(p, 60, 0, 0x02, 1460);
	assert_true(shape_is_syn(p, 60));
	ipv4_tcp(p, 60, 0, 0x12, 1460); /* SYN-ACK */
	assert_true(shape_is_syn(p, 60));
	ipv4_tcp(p, 60, 0, 0x10, 1460);
	assert_false(shape_is_syn(p, 60));
	ipv4_tcp(p, 60, 0, 0x02, 1460);
	p[9] = 17; /* UDP */
	assert_false(shape_is_syn(p, 60));
	ipv4_tcp(p, 60, 0, 0x02, 1460);
	assert_false(shape_is_syn(p, 33)); /* the flags are beyond the end */
	ipv6_tcp(p, 80, 0, 0x02);
	assert_true(shape_is_syn(p, 80));
	ipv6_tcp(p, 80, 0, 0x10);
	assert_false(shape_is_syn(p, 80));
}

static void test_txq(void **state)
{
	static uint8_t read[TUN_BUF];
	struct shape s;
	uint8_t *slot, *got;
	size_t n;
	bool congested;

	(void)state;
	assert_int_equal(shape_init(&s, false), 0);
	assert_false(shape_queues(TXQ_SMALL));
	assert_true(shape_queues(TXQ_SMALL + 1));
	assert_true(shape_queues(TUN_BUF));
	assert_false(shape_queues(TUN_BUF + 1));

	/* Fill the queue, half of the reads in their slot, half copied in. */
	for (unsigned i = 0; i < TXQ_SLOTS; i++) {
		size_t len = 1000 + i;

		slot = shape_txq_slot(&s);
		assert_non_null(slot);
		if (i % 2 == 0) {
			memset(slot, (int)i, len);
			shape_txq_push(&s, 0, slot, len);
		} else {
			memset(read, (int)i, len);
			shape_txq_push(&s, 0, read, len);
		}
	}
	assert_null(shape_txq_slot(&s));
	assert_true(shape_txq_pending(&s));
	/* Out in order, and a free slot again after the first. */
	for (unsigned i = 0; i < TXQ_SLOTS; i++) {
		got = shape_txq_pop(&s, 1 * MS, &n, &congested);
		assert_non_null(got);
		assert_int_equal(n, 1000 + i);
		assert_int_equal(got[0], (uint8_t)i);
		assert_int_equal(got[n - 1], (uint8_t)i);
		assert_false(congested);
		assert_non_null(shape_txq_slot(&s));
	}
	assert_false(shape_txq_pending(&s));
	assert_null(shape_txq_pop(&s, 1 * MS, &n, &congested));
	shape_free(&s);
}

/*
 * One second of full-size reads taken off the queue one per ms; full: the
 * queue is kept full (each read waits 64 ms), else each read is taken off
 * as soon as it is queued. Returns the signals CoDel asked for.
 */
static unsigned serve_for_a_second(struct shape *s, bool full)
{
	unsigned signals = 0;
	size_t n;
	bool congested;

	for (uint64_t t = 100 * MS; t < 1100 * MS; t += MS) {
		do
			shape_txq_push(s, t, shape_txq_slot(s), TUN_BUF);
		while (full && shape_txq_slot(s) != NULL);
		assert_non_null(shape_txq_pop(s, t, &n, &congested));
		signals += congested;
	}
	while (shape_txq_pop(s, 1100 * MS, &n, &congested) != NULL)
		;
	return signals;
}

static void test_txq_codel(void **state)
{
	struct shape s;
	uint8_t p[1400];
	unsigned signals;

	(void)state;
	assert_int_equal(shape_init(&s, false), 0);
	shape_set_rtt(&s, 0); /* interval 10 ms, target 1 ms */
	assert_int_equal(serve_for_a_second(&s, false), 0);
	signals = serve_for_a_second(&s, true);
	assert_true(signals > 0);
	assert_true(signals < 1000); /* CoDel spaces them out */

	/* A signal is a CE mark when the packet can take one, else a drop. */
	ipv4_tcp(p, sizeof(p), 0x02, 0x10, 0);
	assert_false(shape_tx_signal(&s, p, sizeof(p)));
	assert_int_equal(p[1] & 3, 3);
	ipv4_tcp(p, sizeof(p), 0x00, 0x10, 0);
	assert_true(shape_tx_signal(&s, p, sizeof(p)));
	assert_int_equal(s.tx_marks, 1);
	assert_int_equal(s.tx_drops, 1);
	shape_free(&s);

	/* On a TAP nothing is looked into: the signal is a drop, uncounted here. */
	assert_int_equal(shape_init(&s, true), 0);
	ipv4_tcp(p, sizeof(p), 0x02, 0x10, 0);
	assert_true(shape_tx_signal(&s, p, sizeof(p)));
	assert_int_equal(p[1], 0x02);
	assert_int_equal(s.tx_marks + s.tx_drops, 0);
	shape_free(&s);
}

static void test_rx(void **state)
{
	struct shape s;
	uint8_t syn[60], bulk[1400], small[200];
	const uint8_t *out;
	unsigned marked = 0;

	(void)state;
	assert_int_equal(shape_init(&s, false), 0);
	shape_set_rtt(&s, 0); /* target 1 ms, hard limit 120 ms */

	/* A SYN is clamped in a copy: the MSS fits a 1280-byte tunnel. */
	ipv4_tcp(syn, sizeof(syn), 0, 0x02, 8960);
	shape_rx_message(&s, 0, 0);
	out = shape_rx(&s, syn, sizeof(syn), 1280);
	assert_ptr_not_equal(out, syn);
	assert_int_equal(out[20 + 22] << 8 | out[20 + 23], 1240);
	assert_int_equal(syn[20 + 22] << 8 | syn[20 + 23], 8960);

	/* No queue: everything passes untouched. */
	ipv4_tcp(bulk, sizeof(bulk), 0x00, 0x10, 0);
	assert_ptr_equal(shape_rx(&s, bulk, sizeof(bulk), 1280), bulk);

	/* A BBR-sized queue (a round trip and its ACK aggregation): no drop yet. */
	shape_rx_message(&s, 50 * MS, 110 * MS);
	assert_ptr_equal(shape_rx(&s, bulk, sizeof(bulk), 1280), bulk);
	/* Past the hard limit: bulk packets are dropped, small ones pass. */
	shape_rx_message(&s, 100 * MS, 121 * MS);
	assert_null(shape_rx(&s, bulk, sizeof(bulk), 1280));
	ipv4_tcp(small, sizeof(small), 0x00, 0x10, 0);
	assert_ptr_equal(shape_rx(&s, small, sizeof(small), 1280), small);
	assert_int_equal(s.rx_drops, 1);

	/* A standing queue between target and hard limit: an ECN-capable
	 * packet is marked in a copy, never dropped. */
	ipv4_tcp(bulk, sizeof(bulk), 0x01, 0x10, 0);
	for (uint64_t t = 200 * MS; t < 1200 * MS; t += MS) {
		shape_rx_message(&s, t, 5 * MS);
		out = shape_rx(&s, bulk, sizeof(bulk), 1280);
		assert_non_null(out);
		if (out != bulk) {
			assert_int_equal(out[1] & 3, 3);
			assert_int_equal(ref_sum(0, out, 20), 0xffff);
			marked++;
		}
	}
	assert_true(marked > 0);
	assert_int_equal(s.rx_marks, marked);
	assert_int_equal(s.rx_drops, 1);
	shape_free(&s);

	/* A TAP: frames pass as they are, whatever the queue. */
	assert_int_equal(shape_init(&s, true), 0);
	shape_set_rtt(&s, 0);
	shape_rx_message(&s, 100 * MS, 50 * MS);
	assert_ptr_equal(shape_rx(&s, bulk, sizeof(bulk), 1280), bulk);
	assert_ptr_equal(shape_rx(&s, syn, sizeof(syn), 1280), syn);
	shape_clamp(&s, syn, sizeof(syn), 1280);
	assert_int_equal(syn[20 + 22] << 8 | syn[20 + 23], 8960);
	shape_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mark_ce), cmocka_unit_test(test_is_syn),
	    cmocka_unit_test(test_txq),     cmocka_unit_test(test_txq_codel),
	    cmocka_unit_test(test_rx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
