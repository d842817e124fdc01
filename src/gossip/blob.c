/*
 * Item versions. The three hashes are part of the protocol: every node
 * must compute them alike for the anti-entropy tree to agree
 * (docs/protocol.md, "Gossip").
 *
 *   chash = BLAKE2b-64(bytes)
 *   pos   = top 18 bits of BLAKE2b-64(kind || id)
 *   ihash = BLAKE2b-64(kind || id || version || chash)
 *
 * where BLAKE2b-64 is unkeyed BLAKE2b with an 8-byte output read as a
 * little-endian integer, and version and chash are 8 little-endian bytes.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/internal.h"
#include "wire/wire.h"

static uint64_t b2b64(const uint8_t *p, size_t len)
{
	uint8_t h[8];

	crypto_generichash(h, sizeof(h), p, len, NULL, 0);
	return wire_get64(h);
}

/* Fills in pos and ihash from kind, id, version and chash. */
static void blob_hashes(struct gossip_blob *b)
{
	uint8_t in[1 + GOSSIP_ID_LEN + 16];

	in[0] = b->kind;
	memcpy(in + 1, b->id, GOSSIP_ID_LEN);
	b->pos = (uint32_t)(b2b64(in, 1 + GOSSIP_ID_LEN) >> (64 - WIRE_GOSSIP_POS_BITS));
	wire_put64(in + 1 + GOSSIP_ID_LEN, b->version);
	wire_put64(in + 9 + GOSSIP_ID_LEN, b->chash);
	b->ihash = b2b64(in, sizeof(in));
}

static struct gossip_blob *blob_alloc(uint8_t kind, const uint8_t id[GOSSIP_ID_LEN],
                                      uint64_t version, size_t len)
{
	struct gossip_blob *b;

	if (len > GOSSIP_MAX_ITEM || (b = malloc(sizeof(*b) + len)) == NULL)
		return NULL;
	b->refs = 1;
	b->len = (uint32_t)len;
	b->kind = kind;
	memcpy(b->id, id, GOSSIP_ID_LEN);
	b->version = version;
	b->chash = 0;
	b->pos = 0;
	b->ihash = 0;
	return b;
}

struct gossip_blob *gossip_blob_new(uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                                    const uint8_t *bytes, size_t len)
{
	struct gossip_blob *b = blob_alloc(kind, id, version, len);

	if (b == NULL)
		return NULL;
	if (len > 0)
		memcpy(b->bytes, bytes, len);
	b->chash = b2b64(b->bytes, len);
	blob_hashes(b);
	return b;
}

struct gossip_blob *blob_empty(uint8_t kind, const uint8_t id[GOSSIP_ID_LEN], uint64_t version,
                               size_t len)
{
	struct gossip_blob *b = blob_alloc(kind, id, version, len);

	if (b != NULL && len > 0)
		memset(b->bytes, 0, len);
	return b;
}

bool blob_seal(struct gossip_blob *b, uint64_t chash)
{
	if (b2b64(b->bytes, b->len) != chash)
		return false;
	b->chash = chash;
	blob_hashes(b);
	return true;
}

void gossip_blob_ref(struct gossip_blob *b)
{
	b->refs++;
}

void gossip_blob_unref(struct gossip_blob *b)
{
	if (b != NULL && --b->refs == 0)
		free(b);
}
