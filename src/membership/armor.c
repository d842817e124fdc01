#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/internal.h"

#define BEGIN  "-----BEGIN YIP "
#define END    "-----END YIP "
#define DASHES "-----"
#define CHUNK  (MEMBER_ARMOR_COLS / 4 * 3) /* bytes per line of base64 */

static const uint8_t kinds[] = {WIRE_OBJ_CERT, WIRE_OBJ_ROOTS, WIRE_OBJ_REVOCATIONS,
                                WIRE_OBJ_RECORD, WIRE_OBJ_REQUEST};

size_t member_armor_size(size_t len)
{
	size_t longest = strlen("CERTIFICATE REQUEST");
	size_t lines = (len + CHUNK - 1) / CHUNK;

	return strlen(BEGIN) + strlen(END) + 2 * (longest + strlen(DASHES) + 1) +
	       sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL) + lines;
}

size_t member_armor(char *out, size_t cap, const uint8_t *obj, size_t len)
{
	const char *label = len > 0 ? member_kind_label(obj[0]) : NULL;
	size_t n;
	int k;

	if (label == NULL || cap < member_armor_size(len))
		return 0;
	k = snprintf(out, cap, "%s%s%s\n", BEGIN, label, DASHES);
	n = (size_t)k;
	for (size_t i = 0; i < len; i += CHUNK) {
		size_t chunk = len - i < CHUNK ? len - i : CHUNK;

		sodium_bin2base64(out + n, cap - n, obj + i, chunk, sodium_base64_VARIANT_ORIGINAL);
		n += strlen(out + n);
		out[n++] = '\n';
	}
	k = snprintf(out + n, cap - n, "%s%s%s\n", END, label, DASHES);
	return n + (size_t)k;
}

static bool b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/' || c == '=';
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The kind whose label is s (len bytes), 0 if none. */
static uint8_t kind_of_label(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof(kinds); i++) {
		const char *l = member_kind_label(kinds[i]);

		if (strlen(l) == len && memcmp(l, s, len) == 0)
			return kinds[i];
	}
	return 0;
}

/* s (len bytes) is "<start><something>-----"; *mid and *mlen get the something. */
static bool framed(const char *s, size_t len, const char *start, const char **mid, size_t *mlen)
{
	size_t a = strlen(start), b = strlen(DASHES);

	if (len < a + b || memcmp(s, start, a) != 0 || memcmp(s + len - b, DASHES, b) != 0)
		return false;
	*mid = s + a;
	*mlen = len - a - b;
	return true;
}

/* A printable rendering of one byte for a message. */
static void show_char(char out[8], unsigned char c)
{
	if (c >= 0x21 && c <= 0x7e)
		snprintf(out, 8, "'%c'", c);
	else
		snprintf(out, 8, "0x%02x", c);
}

/* Checks the decoded object's header against the armor and what was wanted. */
static int check_header(const uint8_t *out, size_t len, uint8_t kind, char *err, size_t errlen)
{
	struct wire_obj_hdr h;
	const char *name = member_kind_name(kind), *inner;

	if (!wire_obj_hdr_get(&h, out, len)) {
		snprintf(err, errlen, "truncated: %zu bytes, too short for any %s", len, name);
		return -1;
	}
	if (h.kind != kind) {
		inner = member_kind_name(h.kind);
		if (inner == NULL)
			snprintf(err, errlen, "the text says %s, but its bytes are no yip object",
			         name);
		else
			snprintf(err, errlen, "the text says %s, but its bytes are a %s", name,
			         inner);
		return -1;
	}
	if (h.version != WIRE_OBJ_VERSION) {
		snprintf(err, errlen,
		         "format version %u of a %s is not supported (this yip reads version %u)",
		         h.version, name, WIRE_OBJ_VERSION);
		return -1;
	}
	if (h.length > len) {
		snprintf(err, errlen, "truncated: %zu of %u bytes", len, h.length);
		return -1;
	}
	if (h.length < len) {
		snprintf(err, errlen, "%zu bytes, but the %s's header says %u (trailing bytes)",
		         len, name, h.length);
		return -1;
	}
	return 0;
}

