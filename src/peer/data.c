/* Keys, the send queue, and the data path in both directions. */
#include "peer/internal.h"

#include <sodium.h>
#include <string.h>

#include <linux/if_ether.h>

#include "mac/mac.h"
#include "route/route.h"
#include "util/log.h"

void kp_clear(struct yip_device *dev, struct yip_keypair *kp)
{
	if (kp->valid)
		index_del(dev, kp->local_index);
	sodium_memzero(kp, sizeof(*kp));
}

/* Moves a keypair between slots; its index keeps pointing at the same peer. */
void kp_move(struct yip_device *dev, struct yip_keypair *dst, struct yip_keypair *src)
{
	kp_clear(dev, dst);
	*dst = *src;
	sodium_memzero(src, sizeof(*src));
}

/* Marks a freshly split keypair usable and schedules its rekey. */
void kp_install(struct yip_peer *p, struct yip_keypair *kp, uint64_t now)
{
	kp->valid = true;
	kp->created = now;
	kp->send_counter = 0;
	replay_init(&kp->replay);
	p->stats.handshakes++;
	p->stats.last_handshake_wall = p->dev->io.wall_ns(p->dev->io.ctx);
	schedule(p->dev, now + rekey_age(p));
}

/* The age at which this side starts a rekey of its current session: the
 * side that initiated it rekeys first; the other only as a fallback. */
uint64_t rekey_age(const struct yip_peer *p)
{
	const struct yip_timing *t = &p->dev->t;

	return p->cur.initiator ? t->rekey_after : t->rekey_after + t->rekey_after / 2;
}

bool session_usable(const struct yip_peer *p, uint64_t now)
{
	const struct yip_keypair *kp = &p->cur;

	return kp->valid && now - kp->created < p->dev->t.reject_after &&
	       kp->send_counter < YIP_REJECT_AFTER_MESSAGES;
}

void maybe_rekey(struct yip_peer *p, uint64_t now)
{
	if (!p->cur.valid || p->hs_pending)
		return;
	if (now - p->cur.created >= rekey_age(p) || p->cur.send_counter >= YIP_REKEY_AFTER_MESSAGES)
		hs_start(p, now);
}

void endpoint_update(struct yip_peer *p, const union yip_sockaddr *src)
{
	char a[YIP_ADDRSTRLEN], b[YIP_ADDRSTRLEN];

	if (p->has_endpoint && yip_sockaddr_eq(&p->endpoint, src))
		return;
	if (p->has_endpoint) {
		p->stats.roams++;
		yip_sockaddr_format(&p->endpoint, a, sizeof(a));
		yip_sockaddr_format(src, b, sizeof(b));
		log_info("peer %02x%02x%02x%02x: endpoint moved from %s to %s", p->public_key[0],
		         p->public_key[1], p->public_key[2], p->public_key[3], a, b);
	}
	p->endpoint = *src;
	p->has_endpoint = true;
}

/*
 * Seals pre || pkt as a datagram of the given type under the current keys and
 * queues it for sending. Returns the counter used. pre (at most 16 bytes) is
 * copied in front of the packet; with no pre the packet is sealed straight
 * from where it lies.
 */
uint64_t seal_send(struct yip_peer *p, uint64_t now, uint8_t type, uint8_t idx, uint16_t block,
                   const uint8_t *pre, size_t prelen, const uint8_t *pkt, size_t len)
{
	struct yip_device *dev = p->dev;
	struct yip_keypair *kp = &p->cur;
	uint8_t *d = dev->io.udp_buf(dev->io.ctx);
	uint64_t counter = kp->send_counter++;
	size_t total = WIRE_DATA_HDR + prelen + len + YIP_AEAD_TAG;
	uint32_t train;

	wire_data_header(d, type, idx, block, kp->remote_index, counter);
	if (dev->io.seal_later != NULL) {
		if (prelen > 0) /* pre is NULL without one: memcpy from NULL is undefined */
			memcpy(d + WIRE_DATA_HDR, pre, prelen);
		memcpy(d + WIRE_DATA_HDR + prelen, pkt, len);
		dev->io.seal_later(dev->io.ctx, d, WIRE_DATA_HDR, prelen + len, &kp->send, counter);
	} else if (prelen == 0) {
		yip_cipher_seal(d + WIRE_DATA_HDR, &kp->send, counter, d, WIRE_DATA_HDR, pkt, len);
	} else {
		memcpy(d + WIRE_DATA_HDR, pre, prelen);
		memcpy(d + WIRE_DATA_HDR + prelen, pkt, len);
		yip_cipher_seal(d + WIRE_DATA_HDR, &kp->send, counter, d, WIRE_DATA_HDR,
		                d + WIRE_DATA_HDR, prelen + len);
	}
	/* Sources (idx < FEC_MAX_K) and repairs of one block share a train tag. */
	train = (type == WIRE_REPAIR || idx < FEC_MAX_K) ? 0x10000u | block : 0;
	dev->io.udp_send(dev->io.ctx, &p->endpoint, total, train);
	p->last_tx = now;
	p->stats.wire_bytes += total;
	return counter;
}

