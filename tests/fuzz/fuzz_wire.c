/*
 * Every decoder in src/wire on arbitrary bytes. The first byte picks the
 * layout; the rest is the input. Whatever a decoder accepts must stay
 * inside the input and encode back to the same bytes, so a decoder that
 * reads past its bounds (ASan) or misreads a field (the round trip) fails.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

/* True if [p, p + n) lies inside [base, base + len). */
static int inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[WIRE_REPORT_MAX + WIRE_INIT_LEN];
	const uint8_t *in;
	size_t len;

	if (size == 0)
		return 0;
	in = data + 1;
	len = size - 1;
	(void)wire_classify(in, len);
	switch (data[0] % 12) {
	case 0: {
		struct wire_hdr h;

		if (wire_hdr_get(&h, in, len)) {
			wire_hdr_put(out, &h);
			CHECK(memcmp(out, in, WIRE_DATA_HDR) == 0);
			CHECK(wire_plain_len(len) == len - WIRE_DATA_MIN);
		}
		break;
	}
	case 1: {
		struct wire_init m;

		if (wire_init_get(&m, in, len)) {
			CHECK(inside(m.msg1, WIRE_MSG1_LEN, in, len));
			CHECK(wire_init_put(out, m.sender) == out + WIRE_INIT_MSG1);
			CHECK(memcmp(out, in, WIRE_INIT_MSG1) == 0);
		}
		break;
	}
	case 2: {
		struct wire_resp m;

		if (wire_resp_get(&m, in, len)) {
			CHECK(inside(m.msg2, WIRE_MSG2_LEN, in, len));
			CHECK(wire_resp_put(out, m.sender, m.receiver) == out + WIRE_RESP_MSG2);
			CHECK(memcmp(out, in, WIRE_RESP_MSG2) == 0);
		}
		break;
	}
	case 3: {
		struct wire_init_payload p;
		uint8_t c;

		if (wire_init_payload_get(&p, in, len)) {
			wire_init_payload_put(out, &p);
			CHECK(memcmp(out, in, WIRE_INIT_PAYLOAD) == 0);
		}
		if (wire_resp_payload_get(&c, in, len)) {
			wire_resp_payload_put(out, c);
			CHECK(memcmp(out, in, WIRE_RESP_PAYLOAD) == 0);
		}
		break;
	}
	case 4: {
		struct wire_sym s;

		if (wire_sym_get(&s, in, len)) {
			CHECK(WIRE_SYM_HDR + (size_t)s.len <= len);
			wire_sym_put(out, &s);
			CHECK(memcmp(out, in, WIRE_SYM_HDR) == 0);
		}
		break;
	}
	case 5: {
		struct wire_repair m;

		if (wire_repair_get(&m, in, len)) {
			CHECK(m.symlen >= WIRE_SYM_HDR && inside(m.sym, m.symlen, in, len));
			wire_repair_put(out, m.k, m.r);
			CHECK(memcmp(out, in, WIRE_REPAIR_PRE) == 0);
		}
		break;
	}
	case 6: {
		struct wire_arq m;

		if (wire_arq_get(&m, in, len)) {
			CHECK(inside(m.pkt, m.len, in, len) && m.len + WIRE_ARQ_PRE == len);
			wire_arq_put(out, m.counter);
			CHECK(memcmp(out, in, WIRE_ARQ_PRE) == 0);
		}
		break;
	}
	case 7: {
		struct wire_report r;

		if (wire_report_get(&r, in, len)) {
			CHECK(r.n_nacks <= WIRE_REPORT_MAX_NACKS);
			CHECK(wire_report_put(out, &r) == len);
			CHECK(memcmp(out, in, len) == 0);
		}
		break;
	}
	case 9: {
		struct wire_ctrl c;

		if (wire_ctrl_get(&c, in, len)) {
			CHECK(c.n_cands <= WIRE_MAX_CANDS && len <= WIRE_CTRL_MAX);
			CHECK(wire_ctrl_put(out, &c) == len);
			CHECK(memcmp(out, in, len) == 0);
		}
		break;
	}
	case 10: {
		struct wire_relay m;

		if (wire_relay_get(&m, in, len)) {
			CHECK(m.len > 0 && inside(m.payload, m.len, in, len));
			CHECK(wire_classify(in, len) == WIRE_RELAY);
			wire_relay_put(out, m.dir, m.token, m.relay_id);
			CHECK(memcmp(out, in, WIRE_RELAY_HDR) == 0);
		}
		break;
	}
	case 11: {
		struct wire_cookie m;

		if (wire_cookie_get(&m, in, len)) {
			CHECK(len == WIRE_COOKIE_MSG && wire_classify(in, len) == WIRE_COOKIE);
			CHECK(inside(m.nonce, WIRE_COOKIE_NONCE, in, len));
			CHECK(inside(m.sealed, WIRE_COOKIE_LEN + YIP_AEAD_TAG, in, len));
			CHECK(wire_cookie_put(out, m.receiver) == out + 8);
			CHECK(memcmp(out, in, 8) == 0);
		}
		if (len == WIRE_INIT_LEN) {
			uint8_t cookie[WIRE_COOKIE_LEN] = {1}, key[YIP_KEY_LEN] = {2};

			(void)wire_mac2_ok(in, cookie);
			(void)wire_init_mac1_ok(in, key);
		}
		break;
	}
	default: {
		uint8_t key[YIP_KEY_LEN] = {0};

		if (len >= YIP_KEY_LEN) {
			memcpy(key, in, YIP_KEY_LEN);
			(void)wire_mac1_ok(in, len, key);
		}
		break;
	}
	}
	return 0;
}
