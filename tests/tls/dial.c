/*
 * yip-tls-dial: the TLS client engine (src/tls) over plain blocking TCP,
 * for the ClientHello tests (tests/netns/tls_fingerprint.sh, tls_fet.sh).
 *
 *   yip-tls-dial [-n N] [--sni NAME] [--reality PBK SID] [--ccs N]
 *                [--skew SECONDS] [--hello-out FILE] [--times] HOST PORT
 *
 * makes N connections (default 1) one after another, each a fresh engine:
 * the handshake with the server (any certificate: tls_verify_any), one
 * short application record (an HTTP GET, so that an `openssl s_server
 * -www` answers and closes), then close_notify, and it reads what the
 * server sends until it closes. --sni defaults to HOST. It exits 0 when
 * every handshake completed, and otherwise 1 with the first failure said
 * on stderr (connect, a timeout, or the engine's error and the server's
 * alert). The randomness is libcrypto's RNG.
 *
 * For the REALITY tests (tests/netns/reality_*.sh): --reality seals each
 * hello to the front's public key PBK with short id SID (src/reality) and
 * takes only the front's certificate (--skew: sealed with the clock that
 * many seconds off); --ccs sends N ChangeCipherSpec
 * records right after the hello, in the same write; --hello-out writes the first connection's
 * first record (the hello) to FILE; --times prints, per connection, the
 * milliseconds from the hello's send to the server's first byte
 * ("first_byte_ms=X").
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "crypto/crypto.h"
#include "reality/reality.h"
#include "tls/tls.h"
#include "util/clock.h"
#include "util/hex.h"

#define TIMEOUT_SECS 5

static void rng(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	if (RAND_bytes(out, (int)n) != 1)
		abort();
}

static int dial(const char *host, const char *port, char *why, size_t why_len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai, *a;
	struct timeval tv = {.tv_sec = TIMEOUT_SECS};
	int fd = -1, rc = getaddrinfo(host, port, &hints, &ai);

	if (rc != 0) {
		snprintf(why, why_len, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
			snprintf(why, why_len, "connect %s:%s: %s", host, port, strerror(errno));
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Sends what the engine holds. */
static int flush(int fd, struct tls_client *c)
{
	size_t n;
	const uint8_t *p = tls_client_out(c, &n);

	if (n > 0 && send_all(fd, p, n) != 0)
		return -1;
	tls_client_out_done(c, n);
	return 0;
}

/* Bytes read from the server and not yet handed to the engine. */
static uint8_t in_buf[TLS_REC_MAX];
static size_t in_off, in_len;

/* The options that shape a connection. */
static struct {
	bool reality, times;
	struct reality_client rc;
	long ccs, skew;
	const char *hello_out;
	uint64_t sent_at, first_at; /* the hello's send, the server's first byte */
} opt;

/*
 * Feeds the engine what the server sends until stop (an event kind) or
 * the connection ends: 0 when stop came, 1 at the server's close
 * (close_notify or EOF) before it, -1 on failure with why said. Bytes
 * after the stopping record stay for the next call.
 */
static int run_until(int fd, struct tls_client *c, enum tls_event_kind stop, char *why,
                     size_t why_len)
{
	for (;;) {
		struct tls_event ev;
		ssize_t k;

		if (in_off < in_len) {
			in_off += tls_client_recv(c, in_buf + in_off, in_len - in_off, &ev);
			if (flush(fd, c) != 0) {
				snprintf(why, why_len, "send: %s", strerror(errno));
				return -1;
			}
			if (ev.kind == TLS_EV_FAILED) {
				int n =
				    snprintf(why, why_len, "handshake: %s", tls_err_name(ev.err));

				if (ev.err == TLS_ERR_ALERT && n > 0 && (size_t)n < why_len)
					snprintf(why + n, why_len - (size_t)n, " (alert %u)",
					         ev.alert);
				return -1;
			}
			if (ev.kind == TLS_EV_CLOSED)
				return stop == TLS_EV_CLOSED ? 1 : -1;
			if (ev.kind == stop)
				return 0;
			continue;
		}
		k = recv(fd, in_buf, sizeof(in_buf), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(why, why_len, "recv: %s",
			         errno == EAGAIN ? "no answer in 5 s" : strerror(errno));
			return -1;
		}
		if (k == 0) {
			if (stop == TLS_EV_CLOSED)
				return 1;
			snprintf(why, why_len, "the server closed the connection");
			return -1;
		}
		if (opt.first_at == 0)
			opt.first_at = yip_now_mono();
		in_off = 0;
		in_len = (size_t)k;
	}
}

