/*
 * yip-h3serve ADDR PORT KEY CERT: yip's QUIC server (quic_server of
 * src/quic/conn.h) with the HTTP/3 decoy (src/quic/decoy.h) on every
 * connection, on one UDP socket, for tests/netns/quic_probe.sh to fetch
 * from with Debian's gtlsclient until yipd's listen_quic carries it. The
 * same pieces yipd uses, a loop of a hundred lines around them. DATAGRAM
 * frames are counted and dropped (no yip engine here). On SIGTERM it prints
 * the decoy's and the server's counters on one line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "quic/conn.h"
#include "quic/decoy.h"
#include "util/clock.h"

static volatile sig_atomic_t stop;
static uint64_t dgrams;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_dgram(void *user, struct quic_conn *c, const uint8_t *p, size_t len)
{
	(void)user;
	(void)c;
	(void)p;
	(void)len;
	dgrams++;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = malloc(65536);

	if (f == NULL || b == NULL)
		exit(1);
	*len = fread(b, 1, 65536, f);
	fclose(f);
	return b;
}

static void flush(int fd, struct quic_conn *c)
{
	uint8_t pkt[QUIC_PKT_MAX];
	size_t n;
	const union yip_sockaddr *to = quic_conn_peer(c);

	while ((n = quic_conn_write(c, pkt, sizeof(pkt), yip_now_mono())) > 0)
		(void)sendto(fd, pkt, n, 0, &to->sa,
		             to->sa.sa_family == AF_INET6 ? sizeof(to->in6) : sizeof(to->in4));
}

int main(int argc, char **argv)
{
	struct quic_decoy decoy;
	struct quic_server_config cfg;
	struct quic_server *srv;
	union yip_sockaddr local;
	char err[256];
	uint8_t pkt[65536], reply[QUIC_PKT_MAX];
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: yip-h3serve ADDR PORT KEY CERT\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	memset(&decoy, 0, sizeof(decoy));
	memset(&cfg, 0, sizeof(cfg));
	cfg.key_pem = slurp(argv[3], &cfg.key_len);
	cfg.cert_pem = slurp(argv[4], &cfg.cert_len);
	cfg.streams = &quic_decoy_handler;
	cfg.streams_arg = &decoy;
	cfg.recv = on_dgram;
	srv = quic_server_new(&cfg, err, sizeof(err));
	if (srv == NULL) {
		fprintf(stderr, "yip-h3serve: %s\n", err);
		return 1;
	}
	memset(&local, 0, sizeof(local));
	local.in4.sin_family = AF_INET;
	local.in4.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &local.in4.sin_addr) != 1)
		return 2;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, &local.sa, sizeof(local.in4)) != 0) {
		perror("yip-h3serve: bind");
		return 1;
	}
	while (!stop) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t exp = quic_server_expiry(srv), t = yip_now_mono();
		int timeout = exp <= t ? 0
		              : exp - t > 1000 * YIP_NS_PER_MS
		                  ? 1000
		                  : (int)((exp - t) / YIP_NS_PER_MS) + 1;

		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			break;
		if (pfd.revents & POLLIN) {
			union yip_sockaddr from;
			socklen_t flen = sizeof(from);
			ssize_t n = recvfrom(fd, pkt, sizeof(pkt), 0, &from.sa, &flen);
			struct quic_conn *c = NULL;
			size_t rlen = 0;

			if (n > 0) {
				decoy.wall_s = yip_now_wall() / YIP_NS_PER_S;
				quic_server_read(srv, pkt, (size_t)n, &local, &from, yip_now_mono(),
				                 &c, reply, sizeof(reply), &rlen);
				if (rlen > 0)
					(void)sendto(fd, reply, rlen, 0, &from.sa, flen);
				if (c != NULL)
					flush(fd, c);
			}
		}
		if (quic_server_expiry(srv) <= yip_now_mono()) {
			decoy.wall_s = yip_now_wall() / YIP_NS_PER_S;
			quic_server_expire(srv, yip_now_mono());
			for (struct quic_conn *c = quic_server_next(srv, NULL); c != NULL;
			     c = quic_server_next(srv, c))
				flush(fd, c);
		}
	}
	{
		const struct quic_server_stats *ss = quic_server_stats(srv);
		const struct yip_h3_stats *st = &decoy.stats;

		printf("conns %lu requests %lu 200 %lu 404 %lu 405 %lu 400 %lu refused_streams %lu "
		       "refused_headers %lu refused_body %lu malformed %lu conn_errors %lu "
		       "open_failed %lu dgrams %lu\n",
		       (unsigned long)ss->accepted, (unsigned long)st->requests,
		       (unsigned long)st->status[0], (unsigned long)st->status[1],
		       (unsigned long)st->status[2], (unsigned long)st->status[3],
		       (unsigned long)st->refused_streams, (unsigned long)st->refused_headers,
		       (unsigned long)st->refused_body, (unsigned long)st->malformed,
		       (unsigned long)st->conn_errors, (unsigned long)decoy.open_failed,
		       (unsigned long)dgrams);
	}
	quic_server_free(srv);
	free((void *)cfg.key_pem);
	free((void *)cfg.cert_pem);
	return 0;
}
