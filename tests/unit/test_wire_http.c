/*
 * The built-in site's request reader (src/wire/http.c): whole heads and
 * what they say, heads still coming, and what is answered with 400.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "wire/http.h"

static enum wire_http_verdict req(const char *s, struct wire_http_req *r)
{
	memset(r, 0, sizeof(*r));
	return wire_http_request((const uint8_t *)s, strlen(s), r);
}

static void whole_heads(void **state)
{
	struct wire_http_req r;

	(void)state;
	assert_int_equal(req("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /x", &r), WIRE_HTTP_OK);
	assert_int_equal(r.head_len, strlen("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
	assert_int_equal(r.method, WIRE_HTTP_GET);
	assert_true(r.page && r.keep);
	assert_int_equal(req("HEAD /index.html HTTP/1.1\r\nConnection: Close\r\n\r\n", &r),
	                 WIRE_HTTP_OK);
	assert_int_equal(r.method, WIRE_HTTP_HEAD);
	assert_true(r.page && !r.keep);
	assert_int_equal(req("GET /wp-login.php HTTP/1.0\n\n", &r), WIRE_HTTP_OK);
	assert_true(!r.page && !r.keep);
	assert_int_equal(req("GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n", &r), WIRE_HTTP_OK);
	assert_true(r.keep);
	assert_int_equal(req("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", &r), WIRE_HTTP_OK);
	assert_true(r.method == WIRE_HTTP_OTHER && !r.keep);
	assert_int_equal(req("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &r), WIRE_HTTP_OK);
	assert_true(r.keep);
	assert_int_equal(req("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r),
	                 WIRE_HTTP_OK);
	assert_false(r.keep);
}

static void more_and_bad(void **state)
{
	static char big[WIRE_HTTP_HEAD_MAX + 64];
	struct wire_http_req r;

	(void)state;
	assert_int_equal(req("", &r), WIRE_HTTP_MORE);
	assert_int_equal(req("GE", &r), WIRE_HTTP_MORE);
	assert_int_equal(req("GET / HTTP/1.1\r\nHost: a\r\n", &r), WIRE_HTTP_MORE);
	assert_int_equal(req("get / HTTP/1.1\r\n\r\n", &r), WIRE_HTTP_BAD);
	assert_int_equal(req("\x16\x03\x01", &r), WIRE_HTTP_BAD); /* a ClientHello */
	assert_int_equal(req("GET /\r\n\r\n", &r), WIRE_HTTP_BAD);
	assert_int_equal(req("GET / HTTP/2.0\r\n\r\n", &r), WIRE_HTTP_BAD);
	assert_int_equal(req("GET / HTTP/1.1 x\r\n\r\n", &r), WIRE_HTTP_BAD);
	assert_int_equal(req("GET  HTTP/1.1\r\n\r\n", &r), WIRE_HTTP_BAD);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(big + 19, 'a', sizeof(big) - 20);
	assert_int_equal(req(big, &r), WIRE_HTTP_BAD);
}

static int mcode(const char *s, size_t max, bool *head_only)
{
	return wire_http_metrics_code((const uint8_t *)s, strlen(s), max, head_only);
}

/* The metrics endpoint's answers (wire_http_metrics_code). */
static void metrics_codes(void **state)
{
	char big[5000];
	bool h;

	(void)state;
	assert_int_equal(mcode("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 4096, &h), 200);
	assert_false(h);
	assert_int_equal(mcode("HEAD /metrics HTTP/1.0\n\n", 4096, &h), 200);
	assert_true(h);
	assert_int_equal(mcode("GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 4096, &h), 200);
	assert_int_equal(mcode("GET /metricsx HTTP/1.1\r\n\r\n", 4096, &h), 404);
	assert_int_equal(mcode("GET /metric HTTP/1.1\r\n\r\n", 4096, &h), 404);
	assert_int_equal(mcode("GET / HTTP/1.1\r\n\r\n", 4096, &h), 404);
	assert_int_equal(mcode("POST /metrics HTTP/1.1\r\n\r\n", 4096, &h), 405);
	assert_int_equal(mcode("DELETE /metrics HTTP/1.1\r\n\r\n", 4096, &h), 405);
	assert_int_equal(mcode("GET /metrics HTTP/2\r\n\r\n", 4096, &h), 400);
	assert_int_equal(mcode("get /metrics HTTP/1.1\r\n\r\n", 4096, &h), 400);
	assert_int_equal(mcode("\x16\x03\x01", 4096, &h), 400);
	/* Not whole yet, then too long. */
	assert_int_equal(mcode("GET /metrics HTTP/1.1\r\nHost: x\r\n", 4096, &h), 0);
	assert_int_equal(mcode("", 4096, &h), 0);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	assert_int_equal(mcode(big, 4096, &h), 400);
	big[100] = '\0';
	assert_int_equal(mcode(big, 4096, &h), 0);
	assert_int_equal(mcode(big, 100, &h), 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(whole_heads),
	    cmocka_unit_test(more_and_bad),
	    cmocka_unit_test(metrics_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