/* The hello out (to FILE too, once, if asked), and the CCS records after it. */
static int send_hello(int fd, struct tls_client *c)
{
	static const uint8_t ccs[] = {TLS_CT_CCS, 3, 3, 0, 1, 1};
	size_t n;
	const uint8_t *p = tls_client_out(c, &n);

	if (opt.hello_out != NULL) {
		FILE *f = fopen(opt.hello_out, "wb");

		if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
			return -1;
		opt.hello_out = NULL;
	}
	opt.sent_at = yip_now_mono();
	opt.first_at = 0;
	if (opt.ccs == 0)
		return flush(fd, c);
	/* One write: the hello and the records after it leave together. */
	{
		static uint8_t buf[TLS_OUT_BUF + 1000 * sizeof(ccs)];

		memcpy(buf, p, n);
		for (long i = 0; i < opt.ccs; i++)
			memcpy(buf + n + (size_t)i * sizeof(ccs), ccs, sizeof(ccs));
		tls_client_out_done(c, n);
		return send_all(fd, buf, n + (size_t)opt.ccs * sizeof(ccs));
	}
}

/* One connection: 0, or -1 with why said. */
static int one(const char *host, const char *port, const char *sni, char *why, size_t why_len)
{
	struct tls_client_config cfg = {.sni = sni, .rand = rng, .verify = tls_verify_any};
	char req[512];

	if (opt.reality) {
		opt.rc.unix_s = (uint32_t)((int64_t)(yip_now_wall() / YIP_NS_PER_S) + opt.skew);
		cfg.seal = reality_client_seal;
		cfg.seal_ctx = &opt.rc;
		cfg.verify = reality_client_verify;
		cfg.verify_ctx = &opt.rc;
	}
	uint8_t rec[sizeof(req) + TLS_SEAL_OVERHEAD];
	struct tls_client *c;
	int fd, rc = -1, one_ = 1;
	size_t n;

	c = tls_client_new(&cfg);
	if (c == NULL) {
		snprintf(why, why_len, "tls_client_new failed (an SNI over 255 bytes?)");
		return -1;
	}
	in_off = in_len = 0;
	fd = dial(host, port, why, why_len);
	if (fd < 0)
		goto out;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one_, sizeof(one_));
	if (send_hello(fd, c) != 0) {
		snprintf(why, why_len, "send: %s", strerror(errno));
		goto out;
	}
	if (run_until(fd, c, TLS_EV_CONNECTED, why, why_len) != 0) {
		if (opt.reality && opt.rc.spliced)
			snprintf(why, why_len, "the real site answered, not the front");
		goto out;
	}
	if (opt.times)
		printf("first_byte_ms=%.3f\n", (double)(opt.first_at - opt.sent_at) / 1e6);
	n = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", sni);
	n = tls_client_seal(c, rec, sizeof(rec), (const uint8_t *)req, n < sizeof(req) ? n : 0, 0);
	if (n == 0 || send_all(fd, rec, n) != 0) {
		snprintf(why, why_len, "sending the application record failed");
		goto out;
	}
	tls_client_close(c);
	if (flush(fd, c) != 0) {
		snprintf(why, why_len, "send: %s", strerror(errno));
		goto out;
	}
	/* What the server answers, to its close: the handshake is what counts. */
	(void)run_until(fd, c, TLS_EV_CLOSED, why, why_len);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	tls_client_free(c);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: yip-tls-dial [-n N] [--sni NAME] [--reality PBK SID] [--ccs N]\n"
	        "                    [--skew SECONDS] [--hello-out FILE] [--times] HOST PORT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *sni = NULL, *host, *port;
	char why[256];
	long count = 1;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			char *end;

			count = strtol(argv[++i], &end, 10);
			if (*end != '\0' || count < 1)
				usage();
		} else if (strcmp(argv[i], "--sni") == 0 && i + 1 < argc) {
			sni = argv[++i];
		} else if (strcmp(argv[i], "--reality") == 0 && i + 2 < argc) {
			opt.reality = true;
			if (strlen(argv[i + 1]) != 64 ||
			    yip_hex_decode(opt.rc.front_pub, 32, argv[i + 1]) != 0 ||
			    !reality_short_id_parse(opt.rc.short_id, argv[i + 2]))
				usage();
			i += 2;
		} else if (strcmp(argv[i], "--ccs") == 0 && i + 1 < argc) {
			char *end;

			opt.ccs = strtol(argv[++i], &end, 10);
			if (*end != '\0' || opt.ccs < 0 || opt.ccs > 1000)
				usage();
		} else if (strcmp(argv[i], "--skew") == 0 && i + 1 < argc) {
			char *end;

			opt.skew = strtol(argv[++i], &end, 10);
			if (*end != '\0')
				usage();
		} else if (strcmp(argv[i], "--hello-out") == 0 && i + 1 < argc) {
			opt.hello_out = argv[++i];
		} else if (strcmp(argv[i], "--times") == 0) {
			opt.times = true;
		} else {
			usage();
		}
	}
	if (argc - i != 2)
		usage();
	host = argv[i];
	port = argv[i + 1];
	if (sni == NULL)
		sni = host;
	if (yip_crypto_init() != 0)
		return 1;
	for (long k = 0; k < count; k++) {
		if (one(host, port, sni, why, sizeof(why)) != 0) {
			fprintf(stderr, "yip-tls-dial: connection %ld of %ld: %s\n", k + 1, count,
			        why);
			return 1;
		}
	}
	printf("%ld connections, %ld handshakes completed\n", count, count);
	return 0;
}
