/* Unit tests for util/log: the line shapes (text, journald, JSON), JSON
 * escaping, JOURNAL_STREAM matching, level names, and the rate limiter. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

#define WALL 1796688000123456789ULL /* 2026-12-08T00:00:00.123Z */
#define S    1000000000ULL

static void reset(void)
{
	yip_log_set_format(YIP_LOG_TEXT);
	yip_log_set_journal(false);
	yip_log_set_level(YIP_LOG_INFO);
	yip_log_limit_reset();
}

static void test_text(void **state)
{
	char line[256];
	size_t n;

	(void)state;
	reset();
	n = yip_log_line(line, sizeof(line), YIP_LOG_WARN, WALL, "hello");
	assert_string_equal(line, "2026-12-08T00:00:00.123Z warn  hello\n");
	assert_int_equal(n, strlen(line));
}

static void test_journal(void **state)
{
	static const char *const want[] = {"<3>e\n", "<4>e\n", "<6>e\n", "<7>e\n"};
	char line[64];

	(void)state;
	reset();
	yip_log_set_journal(true);
	for (int l = YIP_LOG_ERROR; l <= YIP_LOG_DEBUG; l++) {
		yip_log_line(line, sizeof(line), (enum yip_log_level)l, WALL, "e");
		assert_string_equal(line, want[l]);
	}
	yip_log_set_format(YIP_LOG_JSON);
	yip_log_line(line, sizeof(line), YIP_LOG_INFO, WALL, "x");
	assert_string_equal(line, "<6>{\"level\":\"info\",\"msg\":\"x\"}\n");
	reset();
}

static void test_json(void **state)
{
	char line[256];

	(void)state;
	reset();
	yip_log_set_format(YIP_LOG_JSON);
	yip_log_line(line, sizeof(line), YIP_LOG_DEBUG, WALL, "a \"b\" \\c");
	assert_string_equal(line, "{\"ts\":\"2026-12-08T00:00:00.123Z\",\"level\":\"debug\","
	                          "\"msg\":\"a \\\"b\\\" \\\\c\"}\n");
	reset();
}

static void test_json_escape(void **state)
{
	char out[128];

	(void)state;
	yip_log_json_escape(out, sizeof(out), "tab\there\nnl\x01\x1f\x7f");
	assert_string_equal(out, "tab\\there\\nnl\\u0001\\u001f\\u007f");
	/* valid UTF-8 passes, bytes that are not UTF-8 become U+FFFD */
	yip_log_json_escape(out, sizeof(out), "caf\xc3\xa9 \xe2\x82\xac");
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac");
	yip_log_json_escape(out, sizeof(out),
	                    "a\xff"
	                    "b\xc3"
	                    "c\xc0\xaf"
	                    "d\xed\xa0\x80");
	assert_string_equal(out, "a\\ufffdb\\ufffdc\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffd");
	/* cut at a whole escape, always terminated */
	yip_log_json_escape(out, 9, "ab\"\"\"\"");
	assert_string_equal(out, "ab\\\"\\\"\\\"");
	yip_log_json_escape(out, 8, "ab\x01");
	assert_string_equal(out, "ab");
}

static void test_json_long_line(void **state)
{
	char msg[YIP_LOG_MSG_MAX], line[80];
	size_t n;

	(void)state;
	reset();
	memset(msg, '"', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	yip_log_set_format(YIP_LOG_JSON);
	n = yip_log_line(line, sizeof(line), YIP_LOG_INFO, WALL, msg);
	assert_true(n < sizeof(line));
	assert_int_equal(line[n - 1], '\n');
	assert_non_null(strstr(line, "\"}\n"));
	reset();
}

static void test_journal_stream(void **state)
{
	(void)state;
	assert_true(yip_log_journal_stream("8:12345", 8, 12345));
	assert_false(yip_log_journal_stream("8:12346", 8, 12345));
	assert_false(yip_log_journal_stream("9:12345", 8, 12345));
	assert_false(yip_log_journal_stream(NULL, 8, 12345));
	assert_false(yip_log_journal_stream("", 0, 0));
	assert_false(yip_log_journal_stream("8", 8, 0));
	assert_false(yip_log_journal_stream("8:", 8, 0));
	assert_false(yip_log_journal_stream(":1", 0, 1));
	assert_false(yip_log_journal_stream("8:1x", 8, 1));
	assert_false(yip_log_journal_stream("-8:1", 8, 1));
	assert_false(yip_log_journal_stream("99999999999999999999:1", 0, 1));
}

static void test_levels(void **state)
{
	enum yip_log_level l;
	enum yip_log_format f;

	(void)state;
	assert_int_equal(yip_log_level_parse("debug", &l), 0);
	assert_int_equal(l, YIP_LOG_DEBUG);
	assert_int_equal(yip_log_level_parse("warning", &l), 0);
	assert_int_equal(l, YIP_LOG_WARN);
	assert_int_equal(yip_log_level_parse("error", &l), 0);
	assert_int_equal(l, YIP_LOG_ERROR);
	assert_int_equal(yip_log_level_parse("Info", &l), -1);
	assert_int_equal(yip_log_level_parse("", &l), -1);
	assert_int_equal(yip_log_level_parse(NULL, &l), -1);
	assert_string_equal(yip_log_level_name(YIP_LOG_WARN), "warn");
	assert_int_equal(yip_log_format_parse("json", &f), 0);
	assert_int_equal(f, YIP_LOG_JSON);
	assert_int_equal(yip_log_format_parse("xml", &f), -1);
}

/* stderr into a temporary file while fn runs; returns what was written (free it). */
static char *capture(void (*fn)(void))
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	char *buf;
	long len;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	len = ftell(tmp);
	buf = calloc(1, (size_t)len + 1);
	rewind(tmp);
	assert_int_equal(fread(buf, 1, (size_t)len, tmp), (size_t)len);
	fclose(tmp);
	return buf;
}

