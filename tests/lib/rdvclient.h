/*
 * A node's side of a session with a rendezvous server, in miniature, for
 * the fuzzer and the benchmark: it builds a real Noise IK Init to the
 * server's key (src/noise, the wire.h layouts), reads the Resp, and then
 * seals any Ctrl plaintext under the live session keys (well-formed or not,
 * with any counter) and opens what the server sends back. It keeps no
 * timers and sends nothing by itself: the caller moves the datagrams.
 * What a full node does with the server is src/peer/rendezvous.c's job;
 * this is small enough to hold 100 000 of at once.
 */
#ifndef YIP_TESTS_LIB_RDVCLIENT_H
#define YIP_TESTS_LIB_RDVCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "crypto/crypto.h"
#include "noise/noise.h"
#include "wire/wire.h"

struct rdvc {
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	union yip_sockaddr addr; /* where its datagrams come from */
	uint32_t sender;         /* its index in the pending handshake */
	bool pending;            /* an Init is out */
	struct noise_hs hs;

	bool up; /* a session: the keys below are live */
	uint8_t cipher;
	uint32_t local, remote; /* its index, the server's */
	uint64_t send_counter;
	uint8_t send[YIP_KEY_LEN], recv[YIP_KEY_LEN];

	/* from the server's REGISTERED */
	bool registered;
	uint64_t token;
	uint32_t relay_id;
};

/* A client with private key priv (NULL: a fresh random one) at address ip:port. */
void rdvc_init(struct rdvc *c, const uint8_t *priv, const char *ip, uint16_t port);

/* Wipes the keys. */
void rdvc_wipe(struct rdvc *c);

/*
 * Writes an Init to the server with public key server_pub into out
 * (WIRE_INIT_LEN bytes): timestamp wall_ns (ns since the epoch; the server
 * refuses one not newer than the last it accepted from this key), ciphers
 * offered (YIP_CIPHER_BIT set). Returns WIRE_INIT_LEN, or 0 if Noise failed.
 */
size_t rdvc_init_msg(struct rdvc *c, const uint8_t server_pub[YIP_KEY_LEN], uint64_t wall_ns,
                     unsigned ciphers, uint8_t out[WIRE_INIT_LEN]);

/* Takes the server's Resp to the pending Init: true if the session is up. */
bool rdvc_resp(struct rdvc *c, const uint8_t *d, size_t len);

/*
 * Seals plaintext plain (plen bytes) as a Ctrl datagram into out
 * (plen + WIRE_DATA_MIN bytes) with the next counter.
 * Returns its length, 0 without a session.
 */
size_t rdvc_seal(struct rdvc *c, const uint8_t *plain, size_t plen, uint8_t *out);

/* The same with counter given (for replays and jumps); the next counter is not changed. */
size_t rdvc_seal_at(struct rdvc *c, uint64_t counter, const uint8_t *plain, size_t plen,
                    uint8_t *out);

/* Encodes m and seals it; 0 if m does not encode. */
size_t rdvc_seal_ctrl(struct rdvc *c, const struct wire_ctrl *m, uint8_t *out);

/*
 * Opens a Ctrl from the server and decodes it into m; a REGISTERED also
 * sets registered, token and relay_id. False if it does not open or decode.
 */
bool rdvc_open(struct rdvc *c, const uint8_t *d, size_t len, struct wire_ctrl *m);

#endif
