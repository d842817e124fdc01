/* One TLS connection over TCP, either end (conn.h). */
#include "tlslink/conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls/server.h"
#include "tls/tls.h"
#include "util/clock.h"
#include "util/log.h"

/* Raw bytes read from the socket and not yet taken by the TLS end. */
#define RAW_BUF (2 * TLS_REC_MAX)
/* The queue's memory: from OUT_FIRST, doubled as needed up to OUT_CAP
 * (TLS_CONN_OUT_MAX and room for one whole record past it). */
#define OUT_FIRST (64 * 1024 + TLS_REC_MAX)
#define OUT_CAP   (TLS_CONN_OUT_MAX + TLS_REC_MAX)
/* When bytes were queued: a mark per millisecond at most. */
#define MARKS   64
#define WHY_LEN 160

struct tls_server_ctx {
	SSL_CTX *ctx;
	const char *const *alpn;
};

struct tls_conn {
	int fd;
	enum tls_conn_state state;
	bool server;
	bool closing; /* close once the queue is out */
	union yip_sockaddr peer;
	/* The client end: yip's engine, fed from raw; the record it last
	 * opened waits in plain (plain_len bytes from plain_off). An adopted
	 * server end (tls_conn_adopt) is yip's server engine, own, in cli's
	 * place: the same calls, made by the eng_ functions below. */
	struct tls_client *cli;
	struct tls_server *own;
	const uint8_t *plain;
	size_t plain_off, plain_len;
	size_t raw_off, raw_len;
	unsigned pad_left, pad_max;
	char sni[256];
	bool reality;
	struct reality_client rc; /* a REALITY dial's seal and keys */
	/* The server end: OpenSSL reads the socket, writes into wbio. */
	SSL *ssl;
	BIO *wbio;
	bool ssl_data; /* the socket was readable: SSL_read may have bytes */
	uint8_t *out;  /* the queue: out_len bytes from out_off, of out_cap */
	size_t out_off, out_len, out_cap;
	/* Sojourn: bytes queued and sent in all, and when the queue's bytes
	 * came (mark[i]: bytes up to end were queued by at). */
	uint64_t q_in, q_out;
	struct {
		uint64_t end, at;
	} mark[MARKS];
	unsigned mark_head, n_marks;
	char why[WHY_LEN];
	struct tls_conn_stats stats;
	uint8_t raw[RAW_BUF]; /* client end only */
};

/* ---- the server's context ---------------------------------------------------------- */

static void rand_bytes(void *ctx, uint8_t *out, size_t n);

int tls_conn_init(void)
{
	struct tls_client_config tc = {.rand = rand_bytes, .verify = tls_verify_any};
	struct tls_client *c;

	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1)
		return -1;
	/* A ClientHello built once: the key shares' algorithms are loaded. */
	c = tls_client_new(&tc);
	if (c == NULL)
		return -1;
	tls_client_free(c);
	return 0;
}

static void ssl_error(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[160];

	ERR_error_string_n(e, buf, sizeof(buf));
	snprintf(err, errlen, "%s: %s", what, e ? buf : "failed");
	ERR_clear_error();
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
	const struct tls_server_ctx *s = arg;

	(void)ssl;
	/* The server's preference: the first of its list the client offered. */
	for (size_t k = 0; s->alpn != NULL && s->alpn[k] != NULL; k++) {
		size_t n = strlen(s->alpn[k]);

		for (unsigned i = 0; i < inlen; i += 1u + in[i]) {
			if (i + 1u + in[i] > inlen)
				break;
			if (in[i] == n && memcmp(in + i + 1, s->alpn[k], n) == 0) {
				*out = in + i + 1;
				*outlen = in[i];
				return SSL_TLSEXT_ERR_OK;
			}
		}
	}
	return SSL_TLSEXT_ERR_NOACK;
}

/* A self-signed certificate for name, as Debian's ssl-cert makes its
 * "snakeoil" one: RSA 2048, CN and subjectAltName the host name, ten years. */
