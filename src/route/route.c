/*
 * Longest-prefix-match table: a path-compressed binary trie per address
 * family.
 *
 * Every node carries a key and a prefix length. A child's prefix always
 * extends its parent's, and the child hangs off the side given by the first
 * bit past the parent's prefix. A node either holds a value (it is one of the
 * inserted prefixes) or is a fork where two subtrees diverge and so has
 * exactly two children. Removal restores that rule by splicing out valueless
 * nodes with fewer than two children, so a family holding n prefixes never
 * uses more than 2n - 1 nodes. A pool of 2 * max_prefixes nodes is therefore
 * always enough, and freed nodes go back to a free list for reuse. Nodes
 * never used yet are taken from the pool in order, so a table only writes
 * (and makes resident) the part of its pool it has needed: a CA-gated
 * engine sizes its pool for 1024 dynamic peers.
 *
 * Prefix lengths strictly grow going down, so no path is longer than 129
 * nodes; that bounds both the walks and the recursion in route_remove_value.
 */
#include "route/route.h"

#include <stdlib.h>
#include <string.h>

struct node {
	struct node *child[2]; /* child[0] doubles as the free-list link */
	void *value;           /* NULL for a fork */
	uint8_t key[16];       /* only the first plen bits mean anything */
	uint8_t plen;
};

struct route_table {
	struct node *root[2]; /* IPv4, IPv6 */
	struct node *pool;
	struct node *free;
	size_t fresh; /* pool[fresh..] has never been used (and is on no list) */
	size_t nfree; /* on the free list, plus never used */
	size_t count; /* prefixes held */
	size_t max;
};

/* Bit i of key, counting from the most significant bit of byte 0. */
static unsigned bit_at(const uint8_t *key, unsigned i)
{
	return (key[i / 8] >> (7 - i % 8)) & 1;
}

/* How many leading bits a and b share, looking at no more than limit bits. */
static unsigned common_bits(const uint8_t *a, const uint8_t *b, unsigned limit)
{
	unsigned i;

	for (i = 0; i < limit; i += 8) {
		unsigned x = a[i / 8] ^ b[i / 8];

		if (x) {
			/* x is promoted to 32 bits: skip the 24 that are always zero. */
			i += (unsigned)__builtin_clz(x) - 24;
			break;
		}
	}
	return i < limit ? i : limit;
}

/* Index of the family's root and its address length in bits, or -1. */
static int family_index(int family, unsigned *bits)
{
	switch (family) {
	case AF_INET:
		*bits = 32;
		return 0;
	case AF_INET6:
		*bits = 128;
		return 1;
	default:
		return -1;
	}
}

/*
 * Copies the prefix's address into key. Returns the root index, or -1 for a
 * bad family or length. Only the first plen bits of a key are ever read, so
 * host bits a caller leaves set do no harm.
 */
static int prefix_key(const struct yip_cidr *prefix, uint8_t key[16])
{
	unsigned bits;
	int idx = family_index(prefix->family, &bits);

	if (idx < 0 || prefix->plen > bits)
		return -1;
	memset(key, 0, 16);
	memcpy(key, prefix->addr, bits / 8);
	return idx;
}

static struct node *node_new(struct route_table *t, const uint8_t key[16], unsigned plen,
                             void *value)
{
	struct node *n = t->free;

	if (n != NULL)
		t->free = n->child[0];
	else
		n = &t->pool[t->fresh++];
	t->nfree--;
	memset(n, 0, sizeof(*n));
	memcpy(n->key, key, 16);
	n->plen = (uint8_t)plen;
	n->value = value;
	return n;
}

static void node_free(struct route_table *t, struct node *n)
{
	n->child[0] = t->free;
	t->free = n;
	t->nfree++;
}

struct route_table *route_table_new(size_t max_prefixes)
{
	struct route_table *t;
	size_t nodes;

	if (max_prefixes > SIZE_MAX / 2 / sizeof(struct node))
		return NULL;
	nodes = 2 * max_prefixes;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pool = calloc(nodes ? nodes : 1, sizeof(struct node));
	if (!t->pool) {
		free(t);
		return NULL;
	}
	t->nfree = nodes;
	t->max = max_prefixes;
	return t;
}

