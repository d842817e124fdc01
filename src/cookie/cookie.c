#include "cookie/cookie.h"

#include <sodium.h>
#include <string.h>

_Static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == WIRE_COOKIE_NONCE,
               "the Cookie's nonce is XChaCha20's");

static void seal_key(uint8_t key[YIP_KEY_LEN], const uint8_t pub[YIP_KEY_LEN])
{
	static const char label[] = "yip-cookie-v1";
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, YIP_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, sizeof(label) - 1);
	crypto_generichash_update(&st, pub, YIP_KEY_LEN);
	crypto_generichash_final(&st, key, YIP_KEY_LEN);
}

void cookie_checker_init(struct cookie_checker *c, const uint8_t our_pub[YIP_KEY_LEN])
{
	memset(c, 0, sizeof(*c));
	seal_key(c->seal_key, our_pub);
}

void cookie_checker_wipe(struct cookie_checker *c)
{
	sodium_memzero(c, sizeof(*c));
}

bool cookie_under_load(struct cookie_checker *c, uint64_t now, unsigned threshold)
{
	if (c->window_at == 0 || now - c->window_at >= 1000000000ULL) {
		/* A window with nothing in between counts as quiet. */
		c->last_count = now - c->window_at < 2000000000ULL ? c->count : 0;
		c->count = 0;
		c->window_at = now;
	}
	c->count++;
	return c->count > threshold || c->last_count > threshold;
}

/* The cookie for src: a MAC of its address under the current secret. */
static void cookie_of(struct cookie_checker *c, uint64_t now, const union yip_sockaddr *src,
                      uint8_t out[WIRE_COOKIE_LEN])
{
	uint8_t msg[18];
	size_t n;

	if (c->secret_at == 0 || now - c->secret_at >= COOKIE_SECRET_AGE) {
		randombytes_buf(c->secret, sizeof(c->secret));
		c->secret_at = now;
	}
	if (src->sa.sa_family == AF_INET) {
		memcpy(msg, &src->in4.sin_addr, 4);
		memcpy(msg + 4, &src->in4.sin_port, 2);
		n = 6;
	} else {
		memcpy(msg, &src->in6.sin6_addr, 16);
		memcpy(msg + 16, &src->in6.sin6_port, 2);
		n = 18;
	}
	crypto_generichash(out, WIRE_COOKIE_LEN, msg, n, c->secret, sizeof(c->secret));
}

bool cookie_check(struct cookie_checker *c, uint64_t now, const union yip_sockaddr *src,
                  const uint8_t *d)
{
	uint8_t cookie[WIRE_COOKIE_LEN];
	bool ok;

	cookie_of(c, now, src, cookie);
	ok = wire_mac2_ok(d, cookie);
	sodium_memzero(cookie, sizeof(cookie));
	return ok;
}

void cookie_reply(struct cookie_checker *c, uint64_t now, const union yip_sockaddr *src,
                  const uint8_t *d, uint8_t out[WIRE_COOKIE_MSG])
{
	uint8_t cookie[WIRE_COOKIE_LEN];
	struct wire_init m;
	uint8_t *nonce;

	if (!wire_init_get(&m, d, WIRE_INIT_LEN))
		return;
	cookie_of(c, now, src, cookie);
	nonce = wire_cookie_put(out, m.sender);
	randombytes_buf(nonce, WIRE_COOKIE_NONCE);
	crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + WIRE_COOKIE_NONCE, NULL, cookie,
	                                           sizeof(cookie), d + WIRE_INIT_MAC1, WIRE_MAC_LEN,
	                                           NULL, nonce, c->seal_key);
	sodium_memzero(cookie, sizeof(cookie));
}

void cookie_jar_init(struct cookie_jar *j, const uint8_t their_pub[YIP_KEY_LEN])
{
	memset(j, 0, sizeof(*j));
	seal_key(j->open_key, their_pub);
}

void cookie_jar_stamp(struct cookie_jar *j, uint64_t now, uint8_t d[WIRE_INIT_LEN])
{
	memcpy(j->last_mac1, d + WIRE_INIT_MAC1, WIRE_MAC_LEN);
	j->sent = true;
	if (j->got != 0 && now - j->got < COOKIE_KEEP)
		wire_mac2_put(d, j->cookie);
	else
		memset(d + WIRE_INIT_MAC2, 0, WIRE_MAC_LEN);
}

bool cookie_jar_take(struct cookie_jar *j, uint64_t now, const struct wire_cookie *m)
{
	uint8_t cookie[WIRE_COOKIE_LEN];

	if (!j->sent || crypto_aead_xchacha20poly1305_ietf_decrypt(
	                    cookie, NULL, NULL, m->sealed, WIRE_COOKIE_LEN + YIP_AEAD_TAG,
	                    j->last_mac1, WIRE_MAC_LEN, m->nonce, j->open_key) != 0)
		return false;
	memcpy(j->cookie, cookie, sizeof(cookie));
	j->got = now;
	sodium_memzero(cookie, sizeof(cookie));
	return true;
}
