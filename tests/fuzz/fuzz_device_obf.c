/*
 * The engine's front door with obf_psk (src/obf, docs/obfuscation.md):
 * engine A of a pair (tests/lib/pair.h) whose only peer B has no session
 * with it yet (A has sent an Init and waits), both with the same obf_psk.
 * Everything reaches A through yip_device_rx, which removes the
 * obfuscation before anything else looks at the datagram.
 *
 * The first byte chooses a mode (mod 4); the rest is:
 *   0  a datagram as a prober sends it: A must drop it as obf, count
 *      nothing else and answer nothing
 *   1  a plain datagram (its first word replaced by Init, Resp, Data,
 *      Repair, Report or Ctrl type, by the next byte), obfuscated with the
 *      network's key, so the engine behind the obfuscation layer sees it:
 *      one datagram, at most one drop
 *   2  pairs (offset, xor) applied to B's real obfuscated Init or Resp to A
 *      (the next byte picks which): a changed envelope never opens, so A
 *      drops it as obf and answers nothing
 *   3  the same on an obfuscated keepalive-sized Data frame with a made-up
 *      receiver index: a flip in the masked header, the sample or the
 *      trailer fails the tag; one further in may open, and then meets the
 *      index lookup: at most one drop
 *
 * The engine persists across inputs; no input completes a handshake (an
 * unchanged Resp is skipped), so A stays in the same state.
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include <sodium.h>

#include "obf/obf.h"
#include "pair.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW (YIP_NS_PER_S + YIP_NS_PER_S / 2)
#define CAP 2048

static struct pair P;
static struct pair_node *A;
static struct obf_keys K;
static uint8_t init_b[CAP], resp_b[CAP], keep_b[CAP];
static size_t init_len, resp_len, keep_len;

static uint64_t drops_total(void)
{
	uint64_t t = 0;

	for (int d = 0; d < YIP_DROP_COUNT; d++)
		t += A->dev.drops[d];
	return t;
}

static void take(struct pair_node *n, uint8_t *buf, size_t *len)
{
	if (n->nout != 1 || n->out[0].len > CAP)
		__builtin_trap();
	memcpy(buf, n->out[0].buf, n->out[0].len);
	*len = n->out[0].len;
	pair_discard(n);
}

static void setup(void)
{
	static const uint8_t psk[OBF_PSK_LEN] = {0x6b, 0x1f, 0x03, 0x99};
	uint8_t keys[2][YIP_KEY_LEN], pub[2][YIP_KEY_LEN];
	struct pair_opts o = {
	    .out_cap = 8, .discard_overflow = true, .keys = keys, .obf_psk = {psk, psk}};
	uint8_t ab[28] = {0x45, 0, 0, 28, [8] = 64, 17, [12] = 10, 0, 0, 1, 10, 0, 0, 2};
	uint8_t ba[28] = {0x45, 0, 0, 28, [8] = 64, 17, [12] = 10, 0, 0, 2, 10, 0, 0, 1};
	struct pair_node *b;
	char err[128];

	/* As fuzz_device: A's public key the larger, so A answers B's Init. */
	yip_crypto_init();
	memset(keys[0], 0x11, YIP_KEY_LEN);
	memset(keys[1], 0x22, YIP_KEY_LEN);
	yip_key_public(pub[0], keys[0]);
	yip_key_public(pub[1], keys[1]);
	if (memcmp(pub[0], pub[1], YIP_KEY_LEN) < 0) {
		memset(keys[0], 0x22, YIP_KEY_LEN);
		memset(keys[1], 0x11, YIP_KEY_LEN);
	}
	obf_keys_init(&K, psk);
	if (pair_init(&P, &o, err, sizeof(err)) != 0)
		__builtin_trap();
	A = &P.n[0];
	b = &P.n[1];
	/* A's Init to B; B answers (kept), and B's keepalive under the session
	 * it now has, then B's own Init (kept). */
	yip_device_tx(&A->dev, YIP_NS_PER_S, ab, sizeof(ab));
	pair_pump(&P, 0, YIP_NS_PER_S, NULL, NULL);
	take(b, resp_b, &resp_len);
	yip_device_tx(&b->dev, YIP_NS_PER_S, ba, sizeof(ba));
	take(b, init_b, &init_len);
	if (!A->dev.peers[0]->hs_pending)
		__builtin_trap();
	/* A session frame under the network key: a keepalive-sized Data
	 * datagram with a made-up index and body (A has no session it opens
	 * under, which is what a prober's replayed frame meets too). */
	keep_len = WIRE_DATA_MIN;
	for (size_t i = 0; i < keep_len; i++)
		keep_b[i] = (uint8_t)(i * 37 + 11);
	memset(keep_b, 0, 4);
	keep_b[0] = WIRE_DATA;
	keep_len = obf_wrap(&K, keep_b, keep_len, CAP, true);
	if (keep_len == 0)
		__builtin_trap();
}

static void rx(const uint8_t *d, size_t len, int expect_obf)
{
	uint64_t before = drops_total(), obf_before = A->dev.drops[YIP_DROP_OBF];

	pair_discard(A);
	pair_rx(A, NOW, &P.n[1].addr, d, len);
	if (drops_total() > before + 1)
		__builtin_trap(); /* one datagram, at most one drop */
	if (expect_obf && (A->dev.drops[YIP_DROP_OBF] != obf_before + 1 || A->nout != 0))
		__builtin_trap(); /* not authentic: counted as obf, answered with nothing */
	yip_device_timers(&A->dev, NOW);
	pair_discard(A);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static const uint8_t types[] = {WIRE_INIT,   WIRE_RESP,   WIRE_DATA,
	                                WIRE_REPAIR, WIRE_REPORT, WIRE_CTRL};
	uint8_t buf[CAP];
	const uint8_t *orig;
	size_t len, n;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (size < 2 || size > CAP - 64)
		return 0;
	switch (data[0] % 4) {
	case 0:
		rx(data + 1, size - 1, 1);
		break;
	case 1:
		len = size - 2 < 4 ? 4 : size - 2;
		memset(buf, 0, len);
		memcpy(buf, data + 2, size - 2);
		memset(buf, 0, 4);
		buf[0] = types[data[1] % sizeof(types)];
		n = obf_wrap(&K, buf, len, sizeof(buf), true);
		if (n != 0)
			rx(buf, n, 0);
		break;
	case 2:
	case 3:
		if (data[0] % 4 == 3) {
			orig = keep_b;
			len = keep_len;
		} else {
			orig = data[1] & 1 ? init_b : resp_b;
			len = data[1] & 1 ? init_len : resp_len;
		}
		memcpy(buf, orig, len);
		for (size_t i = 2; i + 1 < size; i += 2)
			buf[data[i] % len] ^= data[i + 1];
		/* sodium_memcmp, not memcmp: libFuzzer learns the operands of an
		 * instrumented memcmp and would replay the real datagram in mode 0. */
		if (sodium_memcmp(buf, orig, len) == 0)
			return 0; /* unchanged: it would be accepted, A's state would change */
		rx(buf, len, orig != keep_b);
		break;
	}
	return 0;
}
