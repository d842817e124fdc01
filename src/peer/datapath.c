/*
 * The data path in both directions. Outbound: a packet from the device
 * finds its peer (allowed_ips, or the MAC table in TAP mode), waits in the
 * peer's queue while a handshake runs, and goes out through loss
 * protection. Inbound: an authenticated datagram is delivered, fed to loss
 * recovery, and may complete a key change that lets queued packets go.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include <linux/if_ether.h>

#include "mac/mac.h"
#include "route/route.h"

/* The queue's buffer exists only while packets wait in it (see queue_push):
 * a peer that never waits for a handshake with traffic holds none. */
static void queue_release(struct yip_peer *p)
{
	if (p->queue != NULL)
		sodium_memzero(p->queue, (size_t)YIP_QUEUE_LEN * p->dev->pkt_max);
	free(p->queue);
	p->queue = NULL;
	p->queue_head = p->queue_count = 0;
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

void datapath_send(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len)
{
	struct yip_device *dev = p->dev;

	if (len == 0) {
		frame_send(p, now, WIRE_DATA, WIRE_FEC_NONE, 0, NULL, 0, pkt, 0);
		return;
	}
	/* A reliable link loses nothing: no repair symbols, no ARQ history. */
	if (dev->fec_off || path_reliable(p))
		frame_send(p, now, WIRE_DATA, WIRE_FEC_NONE, 0, NULL, 0, pkt, len);
	else
		protect_packet(p, now, classify(dev, pkt, len, now), pkt, len);
	p->last_tx_data = now;
	p->stats.tx_packets++;
	p->stats.tx_bytes += len;
	{
		struct yip_traffic *t = frame_traffic(p);

		t->tx_packets++;
		t->tx_bytes += len;
	}
	if (p->first_unanswered == 0) {
		p->first_unanswered = now;
		schedule_peer(p, now + dev->t.dead_after);
	}
}

/* ---- the queue of packets waiting for a handshake ---------------------------- */

static void queue_push(struct yip_peer *p, const uint8_t *pkt, size_t len)
{
	unsigned slot;

	/* Allocated when a handshake first makes a packet wait, released
	 * when the queue empties: once per handshake, not per packet. */
	if (p->queue == NULL &&
	    (p->queue = malloc((size_t)YIP_QUEUE_LEN * p->dev->pkt_max)) == NULL) {
		yip_device_drop(p->dev, YIP_DROP_QUEUE_FULL);
		return;
	}
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

static void queue_flush(struct yip_peer *p, uint64_t now)
{
	while (p->queue_count > 0 && session_usable(p, now)) {
		unsigned slot = p->queue_head;

		datapath_send(p, now, p->queue + (size_t)slot * p->dev->pkt_max,
		              p->queue_len[slot]);
		p->queue_head = (slot + 1) % YIP_QUEUE_LEN;
		p->queue_count--;
	}
	if (p->queue_count == 0)
		queue_release(p);
}

void datapath_queue_drop(struct yip_peer *p, enum yip_drop why)
{
	yip_device_drop_n(p->dev, why, p->queue_count);
	queue_release(p);
}

void datapath_established(struct yip_peer *p, uint64_t now)
{
	if (p->queue_count > 0)
		queue_flush(p, now);
	else
		datapath_send(p, now, (const uint8_t *)"", 0);
}

/* ---- outbound ----------------------------------------------------------------- */

/* Sends to one peer now, or queues while its handshake runs. */
static void send_to_peer(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len)
{
	if (p->n_paths == 0 && p->dev->n_servers == 0) {
		yip_device_drop(p->dev, YIP_DROP_NO_ENDPOINT);
		return;
	}
	if (session_usable(p, now) && p->queue_count == 0) {
		datapath_send(p, now, pkt, len);
		if (session_rekey_due(p, now))
			handshake_start(p, now);
		return;
	}
	queue_push(p, pkt, len);
	if (session_usable(p, now)) {
		queue_flush(p, now);
		return;
	}
	handshake_start(p, now);
	if (!p->hs_pending)
		rendezvous_lookup(p, now); /* no path to try yet: ask the servers */
}

/*
 * TAP mode: unicast to a learned MAC goes to the peer it was seen behind;
 * broadcast, multicast and unknown unicast are flooded to every peer with a
 * known endpoint. Frames from peers are only ever written to the device,
 * never forwarded to other peers, so a full mesh has no loops.
 */
static void tx_frame(struct yip_device *dev, uint64_t now, const uint8_t *frame, size_t len)
{
	uint32_t owner;

	if (len < ETH_HLEN) {
		yip_device_drop(dev, YIP_DROP_BAD_INNER);
		return;
	}
	/* The sender lives on this side: no peer may claim its address. */
	if (!(frame[6] & 1))
		mac_learn(dev->macs, frame + 6, MAC_LOCAL, now);
	owner = (frame[0] & 1) ? 0 : mac_lookup(dev->macs, frame, now);
	if (owner >= 1 && owner <= dev->n_peers) {
		send_to_peer(dev->peers[owner - 1], now, frame, len);
		return;
	}
	for (size_t i = 0; i < dev->n_peers; i++)
		if (dev->peers[i]->has_endpoint)
			send_to_peer(dev->peers[i], now, frame, len);
}

void yip_device_tx(struct yip_device *dev, uint64_t now, const uint8_t *pkt, size_t len)
{
	const uint8_t *dst;
	struct yip_peer *p;
	size_t total, reply;
	int family;

	if (len > dev->pkt_max) {
		yip_device_drop(dev, YIP_DROP_TOO_BIG);
		return;
	}
	if (dev->macs != NULL) {
		tx_frame(dev, now, pkt, len);
		return;
	}
	dst = frame_inner_addr(pkt, len, true, &family, &total);
	if (dst == NULL) {
		yip_device_drop(dev, YIP_DROP_BAD_INNER);
		return;
	}
	p = route_lookup(dev->routes, family, dst);
	/* A member we hold a record of but have no peer for: call it. */
	if (p == NULL && dev->members != NULL && records_lookup(dev, now, family, dst))
		p = route_lookup(dev->routes, family, dst);
	if (p == NULL) {
		yip_device_drop(dev, YIP_DROP_NO_ROUTE);
		reply = icmp_unreachable(dev, now, pkt, len, dev->scratch);
		if (reply > 0)
			frame_tun_write(dev, dev->scratch, reply);
		return;
	}
	send_to_peer(p, now, pkt, len);
}

/* ---- inbound ------------------------------------------------------------------ */

static void rx_data(struct yip_peer *p, uint64_t now, const struct frame_rx *rx)
{
	struct wire_arq arq;

	if (rx->len == 0)
		return; /* a keepalive */
	if (rx->h.idx == WIRE_FEC_ARQ) {
		if (!wire_arq_get(&arq, rx->plain, rx->len)) {
			yip_device_drop(p->dev, YIP_DROP_BAD_INNER);
			return;
		}
		/* Delivered at most once, whatever else carries the packet. */
		if (!recover_arq(p, rx->kp, arq.counter)) {
			yip_device_drop(p->dev, YIP_DROP_ARQ_DUPLICATE);
			return;
		}
		if (frame_deliver(p, now, arq.pkt, arq.len))
			p->stats.arq_recovered++;
		return;
	}
	/* A source of an FEC block: loss recovery delivers it, in order. */
	if (wire_fec_symbol(rx->h.idx) && !p->dev->fec_off)
		recover_source(p, now, rx);
	else
		frame_deliver(p, now, rx->plain, rx->len);
}

void datapath_rx(struct yip_device *dev, uint64_t now, const struct yip_from *from,
                 const uint8_t *d, size_t len)
{
	struct wire_ctrl c;
	struct frame_rx rx;
	struct yip_peer *p;

	if (!frame_open(dev, now, d, len, &rx))
		return;
	p = rx.p;
	if (p->is_server) {
		/* Servers send control messages only. */
		if (rx.h.type != WIRE_CTRL)
			yip_device_drop(dev, YIP_DROP_MALFORMED);
		else if (!wire_ctrl_get(&c, rx.plain, rx.len))
			yip_device_drop(dev, YIP_DROP_BAD_CTRL);
		else {
			/* A question about, or an introduction to, a member we have no
			 * peer for but whose record we hold: its certificate admits
			 * it now. */
			if ((c.kind == WIRE_CTRL_ASK || c.kind == WIRE_CTRL_INTRO) &&
			    members_on(dev) && index_key_find(dev, c.key) == NULL)
				records_peer(dev, now, c.key);
			rendezvous_ctrl(p, now, from, &c);
		}
		return;
	}
	if (rx.h.type != WIRE_CTRL)
		path_confirm(p, now, from, false);
	if (rx.kp == p->next) {
		/* The peer used the keys we made answering its Init: they become
		 * current, and the way it came is confirmed (a control message
		 * confirms it as a probe does: used if there is no other). Repairs
		 * for blocks sealed under the old keys go first. */
		if (rx.h.type == WIRE_CTRL)
			path_confirm(p, now, from, true);
		protect_flush(p, now);
		session_promote(p, now);
		records_session(p, now);
		rx.kp = p->cur;
		queue_flush(p, now);
	} else if (rx.kp == p->cur && p->cur->initiator && session_rekey_due(p, now)) {
		handshake_start(p, now);
	}
	/* Every datagram of the session takes a counter, probes too: all of them
	 * count for the loss statistics, or each probe would look like a loss. */
	recover_observe(p, now, rx.kp, rx.h.counter,
	                rx.h.type != WIRE_REPORT && rx.h.type != WIRE_CTRL,
	                from->server < 0 && link_reliable(dev, from->link));
	if (rx.h.type == WIRE_CTRL) {
		const uint8_t *gmsg;
		size_t glen;

		if (wire_ctrl_gossip(rx.plain, rx.len, &gmsg, &glen))
			records_gossip_rx(p, now, gmsg, glen);
		else if (!wire_ctrl_get(&c, rx.plain, rx.len))
			yip_device_drop(dev, YIP_DROP_BAD_CTRL);
		else
			punch_ctrl(p, now, from, &c);
		return;
	}
	switch (rx.h.type) {
	case WIRE_DATA:
		rx_data(p, now, &rx);
		break;
	case WIRE_REPAIR:
		if (dev->fec_off)
			yip_device_drop(dev, YIP_DROP_BAD_REPAIR);
		else
			recover_repair(p, now, &rx);
		break;
	case WIRE_REPORT:
		report_receive(p, now, rx.kp, rx.plain, rx.len);
		break;
	default:
		yip_device_drop(dev, YIP_DROP_MALFORMED);
	}
}
