/*
 * yip-h3serve ADDR PORT KEY CERT: the QUIC listener's HTTP/3 decoy
 * (src/quic/h3.c) behind a minimal QUIC server (ngtcp2 with GnuTLS, one
 * connection at a time, a new client's Initial replaces it), for
 * tests/netns/quic_probe.sh to fetch from with Debian's gtlsclient. A test
 * harness, not yipd: it proves the decoy speaks HTTP/3 to an independent
 * client over real QUIC. It prints the decoy's counters on SIGTERM.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "quic/h3.h"

struct srv {
	int fd;
	struct sockaddr_storage local, remote;
	socklen_t local_len, remote_len;
	gnutls_certificate_credentials_t cred;
	ngtcp2_conn *conn;
	gnutls_session_t tls;
	ngtcp2_crypto_conn_ref ref;
	struct yip_h3 *h3;
	struct yip_h3_stats st;
	ngtcp2_connection_close_error ccerr;
	ngtcp2_cid odcid, scid; /* the client's first DCID, ours */
	uint64_t conns;
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static ngtcp2_tstamp now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS + (ngtcp2_tstamp)ts.tv_nsec;
}

static void rnd(uint8_t *p, size_t n)
{
	if (getrandom(p, n, 0) != (ssize_t)n)
		abort();
}

/* ---- the decoy's hooks: what HTTP/3 asks of QUIC -------------------------------------- */

static void h3_consumed(void *ctx, int64_t sid, uint64_t n)
{
	struct srv *s = ctx;

	ngtcp2_conn_extend_max_stream_offset(s->conn, sid, n);
	ngtcp2_conn_extend_max_offset(s->conn, n);
}

static void h3_stop(void *ctx, int64_t sid, uint64_t code)
{
	struct srv *s = ctx;

	ngtcp2_conn_shutdown_stream_read(s->conn, sid, code);
}

static void h3_reset(void *ctx, int64_t sid, uint64_t code)
{
	struct srv *s = ctx;

	ngtcp2_conn_shutdown_stream_write(s->conn, sid, code);
}

/* ---- ngtcp2's callbacks --------------------------------------------------------------- */

static void cb_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	rnd(dest, len);
}

static int cb_new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *user)
{
	(void)conn;
	(void)user;
	rnd(cid->data, cidlen);
	cid->datalen = cidlen;
	rnd(token, NGTCP2_STATELESS_RESET_TOKENLEN);
	return 0;
}

