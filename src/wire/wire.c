#include "wire/wire.h"

#include <arpa/inet.h>
#include <sodium.h>
#include <string.h>

#include "wire/cursor.h"

int wire_classify(const uint8_t *d, size_t len)
{
	bool zero;

	if (len < 4)
		return 0;
	zero = (d[1] | d[2] | d[3]) == 0;
	switch (d[0]) {
	case WIRE_INIT:
		return zero && len >= WIRE_INIT_LEN && len <= WIRE_INIT_MAX ? WIRE_INIT : 0;
	case WIRE_RESP:
		return zero && len >= WIRE_RESP_LEN && len <= WIRE_RESP_MAX ? WIRE_RESP : 0;
	case WIRE_COOKIE:
		return zero && len == WIRE_COOKIE_MSG ? WIRE_COOKIE : 0;
	case WIRE_DATA:
		return len >= WIRE_DATA_MIN ? WIRE_DATA : 0;
	case WIRE_REPAIR:
		return len >= WIRE_DATA_MIN + WIRE_REPAIR_PRE + WIRE_SYM_HDR ? WIRE_REPAIR : 0;
	case WIRE_REPORT:
		return zero && len >= WIRE_DATA_MIN ? WIRE_REPORT : 0;
	case WIRE_CTRL:
		return zero && len >= WIRE_DATA_MIN + 1 ? WIRE_CTRL : 0;
	case WIRE_RELAY:
		return d[1] <= WIRE_RELAY_FROM_SERVER && (d[2] | d[3]) == 0 && len > WIRE_RELAY_HDR
		           ? WIRE_RELAY
		           : 0;
	default:
		return 0;
	}
}

void wire_mac1_key(uint8_t key[YIP_KEY_LEN], const uint8_t pub[YIP_KEY_LEN])
{
	static const char label[] = "yip-mac1-v1";
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, YIP_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label) - 1);
	crypto_generichash_update(&st, pub, YIP_KEY_LEN);
	crypto_generichash_final(&st, key, YIP_KEY_LEN);
}

static void mac1_compute(uint8_t out[WIRE_MAC_LEN], const uint8_t *msg, size_t len,
                         const uint8_t key[YIP_KEY_LEN])
{
	crypto_generichash(out, WIRE_MAC_LEN, msg, len - WIRE_MAC_LEN, key, YIP_KEY_LEN);
}

void wire_mac1_put(uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN])
{
	mac1_compute(msg + len - WIRE_MAC_LEN, msg, len, key);
}

bool wire_mac1_ok(const uint8_t *msg, size_t len, const uint8_t key[YIP_KEY_LEN])
{
	uint8_t mac[WIRE_MAC_LEN];

	if (len < WIRE_MAC_LEN)
		return false;
	mac1_compute(mac, msg, len, key);
	return sodium_memcmp(mac, msg + len - WIRE_MAC_LEN, WIRE_MAC_LEN) == 0;
}

/* ---- handshakes ------------------------------------------------------------ */

void wire_mac2_put_n(uint8_t *d, size_t len, const uint8_t cookie[WIRE_COOKIE_LEN])
{
	size_t at = len - WIRE_MAC_LEN;

	crypto_generichash(d + at, WIRE_MAC_LEN, d, at, cookie, WIRE_COOKIE_LEN);
}

bool wire_mac2_ok_n(const uint8_t *d, size_t len, const uint8_t cookie[WIRE_COOKIE_LEN])
{
	uint8_t mac[WIRE_MAC_LEN];
	size_t at = len - WIRE_MAC_LEN;

	if (len < WIRE_INIT_LEN)
		return false;
	crypto_generichash(mac, WIRE_MAC_LEN, d, at, cookie, WIRE_COOKIE_LEN);
	return sodium_memcmp(mac, d + at, WIRE_MAC_LEN) == 0;
}

uint8_t *wire_cookie_put(uint8_t *d, uint32_t receiver)
{
	wire_put32(d, WIRE_COOKIE);
	wire_put32(d + 4, receiver);
	return d + 8;
}

