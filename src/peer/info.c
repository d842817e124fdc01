/*
 * What the engine tells the outside world about itself (yipctl, the status
 * log): the device, its peers, servers and membership, and its drop
 * counters. Reads only, except the drops counted from outside.
 */
#include "peer/internal.h"

#include <stdio.h>
#include <string.h>

#include "gossip/gossip.h"

static const char *const drop_names[] = {
#define X(name, str) str,
    YIP_DROP_REASONS(X)
#undef X
};

const char *yip_drop_name(enum yip_drop d)
{
	return d < YIP_DROP_COUNT ? drop_names[d] : "?";
}

void(yip_device_drop)(struct yip_device *dev, enum yip_drop d)
{
	yip_device_drop(dev, d);
}

void(yip_device_drop_n)(struct yip_device *dev, enum yip_drop d, uint64_t n)
{
	yip_device_drop_n(dev, d, n);
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

void yip_device_totals(const struct yip_device *dev, struct yip_device_totals *out)
{
	*out = dev->totals;
}

const char *yip_traffic_kind_name(unsigned k)
{
	static const char *const names[YIP_TRAFFIC_KINDS] = {"direct", "relayed", "tls", "quic"};

	return k < YIP_TRAFFIC_KINDS ? names[k] : "?";
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
		if (p->paths[p->path].kind == YIP_PATH_DIRECT) {
			out->path_link = p->paths[p->path].link;
		} else {
			/* Relayed: over whatever link the server's own path uses. */
			const struct yip_peer *sp = &p->dev->servers[p->paths[p->path].server].peer;

			out->path_link = sp->path >= 0 ? sp->paths[sp->path].link : YIP_LINK_MAIN;
		}
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
	out->dynamic = !p->configured;
	out->root = p->root;
	out->cert = p->member != NULL ? &p->member->cert : NULL;
	out->allowed = p->allowed;
	out->n_allowed = p->n_allowed;
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
	out->has_path = s->peer.path >= 0;
	if (out->has_path) {
		out->link = s->peer.paths[s->peer.path].link;
		out->addr = s->peer.paths[s->peer.path].addr;
	}
	out->reason = out->has_path && out->link != YIP_LINK_MAIN ? s->reason : NULL;
	out->udp = s->peer.path < 0 || s->peer.paths[s->peer.path].link == YIP_LINK_MAIN;
	out->alt_port = s->alt_port;
	out->has_reflexive_alt = s->has_reflexive_alt;
	out->reflexive_alt = s->reflexive_alt;
	out->rtt = s->rtt;
	out->alt_rtt = s->alt_rtt;
	out->pending = s->unanswered > 0;
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

bool yip_peer_established(const struct yip_peer *p, uint64_t now)
{
	return session_usable(p, now);
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
