/*
 * The de-obfuscation path (src/obf) on arbitrary bytes, as a node and as a
 * rendezvous server see it. Whatever obf_open accepts must stay inside the
 * input and its output buffer (ASan), have a type its carrier may hold, and
 * wrap back into something that opens to the same bytes; nothing a
 * fuzzer makes without the key should open at all, so the second half
 * mutates real obfuscated datagrams: the first byte picks a layout to
 * build (a session frame, an envelope, a relay both ways), the next two a
 * position and a bit to flip, and the rest is its contents.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "obf/obf.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define CAP 4096

static struct obf_keys K;

static void keys(void)
{
	static int done;
	uint8_t psk[OBF_PSK_LEN] = {42};

	if (done)
		return;
	done = 1;
	CHECK(sodium_init() >= 0);
	obf_keys_init(&K, psk);
}

/* Opens d both ways (node, server); whatever opens must re-wrap and re-open the same. */
static int open_all(const uint8_t *d, size_t len)
{
	static uint8_t out[CAP], again[CAP], back[CAP];
	int opened = 0;

	for (int who = 0; who < 2; who++) {
		int dir = who ? WIRE_RELAY_TO_SERVER : WIRE_RELAY_FROM_SERVER;
		size_t n, m, k;
		enum obf_result r = obf_open(&K, d, len, out, &n, dir, who == 0);

		CHECK(r == OBF_OK || r == OBF_BAD || r == OBF_IGNORED);
		if (r != OBF_OK)
			continue;
		opened++;
		CHECK(n >= 1 && n <= len);
		if (who == 0)
			CHECK(out[0] != WIRE_RELAY || out[1] == WIRE_RELAY_FROM_SERVER);
		memcpy(again, out, n);
		m = obf_wrap(&K, again, n, CAP, who == 0);
		CHECK(m != 0);
		CHECK(obf_open(&K, again, m, back, &k, dir, who == 0) == OBF_OK);
		CHECK(k == n && memcmp(back, out, n) == 0);
	}
	return opened;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t d[CAP];
	size_t len, n, pos;
	uint8_t bit;

	keys();
	if (size > CAP - 200)
		return 0;
	/* Raw bytes: without the key nothing opens. */
	CHECK(open_all(data, size) == 0);
	if (size < 4)
		return 0;
	/* A real datagram, built from the input, then damaged in one bit. */
	len = size - 3;
	memcpy(d, data + 3, len);
	switch (data[0] % 4) {
	case 0: /* session */
		if (len < WIRE_DATA_MIN)
			return 0;
		d[0] = WIRE_DATA + data[0] / 4 % 4;
		break;
	case 1: /* handshake */
		if (len > WIRE_INIT_MAX || len == 0)
			return 0;
		d[0] = WIRE_INIT + data[0] / 4 % 3;
		break;
	case 2: /* relay to a server, payload a session datagram */
	case 3: /* relay from a server */
		if (len < WIRE_RELAY_HDR + WIRE_DATA_MIN)
			return 0;
		d[0] = WIRE_RELAY;
		d[1] = data[0] % 4 == 2 ? WIRE_RELAY_TO_SERVER : WIRE_RELAY_FROM_SERVER;
		d[WIRE_RELAY_HDR] = WIRE_DATA;
		break;
	}
	n = obf_wrap(&K, d, len, CAP, true);
	CHECK(n != 0);
	CHECK(open_all(d, n) >= 1);
	pos = (size_t)(data[1] | data[2] << 8) % n;
	bit = (uint8_t)(1u << (data[1] >> 5));
	d[pos] ^= bit;
	(void)open_all(d, n); /* a flip in a session body still opens (the AEAD is the session's) */
	return 0;
}
