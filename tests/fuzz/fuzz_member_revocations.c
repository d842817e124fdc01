/*
 * Revocation lists: whatever the decoder accepts encodes back to the same
 * bytes and describes itself; signed again from its entries (given in
 * reverse, so they are sorted again) it is the same list, and every entry
 * it holds is found by the binary search.
 */
#include <stdlib.h>

#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_ca *ca = fuzz_ca();
	static struct member_revocations r, s;
	static uint8_t out[WIRE_REVOCATIONS_MAX], rev[WIRE_REVOCATIONS_MAX];
	const uint8_t *e;
	struct wire_revocations f;
	size_t total = 0;

	if (member_revocations_parse(&r, data, size) != MEMBER_OK)
		return 0;
	f = r.f;
	f.entries = e = member_revocations_entries(&r);
	CHECK(wire_revocations_put(out, sizeof(out), &f) == size && memcmp(out, data, size) == 0);
	member_revocations_describe(&r, fuzz_emit, &total);
	for (unsigned i = 0; i < r.f.n; i++) {
		memcpy(rev + (size_t)(r.f.n - 1 - i) * WIRE_REVOKED_ENTRY,
		       e + i * WIRE_REVOKED_ENTRY, WIRE_REVOKED_ENTRY);
		CHECK(member_revocations_has(&r, e[i * WIRE_REVOKED_ENTRY],
		                             e + i * WIRE_REVOKED_ENTRY + 1));
	}
	CHECK(member_revocations_sign(&s, r.f.network, r.f.serial, r.f.issued_at, rev, r.f.n,
	                              ca->sec) == 0);
	CHECK(s.len == size && memcmp(s.raw, data, size - WIRE_SIG_LEN) == 0);
	CHECK(member_revocations_check(&s, ca->pub, s.f.network, 0) == MEMBER_OK);
	return 0;
}
