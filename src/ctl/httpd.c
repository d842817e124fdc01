/*
 * The metrics endpoint's HTTP/1.1 server (see httpd.h). Every socket is
 * non-blocking; each wakeup does a bounded amount of work: at most
 * ACCEPT_BURST accepts, one read and one send per client with events.
 */
#include "ctl/httpd.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "poll/poll.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/http.h"

#define ACCEPT_BURST 16
#define LISTEN_TAG   YIP_HTTPD_CLIENTS /* the listener's tag in the server's epoll set */

#define HDR_CLOSE "Connection: close\r\nContent-Length: 0\r\n\r\n"
static const char r400[] = "HTTP/1.1 400 Bad Request\r\n" HDR_CLOSE;
static const char r404[] = "HTTP/1.1 404 Not Found\r\n" HDR_CLOSE;
static const char r405[] = "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n" HDR_CLOSE;
static const char r503[] = "HTTP/1.1 503 Service Unavailable\r\n" HDR_CLOSE;
static const char r408[] = "HTTP/1.1 408 Request Timeout\r\n" HDR_CLOSE;

void yip_httpd_init(struct yip_httpd *h)
{
	memset(h, 0, sizeof(*h));
	h->fd = h->epfd = -1;
	for (int i = 0; i < YIP_HTTPD_CLIENTS; i++)
		h->c[i].fd = -1;
}

/* Reads (and discards) what the client may still have queued, then closes:
 * closing a TCP socket with unread data resets the connection, and the
 * client could lose the end of the answer. */
static void close_conn(int fd)
{
	char junk[512];

	for (int i = 0; i < 4 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

static void drop(struct yip_httpd *h, struct yip_httpd_conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close_conn(c->fd);
	if (!c->out_static)
		free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->out_static = false;
	c->out_len = c->out_off = c->req_len = 0;
	c->writing = false;
	c->deadline = 0;
}

int yip_httpd_open(struct yip_httpd *h, const union yip_sockaddr *a, char *err, size_t errlen)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = LISTEN_TAG};
	int one = 1;

	yip_httpd_init(h);
	yip_sockaddr_format(a, h->addr, sizeof(h->addr));
	h->fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->fd < 0) {
		snprintf(err, errlen, "metrics: socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->sa.sa_family == AF_INET6)
		setsockopt(h->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(h->fd, &a->sa, yip_sockaddr_len(a)) != 0) {
		snprintf(err, errlen, "metrics: cannot listen on %s: %s", h->addr, strerror(errno));
		yip_httpd_close(h);
		return -1;
	}
	if (listen(h->fd, 16) != 0 || (h->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->fd, &ev) != 0) {
		snprintf(err, errlen, "metrics: %s: %s", h->addr, strerror(errno));
		yip_httpd_close(h);
		return -1;
	}
	return 0;
}

static void on_accept(struct yip_httpd *h, uint64_t now)
{
	for (int n = 0; n < ACCEPT_BURST; n++) {
		int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), i;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_debug("metrics: accept: %s", strerror(errno));
			return;
		}
		for (i = 0; i < YIP_HTTPD_CLIENTS && h->c[i].fd >= 0; i++)
			;
		if (i == YIP_HTTPD_CLIENTS) {
			close(fd); /* full: the client may try again */
			h->refused++;
			continue;
		}
		ev.data.u32 = (uint32_t)i;
		if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			h->refused++;
			continue;
		}
		h->c[i].fd = fd;
		h->c[i].req_len = 0;
		h->c[i].writing = false;
		h->c[i].deadline = now + YIP_CTL_REQUEST_MS * YIP_NS_PER_MS;
	}
}

/* Sends what the socket takes; drops the client when done or on error. */
static void write_answer(struct yip_httpd *h, struct yip_httpd_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				drop(h, c);
			return; /* EPOLLOUT brings us back */
		}
		c->out_off += (size_t)n;
	}
	h->served++;
	drop(h, c);
}

static void answer_static(struct yip_httpd_conn *c, const char *s, size_t len)
{
	c->out = (char *)s;
	c->out_static = true;
	c->out_len = len;
}