static int cb_handshake_completed(ngtcp2_conn *conn, void *user)
{
	struct srv *s = user;
	int64_t c, e, d;

	if (ngtcp2_conn_open_uni_stream(conn, &c, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(conn, &e, NULL) != 0 ||
	    ngtcp2_conn_open_uni_stream(conn, &d, NULL) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return yip_h3_bind(s->h3, c, e, d) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int cb_recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t sid, uint64_t offset,
                               const uint8_t *data, size_t len, void *user, void *stream_user)
{
	struct srv *s = user;
	int64_t n = yip_h3_read(s->h3, sid, data, len, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0,
	                        (uint64_t)time(NULL));

	(void)offset;
	(void)stream_user;
	if (n < 0) {
		ngtcp2_connection_close_error_set_application_error(
		    &s->ccerr, yip_h3_error_code((int)n), NULL, 0);
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	ngtcp2_conn_extend_max_stream_offset(conn, sid, (uint64_t)n);
	ngtcp2_conn_extend_max_offset(conn, (uint64_t)n);
	return 0;
}

static int cb_acked(ngtcp2_conn *conn, int64_t sid, uint64_t offset, uint64_t len, void *user,
                    void *stream_user)
{
	struct srv *s = user;

	(void)conn;
	(void)offset;
	(void)stream_user;
	return yip_h3_acked(s->h3, sid, len) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int cb_stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t sid, uint64_t code,
                           void *user, void *stream_user)
{
	struct srv *s = user;

	(void)stream_user;
	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		code = 0x100; /* H3_NO_ERROR */
	if (yip_h3_closed(s->h3, sid, code) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	if ((sid & 3) == 0)
		ngtcp2_conn_extend_max_streams_bidi(conn, 1);
	return 0;
}

static int cb_stream_reset(ngtcp2_conn *conn, int64_t sid, uint64_t final_size, uint64_t code,
                           void *user, void *stream_user)
{
	struct srv *s = user;

	(void)conn;
	(void)final_size;
	(void)code;
	(void)stream_user;
	return yip_h3_reset(s->h3, sid) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int cb_stop_sending(ngtcp2_conn *conn, int64_t sid, uint64_t code, void *user,
                           void *stream_user)
{
	struct srv *s = user;

	(void)conn;
	(void)code;
	(void)stream_user;
	yip_h3_shutdown_write(s->h3, sid);
	return 0;
}

static int cb_extend_stream(ngtcp2_conn *conn, int64_t sid, uint64_t max, void *user,
                            void *stream_user)
{
	struct srv *s = user;

	(void)conn;
	(void)max;
	(void)stream_user;
	return yip_h3_unblock(s->h3, sid) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct srv *)ref->user_data)->conn;
}

/* ---- one connection ------------------------------------------------------------------- */

static void conn_drop(struct srv *s)
{
	if (s->conn != NULL)
		ngtcp2_conn_del(s->conn);
	if (s->tls != NULL)
		gnutls_deinit(s->tls);
	yip_h3_free(s->h3);
	s->conn = NULL;
	s->tls = NULL;
	s->h3 = NULL;
}

static int alpn_hook(gnutls_session_t session, unsigned htype, unsigned when, unsigned incoming,
                     const gnutls_datum_t *msg)
{
	gnutls_datum_t p;

	(void)htype;
	(void)when;
	(void)incoming;
	(void)msg;
	if (gnutls_alpn_get_selected_protocol(session, &p) != 0 || p.size != 2 ||
	    memcmp(p.data, "h3", 2) != 0)
		return -1;
	return 0;
}

static bool conn_accept(struct srv *s, const uint8_t *pkt, size_t len, const ngtcp2_pkt_hd *hd)
{
	static const struct yip_h3_hooks hooks0 = {
	    .consumed = h3_consumed, .stop_sending = h3_stop, .reset_stream = h3_reset};
	struct yip_h3_hooks hooks = hooks0;
	ngtcp2_callbacks cb;
	ngtcp2_settings set;
	ngtcp2_transport_params tp;
	ngtcp2_cid scid;
	ngtcp2_path path = {
	    .local = {.addr = (ngtcp2_sockaddr *)&s->local, .addrlen = s->local_len},
	    .remote = {.addr = (ngtcp2_sockaddr *)&s->remote, .addrlen = s->remote_len}};
	gnutls_datum_t alpn = {.data = (unsigned char *)"h3", .size = 2};

	(void)pkt;
	(void)len;
	conn_drop(s);
	hooks.ctx = s;
	s->h3 = yip_h3_new(&hooks, &s->st);
	if (s->h3 == NULL)
		return false;
	memset(&cb, 0, sizeof(cb));
	cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
	cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
	cb.encrypt = ngtcp2_crypto_encrypt_cb;
	cb.decrypt = ngtcp2_crypto_decrypt_cb;
	cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
	cb.update_key = ngtcp2_crypto_update_key_cb;
	cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
	cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
	cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
	cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
	cb.rand = cb_rand;
	cb.get_new_connection_id = cb_new_cid;
	cb.handshake_completed = cb_handshake_completed;
	cb.recv_stream_data = cb_recv_stream_data;
	cb.acked_stream_data_offset = cb_acked;
	cb.stream_close = cb_stream_close;
	cb.stream_reset = cb_stream_reset;
	cb.stream_stop_sending = cb_stop_sending;
	cb.extend_max_stream_data = cb_extend_stream;
	ngtcp2_settings_default(&set);
	set.initial_ts = now_ns();
	ngtcp2_transport_params_default(&tp);
	tp.initial_max_streams_bidi = YIP_H3_STREAMS;
	tp.initial_max_streams_uni = 3;
	tp.initial_max_data = 1 << 20;
	tp.initial_max_stream_data_bidi_remote = 256 * 1024;
	tp.initial_max_stream_data_uni = 256 * 1024;
	tp.max_idle_timeout = 30 * NGTCP2_SECONDS;
	tp.max_datagram_frame_size = 65535;
	tp.original_dcid = hd->dcid;
	scid.datalen = 16;
	rnd(scid.data, scid.datalen);
	s->scid = scid;
	s->odcid = hd->dcid;
	if (ngtcp2_conn_server_new(&s->conn, &hd->scid, &scid, &path, hd->version, &cb, &set, &tp,
	                           NULL, s) != 0)
		return false;
	if (gnutls_init(&s->tls, GNUTLS_SERVER | GNUTLS_ENABLE_EARLY_DATA |
	                             GNUTLS_NO_END_OF_EARLY_DATA) != 0 ||
	    gnutls_priority_set_direct(
	        s->tls, "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE", NULL) != 0 ||
	    ngtcp2_crypto_gnutls_configure_server_session(s->tls) != 0 ||
	    gnutls_credentials_set(s->tls, GNUTLS_CRD_CERTIFICATE, s->cred) != 0 ||
	    gnutls_alpn_set_protocols(s->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0)
		return false;
	gnutls_handshake_set_hook_function(s->tls, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_POST,
	                                   alpn_hook);
	s->ref.get_conn = get_conn;
	s->ref.user_data = s;
	gnutls_session_set_ptr(s->tls, &s->ref);
	ngtcp2_conn_set_tls_native_handle(s->conn, s->tls);
	ngtcp2_connection_close_error_default(&s->ccerr);
	s->conns++;
	return true;
}

static void send_pkt(struct srv *s, const uint8_t *p, size_t n)
{
	(void)sendto(s->fd, p, n, 0, (struct sockaddr *)&s->remote, s->remote_len);
}

/* Everything the connection has to send now: the decoy's streams first, then QUIC's own. */
static bool conn_flush(struct srv *s)
{
	uint8_t buf[1500];

	for (int round = 0; round < 4096; round++) {
		struct yip_h3_vec hv[16];
		ngtcp2_vec v[16];
		int64_t sid = -1;
		bool fin = false;
		int k = 0;
		ngtcp2_ssize wlen = -1, n;
		ngtcp2_path_storage ps;
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;

		ngtcp2_path_storage_zero(&ps);
		if (s->h3 != NULL && ngtcp2_conn_get_handshake_completed(s->conn)) {
			k = yip_h3_writev(s->h3, &sid, &fin, hv, 16);
			if (k < 0) {
				ngtcp2_connection_close_error_set_application_error(
				    &s->ccerr, yip_h3_error_code(k), NULL, 0);
				return false;
			}
			for (int i = 0; i < k; i++) {
				v[i].base = (uint8_t *)(uintptr_t)hv[i].base;
				v[i].len = hv[i].len;
			}
		}
		if (fin)
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		n = ngtcp2_conn_writev_stream(s->conn, &ps.path, NULL, buf, sizeof(buf), &wlen,
		                              flags, sid, v, (size_t)k, now_ns());
		if (n < 0) {
			if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
				yip_h3_block(s->h3, sid);
				continue;
			}
			if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
				yip_h3_shutdown_write(s->h3, sid);
				continue;
			}
			if (n == NGTCP2_ERR_WRITE_MORE) {
				if (yip_h3_written(s->h3, sid, (size_t)wlen) != 0)
					return false;
				continue;
			}
			ngtcp2_connection_close_error_set_transport_error_liberr(&s->ccerr, (int)n,
			                                                         NULL, 0);
			return false;
		}
		if (wlen >= 0 && sid >= 0 && yip_h3_written(s->h3, sid, (size_t)wlen) != 0)
			return false;
		if (n == 0)
			return true;
		send_pkt(s, buf, (size_t)n);
	}
	return true;
}

static void conn_close(struct srv *s)
{
	uint8_t buf[1500];
	ngtcp2_path_storage ps;
	ngtcp2_ssize n;

	if (s->conn == NULL)
		return;
	ngtcp2_path_storage_zero(&ps);
	if (!ngtcp2_conn_is_in_closing_period(s->conn) &&
	    !ngtcp2_conn_is_in_draining_period(s->conn)) {
		n = ngtcp2_conn_write_connection_close(s->conn, &ps.path, NULL, buf, sizeof(buf),
		                                       &s->ccerr, now_ns());
		if (n > 0)
			send_pkt(s, buf, (size_t)n);
	}
	conn_drop(s);
}

static void on_packet(struct srv *s, const uint8_t *pkt, size_t len)
{
	ngtcp2_version_cid vc;
	ngtcp2_pkt_hd hd;
	ngtcp2_path path = {
	    .local = {.addr = (ngtcp2_sockaddr *)&s->local, .addrlen = s->local_len},
	    .remote = {.addr = (ngtcp2_sockaddr *)&s->remote, .addrlen = s->remote_len}};
	int rv;

	if (ngtcp2_pkt_decode_version_cid(&vc, pkt, len, 16) != 0)
		return;
	/* A new connection: an Initial for neither of the current one's IDs. */
	if (s->conn == NULL ||
	    !((vc.dcidlen == s->odcid.datalen && memcmp(vc.dcid, s->odcid.data, vc.dcidlen) == 0) ||
	      (vc.dcidlen == s->scid.datalen && memcmp(vc.dcid, s->scid.data, vc.dcidlen) == 0))) {
		if (ngtcp2_accept(&hd, pkt, len) != 0 || !conn_accept(s, pkt, len, &hd)) {
			conn_drop(s);
			return;
		}
	}
	rv = ngtcp2_conn_read_pkt(s->conn, &path, NULL, pkt, len, now_ns());
	if (rv != 0) {
		if (rv != NGTCP2_ERR_DRAINING && rv != NGTCP2_ERR_CLOSING && !s->ccerr.error_code)
			ngtcp2_connection_close_error_set_transport_error_liberr(&s->ccerr, rv,
			                                                         NULL, 0);
		conn_close(s);
		return;
	}
	if (!conn_flush(s))
		conn_close(s);
}

int main(int argc, char **argv)
{
	struct srv s;
	struct sockaddr_in a;
	uint8_t pkt[65536];

	if (argc != 5) {
		fprintf(stderr, "usage: yip-h3serve ADDR PORT KEY CERT\n");
		return 2;
	}
	memset(&s, 0, sizeof(s));
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (gnutls_certificate_allocate_credentials(&s.cred) != 0 ||
	    gnutls_certificate_set_x509_key_file(s.cred, argv[4], argv[3], GNUTLS_X509_FMT_PEM) !=
	        0) {
		fprintf(stderr, "yip-h3serve: cannot load %s / %s\n", argv[4], argv[3]);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1)
		return 2;
	s.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (s.fd < 0 || bind(s.fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("yip-h3serve: bind");
		return 1;
	}
	memcpy(&s.local, &a, sizeof(a));
	s.local_len = sizeof(a);
	while (!stop) {
		struct pollfd pfd = {.fd = s.fd, .events = POLLIN};
		int timeout = 1000;

		if (s.conn != NULL) {
			ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(s.conn), t = now_ns();

			timeout = exp <= t ? 0 : (int)((exp - t) / NGTCP2_MILLISECONDS) + 1;
			if (timeout > 1000)
				timeout = 1000;
		}
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			break;
		if (pfd.revents & POLLIN) {
			struct sockaddr_storage from;
			socklen_t flen = sizeof(from);
			ssize_t n =
			    recvfrom(s.fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&from, &flen);

			if (n > 0) {
				memcpy(&s.remote, &from, flen);
				s.remote_len = flen;
				on_packet(&s, pkt, (size_t)n);
			}
		}
		if (s.conn != NULL && ngtcp2_conn_get_expiry(s.conn) <= now_ns()) {
			int rv = ngtcp2_conn_handle_expiry(s.conn, now_ns());

			if (rv != 0)
				conn_drop(&s);
			else if (!conn_flush(&s))
				conn_close(&s);
		}
	}
	printf("conns %lu requests %lu 200 %lu 404 %lu 405 %lu 400 %lu refused_streams %lu "
	       "refused_headers %lu refused_body %lu malformed %lu conn_errors %lu\n",
	       (unsigned long)s.conns, (unsigned long)s.st.requests, (unsigned long)s.st.status[0],
	       (unsigned long)s.st.status[1], (unsigned long)s.st.status[2],
	       (unsigned long)s.st.status[3], (unsigned long)s.st.refused_streams,
	       (unsigned long)s.st.refused_headers, (unsigned long)s.st.refused_body,
	       (unsigned long)s.st.malformed, (unsigned long)s.st.conn_errors);
	conn_drop(&s);
	gnutls_certificate_free_credentials(s.cred);
	return 0;
}
