#include "wire/wire.h"

#include <sodium.h>
#include <string.h>

int wire_classify(const uint8_t *d, size_t len)
{
	bool zero;

	if (len < 4)
		return 0;
	zero = (d[1] | d[2] | d[3]) == 0;
	switch (d[0]) {
	case WIRE_INIT:
		return zero && len == WIRE_INIT_LEN ? WIRE_INIT : 0;
	case WIRE_RESP:
		return zero && len == WIRE_RESP_LEN ? WIRE_RESP : 0;
	case WIRE_DATA:
		return len >= WIRE_DATA_MIN ? WIRE_DATA : 0;
	case WIRE_REPAIR:
		return len >= WIRE_DATA_MIN + WIRE_REPAIR_PRE + WIRE_SYM_HDR ? WIRE_REPAIR : 0;
	case WIRE_REPORT:
		return zero && len >= WIRE_DATA_MIN ? WIRE_REPORT : 0;
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

uint8_t *wire_init_put(uint8_t *d, uint32_t sender)
{
	wire_put32(d, WIRE_INIT);
	wire_put32(d + 4, sender);
	return d + WIRE_INIT_MSG1;
}

bool wire_init_get(struct wire_init *m, const uint8_t *d, size_t len)
{
	if (len != WIRE_INIT_LEN || wire_get32(d) != WIRE_INIT)
		return false;
	m->sender = wire_get32(d + 4);
	m->msg1 = d + WIRE_INIT_MSG1;
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
	if (len != WIRE_RESP_LEN || wire_get32(d) != WIRE_RESP)
		return false;
	m->sender = wire_get32(d + 4);
	m->receiver = wire_get32(d + 8);
	m->msg2 = d + WIRE_RESP_MSG2;
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