/* The traffic class of a packet, or of the IP packet inside a TAP frame. */
static enum flow_class classify(struct yip_device *dev, const uint8_t *pkt, size_t len,
                                uint64_t now)
{
	if (dev->macs != NULL) {
		uint16_t type;

		if (len < ETH_HLEN)
			return FLOW_DEFAULT;
		type = (uint16_t)(pkt[12] << 8 | pkt[13]);
		if (type != ETH_P_IP && type != ETH_P_IPV6)
			return FLOW_DEFAULT;
		pkt += ETH_HLEN;
		len -= ETH_HLEN;
	}
	return flow_classify(dev->flows, pkt, len, now);
}

/* Sends one inner packet (len may be 0: a keepalive) under the current keys. */
void send_data(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len)
{
	struct yip_device *dev = p->dev;

	if (len == 0) {
		seal_send(p, now, WIRE_DATA, WIRE_FEC_NONE, 0, NULL, 0, pkt, 0);
		return;
	}
	if (dev->fec_off)
		seal_send(p, now, WIRE_DATA, WIRE_FEC_NONE, 0, NULL, 0, pkt, len);
	else
		fec_tx_packet(p, now, classify(dev, pkt, len, now), pkt, len);
	p->last_tx_data = now;
	p->stats.tx_packets++;
	p->stats.tx_bytes += len;
	if (p->first_unanswered == 0) {
		p->first_unanswered = now;
		schedule(dev, now + dev->t.dead_after);
	}
}

static void queue_push(struct yip_peer *p, const uint8_t *pkt, size_t len)
{
	unsigned slot;

	if (p->queue_count == YIP_QUEUE_LEN) {
		p->queue_head = (p->queue_head + 1) % YIP_QUEUE_LEN;
		p->queue_count--;
		yip_device_drop(p->dev, YIP_DROP_QUEUE_FULL);
	}
	slot = (p->queue_head + p->queue_count) % YIP_QUEUE_LEN;
	memcpy(p->queue + (size_t)slot * p->dev->pkt_max, pkt, len);
	p->queue_len[slot] = (uint16_t)len;
	p->queue_count++;
}

void queue_flush(struct yip_peer *p, uint64_t now)
{
	while (p->queue_count > 0 && session_usable(p, now)) {
		unsigned slot = p->queue_head;

		send_data(p, now, p->queue + (size_t)slot * p->dev->pkt_max, p->queue_len[slot]);
		p->queue_head = (slot + 1) % YIP_QUEUE_LEN;
		p->queue_count--;
	}
}

void queue_drop_all(struct yip_peer *p, enum yip_drop why)
{
	p->dev->drops[why] += p->queue_count;
	p->queue_head = p->queue_count = 0;
}

/* Destination (for egress) or source (for ingress) of an IP packet. */
static const uint8_t *inner_addr(const uint8_t *pkt, size_t len, bool dst, int *family,
                                 size_t *total)
{
	if (len >= 20 && pkt[0] >> 4 == 4) {
		*family = AF_INET;
		*total = (size_t)pkt[2] << 8 | pkt[3];
		if ((pkt[0] & 0x0f) < 5 || *total < 20 || *total > len)
			return NULL;
		return pkt + (dst ? 16 : 12);
	}
	if (len >= 40 && pkt[0] >> 4 == 6) {
		*family = AF_INET6;
		*total = 40 + ((size_t)pkt[4] << 8 | pkt[5]);
		if (*total > len)
			return NULL;
		return pkt + (dst ? 24 : 8);
	}
	return NULL;
}

/* Sends to one peer now, or queues while its handshake runs. */
static void send_to_peer(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len)
{
	if (!p->has_endpoint) {
		yip_device_drop(p->dev, YIP_DROP_NO_ENDPOINT);
		return;
	}
	if (session_usable(p, now) && p->queue_count == 0) {
		send_data(p, now, pkt, len);
		maybe_rekey(p, now);
		return;
	}
	queue_push(p, pkt, len);
	if (session_usable(p, now))
		queue_flush(p, now);
	else
		hs_start(p, now);
}

