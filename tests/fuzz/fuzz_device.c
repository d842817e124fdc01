/*
 * The engine's front door: arbitrary datagrams to engine A of a pair
 * (tests/lib/pair.h) whose only peer B has no session with it yet: A has
 * sent an Init and waits for the answer. Everything in front of
 * authentication sees hostile input: the type word and length checks, Init
 * (mac1, Noise e/es/s, the peer lookup, glare), Resp (mac1, the index
 * lookup, Noise), and the header and index lookup of Data, Repair and
 * Report. Nothing here ever authenticates as B, so no data is decrypted;
 * what a peer with a live session can send is fuzz_session's job.
 *
 * The first byte chooses a mode (mod 6); the rest is:
 *   0    the datagram as is
 *   1-3  the datagram with its first word replaced: Init, Resp or Data type
 *   4    pairs (offset, xor) applied to the Noise message of B's real Init to
 *        A, mac1 then recomputed over it (anyone who knows A's public key
 *        can), so Noise itself sees the damage rather than the mac1 check
 *   5    the same on B's real Resp to A's pending Init
 *
 * The engine persists across inputs. A mutation that changes nothing is
 * skipped, so no input completes a handshake: A stays in the same state.
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "pair.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Before A's first retransmit (1 s after its Init, less 20 % jitter). */
#define NOW (YIP_NS_PER_S + YIP_NS_PER_S / 2)

static struct pair P;
static struct pair_node *A;
static uint8_t init_b[WIRE_INIT_LEN], resp_b[WIRE_RESP_LEN];

static void setup(void)
{
	uint8_t keys[2][YIP_KEY_LEN], pub[2][YIP_KEY_LEN];
	struct pair_opts o = {.out_cap = 8, .discard_overflow = true, .keys = keys};
	/* 10.0.0.1 -> 10.0.0.2 and back: UDP, header only. */
	uint8_t ab[28] = {0x45, 0, 0, 28, [8] = 64, 17, [12] = 10, 0, 0, 1, 10, 0, 0, 2};
	uint8_t ba[28] = {0x45, 0, 0, 28, [8] = 64, 17, [12] = 10, 0, 0, 2, 10, 0, 0, 1};
	struct pair_node *b;
	char err[128];

	/* Fixed keys, A's public key the larger: A answers B's Init rather than
	 * ignoring it for glare, so its payload and timestamp are reached. */
	yip_crypto_init();
	memset(keys[0], 0x11, YIP_KEY_LEN);
	memset(keys[1], 0x22, YIP_KEY_LEN);
	yip_key_public(pub[0], keys[0]);
	yip_key_public(pub[1], keys[1]);
	if (memcmp(pub[0], pub[1], YIP_KEY_LEN) < 0) {
		memset(keys[0], 0x22, YIP_KEY_LEN);
		memset(keys[1], 0x11, YIP_KEY_LEN);
	}
	if (pair_init(&P, &o, err, sizeof(err)) != 0)
		__builtin_trap();
	A = &P.n[0];
	b = &P.n[1];
	/* A's packet starts a handshake: its Init goes to B, B answers. */
	yip_device_tx(&A->dev, YIP_NS_PER_S, ab, sizeof(ab));
	pair_pump(&P, 0, YIP_NS_PER_S, NULL, NULL);
	if (b->nout != 1 || b->out[0].len != WIRE_RESP_LEN)
		__builtin_trap();
	memcpy(resp_b, b->out[0].buf, WIRE_RESP_LEN);
	/* B has only the next keys, which it may not send with: it starts its own. */
	pair_discard(b);
	yip_device_tx(&b->dev, YIP_NS_PER_S, ba, sizeof(ba));
	if (b->nout != 1 || b->out[0].len != WIRE_INIT_LEN)
		__builtin_trap();
	memcpy(init_b, b->out[0].buf, WIRE_INIT_LEN);
	pair_discard(b);
	if (!A->dev.peers[0].hs_pending)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	uint8_t buf[YIP_MAX_DGRAM + 64];
	const uint8_t *orig;
	size_t len, from;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (size == 0 || size > sizeof(buf))
		return 0;
	switch (data[0] % 6) {
	case 0:
		memcpy(buf, data + 1, size - 1);
		len = size - 1;
		break;
	case 4:
	case 5:
		orig = data[0] % 6 == 4 ? init_b : resp_b;
		len = data[0] % 6 == 4 ? WIRE_INIT_LEN : WIRE_RESP_LEN;
		from = data[0] % 6 == 4 ? WIRE_INIT_MSG1 : WIRE_RESP_MSG2;
		memcpy(buf, orig, len);
		for (size_t i = 1; i + 1 < size; i += 2)
			buf[from + data[i] % (len - WIRE_MAC_LEN - from)] ^= data[i + 1];
		if (memcmp(buf, orig, len) == 0)
			return 0; /* still valid: it would change A's state for good */
		if (len == WIRE_INIT_LEN)
			wire_init_mac1_put(buf, A->dev.mac1_key);
		else
			wire_mac1_put(buf, len, A->dev.mac1_key);
		break;
	default:
		memcpy(buf, data + 1, size - 1);
		len = size - 1 < 4 ? 4 : size - 1;
		memset(buf, 0, 4);
		buf[0] = (uint8_t)(data[0] % 6 == 3 ? WIRE_DATA : data[0] % 6);
		break;
	}
	pair_rx(A, NOW, &P.n[1].addr, buf, len);
	yip_device_timers(&A->dev, NOW);
	pair_discard(A);
	return 0;
}
