/*
 * Longest-prefix-match table from IPv4/IPv6 prefixes to opaque values: a
 * binary trie over a node pool allocated once at creation, so lookups and
 * inserts never allocate. One table holds both families.
 */
#ifndef YIP_ROUTE_ROUTE_H
#define YIP_ROUTE_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"

struct route_table;

/* Creates a table able to hold max_prefixes prefixes of any length. NULL on allocation failure. */
struct route_table *route_table_new(size_t max_prefixes);
void route_table_free(struct route_table *t);

/*
 * Inserts prefix -> value (value must not be NULL). Returns 0, -1 if the
 * table is full, or -2 if exactly this prefix is already present (value
 * unchanged).
 */
int route_insert(struct route_table *t, const struct yip_cidr *prefix, void *value);

/* Removes exactly this prefix. Returns 0, or -1 if absent. */
int route_remove(struct route_table *t, const struct yip_cidr *prefix);

/* Removes every prefix mapping to value. Returns how many were removed. */
size_t route_remove_value(struct route_table *t, void *value);

/* Longest-prefix match of addr (4 or 16 bytes by family). NULL when nothing matches. */
void *route_lookup(const struct route_table *t, int family, const uint8_t *addr);

#endif