/*
 * TAP mode: unicast to a learned MAC goes to the peer it was seen behind;
 * broadcast, multicast and unknown unicast are flooded to every peer with a
 * known endpoint. Frames from peers are only ever written to the device,
 * never forwarded to other peers, so a full mesh has no loops.
 */
static void tx_frame(struct yip_device *dev, uint64_t now, const uint8_t *frame, size_t len)
{
	struct yip_peer *p;

	if (len < ETH_HLEN) {
		yip_device_drop(dev, YIP_DROP_BAD_INNER);
		return;
	}
	p = (frame[0] & 1) ? NULL : mac_lookup(dev->macs, frame, now);
	if (p != NULL) {
		send_to_peer(p, now, frame, len);
		return;
	}
	for (size_t i = 0; i < dev->n_peers; i++)
		if (dev->peers[i].has_endpoint)
			send_to_peer(&dev->peers[i], now, frame, len);
}

void yip_device_tx(struct yip_device *dev, uint64_t now, const uint8_t *pkt, size_t len)
{
	const uint8_t *dst;
	struct yip_peer *p;
	size_t total;
	int family;

	if (len > dev->pkt_max) {
		yip_device_drop(dev, YIP_DROP_TOO_BIG);
		return;
	}
	if (dev->macs != NULL) {
		tx_frame(dev, now, pkt, len);
		return;
	}
	dst = inner_addr(pkt, len, true, &family, &total);
	if (dst == NULL) {
		yip_device_drop(dev, YIP_DROP_BAD_INNER);
		return;
	}
	p = route_lookup(dev->routes, family, dst);
	if (p == NULL) {
		yip_device_drop(dev, YIP_DROP_NO_ROUTE);
		icmp_unreachable(dev, now, pkt, len);
		return;
	}
	send_to_peer(p, now, pkt, len);
}

struct yip_keypair *kp_for_index(struct yip_peer *p, uint32_t index)
{
	if (p->cur.valid && p->cur.local_index == index)
		return &p->cur;
	if (p->next.valid && p->next.local_index == index)
		return &p->next;
	if (p->prev.valid && p->prev.local_index == index)
		return &p->prev;
	return NULL;
}

/* The peer used the keys we made answering its Init: they become current. */
static void promote_next(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;

	fec_tx_flush(p, now); /* repairs for blocks sealed under the old keys go first */
	kp_move(dev, &p->prev, &p->cur);
	p->prev_retire = now + dev->t.prev_overlap;
	schedule(dev, p->prev_retire);
	kp_move(dev, &p->cur, &p->next);
	queue_flush(p, now);
}

/* Checks and writes a decrypted inner packet to the device. Returns true if delivered. */
bool deliver(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len)
{
	struct yip_device *dev = p->dev;
	const uint8_t *src;
	size_t total = len;
	int family;

	if (dev->macs != NULL) {
		/* TAP: learn where the sender lives; a multicast source is forged. */
		if (len < ETH_HLEN || (pkt[6] & 1)) {
			yip_device_drop(dev, YIP_DROP_BAD_INNER);
			return false;
		}
		mac_learn(dev->macs, pkt + 6, p, now);
		goto write;
	}
	src = inner_addr(pkt, len, false, &family, &total);
	if (src == NULL) {
		yip_device_drop(dev, YIP_DROP_BAD_INNER);
		return false;
	}
	if (route_lookup(dev->routes, family, src) != p) {
		yip_device_drop(dev, YIP_DROP_SOURCE_NOT_ALLOWED);
		return false;
	}
write:
	p->last_rx_data = now;
	p->stats.rx_packets++;
	p->stats.rx_bytes += total;
	schedule(dev, now + dev->t.keepalive);
	dev->io.tun_write(dev->io.ctx, pkt, total);
	return true;
}

/*
 * The common front of Data, Repair and Report: find the session by index,
 * check age and replay window, authenticate and decrypt into dev->scratch.
 * Then the side effects of an authenticated datagram: replay window,
 * liveness, roaming, promotion of next keys, loss statistics. Returns the
 * keys it opened with (NULL = dropped) and the plaintext length.
 */