void route_table_free(struct route_table *t)
{
	if (!t)
		return;
	free(t->pool);
	free(t);
}

int route_insert(struct route_table *t, const struct yip_cidr *prefix, void *value)
{
	uint8_t key[16];
	unsigned plen = prefix->plen, common = 0;
	struct node **slot, *n, *leaf, *fork;
	int idx = prefix_key(prefix, key);

	if (idx < 0 || !value)
		return -1;

	/* Descend while the node's prefix covers ours. */
	for (slot = &t->root[idx]; (n = *slot); slot = &n->child[bit_at(key, n->plen)]) {
		common = common_bits(n->key, key, n->plen < plen ? n->plen : plen);
		if (common < n->plen)
			break;
		if (n->plen == plen) {
			if (n->value)
				return -2;
			if (t->count == t->max)
				return -1;
			/* A fork becomes a prefix of its own. */
			n->value = value;
			t->count++;
			return 0;
		}
	}

	/* The pool check is belt and braces: the node bound guarantees room. */
	if (t->count == t->max || t->nfree < 2)
		return -1;
	leaf = node_new(t, key, plen, value);
	if (!n) {
		*slot = leaf;
	} else if (common == plen) {
		/* Our prefix covers n: slot it in above n. */
		leaf->child[bit_at(n->key, plen)] = n;
		*slot = leaf;
	} else {
		/* The two diverge after common bits: join them under a fork. */
		fork = node_new(t, key, common, NULL);
		fork->child[bit_at(key, common)] = leaf;
		fork->child[bit_at(n->key, common)] = n;
		*slot = fork;
	}
	t->count++;
	return 0;
}

/* Splices out the node at *slot if it has no value and fewer than two children. */
static void collapse(struct route_table *t, struct node **slot)
{
	struct node *n = *slot;

	if (n->value || (n->child[0] && n->child[1]))
		return;
	*slot = n->child[0] ? n->child[0] : n->child[1];
	node_free(t, n);
}

int route_remove(struct route_table *t, const struct yip_cidr *prefix)
{
	uint8_t key[16];
	unsigned plen = prefix->plen;
	struct node **slot, **parent_slot = NULL, *n;
	int idx = prefix_key(prefix, key);

	if (idx < 0)
		return -1;
	for (slot = &t->root[idx]; (n = *slot); slot = &n->child[bit_at(key, n->plen)]) {
		if (n->plen > plen || common_bits(n->key, key, n->plen) < n->plen)
			return -1;
		if (n->plen == plen)
			break;
		parent_slot = slot;
	}
	if (!n || !n->value)
		return -1;

	n->value = NULL;
	t->count--;
	/*
	 * If n had no children it disappears, which may leave its parent a
	 * fork with one child; nothing further up changes shape.
	 */
	collapse(t, slot);
	if (parent_slot)
		collapse(t, parent_slot);
	return 0;
}

/* Post-order, so each node is tidied after its subtrees have shrunk. */
static size_t prune(struct route_table *t, struct node **slot, void *value)
{
	struct node *n = *slot;
	size_t removed;

	if (!n)
		return 0;
	removed = prune(t, &n->child[0], value) + prune(t, &n->child[1], value);
	if (n->value == value) {
		n->value = NULL;
		removed++;
	}
	collapse(t, slot);
	return removed;
}

size_t route_remove_value(struct route_table *t, void *value)
{
	size_t removed;

	if (!value)
		return 0;
	removed = prune(t, &t->root[0], value) + prune(t, &t->root[1], value);
	t->count -= removed;
	return removed;
}

void *route_lookup(const struct route_table *t, int family, const uint8_t *addr)
{
	unsigned bits;
	const struct node *n;
	void *best = NULL;
	int idx = family_index(family, &bits);

	if (idx < 0)
		return NULL;
	for (n = t->root[idx]; n; n = n->child[bit_at(addr, n->plen)]) {
		if (common_bits(n->key, addr, n->plen) < n->plen)
			break;
		if (n->value)
			best = n->value;
		if (n->plen == bits)
			break;
	}
	return best;
}
