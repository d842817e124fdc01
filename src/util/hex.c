/*
 * Strict hexadecimal encoding and decoding.
 *
 * Keys pass through here, so neither direction indexes a table or branches on
 * the value of a secret byte: digits are mapped with arithmetic masks, and the
 * decoder checks every digit before it reports failure.
 */
#include "util/hex.h"

#include <string.h>

/* Maps 0..15 to '0'..'9', 'a'..'f' without a lookup table. */
static char encode_nibble(unsigned int v)
{
	/* For v >= 10 add the distance from '9'+1 to 'a' (39); the mask is all ones then. */
	unsigned int above9 = (9U - v) >> 8 & 0xffU;

	return (char)('0' + v + (above9 & 39U));
}

void yip_hex_encode(char *out, const uint8_t *in, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = encode_nibble(in[i] >> 4);
		out[2 * i + 1] = encode_nibble(in[i] & 0x0fU);
	}
	out[2 * len] = '\0';
}

/*
 * Returns 1 if lo <= c <= hi, else 0, for c, lo and hi in 0..255. Subtracting
 * in unsigned arithmetic borrows into the high bits exactly when c is outside.
 */
static unsigned int in_range(unsigned int c, unsigned int lo, unsigned int hi)
{
	return (((c - lo) | (hi - c)) >> 8 & 1U) ^ 1U;
}

/* Decodes one hex digit into *v; returns 1 if c was a hex digit, 0 if not. */
static unsigned int decode_nibble(unsigned char c, unsigned int *v)
{
	unsigned int lower = c | 0x20U; /* folds 'A'..'F' onto 'a'..'f' */
	unsigned int is_digit = in_range(c, '0', '9');
	unsigned int is_alpha = in_range(lower, 'a', 'f');

	*v = ((0U - is_digit) & (c - '0')) | ((0U - is_alpha) & (lower - 'a' + 10U));
	return is_digit | is_alpha;
}

int yip_hex_decode(uint8_t *out, size_t len, const char *in)
{
	unsigned int ok = 1, hi, lo;
	size_t i;

	memset(out, 0, len);
	if (strnlen(in, 2 * len + 1) != 2 * len)
		return -1;
	for (i = 0; i < len; i++) {
		ok &= decode_nibble((unsigned char)in[2 * i], &hi);
		ok &= decode_nibble((unsigned char)in[2 * i + 1], &lo);
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	if (!ok) {
		memset(out, 0, len);
		return -1;
	}
	return 0;
}
