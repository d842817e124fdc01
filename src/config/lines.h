/*
 * The line format both of yip's text files use (yipd's configuration,
 * yip-rendezvous's settings and key files): lines of key=value, '#'
 * comments, blank lines, an optional UTF-8 byte order mark. What the keys
 * mean is each parser's own; reading the lines, and the messages for what
 * is wrong with one, are shared here.
 */
#ifndef YIP_CONFIG_LINES_H
#define YIP_CONFIG_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/crypto.h"

#define LINES_MAX 4096 /* characters in a line, not counting the newline */

/*
 * Calls fn for every line of text that holds something once its comment
 * is cut off, trimmed, with its number (from 1). A line longer than
 * LINES_MAX or with a NUL byte is an error. Stops at the first non-zero
 * return of fn, or the first bad line; the line's number goes to *at, and
 * for a bad line the reason to reason. The copy of each line is wiped
 * after use (a line may hold a private key).
 */
int lines_each(const char *text, size_t len, int (*fn)(void *arg, unsigned line, char *s),
               void *arg, unsigned *at, char *reason, size_t rlen);

/* Trims spaces and tabs at both ends in place; returns the start. */
char *lines_trim(char *s);

/* Splits s at its first '=' into trimmed key and value; false if there is none. */
bool lines_pair(char *s, char **key, char **value);

/* A 64-digit hex key named what, with a message saying what is wrong with a bad one. */
int lines_hex_key(const char *what, const char *value, uint8_t key[YIP_KEY_LEN], char *reason,
                  size_t rlen);

#endif