int member_unarmor(const char *text, size_t tlen, uint8_t want, uint8_t *out, size_t cap,
                   size_t *out_len, char *err, size_t errlen)
{
	enum { BEFORE, INSIDE, AFTER } state = BEFORE;
	const char *label = NULL;
	char *b64, ch[8];
	size_t pos = 0, blen = 0, binlen = 0;
	unsigned line = 0;
	uint8_t kind = 0;
	int rc = -1;

	*out_len = 0;
	if ((b64 = malloc(tlen + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (tlen >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	while (pos < tlen) {
		const char *start = text + pos, *s = start, *nl = memchr(s, '\n', tlen - pos), *mid;
		size_t len = nl ? (size_t)(nl - s) : tlen - pos, mlen;

		pos += len + 1;
		line++;
		if (memchr(s, '\0', len) != NULL) {
			snprintf(err, errlen, "line %u: a NUL byte (this is not a text file)",
			         line);
			goto out;
		}
		while (len > 0 && (blank(s[len - 1]) || s[len - 1] == '\r'))
			len--;
		while (len > 0 && blank(s[0])) {
			s++;
			len--;
		}
		if (len == 0 || (state != INSIDE && s[0] == '#'))
			continue;
		if (state == BEFORE) {
			if (!framed(s, len, BEGIN, &mid, &mlen)) {
				snprintf(err, errlen,
				         "line %u: expected a line like -----BEGIN YIP "
				         "CERTIFICATE-----, "
				         "found '%.*s'",
				         line, (int)(len < 40 ? len : 40), s);
				goto out;
			}
			if ((kind = kind_of_label(mid, mlen)) == 0) {
				snprintf(err, errlen, "line %u: unknown object 'YIP %.*s'", line,
				         (int)(mlen < 40 ? mlen : 40), mid);
				goto out;
			}
			label = member_kind_label(kind);
			state = INSIDE;
		} else if (state == INSIDE) {
			if (len >= 5 && memcmp(s, DASHES, 5) == 0) {
				if (!framed(s, len, END, &mid, &mlen) || mlen != strlen(label) ||
				    memcmp(mid, label, mlen) != 0) {
					snprintf(
					    err, errlen,
					    "line %u: '%.*s' does not close -----BEGIN YIP %s-----",
					    line, (int)(len < 60 ? len : 60), s, label);
					goto out;
				}
				state = AFTER;
				continue;
			}
			for (size_t i = 0; i < len; i++) {
				if (blank(s[i]))
					continue;
				if (!b64_char(s[i])) {
					show_char(ch, (unsigned char)s[i]);
					snprintf(err, errlen,
					         "line %u: not base64 (%s in column %zu)", line, ch,
					         (size_t)(s - start) + i + 1);
					goto out;
				}
				b64[blen++] = s[i];
			}
		} else {
			snprintf(
			    err, errlen,
			    "line %u: more text after -----END YIP %s----- (one object per file)",
			    line, label);
			goto out;
		}
	}
	if (state == BEFORE) {
		snprintf(err, errlen, "no -----BEGIN YIP ...----- line: not a yip object");
		goto out;
	}
	if (state == INSIDE) {
		snprintf(err, errlen, "no -----END YIP %s----- line: the text is cut short", label);
		goto out;
	}
	if (want != 0 && kind != want) {
		snprintf(err, errlen, "this is a %s, not a %s", member_kind_name(kind),
		         member_kind_name(want) ? member_kind_name(want) : "yip object");
		goto out;
	}
	if (blen / 4 * 3 > cap + 2) {
		snprintf(err, errlen, "too long: more than %zu bytes", cap);
		goto out;
	}
	if (sodium_base642bin(out, cap, b64, blen, NULL, &binlen, NULL,
	                      sodium_base64_VARIANT_ORIGINAL) != 0) {
		snprintf(err, errlen, "the base64 does not decode (a line lost or cut short?)");
		goto out;
	}
	if (check_header(out, binlen, kind, err, errlen) != 0)
		goto out;
	*out_len = binlen;
	rc = 0;
out:
	free(b64);
	return rc;
}
