/*
 * The QUIC listener's HTTP/3 decoy (src/quic/h3.c) against an nghttp3
 * client in the same process, stream bytes passed from one to the other
 * with no QUIC between: the page for GET /, 404 for another path, 405 for
 * POST, no body for HEAD, malformed requests refused without harm, and the
 * bounds on streams and bodies.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <nghttp3/nghttp3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quic/h3.h"
#include "wire/http.h"

#define NOW    1764633600u /* Tue, 02 Dec 2025 00:00:00 GMT */
#define MAXSID 4096

struct reply {
	int status;
	char server[32], date[40], ctype[32];
	long clen;
	uint8_t body[4096];
	size_t body_len;
	bool done;
};

struct t {
	struct yip_h3 *srv;
	struct yip_h3_stats st;
	nghttp3_conn *cli;
	struct reply replies[MAXSID / 4];
	int resets, stops;
	int64_t last_reset;
	uint64_t last_code;
	int64_t srv_err; /* the first negative yip_h3_read */
};

static void hook_stop(void *ctx, int64_t sid, uint64_t code)
{
	struct t *t = ctx;

	(void)sid;
	(void)code;
	t->stops++;
}

static void hook_reset(void *ctx, int64_t sid, uint64_t code)
{
	struct t *t = ctx;

	t->resets++;
	t->last_reset = sid;
	t->last_code = code;
}

static struct reply *reply_of(struct t *t, int64_t sid)
{
	return &t->replies[(sid / 4) % (MAXSID / 4)];
}

static void copy(char *dst, size_t cap, nghttp3_rcbuf *v)
{
	nghttp3_vec b = nghttp3_rcbuf_get_buf(v);
	size_t n = b.len < cap - 1 ? b.len : cap - 1;

	memcpy(dst, b.base, n);
	dst[n] = 0;
}

static int cli_header(nghttp3_conn *conn, int64_t sid, int32_t token, nghttp3_rcbuf *name,
                      nghttp3_rcbuf *value, uint8_t flags, void *user, void *stream_user)
{
	struct reply *r = reply_of(user, sid);
	char v[64];

	(void)conn;
	(void)name;
	(void)flags;
	(void)stream_user;
	switch (token) {
	case NGHTTP3_QPACK_TOKEN__STATUS:
		copy(v, sizeof(v), value);
		r->status = atoi(v);
		break;
	case NGHTTP3_QPACK_TOKEN_SERVER:
		copy(r->server, sizeof(r->server), value);
		break;
	case NGHTTP3_QPACK_TOKEN_DATE:
		copy(r->date, sizeof(r->date), value);
		break;
	case NGHTTP3_QPACK_TOKEN_CONTENT_TYPE:
		copy(r->ctype, sizeof(r->ctype), value);
		break;
	case NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH:
		copy(v, sizeof(v), value);
		r->clen = atol(v);
		break;
	default:
		break;
	}
	return 0;
}

static int cli_data(nghttp3_conn *conn, int64_t sid, const uint8_t *data, size_t len, void *user,
                    void *stream_user)
{
	struct reply *r = reply_of(user, sid);

	(void)conn;
	(void)stream_user;
	assert_true(r->body_len + len <= sizeof(r->body));
	memcpy(r->body + r->body_len, data, len);
	r->body_len += len;
	return 0;
}

static int cli_end(nghttp3_conn *conn, int64_t sid, void *user, void *stream_user)
{
	(void)conn;
	(void)stream_user;
	reply_of(user, sid)->done = true;
	return 0;
}

