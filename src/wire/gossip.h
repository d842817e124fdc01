/*
 * Gossip messages: the plaintext of one gossip datagram, which rides
 * inside an encrypted session between two nodes (docs/protocol.md,
 * "Gossip"; docs/gossip.md explains the protocol). This header is the
 * byte-level truth. Multi-byte fields are little-endian.
 *
 *   SUMMARY   1 | flags u8 | count u32 | settled u64 | current u64          (22 B)
 *   TREE      2 | level u8 | index u32 | first u8 | n u8 | n x child
 *   DIGEST    3 | flags u8 | level u8 | index u32 | n u8 | n x entry
 *   ANNOUNCE  4 | n u8 | n x entry
 *   PULL      5 | n u8 | n x pull
 *   ITEM      6 | kind u8 | id 32 | version u64 | chash u64 | total u32 | offset u32 | data
 *
 *   child  (10 B): hash u64 | count u16 (saturated at 65535)
 *   entry  (53 B): kind u8 | id 32 | version u64 | chash u64 | length u32
 *   pull   (57 B): kind u8 | id 32 | version u64 | chash u64 | offset u32 | length u32
 *
 * An item is (kind, id) at a version; chash is the first 8 bytes, read
 * little-endian, of BLAKE2b-64 of its bytes. Items are placed in a tree
 * of fanout 64 and depth 3 by an 18-bit position (gossip/gossip.h); a
 * TREE lists children first..first+n-1 of node `index` at `level` (0 is
 * the root, index < 64^level); a DIGEST lists entries under node `index`
 * at `level` 1..3.
 *
 * Every decoder below refuses trailing bytes, counts that do not match the
 * length, an unknown type, non-zero reserved flag bits, lengths over
 * WIRE_GOSSIP_MAX_ITEM and offsets off the 64-byte unit grid, so each
 * message has one encoding.
 */
#ifndef YIP_WIRE_GOSSIP_H
#define YIP_WIRE_GOSSIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_GOSSIP_WUR __attribute__((warn_unused_result))

enum wire_gossip_type {
	WIRE_GOSSIP_SUMMARY = 1,  /* anti-entropy: my set's hashes */
	WIRE_GOSSIP_TREE = 2,     /* the children of one tree node */
	WIRE_GOSSIP_DIGEST = 3,   /* the entries under one tree node */
	WIRE_GOSSIP_ANNOUNCE = 4, /* these items changed, or you lack them */
	WIRE_GOSSIP_PULL = 5,     /* send me these items (byte ranges) */
	WIRE_GOSSIP_ITEM = 6,     /* bytes of one item */
};

#define WIRE_GOSSIP_ID_LEN 32
/* Bytes of one item at most: room for the largest revocation list
 * (135 320 bytes, protocol.md §12.4). */
#define WIRE_GOSSIP_MAX_ITEM 262144
#define WIRE_GOSSIP_UNIT     64 /* ITEM and PULL offsets are multiples of this */
#define WIRE_GOSSIP_FANOUT   64 /* children of a tree node */
#define WIRE_GOSSIP_DEPTH    3  /* levels below the root */
#define WIRE_GOSSIP_POS_BITS 18 /* 6 bits per level */

#define WIRE_GOSSIP_SUMMARY_LEN 22
#define WIRE_GOSSIP_TREE_HDR    8
#define WIRE_GOSSIP_DIGEST_HDR  8
#define WIRE_GOSSIP_LIST_HDR    2 /* ANNOUNCE and PULL */
#define WIRE_GOSSIP_ITEM_HDR    58
#define WIRE_GOSSIP_CHILD       10
#define WIRE_GOSSIP_ENTRY       53
#define WIRE_GOSSIP_PULL_LEN    57

/* The smallest message budget an engine accepts: an ITEM carries three units. */
#define WIRE_GOSSIP_MIN_MTU 256
/* The largest message: a TREE of 64 children, or an ITEM within a 64 KiB datagram. */
#define WIRE_GOSSIP_MAX_MTU 65535

_Static_assert(WIRE_GOSSIP_TREE_HDR + WIRE_GOSSIP_FANOUT * WIRE_GOSSIP_CHILD == 648,
               "a full TREE is 648 bytes (docs/protocol.md)");

/* SUMMARY flags */
#define WIRE_GOSSIP_WISHED 0x01 /* the sender chose the receiver as a neighbour */
/* DIGEST flags */
#define WIRE_GOSSIP_REPLY 0x01 /* answer with an ANNOUNCE of what I lack or hold older */

