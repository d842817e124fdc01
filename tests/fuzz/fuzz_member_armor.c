/*
 * The text form of membership objects: the first byte picks the kind
 * wanted (or any), the rest is read as a file; what is accepted has the kind
 * wanted and a header that agrees with its length, and written back out
 * and read again gives the same bytes. A refusal always says why.
 */
#include <stdlib.h>

#include "member.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t kinds[] = {0,
	                                WIRE_OBJ_CERT,
	                                WIRE_OBJ_ROOTS,
	                                WIRE_OBJ_REVOCATIONS,
	                                WIRE_OBJ_RECORD,
	                                WIRE_OBJ_REQUEST};
	static uint8_t out[WIRE_OBJ_MAX], again[WIRE_OBJ_MAX];
	uint8_t want = size > 0 ? kinds[data[0] % sizeof(kinds)] : 0; /* 0: any kind */
	struct wire_obj_hdr h;
	char err[256];
	size_t n, m, cap;
	char *text;

	(void)fuzz_ca();
	err[0] = '\0';
	if (size == 0)
		return 0;
	if (member_unarmor((const char *)data + 1, size - 1, want, out, sizeof(out), &n, err,
	                   sizeof(err)) != 0) {
		CHECK(err[0] != '\0' && n == 0);
		return 0;
	}
	CHECK(wire_obj_hdr_get(&h, out, n) && h.length == n && h.version == WIRE_OBJ_VERSION);
	CHECK(want == 0 || out[0] == want);
	cap = member_armor_size(n);
	text = malloc(cap);
	CHECK(text != NULL);
	CHECK(member_armor(text, cap, out, n) > 0);
	CHECK(member_unarmor(text, strlen(text), out[0], again, sizeof(again), &m, err,
	                     sizeof(err)) == 0);
	CHECK(m == n && memcmp(again, out, n) == 0);
	free(text);
	return 0;
}
