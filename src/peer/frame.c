/*
 * Frames: the engine's edge. Sealing and sending a datagram on a link,
 * opening one, and delivering an inner packet to the device all happen
 * here, and nowhere else does the engine call struct yip_io or a link.
 */
#include "peer/internal.h"

#include <string.h>

#include <linux/if_ether.h>

#include "mac/mac.h"
#include "route/route.h"

uint64_t frame_wall(struct yip_device *dev)
{
	return dev->io.wall_ns(dev->io.ctx);
}

void frame_tun_write(struct yip_device *dev, const uint8_t *pkt, size_t len)
{
	dev->io.tun_write(dev->io.ctx, pkt, len);
}

/* Where a datagram is built, and the link it leaves on. */
struct out {
	uint8_t *buf; /* the relay header (if any), then the datagram */
	size_t hdr;
	const union yip_sockaddr *to;
	const struct yip_link *lk; /* NULL: the link is gone (built in dev->deadbuf, not sent) */
	uint32_t link;
};

/* Takes the buffer of link `link` for the next datagram. */
static void out_link(struct yip_device *dev, uint32_t link, struct out *o)
{
	o->link = link;
	o->lk = link_of(dev, link);
	o->buf = o->lk != NULL ? o->lk->ops->buf(o->lk->ctx, link) : dev->deadbuf;
}

/* Where datagrams to server k go: its current path's link and address
 * (over TLS when it fell back to it), else its endpoint on the main link. */
static uint32_t server_route(const struct yip_device *dev, int k, const union yip_sockaddr **to)
{
	const struct yip_peer *sp = &dev->servers[k].peer;

	if (sp->path >= 0 && sp->paths[sp->path].kind == YIP_PATH_DIRECT) {
		*to = &sp->paths[sp->path].addr;
		return sp->paths[sp->path].link;
	}
	*to = &sp->endpoint;
	return YIP_LINK_MAIN;
}

/* For p on path i (-1: the current one). A relayed path goes the way its
 * server is reached. */
static void out_begin(struct yip_peer *p, int i, struct out *o)
{
	int cur = i >= 0 ? i : p->path;
	const struct yip_path *t = cur >= 0 ? &p->paths[cur] : NULL;
	const union yip_sockaddr *srv = NULL;
	uint32_t link = YIP_LINK_MAIN;

	if (t != NULL && t->kind == YIP_PATH_DIRECT)
		link = t->link;
	else if (t != NULL)
		link = server_route(p->dev, t->server, &srv);
	out_link(p->dev, link, o);
	o->hdr = i >= 0 ? path_prefix_for(p, i, o->buf, &o->to) : path_prefix(p, o->buf, &o->to);
	if (srv != NULL)
		o->to = srv;
}

/*
 * With obf_psk, obfuscates the plain datagram at buf (len bytes, in a
 * buffer of YIP_MAX_DGRAM) in place: a relay header and the datagram it
 * carries both. Returns the length to send; 0 if it cannot be wrapped
 * (counted: nothing the engine builds should ever be).
 */
static size_t obfuscate(struct yip_device *dev, uint8_t *buf, size_t len)
{
	size_t n;

	if (!dev->obf)
		return len;
	n = obf_wrap(&dev->obf_keys, buf, len, YIP_MAX_DGRAM, true);
	if (n == 0)
		yip_device_drop(dev, YIP_DROP_SEND_FAILED);
	return n;
}

/* Sends what o holds (len bytes after the relay header) on its link, with
 * the block hint (struct yip_link_ops); returns the bytes sent (0: none,
 * and a refused datagram is counted as send_failed). */
static size_t out_send(struct yip_device *dev, const struct out *o, size_t len, uint32_t block)
{
	size_t n = obfuscate(dev, o->buf, o->hdr + len);

	if (n == 0)
		return 0;
	if (o->lk == NULL || n > o->lk->mtu ||
	    !o->lk->ops->send(o->lk->ctx, o->link, o->to, n, block)) {
		yip_device_drop(dev, YIP_DROP_SEND_FAILED);
		return 0;
	}
	return n;
}

void frame_send_to(struct yip_device *dev, const union yip_sockaddr *to, uint32_t link,
                   const uint8_t *d, size_t len)
{
	struct out o;

	out_link(dev, link, &o);
	o.hdr = 0;
	o.to = to;
	memmove(o.buf, d, len);
	out_send(dev, &o, len, 0);
}

