/*
 * An HTTP/1.x request head (see http.h). Lines are found with memchr and
 * every comparison is bounded by the line's length.
 */
#include "wire/http.h"

#include <string.h>
#include <strings.h>

/* A token of the request line: printable, no spaces. */
static bool token_ok(const uint8_t *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return false;
	return true;
}

/* Capital letters, '_' and '-', as nginx takes a method; up to a space or len. */
static size_t method_len(const uint8_t *p, size_t len, bool *ok)
{
	size_t i;

	*ok = true;
	for (i = 0; i < len && p[i] != ' '; i++)
		if (!((p[i] >= 'A' && p[i] <= 'Z') || p[i] == '_' || p[i] == '-'))
			*ok = false;
	return i;
}

/* The value of the first header line of h (len bytes) named name (ASCII
 * case ignored), without the spaces, tabs and CR around it; false if none. */
static bool header_find(const uint8_t *h, size_t len, const char *name, const uint8_t **v,
                        size_t *vlen)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i < len;) {
		const uint8_t *line = h + i, *eol = memchr(line, '\n', len - i);
		size_t ll = eol != NULL ? (size_t)(eol - line) : len - i, a = nlen + 1, b = ll;

		if (ll > nlen && strncasecmp((const char *)line, name, nlen) == 0 &&
		    line[nlen] == ':') {
			while (a < b && (line[a] == ' ' || line[a] == '\t'))
				a++;
			while (b > a &&
			       (line[b - 1] == ' ' || line[b - 1] == '\t' || line[b - 1] == '\r'))
				b--;
			*v = line + a;
			*vlen = b - a;
			return true;
		}
		i += ll + 1;
	}
	return false;
}

/* Does header name's value contain word (ASCII case ignored)? */
static bool header_has(const uint8_t *h, size_t len, const char *name, const char *word)
{
	const uint8_t *v;
	size_t vlen, wlen = strlen(word);

	if (!header_find(h, len, name, &v, &vlen))
		return false;
	for (size_t k = 0; k + wlen <= vlen; k++)
		if (strncasecmp((const char *)v + k, word, wlen) == 0)
			return true;
	return false;
}

/* The end of the head: just past its empty line, or 0. */
static size_t head_end(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != '\n')
			continue;
		if (i + 1 < len && p[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

enum wire_http_verdict wire_http_request(const uint8_t *p, size_t len, struct wire_http_req *r)
{
	const uint8_t *eol = memchr(p, '\n', len), *sp1, *sp2, *v;
	size_t ll, mlen, tlen, head, vlen;
	bool v11, method_ok;

	/* A bad method is answered at once, as nginx does, before the line is whole. */
	method_len(p, eol != NULL ? (size_t)(eol - p) : len, &method_ok);
	if (!method_ok)
		return WIRE_HTTP_BAD;
	if (eol == NULL)
		return len >= WIRE_HTTP_HEAD_MAX ? WIRE_HTTP_BAD : WIRE_HTTP_MORE;
	ll = (size_t)(eol - p);
	if (ll > 0 && p[ll - 1] == '\r')
		ll--;
	sp1 = memchr(p, ' ', ll);
	if (sp1 == NULL)
		return WIRE_HTTP_BAD;
	mlen = (size_t)(sp1 - p);
	sp2 = memchr(sp1 + 1, ' ', ll - mlen - 1);
	if (sp2 == NULL)
		return WIRE_HTTP_BAD;
	tlen = (size_t)(sp2 - sp1 - 1);
	if (mlen == 0 || !token_ok(sp1 + 1, tlen) || ll - mlen - tlen - 2 != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		return WIRE_HTTP_BAD;
	head = head_end(p, len < WIRE_HTTP_HEAD_MAX ? len : WIRE_HTTP_HEAD_MAX);
	if (head == 0)
		return len >= WIRE_HTTP_HEAD_MAX ? WIRE_HTTP_BAD : WIRE_HTTP_MORE;
	v11 = memcmp(sp2 + 1, "HTTP/1.1", 8) == 0;
	r->head_len = head;
	r->method = mlen == 3 && memcmp(p, "GET", 3) == 0    ? WIRE_HTTP_GET
	            : mlen == 4 && memcmp(p, "HEAD", 4) == 0 ? WIRE_HTTP_HEAD
	                                                     : WIRE_HTTP_OTHER;
	r->page =
	    (tlen == 1 && sp1[1] == '/') || (tlen == 11 && memcmp(sp1 + 1, "/index.html", 11) == 0);
	r->keep = v11 ? !header_has(p, head, "connection", "close")
	              : header_has(p, head, "connection", "keep-alive");
	if (header_find(p, head, "transfer-encoding", &v, &vlen) ||
	    (header_find(p, head, "content-length", &v, &vlen) && !(vlen == 1 && v[0] == '0')))
		r->keep = false;
	return WIRE_HTTP_OK;
}
