/*
 * The messages to yipd's privileged half (src/wire/privsep.c): requests
 * round-trip, and anything but an exact, well-formed request is refused;
 * replies carry their status and text, cleaned for a log line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <sys/socket.h>

#include "wire/privsep.h"

static void round_trip(void **state)
{
	struct wire_privsep_req r = {.op = WIRE_PRIVSEP_ROUTE_ADD,
	                             .cidr = {.family = AF_INET, .plen = 24, .addr = {10, 99, 1}}},
	                        got;
	uint8_t b[WIRE_PRIVSEP_REQ];

	(void)state;
	wire_privsep_req_put(b, &r);
	assert_true(wire_privsep_req_get(&got, b, sizeof(b)));
	assert_int_equal(got.op, WIRE_PRIVSEP_ROUTE_ADD);
	assert_int_equal(got.cidr.family, AF_INET);
	assert_int_equal(got.cidr.plen, 24);
	assert_memory_equal(got.cidr.addr, r.cidr.addr, 4);

	r = (struct wire_privsep_req){.op = WIRE_PRIVSEP_ADDR_DEL,
	                              .cidr = {.family = AF_INET6, .plen = 128, .addr = {0xfd, 1}}};
	wire_privsep_req_put(b, &r);
	assert_true(wire_privsep_req_get(&got, b, sizeof(b)));
	assert_int_equal(got.op, WIRE_PRIVSEP_ADDR_DEL);
	assert_int_equal(got.cidr.family, AF_INET6);
	assert_int_equal(got.cidr.plen, 128);

	r = (struct wire_privsep_req){.op = WIRE_PRIVSEP_CONFIG};
	wire_privsep_req_put(b, &r);
	assert_true(wire_privsep_req_get(&got, b, sizeof(b)));
	assert_int_equal(got.op, WIRE_PRIVSEP_CONFIG);
}

static void refused(void **state)
{
	struct wire_privsep_req r = {.op = WIRE_PRIVSEP_ROUTE_DEL,
	                             .cidr = {.family = AF_INET, .plen = 32, .addr = {1, 2, 3, 4}}},
	                        got;
	uint8_t b[WIRE_PRIVSEP_REQ + 1], c[WIRE_PRIVSEP_REQ];

	(void)state;
	wire_privsep_req_put(b, &r);
	assert_false(wire_privsep_req_get(&got, b, WIRE_PRIVSEP_REQ - 1)); /* short */
	b[WIRE_PRIVSEP_REQ] = 0;
	assert_false(wire_privsep_req_get(&got, b, WIRE_PRIVSEP_REQ + 1)); /* long */
	memcpy(c, b, sizeof(c));
	c[2] = 33; /* an IPv4 prefix of 33 bits */
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	memcpy(c, b, sizeof(c));
	c[12] = 1; /* IPv4 with bytes past its four */
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	memcpy(c, b, sizeof(c));
	c[3] = 1; /* reserved */
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	memcpy(c, b, sizeof(c));
	c[1] = 5; /* no such family */
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	memcpy(c, b, sizeof(c));
	c[0] = 0; /* no such op */
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	c[0] = 6;
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	memcpy(c, b, sizeof(c));
	c[1] = 6;
	c[2] = 129;
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
	memset(c, 0, sizeof(c));
	c[0] = WIRE_PRIVSEP_CONFIG;
	c[19] = 1; /* the file's request carries nothing */
	assert_false(wire_privsep_req_get(&got, c, sizeof(c)));
}

static void replies(void **state)
{
	uint8_t b[WIRE_PRIVSEP_REPLY];
	char text[WIRE_PRIVSEP_TEXT + 1], longer[400];
	bool ok = true;
	size_t n;

	(void)state;
	n = wire_privsep_reply_put(b, false, "cannot add route\n10.0.0.0/8");
	assert_true(wire_privsep_reply_get(&ok, text, b, n));
	assert_false(ok);
	assert_string_equal(text, "cannot add route?10.0.0.0/8");
	n = wire_privsep_reply_put(b, true, NULL);
	assert_int_equal(n, 1);
	assert_true(wire_privsep_reply_get(&ok, text, b, n));
	assert_true(ok);
	assert_string_equal(text, "");
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	n = wire_privsep_reply_put(b, false, longer);
	assert_int_equal(n, WIRE_PRIVSEP_REPLY);
	assert_true(wire_privsep_reply_get(&ok, text, b, n));
	assert_int_equal(strlen(text), WIRE_PRIVSEP_TEXT);
	assert_false(wire_privsep_reply_get(&ok, text, b, 0));
	b[0] = 2;
	assert_false(wire_privsep_reply_get(&ok, text, b, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),
	    cmocka_unit_test(refused),
	    cmocka_unit_test(replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
