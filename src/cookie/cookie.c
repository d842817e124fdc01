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
	randombytes_buf(c->nonce_base, sizeof(c->nonce_base));
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

/* IP || port of a, at out; its length. */
static size_t addr_bytes(uint8_t *out, const union yip_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET) {
		memcpy(out, &a->in4.sin_addr, 4);
		memcpy(out + 4, &a->in4.sin_port, 2);
		return 6;
	}
	memcpy(out, &a->in6.sin6_addr, 16);
	memcpy(out + 16, &a->in6.sin6_port, 2);
	return 18;
}

void cookie_source_addr(struct cookie_source *s, const union yip_sockaddr *a)
{
	s->len = (uint8_t)addr_bytes(s->b, a);
}

void cookie_source_relay(struct cookie_source *s, const union yip_sockaddr *server,
                         uint32_t relay_id)
{
	size_t n;

	s->b[0] = 'R';
	n = 1 + addr_bytes(s->b + 1, server);
	s->b[n] = (uint8_t)(relay_id >> 24);
	s->b[n + 1] = (uint8_t)(relay_id >> 16);
	s->b[n + 2] = (uint8_t)(relay_id >> 8);
	s->b[n + 3] = (uint8_t)relay_id;
	s->len = (uint8_t)(n + 4);
}

/* The cookie for src: a MAC of it under the current secret. */
static void cookie_of(struct cookie_checker *c, uint64_t now, const struct cookie_source *src,
                      uint8_t out[WIRE_COOKIE_LEN])
{
	if (c->secret_at == 0 || now - c->secret_at >= COOKIE_SECRET_AGE) {
		randombytes_buf(c->secret, sizeof(c->secret));
		c->secret_at = now;
	}
	crypto_generichash(out, WIRE_COOKIE_LEN, src->b, src->len, c->secret, sizeof(c->secret));
}

bool cookie_check(struct cookie_checker *c, uint64_t now, const struct cookie_source *src,
                  const uint8_t *d, size_t len)
{
	uint8_t cookie[WIRE_COOKIE_LEN];
	bool ok;

	cookie_of(c, now, src, cookie);
	ok = wire_mac2_ok_n(d, len, cookie);
	sodium_memzero(cookie, sizeof(cookie));
	return ok;
}

void cookie_reply(struct cookie_checker *c, uint64_t now, const struct cookie_source *src,
                  const uint8_t *d, size_t len, uint8_t out[WIRE_COOKIE_MSG])
{
	uint8_t cookie[WIRE_COOKIE_LEN];
	struct wire_init m;
	uint8_t *nonce;
	uint64_t n;

	if (!wire_init_get(&m, d, len))
		return;
	cookie_of(c, now, src, cookie);
	nonce = wire_cookie_put(out, m.sender);
	/* The base with the count added to its first 8 bytes (cookie.h). */
	memcpy(nonce, c->nonce_base, WIRE_COOKIE_NONCE);
	memcpy(&n, c->nonce_base, sizeof(n));
	n += c->sealed++;
	memcpy(nonce, &n, sizeof(n));
	crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + WIRE_COOKIE_NONCE, NULL, cookie,
	                                           sizeof(cookie), d + len - 2 * WIRE_MAC_LEN,
	                                           WIRE_MAC_LEN, NULL, nonce, c->seal_key);
	sodium_memzero(cookie, sizeof(cookie));
}

void cookie_jar_init(struct cookie_jar *j, const uint8_t their_pub[YIP_KEY_LEN])
{
	memset(j, 0, sizeof(*j));
	seal_key(j->open_key, their_pub);
}

void cookie_jar_stamp(struct cookie_jar *j, uint64_t now, uint8_t *d, size_t len)
{
	memcpy(j->last_mac1, d + len - 2 * WIRE_MAC_LEN, WIRE_MAC_LEN);
	j->sent = true;
	if (j->got != 0 && now - j->got < COOKIE_KEEP)
		wire_mac2_put_n(d, len, j->cookie);
	else
		memset(d + len - WIRE_MAC_LEN, 0, WIRE_MAC_LEN);
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
