/*
 * The two ways a datagram finds its peer.
 *
 * Receiver-chosen session indices (data, Resps). Every session (and every handshake we
 * initiate) gets a random non-zero 32-bit index; the peer puts it in each
 * datagram it sends us, so a datagram finds its session in O(1) without
 * trial decryption. Open addressing with linear probing; deletion shifts
 * later entries back so no tombstones are needed.
 *
 * The static public key (Inits), known only after the first DH.
 */
#include "peer/internal.h"

#include <sodium.h>

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

struct yip_peer *index_key_find(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN])
{
	/* Only handshakes come here, after a DH; a scan is cheap next to that. */
	for (size_t i = 0; i < dev->n_peers; i++)
		if (sodium_memcmp(dev->peers[i].public_key, pub, YIP_KEY_LEN) == 0)
			return &dev->peers[i];
	return NULL;
}
