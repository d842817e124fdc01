/*
 * One QUIC connection on ngtcp2 0.12, and a server's many (quic/conn.h).
 * GnuTLS does the server end's TLS, and the client's behind the seam of
 * quic/tls.h; ngtcp2_crypto_gnutls protects packets for both.
 */
#include "quic/conn.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quic/tls.h"

/* GnuTLS sets itself up from a library constructor unless the program
 * defines this (gnutls.h's GNUTLS_SKIP_GLOBAL_INIT, spelled out so the
 * formatter leaves it alone): quic_lib_init does it when QUIC is used. */
int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void)
{
	return 1;
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rv = -1;

static void lib_init(void)
{
	lib_rv = gnutls_global_init();
}

int quic_lib_init(void)
{
	pthread_once(&lib_once, lib_init);
	return lib_rv;
}

/* Connection IDs a server connection may have in the demux table: the
 * ones it issued (ngtcp2 asks for at most NGTCP2_MAX_SCID_POOL_SIZE) and
 * the client's original destination CID. */
#define CIDS_MAX 9
/* Every handshake ends within this (ngtcp2's handshake_timeout). */
#define HANDSHAKE_TIMEOUT (10ULL * 1000 * 1000 * 1000)
/* A finished server connection whose CONNECTION_CLOSE was not written is
 * freed this long after it ended. */
#define REAP_AFTER (1000ULL * 1000 * 1000)

/* The TLS priorities of both ends: TLS 1.3 only, QUIC's cipher suites. */
#define PRIORITY                                                                                   \
	"NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"  \
	"-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:%DISABLE_TLS13_COMPAT_MODE"

struct quic_conn {
	ngtcp2_conn *qc;
	ngtcp2_crypto_conn_ref ref;
	struct quic_server *srv; /* NULL: a client */
	/* The client's TLS (the seam) or the server's GnuTLS session. */
	const struct quic_tls_ops *tls_ops;
	void *tls;
	gnutls_session_t sess;
	union yip_sockaddr local, peer;
	ngtcp2_path path;
	quic_dgram_fn recv;
	void *user;
	enum quic_conn_state state;
	bool opened_now;    /* the handshake completed in this call */
	bool need_close;    /* a CONNECTION_CLOSE is to be written */
	bool heard;         /* a client: a packet came from the server (tls_ops->shape) */
	bool close_sent;    /* ... and was */
	bool streams_ready; /* the handler has stream data to write */
	uint64_t done_at;
	ngtcp2_connection_close_error ccerr;
	char why[96];
	char sni[256];
	char cipher[40];
	char alpn[32];
	uint64_t dgram_id;
	/* The keep stream (keep_write): its id (-1: not open), what is left of
	 * the chunk being sent, bytes sent and acknowledged;
	 * keep_off: not to be used (refused, or the peer stopped it). */
	int64_t keep_sid;
	bool keep_off;
	const uint8_t *keep_p;
	size_t keep_n;
	uint64_t keep_sent, keep_acked;
	struct quic_conn_stats st;
	/* Server connections: the handler, the CIDs in the table, the list. */
	const struct quic_stream_handler *sh;
	void *h;
	uint8_t ncids;
	struct {
		uint8_t len;
		uint8_t id[NGTCP2_MAX_CIDLEN];
	} cids[CIDS_MAX];
	struct quic_conn *next, *prev;
};

/* ---- The server's demux table: CID -> connection, chained, fixed pool. ---- */

struct cid_ent {
	struct quic_conn *c;
	int32_t next;
	uint8_t len;
	uint8_t id[NGTCP2_MAX_CIDLEN];
};

struct quic_server {
	struct quic_server_config cfg;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t alpn;
	char alpn_buf[32];
	uint8_t reset_secret[32];
	uint8_t hash_key[crypto_shorthash_KEYBYTES];
	struct cid_ent *ents;
	int32_t *buckets;
	uint32_t nbuckets; /* a power of two */
	int32_t free_ent;
	struct quic_conn *head;
	uint64_t vn_ts, vn_tokens;
	struct quic_server_stats st;
};

static uint32_t cid_bucket(const struct quic_server *s, const uint8_t *id, size_t len)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t v;

	crypto_shorthash(h, id, len, s->hash_key);
	memcpy(&v, h, sizeof v);
	return v & (s->nbuckets - 1);
}

static struct quic_conn *cid_find(const struct quic_server *s, const uint8_t *id, size_t len)
{
	if (len == 0 || len > NGTCP2_MAX_CIDLEN)
		return NULL;
	for (int32_t i = s->buckets[cid_bucket(s, id, len)]; i >= 0; i = s->ents[i].next)
		if (s->ents[i].len == len && memcmp(s->ents[i].id, id, len) == 0)
			return s->ents[i].c;
	return NULL;
}

static int cid_add(struct quic_server *s, struct quic_conn *c, const uint8_t *id, size_t len)
{
	int32_t i = s->free_ent;
	uint32_t b;

	if (i < 0 || len == 0 || len > NGTCP2_MAX_CIDLEN || c->ncids >= CIDS_MAX)
		return -1;
	s->free_ent = s->ents[i].next;
	b = cid_bucket(s, id, len);
	s->ents[i] = (struct cid_ent){.c = c, .next = s->buckets[b], .len = (uint8_t)len};
	memcpy(s->ents[i].id, id, len);
	s->buckets[b] = i;
	c->cids[c->ncids].len = (uint8_t)len;
	memcpy(c->cids[c->ncids].id, id, len);
	c->ncids++;
	return 0;
}

static void cid_del(struct quic_server *s, struct quic_conn *c, const uint8_t *id, size_t len)
{
	int32_t *pp;

	if (len == 0 || len > NGTCP2_MAX_CIDLEN)
		return;
	for (pp = &s->buckets[cid_bucket(s, id, len)]; *pp >= 0; pp = &s->ents[*pp].next) {
		struct cid_ent *e = &s->ents[*pp];

		if (e->c == c && e->len == len && memcmp(e->id, id, len) == 0) {
			int32_t i = *pp;

			*pp = e->next;
			e->c = NULL;
			e->next = s->free_ent;
			s->free_ent = i;
			break;
		}
	}
	for (unsigned k = 0; k < c->ncids; k++)
		if (c->cids[k].len == len && memcmp(c->cids[k].id, id, len) == 0) {
			c->cids[k] = c->cids[--c->ncids];
			break;
		}
}

/* ---- Small helpers ---- */

static void set_why(struct quic_conn *c, const char *pre, const char *arg)
{
	if (c->state == QUIC_CONN_HANDSHAKE && c->srv != NULL && c->srv->st.handshakes > 0)
		c->srv->st.handshakes--;
	if (c->state != QUIC_CONN_DONE) {
		snprintf(c->why, sizeof c->why, "%s%s", pre, arg);
		c->state = QUIC_CONN_DONE;
	}
}

