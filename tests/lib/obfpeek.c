/*
 * yip-obfpeek [--lengths] PSK: for the netns tests' statistics
 * (tests/netns/obf_dpi.sh, members_obf.sh). Reads UDP payloads from
 * standard input, one per line in hex, and prints for each what a holder of
 * the obf_psk (64 hex digits) makes of it: "init", "resp", "cookie",
 * "data", "repair", "report", "ctrl", "relay", "junk" or "bad" (not
 * authentic); with --lengths, each authentic datagram's plain length after
 * its name ("init 341"). A relay frame is opened as a node and
 * as a server would, so both directions name what they carry. The capture itself cannot tell which
 * datagrams are handshakes: that is the point of obfuscation.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "obf/obf.h"
#include "util/hex.h"
#include "wire/wire.h"

#define MAX 70000

int main(int argc, char **argv)
{
	static char line[2 * MAX + 2];
	static uint8_t d[MAX], out[MAX];
	static const char *const names[] = {"?",      "init",   "resp", "cookie", "data",
	                                    "repair", "report", "ctrl", "relay"};
	uint8_t psk[OBF_PSK_LEN];
	struct obf_keys k;
	bool lengths = argc == 3 && strcmp(argv[1], "--lengths") == 0;

	if (argc != 2 + lengths || sodium_init() < 0 ||
	    yip_hex_decode(psk, sizeof(psk), argv[1 + lengths]) != 0) {
		fprintf(stderr, "usage: yip-obfpeek [--lengths] PSK (64 hex digits) < payloads\n");
		return 2;
	}
	obf_keys_init(&k, psk);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		size_t n = strcspn(line, "\r\n"), len;
		enum obf_result r;

		line[n] = '\0';
		if (n % 2 != 0 || yip_hex_decode(d, n / 2, line) != 0) {
			puts("bad");
			continue;
		}
		r = obf_open(&k, d, n / 2, out, &len, WIRE_RELAY_FROM_SERVER, true);
		if (r == OBF_BAD) /* a relay to a server: its payload opened too */
			r = obf_open(&k, d, n / 2, out, &len, WIRE_RELAY_TO_SERVER, false) ==
			                OBF_OK &&
			            obf_open(&k, d + WIRE_RELAY_HDR,
			                     n / 2 - OBF_TRAILER - WIRE_RELAY_HDR, out, &len, -1,
			                     false) == OBF_OK
			        ? OBF_OK
			        : OBF_BAD;
		if (r == OBF_IGNORED)
			puts("junk");
		else if (r != OBF_OK || out[0] > WIRE_RELAY)
			puts("bad");
		else if (lengths)
			printf("%s %zu\n", names[out[0]], len);
		else
			puts(names[out[0]]);
	}
	obf_keys_wipe(&k);
	return 0;
}
