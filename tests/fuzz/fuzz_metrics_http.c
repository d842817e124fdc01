/*
 * The metrics endpoint's request reader (wire_http_metrics_code in
 * wire/http.h) on any bytes: it reads nothing past its input or past its
 * limit, answers only with the codes it names, and once it has answered,
 * more bytes do not change the answer.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "wire/http.h"

#define LIMIT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool head_only, again_head;
	int code = wire_http_metrics_code(data, size, LIMIT, &head_only), again;

	CHECK(code == 0 || code == 200 || code == 400 || code == 404 || code == 405);
	CHECK(code != 0 || size < LIMIT);
	CHECK(code == 200 || !head_only);
	/* Bytes past the limit are never looked at. */
	if (size > LIMIT) {
		again = wire_http_metrics_code(data, LIMIT, LIMIT, &again_head);
		CHECK(again == code && again_head == head_only);
	}
	/* An answer given at some length stays the same with more bytes. */
	for (size_t n = 0; n < size && n < 64; n++) {
		again = wire_http_metrics_code(data, n, LIMIT, &again_head);
		CHECK(again == 0 || again == code);
	}
	return 0;
}