static int setup(void **state)
{
	static const struct yip_h3_hooks base = {.stop_sending = hook_stop,
	                                         .reset_stream = hook_reset};
	struct t *t = calloc(1, sizeof(*t));
	struct yip_h3_hooks hooks = base;
	nghttp3_callbacks cb;
	nghttp3_settings set;

	assert_non_null(t);
	hooks.ctx = t;
	t->srv = yip_h3_new(&hooks, &t->st);
	assert_non_null(t->srv);
	assert_int_equal(yip_h3_bind(t->srv, 3, 7, 11), 0);
	memset(&cb, 0, sizeof(cb));
	cb.recv_header = cli_header;
	cb.recv_data = cli_data;
	cb.end_stream = cli_end;
	nghttp3_settings_default(&set);
	assert_int_equal(nghttp3_conn_client_new(&t->cli, &cb, &set, NULL, t), 0);
	assert_int_equal(nghttp3_conn_bind_control_stream(t->cli, 2), 0);
	assert_int_equal(nghttp3_conn_bind_qpack_streams(t->cli, 6, 10), 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	nghttp3_conn_del(t->cli);
	yip_h3_free(t->srv);
	free(t);
	return 0;
}

/* Moves every byte either side has to send to the other, all acked at once,
 * until neither has more. */
static void pump(struct t *t)
{
	for (int round = 0; round < 1000; round++) {
		bool moved = false;
		int64_t sid;
		int fin;
		nghttp3_vec v[8];
		nghttp3_ssize k = nghttp3_conn_writev_stream(t->cli, &sid, &fin, v, 8);

		assert_true(k >= 0);
		if (sid >= 0) {
			uint8_t buf[16384];
			size_t len = 0;

			for (nghttp3_ssize i = 0; i < k; i++) {
				assert_true(len + v[i].len <= sizeof(buf));
				memcpy(buf + len, v[i].base, v[i].len);
				len += v[i].len;
			}
			assert_int_equal(nghttp3_conn_add_write_offset(t->cli, sid, len), 0);
			assert_int_equal(nghttp3_conn_add_ack_offset(t->cli, sid, len), 0);
			if (t->srv_err == 0) {
				int64_t n = yip_h3_read(t->srv, sid, buf, len, fin, NOW);

				if (n < 0)
					t->srv_err = n;
			}
			moved = true;
		}
		if (t->srv_err == 0) {
			struct yip_h3_vec sv[8];
			bool sfin;
			int m = yip_h3_writev(t->srv, &sid, &sfin, sv, 8);

			assert_true(m >= 0);
			if (sid >= 0) {
				size_t len = 0;

				for (int i = 0; i < m; i++) {
					nghttp3_ssize r = nghttp3_conn_read_stream(
					    t->cli, sid, sv[i].base, sv[i].len, sfin && i == m - 1);

					assert_true(r >= 0);
					len += sv[i].len;
				}
				if (m == 0)
					assert_true(
					    nghttp3_conn_read_stream(t->cli, sid, NULL, 0, 1) >= 0);
				assert_int_equal(yip_h3_written(t->srv, sid, len), 0);
				assert_int_equal(yip_h3_acked(t->srv, sid, len), 0);
				moved = true;
			}
		}
		if (!moved)
			return;
	}
	fail_msg("the two sides never went quiet");
}

#define MKNV(n, v)                                                                                 \
	{                                                                                          \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP3_NV_FLAG_NONE \
	}

static void request(struct t *t, int64_t sid, const char *method, const char *path)
{
	nghttp3_nv nva[] = {
	    {(uint8_t *)":method", (uint8_t *)method, 7, strlen(method), NGHTTP3_NV_FLAG_NONE},
	    MKNV(":scheme", "https"),
	    MKNV(":authority", "example.org"),
	    {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP3_NV_FLAG_NONE},
	    MKNV("user-agent", "test"),
	};

	assert_int_equal(nghttp3_conn_submit_request(t->cli, sid, nva, 5, NULL, NULL), 0);
}

/* Closes a finished stream on both sides, as QUIC would once both directions ended. */
static void close_stream(struct t *t, int64_t sid)
{
	assert_int_equal(yip_h3_closed(t->srv, sid, 0x100 /* H3_NO_ERROR */), 0);
	assert_int_equal(nghttp3_conn_close_stream(t->cli, sid, 0x100), 0);
}

static void page_and_404(void **state)
{
	struct t *t = *state;
	size_t plen, nlen;
	const char *page = wire_http_site_body(200, &plen);
	const char *nf = wire_http_site_body(404, &nlen);
	struct reply *r;

	request(t, 0, "GET", "/");
	request(t, 4, "GET", "/nope");
	request(t, 8, "GET", "/index.html");
	pump(t);
	r = reply_of(t, 0);
	assert_true(r->done);
	assert_int_equal(r->status, 200);
	assert_string_equal(r->server, "nginx");
	assert_string_equal(r->date, "Tue, 02 Dec 2025 00:00:00 GMT");
	assert_string_equal(r->ctype, "text/html");
	assert_int_equal(r->clen, (long)plen);
	assert_int_equal(r->body_len, plen);
	assert_memory_equal(r->body, page, plen);
	r = reply_of(t, 4);
	assert_true(r->done);
	assert_int_equal(r->status, 404);
	assert_string_equal(r->server, "nginx");
	assert_int_equal(r->clen, (long)nlen);
	assert_int_equal(r->body_len, nlen);
	assert_memory_equal(r->body, nf, nlen);
	assert_int_equal(reply_of(t, 8)->status, 200);
	assert_int_equal(t->st.requests, 3);
	assert_int_equal(t->st.status[0], 2);
	assert_int_equal(t->st.status[1], 1);
	assert_int_equal(t->resets, 0);
	assert_int_equal(t->srv_err, 0);
	close_stream(t, 0);
	close_stream(t, 4);
	close_stream(t, 8);
	/* The connection goes on: a later request is answered the same. */
	request(t, 12, "GET", "/");
	pump(t);
	assert_int_equal(reply_of(t, 12)->status, 200);
	assert_int_equal(reply_of(t, 12)->body_len, plen);
}

static void methods(void **state)
{
	struct t *t = *state;
	size_t plen, mlen;

	wire_http_site_body(200, &plen);
	wire_http_site_body(405, &mlen);
	request(t, 0, "HEAD", "/");
	request(t, 4, "POST", "/");
	request(t, 8, "DELETE", "/x");
	pump(t);
	assert_int_equal(reply_of(t, 0)->status, 200);
	assert_int_equal(reply_of(t, 0)->clen, (long)plen);
	assert_int_equal(reply_of(t, 0)->body_len, 0);
	assert_true(reply_of(t, 0)->done);
	assert_int_equal(reply_of(t, 4)->status, 405);
	assert_int_equal(reply_of(t, 4)->body_len, mlen);
	assert_int_equal(reply_of(t, 8)->status, 405);
	assert_int_equal(t->st.status[2], 2);
}

/* A request without :path: nghttp3 finds it malformed and resets the stream; the
 * connection lives on and answers the next one. */
static void malformed_request(void **state)
{
	struct t *t = *state;
	nghttp3_nv nva[] = {MKNV(":method", "GET"), MKNV(":scheme", "https"),
	                    MKNV(":authority", "a")};

	assert_int_equal(nghttp3_conn_submit_request(t->cli, 0, nva, 3, NULL, NULL), 0);
	pump(t);
	assert_int_equal(t->srv_err, 0);
	assert_int_equal(reply_of(t, 0)->status, 0);
	assert_true(t->resets >= 1);
	assert_int_equal(t->last_reset, 0);
	assert_int_equal(t->last_code, NGHTTP3_H3_MESSAGE_ERROR);
	assert_true(t->st.malformed >= 1);
	assert_int_equal(t->st.requests, 0);
	request(t, 4, "GET", "/");
	pump(t);
	assert_int_equal(reply_of(t, 4)->status, 200);
}

/* Bytes that are not HTTP/3 on a request stream: an error for the connection
 * (a negative return and its error code), never a crash or an answer. */
static void garbage_stream(void **state)
{
	struct t *t = *state;
	/* A DATA frame before any HEADERS. */
	static const uint8_t data_first[] = {0x00, 0x04, 'a', 'b', 'c', 'd'};
	int64_t n;

	pump(t); /* the control streams, both ways */
	n = yip_h3_read(t->srv, 0, data_first, sizeof(data_first), false, NOW);
	assert_true(n < 0);
	assert_int_equal(yip_h3_error_code((int)n), NGHTTP3_H3_FRAME_UNEXPECTED);
	assert_int_equal(t->st.conn_errors, 1);
	assert_int_equal(t->st.requests, 0);
}

static void garbage_control(void **state)
{
	struct t *t = *state;
	/* A uni stream of type control whose first frame is not SETTINGS. */
	static const uint8_t ctrl[] = {0x00, 0x01, 0x02, 0x00, 0x00};
	int64_t n = yip_h3_read(t->srv, 2, ctrl, sizeof(ctrl), false, NOW);

	assert_true(n < 0);
	assert_true(yip_h3_error_code((int)n) != 0);
	assert_int_equal(t->st.conn_errors, 1);
}

/* More request streams at once than the table holds: the rest are refused. */
static void too_many_streams(void **state)
{
	struct t *t = *state;
	int answered = 0;

	for (int i = 0; i < YIP_H3_STREAMS + 4; i++)
		request(t, 4 * i, "GET", "/");
	pump(t);
	for (int i = 0; i < YIP_H3_STREAMS + 4; i++)
		answered += reply_of(t, 4 * i)->status == 200;
	/* Answers are done but not closed (QUIC did not say so): the slots stay taken. */
	assert_int_equal(answered, YIP_H3_STREAMS);
	assert_int_equal(t->st.refused_streams, 4);
	assert_int_equal(t->last_code, NGHTTP3_H3_REQUEST_REJECTED);
	assert_int_equal(t->srv_err, 0);
	for (int i = 0; i < YIP_H3_STREAMS; i++)
		close_stream(t, 4 * i);
	request(t, 4 * (YIP_H3_STREAMS + 4), "GET", "/");
	pump(t);
	assert_int_equal(reply_of(t, 4 * (YIP_H3_STREAMS + 4))->status, 200);
}

static uint64_t body_left;
static nghttp3_ssize body_read(nghttp3_conn *conn, int64_t sid, nghttp3_vec *vec, size_t veccnt,
                               uint32_t *pflags, void *user, void *stream_user)
{
	static uint8_t chunk[4096];

	(void)conn;
	(void)sid;
	(void)user;
	(void)stream_user;
	(void)veccnt;
	vec[0].base = chunk;
	vec[0].len = body_left < sizeof(chunk) ? body_left : sizeof(chunk);
	body_left -= vec[0].len;
	if (body_left == 0)
		*pflags |= NGHTTP3_DATA_FLAG_EOF;
	return 1;
}

/* A POST body is read and dropped up to YIP_H3_BODY_MAX; past it the stream is refused. */
static void bodies(void **state)
{
	struct t *t = *state;
	static const nghttp3_data_reader dr = {.read_data = body_read};
	nghttp3_nv nva[] = {MKNV(":method", "POST"), MKNV(":scheme", "https"),
	                    MKNV(":authority", "a"), MKNV(":path", "/login")};

	body_left = 10000;
	assert_int_equal(nghttp3_conn_submit_request(t->cli, 0, nva, 4, &dr, NULL), 0);
	pump(t);
	assert_int_equal(reply_of(t, 0)->status, 405);
	assert_int_equal(t->st.body_bytes, 10000);
	assert_int_equal(t->st.refused_body, 0);
	body_left = YIP_H3_BODY_MAX + 5000;
	assert_int_equal(nghttp3_conn_submit_request(t->cli, 4, nva, 4, &dr, NULL), 0);
	pump(t);
	assert_int_equal(t->st.refused_body, 1);
	assert_int_equal(t->last_reset, 4);
	assert_int_equal(t->last_code, NGHTTP3_H3_EXCESSIVE_LOAD);
	assert_true(t->st.body_bytes <= 10000 + YIP_H3_BODY_MAX + 16384);
	assert_int_equal(t->srv_err, 0);
}

/* A header section past YIP_H3_FIELDS_MAX is not answered. */
static void big_headers(void **state)
{
	struct t *t = *state;
	static char big[YIP_H3_FIELDS_MAX + 100];
	nghttp3_nv nva[] = {MKNV(":method", "GET"),
	                    MKNV(":scheme", "https"),
	                    MKNV(":authority", "a"),
	                    MKNV(":path", "/"),
	                    {(uint8_t *)"cookie", (uint8_t *)big, 6, sizeof(big), 0}};

	memset(big, 'x', sizeof(big));
	assert_int_equal(nghttp3_conn_submit_request(t->cli, 0, nva, 5, NULL, NULL), 0);
	pump(t);
	assert_int_equal(reply_of(t, 0)->status, 0);
	assert_int_equal(t->st.requests, 0);
	assert_int_equal(t->st.refused_headers, 1);
	assert_int_equal(t->last_reset, 0);
	assert_int_equal(t->last_code, NGHTTP3_H3_EXCESSIVE_LOAD);
	assert_int_equal(t->srv_err, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(page_and_404, setup, teardown),
	    cmocka_unit_test_setup_teardown(methods, setup, teardown),
	    cmocka_unit_test_setup_teardown(malformed_request, setup, teardown),
	    cmocka_unit_test_setup_teardown(garbage_stream, setup, teardown),
	    cmocka_unit_test_setup_teardown(garbage_control, setup, teardown),
	    cmocka_unit_test_setup_teardown(too_many_streams, setup, teardown),
	    cmocka_unit_test_setup_teardown(bodies, setup, teardown),
	    cmocka_unit_test_setup_teardown(big_headers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
