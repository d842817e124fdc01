/* The engine's lifetime, datagram dispatch and timers. */
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

static void members_sweep(struct yip_device *dev, uint64_t now);
static void members_gossip(struct yip_device *dev, uint64_t now);

/* How often to look for members whose certificates expired or were revoked. */
#define MEMBERS_SWEEP_NS (5 * YIP_NS_PER_S)
/* A member (not a root) silent this long with no session is forgotten. */
#define MEMBERS_IDLE_NS (600 * YIP_NS_PER_S)

static const char *const drop_names[] = {
#define X(name, str) str,
    YIP_DROP_REASONS(X)
#undef X
};

const char *yip_drop_name(enum yip_drop d)
{
	return d < YIP_DROP_COUNT ? drop_names[d] : "?";
}

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

static int peer_init(struct yip_device *dev, const struct yip_peer_config *pc, char *err,
                     size_t errlen)
{
	struct yip_peer *p = peer_new(dev, pc->public_key, false, err, errlen);

	if (p == NULL)
		return -1;
	if (pc->has_endpoint)
		path_use(p, 0,
		         path_add(p, 0, YIP_PATH_DIRECT, &pc->endpoint, -1, 0, YIP_ORIGIN_CONFIG));
	p->persistent_keepalive = pc->persistent_keepalive;
	if (p->persistent_keepalive)
		schedule_peer(p, 0);
	for (size_t i = 0; i < pc->n_allowed_ips; i++)
		if (peer_route_add(p, &pc->allowed_ips[i], err, errlen) != 0)
			return -1;
	return 0;
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
	/* A CA-gated node adds members at run time: room for their routes
	 * (a certificate's prefixes and the key-derived address) up front. */
	if (cfg->has_ca) {
		dev->max_dynamic = YIP_MAX_DYNAMIC_PEERS;
		prefixes += dev->max_dynamic * (YIP_PEER_ALLOWED + 1);
	}
	dev->routes = route_table_new(prefixes);
	dev->scratch = malloc(YIP_MAX_DGRAM);
	dev->sockbuf = malloc(YIP_MAX_DGRAM);
	dev->obfbuf = dev->obf ? malloc(YIP_MAX_DGRAM) : NULL;
	dev->txsym = malloc(dev->sym_cap);
	dev->flows = calloc(1, sizeof(*dev->flows));
	if (cfg->device_kind == YIP_DEVICE_TAP && dev->flows != NULL) {
		dev->macs = calloc(1, sizeof(*dev->macs));
		if (dev->macs == NULL || mac_table_init(dev->macs, cfg->n_peers) != 0) {
			free(dev->macs);
			dev->macs = NULL;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (!dev->routes || !dev->scratch || !dev->flows || !dev->txsym || !dev->sockbuf ||
	    (dev->obf && !dev->obfbuf) ||
	    index_reserve(dev, cfg->n_peers + cfg->n_rendezvous) != 0 ||
	    peers_reserve(dev, cfg->n_peers) != 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (peer_init(dev, &cfg->peers[i], err, errlen) != 0)
			goto fail;
	dev->n_static = dev->n_peers;
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
	free(dev->sockbuf);
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

void(yip_device_drop)(struct yip_device *dev, enum yip_drop d)
{
	yip_device_drop(dev, d);
}

void(yip_device_drop_n)(struct yip_device *dev, enum yip_drop d, uint64_t n)
{
	yip_device_drop_n(dev, d, n);
}

struct yip_peer *yip_device_peer(struct yip_device *dev, const uint8_t pub[YIP_KEY_LEN])
{
	return index_key_find(dev, pub);
}

void yip_device_info(const struct yip_device *dev, struct yip_device_info *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->public_key, dev->public_key, YIP_KEY_LEN);
	memcpy(out->address, dev->address, YIP_ADDR_LEN);
	out->mtu = dev->mtu;
	out->fec = !dev->fec_off;
	out->n_peers = dev->n_peers;
	out->n_servers = dev->n_servers;
	out->nat = yip_nat_name(dev->nat);
	out->obf = dev->obf;
	memcpy(out->drops, dev->drops, sizeof(out->drops));
}

/* Why a relayed peer is not direct, as far as we can tell. */
static const char *relayed_why(const struct yip_peer *p)
{
	unsigned ours = p->dev->nat, theirs = p->nat, direct = 0;

	if (ours == WIRE_NAT_APDM && theirs == WIRE_NAT_APDM)
		return "both sides map per destination";
	for (unsigned i = 0; i < p->n_paths; i++)
		direct += p->paths[i].kind == YIP_PATH_DIRECT;
	if (direct == 0)
		return "no direct address known";
	if (ours == WIRE_NAT_APDM || theirs == WIRE_NAT_APDM)
		return "one side maps per destination; no direct candidate answered yet";
	return "no direct candidate answered yet";
}

bool yip_device_peer_info(const struct yip_device *dev, size_t i, uint64_t now,
                          struct yip_peer_info *out)
{
	const struct yip_peer *p;

	if (i >= dev->n_peers)
		return false;
	p = dev->peers[i];
	memset(out, 0, sizeof(*out));
	memcpy(out->public_key, p->public_key, YIP_KEY_LEN);
	memcpy(out->address, p->address, YIP_ADDR_LEN);
	out->has_endpoint = p->has_endpoint;
	if (p->has_endpoint)
		out->endpoint = p->endpoint;
	if (p->path >= 0) {
		out->has_path = true;
		path_format(p, p->path, out->path, sizeof(out->path));
		out->path_age = now - p->path_since;
		if (p->paths[p->path].kind == YIP_PATH_RELAY)
			out->relayed_why = relayed_why(p);
	}
	out->nat = yip_nat_name(p->nat);
	out->n_paths = p->n_paths;
	for (unsigned j = 0; j < p->n_paths; j++) {
		static const char *const origins[] = {"config", "server", "peer", "relay"};
		struct yip_path_info *o = &out->paths[j];

		path_format(p, (int)j, o->path, sizeof(o->path));
		o->origin = p->paths[j].origin < 4 ? origins[p->paths[j].origin] : "?";
		o->validated = p->paths[j].validated;
		o->rtt = p->paths[j].rtt;
	}
	out->dynamic = p->dynamic;
	out->root = p->root;
	out->cert = p->member != NULL ? &p->member->cert : NULL;
	out->n_allowed = p->n_allowed;
	memcpy(out->allowed, p->allowed, sizeof(out->allowed));
	out->last_rx = p->last_rx;
	out->handshaking = p->hs_pending;
	out->established = session_usable(p, now);
	if (p->hs_unanswered != 0 && now > p->hs_unanswered) {
		out->unanswered = now - p->hs_unanswered;
		if (out->unanswered >= YIP_NO_ANSWER_NS)
			out->hint = handshake_hint(p->dev);
	}
	out->cipher = p->cur != NULL ? (int)p->cur->send.cipher : -1;
	out->srtt = p->fec.srtt;
	out->loss = p->fec.loss;
	memcpy(out->fec, p->fec.params, sizeof(out->fec));
	out->stats = p->stats;
	out->recovery_mem = protect_memory(p) + recover_memory(p);
	return true;
}

const char *yip_nat_name(unsigned nat)
{
	static const char *const names[WIRE_NAT_COUNT] = {"unknown", "none", "endpoint-independent",
	                                                  "per destination"};

	return nat < WIRE_NAT_COUNT ? names[nat] : "?";
}

int yip_device_set_cert(struct yip_device *dev, const uint8_t *cert, size_t len)
{
	uint8_t *copy = NULL;

	if (len > WIRE_CTRL_CERT_MAX)
		return -1;
	if (len != 0 && (copy = malloc(len)) == NULL)
		return -1;
	if (len != 0)
		memcpy(copy, cert, len);
	free(dev->member_cert);
	dev->member_cert = copy;
	dev->member_cert_len = len;
	return 0;
}

bool yip_device_server_info(const struct yip_device *dev, size_t i, uint64_t now,
                            struct yip_server_info *out)
{
	static const char *const states[] = {"connecting", "registering", "registered", "refused"};
	const struct yip_server *s;

	if (i >= dev->n_servers)
		return false;
	s = &dev->servers[i];
	memset(out, 0, sizeof(*out));
	out->addr = s->peer.endpoint;
	out->state = s->state < 4 ? states[s->state] : "?";
	if (s->state == YIP_SERVER_REFUSED)
		out->refused = s->refused == 0
		                   ? "no_certificate"
		                   : member_verdict_name((enum member_verdict)s->refused);
	out->has_reflexive = s->has_reflexive;
	out->reflexive = s->reflexive;
	out->relay = s->relay;
	out->registered_age = s->state == YIP_SERVER_REGISTERED ? now - s->registered_at : 0;
	out->lookups = s->lookups;
	out->intros = s->intros;
	out->unknowns = s->unknowns;
	out->asks = s->asks;
	out->cands_refused = s->cands_refused;
	return true;
}

uint64_t yip_device_rtt_max(const struct yip_device *dev)
{
	return dev->rtt_max;
}

uint64_t yip_device_timer_runs(const struct yip_device *dev)
{
	return dev->timer_runs;
}

unsigned yip_device_mtu(const struct yip_device *dev)
{
	return dev->mtu;
}

int yip_device_set_endpoint(struct yip_device *dev, uint64_t now, size_t i,
                            const union yip_sockaddr *addr)
{
	struct yip_peer *p = i < dev->n_static ? dev->peers[i]
	                     : i - dev->n_static < dev->n_servers
	                         ? &dev->servers[i - dev->n_static].peer
	                         : NULL;
	int c = -1, n;

	if (p == NULL)
		return -1;
	for (unsigned k = 0; k < p->n_paths && c < 0; k++)
		if (p->paths[k].kind == YIP_PATH_DIRECT &&
		    p->paths[k].origin == YIP_ORIGIN_CONFIG && p->paths[k].sock == 0)
			c = (int)k;
	if (c >= 0 && yip_sockaddr_eq(&p->paths[c].addr, addr))
		return 0;
	if (c >= 0) {
		/* Still answering there: keep it as an address the peer uses
		 * until it stops (a new handshake then tries every path). */
		if (c == p->path && path_alive(p, c, now, dev->t.dead_after))
			p->paths[c].origin = YIP_ORIGIN_PEER;
		else
			path_remove(p, c);
	}
	n = path_add(p, now, YIP_PATH_DIRECT, addr, -1, 0, YIP_ORIGIN_CONFIG);
	if (n >= 0 && p->path < 0)
		path_use(p, now, n);
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

bool yip_peer_established(const struct yip_peer *p, uint64_t now)
{
	return session_usable(p, now);
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
static void relayed(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
                    const uint8_t *d, size_t len)
{
	struct yip_from from = {.addr = *src};
	struct wire_relay m;
	size_t i;

	if (!wire_relay_get(&m, d, len) || m.dir != WIRE_RELAY_FROM_SERVER ||
	    wire_classify(m.payload, m.len) == WIRE_RELAY) {
		yip_device_drop(dev, YIP_DROP_MALFORMED);
		return;
	}
	for (i = 0; i < dev->n_servers; i++) {
		const struct yip_server *s = &dev->servers[i];

		if (s->state == YIP_SERVER_REGISTERED && yip_sockaddr_eq(&s->peer.endpoint, src) &&
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
		relayed(dev, now, src, d, len);
	else
		dispatch(dev, now, &from, d, len);
}

void yip_device_rx_on(struct yip_device *dev, uint64_t now, int sock, const union yip_sockaddr *src,
                      const uint8_t *d, size_t len)
{
	struct yip_from from = {.addr = *src, .server = -1, .sock = sock};

	if (dev->obf && (d = deobfuscate(dev, d, &len)) == NULL)
		return;
	/* Extra sockets exist for direct paths only: nothing relayed comes here. */
	dispatch(dev, now, &from, d, len);
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

static uint64_t peer_timers(struct yip_peer *p, uint64_t now)
{
	const struct yip_timing *t = &p->dev->t;
	uint64_t next = session_timers(p, now);
	bool gave_up;

	/* Rekey a session that is old and still in use. */
	if (p->cur != NULL && !p->hs_pending) {
		uint64_t due = p->cur->created + session_rekey_age(p);
		bool active = (p->last_tx_data && now - p->last_tx_data < t->rekey_after) ||
		              (p->last_rx_data && now - p->last_rx_data < t->rekey_after);

		if (now >= due && active)
			handshake_start(p, now);
		else if (now < due)
			next = min64(next, due);
	}
	/* Dead peer: we sent data and heard nothing back. Try a new handshake. */
	if (p->first_unanswered != 0) {
		if (now - p->first_unanswered >= t->dead_after) {
			p->first_unanswered = 0;
			handshake_start(p, now);
		} else {
			next = min64(next, p->first_unanswered + t->dead_after);
		}
	}
	/* Passive keepalive: the peer sent data and we had nothing to say back. */
	if (p->last_rx_data > p->last_tx && session_usable(p, now)) {
		if (now - p->last_rx_data >= t->keepalive)
			datapath_send(p, now, (const uint8_t *)"", 0);
		else
			next = min64(next, p->last_rx_data + t->keepalive);
	}
	/* obf_cover_ms: while the session is idle, a keepalive at random
	 * intervals (half to one and a half times the setting), so silence and
	 * the rhythm of the traffic say less (docs/obfuscation.md). */
	if (p->dev->obf_cover != 0 && session_usable(p, now) && p->has_endpoint) {
		uint64_t c = p->dev->obf_cover;

		if (p->cover_at == 0)
			p->cover_at = now + c / 2 + randombytes_uniform(1000) * c / 1000;
		if (now >= p->cover_at) {
			if (now - p->last_tx >= c / 2)
				datapath_send(p, now, (const uint8_t *)"", 0);
			p->cover_at = now + c / 2 + randombytes_uniform(1000) * c / 1000;
		}
		next = min64(next, p->cover_at);
	}
	/* Persistent keepalive keeps NAT mappings open even when idle. */
	if (p->persistent_keepalive && p->has_endpoint) {
		uint64_t every = p->persistent_keepalive * YIP_NS_PER_S;

		if (!session_usable(p, now)) {
			handshake_start(p, now); /* the handshake timers take it from here */
		} else {
			if (now - p->last_tx >= every)
				datapath_send(p, now, (const uint8_t *)"", 0);
			next = min64(next, p->last_tx + every);
		}
	}
	next = min64(next, protect_timers(p, now));
	next = min64(next, recover_timers(p, now));
	next = min64(next, report_timers(p, now));
	next = min64(next, punch_timers(p, now));
	next = min64(next, handshake_timers(p, now, &gave_up));
	if (gave_up) {
		datapath_queue_drop(p, YIP_DROP_HANDSHAKE_TIMEOUT);
		rendezvous_lookup(p, now); /* maybe a server knows a way */
	}
	next = min64(next, rendezvous_peer_timers(p, now));
	/* A peer that carried traffic lately is looked at at least once a
	 * second: cheap (only busy peers), and a deadline some receive path
	 * forgot to schedule is late by a second at most. */
	if ((p->last_tx && now - p->last_tx < 10 * YIP_NS_PER_S) ||
	    (p->last_rx_data && now - p->last_rx_data < 10 * YIP_NS_PER_S))
		next = min64(next, now + YIP_NS_PER_S);
	return next;
}

/* A server's session: keys expire, handshakes retry, and it is rekeyed on
 * time whether or not anything is said over it. */
static uint64_t server_session_timers(struct yip_peer *sp, uint64_t now)
{
	uint64_t next = session_timers(sp, now);
	bool gave_up;

	if (sp->cur != NULL && !sp->hs_pending) {
		uint64_t due = sp->cur->created + session_rekey_age(sp);

		if (now >= due)
			handshake_start(sp, now);
		else
			next = min64(next, due);
	}
	return min64(next, handshake_timers(sp, now, &gave_up));
}

uint64_t yip_device_timers(struct yip_device *dev, uint64_t now)
{
	struct yip_peer *due[64];
	size_t n;
	uint64_t next;

	/* Paths taken while the device was set up, before there was a clock,
	 * date from the first tick (their age is shown, and a path silent for
	 * too long counts as dead). */
	if (!dev->clock_seen) {
		dev->clock_seen = true;
		for (size_t i = 0; i < dev->n_peers; i++)
			if (dev->peers[i]->path >= 0 && dev->peers[i]->path_since == 0)
				dev->peers[i]->path_since = now;
		for (size_t i = 0; i < dev->n_servers; i++)
			if (dev->servers[i].peer.path >= 0 && dev->servers[i].peer.path_since == 0)
				dev->servers[i].peer.path_since = now;
	}
	/* The servers: a handful, on their own deadline. */
	if (now >= dev->next_timer) {
		dev->next_timer = UINT64_MAX; /* their actions may schedule() below */
		next = rendezvous_timers(dev, now);
		for (size_t i = 0; i < dev->n_servers; i++)
			next = min64(next, server_session_timers(&dev->servers[i].peer, now));
		next = min64(next, dev->next_timer);
		dev->next_timer = next > now ? next : now + YIP_NS_PER_MS;
	}
	/* Members whose certificates expired or were revoked lose their sessions. */
	if (dev->members != NULL && now >= dev->members->sweep_at) {
		members_sweep(dev, now);
		records_gossip_expire(dev, now);
		dev->members->sweep_at = now + MEMBERS_SWEEP_NS;
	}
	if (members_on(dev))
		members_gossip(dev, now);
	/* The peers that are due, each once: taken out first, so one that asks
	 * to run again at once waits for the next tick instead of spinning. */
	do {
		struct yip_peer *d;

		for (n = 0; n < sizeof(due) / sizeof(due[0]) && (d = timer_pop_due(dev, now)); n++)
			due[n] = d;
		for (size_t i = 0; i < n; i++) {
			struct yip_peer *p = due[i];

			next = peer_timers(p, now);
			dev->timer_runs++;
			if (p->timer_at <= now) {
				timer_del(p); /* it asked to run again at once: next tick */
				next = 0;
			}
			schedule_peer(p, next > now ? next : now + YIP_NS_PER_MS);
		}
	} while (n == sizeof(due) / sizeof(due[0]));
	next = min64(dev->next_timer, timer_next(dev));
	if (dev->members != NULL)
		next = min64(next, min64(dev->members->sweep_at, dev->members->gossip_at));
	/* What asked to run again at once waits a millisecond, so a deadline
	 * that stays in the past cannot spin the loop. */
	return next > now ? next : now + YIP_NS_PER_MS;
}

/* ---- the peer table at run time ---------------------------------------------------- */

struct yip_peer *yip_device_peer_add(struct yip_device *dev, uint64_t now,
                                     const uint8_t pub[YIP_KEY_LEN], const struct yip_cidr *allowed,
                                     size_t n_allowed, const union yip_sockaddr *endpoints,
                                     size_t n_endpoints, unsigned keepalive, char *err,
                                     size_t errlen)
{
	struct yip_peer *p;

	if (n_allowed > YIP_PEER_ALLOWED) {
		snprintf(err, errlen, "at most %d prefixes", YIP_PEER_ALLOWED);
		return NULL;
	}
	p = peer_new(dev, pub, true, err, errlen);
	if (p == NULL)
		return NULL;
	p->added = now;
	for (size_t i = 0; i < n_allowed; i++) {
		if (peer_route_add(p, &allowed[i], err, errlen) != 0) {
			peer_free(p);
			return NULL;
		}
		p->allowed[p->n_allowed++] = allowed[i];
	}
	for (size_t i = 0; i < n_endpoints; i++) {
		int k = path_add(p, now, YIP_PATH_DIRECT, &endpoints[i], -1, 0, YIP_ORIGIN_CONFIG);

		if (k >= 0 && p->path < 0)
			path_use(p, now, k);
	}
	p->persistent_keepalive = keepalive;
	if (keepalive)
		schedule_peer(p, now);
	return p;
}

int yip_device_peer_remove(struct yip_device *dev, struct yip_peer *p)
{
	if (p == NULL || p->dev != dev || !p->dynamic)
		return -1;
	punch_free(p);
	peer_free(p);
	return 0;
}

/* ---- membership -------------------------------------------------------------------- */

/* Roots are kept connected: a keepalive this often (seconds). */
#define ROOT_KEEPALIVE 25

int yip_device_members_init(struct yip_device *dev, const uint8_t ca[MEMBER_SIGN_PUBLIC],
                            const uint8_t *cert, size_t len, char *err, size_t errlen)
{
	int rc;

	if (dev->max_dynamic == 0) {
		snprintf(err, errlen, "the device was not made for a CA-gated network");
		return -1;
	}
	dev->members = calloc(1, sizeof(*dev->members));
	if (dev->members == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(dev->members->ca, ca, MEMBER_SIGN_PUBLIC);
	rc = yip_device_renew_cert(dev, cert, len, err, errlen);
	if (rc < 0)
		members_release(dev);
	return rc;
}

int yip_device_renew_cert(struct yip_device *dev, const uint8_t *cert, size_t len, char *err,
                          size_t errlen)
{
	struct yip_members *ms = dev->members;
	struct member_cert c;
	enum member_verdict v;

	if (ms == NULL) {
		snprintf(err, errlen, "not a CA-gated node");
		return -1;
	}
	if (member_cert_parse(&c, cert, len) != MEMBER_OK) {
		snprintf(err, errlen, "not a well-formed certificate");
		return -1;
	}
	if (ms->has_cert && strcmp(c.f.network, ms->network) != 0) {
		snprintf(err, errlen, "for network %s, not %s", c.f.network, ms->network);
		return -1;
	}
	v = member_cert_admit(&c, ms->ca, c.f.network, ms->revs, dev->public_key,
	                      members_unix(dev));
	if (v != MEMBER_OK) {
		snprintf(err, errlen, "%s: %s", member_verdict_name(v),
		         v == MEMBER_KEY_MISMATCH ? "it is for another key than local_private's"
		                                  : member_verdict_text(v));
		/* A renewal must be valid; the first certificate is taken anyway
		 * (members will refuse this node, but configured peers work). */
		if (ms->has_cert)
			return -1;
	}
	ms->cert = c;
	if (!ms->has_cert)
		snprintf(ms->network, sizeof(ms->network), "%s", c.f.network);
	ms->has_cert = true;
	/* Members-only rendezvous servers get it too. */
	if (yip_device_set_cert(dev, c.raw, c.len) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return v == MEMBER_OK ? 0 : 1;
}

/* Marks the roots of the set we hold, adding a peer for each we do not know. */
static void roots_apply(struct yip_device *dev, uint64_t now)
{
	const struct wire_roots *r = &dev->members->roots.f;
	char err[96];

	for (size_t i = dev->n_static; i < dev->n_peers; i++)
		dev->peers[i]->root = false;
	for (unsigned i = 0; i < r->n_roots; i++) {
		const struct wire_root *root = &r->roots[i];
		struct yip_peer *p;

		if (memcmp(root->key, dev->public_key, YIP_KEY_LEN) == 0)
			continue; /* we are a root ourselves */
		p = index_key_find(dev, root->key);
		if (p == NULL) {
			p = yip_device_peer_add(dev, now, root->key, NULL, 0, root->addrs,
			                        root->n_addrs, ROOT_KEEPALIVE, err, sizeof(err));
			if (p == NULL) {
				log_warn("root %02x%02x%02x%02x: %s", root->key[0], root->key[1],
				         root->key[2], root->key[3], err);
				continue;
			}
		} else {
			for (unsigned k = 0; k < root->n_addrs; k++)
				path_add(p, now, YIP_PATH_DIRECT, &root->addrs[k], -1, 0,
				         YIP_ORIGIN_CONFIG);
		}
		p->root = true;
	}
}

enum member_verdict yip_device_offer_roots(struct yip_device *dev, uint64_t now, const uint8_t *obj,
                                           size_t len)
{
	struct yip_members *ms = dev->members;
	struct member_roots *r;
	enum member_verdict v;

	if (!members_on(dev))
		return MEMBER_WRONG_CA;
	r = malloc(sizeof(*r));
	if (r == NULL)
		return MEMBER_MALFORMED;
	v = member_roots_parse(r, obj, len);
	if (v == MEMBER_OK)
		v = member_roots_check(r, ms->ca, ms->network,
		                       ms->has_roots ? ms->roots.f.serial : 0);
	if (v == MEMBER_OLDER)
		ms->roots_older++;
	if (v == MEMBER_OK && !(ms->has_roots && r->f.serial == ms->roots.f.serial)) {
		ms->roots = *r;
		ms->has_roots = true;
		roots_apply(dev, now);
		log_info("root set %llu adopted: %u root%s", (unsigned long long)r->f.serial,
		         r->f.n_roots, r->f.n_roots == 1 ? "" : "s");
	}
	free(r);
	return v;
}

/*
 * Takes out the dynamic peers whose certificates are revoked or expired,
 * and members (not roots) silent for MEMBERS_IDLE_NS without a session:
 * they are admitted again when they call. Cheap checks only (times, a
 * hash, binary searches): the signatures were checked at admission.
 */
static void members_sweep(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;
	uint64_t unix_now = members_unix(dev);

	/* Backwards: removing a peer moves the last one into its slot. */
	for (size_t i = dev->n_peers; i-- > dev->n_static;) {
		struct yip_peer *p = dev->peers[i];
		const struct member_cert *c = p->member ? &p->member->cert : NULL;
		const char *why = NULL;
		char name[WIRE_MEMBER_NAME_MAX + 1] = "";

		if (ms->revs != NULL &&
		    (member_revocations_has(ms->revs, WIRE_REVOKED_KEY, p->public_key) ||
		     (c != NULL && member_is_revoked(ms->revs, c))))
			why = "certificate revoked";
		else if (c != NULL && unix_now >= c->f.not_after + MEMBER_SKEW_S)
			why = "certificate expired";
		else if (!p->root && !session_usable(p, now) && !p->hs_pending &&
		         now - p->added >= MEMBERS_IDLE_NS && now - p->last_rx >= MEMBERS_IDLE_NS)
			why = "idle";
		if (why == NULL)
			continue;
		if (c != NULL)
			snprintf(name, sizeof(name), "%s", c->f.name);
		log_info("member \"%s\" (%02x%02x%02x%02x) removed: %s", name, p->public_key[0],
		         p->public_key[1], p->public_key[2], p->public_key[3], why);
		yip_device_peer_remove(dev, p);
		ms->removed++;
	}
}

/*
 * Gossip's turn: what its callbacks asked for (a newer root set or
 * revocation list from a neighbour is adopted as from a file), then its
 * timers. Gossip is told of sessions that went down here too.
 */
static void members_gossip(struct yip_device *dev, uint64_t now)
{
	struct yip_members *ms = dev->members;
	const uint8_t *obj;
	size_t len;

	if (ms->gossip != NULL && now < ms->gossip_at && !ms->gossip_roots && !ms->gossip_revs &&
	    ms->n_want == 0)
		return;
	if (ms->gossip_roots && (obj = records_gossip_item(dev, WIRE_OBJ_ROOTS, &len)) != NULL)
		yip_device_offer_roots(dev, now, obj, len);
	if (ms->gossip_revs && (obj = records_gossip_item(dev, WIRE_OBJ_REVOCATIONS, &len)) != NULL)
		yip_device_offer_revocations(dev, now, obj, len);
	ms->gossip_roots = ms->gossip_revs = false;
	for (size_t i = 0; i < dev->n_peers; i++)
		records_session(dev->peers[i], now);
	ms->gossip_at = records_gossip_timers(dev, now);
}

enum member_verdict yip_device_offer_revocations(struct yip_device *dev, uint64_t now,
                                                 const uint8_t *obj, size_t len)
{
	struct yip_members *ms = dev->members;
	struct member_revocations *r;
	enum member_verdict v;

	if (!members_on(dev))
		return MEMBER_WRONG_CA;
	r = malloc(sizeof(*r));
	if (r == NULL)
		return MEMBER_MALFORMED;
	v = member_revocations_parse(r, obj, len);
	if (v == MEMBER_OK)
		v = member_revocations_check(r, ms->ca, ms->network,
		                             ms->revs ? ms->revs->f.serial : 0);
	if (v == MEMBER_OLDER)
		ms->revs_older++;
	if (v != MEMBER_OK || (ms->revs != NULL && r->f.serial == ms->revs->f.serial)) {
		free(r);
		return v;
	}
	free(ms->revs);
	ms->revs = r;
	log_info("revocation list %llu adopted: %u entr%s", (unsigned long long)r->f.serial, r->f.n,
	         r->f.n == 1 ? "y" : "ies");
	members_sweep(dev, now); /* at once: revoked members lose their sessions now */
	records_gossip_revoked(dev, now);
	return MEMBER_OK;
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

const struct member_roots *yip_device_roots(const struct yip_device *dev)
{
	return dev->members && dev->members->has_roots ? &dev->members->roots : NULL;
}

const struct member_revocations *yip_device_revocations(const struct yip_device *dev)
{
	return dev->members ? dev->members->revs : NULL;
}

bool yip_device_members_info(const struct yip_device *dev, struct yip_members_info *out)
{
	const struct yip_members *ms = dev->members;

	memset(out, 0, sizeof(*out));
	if (ms == NULL || !ms->has_cert)
		return false;
	snprintf(out->network, sizeof(out->network), "%s", ms->network);
	out->cert = &ms->cert;
	out->cert_verdict =
	    member_cert_admit(&ms->cert, ms->ca, ms->network, ms->revs, dev->public_key,
	                      members_unix((struct yip_device *)dev));
	out->has_roots = ms->has_roots;
	out->roots_serial = ms->has_roots ? ms->roots.f.serial : 0;
	out->roots = ms->has_roots ? &ms->roots : NULL;
	out->has_revocations = ms->revs != NULL;
	out->revocations_serial = ms->revs ? ms->revs->f.serial : 0;
	out->n_revoked = ms->revs ? ms->revs->f.n : 0;
	out->no_cert = ms->no_cert;
	memcpy(out->refused, ms->refused, sizeof(out->refused));
	out->admitted = ms->admitted;
	out->removed = ms->removed;
	out->intros_held = ms->intros_held;
	out->intros_used = ms->intros_used;
	out->asks_refused = ms->asks_refused;
	out->roots_older = ms->roots_older;
	out->revocations_older = ms->revs_older;
	if (ms->gossip != NULL) {
		struct gossip_stats gs;

		gossip_get_stats(ms->gossip, &gs);
		out->gossip = true;
		out->gossip_items = gs.items;
		out->gossip_neighbours = gs.neighbours;
		out->gossip_active = gs.active;
		out->gossip_tx_msgs = gs.tx_msgs;
		out->gossip_tx_bytes = gs.tx_bytes;
		out->gossip_rx_msgs = gs.rx_msgs;
		out->gossip_rx_bytes = gs.rx_bytes;
		out->gossip_accepted = gs.accepted;
		for (int d = 0; d < GOSSIP_DROP_COUNT; d++)
			out->gossip_drops += gs.drops[d];
	}
	return true;
}
