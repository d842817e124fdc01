#include "wire/wire.h"

#include <sodium.h>
#include <string.h>

int wire_classify(const uint8_t *d, size_t len)
{
	bool zero;

	if (len < 4)
		return 0;
	zero = (d[1] | d[2] | d[3]) == 0;
	switch (d[0]) {
	case WIRE_INIT:
		return zero && len == WIRE_INIT_LEN ? WIRE_INIT : 0;
	case WIRE_RESP:
		return zero && len == WIRE_RESP_LEN ? WIRE_RESP : 0;
	case WIRE_DATA:
		return len >= WIRE_DATA_MIN ? WIRE_DATA : 0;
	case WIRE_REPAIR:
		return len >= WIRE_DATA_MIN + 2 ? WIRE_REPAIR : 0;
	case WIRE_REPORT:
		return zero && len >= WIRE_DATA_MIN ? WIRE_REPORT : 0;
	default:
		return 0;
	}
}

void wire_mac1_key(uint8_t key[YIP_KEY_LEN], const uint8_t pub[YIP_KEY_LEN])
{
	static const char label[] = "yip-mac1-v1";
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, YIP_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label) - 1);
	crypto_generichash_update(&st, pub, YIP_KEY_LEN);
	crypto_generichash_final(&st, key, YIP_KEY_LEN);
}

static void mac1_compute(uint8_t out[WIRE_MAC_LEN], const uint8_t *msg, size_t len,
                         const uint8_t key[YIP_KEY_LEN])
{
	crypto_generichash(out, WIRE_MAC_LEN, msg, len - WIRE_MAC_LEN, key, YIP_KEY_LEN);
}

void wire_mac1_put(uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN])
{
	mac1_compute(msg + len - WIRE_MAC_LEN, msg, len, key);
}

bool wire_mac1_ok(const uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN])
{
	uint8_t mac[WIRE_MAC_LEN];

	if (len < WIRE_MAC_LEN)
		return false;
	mac1_compute(mac, msg, len, key);
	return sodium_memcmp(mac, msg + len - WIRE_MAC_LEN, WIRE_MAC_LEN) == 0;
}
