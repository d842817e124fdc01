/*
 * Certificate requests: whatever the decoder accepts encodes back to the
 * same bytes and checks itself without trouble; a request made from an
 * input of at most 32 bytes as a private key (zero-padded) always verifies.
 * Only such short inputs make a request: making and checking one (a public
 * key, a signature and its check) costs several times what decoding does,
 * and a longer input, which the decoder needs, adds nothing as a key.
 */
#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct member_request r;
	uint8_t out[WIRE_REQUEST_LEN], priv[YIP_KEY_LEN] = {0};
	size_t total = 0;
	enum member_verdict v;

	(void)fuzz_ca();
	if (member_request_parse(&r, data, size) == MEMBER_OK) {
		wire_request_put(out, &r.f);
		CHECK(memcmp(out, data, size) == 0);
		v = member_request_check(&r);
		CHECK(v == MEMBER_OK || v == MEMBER_BAD_SIGNATURE);
		member_request_describe(&r, fuzz_emit, &total);
	}
	if (size > sizeof(priv))
		return 0;
	memcpy(priv, data, size);
	if (member_request_make(&r, priv) == 0)
		CHECK(member_request_check(&r) == MEMBER_OK);
	else
		CHECK(sodium_is_zero(priv, sizeof(priv)));
	return 0;
}
