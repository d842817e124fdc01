/*
 * Member records: whatever the decoder accepts encodes back to the same
 * bytes and describes itself; with its certificate signed again by a known
 * CA and the record signed again by a key that certificate names, the
 * checks give only the verdicts the fields call for.
 */
#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_ca *ca = fuzz_ca();
	static struct member_record r, s;
	static struct member_cert c;
	uint8_t out[WIRE_RECORD_MAX], priv[YIP_KEY_LEN], spub[32], ssec[64];
	uint64_t now = fuzz_time(data, size);
	enum member_verdict v;
	struct wire_cert f;
	size_t total = 0;

	if (member_record_parse(&r, data, size) != MEMBER_OK)
		return 0;
	CHECK(wire_record_put(out, sizeof(out), r.cert.raw, r.cert.len, &r.f) == size &&
	      memcmp(out, data, size) == 0);
	member_record_describe(&r, now, fuzz_emit, &total);
	v = member_record_check(&r, ca->pub, r.cert.f.network, NULL, now);
	CHECK(v != MEMBER_MALFORMED && v != MEMBER_OLDER && v != MEMBER_KEY_MISMATCH);

	/* The same fields, with signatures that verify. */
	memset(priv, 0x5a, sizeof(priv));
	member_sign_keypair(priv, spub, ssec);
	f = r.cert.f;
	memcpy(f.sign_key, spub, sizeof(spub));
	CHECK(member_cert_sign(&c, &f, ca->sec) == 0);
	CHECK(member_record_sign(&s, &c, r.f.seq, r.f.expires, r.f.endpoints, r.f.n_endpoints,
	                         ssec) == 0);
	CHECK(s.len == size);
	v = member_record_check(&s, ca->pub, s.cert.f.network, NULL, now);
	CHECK(v == MEMBER_OK || v == MEMBER_EXPIRED || v == MEMBER_NOT_YET_VALID);
	CHECK(!member_record_newer(&s, &s));
	return 0;
}
