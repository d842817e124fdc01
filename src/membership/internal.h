/*
 * The files of the membership module, bottom to top. Each file calls only
 * the files listed above it (scripts/layering.py checks):
 *
 *   names.c     verdict and kind names, dates and durations in words
 *   sign.c      key pairs, context-separated signatures, certificate hashes
 *   objects.c   parse, sign and check each kind of object
 *   armor.c     the text form
 *   describe.c  objects in words
 */
#ifndef YIP_MEMBERSHIP_INTERNAL_H
#define YIP_MEMBERSHIP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "membership/member.h"

/* Signs the object of len bytes in obj (its kind is obj[0]) in place: the
 * last WIRE_SIG_LEN bytes get the signature over its context and the rest.
 * 0, or -1 for an unknown kind or (large objects) no memory. */
int sig_put(uint8_t *obj, size_t len, const uint8_t secret[MEMBER_SIGN_SECRET]);

/* Verifies the signature at the end of the object of len bytes under pub.
 * False also for an unknown kind or (large objects) no memory. */
bool sig_ok(const uint8_t *obj, size_t len, const uint8_t pub[MEMBER_SIGN_PUBLIC]);

#endif
