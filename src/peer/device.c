/*
 * The engine's lifetime and datagram dispatch: building and freeing a
 * device, and handing each datagram to the file that handles its type. The
 * timers are rules.c's, what the engine tells about itself info.c's,
 * membership members.c's.
 */
#include "peer/internal.h"

#include "membership/member.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gossip/gossip.h"
#include "route/route.h"
#include "util/clock.h"
#include "util/log.h"

void yip_timing_rekey(struct yip_timing *t, uint64_t interval)
{
	t->rekey_after = interval;
	t->reject_after = 3 * interval;
}

void yip_timing_default(struct yip_timing *t)
{
	yip_timing_rekey(t, 120 * YIP_NS_PER_S);
	t->rekey_attempt = 90 * YIP_NS_PER_S;
	t->retry_base = 1 * YIP_NS_PER_S;
	t->retry_max = 8 * YIP_NS_PER_S;
	t->keepalive = 10 * YIP_NS_PER_S;
	t->dead_after = 15 * YIP_NS_PER_S;
	t->prev_overlap = 15 * YIP_NS_PER_S;
}

int yip_device_init(struct yip_device *dev, const struct yip_config *cfg, const struct yip_io *io,
                    const struct yip_timing *t, char *err, size_t errlen)
{
	size_t prefixes = 1;

	memset(dev, 0, sizeof(*dev));
	dev->io = *io;
	dev->t = *t;
	dev->mtu = cfg->mtu ? cfg->mtu : YIP_DEFAULT_MTU; /* the daemon resolves mtu=auto */
	/* TAP frames carry an Ethernet header and maybe a VLAN tag on top of the MTU. */
	dev->pkt_max = dev->mtu + (cfg->device_kind == YIP_DEVICE_TAP ? 18 : 0);
	dev->fec_off = cfg->fec_off;
	dev->relay_off = cfg->relay_off;
	dev->nat_keepalive = (uint64_t)cfg->nat_keepalive * YIP_NS_PER_S;
	if (cfg->obf) {
		dev->obf = true;
		obf_keys_init(&dev->obf_keys, cfg->obf_psk);
		dev->obf_junk = cfg->obf_junk;
		dev->obf_cover = (uint64_t)cfg->obf_cover_ms * YIP_NS_PER_MS;
	}
	for (unsigned c = 0; c < YIP_CIPHER_COUNT; c++)
		if ((cfg->ciphers == 0 || (cfg->ciphers & YIP_CIPHER_BIT(c))) &&
		    yip_cipher_available(c))
			dev->ciphers |= YIP_CIPHER_BIT(c);
	if (dev->ciphers == 0) {
		snprintf(err, errlen, "cipher %s: not available on this CPU (no AES instructions)",
		         yip_cipher_name(YIP_CIPHER_AES256_GCM));
		return -1;
	}

	/* A symbol (counter, length, packet) rounded up to 64 bytes. */
	dev->sym_cap = (unsigned)((WIRE_SYM_HDR + dev->pkt_max + 63) & ~63U);
	dev->next_timer = UINT64_MAX;
	memcpy(dev->private_key, cfg->private_key, YIP_KEY_LEN);
	memcpy(dev->public_key, cfg->public_key, YIP_KEY_LEN);
	wire_mac1_key(dev->mac1_key, dev->public_key);
	cookie_checker_init(&dev->cookies, dev->public_key);
	randombytes_buf(dev->hash_key, sizeof(dev->hash_key));
	yip_addr_from_public(dev->address, dev->public_key);

	for (size_t i = 0; i < cfg->n_peers; i++)
		prefixes += cfg->peers[i].n_allowed_ips + 1;
	/* Room for configured peers added later (yip_device_peer_set). */
	dev->max_configured = cfg->n_peers + YIP_MAX_ADDED_PEERS;
	prefixes += YIP_MAX_ADDED_PEERS + YIP_MAX_ADDED_PREFIXES;
	/* A CA-gated node adds members at run time: room for their routes
	 * (a certificate's prefixes and the key-derived address) up front. */
	if (cfg->has_ca) {
		dev->max_dynamic = YIP_MAX_DYNAMIC_PEERS;
		prefixes += dev->max_dynamic * (YIP_PEER_ALLOWED + 1);
	}
	dev->routes = route_table_new(prefixes);
	dev->scratch = malloc(YIP_MAX_DGRAM);
	dev->deadbuf = malloc(YIP_MAX_DGRAM);
	dev->obfbuf = dev->obf ? malloc(YIP_MAX_DGRAM) : NULL;
	dev->txsym = malloc(dev->sym_cap);
	dev->flows = calloc(1, sizeof(*dev->flows));
	if (cfg->device_kind == YIP_DEVICE_TAP && dev->flows != NULL) {
		dev->macs = calloc(1, sizeof(*dev->macs));
		if (dev->macs == NULL ||
		    mac_table_init(dev->macs, dev->max_configured + dev->max_dynamic) != 0) {
			free(dev->macs);
			dev->macs = NULL;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (!dev->routes || !dev->scratch || !dev->flows || !dev->txsym || !dev->deadbuf ||
	    (dev->obf && !dev->obfbuf) ||
	    index_reserve(dev, cfg->n_peers + cfg->n_rendezvous) != 0 ||
	    peers_reserve(dev, cfg->n_peers) != 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (yip_device_peer_set(dev, 0, &cfg->peers[i], YIP_PEER_SET_ALL, err, errlen) != 0)
			goto fail;
	if (rendezvous_init(dev, cfg) != 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return 0;
fail:
	yip_device_free(dev);
	return -1;
}

void yip_device_free(struct yip_device *dev)
{
	rendezvous_free(dev);
	while (dev->n_peers > 0) {
		struct yip_peer *p = dev->peers[dev->n_peers - 1];

		punch_free(p);
		peer_free(p);
	}
	members_release(dev);
	if (dev->txsym)
		sodium_memzero(dev->txsym, dev->sym_cap);
	free(dev->txsym);
	free(dev->flows);
	if (dev->macs != NULL)
		mac_table_free(dev->macs);
	free(dev->macs);
	free(dev->peers);
	free(dev->keytab);
	free(dev->member_cert);
	timer_free(dev);
	free(dev->index);
	route_table_free(dev->routes);
	if (dev->scratch)
		sodium_memzero(dev->scratch, YIP_MAX_DGRAM);
	free(dev->scratch);
	free(dev->deadbuf);
	if (dev->obfbuf)
		sodium_memzero(dev->obfbuf, YIP_MAX_DGRAM);
	free(dev->obfbuf);
	obf_keys_wipe(&dev->obf_keys);
	sodium_memzero(dev, sizeof(*dev));
}

void *yip_device_servers_memory(struct yip_device *dev, size_t *len)
{
	*len = dev->n_servers * sizeof(*dev->servers);
	return dev->servers;
}

size_t yip_device_size(void)
{
	return sizeof(struct yip_device);
}

struct yip_peer *yip_device_peer(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN])
{
	return index_key_find(dev, pub);
}

int yip_device_set_endpoint(struct yip_device *dev, uint64_t now, const uint8_t pub[YIP_KEY_LEN],
                            const union yip_sockaddr *addr)
{
	struct yip_peer *p = index_key_find(dev, pub);

	if (p == NULL)
		return -1;
	if (peer_set_endpoint(p, now, addr))
		schedule(dev, now);
	return 0;
}

int yip_device_set_server_endpoint(struct yip_device *dev, uint64_t now, size_t k,
                                   const union yip_sockaddr *addr)
{
	if (k >= dev->n_servers)
		return -1;
	if (peer_set_endpoint(&dev->servers[k].peer, now, addr))
		schedule(dev, now);
	return 0;
}

void yip_device_preopened(struct yip_device *dev, const struct yip_preopened *pre)
{
	if (pre != NULL)
		dev->pre = *pre;
	else
		memset(&dev->pre, 0, sizeof(dev->pre));
}

static void dispatch(struct yip_device *dev, uint64_t now, const struct yip_from *from,
                     const uint8_t *d, size_t len)
{
	struct yip_peer *p;

	switch (wire_classify(d, len)) {
	case WIRE_INIT:
		handshake_rx_init(dev, now, from, d, len);
		break;
	case WIRE_COOKIE:
		handshake_rx_cookie(dev, now, d, len);
		break;
	case WIRE_RESP:
		p = handshake_rx_resp(dev, now, from, d, len);
		if (p != NULL && p->is_server)
			rendezvous_established(p, now);
		else if (p != NULL) {
			datapath_established(p, now);
			records_session(p, now);
		}
		break;
	case WIRE_DATA:
	case WIRE_REPAIR:
	case WIRE_REPORT:
	case WIRE_CTRL:
		datapath_rx(dev, now, from, d, len);
		break;
	default:
		yip_device_drop(dev, YIP_DROP_MALFORMED);
	}
}

/*
 * A datagram a rendezvous server relayed: it must come from a server we
 * use and carry our token there; then it is handled as if it had come
 * straight from its sender, by way of that server.
 */
static bool relayed_by(const struct yip_server *s, uint32_t link, const union yip_sockaddr *src)
{
	const struct yip_peer *sp = &s->peer;

	if (link == YIP_LINK_MAIN)
		return yip_sockaddr_eq(&sp->endpoint, src);
	/* Over another link (TLS): the server's current path is that link. */
	return sp->path >= 0 && sp->paths[sp->path].kind == YIP_PATH_DIRECT &&
	       sp->paths[sp->path].link == link;
}

static void relayed(struct yip_device *dev, uint64_t now, uint32_t link,
                    const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	struct yip_from from = {.addr = *src, .link = link};
	struct wire_relay m;
	size_t i;

	if (!wire_relay_get(&m, d, len) || m.dir != WIRE_RELAY_FROM_SERVER ||
	    wire_classify(m.payload, m.len) == WIRE_RELAY) {
		yip_device_drop(dev, YIP_DROP_MALFORMED);
		return;
	}
	for (i = 0; i < dev->n_servers; i++) {
		const struct yip_server *s = &dev->servers[i];

		if (s->state == YIP_SERVER_REGISTERED && relayed_by(s, link, src) &&
		    sodium_memcmp(&s->token, &m.token, sizeof(m.token)) == 0)
			break;
	}
	if (i == dev->n_servers) {
		yip_device_drop(dev, YIP_DROP_BAD_RELAY);
		return;
	}
	from.server = (int)i;
	from.relay_id = m.relay_id;
	dispatch(dev, now, &from, m.payload, m.len);
}

/*
 * With obf_psk: the datagram without its obfuscation, in dev->obfbuf, or
 * NULL if it is not authentic (counted) or junk (not a drop: it did what
 * it was sent for).
 */
static const uint8_t *deobfuscate(struct yip_device *dev, const uint8_t *d, size_t *len)
{
	size_t n;

	switch (obf_open(&dev->obf_keys, d, *len, dev->obfbuf, &n, WIRE_RELAY_FROM_SERVER, true)) {
	case OBF_OK:
		*len = n;
		return dev->obfbuf;
	case OBF_IGNORED:
		return NULL;
	default:
		yip_device_drop(dev, YIP_DROP_OBF);
		return NULL;
	}
}

void yip_device_rx(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
                   const uint8_t *d, size_t len)
{
	struct yip_from from = {.addr = *src, .server = -1};

	if (dev->obf && (d = deobfuscate(dev, d, &len)) == NULL)
		return;
	if (len > 0 && d[0] == WIRE_RELAY)
		relayed(dev, now, YIP_LINK_MAIN, src, d, len);
	else
		dispatch(dev, now, &from, d, len);
}

void yip_device_rx_link(struct yip_device *dev, uint64_t now, uint32_t link,
                        const union yip_sockaddr *src, const uint8_t *d, size_t len)
{
	struct yip_from from = {.addr = *src, .server = -1, .link = link};

	if (dev->obf && (d = deobfuscate(dev, d, &len)) == NULL)
		return;
	if (len > 0 && d[0] == WIRE_RELAY)
		relayed(dev, now, link, src, d, len); /* a server over TLS */
	else
		dispatch(dev, now, &from, d, len);
}

int yip_device_link_path(struct yip_device *dev, uint64_t now, const uint8_t pub[YIP_KEY_LEN],
                         uint32_t link, const union yip_sockaddr *addr)
{
	struct yip_peer *p = index_key_find(dev, pub);
	int i;

	if (p == NULL || (i = path_add_link(p, now, addr, link)) < 0)
		return -1;
	if (p->path < 0)
		path_use(p, now, i);
	schedule_peer(p, now);
	return 0;
}

int yip_device_server_link(struct yip_device *dev, uint64_t now, size_t k, uint32_t link,
                           const union yip_sockaddr *addr)
{
	struct yip_peer *sp;
	int i;

	if (k >= dev->n_servers)
		return -1;
	sp = &dev->servers[k].peer;
	if ((i = path_add_link(sp, now, addr, link)) < 0)
		return -1;
	path_use(sp, now, i);
	rendezvous_link_opened(&dev->servers[k], now);
	schedule_peer(sp, now);
	return 0;
}

static bool proven_on(const struct yip_peer *p, uint32_t link)
{
	for (unsigned i = 0; i < p->n_paths; i++)
		if (p->paths[i].kind == YIP_PATH_DIRECT && p->paths[i].link == link &&
		    p->paths[i].validated)
			return true;
	return false;
}

bool yip_device_link_proven(const struct yip_device *dev, uint32_t link)
{
	for (size_t i = 0; i < dev->n_peers; i++)
		if (proven_on(dev->peers[i], link))
			return true;
	for (size_t i = 0; i < dev->n_servers; i++)
		if (proven_on(&dev->servers[i].peer, link))
			return true;
	return false;
}

void yip_device_link_closed(struct yip_device *dev, uint32_t link)
{
	for (size_t i = 0; i < dev->n_peers; i++)
		path_forget_link(dev->peers[i], link);
	for (size_t i = 0; i < dev->n_servers; i++)
		path_forget_link(&dev->servers[i].peer, link);
}

const struct yip_cipher_key *yip_device_rx_key(struct yip_device *dev, const uint8_t *d, size_t len)
{
	int t = wire_classify(d, len);
	struct yip_keypair *kp;
	struct wire_hdr h;
	struct yip_peer *p;

	if (dev->obf || (t != WIRE_DATA && t != WIRE_REPAIR && t != WIRE_REPORT) ||
	    !wire_hdr_get(&h, d, len))
		return NULL;
	p = index_find(dev, h.receiver);
	kp = p ? session_for_index(p, h.receiver) : NULL;
	return kp != NULL ? &kp->recv : NULL;
}

/* ---- the peer table at run time ---------------------------------------------------- */

int yip_device_peer_remove(struct yip_device *dev, struct yip_peer *p)
{
	if (p == NULL || p->dev != dev || p->slot >= dev->n_peers || dev->peers[p->slot] != p)
		return -1;
	punch_free(p);
	peer_free(p);
	return 0;
}

/* ---- membership: what the layers below cannot do themselves ------------------------ */

enum member_verdict yip_device_offer_revocations(struct yip_device *dev, uint64_t now,
                                                 const uint8_t *obj, size_t len)
{
	return rules_offer_revocations(dev, now, obj, len);
}

enum member_verdict yip_device_offer_record(struct yip_device *dev, uint64_t now,
                                            const uint8_t *obj, size_t len)
{
	return records_offer(dev, now, obj, len);
}

size_t yip_device_records(struct yip_device *dev,
                          void (*fn)(void *arg, const uint8_t *obj, size_t len), void *arg)
{
	return records_each(dev, fn, arg);
}
