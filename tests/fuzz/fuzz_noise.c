/*
 * libFuzzer target for the Noise IK message parsers. Every input is fed to
 * both sides that read attacker-controlled bytes:
 *   - a responder with a fixed static key (msg1, both steps, then msg2), and
 *   - an initiator that has just sent msg1 to that responder (msg2).
 * Keys and ephemerals are fixed, so the seeds in corpus/noise/ (a valid msg1
 * and the matching msg2) stay valid and the fuzzer can reach the payloads.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto.h"
#include "noise/noise.h"

#include "memo.h"

#define MAX_MSG 65535

static const uint8_t prologue[] = "yip fuzz";
static const uint8_t first_payload[] = "fuzz msg1";

static struct noise_hs responder; /* fresh */
static struct noise_hs initiator; /* after writing msg1 */
static uint8_t msg1[NOISE_MSG1_OVERHEAD + sizeof(first_payload)];

/* A fixed private key: byte pattern from seed, clamped. */
static void fixed_key(uint8_t priv[YIP_KEY_LEN], uint8_t seed)
{
	size_t i;

	for (i = 0; i < YIP_KEY_LEN; i++)
		priv[i] = (uint8_t)(seed + 7 * i);
	priv[0] &= 248;
	priv[31] &= 127;
	priv[31] |= 64;
}

static void setup(void)
{
	uint8_t is[32], is_pub[32], rs[32], rs_pub[32], ie[32];

	if (yip_crypto_init() != 0)
		abort();
	fixed_key(is, 1);
	fixed_key(rs, 2);
	fixed_key(ie, 3);
	if (yip_key_public(is_pub, is) || yip_key_public(rs_pub, rs))
		abort();

	noise_hs_init(&responder, false, prologue, sizeof(prologue), rs, rs_pub, NULL);
	noise_hs_init(&initiator, true, prologue, sizeof(prologue), is, is_pub, rs_pub);
	noise_hs_set_ephemeral(&initiator, ie);
	if (noise_write_msg1(&initiator, first_payload, sizeof(first_payload), msg1,
	                     sizeof(msg1)) != (int)sizeof(msg1))
		abort();
}

static void fuzz_responder(const uint8_t *data, size_t size)
{
	static uint8_t payload[MAX_MSG], out[MAX_MSG];
	struct noise_hs hs = responder;
	uint8_t rs[YIP_KEY_LEN], re[YIP_KEY_LEN];
	int plen;

	if (noise_read_msg1_static(&hs, data, size, rs) != 0)
		return;
	plen = noise_read_msg1_payload(&hs, data, size, payload, sizeof(payload));
	if (plen < 0)
		return;
	fixed_key(re, 4); /* keeps msg2 reproducible for the seed corpus */
	noise_hs_set_ephemeral(&hs, re);
	if (noise_write_msg2(&hs, payload, (size_t)plen, out, sizeof(out)) < 0)
		abort(); /* a fully read msg1 must always allow msg2 */
	noise_hs_wipe(&hs);
}

static void fuzz_initiator(const uint8_t *data, size_t size)
{
	static uint8_t payload[MAX_MSG];
	struct noise_hs hs = initiator;

	if (noise_read_msg2(&hs, data, size, payload, sizeof(payload)) >= 0) {
		uint8_t send[YIP_KEY_LEN], recv[YIP_KEY_LEN];

		noise_split(&hs, send, recv, NULL);
	}
	noise_hs_wipe(&hs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;

	memo_reset();
	if (!ready) {
		setup();
		ready = true;
	}
	fuzz_responder(data, size);
	fuzz_initiator(data, size);
	return 0;
}
