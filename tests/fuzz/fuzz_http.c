/*
 * The built-in site's request reader (wire/http.h) on any bytes: it reads
 * nothing past its input, a whole head ends with an empty line inside it,
 * and what it says of a head does not change with the bytes that follow.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "wire/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_http_req r, again;
	enum wire_http_verdict v;

	memset(&r, 0, sizeof(r));
	memset(&again, 0, sizeof(again));
	v = wire_http_request(data, size, &r);

	if (v != WIRE_HTTP_OK) {
		CHECK(v == WIRE_HTTP_MORE || v == WIRE_HTTP_BAD);
		CHECK(v == WIRE_HTTP_BAD || size < WIRE_HTTP_HEAD_MAX);
		return 0;
	}
	CHECK(r.head_len >= 2 && r.head_len <= size && r.head_len <= WIRE_HTTP_HEAD_MAX);
	CHECK(data[r.head_len - 1] == '\n');
	CHECK(r.method <= WIRE_HTTP_OTHER);
	/* The head alone reads the same. */
	CHECK(wire_http_request(data, r.head_len, &again) == WIRE_HTTP_OK);
	CHECK(memcmp(&r, &again, sizeof(r)) == 0);
	return 0;
}