bool wire_cookie_get(struct wire_cookie *m, const uint8_t *d, size_t len)
{
	if (len != WIRE_COOKIE_MSG || wire_get32(d) != WIRE_COOKIE)
		return false;
	m->receiver = wire_get32(d + 4);
	m->nonce = d + 8;
	m->sealed = d + 8 + WIRE_COOKIE_NONCE;
	return true;
}

uint8_t *wire_init_put(uint8_t *d, uint32_t sender)
{
	wire_put32(d, WIRE_INIT);
	wire_put32(d + 4, sender);
	return d + WIRE_INIT_MSG1;
}

bool wire_init_get(struct wire_init *m, const uint8_t *d, size_t len)
{
	if (len < WIRE_INIT_LEN || len > WIRE_INIT_MAX || wire_get32(d) != WIRE_INIT)
		return false;
	m->sender = wire_get32(d + 4);
	m->msg1 = d + WIRE_INIT_MSG1;
	m->msg1_len = len - WIRE_INIT_MSG1 - 2 * WIRE_MAC_LEN;
	return true;
}

uint8_t *wire_resp_put(uint8_t *d, uint32_t sender, uint32_t receiver)
{
	wire_put32(d, WIRE_RESP);
	wire_put32(d + 4, sender);
	wire_put32(d + 8, receiver);
	return d + WIRE_RESP_MSG2;
}

bool wire_resp_get(struct wire_resp *m, const uint8_t *d, size_t len)
{
	if (len < WIRE_RESP_LEN || len > WIRE_RESP_MAX || wire_get32(d) != WIRE_RESP)
		return false;
	m->sender = wire_get32(d + 4);
	m->receiver = wire_get32(d + 8);
	m->msg2 = d + WIRE_RESP_MSG2;
	m->msg2_len = len - WIRE_RESP_MSG2 - WIRE_MAC_LEN;
	return true;
}

void wire_init_payload_put(uint8_t out[WIRE_INIT_PAYLOAD], const struct wire_init_payload *p)
{
	memcpy(out, p->tai64n, YIP_TAI64N_LEN);
	out[YIP_TAI64N_LEN] = p->ciphers;
}

bool wire_init_payload_get(struct wire_init_payload *p, const uint8_t *in, size_t len)
{
	if (len != WIRE_INIT_PAYLOAD)
		return false;
	memcpy(p->tai64n, in, YIP_TAI64N_LEN);
	p->ciphers = in[YIP_TAI64N_LEN];
	return true;
}

void wire_resp_payload_put(uint8_t out[WIRE_RESP_PAYLOAD], uint8_t cipher)
{
	out[0] = cipher;
}

bool wire_resp_payload_get(uint8_t *cipher, const uint8_t *in, size_t len)
{
	if (len != WIRE_RESP_PAYLOAD)
		return false;
	*cipher = in[0];
	return true;
}

/* ---- Data, Repair and Report ------------------------------------------------ */

void wire_hdr_put(uint8_t d[WIRE_DATA_HDR], const struct wire_hdr *h)
{
	d[0] = h->type;
	d[1] = h->idx;
	wire_put16(d + 2, h->block);
	wire_put32(d + 4, h->receiver);
	wire_put64(d + 8, h->counter);
}

bool wire_hdr_get(struct wire_hdr *h, const uint8_t *d, size_t len)
{
	if (len < WIRE_DATA_MIN)
		return false;
	h->type = d[0];
	h->idx = d[1];
	h->block = wire_get16(d + 2);
	h->receiver = wire_get32(d + 4);
	h->counter = wire_get64(d + 8);
	return true;
}

/* ---- loss recovery plaintexts ------------------------------------------------ */

void wire_sym_put(uint8_t out[WIRE_SYM_HDR], const struct wire_sym *s)
{
	wire_put64(out, s->counter);
	wire_put16(out + 8, s->len);
}