/* An item's identity and version, as in ANNOUNCE and DIGEST. */
struct wire_gossip_entry {
	uint8_t kind;
	uint8_t id[WIRE_GOSSIP_ID_LEN];
	uint64_t version;
	uint64_t chash;
	uint32_t len; /* <= WIRE_GOSSIP_MAX_ITEM */
};

/* A request for bytes [offset, offset + length) of one version of an
 * item; length 0 means to the end. */
struct wire_gossip_pull {
	uint8_t kind;
	uint8_t id[WIRE_GOSSIP_ID_LEN];
	uint64_t version;
	uint64_t chash;
	uint32_t offset; /* a multiple of WIRE_GOSSIP_UNIT, <= WIRE_GOSSIP_MAX_ITEM */
	uint32_t length;
};

/* One decoded message. The records of a list (TREE children, entries,
 * pulls) stay in the input: read them with the getters below. */
struct wire_gossip {
	uint8_t type;
	uint8_t flags;  /* SUMMARY, DIGEST */
	uint8_t level;  /* TREE 0..2, DIGEST 1..3 */
	uint32_t index; /* TREE, DIGEST: < 64^level */
	uint8_t first;  /* TREE: the first child listed */
	uint8_t n;      /* TREE, DIGEST, ANNOUNCE, PULL: records in list */
	const uint8_t *list;
	uint32_t count;   /* SUMMARY: the sender's items */
	uint64_t settled; /* SUMMARY: root hash of the settled set */
	uint64_t current; /* SUMMARY: root hash of the current set */
	/* ITEM */
	uint8_t kind;
	const uint8_t *id; /* WIRE_GOSSIP_ID_LEN bytes in the input */
	uint64_t version;
	uint64_t chash;
	uint32_t total;  /* the item's length */
	uint32_t offset; /* of data in the item */
	const uint8_t *data;
	uint32_t len; /* of data */
};

/*
 * Decodes one message. False unless in is exactly one message of a known
 * type whose fields are in range (see the top of this file); on true, every
 * pointer in m points into in.
 */
bool wire_gossip_get(struct wire_gossip *m, const uint8_t *in, size_t len) WIRE_GOSSIP_WUR;

/* Record i (< m->n) of a decoded message's list. */
void wire_gossip_child_at(const struct wire_gossip *m, unsigned i, uint64_t *hash, uint16_t *count);
void wire_gossip_entry_at(const struct wire_gossip *m, unsigned i, struct wire_gossip_entry *e);
void wire_gossip_pull_at(const struct wire_gossip *m, unsigned i, struct wire_gossip_pull *p);

/*
 * Encoders for building a message in place: a header, then records after
 * it. The caller keeps within its budget; each returns the bytes written.
 */
size_t wire_gossip_summary_put(uint8_t out[WIRE_GOSSIP_SUMMARY_LEN], uint8_t flags, uint32_t count,
                               uint64_t settled, uint64_t current);
size_t wire_gossip_tree_hdr_put(uint8_t out[WIRE_GOSSIP_TREE_HDR], uint8_t level, uint32_t index,
                                uint8_t first, uint8_t n);
size_t wire_gossip_digest_hdr_put(uint8_t out[WIRE_GOSSIP_DIGEST_HDR], uint8_t flags, uint8_t level,
                                  uint32_t index, uint8_t n);
size_t wire_gossip_list_hdr_put(uint8_t out[WIRE_GOSSIP_LIST_HDR], uint8_t type, uint8_t n);
size_t wire_gossip_child_put(uint8_t out[WIRE_GOSSIP_CHILD], uint64_t hash, uint32_t count);
size_t wire_gossip_entry_put(uint8_t out[WIRE_GOSSIP_ENTRY], const struct wire_gossip_entry *e);
size_t wire_gossip_pull_put(uint8_t out[WIRE_GOSSIP_PULL_LEN], const struct wire_gossip_pull *p);
/* An ITEM's header for data [offset, offset + len) of an item of total bytes. */
size_t wire_gossip_item_hdr_put(uint8_t out[WIRE_GOSSIP_ITEM_HDR], uint8_t kind,
                                const uint8_t id[WIRE_GOSSIP_ID_LEN], uint64_t version,
                                uint64_t chash, uint32_t total, uint32_t offset);

/*
 * Encodes a whole message from m (as wire_gossip_get fills it, lists read
 * from m->list, ITEM data from m->data) into out; returns its length, or 0
 * if it needs more than cap bytes or a field is out of range.
 */
size_t wire_gossip_put(uint8_t *out, size_t cap, const struct wire_gossip *m);

#endif
