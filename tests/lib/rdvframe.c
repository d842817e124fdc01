/*
 * yip-rdvframe SERVER_PUBLIC_KEY: for the netns test of the TLS front
 * (tests/netns/tls_decoy.sh). Writes to standard output one stream frame
 * (wire/stream.h: 2-byte little-endian length, then the datagram) holding
 * a fresh Init from a new random key to the rendezvous server with that
 * public key (64 hex digits), stamped with the wall clock: the first frame
 * a node sends over TLS. The server answers it once; the same bytes again
 * are a replay.
 */
#include <stdio.h>
#include <time.h>

#include <sodium.h>

#include "rdvclient.h"
#include "util/clock.h"
#include "util/hex.h"
#include "wire/stream.h"

int main(int argc, char **argv)
{
	uint8_t server[YIP_KEY_LEN], frame[WIRE_STREAM_HDR + WIRE_INIT_LEN];
	struct rdvc c;

	if (argc != 2 || yip_crypto_init() != 0 ||
	    yip_hex_decode(server, sizeof(server), argv[1]) != 0) {
		fprintf(stderr, "usage: yip-rdvframe SERVER_PUBLIC_KEY (64 hex digits) > frame\n");
		return 2;
	}
	rdvc_init(&c, NULL, "127.0.0.1", 1);
	if (rdvc_init_msg(&c, server, yip_now_wall(), YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305),
	                  frame + WIRE_STREAM_HDR) != WIRE_INIT_LEN) {
		fprintf(stderr, "yip-rdvframe: Noise failed\n");
		return 1;
	}
	wire_stream_put(frame, WIRE_INIT_LEN);
	rdvc_wipe(&c);
	return fwrite(frame, sizeof(frame), 1, stdout) == 1 && fflush(stdout) == 0 ? 0 : 1;
}