bool wire_sym_get(struct wire_sym *s, const uint8_t *sym, size_t symlen)
{
	if (symlen < WIRE_SYM_HDR)
		return false;
	s->counter = wire_get64(sym);
	s->len = wire_get16(sym + 8);
	return (size_t)s->len <= symlen - WIRE_SYM_HDR;
}

void wire_repair_put(uint8_t out[WIRE_REPAIR_PRE], uint8_t k, uint8_t r)
{
	out[0] = k;
	out[1] = r;
}

bool wire_repair_get(struct wire_repair *m, const uint8_t *plain, size_t len)
{
	if (len < WIRE_REPAIR_PRE + WIRE_SYM_HDR)
		return false;
	m->k = plain[0];
	m->r = plain[1];
	m->sym = plain + WIRE_REPAIR_PRE;
	m->symlen = len - WIRE_REPAIR_PRE;
	return true;
}

void wire_arq_put(uint8_t out[WIRE_ARQ_PRE], uint64_t counter)
{
	wire_put64(out, counter);
}

bool wire_arq_get(struct wire_arq *m, const uint8_t *plain, size_t len)
{
	if (len < WIRE_ARQ_PRE)
		return false;
	m->counter = wire_get64(plain);
	m->pkt = plain + WIRE_ARQ_PRE;
	m->len = len - WIRE_ARQ_PRE;
	return true;
}

/* ---- loss reports ----------------------------------------------------------- */

size_t wire_report_put(uint8_t out[WIRE_REPORT_MAX], const struct wire_report *r)
{
	unsigned n = r->n_nacks < WIRE_REPORT_MAX_NACKS ? r->n_nacks : WIRE_REPORT_MAX_NACKS;

	out[0] = WIRE_REPORT_VERSION;
	out[1] = (uint8_t)n;
	wire_put16(out + 2, 0);
	wire_put32(out + 4, r->received);
	wire_put32(out + 8, r->span);
	wire_put32(out + 12, r->bursts);
	wire_put32(out + 16, r->burst_sum);
	wire_put32(out + 20, r->recovered);
	wire_put32(out + 24, r->unrecovered);
	wire_put32(out + 28, r->ts_us);
	wire_put32(out + 32, r->echo_ts_us);
	wire_put32(out + 36, r->echo_delay_us);
	for (unsigned i = 0; i < n; i++)
		wire_put64(out + WIRE_REPORT_FIXED + 8 * i, r->nacks[i]);
	return WIRE_REPORT_FIXED + 8 * (size_t)n;
}

bool wire_report_get(struct wire_report *r, const uint8_t *in, size_t len)
{
	if (len < WIRE_REPORT_FIXED || in[0] != WIRE_REPORT_VERSION ||
	    in[1] > WIRE_REPORT_MAX_NACKS || wire_get16(in + 2) != 0 ||
	    len != WIRE_REPORT_FIXED + 8 * (size_t)in[1])
		return false;
	r->n_nacks = in[1];
	r->received = wire_get32(in + 4);
	r->span = wire_get32(in + 8);
	r->bursts = wire_get32(in + 12);
	r->burst_sum = wire_get32(in + 16);
	r->recovered = wire_get32(in + 20);
	r->unrecovered = wire_get32(in + 24);
	r->ts_us = wire_get32(in + 28);
	r->echo_ts_us = wire_get32(in + 32);
	r->echo_delay_us = wire_get32(in + 36);
	for (unsigned i = 0; i < r->n_nacks; i++)
		r->nacks[i] = wire_get64(in + WIRE_REPORT_FIXED + 8 * i);
	return true;
}

/* ---- control messages ----------------------------------------------------------- */

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

size_t wire_addr_put(uint8_t out[WIRE_ADDR_MAX], const union yip_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET && a->in4.sin_port != 0) {
		out[0] = 4;
		wire_put16(out + 1, ntohs(a->in4.sin_port));
		memcpy(out + 3, &a->in4.sin_addr, 4);
		return 7;
	}
	if (a->sa.sa_family == AF_INET6 && a->in6.sin6_port != 0) {
		const uint8_t *ip = a->in6.sin6_addr.s6_addr;

		wire_put16(out + 1, ntohs(a->in6.sin6_port));
		if (memcmp(ip, v4_mapped, sizeof(v4_mapped)) == 0) {
			out[0] = 4;
			memcpy(out + 3, ip + 12, 4);
			return 7;
		}
		out[0] = 6;
		memcpy(out + 3, ip, 16);
		return 19;
	}
	return 0;
}

