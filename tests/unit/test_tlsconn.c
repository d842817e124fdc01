/*
 * tlslink/conn.h over real sockets on the loopback: yip's client end
 * against the OpenSSL server end with a self-signed certificate; a
 * megabyte both ways through the plaintext streams; the queue refusing
 * rather than blocking; an end that is not TLS failing cleanly.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tlslink/conn.h"

static const char *const alpn[] = {"http/1.1", NULL};

static int listener(union yip_sockaddr *a)
{
	socklen_t len = sizeof(a->in4);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, &a->sa, sizeof(a->in4)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, &a->sa, &len), 0);
	return fd;
}

/* Runs both ends' events once (each may be NULL). */
static void step(struct tls_conn *x, unsigned *bx, struct tls_conn *y, unsigned *by)
{
	struct pollfd p[2];
	struct tls_conn *c[2] = {x, y};
	unsigned *b[2] = {bx, by};
	int n = 0;

	for (int i = 0; i < 2; i++)
		if (c[i] != NULL) {
			p[n].fd = tls_conn_fd(c[i]);
			p[n].events = (short)tls_conn_events(c[i]);
			p[n].revents = 0;
			n++;
		}
	poll(p, (nfds_t)n, 50);
	for (int i = 0, k = 0; i < 2; i++)
		if (c[i] != NULL) {
			*b[i] |= tls_conn_handle(c[i], (uint32_t)p[k].revents);
			k++;
		}
}

struct pair {
	struct tls_server_ctx *srv;
	struct tls_conn *cli, *s;
	int lfd;
};

static void pair_open(struct pair *pr)
{
	struct tls_ctx_config sc = {.self_name = "host.example", .alpn = alpn};
	struct tls_dial_config dc = {.sni = "www.example.com", .pad_records = 4, .pad_max = 200};
	union yip_sockaddr a;
	char err[256];
	unsigned bc = 0, bs = 0;

	pr->srv = tls_server_ctx_new(&sc, err, sizeof(err));
	assert_non_null(pr->srv);
	pr->lfd = listener(&a);
	pr->cli = tls_conn_dial(&a, &dc, err, sizeof(err));
	assert_non_null(pr->cli);
	pr->s = NULL;
	for (int i = 0; i < 200 && !((bc & TLS_CONN_OPENED) && (bs & TLS_CONN_OPENED)); i++) {
		if (pr->s == NULL) {
			union yip_sockaddr from;
			socklen_t fl = sizeof(from);
			int fd = accept4(pr->lfd, &from.sa, &fl, SOCK_NONBLOCK);

			if (fd >= 0)
				pr->s = tls_conn_accept(pr->srv, fd, &from);
		}
		step(pr->cli, &bc, pr->s, &bs);
	}
	assert_true(bc & TLS_CONN_OPENED);
	assert_true(bs & TLS_CONN_OPENED);
}

static void pair_close(struct pair *pr)
{
	tls_conn_free(pr->cli);
	tls_conn_free(pr->s);
	tls_server_ctx_free(pr->srv);
	close(pr->lfd);
}

static void test_handshake_info(void **state)
{
	struct pair pr;
	struct tls_conn_info ci, si;

	(void)state;
	pair_open(&pr);
	tls_conn_info(pr.cli, &ci);
	tls_conn_info(pr.s, &si);
	assert_string_equal(ci.version, "TLSv1.3");
	assert_string_equal(si.version, "TLSv1.3");
	assert_string_equal(ci.sni, "www.example.com");
	assert_string_equal(si.sni, "www.example.com");
	assert_string_equal(ci.alpn, "http/1.1");
	assert_string_equal(si.alpn, "http/1.1");
	assert_string_equal(ci.cipher, si.cipher);
	assert_true(si.server);
	assert_false(ci.server);
	pair_close(&pr);
}

/* Sends len pseudo-random bytes from a to b, reading them back in order. */
static void transfer(struct tls_conn *a, struct tls_conn *b, size_t len)
{
	static uint8_t buf[20000], got[20000];
	size_t sent = 0, recvd = 0;
	uint32_t x = 12345, y = 12345;
	unsigned ba = 0, bb = 0;

	for (int rounds = 0; recvd < len && rounds < 100000; rounds++) {
		while (sent < len) {
			size_t n = len - sent < 3000 ? len - sent : 3000;

			if (tls_conn_room(a) < n)
				break;
			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
			assert_true(tls_conn_write(a, buf, n));
			sent += n;
		}
		step(a, &ba, b, &bb);
		size_t n;

		while ((n = tls_conn_read(b, got, sizeof(got))) > 0) {
			for (size_t i = 0; i < n; i++)
				assert_int_equal(got[i],
				                 (uint8_t)((y = y * 1103515245u + 12345u) >> 24));
			recvd += n;
		}
		assert_int_not_equal(tls_conn_state(a), TLS_CONN_DONE);
		assert_int_not_equal(tls_conn_state(b), TLS_CONN_DONE);
	}
	assert_int_equal(recvd, len);
}

static void test_megabyte_both_ways(void **state)
{
	struct pair pr;

	(void)state;
	pair_open(&pr);
	transfer(pr.cli, pr.s, 1 << 20);
	transfer(pr.s, pr.cli, 1 << 20);
	assert_true(tls_conn_stats(pr.cli)->records_out > 64);
	pair_close(&pr);
}

