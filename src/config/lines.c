#include "config/lines.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "util/hex.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

char *lines_trim(char *s)
{
	size_t len;

	while (is_space(*s))
		s++;
	len = strlen(s);
	while (len > 0 && is_space(s[len - 1]))
		s[--len] = '\0';
	return s;
}

/*
 * Cuts off a comment: '#' at the start of the line or after whitespace. A '#'
 * inside a value ("a#b") is kept, so that it is reported rather than ignored.
 */
static void strip_comment(char *s)
{
	for (size_t i = 0; s[i] != '\0'; i++)
		if (s[i] == '#' && (i == 0 || is_space(s[i - 1]))) {
			s[i] = '\0';
			return;
		}
}

int lines_each(const char *text, size_t len, int (*fn)(void *arg, unsigned line, char *s),
               void *arg, unsigned *at, char *reason, size_t rlen)
{
	char buf[LINES_MAX + 1];
	size_t pos = 0;
	int rc = 0;

	*at = 0;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3; /* some editors start UTF-8 files with a byte order mark */
	while (pos < len && rc == 0) {
		const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
		size_t n = nl != NULL ? (size_t)(nl - start) : len - pos;
		char *s;

		pos += n + (nl != NULL);
		(*at)++;
		if (n > LINES_MAX) {
			snprintf(reason, rlen, "line is longer than %d characters", LINES_MAX);
			rc = -1;
			break;
		}
		if (memchr(start, '\0', n) != NULL) {
			snprintf(reason, rlen, "line contains a NUL byte");
			rc = -1;
			break;
		}
		memcpy(buf, start, n);
		buf[n] = '\0';
		strip_comment(buf);
		s = lines_trim(buf);
		if (s[0] != '\0')
			rc = fn(arg, *at, s);
	}
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

bool lines_pair(char *s, char **key, char **value)
{
	char *eq = strchr(s, '=');

	if (eq == NULL)
		return false;
	*eq = '\0';
	*key = lines_trim(s);
	*value = lines_trim(eq + 1);
	return true;
}

int lines_hex_key(const char *what, const char *value, uint8_t key[YIP_KEY_LEN], char *reason,
                  size_t rlen)
{
	size_t len = strlen(value);

	if (len != 2 * YIP_KEY_LEN) {
		snprintf(reason, rlen, "%s: expected %d hex digits, got %zu", what, 2 * YIP_KEY_LEN,
		         len);
		return -1;
	}
	if (yip_hex_decode(key, YIP_KEY_LEN, value) != 0) {
		snprintf(reason, rlen, "%s: character %zu is not a hex digit", what,
		         strspn(value, "0123456789abcdefABCDEF") + 1);
		return -1;
	}
	if (sodium_is_zero(key, YIP_KEY_LEN)) {
		snprintf(reason, rlen, "%s is all zeros", what);
		return -1;
	}
	return 0;
}