/* The answer to a request read as code. */
static void answer(struct yip_httpd *h, struct yip_httpd_conn *c, int code, bool head_only)
{
	char hdr[256];
	size_t blen = 0;
	char *body = NULL, *out;
	int n;

	if (code == 404)
		answer_static(c, r404, sizeof(r404) - 1);
	else if (code == 405)
		answer_static(c, r405, sizeof(r405) - 1);
	else if (code != 200)
		answer_static(c, r400, sizeof(r400) - 1);
	if (code != 200)
		return;
	body = h->body(h->ctx, &blen);
	n = snprintf(hdr, sizeof(hdr),
	             "HTTP/1.1 200 OK\r\nContent-Type: " YIP_HTTPD_CONTENT_TYPE
	             "\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
	             blen);
	out = body != NULL ? malloc((size_t)n + (head_only ? 0 : blen)) : NULL;
	if (out == NULL) {
		free(body);
		answer_static(c, r503, sizeof(r503) - 1);
		return;
	}
	memcpy(out, hdr, (size_t)n);
	if (!head_only)
		memcpy(out + n, body, blen);
	free(body);
	c->out = out;
	c->out_static = false;
	c->out_len = (size_t)n + (head_only ? 0 : blen);
}

static void on_conn(struct yip_httpd *h, struct yip_httpd_conn *c, uint64_t now)
{
	struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = (uint32_t)(c - h->c)};
	bool head_only;
	ssize_t n;
	int code;

	if (c->writing) {
		write_answer(h, c);
		return;
	}
	n = recv(c->fd, c->req + c->req_len, sizeof(c->req) - c->req_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		drop(h, c); /* gone before the request was whole: nothing to answer */
		return;
	}
	c->req_len += (size_t)n;
	code = wire_http_metrics_code(c->req, c->req_len, sizeof(c->req), &head_only);
	if (code == 0)
		return;
	answer(h, c, code, head_only);
	c->out_off = 0;
	c->writing = true;
	c->deadline = now + YIP_CTL_REPLY_MS * YIP_NS_PER_MS;
	if (epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
		drop(h, c);
		return;
	}
	write_answer(h, c);
}

/* The server's epoll set has events: handles a bounded batch of them. */
static void on_events(void *ctx, uint32_t events)
{
	struct yip_httpd *h = ctx;
	struct epoll_event evs[YIP_HTTPD_CLIENTS + 1];
	uint64_t now = yip_now_mono();
	int n = epoll_wait(h->epfd, evs, YIP_HTTPD_CLIENTS + 1, 0);

	(void)events;
	for (int i = 0; i < n; i++) {
		uint32_t t = evs[i].data.u32;

		if (t == LISTEN_TAG)
			on_accept(h, now);
		else if (t < YIP_HTTPD_CLIENTS && h->c[t].fd >= 0)
			on_conn(h, &h->c[t], now);
	}
}

int yip_httpd_watch(struct yip_httpd *h, struct yip_poll *p, yip_httpd_body_fn body, void *ctx)
{
	h->body = body;
	h->ctx = ctx;
	if (yip_poll_add(p, h->epfd, EPOLLIN, on_events, h) != 0)
		return -1;
	h->poll = p;
	return 0;
}

uint64_t yip_httpd_expire(struct yip_httpd *h, uint64_t now)
{
	uint64_t next = 0;

	for (int i = 0; i < YIP_HTTPD_CLIENTS; i++) {
		struct yip_httpd_conn *c = &h->c[i];

		if (c->fd < 0)
			continue;
		if (now >= c->deadline) {
			if (!c->writing) {
				ssize_t n = send(c->fd, r408, sizeof(r408) - 1,
				                 MSG_DONTWAIT | MSG_NOSIGNAL);

				(void)n;
			}
			h->timed_out++;
			drop(h, c);
			continue;
		}
		if (next == 0 || c->deadline < next)
			next = c->deadline;
	}
	return next;
}

void yip_httpd_close(struct yip_httpd *h)
{
	if (h->epfd >= 0)
		for (int i = 0; i < YIP_HTTPD_CLIENTS; i++)
			drop(h, &h->c[i]);
	if (h->poll != NULL && h->epfd >= 0)
		yip_poll_del(h->poll, h->epfd);
	if (h->epfd >= 0)
		close(h->epfd);
	if (h->fd >= 0)
		close(h->fd);
	yip_httpd_init(h);
}