static size_t lines_with(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
		n++;
	return n;
}

static struct yip_log_site site_a = {"src/x/a.c", 10}, site_b = {"src/x/b.c", 20};

static void burst(void)
{
	/* 50 events of one (site, key) in 1 s: 10 lines, the rest counted */
	for (int i = 0; i < 50; i++)
		yip_log_limited(&site_a, 7, 100 * S + (uint64_t)i * S / 50, YIP_LOG_WARN, "ev %d",
		                i);
	/* another key of the same site, and another site: their own budgets */
	for (int i = 0; i < 12; i++) {
		yip_log_limited(&site_a, 8, 101 * S, YIP_LOG_WARN, "other key %d", i);
		yip_log_limited(&site_b, 0, 101 * S, YIP_LOG_WARN, "site b %d", i);
	}
	/* below the level: not written, not counted */
	yip_log_limited(&site_a, 9, 101 * S, YIP_LOG_DEBUG, "debug");
	yip_log_tick(105 * S); /* windows not over yet: nothing */
	yip_log_tick(111 * S); /* over: the suppressed lines */
	/* a new window after the tick */
	yip_log_limited(&site_a, 7, 112 * S, YIP_LOG_WARN, "again");
}

static void test_limiter(void **state)
{
	char *out;

	(void)state;
	reset();
	out = capture(burst);
	assert_int_equal(lines_with(out, " ev "), 10);
	assert_int_equal(lines_with(out, "other key"), 10);
	assert_int_equal(lines_with(out, "site b"), 10);
	assert_int_equal(lines_with(out, "debug"), 0);
	assert_int_equal(lines_with(out, "suppressed 40 similar messages (x/a.c:10)"), 1);
	assert_int_equal(lines_with(out, "suppressed 2 similar messages (x/a.c:10)"), 1);
	assert_int_equal(lines_with(out, "suppressed 2 similar messages (x/b.c:20)"), 1);
	assert_int_equal(lines_with(out, "suppressed"), 3);
	assert_int_equal(lines_with(out, "again"), 1);
	/* the suppressed line comes after the events it counts */
	assert_true(strstr(out, "suppressed 40") > strstr(out, "ev 9"));
	free(out);
	reset();
}

static void window_rolls(void)
{
	/* no tick: the site's next event after its window ends reports it */
	for (int i = 0; i < 15; i++)
		yip_log_limited(&site_a, 1, 200 * S, YIP_LOG_INFO, "w1 %d", i);
	yip_log_limited(&site_a, 1, 211 * S, YIP_LOG_INFO, "w2");
}

static void test_limiter_window(void **state)
{
	char *out;

	(void)state;
	reset();
	out = capture(window_rolls);
	assert_int_equal(lines_with(out, "w1 "), 10);
	assert_int_equal(lines_with(out, "suppressed 5 similar"), 1);
	assert_int_equal(lines_with(out, "w2"), 1);
	assert_true(strstr(out, "suppressed 5") < strstr(out, "w2"));
	free(out);
	reset();
}

static void many_keys(void)
{
	/* far more (site, key) pairs than slots: the table stays bounded, each
	 * new pair still gets its first line */
	for (uint64_t k = 1; k <= 4 * YIP_LOG_SLOTS; k++)
		yip_log_limited(&site_b, k, 300 * S, YIP_LOG_INFO, "k%llu", (unsigned long long)k);
}

static void test_limiter_bounded(void **state)
{
	char *out;

	(void)state;
	reset();
	out = capture(many_keys);
	assert_int_equal(lines_with(out, " k"), 4 * YIP_LOG_SLOTS);
	assert_int_equal(lines_with(out, "suppressed"), 0);
	free(out);
	reset();
}

static void test_key(void **state)
{
	uint8_t a[32] = {1}, b[32] = {2}, zero[32] = {0};

	(void)state;
	assert_int_not_equal(yip_log_key(a, 32), yip_log_key(b, 32));
	assert_int_equal(yip_log_key(a, 32), yip_log_key(a, 32));
	assert_int_not_equal(yip_log_key(zero, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_journal),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_json_escape),
	    cmocka_unit_test(test_json_long_line),
	    cmocka_unit_test(test_journal_stream),
	    cmocka_unit_test(test_levels),
	    cmocka_unit_test(test_limiter),
	    cmocka_unit_test(test_limiter_window),
	    cmocka_unit_test(test_limiter_bounded),
	    cmocka_unit_test(test_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
