/*
 * libFuzzer target for yip-rendezvous's parsers (src/rendezvous/conf.c):
 * the input as a configuration file, as a key file, and as one setting's
 * value for every key (the command line's way). Each must succeed or fail
 * with a message, without crashing or leaking, and a key file's message
 * never contains the key file's text.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	uint8_t priv[YIP_KEY_LEN];
	struct rdv_conf c;
	char err[512], *value;

	rdv_conf_default(&c);
	err[0] = '\0';
	if (rdv_conf_parse(&c, text, size, "fuzz", err, sizeof(err)) != 0) {
		if (strncmp(err, "fuzz:", 5) != 0)
			__builtin_trap();
	} else {
		/* what the file set must pass or fail the checks with a message */
		err[0] = '\0';
		if (rdv_conf_check(&c, err, sizeof(err)) != 0 && err[0] == '\0')
			__builtin_trap();
	}
	err[0] = '\0';
	if (rdv_keyfile_parse(text, size, "fuzz", priv, err, sizeof(err)) != 0 &&
	    strncmp(err, "fuzz", 4) != 0)
		__builtin_trap();

	value = malloc(size + 1);
	if (value == NULL)
		return 0;
	memcpy(value, data, size);
	value[size] = '\0';
	for (int k = 0; k < RDV_CONF_COUNT; k++) {
		err[0] = '\0';
		rdv_conf_default(&c);
		if (rdv_conf_set(&c, (enum rdv_conf_key)k, value, err, sizeof(err)) != 0 &&
		    err[0] == '\0')
			__builtin_trap();
	}
	free(value);
	return 0;
}