bool wire_addr_get(union yip_sockaddr *a, const uint8_t *in, size_t len, size_t *used)
{
	size_t need;
	uint16_t port;

	if (len < 3 || (in[0] != 4 && in[0] != 6))
		return false;
	need = in[0] == 4 ? 7 : 19;
	port = wire_get16(in + 1);
	/* One encoding per address: IPv4-mapped IPv6 goes as family 4. */
	if (len < need || port == 0 ||
	    (in[0] == 6 && memcmp(in + 3, v4_mapped, sizeof(v4_mapped)) == 0))
		return false;
	memset(a, 0, sizeof(*a));
	if (in[0] == 4) {
		a->in4.sin_family = AF_INET;
		a->in4.sin_port = htons(port);
		memcpy(&a->in4.sin_addr, in + 3, 4);
	} else {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons(port);
		memcpy(&a->in6.sin6_addr, in + 3, 16);
	}
	*used = need;
	return true;
}

/* What each kind carries, in wire order after the kind byte. */
enum {
	F_ID = 1 << 0,
	F_KEY = 1 << 1,
	F_FLAGS = 1 << 2,
	F_TOKEN = 1 << 3,
	F_RELAY_ID = 1 << 4,
	F_ALT = 1 << 5,
	F_NAT = 1 << 6,
	F_ADDR = 1 << 7,
	F_CANDS = 1 << 8,
	F_NONCE = 1 << 9,
	F_TS = 1 << 10,
	F_REASON = 1 << 11,
	F_CERT = 1 << 12,
};

static unsigned ctrl_fields(uint8_t kind)
{
	switch (kind) {
	case WIRE_CTRL_REGISTER:
		return F_FLAGS | F_NAT | F_CANDS;
	case WIRE_CTRL_LOOKUP:
	case WIRE_CTRL_ASK:
	case WIRE_CTRL_UNKNOWN:
		return F_ID | F_KEY;
	case WIRE_CTRL_ANSWER:
		return F_ID | F_KEY | F_FLAGS;
	case WIRE_CTRL_WHOAMI:
		return F_ID;
	case WIRE_CTRL_REGISTERED:
		return F_FLAGS | F_TOKEN | F_RELAY_ID | F_ALT | F_ADDR;
	case WIRE_CTRL_INTRO:
		return F_ID | F_KEY | F_RELAY_ID | F_NAT | F_CANDS;
	case WIRE_CTRL_YOUARE:
		return F_ID | F_ADDR;
	case WIRE_CTRL_PROBE:
	case WIRE_CTRL_PROBE_OK:
		return F_NONCE | F_TS;
	case WIRE_CTRL_MEMBER:
		return F_CERT;
	case WIRE_CTRL_REFUSED:
		return F_REASON;
	default:
		return 0;
	}
}

