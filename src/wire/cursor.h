/*
 * The bounded cursor every variable-length layout of src/wire is read and
 * written with (wire.c's control messages, member.c's objects, gossip.c's
 * messages). A cursor covers len bytes, an encoder's output or a decoder's
 * input, and n of them are used; ok turns false at the first field that
 * does not fit or that a check refuses, and stays false: every later read
 * returns zeros or NULL and every later write does nothing, so a decoder
 * reads its fields in order and looks at ok once, at the end
 * (cur_end: all of the input used). Only src/wire includes this.
 */
#ifndef YIP_WIRE_CURSOR_H
#define YIP_WIRE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/wire.h"

struct cur {
	uint8_t *out;
	const uint8_t *in;
	size_t len, n;
	bool ok;
};

/* A cursor over a decoder's input, and over an encoder's output. */
static inline struct cur cur_in(const uint8_t *in, size_t len)
{
	return (struct cur){.in = in, .len = len, .ok = true};
}

static inline struct cur cur_out(uint8_t *out, size_t cap)
{
	return (struct cur){.out = out, .len = cap, .ok = true};
}

/* cond must hold: ok turns false if it does not. */
static inline void cur_check(struct cur *c, bool cond)
{
	if (!cond)
		c->ok = false;
}

/* Whether k more bytes fit (ok turns false if not). */
static inline bool cur_room(struct cur *c, size_t k)
{
	if (c->ok && c->len - c->n < k)
		c->ok = false;
	return c->ok;
}

/* The bytes left after the cursor (0 once ok is false). */
static inline size_t cur_left(const struct cur *c)
{
	return c->ok ? c->len - c->n : 0;
}

/* ok, and every byte used: a decoder's verdict. */
static inline bool cur_end(const struct cur *c)
{
	return c->ok && c->n == c->len;
}

/* ---- writing ---- */

static inline void cur_put(struct cur *c, const void *p, size_t k)
{
	if (cur_room(c, k)) {
		memcpy(c->out + c->n, p, k);
		c->n += k;
	}
}

static inline void cur_put8(struct cur *c, uint8_t v)
{
	cur_put(c, &v, 1);
}

static inline void cur_put16(struct cur *c, uint16_t v)
{
	uint8_t b[2];

	wire_put16(b, v);
	cur_put(c, b, 2);
}

static inline void cur_put64(struct cur *c, uint64_t v)
{
	uint8_t b[8];

	wire_put64(b, v);
	cur_put(c, b, 8);
}

/* ---- reading ---- */

/* The next k bytes, or NULL (ok false) if they are not there. */
static inline const uint8_t *cur_take(struct cur *c, size_t k)
{
	const uint8_t *p;

	if (!cur_room(c, k))
		return NULL;
	p = c->in + c->n;
	c->n += k;
	return p;
}

/* The rest of the input, however long (NULL once ok is false). */
static inline const uint8_t *cur_rest(struct cur *c, size_t *k)
{
	*k = cur_left(c);
	return cur_take(c, *k);
}

static inline uint8_t cur_get8(struct cur *c)
{
	const uint8_t *p = cur_take(c, 1);

	return p ? p[0] : 0;
}

static inline uint16_t cur_get16(struct cur *c)
{
	const uint8_t *p = cur_take(c, 2);

	return p ? wire_get16(p) : 0;
}

static inline uint32_t cur_get32(struct cur *c)
{
	const uint8_t *p = cur_take(c, 4);

	return p ? wire_get32(p) : 0;
}

static inline uint64_t cur_get64(struct cur *c)
{
	const uint8_t *p = cur_take(c, 8);

	return p ? wire_get64(p) : 0;
}

/* Copies the next k bytes to dst (left as it was if they are not there). */
static inline void cur_copy(struct cur *c, void *dst, size_t k)
{
	const uint8_t *p = cur_take(c, k);

	if (p)
		memcpy(dst, p, k);
}

/* An address (wire_addr_get's encoding) at the cursor. */
static inline void cur_addr(struct cur *c, union yip_sockaddr *a)
{
	size_t used = 0;

	if (!c->ok)
		return;
	if (!wire_addr_get(a, c->in + c->n, c->len - c->n, &used)) {
		c->ok = false;
		return;
	}
	c->n += used;
}

#endif
