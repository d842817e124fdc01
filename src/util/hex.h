/* Strict hexadecimal encoding and decoding. */
#ifndef YIP_UTIL_HEX_H
#define YIP_UTIL_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Writes 2*len hex digits and a NUL to out (which holds 2*len+1 bytes). */
void yip_hex_encode(char *out, const uint8_t *in, size_t len);

/*
 * Decodes exactly 2*len hex digits from in (upper or lower case) into out.
 * Returns 0 on success; -1 if in is not exactly 2*len characters long or holds
 * a character that is not a hex digit. out is left zeroed on failure.
 */
int yip_hex_decode(uint8_t *out, size_t len, const char *in);

#endif
