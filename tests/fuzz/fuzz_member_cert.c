/*
 * Certificates (src/wire/member.c, src/membership): whatever the decoder
 * accepts must encode back to the same bytes, describe itself, and, signed
 * again by a known CA, go through every check without trouble, with the
 * verdicts the fields call for.
 */
#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_ca *ca = fuzz_ca();
	static struct member_cert c, s;
	uint8_t out[WIRE_CERT_MAX], h[MEMBER_HASH_LEN];
	uint64_t now = fuzz_time(data, size);
	enum member_verdict v;
	size_t total = 0;

	if (member_cert_parse(&c, data, size) != MEMBER_OK)
		return 0;
	CHECK(wire_cert_put(out, sizeof(out), &c.f) == size && memcmp(out, data, size) == 0);
	member_cert_describe(&c, now, fuzz_emit, &total);
	member_cert_hash(&c, h);
	CHECK(!member_is_revoked(NULL, &c));
	/* Made by nobody we know: the window is checked before the signature. */
	v = member_cert_check(&c, ca->pub, c.f.network, now);
	CHECK(v == MEMBER_WRONG_CA || v == MEMBER_OK || v == MEMBER_EXPIRED ||
	      v == MEMBER_NOT_YET_VALID);
	/* Signed by the CA: the network and window decide. */
	CHECK(member_cert_sign(&s, &c.f, ca->sec) == 0);
	CHECK(s.len == size && memcmp(s.raw, data, size - WIRE_SIG_LEN) == 0);
	v = member_cert_check(&s, ca->pub, s.f.network, now);
	CHECK(v == MEMBER_OK || v == MEMBER_EXPIRED || v == MEMBER_NOT_YET_VALID);
	CHECK(member_cert_check(&s, ca->pub, "x/y", now) == MEMBER_WRONG_NETWORK);
	if (v == MEMBER_OK) {
		uint8_t other[YIP_KEY_LEN];

		memcpy(other, s.f.key, sizeof(other));
		other[0] ^= 1;
		CHECK(member_cert_admit(&s, ca->pub, s.f.network, NULL, s.f.key, now) == MEMBER_OK);
		CHECK(member_cert_admit(&s, ca->pub, s.f.network, NULL, other, now) ==
		      MEMBER_KEY_MISMATCH);
	}
	return 0;
}
