/*
 * An HTTP/1.x request head (RFC 9112), as the TLS front's built-in site
 * reads it (docs/rendezvous.md, "The TLS front"): the request line
 * ("METHOD SP target SP HTTP/1.1" or HTTP/1.0, CRLF or LF) and the header
 * lines up to the empty one. Only what the site answers with is taken from
 * it: the method, whether the target is its page, whether the connection
 * stays open. Any bytes at all; a head longer than WIRE_HTTP_HEAD_MAX is
 * bad.
 */
#ifndef YIP_WIRE_HTTP_H
#define YIP_WIRE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_HTTP_HEAD_MAX 8192

enum wire_http_verdict {
	WIRE_HTTP_MORE, /* not whole yet, and nothing wrong so far */
	WIRE_HTTP_BAD,  /* answered with 400 and a close */
	WIRE_HTTP_OK,
};

enum wire_http_method { WIRE_HTTP_GET, WIRE_HTTP_HEAD, WIRE_HTTP_OTHER };

struct wire_http_req {
	size_t head_len; /* the request line and headers, the empty line included */
	enum wire_http_method method;
	bool page; /* the target is "/" or "/index.html" */
	/* The connection stays open after the answer: HTTP/1.1 without
	 * "Connection: close", HTTP/1.0 with "Connection: keep-alive"; never
	 * with a body (Content-Length other than 0, Transfer-Encoding), which
	 * the site does not read. */
	bool keep;
	size_t target_off, target_len; /* the request target's place in the head */
};

/* The head at the start of p (len bytes); *r is set with WIRE_HTTP_OK. */
enum wire_http_verdict wire_http_request(const uint8_t *p, size_t len, struct wire_http_req *r);

/*
 * The built-in site, one for every front that serves it (the TLS front over
 * HTTP/1.1, the QUIC decoy over HTTP/3): an nginx-like server with one page.
 * A request target (t, len bytes) is its page if it is "/" or "/index.html";
 * a GET or HEAD of the page is 200, of anything else 404, any other method
 * 405; a request that cannot be read is 400.
 */
bool wire_http_site_page(const uint8_t *t, size_t len);
int wire_http_site_code(enum wire_http_method m, bool page);
/* The body of the answer with that status (the page, or nginx's error page)
 * and its length; the reason phrase. Both static. */
const char *wire_http_site_body(int code, size_t *len);
const char *wire_http_site_reason(int code);

/*
 * The metrics endpoint (docs/operations.md, "Metrics"): what it answers the
 * bytes read so far from a client (p, len bytes; any bytes at all), whose
 * head may be at most max bytes (at most WIRE_HTTP_HEAD_MAX). 0: not whole
 * yet; 200: GET or HEAD of /metrics (a query string allowed; *head_only set
 * for HEAD); 404: another target; 405: another method; 400: not a request,
 * or no head within max bytes.
 */
int wire_http_metrics_code(const uint8_t *p, size_t len, size_t max, bool *head_only);

/* An HTTP date (RFC 9110 IMF-fixdate) of Unix time t, in UTC. */
#define WIRE_HTTP_DATE_LEN 29
void wire_http_date(char out[WIRE_HTTP_DATE_LEN + 1], uint64_t t);

#endif
