/*
 * The HTTP/3 decoy (see h3.h). nghttp3 parses and frames; this file keeps
 * a fixed table of request streams, decides each answer from its :method
 * and :path as the request's header section ends, and hands nghttp3 the
 * site's static bodies. nghttp3's own memory comes from an allocator with
 * a budget (YIP_H3_MEM_MAX a connection), so a peer cannot make it grow
 * past that whatever it sends.
 */
#include "quic/h3.h"

#include <nghttp3/nghttp3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/http.h"

/* nghttp3's heap a connection: its streams, buffers and QPACK state. */
#define YIP_H3_MEM_MAX (512u * 1024u)

struct h3_stream {
	int64_t sid; /* -1: free */
	enum wire_http_method method;
	bool page;
	bool answered;
	const char *body;
	size_t body_len;
	uint64_t body_in; /* request body bytes read */
	size_t fields;    /* header section bytes so far */
};

struct yip_h3 {
	nghttp3_conn *conn;
	struct yip_h3_hooks hooks;
	struct yip_h3_stats *st;
	nghttp3_mem mem;
	size_t mem_used;
	uint64_t requests; /* streams taken, for YIP_H3_REQUESTS */
	uint64_t wall_s;   /* of the yip_h3_read under way */
	/* During one yip_h3_read: body bytes it consumed, and whether it refused its stream. */
	uint64_t data_in;
	bool refuse;
	uint64_t refuse_code;
	struct h3_stream streams[YIP_H3_STREAMS];
};

/* ---- memory with a budget ----------------------------------------------------------- */

/* Each block carries its size in front, kept at max_align_t's alignment. */
#define H3_HDR sizeof(max_align_t)

static void *h3_malloc(size_t size, void *user)
{
	struct yip_h3 *h = user;
	uint8_t *p;

	if (size > YIP_H3_MEM_MAX - h->mem_used)
		return NULL;
	p = malloc(H3_HDR + size);
	if (p == NULL)
		return NULL;
	memcpy(p, &size, sizeof(size));
	h->mem_used += size;
	return p + H3_HDR;
}

static void h3_free(void *ptr, void *user)
{
	struct yip_h3 *h = user;
	uint8_t *p;
	size_t size;

	if (ptr == NULL)
		return;
	p = (uint8_t *)ptr - H3_HDR;
	memcpy(&size, p, sizeof(size));
	h->mem_used -= size;
	free(p);
}

static void *h3_calloc(size_t nmemb, size_t size, void *user)
{
	void *p;

	if (size != 0 && nmemb > YIP_H3_MEM_MAX / size)
		return NULL;
	p = h3_malloc(nmemb * size, user);
	if (p != NULL)
		memset(p, 0, nmemb * size);
	return p;
}

static void *h3_realloc(void *ptr, size_t size, void *user)
{
	struct yip_h3 *h = user;
	uint8_t *p, *q;
	size_t old;

	if (ptr == NULL)
		return h3_malloc(size, user);
	if (size == 0) {
		h3_free(ptr, user);
		return NULL;
	}
	p = (uint8_t *)ptr - H3_HDR;
	memcpy(&old, p, sizeof(old));
	if (size > old && size - old > YIP_H3_MEM_MAX - h->mem_used)
		return NULL;
	q = realloc(p, H3_HDR + size);
	if (q == NULL)
		return NULL;
	memcpy(q, &size, sizeof(size));
	h->mem_used = h->mem_used - old + size;
	return q + H3_HDR;
}

/* ---- streams ------------------------------------------------------------------------ */

static struct h3_stream *stream_take(struct yip_h3 *h, int64_t sid)
{
	if (h->requests >= YIP_H3_REQUESTS)
		return NULL;
	for (size_t i = 0; i < YIP_H3_STREAMS; i++) {
		struct h3_stream *s = &h->streams[i];

		if (s->sid < 0) {
			memset(s, 0, sizeof(*s));
			s->sid = sid;
			s->method = WIRE_HTTP_OTHER;
			h->requests++;
			return s;
		}
	}
	return NULL;
}

/* The stream is answered no more: reset both ways once nghttp3 returns, its slot freed. */
static void refuse(struct yip_h3 *h, struct h3_stream *s, int64_t sid, uint64_t code)
{
	if (s != NULL)
		s->sid = -1;
	h->refuse = true;
	h->refuse_code = code;
	nghttp3_conn_set_stream_user_data(h->conn, sid, NULL);
}

