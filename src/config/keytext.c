#include "config/keytext.h"

#include <sodium.h>
#include <string.h>

#include "crypto/crypto.h"
#include "util/hex.h"

int keytext_genkey(FILE *out)
{
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	char hex[2 * YIP_KEY_LEN + 1];

	yip_key_generate(priv);
	yip_key_public(pub, priv);
	yip_hex_encode(hex, priv, YIP_KEY_LEN);
	fprintf(out, "private=%s\n", hex);
	yip_hex_encode(hex, pub, YIP_KEY_LEN);
	fprintf(out, "public=%s\n", hex);
	sodium_memzero(priv, sizeof(priv));
	sodium_memzero(hex, sizeof(hex));
	return fflush(out) == 0 ? 0 : -1;
}

int keytext_pubkey(FILE *in, FILE *out, char *reason, size_t rlen)
{
	char line[256], *s, *end, hex[2 * YIP_KEY_LEN + 1];
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	int rc = -1;

	if (fgets(line, sizeof(line), in) == NULL) {
		snprintf(reason, rlen, "expected a private key on standard input");
		return -1;
	}
	s = line + strspn(line, " \t");
	if (strncmp(s, "private=", 8) == 0)
		s += 8;
	end = s + strcspn(s, " \t\r\n");
	*end = '\0';
	if (yip_hex_decode(priv, YIP_KEY_LEN, s) != 0) {
		snprintf(reason, rlen, "expected 64 hex digits, got '%.80s'", s);
	} else if (yip_key_public(pub, priv) != 0) {
		snprintf(reason, rlen, "the all-zero key is not a valid private key");
	} else {
		yip_hex_encode(hex, pub, YIP_KEY_LEN);
		fprintf(out, "%s\n", hex);
		rc = fflush(out) == 0 ? 0 : -2;
	}
	sodium_memzero(line, sizeof(line));
	sodium_memzero(priv, sizeof(priv));
	return rc;
}