static struct yip_keypair *open_datagram(struct yip_device *dev, uint64_t now,
                                         const union yip_sockaddr *src, const uint8_t *d,
                                         size_t len, struct yip_peer **pp, size_t *plen)
{
	uint32_t index = wire_get32(d + 4);
	uint64_t counter = wire_get64(d + 8);
	struct yip_peer *p = index_find(dev, index);
	struct yip_keypair *kp = p ? kp_for_index(p, index) : NULL;

	if (kp == NULL) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_INDEX);
		return NULL;
	}
	if (now - kp->created >= dev->t.reject_after) {
		yip_device_drop(dev, YIP_DROP_EXPIRED);
		return NULL;
	}
	if (!replay_check(&kp->replay, counter)) {
		yip_device_drop(dev, YIP_DROP_REPLAY);
		return NULL;
	}
	*plen = len - WIRE_DATA_MIN;
	if (*plen > YIP_MAX_DGRAM) {
		yip_device_drop(dev, YIP_DROP_DECRYPT);
		return NULL;
	}
	if (dev->pre.plain != NULL && dev->pre.len == *plen &&
	    yip_cipher_key_eq(dev->pre.key, &kp->recv)) {
		/* Opened on a worker thread with these very keys. */
		if (dev->pre.result != 0) {
			yip_device_drop(dev, YIP_DROP_DECRYPT);
			return NULL;
		}
		memcpy(dev->scratch, dev->pre.plain, *plen);
	} else if (yip_cipher_open(dev->scratch, &kp->recv, counter, d, WIRE_DATA_HDR,
	                           d + WIRE_DATA_HDR, len - WIRE_DATA_HDR) != 0) {
		yip_device_drop(dev, YIP_DROP_DECRYPT);
		return NULL;
	}
	replay_update(&kp->replay, counter);
	p->last_rx = now;
	p->first_unanswered = 0;
	endpoint_update(p, src);
	if (kp == &p->next) {
		promote_next(p, now);
		kp = &p->cur;
	} else if (kp == &p->cur && kp->initiator) {
		maybe_rekey(p, now);
	}
	loss_observe(p, now, kp, counter, d[0] != WIRE_REPORT);
	*pp = p;
	return kp;
}

void rx_data(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len)
{
	struct yip_keypair *kp;
	struct yip_peer *p;
	size_t plen;
	uint8_t idx = d[1];

	kp = open_datagram(dev, now, src, d, len, &p, &plen);
	if (kp == NULL || plen == 0)
		return; /* dropped, or a keepalive */
	if (idx == WIRE_FEC_ARQ) {
		/* A retransmission: the original counter, then the packet. */
		if (plen < 8) {
			yip_device_drop(dev, YIP_DROP_BAD_INNER);
			return;
		}
		miss_resolve(p, wire_get64(dev->scratch));
		if (deliver(p, now, dev->scratch + 8, plen - 8))
			p->stats.arq_recovered++;
		return;
	}
	deliver(p, now, dev->scratch, plen);
	if (idx < FEC_MAX_K && !dev->fec_off)
		fec_rx_source(p, now, kp, idx, wire_block(d), wire_get64(d + 8), dev->scratch,
		              plen);
}

void rx_repair(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
               const uint8_t *d, size_t len)
{
	struct yip_keypair *kp;
	struct yip_peer *p;
	size_t plen;

	kp = open_datagram(dev, now, src, d, len, &p, &plen);
	if (kp == NULL)
		return;
	if (dev->fec_off || d[1] >= FEC_MAX_R || plen < 2 + YIP_SYM_HDR) {
		yip_device_drop(dev, YIP_DROP_BAD_REPAIR);
		return;
	}
	fec_rx_repair(p, now, kp, d[1], wire_block(d), dev->scratch, plen);
}

void rx_report(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
               const uint8_t *d, size_t len)
{
	struct yip_keypair *kp;
	struct yip_peer *p;
	size_t plen;

	kp = open_datagram(dev, now, src, d, len, &p, &plen);
	if (kp != NULL)
		report_receive(p, now, dev->scratch, plen);
}

const struct yip_cipher_key *yip_device_rx_key(struct yip_device *dev, const uint8_t *d, size_t len)
{
	int t = wire_classify(d, len);
	struct yip_keypair *kp;
	struct yip_peer *p;

	if (t != WIRE_DATA && t != WIRE_REPAIR && t != WIRE_REPORT)
		return NULL;
	p = index_find(dev, wire_get32(d + 4));
	kp = p ? kp_for_index(p, wire_get32(d + 4)) : NULL;
	return kp != NULL ? &kp->recv : NULL;
}