void frame_send_back(struct yip_device *dev, const struct yip_from *from, const uint8_t *d,
                     size_t len)
{
	const struct yip_server *s;
	struct out o;

	if (from->server < 0) {
		frame_send_to(dev, &from->addr, from->link, d, len);
		return;
	}
	s = &dev->servers[from->server];
	out_link(dev, server_route(dev, from->server, &o.to), &o);
	o.hdr = WIRE_RELAY_HDR;
	wire_relay_put(o.buf, WIRE_RELAY_TO_SERVER, s->token, from->relay_id);
	memmove(o.buf + o.hdr, d, len);
	out_send(dev, &o, len, 0);
}

void frame_send_path(struct yip_peer *p, int i, const uint8_t *d, size_t len)
{
	struct out o;

	out_begin(p, i, &o);
	memcpy(o.buf + o.hdr, d, len);
	out_send(p->dev, &o, len, 0);
}

void frame_send_ctrl(struct yip_peer *p, uint64_t now, const struct wire_ctrl *c, int path,
                     const union yip_sockaddr *to, uint32_t link)
{
	uint8_t msg[WIRE_CTRL_MAX];
	size_t len = wire_ctrl_put(msg, c);

	if (len != 0)
		frame_send_ctrl_bytes(p, now, msg, len, path, to, link);
}

void frame_send_ctrl_bytes(struct yip_peer *p, uint64_t now, const uint8_t *msg, size_t len,
                           int path, const union yip_sockaddr *to, uint32_t link)
{
	struct yip_device *dev = p->dev;
	struct yip_keypair *kp = p->cur;
	struct wire_hdr h;
	struct out o;
	uint8_t *d;

	if (len == 0 || len > YIP_MAX_DGRAM - WIRE_DATA_MIN - WIRE_RELAY_HDR ||
	    !session_usable(p, now))
		return;
	if (to != NULL) {
		out_link(dev, link, &o);
		o.hdr = 0;
		o.to = to;
	} else {
		out_begin(p, path, &o);
	}
	d = o.buf + o.hdr;
	h = (struct wire_hdr){WIRE_CTRL, 0, 0, kp->remote_index, kp->send_counter++};
	wire_hdr_put(d, &h);
	yip_cipher_seal(d + WIRE_DATA_HDR, &kp->send, h.counter, d, WIRE_DATA_HDR, msg, len);
	p->stats.wire_bytes += out_send(dev, &o, WIRE_DATA_MIN + len, 0);
	p->last_tx = now;
}

uint64_t frame_send(struct yip_peer *p, uint64_t now, uint8_t type, uint8_t idx, uint16_t block,
                    const uint8_t *pre, size_t prelen, const uint8_t *pkt, size_t len)
{
	struct yip_device *dev = p->dev;
	struct yip_keypair *kp = p->cur;
	struct wire_hdr h = {type, idx, block, kp->remote_index, kp->send_counter++};
	size_t total = WIRE_DATA_HDR + prelen + len + YIP_AEAD_TAG;
	uint8_t *d, *body;
	uint32_t block_hint;
	struct out o;

	out_begin(p, -1, &o);
	d = o.buf + o.hdr;
	body = d + WIRE_DATA_HDR;
	wire_hdr_put(d, &h);
	/* With obf_psk the header is protected with a sample of the ciphertext,
	 * so the datagram is sealed here, before it is obfuscated. */
	if (dev->io.seal_later != NULL && o.lk != NULL && (o.lk->flags & YIP_LINK_BATCH) &&
	    !dev->obf) {
		if (prelen > 0)
			memcpy(body, pre, prelen);
		memcpy(body + prelen, pkt, len);
		dev->io.seal_later(dev->io.ctx, d, WIRE_DATA_HDR, prelen + len, &kp->send,
		                   h.counter);
	} else if (prelen == 0) {
		/* Sealed straight from where the packet lies: no copy. */
		yip_cipher_seal(body, &kp->send, h.counter, d, WIRE_DATA_HDR, pkt, len);
	} else {
		memcpy(body, pre, prelen);
		memcpy(body + prelen, pkt, len);
		yip_cipher_seal(body, &kp->send, h.counter, d, WIRE_DATA_HDR, body, prelen + len);
	}
	/* Symbols of one block share a block hint: a batching link never puts
	 * two of them in one batch (one GSO train). Not bulk blocks sent one
	 * at a time (loss that is not bursty, fec/policy.h): their symbols go
	 * as they come. */
	block_hint = (type == WIRE_REPAIR || (type == WIRE_DATA && wire_fec_symbol(idx))) &&
	                     (wire_block_class(block) != FLOW_BULK || wire_fec_lanes(idx) > 1)
	                 ? 0x10000u | block
	                 : 0;
	p->stats.wire_bytes += out_send(dev, &o, total, block_hint);
	p->last_tx = now;
	return h.counter;
}