/* Ends the connection on a library error: a CONNECTION_CLOSE for the peer unless
 * the error says there is none to send. */
static void fail(struct quic_conn *c, int rv, uint64_t now)
{
	if (c->state == QUIC_CONN_DONE)
		return;
	c->done_at = now;
	switch (rv) {
	case NGTCP2_ERR_DRAINING:
		set_why(c, "", "closed");
		return;
	case NGTCP2_ERR_IDLE_CLOSE:
		set_why(c, "", "idle timeout");
		return;
	case NGTCP2_ERR_HANDSHAKE_TIMEOUT:
		set_why(c, "", "handshake timeout");
		return;
	case NGTCP2_ERR_DROP_CONN:
		set_why(c, "", "dropped");
		return;
	case NGTCP2_ERR_RECV_VERSION_NEGOTIATION:
		set_why(c, "", "quic: version negotiation");
		return;
	default:
		break;
	}
	if (rv == NGTCP2_ERR_CRYPTO)
		set_why(c, "tls: ",
		        gnutls_alert_get_name(
		            (gnutls_alert_description_t)ngtcp2_conn_get_tls_alert(c->qc))
		            ?: "handshake failed");
	else
		set_why(c, "quic: ", ngtcp2_strerror(rv));
	if (rv == NGTCP2_ERR_CRYPTO)
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
		    &c->ccerr, ngtcp2_conn_get_tls_alert(c->qc), NULL, 0);
	else
		ngtcp2_connection_close_error_set_transport_error_liberr(&c->ccerr, rv, NULL, 0);
	c->need_close = true;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct quic_conn *)ref->user_data)->qc;
}

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	randombytes_buf(dest, len);
}

static void set_path(struct quic_conn *c)
{
	c->path = (ngtcp2_path){
	    .local = {(ngtcp2_sockaddr *)&c->local.sa, yip_sockaddr_len(&c->local)},
	    .remote = {(ngtcp2_sockaddr *)&c->peer.sa, yip_sockaddr_len(&c->peer)},
	};
}

/* ---- ngtcp2's callbacks ---- */

