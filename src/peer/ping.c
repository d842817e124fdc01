/*
 * Reachability pings (yipctl ping, docs/control.md): a round is one PROBE,
 * sealed under the peer's session, on every path that can carry one (the
 * direct candidates and the relays); the peer answers each PROBE_OK on the
 * path it came by, whatever it is (punch.c), so a pong names the path it
 * measured. The nonces are the round's own: a pong never passes for a path
 * probe's answer or the other way round. Nothing here changes which path
 * is current; a pong on a direct path validates it, as any authenticated
 * datagram does, which may make it current (punch.c's rules).
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

struct yip_ping_round {
	uint64_t round, sent_at;
	unsigned n;
	uint64_t nonce[YIP_MAX_PATHS];
	struct yip_ping_probe probes[YIP_MAX_PATHS];
};

int yip_device_ping(struct yip_device *dev, uint64_t now, const uint8_t pub[YIP_KEY_LEN])
{
	struct yip_peer *p = index_key_find(dev, pub);
	struct yip_ping_round *r;

	if (p == NULL || p->is_server)
		return YIP_PING_NO_PEER;
	r = p->ping;
	if (r != NULL && r->round != 0 && now - r->sent_at < YIP_PING_GAP_MS * YIP_NS_PER_MS) {
		dev->ping_refused++;
		return YIP_PING_TOO_SOON;
	}
	if (!session_usable(p, now)) {
		handshake_start(p, now);
		return YIP_PING_NO_SESSION;
	}
	if (r == NULL) {
		r = calloc(1, sizeof(*r));
		if (r == NULL)
			return YIP_PING_NO_PATH;
		p->ping = r;
	}
	r->n = 0;
	r->sent_at = now;
	for (unsigned i = 0; i < p->n_paths && r->n < YIP_MAX_PATHS; i++) {
		const struct yip_path *t = &p->paths[i];
		struct yip_ping_probe *pr = &r->probes[r->n];
		struct wire_ctrl c = {.kind = WIRE_CTRL_PROBE, .ts_us = (uint32_t)(now / 1000)};

		if (!path_sendable(p, (int)i))
			continue;
		*pr = (struct yip_ping_probe){.relay = t->kind == YIP_PATH_RELAY,
		                              .server = t->kind == YIP_PATH_RELAY ? t->server : -1};
		if (pr->relay)
			pr->addr = dev->servers[t->server].peer.endpoint;
		else
			pr->addr = t->addr;
		do
			randombytes_buf(&r->nonce[r->n], sizeof(r->nonce[r->n]));
		while (r->nonce[r->n] == 0);
		c.nonce = r->nonce[r->n];
		frame_send_ctrl(p, now, &c, (int)i, NULL, 0);
		r->n++;
		dev->ping_sent++;
	}
	r->round++;
	return r->n > 0 ? YIP_PING_SENT : YIP_PING_NO_PATH;
}

bool ping_pong(struct yip_peer *p, uint64_t now, int i, uint64_t nonce)
{
	struct yip_ping_round *r = p->ping;

	(void)i; /* the pong names its probe's path: the peer answers on it */
	if (r == NULL || nonce == 0)
		return false;
	for (unsigned k = 0; k < r->n; k++) {
		if (r->nonce[k] != nonce)
			continue;
		r->nonce[k] = 0; /* one pong per probe: a replayed answer finds nothing */
		r->probes[k].answered = true;
		r->probes[k].rtt = now - r->sent_at;
		p->dev->ping_pongs++;
		return true;
	}
	return false;
}

bool yip_device_ping_info(const struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN],
                          uint64_t now, struct yip_ping_info *out)
{
	const struct yip_peer *p = index_key_find((struct yip_device *)dev, pub);

	memset(out, 0, sizeof(*out));
	if (p == NULL || p->is_server)
		return false;
	if (p->ping != NULL) {
		const struct yip_ping_round *r = p->ping;

		out->round = r->round;
		out->age = now - r->sent_at;
		out->n = r->n;
		memcpy(out->probes, r->probes, sizeof(out->probes));
	}
	out->sent = dev->ping_sent;
	out->pongs = dev->ping_pongs;
	out->refused = dev->ping_refused;
	return true;
}
