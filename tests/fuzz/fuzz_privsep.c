/*
 * The privileged half's decoder (src/wire/privsep.c) on any bytes: a
 * request it accepts writes back to the same bytes (there is one way to
 * say each), and a reply decodes to text with no control byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/privsep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_privsep_req req;
	uint8_t again[WIRE_PRIVSEP_REQ];
	char text[WIRE_PRIVSEP_TEXT + 1];
	bool ok;

	if (wire_privsep_req_get(&req, data, size)) {
		wire_privsep_req_put(again, &req);
		if (memcmp(again, data, WIRE_PRIVSEP_REQ) != 0)
			abort();
	}
	if (wire_privsep_reply_get(&ok, text, data, size))
		for (size_t i = 0; text[i] != '\0'; i++)
			if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] == 0x7f)
				abort();
	return 0;
}
