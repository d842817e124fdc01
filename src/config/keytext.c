#include "config/keytext.h"

#include <sodium.h>
#include <string.h>

#include "crypto/crypto.h"
#include "membership/member.h"
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

/* The private key on the first line of in, and its public key. 0, or -1
 * with a reason. */
static int read_private(FILE *in, uint8_t priv[YIP_KEY_LEN], uint8_t pub[YIP_KEY_LEN], char *reason,
                        size_t rlen)
{
	char line[256], *s, *end;
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
	if (yip_hex_decode(priv, YIP_KEY_LEN, s) != 0)
		snprintf(reason, rlen, "expected 64 hex digits, got '%.80s'", s);
	else if (yip_key_public(pub, priv) != 0)
		snprintf(reason, rlen, "the all-zero key is not a valid private key");
	else
		rc = 0;
	sodium_memzero(line, sizeof(line));
	return rc;
}

int keytext_pubkey(FILE *in, FILE *out, char *reason, size_t rlen)
{
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	char hex[2 * YIP_KEY_LEN + 1];
	int rc = read_private(in, priv, pub, reason, rlen);

	sodium_memzero(priv, sizeof(priv));
	if (rc != 0)
		return -1;
	yip_hex_encode(hex, pub, YIP_KEY_LEN);
	fprintf(out, "%s\n", hex);
	return fflush(out) == 0 ? 0 : -2;
}

int keytext_cert_request(FILE *in, FILE *out, char *reason, size_t rlen)
{
	uint8_t priv[YIP_KEY_LEN], pub[YIP_KEY_LEN];
	struct member_request req;
	char hex[2 * YIP_KEY_LEN + 1], text[512];
	int rc = read_private(in, priv, pub, reason, rlen);

	if (rc == 0 && member_request_make(&req, priv) != 0) {
		snprintf(reason, rlen, "the all-zero key is not a valid private key");
		rc = -1;
	}
	sodium_memzero(priv, sizeof(priv));
	if (rc != 0)
		return -1;
	if (member_armor(text, sizeof(text), req.raw, req.len) == 0) {
		snprintf(reason, rlen, "cannot write the request");
		return -1;
	}
	fprintf(out, "# yip certificate request: give it to the network's CA, who runs\n"
	             "#   yip-ca sign-cert --request FILE ...\n");
	yip_hex_encode(hex, req.f.key, YIP_KEY_LEN);
	fprintf(out, "# member key:  %s\n", hex);
	yip_hex_encode(hex, req.f.sign_key, WIRE_SIGN_KEY);
	fprintf(out, "# signing key: %s\n%s", hex, text);
	return fflush(out) == 0 ? 0 : -2;
}