static int status_slot(int code)
{
	return code == 200 ? 0 : code == 404 ? 1 : code == 405 ? 2 : 3;
}

static nghttp3_ssize read_body(nghttp3_conn *conn, int64_t sid, nghttp3_vec *vec, size_t veccnt,
                               uint32_t *pflags, void *user, void *stream_user)
{
	struct h3_stream *s = stream_user;

	(void)conn;
	(void)sid;
	(void)user;
	*pflags |= NGHTTP3_DATA_FLAG_EOF;
	if (s == NULL || s->body == NULL || veccnt == 0)
		return 0;
	vec[0].base = (uint8_t *)(uintptr_t)s->body;
	vec[0].len = s->body_len;
	s->body = NULL; /* handed out once */
	return 1;
}

#define NV(n, v, vl)                                                                               \
	{                                                                                          \
		.name = (uint8_t *)(uintptr_t)(n), .namelen = sizeof(n) - 1,                       \
		.value = (uint8_t *)(uintptr_t)(v), .valuelen = (vl),                              \
		.flags = NGHTTP3_NV_FLAG_NONE                                                      \
	}

static int answer(struct yip_h3 *h, struct h3_stream *s)
{
	static const nghttp3_data_reader dr = {.read_data = read_body};
	int code = wire_http_site_code(s->method, s->page);
	char status[4], date[WIRE_HTTP_DATE_LEN + 1], clen[24];
	size_t blen, n = 5;
	const char *body = wire_http_site_body(code, &blen);
	int clen_n, rv;

	status[0] = (char)('0' + code / 100);
	status[1] = (char)('0' + code / 10 % 10);
	status[2] = (char)('0' + code % 10);
	status[3] = 0;
	wire_http_date(date, h->wall_s);
	clen_n = snprintf(clen, sizeof(clen), "%zu", blen);
	{
		nghttp3_nv nva[] = {
		    NV(":status", status, 3),
		    NV("server", "nginx", 5),
		    NV("date", date, strlen(date)),
		    NV("content-type", "text/html", 9),
		    NV("content-length", clen, (size_t)clen_n),
		    NV("accept-ranges", "bytes", 5),
		};

		if (code == 200)
			n = 6;
		s->answered = true;
		s->body = s->method == WIRE_HTTP_HEAD ? NULL : body;
		s->body_len = blen;
		rv = nghttp3_conn_submit_response(h->conn, s->sid, nva, n,
		                                  s->method == WIRE_HTTP_HEAD ? NULL : &dr);
	}
	if (rv != 0)
		return rv;
	h->st->requests++;
	h->st->status[status_slot(code)]++;
	return 0;
}

/* ---- nghttp3's callbacks ------------------------------------------------------------ */

static int cb_begin_headers(nghttp3_conn *conn, int64_t sid, void *user, void *stream_user)
{
	struct yip_h3 *h = user;
	struct h3_stream *s;

	(void)conn;
	if (stream_user != NULL)
		return 0;
	s = stream_take(h, sid);
	if (s == NULL) {
		h->st->refused_streams++;
		refuse(h, NULL, sid, NGHTTP3_H3_REQUEST_REJECTED);
		return 0;
	}
	nghttp3_conn_set_stream_user_data(h->conn, sid, s);
	return 0;
}

static int cb_recv_header(nghttp3_conn *conn, int64_t sid, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *user, void *stream_user)
{
	struct yip_h3 *h = user;
	struct h3_stream *s = stream_user;
	nghttp3_vec v;

	(void)conn;
	(void)flags;
	if (s == NULL)
		return 0;
	v = nghttp3_rcbuf_get_buf(value);
	/* A field's size as RFC 9114 4.2.2 counts it. */
	s->fields += nghttp3_rcbuf_get_buf(name).len + v.len + 32;
	if (s->fields > YIP_H3_FIELDS_MAX) {
		h->st->refused_headers++;
		refuse(h, s, sid, NGHTTP3_H3_EXCESSIVE_LOAD);
		return 0;
	}
	if (token == NGHTTP3_QPACK_TOKEN__METHOD)
		s->method = v.len == 3 && memcmp(v.base, "GET", 3) == 0    ? WIRE_HTTP_GET
		            : v.len == 4 && memcmp(v.base, "HEAD", 4) == 0 ? WIRE_HTTP_HEAD
		                                                           : WIRE_HTTP_OTHER;
	else if (token == NGHTTP3_QPACK_TOKEN__PATH)
		s->page = wire_http_site_page(v.base, v.len);
	return 0;
}

