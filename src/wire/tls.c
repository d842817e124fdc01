/*
 * TLS 1.3 layouts (see tls.h), read and written with the bounded cursor
 * and the big-endian helpers below.
 */
#include "wire/tls.h"

#include <string.h>

#include "wire/cursor.h"

/* ---- big-endian fields on a cursor ---- */

static void be_put16(struct cur *c, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	cur_put(c, b, 2);
}

static void be_put24(struct cur *c, size_t v)
{
	uint8_t b[3] = {(uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};

	cur_check(c, v < (1u << 24));
	cur_put(c, b, 3);
}

static uint16_t be_get16(struct cur *c)
{
	const uint8_t *p = cur_take(c, 2);

	return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

static size_t be_get24(struct cur *c)
{
	const uint8_t *p = cur_take(c, 3);

	return p ? (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2] : 0;
}

/*
 * A vector with a length prefix of w bytes (1, 2 or 3): a cursor over its
 * contents, and the parent moved past it.
 */
static struct cur be_vec(struct cur *c, unsigned w)
{
	size_t n = w == 1 ? cur_get8(c) : w == 2 ? be_get16(c) : be_get24(c);
	const uint8_t *p = cur_take(c, n);
	struct cur v = cur_in(p, n);

	v.ok = p != NULL || n == 0 ? c->ok : false;
	return v;
}

/* The start of a vector being written: its length is filled in by be_end. */
static size_t be_begin(struct cur *c, unsigned w)
{
	size_t at = c->n;
	static const uint8_t zero[3];

	cur_put(c, zero, w);
	return at;
}

static void be_end(struct cur *c, size_t at, unsigned w)
{
	size_t n = c->n - at - w;

	if (!c->ok)
		return;
	cur_check(c, n < (1u << (8 * w)));
	if (!c->ok)
		return;
	for (unsigned i = 0; i < w; i++)
		c->out[at + i] = (uint8_t)(n >> (8 * (w - 1 - i)));
}

/* ---- records and handshake headers ---- */

int tls_rec_get(struct tls_rec *rec, const uint8_t *in, size_t len, size_t max)
{
	if (len < TLS_REC_HDR)
		return 0;
	rec->type = in[0];
	rec->version = (uint16_t)(in[1] << 8 | in[2]);
	rec->len = (uint16_t)(in[3] << 8 | in[4]);
	if (rec->type < TLS_CT_CCS || rec->type > TLS_CT_APP || in[1] != 3 || rec->len > max)
		return -1;
	return 1;
}

void tls_rec_put(uint8_t out[TLS_REC_HDR], uint8_t type, uint16_t version, uint16_t len)
{
	out[0] = type;
	out[1] = (uint8_t)(version >> 8);
	out[2] = (uint8_t)version;
	out[3] = (uint8_t)(len >> 8);
	out[4] = (uint8_t)len;
}

size_t tls_hs_get(const uint8_t *in, size_t len, uint8_t *type, const uint8_t **body,
                  size_t *body_len)
{
	size_t n;

	if (len < TLS_HS_HDR)
		return 0;
	n = (size_t)in[1] << 16 | (size_t)in[2] << 8 | in[3];
	if (len - TLS_HS_HDR < n)
		return 0;
	*type = in[0];
	*body = in + TLS_HS_HDR;
	*body_len = n;
	return TLS_HS_HDR + n;
}

void tls_hs_put(uint8_t out[TLS_HS_HDR], uint8_t type, size_t body_len)
{
	out[0] = type;
	out[1] = (uint8_t)(body_len >> 16);
	out[2] = (uint8_t)(body_len >> 8);
	out[3] = (uint8_t)body_len;
}

/* ---- the ClientHello ---- */

/* Chrome's cipher suites after the GREASE one, in its order. */
static const uint16_t ch_ciphers[] = {
    0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9,
    0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035,
};

/* Chrome's signature algorithms after the GREASE one, in its order: ML-DSA-44,
 * -65 and -87, then ECDSA and RSA-PSS / PKCS#1 with SHA-256, -384, -512. */
static const uint16_t ch_sigalgs[] = {
    0x0904, 0x0905, 0x0906, 0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
};

/*
 * Chrome's trust anchor ids (relative OIDs, base-128): three arcs' worth of
 * prefixes, each id a prefix and one last byte (an arc below 128), in
 * Chrome's order: 44947.2.x, 52580.200109.1.x, 11129.9.x.
 */
static const struct {
	uint8_t prefix_len;
	uint8_t prefix[7];
	uint8_t n;
	uint8_t last[11];
} ch_anchors[] = {
    {4, {0x82, 0xdf, 0x13, 0x02}, 8, {1, 6, 13, 14, 15, 18, 19, 20}},
    {7, {0x83, 0x9a, 0x64, 0x8c, 0x9b, 0x2d, 0x01}, 9, {7, 8, 9, 10, 11, 12, 13, 18, 19}},
    {3, {0xd6, 0x79, 0x09}, 11, {1, 4, 5, 6, 7, 8, 10, 11, 12, 13, 15}},
};

const uint16_t tls_ch_exts[TLS_CH_EXTS] = {
    TLS_EXT_SNI,           TLS_EXT_EMS,
    TLS_EXT_RENEGOTIATION, TLS_EXT_GROUPS,
    TLS_EXT_POINT_FORMATS, TLS_EXT_SESSION_TICKET,
    TLS_EXT_ALPN,          TLS_EXT_STATUS_REQUEST,
    TLS_EXT_SIGALGS,       TLS_EXT_SCT,
    TLS_EXT_KEY_SHARE,     TLS_EXT_PSK_MODES,
    TLS_EXT_VERSIONS,      TLS_EXT_COMPRESS_CERT,
    TLS_EXT_ALPS,          TLS_EXT_ECH,
    TLS_EXT_TRUST_ANCHORS,
};

const uint16_t tls_ch_quic_exts[TLS_CH_QUIC_EXTS] = {
    TLS_EXT_SNI,       TLS_EXT_GROUPS,    TLS_EXT_ALPN,          TLS_EXT_SIGALGS,
    TLS_EXT_KEY_SHARE, TLS_EXT_PSK_MODES, TLS_EXT_VERSIONS,      TLS_EXT_COMPRESS_CERT,
    TLS_EXT_ALPS,      TLS_EXT_ECH,       TLS_EXT_TRUST_ANCHORS, TLS_EXT_QUIC_TP,
};

/* chromium's QUIC signature algorithms, in its order: no GREASE, no ML-DSA,
 * rsa_pkcs1_sha1 last. */
static const uint16_t ch_quic_sigalgs[] = {
    0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601, 0x0201,
};

static const uint8_t ch_alpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
static const uint8_t ch_alpn_h3[] = {2, 'h', '3'};

/* The place of id among a hello's extensions (quic's or TCP's), or the list's length. */
static unsigned ch_ext_index_of(bool quic, uint16_t id)
{
	const uint16_t *l = quic ? tls_ch_quic_exts : tls_ch_exts;
	unsigned n = quic ? TLS_CH_QUIC_EXTS : TLS_CH_EXTS, i = 0;

	while (i < n && l[i] != id)
		i++;
	return i;
}

static unsigned ch_ext_index(uint16_t id)
{
	return ch_ext_index_of(false, id);
}

static bool ch_order_ok(const uint16_t *order, bool quic)
{
	unsigned seen = 0, n = quic ? TLS_CH_QUIC_EXTS : TLS_CH_EXTS;

	for (unsigned i = 0; i < n; i++) {
		unsigned j = ch_ext_index_of(quic, order[i]);

		if (j == n || (seen & (1u << j)))
			return false;
		seen |= 1u << j;
	}
	return true;
}

/* The body of one extension of the hello. */
static void ch_ext_body(struct cur *c, uint16_t id, const struct tls_ch *ch)
{
	size_t a, b;

	switch (id) {
	case TLS_EXT_SNI:
		a = be_begin(c, 2);
		cur_put8(c, 0); /* host_name */
		b = be_begin(c, 2);
		cur_put(c, ch->sni, ch->sni_len);
		be_end(c, b, 2);
		be_end(c, a, 2);
		break;
	case TLS_EXT_RENEGOTIATION:
		cur_put8(c, 0); /* an empty renegotiated_connection */
		break;
	case TLS_EXT_GROUPS:
		a = be_begin(c, 2);
		if (!ch->quic)
			be_put16(c, ch->grease_group);
		be_put16(c, TLS_GROUP_MLKEM768X);
		be_put16(c, TLS_GROUP_X25519);
		be_put16(c, TLS_GROUP_P256);
		be_put16(c, TLS_GROUP_P384);
		be_end(c, a, 2);
		break;
	case TLS_EXT_POINT_FORMATS:
		cur_put8(c, 1);
		cur_put8(c, 0); /* uncompressed */
		break;
	case TLS_EXT_ALPN:
		a = be_begin(c, 2);
		if (ch->quic)
			cur_put(c, ch_alpn_h3, sizeof(ch_alpn_h3));
		else
			cur_put(c, ch_alpn, sizeof(ch_alpn));
		be_end(c, a, 2);
		break;
	case TLS_EXT_STATUS_REQUEST:
		cur_put8(c, 1); /* ocsp */
		be_put16(c, 0); /* no responder ids */
		be_put16(c, 0); /* no request extensions */
		break;
	case TLS_EXT_SIGALGS:
		a = be_begin(c, 2);
		if (ch->quic) {
			for (size_t i = 0; i < sizeof(ch_quic_sigalgs) / sizeof(ch_quic_sigalgs[0]);
			     i++)
				be_put16(c, ch_quic_sigalgs[i]);
		} else {
			be_put16(c, ch->grease_sigalg);
			for (size_t i = 0; i < sizeof(ch_sigalgs) / sizeof(ch_sigalgs[0]); i++)
				be_put16(c, ch_sigalgs[i]);
		}
		be_end(c, a, 2);
		break;
	case TLS_EXT_KEY_SHARE:
		a = be_begin(c, 2);
		if (ch->retry_group) {
			be_put16(c, ch->retry_group);
			b = be_begin(c, 2);
			cur_put(c, ch->retry_share, ch->retry_share_len);
			be_end(c, b, 2);
			be_end(c, a, 2);
			break;
		}
		if (!ch->quic) {
			be_put16(c, ch->grease_group);
			be_put16(c, 1);
			cur_put8(c, 0);
		}
		be_put16(c, TLS_GROUP_MLKEM768X);
		be_put16(c, TLS_MLKEMX_LEN);
		cur_put(c, ch->mlkem, TLS_MLKEMX_LEN);
		be_put16(c, TLS_GROUP_X25519);
		be_put16(c, TLS_X25519_LEN);
		cur_put(c, ch->x25519, TLS_X25519_LEN);
		be_end(c, a, 2);
		break;
	case TLS_EXT_PSK_MODES:
		cur_put8(c, 1);
		cur_put8(c, 1); /* psk_dhe_ke */
		break;
	case TLS_EXT_VERSIONS:
		a = be_begin(c, 1);
		if (ch->quic) {
			be_put16(c, 0x0304);
		} else {
			be_put16(c, ch->grease_version);
			be_put16(c, 0x0304);
			be_put16(c, 0x0303);
		}
		be_end(c, a, 1);
		break;
	case TLS_EXT_COMPRESS_CERT:
		a = be_begin(c, 1);
		be_put16(c, 2); /* brotli */
		be_end(c, a, 1);
		break;
	case TLS_EXT_ALPS:
		a = be_begin(c, 2);
		if (ch->quic)
			cur_put(c, ch_alpn_h3, sizeof(ch_alpn_h3));
		else
			cur_put(c, ch_alpn, 3); /* h2 */
		be_end(c, a, 2);
		break;
	case TLS_EXT_ECH:
		cur_put8(c, 0); /* outer */
		be_put16(c, 1); /* HKDF-SHA256 */
		be_put16(c, 1); /* AES-128-GCM */
		cur_put8(c, ch->ech_config_id);
		a = be_begin(c, 2);
		cur_put(c, ch->ech_enc, 32);
		be_end(c, a, 2);
		a = be_begin(c, 2);
		cur_put(c, ch->ech_payload, ch->ech_payload_len);
		be_end(c, a, 2);
		break;
	case TLS_EXT_TRUST_ANCHORS:
		a = be_begin(c, 2);
		for (size_t i = 0; i < sizeof(ch_anchors) / sizeof(ch_anchors[0]); i++)
			for (unsigned k = 0; k < ch_anchors[i].n; k++) {
				cur_put8(c, (uint8_t)(ch_anchors[i].prefix_len + 1));
				cur_put(c, ch_anchors[i].prefix, ch_anchors[i].prefix_len);
				cur_put8(c, ch_anchors[i].last[k]);
			}
		be_end(c, a, 2);
		break;
	case TLS_EXT_COOKIE:
		a = be_begin(c, 2);
		cur_put(c, ch->cookie, ch->cookie_len);
		be_end(c, a, 2);
		break;
	case TLS_EXT_QUIC_TP:
		if (ch->quic_tp_len > 0)
			cur_put(c, ch->quic_tp, ch->quic_tp_len);
		break;
	default: /* EMS, session_ticket, SCT: empty */
		break;
	}
}

static void ch_ext(struct cur *c, uint16_t id, const struct tls_ch *ch)
{
	size_t a;

	be_put16(c, id);
	a = be_begin(c, 2);
	ch_ext_body(c, id, ch);
	be_end(c, a, 2);
}

/* The QUIC hello: chromium's, with no GREASE and no session id. */
static size_t ch_put_quic(uint8_t *out, size_t cap, const struct tls_ch *ch)
{
	struct cur c = cur_out(out, cap);
	size_t body, exts, a;

	if (!ch_order_ok(ch->order, true) || ch->sni_len > 255 || ch->ech_payload_len > 0xffff ||
	    ch->quic_tp_len > TLS_QUIC_TP_MAX || (ch->quic_tp == NULL && ch->quic_tp_len > 0))
		return 0;
	cur_put8(&c, TLS_HS_CLIENT_HELLO);
	body = c.n;
	be_put24(&c, 0);
	be_put16(&c, 0x0303);
	cur_put(&c, ch->random, TLS_RANDOM_LEN);
	cur_put8(&c, 0); /* no legacy_session_id (RFC 9001 8.4) */
	a = be_begin(&c, 2);
	for (size_t i = 0; i < 3; i++)
		be_put16(&c, ch_ciphers[i]);
	be_end(&c, a, 2);
	cur_put8(&c, 1);
	cur_put8(&c, 0); /* null compression */
	exts = be_begin(&c, 2);
	for (unsigned i = 0; i < TLS_CH_QUIC_EXTS; i++) {
		if (ch->order[i] != TLS_EXT_SNI || ch->sni_len > 0)
			ch_ext(&c, ch->order[i], ch);
		if (ch->order[i] == TLS_EXT_KEY_SHARE && ch->cookie_len > 0)
			ch_ext(&c, TLS_EXT_COOKIE, ch);
	}
	be_end(&c, exts, 2);
	if (!c.ok)
		return 0;
	tls_hs_put(out, TLS_HS_CLIENT_HELLO, c.n - body - 3);
	return c.n;
}

size_t tls_ch_put(uint8_t *out, size_t cap, const struct tls_ch *ch)
{
	struct cur c = cur_out(out, cap);
	size_t body, exts, a;

	if (ch->quic)
		return ch_put_quic(out, cap, ch);
	if (!ch_order_ok(ch->order, false) || ch->sni_len > 255 || ch->ech_payload_len > 0xffff ||
	    !tls_grease(ch->grease_ext1) || !tls_grease(ch->grease_ext2) ||
	    ch->grease_ext1 == ch->grease_ext2 || !tls_grease(ch->grease_sigalg))
		return 0;
	cur_put8(&c, TLS_HS_CLIENT_HELLO);
	body = c.n;
	be_put24(&c, 0);
	be_put16(&c, 0x0303);
	cur_put(&c, ch->random, TLS_RANDOM_LEN);
	cur_put8(&c, TLS_SID_MAX);
	cur_put(&c, ch->sid, TLS_SID_MAX);
	a = be_begin(&c, 2);
	be_put16(&c, ch->grease_cipher);
	for (size_t i = 0; i < sizeof(ch_ciphers) / sizeof(ch_ciphers[0]); i++)
		be_put16(&c, ch_ciphers[i]);
	be_end(&c, a, 2);
	cur_put8(&c, 1);
	cur_put8(&c, 0); /* null compression */
	exts = be_begin(&c, 2);
	be_put16(&c, ch->grease_ext1);
	be_put16(&c, 0);
	for (unsigned i = 0; i < TLS_CH_EXTS; i++) {
		if (ch->order[i] != TLS_EXT_SNI || ch->sni_len > 0)
			ch_ext(&c, ch->order[i], ch);
		if (ch->order[i] == TLS_EXT_KEY_SHARE && ch->cookie_len > 0)
			ch_ext(&c, TLS_EXT_COOKIE, ch);
	}
	be_put16(&c, ch->grease_ext2);
	be_put16(&c, 1);
	cur_put8(&c, 0);
	be_end(&c, exts, 2);
	if (!c.ok)
		return 0;
	tls_hs_put(out, TLS_HS_CLIENT_HELLO, c.n - body - 3);
	return c.n;
}

/* A list of 16-bit values into dst (at most TLS_CH_LIST_MAX). */
static size_t get_list16(struct cur *v, uint16_t *dst)
{
	size_t n = 0;

	cur_check(v, v->ok && (v->len - v->n) % 2 == 0);
	while (v->ok && v->n < v->len) {
		cur_check(v, n < TLS_CH_LIST_MAX);
		if (v->ok)
			dst[n++] = be_get16(v);
	}
	return n;
}

/* The same, from a vector with a w-byte length prefix at e. */
static size_t vec_list16(struct cur *e, unsigned w, uint16_t *dst)
{
	struct cur l = be_vec(e, w);
	size_t n = get_list16(&l, dst);

	cur_check(e, l.ok);
	return n;
}

static void ch_ext_get(struct tls_ch_view *v, uint16_t id, struct cur *e)
{
	struct cur l;

	switch (id) {
	case TLS_EXT_SNI:
		l = be_vec(e, 2);
		cur_check(e, cur_end(e));
		while (l.ok && l.n < l.len) {
			uint8_t type = cur_get8(&l);
			struct cur name = be_vec(&l, 2);

			l.ok = l.ok && name.ok;
			if (l.ok && type == 0 && v->sni == NULL) {
				v->sni = name.in;
				v->sni_len = name.len;
			}
		}
		cur_check(e, l.ok);
		break;
	case TLS_EXT_GROUPS:
		v->n_groups = vec_list16(e, 2, v->groups);
		break;
	case TLS_EXT_SIGALGS:
		v->n_sigalgs = vec_list16(e, 2, v->sigalgs);
		break;
	case TLS_EXT_VERSIONS:
		v->n_versions = vec_list16(e, 1, v->versions);
		break;
	case TLS_EXT_COMPRESS_CERT:
		v->n_compress = vec_list16(e, 1, v->compress);
		break;
	case TLS_EXT_ALPN:
		l = be_vec(e, 2);
		v->alpn = l.in;
		v->alpn_len = l.len;
		cur_check(e, l.ok);
		break;
	case TLS_EXT_KEY_SHARE:
		l = be_vec(e, 2);
		while (l.ok && l.n < l.len) {
			uint16_t g = be_get16(&l);
			struct cur k = be_vec(&l, 2);

			cur_check(&l, k.ok && v->n_shares < TLS_CH_LIST_MAX);
			if (!l.ok)
				break;
			if (g == TLS_GROUP_MLKEM768X && k.len == TLS_MLKEMX_LEN)
				v->mlkem = k.in;
			if (g == TLS_GROUP_X25519 && k.len == TLS_X25519_LEN)
				v->x25519 = k.in;
			v->share_groups[v->n_shares] = g;
			v->share_lens[v->n_shares++] = (uint16_t)k.len;
		}
		cur_check(e, l.ok);
		break;
	case TLS_EXT_TRUST_ANCHORS:
		l = be_vec(e, 2);
		v->anchors = l.in;
		v->anchors_len = l.len;
		while (l.ok && l.n < l.len) {
			struct cur a = be_vec(&l, 1);

			cur_check(&l, a.ok && a.len > 0);
			v->n_anchors++;
		}
		cur_check(e, l.ok);
		break;
	case TLS_EXT_QUIC_TP:
		v->quic_tp = e->in;
		v->quic_tp_len = e->len;
		(void)cur_take(e, e->len);
		break;
	case TLS_EXT_ECH:
		if (cur_get8(e) == 0) {
			(void)cur_take(e, 5);
			l = be_vec(e, 2);
			cur_check(e, l.ok);
			l = be_vec(e, 2);
			cur_check(e, l.ok);
			v->ech_payload_len = l.len;
		}
		break;
	default:
		return; /* not looked into */
	}
	cur_check(e, cur_end(e));
}

bool tls_ch_get(struct tls_ch_view *v, const uint8_t *body, size_t len)
{
	struct cur c = cur_in(body, len), l, exts;

	memset(v, 0, sizeof(*v));
	v->legacy_version = be_get16(&c);
	v->random = cur_take(&c, TLS_RANDOM_LEN);
	l = be_vec(&c, 1);
	cur_check(&c, l.ok && l.len <= TLS_SID_MAX);
	v->sid_len = l.len;
	l = be_vec(&c, 2);
	v->n_ciphers = get_list16(&l, v->ciphers);
	cur_check(&c, l.ok);
	l = be_vec(&c, 1);
	cur_check(&c, l.ok && l.len >= 1);
	exts = be_vec(&c, 2);
	cur_check(&c, exts.ok && cur_end(&c));
	while (c.ok && exts.n < exts.len) {
		uint16_t id = be_get16(&exts);
		struct cur e = be_vec(&exts, 2);

		cur_check(&c, exts.ok && e.ok && v->n_exts < TLS_CH_LIST_MAX);
		if (!c.ok)
			break;
		for (size_t i = 0; i < v->n_exts; i++)
			cur_check(&c, v->exts[i] != id);
		v->exts[v->n_exts++] = id;
		ch_ext_get(v, id, &e);
		cur_check(&c, e.ok);
	}
	return c.ok;
}

/* ---- QUIC transport parameters ---- */

/* A QUIC varint (RFC 9000 16) of v in its shortest form, or of 8 bytes (wide). */
static void quic_varint(struct cur *c, uint64_t v, bool wide)
{
	uint8_t b[8];
	unsigned n = wide || v >= (1u << 30) ? 8 : v >= (1u << 14) ? 4 : v >= 64 ? 2 : 1;

	cur_check(c, v < ((uint64_t)1 << 62));
	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	b[0] |= (uint8_t)((n == 8 ? 3 : n == 4 ? 2 : n == 2 ? 1 : 0) << 6);
	cur_put(c, b, n);
}

static unsigned varint_len(uint64_t v)
{
	return v >= (1u << 30) ? 8 : v >= (1u << 14) ? 4 : v >= 64 ? 2 : 1;
}

static void tp_int(struct cur *c, uint64_t id, uint64_t v)
{
	quic_varint(c, id, false);
	quic_varint(c, varint_len(v), false);
	quic_varint(c, v, false);
}

static void tp_bytes(struct cur *c, uint64_t id, const uint8_t *p, size_t n, bool wide)
{
	quic_varint(c, id, wide);
	quic_varint(c, n, false);
	if (n > 0)
		cur_put(c, p, n);
}

size_t tls_quic_tp_put(uint8_t *out, size_t cap, const struct tls_quic_tp *tp)
{
	const uint64_t ints[9] = {
	    tp->max_idle_timeout,
	    tp->max_udp_payload_size,
	    tp->initial_max_data,
	    tp->initial_max_stream_data_bidi_local,
	    tp->initial_max_stream_data_bidi_remote,
	    tp->initial_max_stream_data_uni,
	    tp->initial_max_streams_bidi,
	    tp->initial_max_streams_uni,
	    tp->max_datagram_frame_size,
	};
	static const uint8_t ids[9] = {0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x20};
	struct cur c = cur_out(out, cap);
	unsigned seen = 0;

	for (unsigned i = 0; i < TLS_QUIC_TPS; i++) {
		if (tp->order[i] >= TLS_QUIC_TPS || (seen & (1u << tp->order[i])))
			return 0;
		seen |= 1u << tp->order[i];
	}
	if (tp->scid_len > 20 || tp->grease_len > TLS_QUIC_TP_GREASE_MAX || tp->grease_id < 27 ||
	    (tp->grease_id - 27) % 31 != 0)
		return 0;
	for (unsigned i = 0; i < TLS_QUIC_TPS; i++) {
		unsigned k = tp->order[i];
		uint8_t vi[12];

		if (k < 9) {
			tp_int(&c, ids[k], ints[k]);
		} else if (k == 9) {
			tp_bytes(&c, 0x0f, tp->scid, tp->scid_len, false);
		} else if (k == 10) {
			tp_bytes(&c, 0x3128, tp->google_options, 4, false);
		} else if (k == 11) {
			/* chosen version 1; other versions 1 and the GREASE one */
			uint32_t v[3] = {1, tp->grease_version_first ? tp->grease_version : 1,
			                 tp->grease_version_first ? 1 : tp->grease_version};

			for (unsigned j = 0; j < 3; j++)
				for (unsigned b = 0; b < 4; b++)
					vi[4 * j + b] = (uint8_t)(v[j] >> (24 - 8 * b));
			tp_bytes(&c, 0x11, vi, sizeof(vi), false);
		} else {
			tp_bytes(&c, tp->grease_id, tp->grease, tp->grease_len, true);
		}
	}
	return c.ok ? c.n : 0;
}

static uint64_t quic_get_varint(struct cur *c)
{
	const uint8_t *p = cur_take(c, 1);
	uint64_t v;
	unsigned n;

	if (p == NULL)
		return 0;
	n = 1u << (p[0] >> 6);
	v = p[0] & 0x3f;
	if (n > 1) {
		const uint8_t *q = cur_take(c, n - 1);

		if (q == NULL)
			return 0;
		for (unsigned i = 0; i < n - 1; i++)
			v = v << 8 | q[i];
	}
	return v;
}

int tls_quic_tp_next(const uint8_t *in, size_t len, size_t *off, uint64_t *id, const uint8_t **val,
                     size_t *val_len)
{
	struct cur c;
	uint64_t n;

	if (*off >= len)
		return 0;
	c = cur_in(in + *off, len - *off);
	*id = quic_get_varint(&c);
	n = quic_get_varint(&c);
	cur_check(&c, n <= len);
	*val = c.ok ? cur_take(&c, (size_t)n) : NULL;
	if (!c.ok || (*val == NULL && n > 0))
		return -1;
	*val_len = (size_t)n;
	*off += c.n;
	return 1;
}

bool tls_quic_tp_ok(const uint8_t *in, size_t len)
{
	uint64_t seen = 0, id;
	const uint8_t *v;
	size_t off = 0, n;
	int r;

	while ((r = tls_quic_tp_next(in, len, &off, &id, &v, &n)) == 1) {
		if (id < 64) {
			if (seen & ((uint64_t)1 << id))
				return false;
			seen |= (uint64_t)1 << id;
		}
	}
	return r == 0;
}

/* ---- what the server sends ---- */

/* SHA-256("HelloRetryRequest"), RFC 8446 4.1.3. */
static const uint8_t hrr_random[TLS_RANDOM_LEN] = {
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
};

bool tls_sh_get(struct tls_sh *sh, const uint8_t *body, size_t len)
{
	struct cur c = cur_in(body, len), l, exts;
	unsigned seen = 0;

	memset(sh, 0, sizeof(*sh));
	cur_check(&c, be_get16(&c) == 0x0303);
	sh->random = cur_take(&c, TLS_RANDOM_LEN);
	sh->hrr = sh->random != NULL && memcmp(sh->random, hrr_random, TLS_RANDOM_LEN) == 0;
	l = be_vec(&c, 1);
	cur_check(&c, l.ok && l.len <= TLS_SID_MAX);
	sh->sid = l.in;
	sh->sid_len = l.len;
	sh->cipher = be_get16(&c);
	cur_check(&c, cur_get8(&c) == 0);
	exts = be_vec(&c, 2);
	cur_check(&c, exts.ok && cur_end(&c));
	while (c.ok && exts.n < exts.len) {
		uint16_t id = be_get16(&exts);
		struct cur e = be_vec(&exts, 2);
		unsigned bit;

		cur_check(&c, exts.ok && e.ok);
		if (!c.ok)
			break;
		switch (id) {
		case TLS_EXT_VERSIONS:
			bit = 1;
			sh->version = be_get16(&e);
			break;
		case TLS_EXT_KEY_SHARE:
			bit = 2;
			sh->share_group = be_get16(&e);
			if (!sh->hrr) {
				l = be_vec(&e, 2);
				cur_check(&e, l.ok && l.len > 0);
				sh->share = l.in;
				sh->share_len = l.len;
			}
			break;
		case TLS_EXT_COOKIE:
			bit = 4;
			l = be_vec(&e, 2);
			cur_check(&e, l.ok && l.len > 0 && sh->hrr);
			sh->cookie = l.in;
			sh->cookie_len = l.len;
			break;
		default:
			bit = 8; /* one this client did not offer: refused */
			c.ok = false;
			break;
		}
		cur_check(&c, cur_end(&e) && !(seen & bit));
		seen |= bit;
	}
	return c.ok;
}

bool tls_ee_get(struct tls_ee *ee, const uint8_t *body, size_t len)
{
	struct cur c = cur_in(body, len), exts = be_vec(&c, 2);
	unsigned seen = 0;

	memset(ee, 0, sizeof(*ee));
	cur_check(&c, exts.ok && cur_end(&c));
	while (c.ok && exts.n < exts.len) {
		uint16_t id = be_get16(&exts);
		struct cur e = be_vec(&exts, 2);
		unsigned i = ch_ext_index(id);

		cur_check(&c, exts.ok && e.ok);
		if (!c.ok)
			break;
		if (id == TLS_EXT_QUIC_TP) {
			cur_check(&c, ee->quic_tp == NULL && e.len <= TLS_QUIC_TP_MAX);
			ee->quic_tp = e.in != NULL ? e.in : body; /* present, maybe empty */
			ee->quic_tp_len = e.len;
			continue;
		}
		if (i == TLS_CH_EXTS) {
			ee->unsolicited = true;
			continue;
		}
		cur_check(&c, !(seen & (1u << i)));
		seen |= 1u << i;
		if (id == TLS_EXT_ALPS)
			ee->alps = true;
		if (id == TLS_EXT_ALPN) {
			struct cur l = be_vec(&e, 2), p = be_vec(&l, 1);

			/* Exactly one protocol, not empty. */
			cur_check(&c, p.ok && p.len > 0 && cur_end(&l) && cur_end(&e));
			ee->alpn = p.in;
			ee->alpn_len = p.len;
		}
	}
	return c.ok;
}

bool tls_cert_get(struct tls_chain *chain, size_t *ctx_len, const uint8_t *body, size_t len)
{
	struct cur c = cur_in(body, len), l = be_vec(&c, 1), list;

	memset(chain, 0, sizeof(*chain));
	*ctx_len = l.len;
	cur_check(&c, l.ok);
	list = be_vec(&c, 3);
	cur_check(&c, list.ok && cur_end(&c));
	while (c.ok && list.n < list.len) {
		struct cur der = be_vec(&list, 3), ext = be_vec(&list, 2);

		cur_check(&c,
		          list.ok && der.ok && der.len > 0 && ext.ok && chain->n < TLS_CHAIN_MAX);
		if (!c.ok)
			break;
		chain->der[chain->n] = der.in;
		chain->len[chain->n++] = der.len;
	}
	cur_check(&c, chain->n > 0);
	return c.ok;
}

bool tls_cv_get(uint16_t *scheme, const uint8_t **sig, size_t *sig_len, const uint8_t *body,
                size_t len)
{
	struct cur c = cur_in(body, len), s;

	*scheme = be_get16(&c);
	s = be_vec(&c, 2);
	cur_check(&c, s.ok && s.len > 0 && cur_end(&c));
	*sig = s.in;
	*sig_len = s.len;
	return c.ok;
}

bool tls_nst_get(const uint8_t *body, size_t len)
{
	struct cur c = cur_in(body, len), v;

	(void)cur_take(&c, 8); /* lifetime, age_add */
	v = be_vec(&c, 1);     /* nonce */
	cur_check(&c, v.ok);
	v = be_vec(&c, 2); /* ticket */
	cur_check(&c, v.ok && v.len > 0);
	v = be_vec(&c, 2); /* extensions */
	cur_check(&c, v.ok);
	return cur_end(&c);
}

bool tls_ku_get(bool *requested, const uint8_t *body, size_t len)
{
	if (len != 1 || body[0] > 1)
		return false;
	*requested = body[0] == 1;
	return true;
}

bool tls_alert_get(uint8_t *level, uint8_t *desc, const uint8_t *body, size_t len)
{
	if (len != 2 || (body[0] != 1 && body[0] != 2))
		return false;
	*level = body[0];
	*desc = body[1];
	return true;
}

/* ---- what a server sends ---- */

/* Room for a handshake header, which hs_done fills in: the message's
 * length (c.n bytes), or 0 if c overflowed. */
static void hs_begin(struct cur *c)
{
	static const uint8_t zero[TLS_HS_HDR];

	cur_put(c, zero, TLS_HS_HDR);
}

static size_t hs_done(uint8_t *out, const struct cur *c, uint8_t type)
{
	if (!c->ok)
		return 0;
	tls_hs_put(out, type, c->n - TLS_HS_HDR);
	return c->n;
}

size_t tls_sh_put(uint8_t *out, size_t cap, const struct tls_sh *sh)
{
	struct cur c = cur_out(out, cap);
	size_t exts, e;

	hs_begin(&c);
	be_put16(&c, 0x0303);
	cur_put(&c, sh->hrr ? hrr_random : sh->random, TLS_RANDOM_LEN);
	cur_check(&c, sh->sid_len <= TLS_SID_MAX);
	cur_put8(&c, (uint8_t)sh->sid_len);
	if (sh->sid_len > 0)
		cur_put(&c, sh->sid, sh->sid_len);
	be_put16(&c, sh->cipher);
	cur_put8(&c, 0);
	exts = be_begin(&c, 2);
	if (sh->version != 0) {
		be_put16(&c, TLS_EXT_VERSIONS);
		be_put16(&c, 2);
		be_put16(&c, sh->version);
	}
	be_put16(&c, TLS_EXT_KEY_SHARE);
	e = be_begin(&c, 2);
	be_put16(&c, sh->share_group);
	if (sh->share != NULL) {
		cur_check(&c, sh->share_len < 65536);
		be_put16(&c, (uint16_t)sh->share_len);
		cur_put(&c, sh->share, sh->share_len);
	}
	be_end(&c, e, 2);
	be_end(&c, exts, 2);
	return hs_done(out, &c, TLS_HS_SERVER_HELLO);
}

size_t tls_ee_put(uint8_t *out, size_t cap, const uint8_t *alpn, size_t alpn_len)
{
	struct cur c = cur_out(out, cap);
	size_t exts, a;

	hs_begin(&c);
	exts = be_begin(&c, 2);
	if (alpn != NULL) {
		cur_check(&c, alpn_len >= 1 && alpn_len <= 255);
		be_put16(&c, TLS_EXT_ALPN);
		a = be_begin(&c, 2);
		be_put16(&c, (uint16_t)(alpn_len + 1));
		cur_put8(&c, (uint8_t)alpn_len);
		cur_put(&c, alpn, alpn_len);
		be_end(&c, a, 2);
	}
	be_end(&c, exts, 2);
	return hs_done(out, &c, TLS_HS_ENCRYPTED_EXTENSIONS);
}

size_t tls_cert_put(uint8_t *out, size_t cap, const struct tls_chain *chain)
{
	struct cur c = cur_out(out, cap);
	size_t list;

	hs_begin(&c);
	cur_check(&c, chain->n > 0 && chain->n <= TLS_CHAIN_MAX);
	cur_put8(&c, 0); /* certificate_request_context */
	list = be_begin(&c, 3);
	for (size_t i = 0; c.ok && i < chain->n; i++) {
		cur_check(&c, chain->len[i] > 0);
		be_put24(&c, chain->len[i]);
		cur_put(&c, chain->der[i], chain->len[i]);
		be_put16(&c, 0); /* no extensions */
	}
	be_end(&c, list, 3);
	return hs_done(out, &c, TLS_HS_CERTIFICATE);
}

size_t tls_cv_put(uint8_t *out, size_t cap, uint16_t scheme, const uint8_t *sig, size_t sig_len)
{
	struct cur c = cur_out(out, cap);

	hs_begin(&c);
	be_put16(&c, scheme);
	cur_check(&c, sig_len > 0 && sig_len < 65536);
	be_put16(&c, (uint16_t)sig_len);
	cur_put(&c, sig, sig_len);
	return hs_done(out, &c, TLS_HS_CERTIFICATE_VERIFY);
}