static int self_signed(SSL_CTX *ctx, const char *name, char *err, size_t errlen)
{
	EVP_PKEY *key = EVP_RSA_gen(2048);
	X509 *x = X509_new();
	X509_NAME *subj;
	X509_EXTENSION *ext = NULL;
	ASN1_INTEGER *serial;
	uint8_t sn[16];
	BIGNUM *bn = NULL;
	char san[300];
	int ok = 0;

	if (key == NULL || x == NULL)
		goto out;
	randombytes_buf(sn, sizeof(sn));
	sn[0] &= 0x7f;
	bn = BN_bin2bn(sn, sizeof(sn), NULL);
	serial = X509_get_serialNumber(x);
	if (bn == NULL || BN_to_ASN1_INTEGER(bn, serial) == NULL)
		goto out;
	X509_set_version(x, 2);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600);
	subj = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC, (const unsigned char *)name, -1, -1,
	                           0);
	X509_set_issuer_name(x, subj);
	X509_set_pubkey(x, key);
	snprintf(san, sizeof(san), "DNS:%s", name);
	ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
	if (ext == NULL || !X509_add_ext(x, ext, -1))
		goto out;
	if (!X509_sign(x, key, EVP_sha256()) || SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, key) != 1)
		goto out;
	ok = 1;
out:
	if (!ok)
		ssl_error(err, errlen, "a self-signed certificate");
	X509_EXTENSION_free(ext);
	BN_free(bn);
	X509_free(x);
	EVP_PKEY_free(key);
	return ok ? 0 : -1;
}

