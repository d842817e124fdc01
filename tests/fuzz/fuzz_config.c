/*
 * libFuzzer target for the configuration parser. Any input must either parse
 * or fail with a message, without crashing or leaking; host names are not
 * resolved so that runs stay fast and offline.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct yip_config cfg;
	char err[256];

	if (yip_config_parse((const char *)data, size, "fuzz", false, &cfg, err, sizeof(err)) < 0) {
		/* A failure must always come with a message naming the input. */
		if (strncmp(err, "fuzz:", 5) != 0)
			__builtin_trap();
		return 0;
	}
	yip_config_free(&cfg);
	return 0;
}
