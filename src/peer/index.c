/*
 * The two ways a datagram finds its peer.
 *
 * Receiver-chosen session indices (data, Resps). Every session (and every handshake we
 * initiate) gets a random non-zero 32-bit index; the peer puts it in each
 * datagram it sends us, so a datagram finds its session in O(1) without
 * trial decryption. Open addressing with linear probing; deletion shifts
 * later entries back so no tombstones are needed.
 *
 * The static public key (Inits), known only after the first DH: a chained
 * hash table keyed with the device's secret hash key, so a stranger cannot
 * choose keys that pile up in one chain. Both tables grow as peers are
 * added, never on the per-packet path.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_find(const struct yip_device *dev, uint32_t index)
{
	size_t i = index & dev->index_mask;

	while (dev->index[i].index != 0 && dev->index[i].index != index)
		i = (i + 1) & dev->index_mask;
	return i;
}

int index_add(struct yip_device *dev, struct yip_peer *p, uint32_t *out)
{
	for (int tries = 0; tries < 64; tries++) {
		uint32_t index;
		size_t i;

		randombytes_buf(&index, sizeof(index));
		if (index == 0)
			continue;
		i = slot_find(dev, index);
		if (dev->index[i].index == index)
			continue; /* collision with a live index: draw again */
		dev->index[i].index = index;
		dev->index[i].peer = p;
		*out = index;
		return 0;
	}
	return -1;
}

void index_del(struct yip_device *dev, uint32_t index)
{
	size_t i, j;

	if (index == 0)
		return;
	i = slot_find(dev, index);
	if (dev->index[i].index != index)
		return;
	/* Backward-shift deletion: pull later members of the probe run into the hole. */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & dev->index_mask;
		if (dev->index[j].index == 0)
			break;
		home = dev->index[j].index & dev->index_mask;
		/* Entry j may move to i only if its home slot is not in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			dev->index[i] = dev->index[j];
			i = j;
		}
	}
	dev->index[i].index = 0;
	dev->index[i].peer = NULL;
}

struct yip_peer *index_find(const struct yip_device *dev, uint32_t index)
{
	size_t i;

	if (index == 0)
		return NULL;
	i = slot_find(dev, index);
	return dev->index[i].index == index ? dev->index[i].peer : NULL;
}

/* Room for the sessions of n peers: at most four live indices each
 * (handshake, previous, current, next), the table at most a quarter full
 * so probe runs stay short. Rehashes into a larger table when needed. */
int index_reserve(struct yip_device *dev, size_t n)
{
	size_t slots = dev->index ? dev->index_mask + 1 : 0, want = 64;
	struct yip_index_slot *old = dev->index, *t;
	size_t old_slots = slots;

	while (want < n * 16)
		want *= 2;
	if (want <= slots)
		return 0;
	t = calloc(want, sizeof(*t));
	if (t == NULL)
		return -1;
	dev->index = t;
	dev->index_mask = want - 1;
	for (size_t i = 0; i < old_slots; i++)
		if (old[i].index != 0)
			dev->index[slot_find(dev, old[i].index)] = old[i];
	free(old);
	return 0;
}

static size_t key_bucket(const struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN])
{
	uint8_t h[crypto_shorthash_BYTES];
	uint64_t v;

	crypto_shorthash(h, pub, YIP_KEY_LEN, dev->hash_key);
	memcpy(&v, h, sizeof(v));
	return (size_t)v & dev->keytab_mask;
}

static void key_insert(struct yip_device *dev, struct yip_peer *p)
{
	size_t b = key_bucket(dev, p->public_key);

	p->key_next = dev->keytab[b];
	dev->keytab[b] = p;
}

/* At least n buckets (at most one peer a bucket on average); the peers in
 * dev->peers but skip are entered again. 0, or -1. */
static int keytab_grow(struct yip_device *dev, size_t n, const struct yip_peer *skip)
{
	size_t buckets = dev->keytab ? dev->keytab_mask + 1 : 0;
	size_t want = buckets ? 2 * buckets : 16;
	struct yip_peer **t;

	if (n <= buckets)
		return 0;
	while (want < n)
		want *= 2;
	t = calloc(want, sizeof(*t));
	if (t == NULL)
		return -1;
	free(dev->keytab);
	dev->keytab = t;
	dev->keytab_mask = want - 1;
	for (size_t i = 0; i < dev->n_peers; i++)
		if (dev->peers[i] != skip)
			key_insert(dev, dev->peers[i]);
	return 0;
}

int index_key_reserve(struct yip_device *dev, size_t n)
{
	return keytab_grow(dev, n, NULL);
}

int index_key_add(struct yip_device *dev, struct yip_peer *p)
{
	/* p is in dev->peers already, not yet in the table. */
	if (keytab_grow(dev, dev->n_peers, p) != 0)
		return -1;
	key_insert(dev, p);
	return 0;
}

void index_key_del(struct yip_device *dev, struct yip_peer *p)
{
	struct yip_peer **pp;

	if (dev->keytab == NULL)
		return;
	for (pp = &dev->keytab[key_bucket(dev, p->public_key)]; *pp; pp = &(*pp)->key_next)
		if (*pp == p) {
			*pp = p->key_next;
			p->key_next = NULL;
			return;
		}
}

struct yip_peer *index_key_find(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN])
{
	if (dev->keytab == NULL)
		return NULL;
	for (struct yip_peer *p = dev->keytab[key_bucket(dev, pub)]; p; p = p->key_next)
		if (sodium_memcmp(p->public_key, pub, YIP_KEY_LEN) == 0)
			return p;
	return NULL;
}