size_t wire_ctrl_put(uint8_t out[WIRE_CTRL_MAX], const struct wire_ctrl *c)
{
	unsigned f = ctrl_fields(c->kind);
	size_t n = 0, a;

	if (f == 0)
		return 0;
	out[n++] = c->kind;
	if (f & F_ID) {
		wire_put32(out + n, c->id);
		n += 4;
	}
	if (f & F_KEY) {
		memcpy(out + n, c->key, YIP_KEY_LEN);
		n += YIP_KEY_LEN;
	}
	if (f & F_FLAGS)
		out[n++] = c->flags;
	if (f & F_TOKEN) {
		wire_put64(out + n, c->token);
		n += 8;
	}
	if (f & F_RELAY_ID) {
		wire_put32(out + n, c->relay_id);
		n += 4;
	}
	if (f & F_ALT) {
		wire_put16(out + n, c->alt_port);
		n += 2;
	}
	if (f & F_NAT)
		out[n++] = c->nat;
	if (f & F_ADDR) {
		if ((a = wire_addr_put(out + n, &c->addr)) == 0)
			return 0;
		n += a;
	}
	if (f & F_CANDS) {
		if (c->n_cands > WIRE_MAX_CANDS)
			return 0;
		out[n++] = c->n_cands;
		for (unsigned i = 0; i < c->n_cands; i++) {
			if ((a = wire_addr_put(out + n, &c->cands[i])) == 0)
				return 0;
			n += a;
		}
	}
	if (f & F_NONCE) {
		wire_put64(out + n, c->nonce);
		n += 8;
	}
	if (f & F_TS) {
		wire_put32(out + n, c->ts_us);
		n += 4;
	}
	if (f & F_REASON)
		out[n++] = c->reason;
	if (f & F_CERT) {
		if (c->cert_len == 0 || c->cert_len > WIRE_CTRL_CERT_MAX || c->cert == NULL)
			return 0;
		wire_put16(out + n, c->cert_len);
		memcpy(out + n + 2, c->cert, c->cert_len);
		n += 2 + (size_t)c->cert_len;
	}
	return n;
}

bool wire_ctrl_get(struct wire_ctrl *c, const uint8_t *in, size_t len)
{
	struct cur k = cur_in(in, len);
	unsigned f;

	if (len < 1 || (f = ctrl_fields(in[0])) == 0)
		return false;
	memset(c, 0, sizeof(*c));
	c->kind = cur_get8(&k);
	if (f & F_ID)
		c->id = cur_get32(&k);
	if (f & F_KEY)
		cur_copy(&k, c->key, YIP_KEY_LEN);
	if (f & F_FLAGS)
		c->flags = cur_get8(&k);
	if (f & F_TOKEN)
		c->token = cur_get64(&k);
	if (f & F_RELAY_ID)
		c->relay_id = cur_get32(&k);
	if (f & F_ALT)
		c->alt_port = cur_get16(&k);
	if (f & F_NAT) {
		c->nat = cur_get8(&k);
		cur_check(&k, c->nat < WIRE_NAT_COUNT);
	}
	if (f & F_ADDR)
		cur_addr(&k, &c->addr);
	if (f & F_CANDS) {
		c->n_cands = cur_get8(&k);
		cur_check(&k, c->n_cands <= WIRE_MAX_CANDS);
		for (unsigned i = 0; k.ok && i < c->n_cands; i++)
			cur_addr(&k, &c->cands[i]);
	}
	if (f & F_NONCE)
		c->nonce = cur_get64(&k);
	if (f & F_TS)
		c->ts_us = cur_get32(&k);
	if (f & F_REASON)
		c->reason = cur_get8(&k);
	if (f & F_CERT) {
		c->cert_len = cur_get16(&k);
		cur_check(&k, c->cert_len > 0 && c->cert_len <= WIRE_CTRL_CERT_MAX);
		c->cert = cur_take(&k, c->cert_len);
	}
	return cur_end(&k);
}

/* ---- relayed datagrams --------------------------------------------------------- */

void wire_relay_put(uint8_t d[WIRE_RELAY_HDR], uint8_t dir, uint64_t token, uint32_t relay_id)
{
	d[0] = WIRE_RELAY;
	d[1] = dir;
	d[2] = d[3] = 0;
	wire_put64(d + 4, token);
	wire_put32(d + 12, relay_id);
}

bool wire_relay_get(struct wire_relay *m, const uint8_t *d, size_t len)
{
	if (len <= WIRE_RELAY_HDR || d[0] != WIRE_RELAY || d[1] > WIRE_RELAY_FROM_SERVER ||
	    (d[2] | d[3]) != 0)
		return false;
	m->dir = d[1];
	m->token = wire_get64(d + 4);
	m->relay_id = wire_get32(d + 12);
	m->payload = d + WIRE_RELAY_HDR;
	m->len = len - WIRE_RELAY_HDR;
	return true;
}
