/*
 * The REALITY front's parsers on any bytes: the first byte picks one.
 * 0: a ClientHello handshake message for the front's check (reality_check,
 * with a fixed front key and clock: a seed corpus hello sealed to that key
 * reaches the seal's and the replay cache's paths); 1: a certificate, DER,
 * for the client's check of the front's certificate (reality_cert_ok); 2:
 * the seal's plaintext and the session id's place (wire/reality.h). No
 * input may crash, leak, or authenticate a hello the check then forgets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto.h"
#include "reality/reality.h"
#include "wire/reality.h"

/* The key the seed corpus was sealed to, and its clock. */
#define FUZZ_UNIX 1796000000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct reality_server *s;
	static uint64_t mono = 1;
	struct reality_keys k;

	if (s == NULL) {
		struct reality_server_config cfg = {
		    .names = {"www.example.com"}, .n_names = 1, .n_ids = 1};

		memset(cfg.priv, 0x42, sizeof(cfg.priv));
		cfg.ids[0][0] = 0xab;
		if (yip_crypto_init() != 0 || (s = reality_server_new(&cfg)) == NULL)
			abort();
	}
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: {
		enum reality_verdict v;

		mono += 1000000; /* the budget never runs dry */
		v = reality_check(s, mono, FUZZ_UNIX, data + 1, size - 1, &k);
		if (v >= REALITY_VERDICTS)
			abort();
		/* An authenticated hello is remembered: at once again, a replay. */
		if (v == REALITY_AUTHENTICATED &&
		    reality_check(s, mono, FUZZ_UNIX, data + 1, size - 1, &k) != REALITY_REPLAY)
			abort();
		break;
	}
	case 1: {
		struct tls_chain chain = {.n = 1, .der = {data + 1}, .len = {size - 1}};

		memset(&k, 7, sizeof(k));
		(void)reality_cert_ok(&k, &chain);
		break;
	}
	default: {
		struct wire_reality_seal seal;
		uint8_t back[WIRE_REALITY_PLAIN];

		if (size > WIRE_REALITY_PLAIN && wire_reality_seal_get(&seal, data + 1)) {
			wire_reality_seal_put(back, &seal);
			if (memcmp(back, data + 1, WIRE_REALITY_PLAIN) != 0)
				abort();
		}
		if (wire_reality_sid_at(data + 1, size - 1) > size - 1)
			abort();
	}
	}
	return 0;
}