/* The request's header section is whole (nghttp3 checked it): answer. */
static int cb_end_headers(nghttp3_conn *conn, int64_t sid, int fin, void *user, void *stream_user)
{
	struct yip_h3 *h = user;
	struct h3_stream *s = stream_user;

	(void)conn;
	(void)sid;
	(void)fin;
	if (s == NULL || s->answered)
		return 0;
	return answer(h, s) == 0 ? 0 : NGHTTP3_ERR_CALLBACK_FAILURE;
}

static int cb_recv_data(nghttp3_conn *conn, int64_t sid, const uint8_t *data, size_t len,
                        void *user, void *stream_user)
{
	struct yip_h3 *h = user;
	struct h3_stream *s = stream_user;

	(void)conn;
	(void)data;
	h->data_in += len;
	h->st->body_bytes += len;
	if (s == NULL)
		return 0;
	s->body_in += len;
	if (s->body_in > YIP_H3_BODY_MAX) {
		h->st->refused_body++;
		refuse(h, s, sid, NGHTTP3_H3_EXCESSIVE_LOAD);
	}
	return 0;
}

static int cb_deferred_consume(nghttp3_conn *conn, int64_t sid, size_t n, void *user,
                               void *stream_user)
{
	struct yip_h3 *h = user;

	(void)conn;
	(void)stream_user;
	if (h->hooks.consumed != NULL)
		h->hooks.consumed(h->hooks.ctx, sid, n);
	return 0;
}

static int cb_stream_close(nghttp3_conn *conn, int64_t sid, uint64_t app_error, void *user,
                           void *stream_user)
{
	struct h3_stream *s = stream_user;

	(void)conn;
	(void)sid;
	(void)app_error;
	(void)user;
	if (s != NULL)
		s->sid = -1;
	return 0;
}

static int cb_stop_sending(nghttp3_conn *conn, int64_t sid, uint64_t code, void *user,
                           void *stream_user)
{
	struct yip_h3 *h = user;

	(void)conn;
	(void)stream_user;
	if (h->hooks.stop_sending != NULL)
		h->hooks.stop_sending(h->hooks.ctx, sid, code);
	return 0;
}

static int cb_reset_stream(nghttp3_conn *conn, int64_t sid, uint64_t code, void *user,
                           void *stream_user)
{
	struct yip_h3 *h = user;

	(void)conn;
	(void)stream_user;
	h->st->malformed++;
	if (h->hooks.reset_stream != NULL)
		h->hooks.reset_stream(h->hooks.ctx, sid, code);
	return 0;
}

/* ---- the interface ------------------------------------------------------------------ */

struct yip_h3 *yip_h3_new(const struct yip_h3_hooks *hooks, struct yip_h3_stats *st)
{
	nghttp3_callbacks cb;
	nghttp3_settings set;
	struct yip_h3 *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->hooks = *hooks;
	h->st = st;
	for (size_t i = 0; i < YIP_H3_STREAMS; i++)
		h->streams[i].sid = -1;
	h->mem = (nghttp3_mem){.user_data = h,
	                       .malloc = h3_malloc,
	                       .free = h3_free,
	                       .calloc = h3_calloc,
	                       .realloc = h3_realloc};
	memset(&cb, 0, sizeof(cb));
	cb.stream_close = cb_stream_close;
	cb.recv_data = cb_recv_data;
	cb.deferred_consume = cb_deferred_consume;
	cb.begin_headers = cb_begin_headers;
	cb.recv_header = cb_recv_header;
	cb.end_headers = cb_end_headers;
	cb.stop_sending = cb_stop_sending;
	cb.reset_stream = cb_reset_stream;
	nghttp3_settings_default(&set);
	set.max_field_section_size = YIP_H3_FIELDS_MAX;
	/* No dynamic table either way: nothing to keep between requests, no stream ever
	 * blocked on the encoder stream. */
	set.qpack_max_dtable_capacity = 0;
	set.qpack_encoder_max_dtable_capacity = 0;
	set.qpack_blocked_streams = 0;
	if (nghttp3_conn_server_new(&h->conn, &cb, &set, &h->mem, h) != 0) {
		free(h);
		return NULL;
	}
	nghttp3_conn_set_max_concurrent_streams(h->conn, YIP_H3_STREAMS);
	return h;
}

