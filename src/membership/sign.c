#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "membership/internal.h"

#define SIGN_LABEL "yip record signing key v1"

void member_sign_keypair(const uint8_t yip_private[YIP_KEY_LEN],
                         uint8_t ed_public[MEMBER_SIGN_PUBLIC],
                         uint8_t ed_secret[MEMBER_SIGN_SECRET])
{
	uint8_t seed[crypto_sign_SEEDBYTES];

	crypto_generichash(seed, sizeof(seed), (const uint8_t *)SIGN_LABEL, strlen(SIGN_LABEL),
	                   yip_private, YIP_KEY_LEN);
	crypto_sign_seed_keypair(ed_public, ed_secret, seed);
	sodium_memzero(seed, sizeof(seed));
}

void member_ca_keypair(const uint8_t seed[32], uint8_t ca_public[MEMBER_SIGN_PUBLIC],
                       uint8_t ca_secret[MEMBER_SIGN_SECRET])
{
	crypto_sign_seed_keypair(ca_public, ca_secret, seed);
}

/* The signed message: context, NUL, the object without its signature. Small
 * objects are put together on the stack, a revocation list on the heap. */
#define STACK_MSG 4096

static uint8_t *message(uint8_t *stack, const uint8_t *obj, size_t len, size_t *mlen)
{
	const char *ctx = len > 0 ? wire_obj_context(obj[0]) : NULL;
	size_t clen, blen = wire_obj_signed_len(len);
	uint8_t *m;

	if (ctx == NULL || blen == 0)
		return NULL;
	clen = strlen(ctx) + 1;
	*mlen = clen + blen;
	m = *mlen <= STACK_MSG ? stack : malloc(*mlen);
	if (m == NULL)
		return NULL;
	memcpy(m, ctx, clen);
	memcpy(m + clen, obj, blen);
	return m;
}

int sig_put(uint8_t *obj, size_t len, const uint8_t secret[MEMBER_SIGN_SECRET])
{
	uint8_t stack[STACK_MSG], *m;
	size_t mlen;

	m = message(stack, obj, len, &mlen);
	if (m == NULL)
		return -1;
	crypto_sign_detached(obj + wire_obj_signed_len(len), NULL, m, mlen, secret);
	if (m != stack)
		free(m);
	return 0;
}

bool sig_ok(const uint8_t *obj, size_t len, const uint8_t pub[MEMBER_SIGN_PUBLIC])
{
	uint8_t stack[STACK_MSG], *m;
	size_t mlen;
	bool ok;

	m = message(stack, obj, len, &mlen);
	if (m == NULL)
		return false;
	ok = crypto_sign_verify_detached(obj + wire_obj_signed_len(len), m, mlen, pub) == 0;
	if (m != stack)
		free(m);
	return ok;
}

void member_cert_hash(const struct member_cert *c, uint8_t out[MEMBER_HASH_LEN])
{
	crypto_generichash(out, MEMBER_HASH_LEN, c->raw, c->len, NULL, 0);
}