static int new_cid_cb(ngtcp2_conn *qc, ngtcp2_cid *cid, uint8_t *token, size_t len, void *user)
{
	struct quic_conn *c = user;
	const uint8_t *secret = c->srv ? c->srv->reset_secret : NULL;
	uint8_t local_secret[32];

	(void)qc;
	if (secret == NULL) {
		randombytes_buf(local_secret, sizeof local_secret);
		secret = local_secret;
	}
	do {
		randombytes_buf(cid->data, len);
		cid->datalen = len;
	} while (c->srv != NULL && cid_find(c->srv, cid->data, len) != NULL);
	if (ngtcp2_crypto_generate_stateless_reset_token(token, secret, 32, cid) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	if (c->srv != NULL && cid_add(c->srv, c, cid->data, len) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int remove_cid_cb(ngtcp2_conn *qc, const ngtcp2_cid *cid, void *user)
{
	struct quic_conn *c = user;

	(void)qc;
	if (c->srv != NULL)
		cid_del(c->srv, c, cid->data, cid->datalen);
	return 0;
}

static void fill_info(struct quic_conn *c);

static int handshake_completed_cb(ngtcp2_conn *qc, void *user)
{
	struct quic_conn *c = user;

	(void)qc;
	if (c->state != QUIC_CONN_HANDSHAKE)
		return 0;
	c->state = QUIC_CONN_OPEN;
	c->opened_now = true;
	fill_info(c);
	if (c->srv != NULL) {
		if (c->srv->st.handshakes > 0)
			c->srv->st.handshakes--;
		c->srv->st.opened++;
		if (c->sh != NULL && c->sh->open != NULL)
			c->h = c->sh->open(c->srv->cfg.streams_arg, c);
	}
	return 0;
}

static int recv_datagram_cb(ngtcp2_conn *qc, uint32_t flags, const uint8_t *d, size_t len,
                            void *user)
{
	struct quic_conn *c = user;

	(void)qc;
	(void)flags;
	c->st.dgrams_in++;
	if (c->recv != NULL)
		c->recv(c->user, c, d, len);
	return 0;
}

static int lost_datagram_cb(ngtcp2_conn *qc, uint64_t id, void *user)
{
	(void)qc;
	(void)id;
	((struct quic_conn *)user)->st.dgram_lost++;
	return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *qc, uint32_t flags, int64_t sid, uint64_t off,
                               const uint8_t *d, size_t len, void *user, void *suser)
{
	struct quic_conn *c = user;

	(void)off;
	(void)suser;
	if (c->h != NULL && c->sh->recv_stream_data != NULL) {
		c->streams_ready = true;
		return c->sh->recv_stream_data(c->h, sid, d, len,
		                               flags & NGTCP2_STREAM_DATA_FLAG_FIN)
		           ? NGTCP2_ERR_CALLBACK_FAILURE
		           : 0;
	}
	/* No handler: the bytes are read and forgotten. */
	ngtcp2_conn_extend_max_stream_offset(qc, sid, len);
	ngtcp2_conn_extend_max_offset(qc, len);
	return 0;
}

static int acked_stream_cb(ngtcp2_conn *qc, int64_t sid, uint64_t off, uint64_t len, void *user,
                           void *suser)
{
	struct quic_conn *c = user;

	(void)qc;
	(void)suser;
	if (sid == c->keep_sid) {
		if (off + len > c->keep_acked)
			c->keep_acked = off + len;
		return 0;
	}
	if (c->h != NULL && c->sh->acked_stream_data_offset != NULL &&
	    c->sh->acked_stream_data_offset(c->h, sid, off, len) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int stream_close_cb(ngtcp2_conn *qc, uint32_t flags, int64_t sid, uint64_t err, void *user,
                           void *suser)
{
	struct quic_conn *c = user;

	(void)suser;
	if (sid == c->keep_sid) {
		c->keep_off = true;
		return 0;
	}
	/* A client's bidirectional stream closed: it may open another. */
	if (c->srv != NULL && (sid & 0x3) == 0)
		ngtcp2_conn_extend_max_streams_bidi(qc, 1);
	if (c->h != NULL && c->sh->stream_close != NULL &&
	    c->sh->stream_close(c->h, sid, flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET,
	                        err) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int stream_reset_cb(ngtcp2_conn *qc, int64_t sid, uint64_t final, uint64_t err, void *user,
                           void *suser)
{
	struct quic_conn *c = user;

	(void)qc;
	(void) final;
	(void)suser;
	if (sid == c->keep_sid)
		return 0;
	if (c->h != NULL && c->sh->stream_reset != NULL && c->sh->stream_reset(c->h, sid, err) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int stream_stop_cb(ngtcp2_conn *qc, int64_t sid, uint64_t err, void *user, void *suser)
{
	struct quic_conn *c = user;

	(void)qc;
	(void)suser;
	if (sid == c->keep_sid) {
		c->keep_off = true; /* no more: it would be reset */
		return 0;
	}
	if (c->h != NULL && c->sh->stream_stop_sending != NULL &&
	    c->sh->stream_stop_sending(c->h, sid, err) != 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

static int extend_stream_cb(ngtcp2_conn *qc, int64_t sid, uint64_t max, void *user, void *suser)
{
	struct quic_conn *c = user;

	(void)qc;
	(void)max;
	(void)suser;
	if (sid == c->keep_sid)
		return 0;
	if (c->h != NULL && c->sh->extend_max_stream_data != NULL) {
		c->streams_ready = true;
		if (c->sh->extend_max_stream_data(c->h, sid) != 0)
			return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static void callbacks(ngtcp2_callbacks *cb, bool server)
{
	*cb = (ngtcp2_callbacks){
	    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
	    .handshake_completed = handshake_completed_cb,
	    .encrypt = ngtcp2_crypto_encrypt_cb,
	    .decrypt = ngtcp2_crypto_decrypt_cb,
	    .hp_mask = ngtcp2_crypto_hp_mask_cb,
	    .recv_stream_data = recv_stream_data_cb,
	    .acked_stream_data_offset = acked_stream_cb,
	    .stream_close = stream_close_cb,
	    .stream_reset = stream_reset_cb,
	    .stream_stop_sending = stream_stop_cb,
	    .extend_max_stream_data = extend_stream_cb,
	    .rand = rand_cb,
	    .get_new_connection_id = new_cid_cb,
	    .remove_connection_id = remove_cid_cb,
	    .update_key = ngtcp2_crypto_update_key_cb,
	    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
	    .recv_datagram = recv_datagram_cb,
	    .lost_datagram = lost_datagram_cb,
	};
	if (server)
		cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
	else
		cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
}

static ngtcp2_cc_algo cc_algo(enum quic_cc cc)
{
	switch (cc) {
	case QUIC_CC_CUBIC:
		return NGTCP2_CC_ALGO_CUBIC;
	case QUIC_CC_RENO:
		return NGTCP2_CC_ALGO_RENO;
	case QUIC_CC_BBR2:
		return NGTCP2_CC_ALGO_BBR2;
	default:
		return NGTCP2_CC_ALGO_BBR;
	}
}

static void settings(ngtcp2_settings *st, enum quic_cc cc, uint64_t now)
{
	ngtcp2_settings_default(st);
	st->initial_ts = now;
	st->cc_algo = cc_algo(cc);
	st->handshake_timeout = HANDSHAKE_TIMEOUT;
	/* A fixed packet size, so that the link's MTU holds for its life:
	 * every packet up to QUIC_PKT_MAX, no path MTU probing. */
	st->max_tx_udp_payload_size = QUIC_PKT_MAX;
	st->no_tx_udp_payload_size_shaping = 1;
	st->no_pmtud = 1;
	/* An ACK every 10 packets rather than every 2, as Chrome decimates
	 * its ACKs: at a full link every ACK is a packet to seal, send and
	 * read on both ends. */
	st->ack_thresh = 10;
}

/* Transport parameters as Chrome's (mimicry.md §C.6). */
static void params(ngtcp2_transport_params *p)
{
	ngtcp2_transport_params_default(p);
	p->initial_max_streams_uni = 103;
	p->initial_max_streams_bidi = 100;
	p->max_idle_timeout = QUIC_IDLE_TIMEOUT;
	p->initial_max_data = 15728640;
	p->initial_max_stream_data_bidi_local = 6291456;
	p->initial_max_stream_data_bidi_remote = 6291456;
	p->initial_max_stream_data_uni = 6291456;
	p->max_datagram_frame_size = QUIC_DGRAM_FRAME_MAX;
	p->max_udp_payload_size = 1472;
}

/* ---- The GnuTLS client behind the seam ---- */

struct gtls_client {
	gnutls_session_t sess;
	gnutls_certificate_credentials_t cred;
};

static void gtls_free(void *tls)
{
	struct gtls_client *g = tls;

	if (g == NULL)
		return;
	if (g->sess != NULL)
		gnutls_deinit(g->sess);
	if (g->cred != NULL)
		gnutls_certificate_free_credentials(g->cred);
	free(g);
}

static void *gtls_new(ngtcp2_conn *qc, ngtcp2_crypto_conn_ref *ref,
                      const struct quic_dial_config *cfg, char *err, size_t errlen)
{
	struct gtls_client *g = calloc(1, sizeof *g);
	const char *alpn = cfg->alpn ? cfg->alpn : "h3";
	gnutls_datum_t a = {(unsigned char *)alpn, (unsigned)strlen(alpn)};
	int rv;

	if (g == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((rv = gnutls_certificate_allocate_credentials(&g->cred)) != 0 ||
	    (rv = gnutls_init(&g->sess, GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA |
	                                    GNUTLS_NO_END_OF_EARLY_DATA)) != 0 ||
	    (rv = gnutls_priority_set_direct(g->sess, PRIORITY, NULL)) != 0 ||
	    (rv = ngtcp2_crypto_gnutls_configure_client_session(g->sess)) != 0 ||
	    (rv = gnutls_credentials_set(g->sess, GNUTLS_CRD_CERTIFICATE, g->cred)) != 0 ||
	    (rv = gnutls_alpn_set_protocols(g->sess, &a, 1, 0)) != 0 ||
	    (cfg->sni != NULL && cfg->sni[0] != '\0' &&
	     (rv = gnutls_server_name_set(g->sess, GNUTLS_NAME_DNS, cfg->sni, strlen(cfg->sni))) !=
	         0)) {
		snprintf(err, errlen, "tls: %s", rv ? gnutls_strerror(rv) : "setup failed");
		gtls_free(g);
		return NULL;
	}
	/* The certificate is not checked: the inner Noise handshake is what
	 * authenticates the peer (docs/transports.md). */
	gnutls_session_set_ptr(g->sess, ref);
	ngtcp2_conn_set_tls_native_handle(qc, g->sess);
	return g;
}

static const char *suite_name(gnutls_session_t s)
{
	switch (gnutls_cipher_get(s)) {
	case GNUTLS_CIPHER_AES_128_GCM:
		return "TLS_AES_128_GCM_SHA256";
	case GNUTLS_CIPHER_AES_256_GCM:
		return "TLS_AES_256_GCM_SHA384";
	case GNUTLS_CIPHER_CHACHA20_POLY1305:
		return "TLS_CHACHA20_POLY1305_SHA256";
	default:
		return "?";
	}
}

static void alpn_of(gnutls_session_t s, const char **alpn)
{
	static __thread char buf[32];
	gnutls_datum_t d;

	*alpn = NULL;
	if (gnutls_alpn_get_selected_protocol(s, &d) == 0 && d.size < sizeof buf) {
		memcpy(buf, d.data, d.size);
		buf[d.size] = '\0';
		*alpn = buf;
	}
}

static void gtls_info(void *tls, const char **cipher, const char **alpn)
{
	struct gtls_client *g = tls;

	*cipher = suite_name(g->sess);
	alpn_of(g->sess, alpn);
}

const struct quic_tls_ops quic_tls_gnutls = {
    .name = "gnutls",
    .client_new = gtls_new,
    .free = gtls_free,
    .client_initial = ngtcp2_crypto_client_initial_cb,
    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
    .info = gtls_info,
};

static void fill_info(struct quic_conn *c)
{
	const char *cipher = NULL, *alpn = NULL;

	if (c->srv == NULL) {
		if (c->tls_ops->info != NULL)
			c->tls_ops->info(c->tls, &cipher, &alpn);
	} else {
		size_t len = sizeof c->sni - 1;
		unsigned type;

		cipher = suite_name(c->sess);
		alpn_of(c->sess, &alpn);
		if (gnutls_server_name_get(c->sess, c->sni, &len, &type, 0) != 0)
			c->sni[0] = '\0';
	}
	snprintf(c->cipher, sizeof c->cipher, "%s", cipher ? cipher : "?");
	snprintf(c->alpn, sizeof c->alpn, "%s", alpn ? alpn : "");
}

/* ---- Connections ---- */

struct quic_conn *quic_conn_dial(const struct quic_dial_config *cfg,
                                 const union yip_sockaddr *local, const union yip_sockaddr *remote,
                                 uint64_t now, char *err, size_t errlen)
{
	struct quic_conn *c;
	ngtcp2_callbacks cb;
	ngtcp2_settings st;
	ngtcp2_transport_params p;
	ngtcp2_cid dcid, scid;
	int rv;

	if (quic_lib_init() != 0) {
		snprintf(err, errlen, "gnutls cannot be set up");
		return NULL;
	}
	if ((c = calloc(1, sizeof *c)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->keep_sid = -1;
	c->tls_ops = cfg->tls ? cfg->tls : &quic_tls_gnutls;
	c->local = *local;
	c->peer = *remote;
	set_path(c);
	c->ref = (ngtcp2_crypto_conn_ref){get_conn, c};
	snprintf(c->sni, sizeof c->sni, "%s", cfg->sni ? cfg->sni : "");
	/* Chrome's shape: an 8-byte random destination CID, an empty source CID. */
	dcid.datalen = QUIC_SCID_LEN;
	randombytes_buf(dcid.data, dcid.datalen);
	ngtcp2_cid_init(&scid, NULL, 0);
	callbacks(&cb, false);
	cb.client_initial = c->tls_ops->client_initial;
	cb.recv_crypto_data = c->tls_ops->recv_crypto_data;
	settings(&st, cfg->cc, now);
	params(&p);
	rv = ngtcp2_conn_client_new(&c->qc, &dcid, &scid, &c->path, NGTCP2_PROTO_VER_V1, &cb, &st,
	                            &p, NULL, c);
	if (rv != 0) {
		snprintf(err, errlen, "quic: %s", ngtcp2_strerror(rv));
		free(c);
		return NULL;
	}
	c->tls = c->tls_ops->client_new(c->qc, &c->ref, cfg, err, errlen);
	if (c->tls == NULL) {
		ngtcp2_conn_del(c->qc);
		free(c);
		return NULL;
	}
	return c;
}

static void conn_del(struct quic_conn *c)
{
	if (c->h != NULL && c->sh->free != NULL)
		c->sh->free(c->h);
	if (c->qc != NULL)
		ngtcp2_conn_del(c->qc);
	if (c->tls != NULL)
		c->tls_ops->free(c->tls);
	if (c->sess != NULL)
		gnutls_deinit(c->sess);
	sodium_memzero(c, sizeof *c);
	free(c);
}

void quic_conn_free(struct quic_conn *c)
{
	if (c == NULL)
		return;
	if (c->srv != NULL) {
		quic_server_close(c->srv, c);
		return;
	}
	conn_del(c);
}

void quic_conn_set_recv(struct quic_conn *c, quic_dgram_fn fn, void *user)
{
	c->recv = fn;
	c->user = user;
}

void *quic_conn_user(const struct quic_conn *c)
{
	return c->user;
}

unsigned quic_conn_read(struct quic_conn *c, const uint8_t *pkt, size_t len,
                        const union yip_sockaddr *from, uint64_t now)
{
	ngtcp2_pkt_info pi = {0};
	ngtcp2_path path = c->path;
	union yip_sockaddr f;
	int rv;

	if (c->state == QUIC_CONN_DONE)
		return 0;
	if (from != NULL) {
		f = *from;
		path.remote = (ngtcp2_addr){(ngtcp2_sockaddr *)&f.sa, yip_sockaddr_len(&f)};
	}
	c->opened_now = false;
	c->st.pkts_in++;
	c->st.bytes_in += len;
	c->heard = true;
	rv = ngtcp2_conn_read_pkt(c->qc, &path, &pi, pkt, len, now);
	if (rv != 0) {
		switch (rv) {
		case NGTCP2_ERR_DRAINING:
		case NGTCP2_ERR_CRYPTO:
		case NGTCP2_ERR_DROP_CONN:
		case NGTCP2_ERR_RECV_VERSION_NEGOTIATION:
		case NGTCP2_ERR_CALLBACK_FAILURE:
		case NGTCP2_ERR_NOMEM:
		case NGTCP2_ERR_PROTO:
		case NGTCP2_ERR_TRANSPORT_PARAM:
		case NGTCP2_ERR_FRAME_ENCODING:
		case NGTCP2_ERR_FLOW_CONTROL:
		case NGTCP2_ERR_STREAM_LIMIT:
		case NGTCP2_ERR_FINAL_SIZE:
		case NGTCP2_ERR_CONNECTION_ID_LIMIT:
		case NGTCP2_ERR_AEAD_LIMIT_REACHED:
		case NGTCP2_ERR_NO_VIABLE_PATH:
		case NGTCP2_ERR_VERSION_NEGOTIATION_FAILURE:
		case NGTCP2_ERR_IDLE_CLOSE:
			fail(c, rv, now);
			break;
		default:
			c->st.dropped++; /* a packet to ignore (NGTCP2_ERR_DISCARD_PKT and such) */
			break;
		}
	}
	return (c->opened_now ? QUIC_CONN_OPENED : 0) |
	       (c->state == QUIC_CONN_DONE ? QUIC_CONN_ENDED : 0);
}

static size_t write_close(struct quic_conn *c, uint8_t *pkt, size_t cap, uint64_t now)
{
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n;

	if (!c->need_close || c->close_sent)
		return 0;
	c->close_sent = true;
	n = ngtcp2_conn_write_connection_close(c->qc, NULL, &pi, pkt, cap, &c->ccerr, now);
	if (n <= 0)
		return 0;
	c->st.pkts_out++;
	c->st.bytes_out += (uint64_t)n;
	return (size_t)n;
}

size_t quic_conn_write(struct quic_conn *c, uint8_t *pkt, size_t cap, uint64_t now)
{
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n, ndata;

	if (c->state == QUIC_CONN_DONE)
		return write_close(c, pkt, cap, now);
	for (;;) {
		struct quic_vec vec[16];
		int64_t sid = -1;
		bool fin = false;
		int nv = 0;
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;

		if (c->h != NULL && c->streams_ready && c->sh->writev_stream != NULL) {
			nv = c->sh->writev_stream(c->h, &sid, &fin, vec, 16);
			if (nv < 0) {
				fail(c, NGTCP2_ERR_CALLBACK_FAILURE, now);
				return write_close(c, pkt, cap, now);
			}
			if (sid < 0)
				c->streams_ready = false;
		}
		if (sid >= 0) {
			flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
			if (fin)
				flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		}
		/* A client's first flight, as its TLS shapes it (quic/tls.h). */
		bool shaped = c->srv == NULL && !c->heard && c->tls_ops->shape != NULL &&
		              c->tls_ops->first_cap < cap;

		ndata = -1;
		n = ngtcp2_conn_writev_stream(c->qc, NULL, &pi, pkt,
		                              shaped ? c->tls_ops->first_cap : cap, &ndata, flags,
		                              sid, (const ngtcp2_vec *)vec, (size_t)nv, now);
		if (n > 0 && shaped) {
			size_t k = c->tls_ops->shape(c->tls, pkt, (size_t)n, cap);

			if (k > 0)
				n = (ngtcp2_ssize)k;
		}
		if (n < 0) {
			if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
				if (c->sh->block_stream != NULL)
					c->sh->block_stream(c->h, sid);
				continue;
			}
			if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
				if (c->sh->shutdown_stream_write != NULL)
					c->sh->shutdown_stream_write(c->h, sid);
				continue;
			}
			if (n == NGTCP2_ERR_WRITE_MORE) {
				if (ndata >= 0 && c->sh->add_write_offset != NULL)
					c->sh->add_write_offset(c->h, sid, (size_t)ndata);
				continue;
			}
			fail(c, (int)n, now);
			return write_close(c, pkt, cap, now);
		}
		if (sid >= 0 && ndata >= 0 && c->sh->add_write_offset != NULL)
			c->sh->add_write_offset(c->h, sid, (size_t)ndata);
		if (n == 0)
			return 0;
		/* No ngtcp2_conn_update_pkt_tx_time: ngtcp2 does not pace (the
		 * engine's own flow paces datagrams; pacing only the control
		 * packets stalled links: docs/transports.md). */
		c->st.pkts_out++;
		c->st.bytes_out += (uint64_t)n;
		return (size_t)n;
	}
}

/*
 * The keep stream. ngtcp2 0.12 arms no probe timeout for packets that carry
 * only DATAGRAM frames (ngtcp2 issue 697): when the ACKs for a window of
 * them are lost, nothing is declared lost, nothing may be sent, and the
 * link stalls for good. So a few bytes of stream data, which do arm it
 * (and which ngtcp2 sends again until acknowledged), are kept in flight
 * beside the datagrams: a new write as soon as the last one is
 * acknowledged (one a round trip; a gap between them would let a window
 * fill with datagrams alone). A client's keep stream is its HTTP/3 control stream
 * (as Chrome's: type 0, SETTINGS, then reserved frames of type 0x21 that
 * any HTTP/3 server skips, RFC 9114 section 7.2.8); a server's is a
 * unidirectional stream of reserved type 0x21 (section 6.2.3), opened only
 * once it carries yip's datagrams, which its client reads and forgets.
 */
static const uint8_t keep_client_first[] = {
    0x00,                         /* stream type: control */
    0x04, 0x0f,                   /* SETTINGS, 15 bytes */
    0x01, 0x80, 0x01, 0x00, 0x00, /* QPACK_MAX_TABLE_CAPACITY 65536 */
    0x06, 0x80, 0x04, 0x00, 0x00, /* MAX_FIELD_SECTION_SIZE 262144 */
    0x07, 0x40, 0x64,             /* QPACK_BLOCKED_STREAMS 100 */
    0x33, 0x01,                   /* H3_DATAGRAM 1 */
};
static const uint8_t keep_client_next[] = {0x21, 0x00}; /* a reserved frame, empty */
static const uint8_t keep_server_first[] = {0x21};      /* a reserved stream type */
static const uint8_t keep_server_next[] = {0x00};

static ngtcp2_ssize keep_write(struct quic_conn *c, uint8_t *pkt, size_t cap, uint64_t now)
{
	ngtcp2_pkt_info pi;
	ngtcp2_ssize n, nd = -1;
	ngtcp2_vec v;
	int rv;

	if (c->keep_off || c->keep_acked < c->keep_sent)
		return 0;
	if (c->keep_sid < 0) {
		if ((rv = ngtcp2_conn_open_uni_stream(c->qc, &c->keep_sid, NULL)) != 0) {
			c->keep_sid = -1;
			c->keep_off = rv != NGTCP2_ERR_STREAM_ID_BLOCKED; /* else: later */
			return 0;
		}
		c->keep_p = c->srv ? keep_server_first : keep_client_first;
		c->keep_n = c->srv ? sizeof(keep_server_first) : sizeof(keep_client_first);
	}
	if (c->keep_n == 0) {
		c->keep_p = c->srv ? keep_server_next : keep_client_next;
		c->keep_n = c->srv ? sizeof(keep_server_next) : sizeof(keep_client_next);
	}
	v = (ngtcp2_vec){(uint8_t *)c->keep_p, c->keep_n};
	n = ngtcp2_conn_writev_stream(c->qc, NULL, &pi, pkt, cap, &nd,
	                              NGTCP2_WRITE_STREAM_FLAG_NONE, c->keep_sid, &v, 1, now);
	if (n < 0) {
		if (n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND)
			c->keep_off = true;
		else if (n != NGTCP2_ERR_STREAM_DATA_BLOCKED)
			fail(c, (int)n, now);
		return 0;
	}
	if (nd > 0) {
		c->keep_p += nd;
		c->keep_n -= (size_t)nd;
		c->keep_sent += (uint64_t)nd;
	}
	if (n > 0) {
		c->st.pkts_out++;
		c->st.bytes_out += (uint64_t)n;
	}
	return n;
}

size_t quic_conn_send_datagram(struct quic_conn *c, const uint8_t *d, size_t len, uint8_t *pkt,
                               size_t cap, uint64_t now, bool *carried)
{
	ngtcp2_pkt_info pi;
	ngtcp2_vec v = {(uint8_t *)d, len};
	int accepted = 0;
	ngtcp2_ssize n;

	*carried = false;
	if (c->state != QUIC_CONN_OPEN) {
		c->st.dgram_blocked++;
		return 0;
	}
	if (len > quic_conn_dgram_max(c)) {
		c->st.dgram_too_big++;
		return 0;
	}
	/* The keep stream's bytes first, in a packet of their own (a full
	 * datagram leaves no room beside it); the caller offers d again. */
	if ((n = keep_write(c, pkt, cap, now)) > 0)
		return (size_t)n;
	if (c->state != QUIC_CONN_OPEN)
		return 0;
	n = ngtcp2_conn_writev_datagram(c->qc, NULL, &pi, pkt, cap, &accepted,
	                                NGTCP2_WRITE_DATAGRAM_FLAG_NONE, ++c->dgram_id, &v, 1, now);
	if (n < 0) {
		if (n == NGTCP2_ERR_INVALID_ARGUMENT) {
			c->st.dgram_too_big++;
			return 0;
		}
		if (n == NGTCP2_ERR_INVALID_STATE) {
			c->st.dgram_blocked++;
			return 0;
		}
		fail(c, (int)n, now);
		c->st.dgram_blocked++;
		return 0;
	}
	if (n == 0) {
		c->st.dgram_blocked++;
		return 0;
	}
	c->st.pkts_out++;
	c->st.bytes_out += (uint64_t)n;
	if (accepted) {
		*carried = true;
		c->st.dgrams_out++;
	}
	return (size_t)n;
}

size_t quic_conn_dgram_max(const struct quic_conn *c)
{
	const ngtcp2_transport_params *rp;
	size_t m = QUIC_PKT_MAX - QUIC_DGRAM_OVERHEAD;

	if (c->state != QUIC_CONN_OPEN)
		return 0;
	rp = ngtcp2_conn_get_remote_transport_params(c->qc);
	if (rp == NULL || rp->max_datagram_frame_size == 0)
		return 0;
	/* The frame's type and length count against the peer's limit. */
	if (rp->max_datagram_frame_size < m + 3)
		m = rp->max_datagram_frame_size > 3 ? (size_t)rp->max_datagram_frame_size - 3 : 0;
	if (rp->max_udp_payload_size < QUIC_PKT_MAX) {
		size_t lim = rp->max_udp_payload_size > QUIC_DGRAM_OVERHEAD
		                 ? (size_t)rp->max_udp_payload_size - QUIC_DGRAM_OVERHEAD
		                 : 0;
		if (lim < m)
			m = lim;
	}
	return m;
}

uint64_t quic_conn_expiry(const struct quic_conn *c)
{
	if (c->state == QUIC_CONN_DONE) {
		if (c->srv == NULL)
			return UINT64_MAX;
		return c->need_close && !c->close_sent ? c->done_at + REAP_AFTER : 0;
	}
	return ngtcp2_conn_get_expiry(c->qc);
}

unsigned quic_conn_expire(struct quic_conn *c, uint64_t now)
{
	int rv;

	if (c->state == QUIC_CONN_DONE)
		return 0;
	c->opened_now = false;
	rv = ngtcp2_conn_handle_expiry(c->qc, now);
	if (rv != 0)
		fail(c, rv, now);
	return c->state == QUIC_CONN_DONE ? QUIC_CONN_ENDED : 0;
}

void quic_conn_close(struct quic_conn *c, uint64_t now)
{
	if (c->state == QUIC_CONN_DONE)
		return;
	set_why(c, "", "closed");
	c->done_at = now;
	ngtcp2_connection_close_error_set_application_error(&c->ccerr, 0x100 /* H3_NO_ERROR */,
	                                                    NULL, 0);
	c->need_close = true;
}

void quic_conn_keepalive(struct quic_conn *c, uint64_t interval)
{
	ngtcp2_conn_set_keep_alive_timeout(c->qc, interval ? interval : UINT64_MAX);
}

enum quic_conn_state quic_conn_state(const struct quic_conn *c)
{
	return c->state;
}

const char *quic_conn_why(const struct quic_conn *c)
{
	return c->state == QUIC_CONN_DONE ? c->why : NULL;
}

const union yip_sockaddr *quic_conn_peer(const struct quic_conn *c)
{
	return &c->peer;
}

bool quic_conn_is_server(const struct quic_conn *c)
{
	return c->srv != NULL;
}

void quic_conn_info(const struct quic_conn *c, struct quic_conn_info *out)
{
	*out = (struct quic_conn_info){
	    .version = "QUICv1",
	    .cipher = c->cipher[0] ? c->cipher : NULL,
	    .sni = c->sni[0] ? c->sni : NULL,
	    .alpn = c->alpn[0] ? c->alpn : NULL,
	    .server = c->srv != NULL,
	};
}

void quic_conn_stats(const struct quic_conn *c, struct quic_conn_stats *out)
{
	ngtcp2_conn_stat cs;

	*out = c->st;
	ngtcp2_conn_get_conn_stat(c->qc, &cs);
	out->rtt_ns = cs.smoothed_rtt;
	out->cwnd = cs.cwnd;
	out->bytes_in_flight = cs.bytes_in_flight;
}

int quic_conn_open_uni_stream(struct quic_conn *c, int64_t *stream_id)
{
	return ngtcp2_conn_open_uni_stream(c->qc, stream_id, NULL);
}

int quic_conn_extend_stream(struct quic_conn *c, int64_t stream_id, size_t n)
{
	ngtcp2_conn_extend_max_offset(c->qc, n);
	return ngtcp2_conn_extend_max_stream_offset(c->qc, stream_id, n);
}

int quic_conn_shutdown_stream(struct quic_conn *c, int64_t stream_id, uint64_t app_error)
{
	return ngtcp2_conn_shutdown_stream(c->qc, stream_id, app_error);
}

int quic_conn_shutdown_stream_read(struct quic_conn *c, int64_t stream_id, uint64_t app_error)
{
	return ngtcp2_conn_shutdown_stream_read(c->qc, stream_id, app_error);
}

void quic_conn_stream_ready(struct quic_conn *c)
{
	c->streams_ready = true;
}

void *quic_conn_handler(const struct quic_conn *c)
{
	return c->h;
}

/* ---- Server ---- */

static int self_signed(gnutls_certificate_credentials_t cred, const char *name)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	uint8_t serial[16];
	time_t now = time(NULL);
	int rv;

	randombytes_buf(serial, sizeof serial);
	serial[0] &= 0x7f;
	if ((rv = gnutls_x509_privkey_init(&key)) == 0 &&
	    (rv = gnutls_x509_privkey_generate(key, GNUTLS_PK_RSA, 2048, 0)) == 0 &&
	    (rv = gnutls_x509_crt_init(&crt)) == 0 &&
	    (rv = gnutls_x509_crt_set_version(crt, 3)) == 0 &&
	    (rv = gnutls_x509_crt_set_serial(crt, serial, sizeof serial)) == 0 &&
	    (rv = gnutls_x509_crt_set_activation_time(crt, now)) == 0 &&
	    (rv = gnutls_x509_crt_set_expiration_time(crt, now + 10L * 365 * 24 * 3600)) == 0 &&
	    (rv = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, name,
	                                        strlen(name))) == 0 &&
	    (rv = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name, strlen(name),
	                                               GNUTLS_FSAN_SET)) == 0 &&
	    (rv = gnutls_x509_crt_set_key(crt, key)) == 0 &&
	    (rv = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) == 0)
		rv = gnutls_certificate_set_x509_key(cred, &crt, 1, key);
	if (crt != NULL)
		gnutls_x509_crt_deinit(crt);
	if (key != NULL)
		gnutls_x509_privkey_deinit(key);
	return rv;
}

struct quic_server *quic_server_new(const struct quic_server_config *cfg, char *err, size_t errlen)
{
	struct quic_server *s;
	uint32_t nents;
	int rv;

	if (quic_lib_init() != 0) {
		snprintf(err, errlen, "gnutls cannot be set up");
		return NULL;
	}
	if ((s = calloc(1, sizeof *s)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	if (s->cfg.max_conns == 0)
		s->cfg.max_conns = QUIC_SERVER_MAX_CONNS;
	if (s->cfg.max_handshakes == 0)
		s->cfg.max_handshakes = QUIC_SERVER_MAX_HANDSHAKES;
	if (s->cfg.max_per_source == 0)
		s->cfg.max_per_source = QUIC_SERVER_MAX_PER_SOURCE;
	if (s->cfg.vn_per_sec == 0)
		s->cfg.vn_per_sec = QUIC_SERVER_VN_PER_SEC;
	s->cfg.cert_pem = s->cfg.key_pem = NULL; /* the caller's memory */
	snprintf(s->alpn_buf, sizeof s->alpn_buf, "%s", cfg->alpn ? cfg->alpn : "h3");
	s->alpn = (gnutls_datum_t){(unsigned char *)s->alpn_buf, (unsigned)strlen(s->alpn_buf)};
	randombytes_buf(s->reset_secret, sizeof s->reset_secret);
	randombytes_buf(s->hash_key, sizeof s->hash_key);
	nents = s->cfg.max_conns * CIDS_MAX;
	for (s->nbuckets = 16; s->nbuckets < nents; s->nbuckets <<= 1)
		;
	s->ents = calloc(nents, sizeof *s->ents);
	s->buckets = malloc(s->nbuckets * sizeof *s->buckets);
	if (s->ents == NULL || s->buckets == NULL) {
		snprintf(err, errlen, "out of memory");
		quic_server_free(s);
		return NULL;
	}
	for (uint32_t i = 0; i < s->nbuckets; i++)
		s->buckets[i] = -1;
	for (uint32_t i = 0; i < nents; i++)
		s->ents[i].next = i + 1 < nents ? (int32_t)(i + 1) : -1;
	s->free_ent = 0;
	s->vn_tokens = s->cfg.vn_per_sec;
	if ((rv = gnutls_certificate_allocate_credentials(&s->cred)) != 0) {
		snprintf(err, errlen, "tls: %s", gnutls_strerror(rv));
		quic_server_free(s);
		return NULL;
	}
	if (cfg->cert_pem != NULL && cfg->key_pem != NULL) {
		gnutls_datum_t cd = {(unsigned char *)cfg->cert_pem, (unsigned)cfg->cert_len};
		gnutls_datum_t kd = {(unsigned char *)cfg->key_pem, (unsigned)cfg->key_len};

		rv = gnutls_certificate_set_x509_key_mem2(s->cred, &cd, &kd, GNUTLS_X509_FMT_PEM,
		                                          NULL, 0);
		if (rv < 0) {
			snprintf(err, errlen, "tls certificate or key: %s", gnutls_strerror(rv));
			quic_server_free(s);
			return NULL;
		}
	} else if ((rv = self_signed(s->cred, cfg->self_name ? cfg->self_name : "localhost")) !=
	           0) {
		snprintf(err, errlen, "a self-signed certificate: %s", gnutls_strerror(rv));
		quic_server_free(s);
		return NULL;
	}
	return s;
}

static void server_unlink(struct quic_server *s, struct quic_conn *c)
{
	while (c->ncids > 0)
		cid_del(s, c, c->cids[c->ncids - 1].id, c->cids[c->ncids - 1].len);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		s->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	if (c->state == QUIC_CONN_HANDSHAKE && s->st.handshakes > 0)
		s->st.handshakes--;
	s->st.conns--;
}

void quic_server_close(struct quic_server *s, struct quic_conn *c)
{
	if (s->cfg.gone != NULL)
		s->cfg.gone(s->cfg.gone_arg, c);
	server_unlink(s, c);
	conn_del(c);
}

void quic_server_free(struct quic_server *s)
{
	if (s == NULL)
		return;
	while (s->head != NULL)
		quic_server_close(s, s->head);
	if (s->cred != NULL)
		gnutls_certificate_free_credentials(s->cred);
	free(s->ents);
	free(s->buckets);
	sodium_memzero(s, sizeof *s);
	free(s);
}

static bool same_host(const union yip_sockaddr *a, const union yip_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr;
	return memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16) == 0;
}

static struct quic_conn *server_accept(struct quic_server *s, const ngtcp2_pkt_hd *hd,
                                       const union yip_sockaddr *local,
                                       const union yip_sockaddr *from, uint64_t now)
{
	struct quic_conn *c = calloc(1, sizeof *c);
	ngtcp2_callbacks cb;
	ngtcp2_settings st;
	ngtcp2_transport_params p;
	ngtcp2_cid scid;
	int rv;

	if (c == NULL)
		return NULL;
	c->keep_sid = -1; /* stream 0 is a client's first request */
	c->srv = s;
	c->local = *local;
	c->peer = *from;
	set_path(c);
	c->ref = (ngtcp2_crypto_conn_ref){get_conn, c};
	c->recv = s->cfg.recv;
	c->user = s->cfg.recv_user;
	c->sh = s->cfg.streams;
	/* In the list now, so that a failure below frees it through server_unlink. */
	c->next = s->head;
	if (s->head != NULL)
		s->head->prev = c;
	s->head = c;
	s->st.conns++;
	s->st.handshakes++;
	scid.datalen = QUIC_SCID_LEN;
	do
		randombytes_buf(scid.data, scid.datalen);
	while (cid_find(s, scid.data, scid.datalen) != NULL);
	if (cid_add(s, c, scid.data, scid.datalen) != 0 ||
	    cid_add(s, c, hd->dcid.data, hd->dcid.datalen) != 0)
		goto fail;
	callbacks(&cb, true);
	settings(&st, s->cfg.cc, now);
	params(&p);
	p.original_dcid = hd->dcid;
	p.stateless_reset_token_present = 1;
	if (ngtcp2_crypto_generate_stateless_reset_token(p.stateless_reset_token, s->reset_secret,
	                                                 sizeof s->reset_secret, &scid) != 0)
		goto fail;
	rv = ngtcp2_conn_server_new(&c->qc, &hd->scid, &scid, &c->path, hd->version, &cb, &st, &p,
	                            NULL, c);
	if (rv != 0)
		goto fail;
	if (gnutls_init(&c->sess, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA) != 0 ||
	    gnutls_priority_set_direct(c->sess, PRIORITY, NULL) != 0 ||
	    ngtcp2_crypto_gnutls_configure_server_session(c->sess) != 0 ||
	    gnutls_credentials_set(c->sess, GNUTLS_CRD_CERTIFICATE, s->cred) != 0 ||
	    gnutls_alpn_set_protocols(c->sess, &s->alpn, 1, GNUTLS_ALPN_MANDATORY) != 0)
		goto fail;
	gnutls_session_set_ptr(c->sess, &c->ref);
	ngtcp2_conn_set_tls_native_handle(c->qc, c->sess);
	return c;
fail:
	server_unlink(s, c);
	conn_del(c);
	return NULL;
}

static bool vn_allowed(struct quic_server *s, uint64_t now)
{
	uint64_t sec = now / 1000000000ULL;

	if (sec != s->vn_ts) {
		s->vn_ts = sec;
		s->vn_tokens = s->cfg.vn_per_sec;
	}
	if (s->vn_tokens == 0)
		return false;
	s->vn_tokens--;
	return true;
}

unsigned quic_server_read(struct quic_server *s, const uint8_t *pkt, size_t len,
                          const union yip_sockaddr *local, const union yip_sockaddr *from,
                          uint64_t now, struct quic_conn **conn, uint8_t *reply, size_t cap,
                          size_t *reply_len)
{
	ngtcp2_version_cid vc;
	ngtcp2_pkt_hd hd;
	struct quic_conn *c;
	unsigned n = 0, bits;
	int rv;

	*conn = NULL;
	*reply_len = 0;
	rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len, QUIC_SCID_LEN);
	if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
		uint32_t v = NGTCP2_PROTO_VER_V1;
		uint8_t r;
		ngtcp2_ssize w;

		s->st.drop_version++;
		/* Only to what could be a client's first flight, never larger than it. */
		if (len < QUIC_INITIAL_MIN || !vn_allowed(s, now)) {
			s->st.drop_vn_limited++;
			return 0;
		}
		randombytes_buf(&r, 1);
		w = ngtcp2_pkt_write_version_negotiation(reply, cap < len ? cap : len, r, vc.scid,
		                                         vc.scidlen, vc.dcid, vc.dcidlen, &v, 1);
		if (w > 0) {
			*reply_len = (size_t)w;
			s->st.vn_sent++;
		}
		return 0;
	}
	if (rv != 0) {
		s->st.drop_short++;
		return 0;
	}
	c = cid_find(s, vc.dcid, vc.dcidlen);
	if (c != NULL) {
		*conn = c;
		bits = quic_conn_read(c, pkt, len, from, now);
		return bits;
	}
	if (vc.version == 0) {
		s->st.drop_unknown++;
		return 0;
	}
	if (len < QUIC_INITIAL_MIN) {
		s->st.drop_small++;
		return 0;
	}
	if (ngtcp2_accept(&hd, pkt, len) != 0 || hd.type != NGTCP2_PKT_INITIAL) {
		s->st.drop_not_initial++;
		return 0;
	}
	if (s->st.conns >= s->cfg.max_conns) {
		s->st.drop_full++;
		return 0;
	}
	if (s->st.handshakes >= s->cfg.max_handshakes) {
		s->st.drop_handshakes++;
		return 0;
	}
	for (struct quic_conn *o = s->head; o != NULL; o = o->next)
		if (same_host(&o->peer, from) && ++n >= s->cfg.max_per_source) {
			s->st.drop_per_source++;
			return 0;
		}
	c = server_accept(s, &hd, local, from, now);
	if (c == NULL) {
		s->st.drop_nomem++;
		return 0;
	}
	s->st.accepted++;
	*conn = c;
	bits = quic_conn_read(c, pkt, len, from, now);
	if (bits & QUIC_CONN_ENDED)
		s->st.drop_conn++;
	return bits | QUIC_CONN_NEW;
}

struct quic_conn *quic_server_next(struct quic_server *s, struct quic_conn *prev)
{
	return prev == NULL ? s->head : prev->next;
}

uint64_t quic_server_expiry(struct quic_server *s)
{
	uint64_t e = UINT64_MAX;

	for (struct quic_conn *c = s->head; c != NULL; c = c->next) {
		uint64_t x = quic_conn_expiry(c);

		if (x < e)
			e = x;
	}
	return e;
}

void quic_server_expire(struct quic_server *s, uint64_t now)
{
	struct quic_conn *c = s->head, *next;

	for (; c != NULL; c = next) {
		next = c->next;
		if (c->state != QUIC_CONN_DONE && ngtcp2_conn_get_expiry(c->qc) <= now)
			quic_conn_expire(c, now);
		if (c->state == QUIC_CONN_DONE &&
		    (!c->need_close || c->close_sent || now >= c->done_at + REAP_AFTER)) {
			if (strcmp(c->why, "idle timeout") == 0 ||
			    strcmp(c->why, "handshake timeout") == 0)
				s->st.expired++;
			else if (strcmp(c->why, "closed") == 0)
				s->st.closed++;
			else
				s->st.failed++;
			quic_server_close(s, c);
		}
	}
}

const struct quic_server_stats *quic_server_stats(const struct quic_server *s)
{
	return &s->st;
}
