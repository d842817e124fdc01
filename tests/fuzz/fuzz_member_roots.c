/*
 * Root sets: whatever the decoder accepts encodes back to the same bytes,
 * describes itself, and, signed again by a known CA, passes its checks;
 * a serial above the set's is always refused as older.
 */
#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_ca *ca = fuzz_ca();
	static struct member_roots r, s;
	static uint8_t out[WIRE_ROOTS_MAX];
	size_t total = 0;
	enum member_verdict v;

	if (member_roots_parse(&r, data, size) != MEMBER_OK)
		return 0;
	CHECK(wire_roots_put(out, sizeof(out), &r.f) == size && memcmp(out, data, size) == 0);
	member_roots_describe(&r, fuzz_emit, &total);
	v = member_roots_check(&r, ca->pub, r.f.network, 0);
	CHECK(v == MEMBER_OK || v == MEMBER_WRONG_CA);
	CHECK(member_roots_sign(&s, &r.f, ca->sec) == 0);
	CHECK(s.len == size);
	CHECK(member_roots_check(&s, ca->pub, s.f.network, s.f.serial) == MEMBER_OK);
	if (s.f.serial < UINT64_MAX)
		CHECK(member_roots_check(&s, ca->pub, s.f.network, s.f.serial + 1) == MEMBER_OLDER);
	CHECK(!member_roots_newer(&s, &r));
	return 0;
}
