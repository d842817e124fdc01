/* A node's side of a rendezvous session, in miniature; see rdvclient.h. */
#include "rdvclient.h"

#include <arpa/inet.h>
#include <sodium.h>
#include <string.h>

void rdvc_init(struct rdvc *c, const uint8_t *priv, const char *ip, uint16_t port)
{
	memset(c, 0, sizeof(*c));
	if (priv != NULL)
		memcpy(c->priv, priv, YIP_KEY_LEN);
	else
		yip_key_generate(c->priv);
	yip_key_public(c->pub, c->priv);
	if (strchr(ip, ':') != NULL) {
		c->addr.in6.sin6_family = AF_INET6;
		c->addr.in6.sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &c->addr.in6.sin6_addr);
	} else {
		c->addr.in4.sin_family = AF_INET;
		c->addr.in4.sin_port = htons(port);
		inet_pton(AF_INET, ip, &c->addr.in4.sin_addr);
	}
}

void rdvc_wipe(struct rdvc *c)
{
	sodium_memzero(c, sizeof(*c));
}

size_t rdvc_init_msg(struct rdvc *c, const uint8_t server_pub[YIP_KEY_LEN], uint64_t wall_ns,
                     unsigned ciphers, uint8_t out[WIRE_INIT_LEN])
{
	struct wire_init_payload pl = {.ciphers = (uint8_t)ciphers};
	uint8_t payload[WIRE_INIT_PAYLOAD], mac1[YIP_KEY_LEN];
	uint8_t *msg1;

	randombytes_buf(&c->sender, sizeof(c->sender));
	noise_hs_init(&c->hs, true, (const uint8_t *)WIRE_PROLOGUE, WIRE_PROLOGUE_LEN, c->priv,
	              c->pub, server_pub);
	yip_tai64n(pl.tai64n, wall_ns);
	wire_init_payload_put(payload, &pl);
	msg1 = wire_init_put(out, c->sender);
	if (noise_write_msg1(&c->hs, payload, sizeof(payload), msg1, WIRE_MSG1_LEN) !=
	    WIRE_MSG1_LEN) {
		noise_hs_wipe(&c->hs);
		c->pending = false;
		return 0;
	}
	wire_mac1_key(mac1, server_pub);
	wire_init_mac1_put(out, mac1);
	c->pending = true;
	return WIRE_INIT_LEN;
}

bool rdvc_resp(struct rdvc *c, const uint8_t *d, size_t len)
{
	uint8_t payload[WIRE_RESP_PAYLOAD], cipher;
	struct wire_resp m;
	struct noise_hs hs;

	if (!c->pending || wire_classify(d, len) != WIRE_RESP || !wire_resp_get(&m, d, len) ||
	    m.receiver != c->sender)
		return false;
	hs = c->hs; /* a Resp that fails leaves the handshake as it was */
	if (noise_read_msg2(&hs, m.msg2, WIRE_MSG2_LEN, payload, sizeof(payload)) !=
	        (int)sizeof(payload) ||
	    !wire_resp_payload_get(&cipher, payload, sizeof(payload)) ||
	    cipher >= YIP_CIPHER_COUNT) {
		noise_hs_wipe(&hs);
		return false;
	}
	noise_split(&hs, c->send, c->recv, NULL);
	noise_hs_wipe(&c->hs);
	c->pending = false;
	c->up = true;
	c->cipher = cipher;
	c->local = c->sender;
	c->remote = m.sender;
	c->send_counter = 0;
	c->registered = false;
	return true;
}

size_t rdvc_seal_at(struct rdvc *c, uint64_t counter, const uint8_t *plain, size_t plen,
                    uint8_t *out)
{
	struct wire_hdr h = {WIRE_CTRL, 0, 0, c->remote, counter};
	struct yip_cipher_key key;

	if (!c->up)
		return 0;
	wire_hdr_put(out, &h);
	yip_cipher_key_set(&key, (enum yip_cipher)c->cipher, c->send);
	yip_cipher_seal(out + WIRE_DATA_HDR, &key, counter, out, WIRE_DATA_HDR, plain, plen);
	sodium_memzero(&key, sizeof(key));
	return WIRE_DATA_MIN + plen;
}

size_t rdvc_seal(struct rdvc *c, const uint8_t *plain, size_t plen, uint8_t *out)
{
	size_t n = rdvc_seal_at(c, c->send_counter, plain, plen, out);

	if (n > 0)
		c->send_counter++;
	return n;
}

size_t rdvc_seal_ctrl(struct rdvc *c, const struct wire_ctrl *m, uint8_t *out)
{
	uint8_t plain[WIRE_CTRL_MAX];
	size_t len = wire_ctrl_put(plain, m);

	return len == 0 ? 0 : rdvc_seal(c, plain, len, out);
}

bool rdvc_open(struct rdvc *c, const uint8_t *d, size_t len, struct wire_ctrl *m)
{
	uint8_t plain[WIRE_CTRL_MAX];
	struct yip_cipher_key key;
	struct wire_hdr h;
	int rc;

	if (!c->up || wire_classify(d, len) != WIRE_CTRL || !wire_hdr_get(&h, d, len) ||
	    h.receiver != c->local || wire_plain_len(len) > sizeof(plain))
		return false;
	yip_cipher_key_set(&key, (enum yip_cipher)c->cipher, c->recv);
	rc = yip_cipher_open(plain, &key, h.counter, d, WIRE_DATA_HDR, d + WIRE_DATA_HDR,
	                     len - WIRE_DATA_HDR);
	sodium_memzero(&key, sizeof(key));
	if (rc != 0 || !wire_ctrl_get(m, plain, wire_plain_len(len)))
		return false;
	if (m->kind == WIRE_CTRL_REGISTERED) {
		c->registered = true;
		c->token = m->token;
		c->relay_id = m->relay_id;
	}
	return true;
}