struct tls_server_ctx *tls_server_ctx_new(const struct tls_ctx_config *cfg, char *err,
                                          size_t errlen)
{
	struct tls_server_ctx *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->alpn = cfg->alpn;
	s->ctx = SSL_CTX_new(TLS_server_method());
	if (s->ctx == NULL) {
		ssl_error(err, errlen, "SSL_CTX_new");
		goto fail;
	}
	/* What a web server accepts: TLS 1.2 and 1.3 (yip's own clients speak 1.3). */
	SSL_CTX_set_min_proto_version(s->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(s->ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(s->ctx, SSL_MODE_RELEASE_BUFFERS);
	if (cfg->cert_path != NULL || cfg->key_path != NULL) {
		if (cfg->cert_path == NULL || cfg->key_path == NULL) {
			snprintf(err, errlen,
			         "a certificate needs its key, and a key its certificate");
			goto fail;
		}
		if (SSL_CTX_use_certificate_chain_file(s->ctx, cfg->cert_path) != 1) {
			ssl_error(err, errlen, cfg->cert_path);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(s->ctx, cfg->key_path, SSL_FILETYPE_PEM) != 1) {
			ssl_error(err, errlen, cfg->key_path);
			goto fail;
		}
		if (SSL_CTX_check_private_key(s->ctx) != 1) {
			snprintf(err, errlen, "%s does not hold the key of %s", cfg->key_path,
			         cfg->cert_path);
			goto fail;
		}
	} else if (self_signed(s->ctx, cfg->self_name ? cfg->self_name : "localhost", err,
	                       errlen) != 0) {
		goto fail;
	}
	if (cfg->alpn != NULL)
		SSL_CTX_set_alpn_select_cb(s->ctx, alpn_select, s);
	return s;
fail:
	tls_server_ctx_free(s);
	return NULL;
}

void tls_server_ctx_free(struct tls_server_ctx *s)
{
	if (s == NULL)
		return;
	SSL_CTX_free(s->ctx);
	free(s);
}

/* ---- common ------------------------------------------------------------------------ */

/* Ends the connection: why is what, and arg its detail ("" for none). */
static void end(struct tls_conn *c, const char *what, const char *arg)
{
	if (c->state == TLS_CONN_DONE)
		return;
	c->state = TLS_CONN_DONE;
	snprintf(c->why, sizeof(c->why), "%s%s", what, arg);
}

static bool cc_warned;

static void sock_setup(int fd)
{
	int one = 1, lowat = TLS_CONN_NOTSENT_LOWAT;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
	/* BBR where the kernel has it and allows it; the system's default
	 * otherwise, said once: on a lossy path that carries far less. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, TLS_CONN_CC, sizeof(TLS_CONN_CC) - 1) !=
	        0 &&
	    !cc_warned) {
		cc_warned = true;
		log_warn(
		    "tls: the kernel refuses congestion control %s (%s; see "
		    "net.ipv4.tcp_allowed_congestion_control): TLS links use the default, which "
		    "carries far less on a lossy path (docs/transports.md)",
		    TLS_CONN_CC, strerror(errno));
	}
}

static size_t out_free(const struct tls_conn *c)
{
	return c->out_cap - c->out_off - c->out_len;
}

/* Where the next record goes: room for one whole record, if the queue may
 * grow that far (else what room there is). */
static uint8_t *out_tail(struct tls_conn *c)
{
	if (c->out_off > 0 && out_free(c) < TLS_REC_MAX) {
		memmove(c->out, c->out + c->out_off, c->out_len);
		c->out_off = 0;
	}
	if (out_free(c) < TLS_REC_MAX && c->out_cap < OUT_CAP) {
		size_t cap = c->out_cap * 2 < OUT_CAP ? c->out_cap * 2 : OUT_CAP;
		uint8_t *o = realloc(c->out, cap);

		if (o != NULL) {
			c->out = o;
			c->out_cap = cap;
		}
	}
	return c->out + c->out_off + c->out_len;
}

/* ---- yip's engine, either end ---- */

static const uint8_t *eng_out(const struct tls_conn *c, size_t *len)
{
	return c->own != NULL ? tls_server_out(c->own, len) : tls_client_out(c->cli, len);
}

static void eng_out_done(struct tls_conn *c, size_t n)
{
	if (c->own != NULL)
		tls_server_out_done(c->own, n);
	else
		tls_client_out_done(c->cli, n);
}

static size_t eng_recv(struct tls_conn *c, const uint8_t *in, size_t len, struct tls_event *ev)
{
	return c->own != NULL ? tls_server_recv(c->own, in, len, ev)
	                      : tls_client_recv(c->cli, in, len, ev);
}

static size_t eng_seal(struct tls_conn *c, uint8_t *out, size_t cap, const uint8_t *p, size_t n,
                       size_t pad)
{
	return c->own != NULL ? tls_server_seal(c->own, out, cap, p, n, pad)
	                      : tls_client_seal(c->cli, out, cap, p, n, pad);
}

static void eng_close(struct tls_conn *c)
{
	if (c->own != NULL)
		tls_server_close(c->own);
	else
		tls_client_close(c->cli);
}

/* A connection with its first queue memory, or NULL. */
static struct tls_conn *conn_new(void)
{
	struct tls_conn *c = calloc(1, sizeof(*c));

	if (c != NULL && (c->out = malloc(OUT_FIRST)) == NULL) {
		free(c);
		return NULL;
	}
	if (c != NULL)
		c->out_cap = OUT_FIRST;
	return c;
}

/* n bytes were added to the queue. */
static void queued(struct tls_conn *c, size_t n)
{
	uint64_t now = yip_now_mono();
	unsigned last = (c->mark_head + c->n_marks - 1) % MARKS;

	c->out_len += n;
	c->q_in += n;
	if (c->out_len > c->stats.queue_max)
		c->stats.queue_max = c->out_len;
	if (c->n_marks > 0 && (now - c->mark[last].at < 1000000 || c->n_marks == MARKS)) {
		c->mark[last].end = c->q_in;
		return;
	}
	last = (c->mark_head + c->n_marks) % MARKS;
	c->mark[last].end = c->q_in;
	c->mark[last].at = now;
	c->n_marks++;
}

/* How long the oldest byte still queued has waited, ns. */
static uint64_t sojourn(const struct tls_conn *c)
{
	return c->n_marks > 0 && c->out_len > 0 ? yip_now_mono() - c->mark[c->mark_head].at : 0;
}

/* Moves what the TLS end has to send into the queue. */
static void collect(struct tls_conn *c)
{
	if (c->server) {
		size_t n;

		while (BIO_ctrl_pending(c->wbio) > 0) {
			uint8_t *t = out_tail(c);
			size_t room = out_free(c);

			if (room == 0)
				break;
			n = (size_t)BIO_read(c->wbio, t,
			                     (int)(room < INT32_MAX ? room : INT32_MAX));
			if (n == 0 || n > room)
				break;
			queued(c, n);
		}
	} else {
		size_t len;
		const uint8_t *p = eng_out(c, &len);

		if (len > 0) {
			uint8_t *t = out_tail(c);

			if (len <= out_free(c)) {
				memcpy(t, p, len);
				queued(c, len);
				eng_out_done(c, len);
			}
		}
	}
}

/* Writes the queue to the socket as far as it takes it. */
static void push(struct tls_conn *c)
{
	while (c->out_len > 0 && c->state != TLS_CONN_DONE && c->state != TLS_CONN_TCP) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				end(c, "reset: ", strerror(errno));
			break;
		}
		c->out_off += (size_t)n;
		c->out_len -= (size_t)n;
		c->q_out += (size_t)n;
		while (c->n_marks > 0 && c->mark[c->mark_head].end <= c->q_out) {
			c->mark_head = (c->mark_head + 1) % MARKS;
			c->n_marks--;
		}
	}
	if (c->out_len == 0)
		c->out_off = 0;
	if (c->closing && c->out_len == 0)
		end(c, "closed", "");
}

/* ---- the client end ---------------------------------------------------------------- */

static const char *cipher_name(uint16_t suite)
{
	switch (suite) {
	case 0x1301:
		return "TLS_AES_128_GCM_SHA256";
	case 0x1302:
		return "TLS_AES_256_GCM_SHA384";
	case 0x1303:
		return "TLS_CHACHA20_POLY1305_SHA256";
	default:
		return "?";
	}
}

static void rand_bytes(void *ctx, uint8_t *out, size_t n)
{
	(void)ctx;
	randombytes_buf(out, n);
}

struct tls_conn *tls_conn_dial(const union yip_sockaddr *to, const struct tls_dial_config *cfg,
                               char *err, size_t errlen)
{
	struct tls_conn *c = conn_new();
	struct tls_client_config tc = {.rand = rand_bytes, .verify = tls_verify_any};
	socklen_t alen = to->sa.sa_family == AF_INET6 ? sizeof(to->in6) : sizeof(to->in4);

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->peer = *to;
	if (cfg->sni != NULL)
		snprintf(c->sni, sizeof(c->sni), "%s", cfg->sni);
	c->pad_left = cfg->pad_records;
	c->pad_max = cfg->pad_max;
	tc.sni = cfg->sni != NULL ? c->sni : NULL;
	if (cfg->reality) {
		c->reality = true;
		memcpy(c->rc.front_pub, cfg->front_pub, sizeof(c->rc.front_pub));
		memcpy(c->rc.short_id, cfg->short_id, sizeof(c->rc.short_id));
		c->rc.unix_s = (uint32_t)(yip_now_wall() / YIP_NS_PER_S);
		tc.seal = reality_client_seal;
		tc.seal_ctx = &c->rc;
		tc.verify = reality_client_verify;
		tc.verify_ctx = &c->rc;
	}
	c->cli = tls_client_new(&tc);
	c->fd = socket(to->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->cli == NULL || c->fd < 0) {
		snprintf(err, errlen, "%s", c->fd < 0 ? strerror(errno) : "out of memory");
		goto fail;
	}
	sock_setup(c->fd);
	c->state = TLS_CONN_TCP;
	if (connect(c->fd, &to->sa, alen) != 0 && errno != EINPROGRESS) {
		snprintf(err, errlen, "connect: %s", strerror(errno));
		goto fail;
	}
	collect(c); /* the ClientHello, sent once the connect completes */
	return c;
fail:
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	tls_client_free(c->cli);
	free(c->out);
	free(c);
	return NULL;
}

/* Takes records from raw until one holds plaintext (left in c->plain) or
 * none is whole; what the engine answers goes to the queue. */
static unsigned client_records(struct tls_conn *c)
{
	unsigned bits = 0;

	while (c->plain_len == 0 && c->raw_len > 0 && c->state != TLS_CONN_DONE) {
		struct tls_event ev;
		size_t n = eng_recv(c, c->raw + c->raw_off, c->raw_len, &ev);

		c->raw_off += n;
		c->raw_len -= n;
		collect(c);
		switch (ev.kind) {
		case TLS_EV_CONNECTED:
			c->state = TLS_CONN_OPEN;
			bits |= TLS_CONN_OPENED;
			if (c->reality)
				reality_client_wipe(&c->rc); /* the seal's keys are spent */
			break;
		case TLS_EV_DATA:
			c->plain = ev.data;
			c->plain_off = 0;
			c->plain_len = ev.len;
			c->stats.records_in++;
			break;
		case TLS_EV_CLOSED:
			end(c, "closed", "");
			break;
		case TLS_EV_FAILED:
			push(c); /* the alert, if one waits */
			if (c->reality && ev.err == TLS_ERR_CERT && c->rc.spliced)
				end(c,
				    "reality: the real site answered, not the front (a wrong pbk "
				    "or "
				    "sid, clocks over 2 minutes apart, or someone in the way)",
				    "");
			else
				end(c, "tls: ", tls_err_name(ev.err));
			break;
		case TLS_EV_NONE:
			if (n == 0)
				return bits; /* a record is not whole yet */
			break;
		}
	}
	if (c->raw_len == 0)
		c->raw_off = 0;
	return bits;
}

static unsigned client_handle(struct tls_conn *c, uint32_t events)
{
	unsigned bits = 0;

	if (c->state == TLS_CONN_TCP) {
		int e = 0;
		socklen_t el = sizeof(e);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return 0;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
			e = errno;
		if (e != 0) {
			end(c, "connect: ", strerror(e));
			return TLS_CONN_ENDED;
		}
		c->state = TLS_CONN_HANDSHAKE;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (c->raw_off > 0 && c->raw_len > 0 && c->raw_off + c->raw_len > RAW_BUF / 2) {
			memmove(c->raw, c->raw + c->raw_off, c->raw_len);
			c->raw_off = 0;
		}
		while (c->raw_off + c->raw_len < RAW_BUF && c->state != TLS_CONN_DONE) {
			size_t room = RAW_BUF - c->raw_off - c->raw_len;
			ssize_t n = recv(c->fd, c->raw + c->raw_off + c->raw_len, room, 0);

			if (n > 0) {
				c->raw_len += (size_t)n;
				if ((size_t)n < room)
					break;
				continue;
			}
			if (n == 0)
				end(c, c->state == TLS_CONN_OPEN ? "closed" : "tls: eof", "");
			else if (errno == EINTR)
				continue;
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				end(c, "reset: ", strerror(errno));
			break;
		}
	}
	bits |= client_records(c);
	push(c);
	return bits;
}

/* ---- the server end ---------------------------------------------------------------- */

struct tls_conn *tls_conn_accept(struct tls_server_ctx *srv, int fd, const union yip_sockaddr *from)
{
	struct tls_conn *c = conn_new();
	BIO *rbio = NULL;

	if (c == NULL) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->server = true;
	c->peer = *from;
	c->state = TLS_CONN_HANDSHAKE;
	sock_setup(fd);
	c->ssl = SSL_new(srv->ctx);
	rbio = BIO_new_socket(fd, BIO_NOCLOSE);
	c->wbio = BIO_new(BIO_s_mem());
	if (c->ssl == NULL || rbio == NULL || c->wbio == NULL) {
		BIO_free(rbio);
		BIO_free(c->wbio);
		SSL_free(c->ssl);
		close(fd);
		free(c->out);
		free(c);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_bio(c->ssl, rbio, c->wbio);
	SSL_set_accept_state(c->ssl);
	return c;
}

struct tls_conn *tls_conn_adopt(int fd, const union yip_sockaddr *from, struct tls_server *own,
                                const struct tls_adopt_config *cfg)
{
	struct tls_conn *c = conn_new();
	struct tls_server_info si;

	tls_server_info(own, &si);
	if (c == NULL || !si.connected || cfg->raw_len > RAW_BUF) {
		tls_server_free(own);
		close(fd);
		if (c != NULL)
			free(c->out);
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->own = own;
	c->peer = *from;
	c->state = TLS_CONN_OPEN;
	c->pad_left = cfg->pad_records;
	c->pad_max = cfg->pad_max;
	if (cfg->sni != NULL)
		snprintf(c->sni, sizeof(c->sni), "%s", cfg->sni);
	sock_setup(fd);
	memcpy(c->raw, cfg->raw, cfg->raw_len);
	c->raw_len = cfg->raw_len;
	if (cfg->out_len > 0) {
		uint8_t *t = out_tail(c);

		memcpy(t, cfg->out, cfg->out_len <= out_free(c) ? cfg->out_len : out_free(c));
		queued(c, cfg->out_len <= out_free(c) ? cfg->out_len : out_free(c));
	}
	collect(c);
	push(c);
	return c;
}

static void ssl_fail(struct tls_conn *c, int r)
{
	int e = SSL_get_error(c->ssl, r);
	unsigned long code = ERR_peek_error();

	if (e == SSL_ERROR_ZERO_RETURN) {
		end(c, "closed", "");
	} else if (e == SSL_ERROR_SYSCALL && code == 0) {
		end(c, c->state == TLS_CONN_OPEN ? "closed" : "tls: eof", "");
	} else {
		const char *reason = code ? ERR_reason_error_string(code) : NULL;

		end(c, "tls: ", reason ? reason : "failed");
	}
	ERR_clear_error();
}

static unsigned server_handle(struct tls_conn *c, uint32_t events)
{
	unsigned bits = 0;

	if (c->state == TLS_CONN_HANDSHAKE) {
		int r = SSL_do_handshake(c->ssl);

		if (r == 1) {
			c->state = TLS_CONN_OPEN;
			bits |= TLS_CONN_OPENED;
			c->ssl_data = true;
		} else {
			int e = SSL_get_error(c->ssl, r);

			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
				collect(c); /* the alert */
				push(c);
				ssl_fail(c, r);
			}
		}
	} else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		c->ssl_data = true;
	}
	collect(c);
	push(c);
	if (c->state == TLS_CONN_OPEN && (c->ssl_data || SSL_has_pending(c->ssl)))
		bits |= TLS_CONN_DATA;
	return bits;
}

/* ---- the interface ------------------------------------------------------------------ */

void tls_conn_free(struct tls_conn *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	tls_client_free(c->cli);
	tls_server_free(c->own);
	SSL_free(c->ssl); /* frees both BIOs */
	sodium_memzero(c->out, c->out_cap);
	free(c->out);
	sodium_memzero(c, sizeof(*c));
	free(c);
}

int tls_conn_fd(const struct tls_conn *c)
{
	return c->fd;
}

enum tls_conn_state tls_conn_state(const struct tls_conn *c)
{
	return c->state;
}

uint32_t tls_conn_events(const struct tls_conn *c)
{
	if (c->state == TLS_CONN_DONE)
		return 0;
	if (c->state == TLS_CONN_TCP)
		return EPOLLOUT;
	return EPOLLIN | (c->out_len > 0 ? EPOLLOUT : 0u);
}

unsigned tls_conn_handle(struct tls_conn *c, uint32_t events)
{
	unsigned bits;

	if (c->state == TLS_CONN_DONE)
		return TLS_CONN_ENDED;
	bits = c->server ? server_handle(c, events) : client_handle(c, events);
	if (c->state == TLS_CONN_OPEN && !c->server && c->plain_len > 0)
		bits |= TLS_CONN_DATA;
	if (c->state == TLS_CONN_DONE)
		bits = (bits & ~TLS_CONN_DATA) | TLS_CONN_ENDED;
	return bits;
}

size_t tls_conn_read(struct tls_conn *c, uint8_t *buf, size_t cap)
{
	size_t got = 0;

	if (c->state != TLS_CONN_OPEN)
		return 0;
	if (c->server) {
		while (got < cap && c->state == TLS_CONN_OPEN) {
			int want = (int)(cap - got < INT32_MAX ? cap - got : INT32_MAX);
			int r = SSL_read(c->ssl, buf + got, want);

			if (r > 0) {
				got += (size_t)r;
				c->stats.records_in++;
				continue;
			}
			if (SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_READ)
				c->ssl_data = false;
			else
				ssl_fail(c, r);
			break;
		}
		collect(c); /* a KeyUpdate answer, an alert */
		push(c);
	} else {
		while (got < cap) {
			size_t n;

			if (c->plain_len == 0 && client_records(c) == 0 && c->plain_len == 0)
				break;
			n = c->plain_len < cap - got ? c->plain_len : cap - got;
			memcpy(buf + got, c->plain + c->plain_off, n);
			c->plain_off += n;
			c->plain_len -= n;
			got += n;
		}
		push(c);
	}
	c->stats.bytes_in += got;
	return got;
}

size_t tls_conn_room(const struct tls_conn *c)
{
	size_t used = c->out_len;

	if (c->state != TLS_CONN_OPEN || c->closing || used >= TLS_CONN_OUT_MAX ||
	    sojourn(c) > TLS_CONN_SOJOURN)
		return 0;
	return TLS_CONN_OUT_MAX - used < TLS_REC_PLAIN ? TLS_CONN_OUT_MAX - used : TLS_REC_PLAIN;
}

/* The records len bytes make, with their overhead, at most. */
static size_t sealed_size(const struct tls_conn *c, size_t len)
{
	size_t recs = (len + TLS_REC_PLAIN - 1) / TLS_REC_PLAIN;

	return len + recs * (TLS_SEAL_OVERHEAD + (c->pad_left ? c->pad_max : 0) + 32);
}

bool tls_conn_write(struct tls_conn *c, const uint8_t *p, size_t len)
{
	if (c->state != TLS_CONN_OPEN || c->closing ||
	    c->out_len + sealed_size(c, len) > TLS_CONN_OUT_MAX + TLS_REC_MAX ||
	    sojourn(c) > TLS_CONN_SOJOURN) {
		c->stats.refused++;
		return false;
	}
	while (len > 0) {
		size_t n = len < TLS_REC_PLAIN ? len : TLS_REC_PLAIN;

		if (c->server) {
			if (SSL_write(c->ssl, p, (int)n) != (int)n) {
				ssl_fail(c, -1);
				return false;
			}
			collect(c);
		} else {
			size_t pad = 0, w;
			uint8_t *t;

			if (c->pad_left > 0) {
				pad = randombytes_uniform(c->pad_max + 1);
				if (n + pad > TLS_REC_PLAIN)
					pad = TLS_REC_PLAIN - n;
				c->pad_left--;
			}
			t = out_tail(c);
			w = eng_seal(c, t, out_free(c), p, n, pad);
			if (w == 0) {
				end(c, "tls: cannot seal", "");
				return false;
			}
			queued(c, w);
		}
		c->stats.records_out++;
		c->stats.bytes_out += n;
		p += n;
		len -= n;
	}
	push(c);
	return c->state == TLS_CONN_OPEN;
}

void tls_conn_close(struct tls_conn *c)
{
	if (c->state == TLS_CONN_DONE)
		return;
	if (c->state == TLS_CONN_OPEN) {
		if (c->server)
			SSL_shutdown(c->ssl);
		else
			eng_close(c);
		collect(c);
	}
	c->closing = true;
	push(c);
	if (c->state != TLS_CONN_OPEN && c->state != TLS_CONN_DONE)
		end(c, "closed", "");
}

const char *tls_conn_why(const struct tls_conn *c)
{
	return c->state == TLS_CONN_DONE ? c->why : NULL;
}

const union yip_sockaddr *tls_conn_peer(const struct tls_conn *c)
{
	return &c->peer;
}

/* The name of an ALPN protocol the server end may select (from its list). */
static const char *alpn_name(const uint8_t *a, size_t len)
{
	if (len == 0)
		return NULL;
	if (len == 8 && memcmp(a, "http/1.1", 8) == 0)
		return "http/1.1";
	return len == 2 && memcmp(a, "h2", 2) == 0 ? "h2" : "?";
}

void tls_conn_info(const struct tls_conn *c, struct tls_conn_info *out)
{
	*out = (struct tls_conn_info){.server = c->server || c->own != NULL};
	if (c->state != TLS_CONN_OPEN)
		return;
	if (c->own != NULL) {
		struct tls_server_info si;

		tls_server_info(c->own, &si);
		out->version = "TLSv1.3";
		out->cipher = cipher_name(si.cipher);
		out->sni = c->sni[0] ? c->sni : NULL;
		return;
	}
	if (c->server) {
		const unsigned char *a;
		unsigned alen;

		out->version = SSL_get_version(c->ssl);
		out->cipher = SSL_get_cipher_name(c->ssl);
		out->sni = SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name);
		SSL_get0_alpn_selected(c->ssl, &a, &alen);
		out->alpn = alpn_name(a, alen);
	} else {
		size_t alen;
		const uint8_t *a = tls_client_alpn(c->cli, &alen);

		out->version = "TLSv1.3";
		out->cipher = cipher_name(tls_client_cipher(c->cli));
		out->sni = c->sni[0] ? c->sni : NULL;
		out->alpn = alpn_name(a, alen);
	}
}

const struct tls_conn_stats *tls_conn_stats(const struct tls_conn *c)
{
	return &c->stats;
}