static void test_full_queue_refuses(void **state)
{
	struct pair pr;
	static uint8_t buf[16384];
	unsigned refused = 0;

	(void)state;
	pair_open(&pr);
	/* Nobody reads the server end: the socket fills, then the queue. */
	for (int i = 0; i < 4000 && refused == 0; i++)
		if (!tls_conn_write(pr.cli, buf, sizeof(buf)))
			refused++;
	assert_int_equal(refused, 1);
	assert_int_equal(tls_conn_stats(pr.cli)->refused, 1);
	assert_int_equal(tls_conn_state(pr.cli), TLS_CONN_OPEN);
	assert_int_equal(tls_conn_room(pr.cli), 0);
	pair_close(&pr);
}

static void test_not_tls_fails(void **state)
{
	struct tls_ctx_config sc = {.alpn = alpn};
	char err[256];
	struct tls_server_ctx *srv = tls_server_ctx_new(&sc, err, sizeof(err));
	int sv[2];
	union yip_sockaddr from = {0};
	struct tls_conn *s;
	unsigned bits = 0;
	const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

	(void)state;
	assert_non_null(srv);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	s = tls_conn_accept(srv, sv[0], &from);
	assert_non_null(s);
	assert_int_equal(write(sv[1], junk, sizeof(junk) - 1), (ssize_t)sizeof(junk) - 1);
	for (int i = 0; i < 20 && !(bits & TLS_CONN_ENDED); i++)
		bits |= tls_conn_handle(s, EPOLLIN);
	assert_true(bits & TLS_CONN_ENDED);
	assert_non_null(tls_conn_why(s));
	assert_memory_equal(tls_conn_why(s), "tls: ", 5);
	tls_conn_free(s);
	close(sv[1]);
	tls_server_ctx_free(srv);
}

/* Moves what is waiting from one socket to the other; each record header
 * seen in the client's bytes (at *off into the stream) has its length noted. */
static void pump(int from, int to, bool client, size_t *off, size_t *lens, size_t *n_lens,
                 uint8_t *hdr, size_t *hdr_have)
{
	uint8_t buf[8192];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; client && i < n; i++) {
			if (*off == 0) {
				hdr[(*hdr_have)++] = buf[i];
				if (*hdr_have == 5) {
					*off = (size_t)(hdr[3] << 8 | hdr[4]);
					if (hdr[0] == 23 && *n_lens < 64)
						lens[(*n_lens)++] = *off;
					*hdr_have = 0;
				}
			} else {
				(*off)--;
			}
		}
		assert_int_equal(write(to, buf, (size_t)n), n);
	}
}

/* The first records a dialer writes are padded at random: the same four
 * writes in fresh connections make records of many sizes. */
static void test_first_records_padded(void **state)
{
	struct tls_ctx_config sc = {.alpn = alpn};
	struct tls_dial_config dc = {.pad_records = 4, .pad_max = 255};
	char err[256];
	struct tls_server_ctx *srv = tls_server_ctx_new(&sc, err, sizeof(err));
	size_t sizes[4][16];
	unsigned distinct[4] = {0};

	(void)state;
	assert_non_null(srv);
	for (int conn = 0; conn < 16; conn++) {
		union yip_sockaddr a, from;
		int lfd = listener(&a), x = -1, sv[2];
		struct tls_conn *cli = tls_conn_dial(&a, &dc, err, sizeof(err)), *s = NULL;
		size_t lens[64], n_lens = 0, off = 0, hdr_have = 0, sink = 0, sink_h = 0;
		uint8_t hdr[5], h2[5];
		unsigned bc = 0, bs = 0, writes = 0;
		static const uint8_t msg[148] = {1};

		assert_non_null(cli);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		/* The first protected record is the client's Finished (53 bytes, as a
		 * browser's): the four after it are the writes. */
		for (int i = 0; i < 400 && n_lens < 5; i++) {
			if (x < 0) {
				socklen_t fl = sizeof(from);

				x = accept4(lfd, &from.sa, &fl, SOCK_NONBLOCK);
				if (x >= 0)
					s = tls_conn_accept(srv, sv[0], &from);
			}
			step(cli, &bc, s, &bs);
			if (x >= 0) {
				pump(x, sv[1], true, &off, lens, &n_lens, hdr, &hdr_have);
				pump(sv[1], x, false, &sink, NULL, NULL, h2, &sink_h);
			}
			if ((bc & TLS_CONN_OPENED) && writes < 4 && n_lens == 1 + writes) {
				assert_true(tls_conn_write(cli, msg, sizeof(msg)));
				writes++;
			}
		}
		assert_true(n_lens >= 5);
		assert_int_equal(lens[0], 53);
		for (int k = 0; k < 4; k++)
			sizes[k][conn] = lens[1 + k];
		tls_conn_free(cli);
		tls_conn_free(s);
		close(x);
		close(sv[1]);
		close(lfd);
	}
	for (int k = 0; k < 4; k++)
		for (int c = 0; c < 16; c++) {
			bool seen = false;

			for (int j = 0; j < c; j++)
				seen |= sizes[k][j] == sizes[k][c];
			distinct[k] += !seen;
		}
	/* 16 draws of 256 pad lengths: almost surely >= 10 distinct sizes per record. */
	for (int k = 0; k < 4; k++)
		assert_true(distinct[k] >= 10);
	tls_server_ctx_free(srv);
}

static void test_bad_key_file(void **state)
{
	struct tls_ctx_config sc = {.cert_path = "/nonexistent.pem", .key_path = NULL};
	char err[256] = "";

	(void)state;
	assert_null(tls_server_ctx_new(&sc, err, sizeof(err)));
	assert_true(strlen(err) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_handshake_info),       cmocka_unit_test(test_megabyte_both_ways),
	    cmocka_unit_test(test_full_queue_refuses),   cmocka_unit_test(test_not_tls_fails),
	    cmocka_unit_test(test_first_records_padded), cmocka_unit_test(test_bad_key_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
