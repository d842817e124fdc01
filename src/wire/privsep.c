/* yipd's requests to its privileged half and the replies (see privsep.h). */
#include "wire/privsep.h"

#include <string.h>
#include <sys/socket.h>

static bool is_prefix_op(unsigned op)
{
	return op >= WIRE_PRIVSEP_ROUTE_ADD && op <= WIRE_PRIVSEP_ADDR_DEL;
}

void wire_privsep_req_put(uint8_t out[WIRE_PRIVSEP_REQ], const struct wire_privsep_req *req)
{
	memset(out, 0, WIRE_PRIVSEP_REQ);
	out[0] = (uint8_t)req->op;
	if (!is_prefix_op(req->op))
		return;
	out[1] = req->cidr.family == AF_INET ? 4 : 6;
	out[2] = req->cidr.plen;
	memcpy(out + 4, req->cidr.addr, req->cidr.family == AF_INET ? 4 : 16);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

bool wire_privsep_req_get(struct wire_privsep_req *req, const uint8_t *in, size_t len)
{
	if (len != WIRE_PRIVSEP_REQ || in[3] != 0)
		return false;
	memset(req, 0, sizeof(*req));
	if (in[0] == WIRE_PRIVSEP_CONFIG) {
		if (!all_zero(in + 1, WIRE_PRIVSEP_REQ - 1))
			return false;
		req->op = WIRE_PRIVSEP_CONFIG;
		return true;
	}
	if (!is_prefix_op(in[0]))
		return false;
	if (in[1] == 4) {
		if (in[2] > 32 || !all_zero(in + 8, 12))
			return false;
		req->cidr.family = AF_INET;
		memcpy(req->cidr.addr, in + 4, 4);
	} else if (in[1] == 6) {
		if (in[2] > 128)
			return false;
		req->cidr.family = AF_INET6;
		memcpy(req->cidr.addr, in + 4, 16);
	} else {
		return false;
	}
	req->op = (enum wire_privsep_op)in[0];
	req->cidr.plen = in[2];
	return true;
}

size_t wire_privsep_reply_put(uint8_t out[WIRE_PRIVSEP_REPLY], bool ok, const char *text)
{
	size_t n = text != NULL ? strnlen(text, WIRE_PRIVSEP_TEXT) : 0;

	out[0] = ok ? 0 : 1;
	if (n > 0)
		memcpy(out + 1, text, n);
	return 1 + n;
}

bool wire_privsep_reply_get(bool *ok, char text[WIRE_PRIVSEP_TEXT + 1], const uint8_t *in,
                            size_t len)
{
	if (len < 1 || len > WIRE_PRIVSEP_REPLY || in[0] > 1)
		return false;
	*ok = in[0] == 0;
	memcpy(text, in + 1, len - 1);
	text[len - 1] = '\0';
	/* Text for a log line: nothing that would break one. */
	for (size_t i = 0; i + 1 < len; i++)
		if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] == 0x7f)
			text[i] = '?';
	return true;
}
