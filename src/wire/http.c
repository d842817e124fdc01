/*
 * An HTTP/1.x request head (see http.h). Lines are found with memchr and
 * every comparison is bounded by the line's length.
 */
#include "wire/http.h"

#include <stdio.h>
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
	r->page = wire_http_site_page(sp1 + 1, tlen);
	r->target_off = (size_t)(sp1 + 1 - p);
	r->target_len = tlen;
	r->keep = v11 ? !header_has(p, head, "connection", "close")
	              : header_has(p, head, "connection", "keep-alive");
	if (header_find(p, head, "transfer-encoding", &v, &vlen) ||
	    (header_find(p, head, "content-length", &v, &vlen) && !(vlen == 1 && v[0] == '0')))
		r->keep = false;
	return WIRE_HTTP_OK;
}

/* ---- the metrics endpoint ---------------------------------------------------------- */

int wire_http_metrics_code(const uint8_t *p, size_t len, size_t max, bool *head_only)
{
	static const char path[] = "/metrics";
	const size_t plen = sizeof(path) - 1;
	struct wire_http_req r;
	enum wire_http_verdict v;
	const uint8_t *t;

	*head_only = false;
	if (max > WIRE_HTTP_HEAD_MAX)
		max = WIRE_HTTP_HEAD_MAX;
	v = wire_http_request(p, len < max ? len : max, &r);
	if (v == WIRE_HTTP_MORE)
		return len >= max ? 400 : 0;
	if (v == WIRE_HTTP_BAD)
		return 400;
	if (r.method == WIRE_HTTP_OTHER)
		return 405;
	t = p + r.target_off;
	if (r.target_len < plen || memcmp(t, path, plen) != 0 ||
	    (r.target_len > plen && t[plen] != '?'))
		return 404;
	*head_only = r.method == WIRE_HTTP_HEAD;
	return 200;
}

/* ---- the built-in site -------------------------------------------------------------- */

static const char site_page[] = "<!DOCTYPE html>\n"
                                "<html lang=\"en\">\n"
                                "<head><meta charset=\"utf-8\"><title>Home</title></head>\n"
                                "<body>\n"
                                "<h1>Home</h1>\n"
                                "<p>Nothing to see here yet.</p>\n"
                                "</body>\n"
                                "</html>\n";

static const char site_404[] = "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
                               "<center><h1>404 Not Found</h1></center>\r\n"
                               "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
static const char site_400[] = "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n"
                               "<center><h1>400 Bad Request</h1></center>\r\n"
                               "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
static const char site_405[] = "<html>\r\n<head><title>405 Not Allowed</title></head>\r\n<body>\r\n"
                               "<center><h1>405 Not Allowed</h1></center>\r\n"
                               "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

bool wire_http_site_page(const uint8_t *t, size_t len)
{
	return (len == 1 && t[0] == '/') || (len == 11 && memcmp(t, "/index.html", 11) == 0);
}

int wire_http_site_code(enum wire_http_method m, bool page)
{
	return m == WIRE_HTTP_OTHER ? 405 : page ? 200 : 404;
}

const char *wire_http_site_body(int code, size_t *len)
{
	const char *b = code == 200   ? site_page
	                : code == 404 ? site_404
	                : code == 405 ? site_405
	                              : site_400;
	*len = strlen(b);
	return b;
}

const char *wire_http_site_reason(int code)
{
	return code == 200   ? "OK"
	       : code == 404 ? "Not Found"
	       : code == 405 ? "Not Allowed"
	                     : "Bad Request";
}

void wire_http_date(char out[WIRE_HTTP_DATE_LEN + 1], uint64_t t)
{
	static const char *const wday[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
	static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	uint64_t days = t / 86400, secs = t % 86400;
	/* Days to a civil date (the proleptic Gregorian calendar, era by era). */
	uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	uint64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	uint64_t y = yoe + era * 400 + (m <= 2);

	snprintf(out, WIRE_HTTP_DATE_LEN + 1, "%s, %02u %s %04u %02u:%02u:%02u GMT", wday[days % 7],
	         (unsigned)d, mon[m - 1], (unsigned)(y % 10000), (unsigned)(secs / 3600),
	         (unsigned)(secs / 60 % 60), (unsigned)(secs % 60));
}
