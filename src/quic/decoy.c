/*
 * The HTTP/3 decoy behind a QUIC server connection (see decoy.h): each
 * call of the stream handler is passed on to the connection's yip_h3, and
 * what yip_h3 asks of QUIC goes back through quic_conn_*.
 */
#include "quic/decoy.h"

#include <stdlib.h>

struct decoy_conn {
	struct yip_h3 *h3;
	struct quic_conn *c;
	struct quic_decoy *d;
};

#define H3_NO_ERROR 0x100u

static void hook_consumed(void *ctx, int64_t sid, uint64_t n)
{
	struct decoy_conn *dc = ctx;

	quic_conn_extend_stream(dc->c, sid, (size_t)n);
}

static void hook_stop_sending(void *ctx, int64_t sid, uint64_t code)
{
	struct decoy_conn *dc = ctx;

	quic_conn_shutdown_stream_read(dc->c, sid, code);
}

static void hook_reset_stream(void *ctx, int64_t sid, uint64_t code)
{
	struct decoy_conn *dc = ctx;

	quic_conn_shutdown_stream(dc->c, sid, code);
}

static void *decoy_open(void *arg, struct quic_conn *c)
{
	struct quic_decoy *d = arg;
	struct decoy_conn *dc = calloc(1, sizeof(*dc));
	struct yip_h3_hooks hooks = {.consumed = hook_consumed,
	                             .stop_sending = hook_stop_sending,
	                             .reset_stream = hook_reset_stream};
	int64_t ctrl, enc, dec;

	if (dc == NULL) {
		d->open_failed++;
		return NULL;
	}
	dc->c = c;
	dc->d = d;
	hooks.ctx = dc;
	dc->h3 = yip_h3_new(&hooks, &d->stats);
	if (dc->h3 == NULL || quic_conn_open_uni_stream(c, &ctrl) != 0 ||
	    quic_conn_open_uni_stream(c, &enc) != 0 || quic_conn_open_uni_stream(c, &dec) != 0 ||
	    yip_h3_bind(dc->h3, ctrl, enc, dec) != 0) {
		d->open_failed++;
		yip_h3_free(dc->h3);
		free(dc);
		return NULL;
	}
	quic_conn_stream_ready(c); /* SETTINGS and the QPACK streams' types */
	return dc;
}

static void decoy_free(void *h)
{
	struct decoy_conn *dc = h;

	if (dc == NULL)
		return;
	yip_h3_free(dc->h3);
	free(dc);
}

static int decoy_recv(void *h, int64_t sid, const uint8_t *data, size_t len, bool fin)
{
	struct decoy_conn *dc = h;
	int64_t n = yip_h3_read(dc->h3, sid, data, len, fin, dc->d->wall_s);

	if (n < 0)
		return (int)n;
	if (n > 0)
		quic_conn_extend_stream(dc->c, sid, (size_t)n);
	quic_conn_stream_ready(dc->c); /* an answer may wait */
	return 0;
}

static int decoy_acked(void *h, int64_t sid, uint64_t offset, uint64_t datalen)
{
	struct decoy_conn *dc = h;

	(void)offset;
	return yip_h3_acked(dc->h3, sid, datalen);
}

static int decoy_close(void *h, int64_t sid, bool has_app_error, uint64_t app_error)
{
	struct decoy_conn *dc = h;

	return yip_h3_closed(dc->h3, sid, has_app_error ? app_error : H3_NO_ERROR);
}

static int decoy_reset(void *h, int64_t sid, uint64_t app_error)
{
	struct decoy_conn *dc = h;

	(void)app_error;
	return yip_h3_reset(dc->h3, sid);
}

static int decoy_stop_sending(void *h, int64_t sid, uint64_t app_error)
{
	struct decoy_conn *dc = h;

	(void)app_error;
	yip_h3_shutdown_write(dc->h3, sid);
	return 0;
}

static int decoy_unblock(void *h, int64_t sid)
{
	struct decoy_conn *dc = h;

	return yip_h3_unblock(dc->h3, sid);
}

static int decoy_writev(void *h, int64_t *sid, bool *fin, struct quic_vec *vec, size_t veccnt)
{
	struct decoy_conn *dc = h;
	struct yip_h3_vec v[16];
	int k;

	if (veccnt > 16)
		veccnt = 16;
	k = yip_h3_writev(dc->h3, sid, fin, v, veccnt);
	for (int i = 0; i < k; i++) {
		vec[i].base = (uint8_t *)(uintptr_t)v[i].base;
		vec[i].len = v[i].len;
	}
	return k;
}

static int decoy_written(void *h, int64_t sid, size_t n)
{
	struct decoy_conn *dc = h;

	return yip_h3_written(dc->h3, sid, n);
}

static int decoy_block(void *h, int64_t sid)
{
	struct decoy_conn *dc = h;

	yip_h3_block(dc->h3, sid);
	return 0;
}

static int decoy_shutdown_write(void *h, int64_t sid)
{
	struct decoy_conn *dc = h;

	yip_h3_shutdown_write(dc->h3, sid);
	return 0;
}

const struct quic_stream_handler quic_decoy_handler = {
    .open = decoy_open,
    .free = decoy_free,
    .recv_stream_data = decoy_recv,
    .acked_stream_data_offset = decoy_acked,
    .stream_close = decoy_close,
    .stream_reset = decoy_reset,
    .stream_stop_sending = decoy_stop_sending,
    .extend_max_stream_data = decoy_unblock,
    .writev_stream = decoy_writev,
    .add_write_offset = decoy_written,
    .block_stream = decoy_block,
    .shutdown_stream_write = decoy_shutdown_write,
};