const uint8_t *frame_inner_addr(const uint8_t *pkt, size_t len, bool dst, int *family,
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

bool frame_open(struct yip_device *dev, uint64_t now, const uint8_t *d, size_t len,
                struct frame_rx *rx)
{
	struct yip_keypair *kp = NULL;
	struct yip_peer *p = NULL;

	if (!wire_hdr_get(&rx->h, d, len)) {
		yip_device_drop(dev, YIP_DROP_MALFORMED);
		return false;
	}
	p = index_find(dev, rx->h.receiver);
	if (p != NULL)
		kp = session_for_index(p, rx->h.receiver);
	if (kp == NULL) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_INDEX);
		return false;
	}
	if (now - kp->created >= dev->t.reject_after) {
		yip_device_drop(dev, YIP_DROP_EXPIRED);
		return false;
	}
	if (!replay_check(&kp->replay, rx->h.counter)) {
		yip_device_drop(dev, YIP_DROP_REPLAY);
		return false;
	}
	rx->len = wire_plain_len(len);
	if (rx->len > YIP_MAX_DGRAM) {
		yip_device_drop(dev, YIP_DROP_DECRYPT);
		return false;
	}
	if (dev->pre.plain != NULL && dev->pre.len == rx->len &&
	    yip_cipher_key_eq(dev->pre.key, &kp->recv)) {
		/* Opened on a worker thread with these very keys. */
		if (dev->pre.result != 0) {
			yip_device_drop(dev, YIP_DROP_DECRYPT);
			return false;
		}
		memcpy(dev->scratch, dev->pre.plain, rx->len);
	} else if (yip_cipher_open(dev->scratch, &kp->recv, rx->h.counter, d, WIRE_DATA_HDR,
	                           d + WIRE_DATA_HDR, len - WIRE_DATA_HDR) != 0) {
		yip_device_drop(dev, YIP_DROP_DECRYPT);
		return false;
	}
	replay_update(&kp->replay, rx->h.counter);
	p->last_rx = now;
	p->first_unanswered = 0;
	rx->p = p;
	rx->kp = kp;
	rx->plain = dev->scratch;
	return true;
}

struct yip_traffic *frame_traffic(struct yip_peer *p)
{
	struct yip_device *dev = p->dev;
	unsigned k = YIP_TRAFFIC_DIRECT;

	if (p->path >= 0 && (unsigned)p->path < p->n_paths) {
		const struct yip_path *pa = &p->paths[p->path];
		const struct yip_link *lk =
		    pa->kind == YIP_PATH_RELAY ? NULL : link_of(dev, pa->link);

		if (pa->kind == YIP_PATH_RELAY)
			k = YIP_TRAFFIC_RELAYED;
		else if (lk != NULL && lk->ops->kind == YIP_LINK_TLS)
			k = YIP_TRAFFIC_TLS;
		else if (lk != NULL && lk->ops->kind == YIP_LINK_QUIC)
			k = YIP_TRAFFIC_QUIC;
	}
	return &dev->totals.by_kind[k];
}

bool frame_deliver(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len)
{
	struct yip_device *dev = p->dev;
	const uint8_t *src;
	size_t total = len;
	int family;

	if (dev->macs != NULL) {
		/* TAP: learn where the sender lives; a multicast source is forged,
		 * and an address live behind another peer or on this side is not
		 * this peer's to use (docs/configuration.md, device_kind). */
		if (len < ETH_HLEN || (pkt[6] & 1)) {
			yip_device_drop(dev, YIP_DROP_BAD_INNER);
			return false;
		}
		if (mac_learn(dev->macs, pkt + 6, (uint32_t)p->slot + 1, now) == MAC_TAKEN) {
			yip_device_drop(dev, YIP_DROP_SOURCE_NOT_ALLOWED);
			return false;
		}
	} else {
		src = frame_inner_addr(pkt, len, false, &family, &total);
		if (src == NULL) {
			yip_device_drop(dev, YIP_DROP_BAD_INNER);
			return false;
		}
		if (route_lookup(dev->routes, family, src) != p) {
			yip_device_drop(dev, YIP_DROP_SOURCE_NOT_ALLOWED);
			return false;
		}
	}
	p->last_rx_data = now;
	p->stats.rx_packets++;
	p->stats.rx_bytes += total;
	{
		struct yip_traffic *t = frame_traffic(p);

		t->rx_packets++;
		t->rx_bytes += total;
	}
	schedule_peer(p, now + dev->t.keepalive);
	dev->io.tun_write(dev->io.ctx, pkt, total);
	return true;
}