void yip_h3_free(struct yip_h3 *h)
{
	if (h == NULL)
		return;
	nghttp3_conn_del(h->conn);
	free(h);
}

int yip_h3_bind(struct yip_h3 *h, int64_t control, int64_t qpack_enc, int64_t qpack_dec)
{
	int rv = nghttp3_conn_bind_control_stream(h->conn, control);

	if (rv == 0)
		rv = nghttp3_conn_bind_qpack_streams(h->conn, qpack_enc, qpack_dec);
	if (rv != 0)
		h->st->conn_errors++;
	return rv;
}

int64_t yip_h3_read(struct yip_h3 *h, int64_t sid, const uint8_t *p, size_t len, bool fin,
                    uint64_t wall_s)
{
	nghttp3_ssize n;

	h->wall_s = wall_s;
	h->data_in = 0;
	h->refuse = false;
	n = nghttp3_conn_read_stream(h->conn, sid, p, len, fin);
	if (n < 0) {
		h->st->conn_errors++;
		return n;
	}
	if (h->refuse) {
		/* The rest of the stream is dropped unread, and it is reset both ways. */
		nghttp3_conn_shutdown_stream_read(h->conn, sid);
		nghttp3_conn_shutdown_stream_write(h->conn, sid);
		if (h->hooks.stop_sending != NULL)
			h->hooks.stop_sending(h->hooks.ctx, sid, h->refuse_code);
		if (h->hooks.reset_stream != NULL)
			h->hooks.reset_stream(h->hooks.ctx, sid, h->refuse_code);
	}
	return (int64_t)n + (int64_t)h->data_in;
}

int yip_h3_writev(struct yip_h3 *h, int64_t *sid, bool *fin, struct yip_h3_vec *v, size_t n)
{
	nghttp3_vec vec[16];
	int pfin = 0;
	nghttp3_ssize k;

	if (n > 16)
		n = 16;
	*sid = -1;
	*fin = false;
	k = nghttp3_conn_writev_stream(h->conn, sid, &pfin, vec, n);
	if (k < 0) {
		h->st->conn_errors++;
		return (int)k;
	}
	for (nghttp3_ssize i = 0; i < k; i++) {
		v[i].base = vec[i].base;
		v[i].len = vec[i].len;
	}
	*fin = pfin != 0;
	return (int)k;
}

int yip_h3_written(struct yip_h3 *h, int64_t sid, size_t n)
{
	return nghttp3_conn_add_write_offset(h->conn, sid, n);
}

int yip_h3_acked(struct yip_h3 *h, int64_t sid, uint64_t n)
{
	return nghttp3_conn_add_ack_offset(h->conn, sid, n);
}

void yip_h3_block(struct yip_h3 *h, int64_t sid)
{
	nghttp3_conn_block_stream(h->conn, sid);
}

int yip_h3_unblock(struct yip_h3 *h, int64_t sid)
{
	return nghttp3_conn_unblock_stream(h->conn, sid);
}

void yip_h3_shutdown_write(struct yip_h3 *h, int64_t sid)
{
	nghttp3_conn_shutdown_stream_write(h->conn, sid);
}

int yip_h3_reset(struct yip_h3 *h, int64_t sid)
{
	return nghttp3_conn_shutdown_stream_read(h->conn, sid);
}

int yip_h3_closed(struct yip_h3 *h, int64_t sid, uint64_t app_error)
{
	int rv = nghttp3_conn_close_stream(h->conn, sid, app_error);

	/* A stream nghttp3 never saw (QUIC opened it, no byte came) is no error. */
	if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND)
		return 0;
	if (rv != 0)
		h->st->conn_errors++;
	return rv;
}

uint64_t yip_h3_error_code(int rv)
{
	return nghttp3_err_infer_quic_app_error_code(rv);
}
