/*
 * The metrics endpoint's HTTP/1.1 server (docs/operations.md, "Metrics"),
 * shared by yipd's loop and yip-rendezvous's: GET (or HEAD) /metrics is
 * answered with 200 and the text a callback builds, anything else with
 * 404, 405 or 400, always with Connection: close. Driven by the event
 * loop's fd registry (src/poll) and never blocking it: the listening
 * socket and the clients sit in an epoll set of the server's own, which is
 * one fd in the registry; at most YIP_HTTPD_CLIENTS clients at once (more
 * are closed at once), a request head of at most YIP_HTTPD_MAX_REQUEST
 * bytes arriving within YIP_CTL_REQUEST_MS and the answer read within
 * YIP_CTL_REPLY_MS, so a hostile client can hold neither the loop nor
 * more than its share of memory. The request is read by the engine's
 * wire_http_metrics_code (src/wire/http.h).
 */
#ifndef YIP_CTL_HTTPD_H
#define YIP_CTL_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"

#define YIP_HTTPD_CLIENTS      8
#define YIP_HTTPD_MAX_REQUEST  4096
#define YIP_HTTPD_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Builds the body of a 200 (heap, the server frees it); NULL: out of memory (503). */
typedef char *(*yip_httpd_body_fn)(void *ctx, size_t *len);

struct yip_poll;

struct yip_httpd_conn {
	int fd; /* -1: a free slot */
	uint64_t deadline;
	bool writing;
	size_t req_len;
	uint8_t req[YIP_HTTPD_MAX_REQUEST];
	char *out; /* the answer: heap, or a static one (out_static) */
	bool out_static;
	size_t out_len, out_off;
};

struct yip_httpd {
	int fd;   /* listening, -1 = none */
	int epfd; /* the server's own epoll set, -1 = none */
	struct yip_poll *poll;
	yip_httpd_body_fn body;
	void *ctx;
	char addr[YIP_ADDRSTRLEN];
	struct yip_httpd_conn c[YIP_HTTPD_CLIENTS];
	uint64_t served, refused, timed_out;
};

/* Listens on TCP address a. 0, or -1 with a message in err (h is then closed). */
int yip_httpd_open(struct yip_httpd *h, const union yip_sockaddr *a, char *err, size_t errlen);

/* Watches the server on p; requests for /metrics are answered with body(ctx). 0, or -1 with errno.
 */
int yip_httpd_watch(struct yip_httpd *h, struct yip_poll *p, yip_httpd_body_fn body, void *ctx);

/* Drops clients whose deadline has passed; returns the earliest deadline still pending, or 0. */
uint64_t yip_httpd_expire(struct yip_httpd *h, uint64_t now);

/* Closes everything. Safe to repeat, and on a server never opened (fd -1 after yip_httpd_init). */
void yip_httpd_close(struct yip_httpd *h);
void yip_httpd_init(struct yip_httpd *h);

#endif
