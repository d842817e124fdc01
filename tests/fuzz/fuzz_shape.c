/*
 * libFuzzer target for the loop's shaping (src/aqm/shape.c) on packets as
 * they come out of the tunnel (any bytes a peer managed to authenticate) and
 * out of the TUN. Buffers are allocated to their exact size so
 * AddressSanitizer sees any access past them. Besides memory safety it
 * checks that:
 *   - shape_mark_ce leaves a packet it declines untouched, and one it marks
 *     Congestion Experienced, with a valid IPv4 header checksum;
 *   - shape_rx returns the packet itself, NULL (a drop, counted once), or a
 *     copy that differs only in the CE bits and header checksum or, for a
 *     SYN, in the TCP header;
 *   - a TAP never has its frames changed or dropped.
 *
 * shape_init allocates the TUN queue (64 slots of 64 KiB) that none of
 * these paths uses; making it per input cost more than everything else the
 * input does. So a fresh struct shape for TUN and one for TAP are made once
 * and each input starts from a copy of one: the copy shares the two
 * buffers, which the paths fuzzed here write before reading (s->buf) or
 * never touch (the queue), so no state passes from one input to the next.
 *
 * Input layout (missing bytes read as 0):
 *   [0] flags: 1 a TAP device, 2 the RTT is 50 ms rather than 0
 *   [1] mtu = 576 + [1] * (9000 - 576) / 255
 *   [2] the message's socket wait, in ms
 *   rest: the packet
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aqm/shape.h"

#include "reader.h"
#include "../ref_csum.h"

#define MS 1000000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_ipv4_ce(const uint8_t *p, size_t n)
{
	return n >= 20 && p[0] >> 4 == 4 && (p[1] & 3) == 3;
}

/* A fresh struct shape for a TUN ([0]) and for a TAP ([1]). */
static const struct shape *fresh(bool tap)
{
	static struct shape s[2];
	static bool ready;

	if (!ready) {
		struct shape t;

		/* shape_free, which the inputs no longer reach, once. */
		if (shape_init(&t, false) != 0)
			abort();
		shape_free(&t);
		if (t.txq.mem != NULL || t.buf != NULL)
			abort();
		if (shape_init(&s[0], false) != 0 || shape_init(&s[1], true) != 0)
			abort();
		ready = true;
	}
	return &s[tap];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {data, size};
	uint8_t flags = next(&rd);
	unsigned mtu = 576 + next(&rd) * (9000u - 576) / 255;
	uint64_t wait = next(&rd) * MS;
	size_t n = rd.n;
	uint8_t *pkt = malloc(n ? n : 1), *orig = malloc(n ? n : 1);
	const uint8_t *out;
	struct shape s;
	uint64_t drops;

	if (pkt == NULL || orig == NULL)
		abort();
	s = *fresh(flags & 1);
	memcpy(orig, rd.p, n);

	/* Marking by itself. */
	memcpy(pkt, orig, n);
	if (!shape_mark_ce(pkt, n)) {
		if (memcmp(pkt, orig, n) != 0)
			abort();
	} else if (pkt[0] >> 4 == 4) {
		size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;

		if (!is_ipv4_ce(pkt, n) || ref_sum(0, pkt, ihl) != 0xffff)
			abort();
	}
	(void)shape_is_syn(orig, n);

	/* The receive path, three messages in a row as the loop would. */
	shape_set_rtt(&s, flags & 2 ? 50 * MS : 0);
	for (unsigned i = 0; i < 3; i++) {
		memcpy(pkt, orig, n);
		drops = s.rx_drops;
		shape_rx_message(&s, (100 + 200 * i) * MS, wait);
		out = shape_rx(&s, pkt, n, mtu);
		if (memcmp(pkt, orig, n) != 0)
			abort(); /* the engine's buffer is never written */
		if (out == NULL) {
			if (s.rx_drops != drops + 1 || s.tap)
				abort();
		} else if (out != pkt) {
			if (s.tap || n > 9000)
				abort();
			/* Either a clamped SYN or a CE mark: the first 20 bytes
			 * differ at most in tos (CE) and checksum. */
			for (size_t j = 0; j < n && j < 20; j++)
				if (j != 1 && j != 10 && j != 11 && out[j] != orig[j] &&
				    orig[0] >> 4 == 4)
					abort();
			if (!shape_is_syn(orig, n) && !is_ipv4_ce(out, n) &&
			    !(n >= 40 && out[0] >> 4 == 6 && (out[1] & 0x30) == 0x30))
				abort();
		}
	}

	/* The TUN side's signal on the same bytes. */
	memcpy(pkt, orig, n);
	if (!shape_tx_signal(&s, pkt, n) && !s.tap && memcmp(pkt, orig, n) == 0 &&
	    !((n >= 20 && orig[0] >> 4 == 4 && (orig[1] & 3) == 3) ||
	      (n >= 40 && orig[0] >> 4 == 6 && (orig[1] & 0x30) == 0x30)))
		abort(); /* "marked" but nothing changed on a packet not already CE */
	if (s.tap && memcmp(pkt, orig, n) != 0)
		abort();
	shape_clamp(&s, pkt, n, mtu);

	free(pkt);
	free(orig);
	return 0;
}
