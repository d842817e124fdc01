/*
 * The messages between yipd and its privileged half (src/privsep): the
 * sandboxed daemon asks, over a socket pair of SOCK_SEQPACKET, for the
 * configuration file opened, and for routes and addresses on its own
 * device added or removed. The privileged half trusts nothing in a
 * request: it decodes each with wire_privsep_req_get and answers only what
 * it decodes. A request is WIRE_PRIVSEP_REQ bytes:
 *
 *   0      op (enum wire_privsep_op)
 *   1      family: 4 or 6 for routes and addresses, 0 for the file
 *   2      prefix length (0..32 or 0..128; 0 for the file)
 *   3      reserved, zero
 *   4..19  the address (IPv4 in 4..7, the rest zero; all zero for the file)
 *
 * A reply is a status byte (0 done, 1 refused or failed) and up to
 * WIRE_PRIVSEP_TEXT bytes of text saying why (no NUL); the file, when
 * opened, travels as a descriptor beside it (SCM_RIGHTS).
 */
#ifndef YIP_WIRE_PRIVSEP_H
#define YIP_WIRE_PRIVSEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"

#define WIRE_PRIVSEP_REQ   20
#define WIRE_PRIVSEP_TEXT  255
#define WIRE_PRIVSEP_REPLY (1 + WIRE_PRIVSEP_TEXT)

enum wire_privsep_op {
	WIRE_PRIVSEP_CONFIG = 1, /* open the configuration file, read-only */
	WIRE_PRIVSEP_ROUTE_ADD = 2,
	WIRE_PRIVSEP_ROUTE_DEL = 3,
	WIRE_PRIVSEP_ADDR_ADD = 4,
	WIRE_PRIVSEP_ADDR_DEL = 5,
};

struct wire_privsep_req {
	enum wire_privsep_op op;
	struct yip_cidr cidr; /* routes and addresses */
};

/* Writes req (a prefix of the right family and length for those ops). */
void wire_privsep_req_put(uint8_t out[WIRE_PRIVSEP_REQ], const struct wire_privsep_req *req);

/* Decodes len bytes; false unless they are exactly one well-formed request. */
bool wire_privsep_req_get(struct wire_privsep_req *req, const uint8_t *in, size_t len);

/* Writes a reply of status ok and text (cut at WIRE_PRIVSEP_TEXT); returns its length. */
size_t wire_privsep_reply_put(uint8_t out[WIRE_PRIVSEP_REPLY], bool ok, const char *text);

/* Decodes len bytes: *ok and the text, NUL-terminated, into text; false if malformed. */
bool wire_privsep_reply_get(bool *ok, char text[WIRE_PRIVSEP_TEXT + 1], const uint8_t *in,
                            size_t len);

#endif
