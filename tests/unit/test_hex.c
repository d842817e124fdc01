/* Unit tests for util/hex: encoding, strict decoding, and failure behaviour. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "util/hex.h"

static void test_encode(void **state)
{
	const uint8_t in[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
	char out[2 * sizeof(in) + 1];

	(void)state;
	yip_hex_encode(out, in, sizeof(in));
	assert_string_equal(out, "00017f80abcdefff");
}

static void test_encode_empty(void **state)
{
	char out[1] = {'x'};

	(void)state;
	yip_hex_encode(out, NULL, 0);
	assert_int_equal(out[0], '\0');
}

static void test_decode_both_cases(void **state)
{
	const uint8_t want[] = {0xde, 0xad, 0xbe, 0xef, 0x09, 0xaf};
	uint8_t out[sizeof(want)];

	(void)state;
	assert_int_equal(yip_hex_decode(out, sizeof(out), "deadbeef09af"), 0);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(yip_hex_decode(out, sizeof(out), "DEADBEEF09AF"), 0);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(yip_hex_decode(out, sizeof(out), "DeAdBeEf09aF"), 0);
	assert_memory_equal(out, want, sizeof(want));
}

static void test_round_trip_all_bytes(void **state)
{
	uint8_t in[256], out[256];
	char text[2 * sizeof(in) + 1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;
	yip_hex_encode(text, in, sizeof(in));
	assert_int_equal(yip_hex_decode(out, sizeof(out), text), 0);
	assert_memory_equal(in, out, sizeof(in));
}

static void test_decode_rejects(void **state)
{
	static const char *const bad[] = {
	    "",         /* too short */
	    "0011",     /* too short */
	    "00112233", /* too long */
	    "0011223",  /* odd length */
	    "00112g",   /* not hex */
	    "0011 2",   /* space */
	    "001122\n", /* too long with newline */
	    "-01122",   /* sign */
	    "0x1122",   /* prefix */
	    "00112:",   /* ':' is just after '9' */
	    "00112@",   /* '@' is just before 'A' */
	    "00112`",   /* '`' is just before 'a' */
	    "00112G",   /* just after 'F' */
	    "\xff\xff\xff\xff\xff\xff",
	};
	uint8_t out[3];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(out, 0xaa, sizeof(out));
		assert_int_equal(yip_hex_decode(out, sizeof(out), bad[i]), -1);
		/* The contract: out is zeroed on failure. */
		assert_int_equal(out[0] | out[1] | out[2], 0);
	}
}

static void test_every_character(void **state)
{
	char text[3] = "00";
	uint8_t out;
	int c;

	(void)state;
	for (c = 1; c < 256; c++) {
		int want_ok =
		    (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');

		text[1] = (char)c;
		assert_int_equal(yip_hex_decode(&out, 1, text), want_ok ? 0 : -1);
		text[0] = (char)c;
		text[1] = '0';
		assert_int_equal(yip_hex_decode(&out, 1, text), want_ok ? 0 : -1);
		text[0] = '0';
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_encode),
	    cmocka_unit_test(test_encode_empty),
	    cmocka_unit_test(test_decode_both_cases),
	    cmocka_unit_test(test_round_trip_all_bytes),
	    cmocka_unit_test(test_decode_rejects),
	    cmocka_unit_test(test_every_character),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
