/*
 * A snapshot as Prometheus text exposition, format 0.0.4 (see ctl.h and
 * docs/operations.md, "Metrics"). Pure: it writes text into memory. Every
 * metric has its HELP and TYPE lines before its samples, counters end in
 * _total and only grow (the engine's device-level totals, or the live
 * peers' counters plus the removed peers' sums), units are bytes and
 * seconds, and every label takes a bounded set of values.
 */
#include "ctl/ctl.h"
#include "ctl/metrics_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/member.h"
#include "peer/peer.h"

/* Sums of every peer's counters, the removed ones included. */
struct sums {
	struct yip_peer_stats st;
	uint64_t recovery_mem;
	uint64_t state[3];   /* established, handshaking, idle */
	uint64_t by_path[5]; /* direct, relayed, tls, quic, none */
};

static const char *const state_names[3] = {"established", "handshaking", "idle"};
static const char *const path_names[5] = {"direct", "relayed", "tls", "quic", "none"};

static void add_stats(struct yip_peer_stats *a, const struct yip_peer_stats *b)
{
	a->lost += b->lost;
	a->fec_recovered += b->fec_recovered;
	a->fec_unrecovered += b->fec_unrecovered;
	a->fec_late += b->fec_late;
	a->arq_recovered += b->arq_recovered;
	a->arq_sent += b->arq_sent;
	a->nacks_sent += b->nacks_sent;
	a->nacks_received += b->nacks_received;
	a->repair_sent += b->repair_sent;
	a->repair_bytes += b->repair_bytes;
	a->wire_bytes += b->wire_bytes;
	a->roams += b->roams;
}

/* The kind of a peer's current path, as an index into path_names. */
static unsigned peer_path(const struct yip_ctl_peer *p)
{
	if (!p->has_path)
		return 4;
	if (p->relayed_why != NULL)
		return 1;
	if (p->link.kind != NULL &&
	    (strcmp(p->link.kind, "tls") == 0 || strcmp(p->link.kind, "reality") == 0))
		return 2;
	if (p->link.kind != NULL && strcmp(p->link.kind, "quic") == 0)
		return 3;
	return 0;
}

static void sum_peers(const struct yip_ctl_snapshot *s, struct sums *m)
{
	memset(m, 0, sizeof(*m));
	add_stats(&m->st, &s->totals.removed);
	for (size_t i = 0; i < s->n_peers; i++) {
		const struct yip_ctl_peer *p = &s->peers[i];

		add_stats(&m->st, &p->stats);
		m->recovery_mem += p->recovery_mem;
		m->state[p->established ? 0 : p->handshaking ? 1 : 2]++;
		m->by_path[peer_path(p)]++;
	}
}

static void traffic(FILE *f, const struct yip_ctl_snapshot *s)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} t[] = {
	    {"yip_received_bytes_total", "Inner bytes received from peers, by path kind.",
	     offsetof(struct yip_traffic, rx_bytes)},
	    {"yip_sent_bytes_total", "Inner bytes sent to peers, by path kind.",
	     offsetof(struct yip_traffic, tx_bytes)},
	    {"yip_received_packets_total", "Inner packets received from peers, by path kind.",
	     offsetof(struct yip_traffic, rx_packets)},
	    {"yip_sent_packets_total", "Inner packets sent to peers, by path kind.",
	     offsetof(struct yip_traffic, tx_packets)},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		metrics_head(f, t[i].name, "counter", t[i].help);
		for (unsigned k = 0; k < YIP_TRAFFIC_KINDS; k++) {
			uint64_t v;

			memcpy(&v, (const char *)&s->totals.by_kind[k] + t[i].off, sizeof(v));
			metrics_sample(f, t[i].name, "kind", yip_traffic_kind_name(k), v);
		}
	}
}

static void peers(FILE *f, const struct yip_ctl_snapshot *s, const struct sums *m)
{
	metrics_head(f, "yip_peers", "gauge", "Peers by session state.");
	for (unsigned i = 0; i < 3; i++)
		metrics_sample(f, "yip_peers", "state", state_names[i], m->state[i]);
	metrics_head(f, "yip_peers_by_path", "gauge", "Peers by the kind of their current path.");
	for (unsigned i = 0; i < 5; i++)
		metrics_sample(f, "yip_peers_by_path", "kind", path_names[i], m->by_path[i]);
	metrics_metric(f, "yip_sessions_up", "gauge", "Peers with an established session.",
	               m->state[0]);
	metrics_metric(f, "yip_handshakes_initiated_total", "counter",
	               "Handshake series started with peers.", s->totals.hs_initiated);
	metrics_metric(f, "yip_handshakes_completed_total", "counter",
	               "Sessions made with peers, either side initiating.", s->totals.hs_completed);
	metrics_metric(f, "yip_handshakes_failed_total", "counter",
	               "Handshake series given up without an answer.", s->totals.hs_failed);
}

static void recovery(FILE *f, const struct sums *m)
{
	metrics_metric(f, "yip_lost_packets_total", "counter",
	               "Datagrams from peers that never arrived (gaps in their counters).",
	               m->st.lost);
	metrics_metric(f, "yip_fec_recovered_packets_total", "counter",
	               "Packets rebuilt from FEC repair symbols.", m->st.fec_recovered);
	metrics_metric(f, "yip_fec_unrecovered_packets_total", "counter",
	               "Packets of FEC blocks that could not be rebuilt.", m->st.fec_unrecovered);
	metrics_metric(f, "yip_fec_late_packets_total", "counter",
	               "Packets rebuilt after later packets had gone on without them.",
	               m->st.fec_late);
	metrics_metric(f, "yip_arq_recovered_packets_total", "counter",
	               "Retransmitted packets received and delivered.", m->st.arq_recovered);
	metrics_metric(f, "yip_arq_retransmitted_packets_total", "counter",
	               "Packets retransmitted on a peer's request.", m->st.arq_sent);
	metrics_metric(f, "yip_arq_nacks_sent_total", "counter", "Missing packets asked of peers.",
	               m->st.nacks_sent);
	metrics_metric(f, "yip_repair_sent_packets_total", "counter", "FEC repair symbols sent.",
	               m->st.repair_sent);
	metrics_metric(f, "yip_repair_sent_bytes_total", "counter",
	               "Bytes of redundancy sent (repair datagrams).", m->st.repair_bytes);
	metrics_metric(f, "yip_wire_sent_bytes_total", "counter",
	               "Bytes of every datagram sent to peers (headers and repair included).",
	               m->st.wire_bytes);
	metrics_metric(f, "yip_path_roams_total", "counter", "Times a peer's address changed.",
	               m->st.roams);
	metrics_metric(f, "yip_recovery_memory_bytes", "gauge", "Memory loss recovery holds now.",
	               m->recovery_mem);
}

static void drops(FILE *f, const struct yip_ctl_snapshot *s)
{
	metrics_head(f, "yip_drops_total", "counter", "Datagrams and packets dropped, by reason.");
	for (unsigned d = 0; d < YIP_DROP_COUNT; d++)
		metrics_sample(f, "yip_drops_total", "reason", yip_drop_name((enum yip_drop)d),
		               s->drops[d]);
}

static void servers(FILE *f, const struct yip_ctl_snapshot *s)
{
	static const char *const states[] = {"connecting", "registering", "registered", "refused"};
	char idx[24];

	metrics_metric(f, "yip_rendezvous_servers", "gauge", "Rendezvous servers configured.",
	               s->n_servers);
	if (s->n_servers == 0)
		return;
	metrics_head(
	    f, "yip_rendezvous_server_state", "gauge",
	    "1 for the state each rendezvous server (by its index in the configuration) is in.");
	for (size_t i = 0; i < s->n_servers; i++) {
		snprintf(idx, sizeof(idx), "%zu", i);
		for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++)
			fprintf(f, "yip_rendezvous_server_state{server=\"%s\",state=\"%s\"} %d\n",
			        idx, states[k],
			        s->servers[i].state != NULL &&
			            strcmp(s->servers[i].state, states[k]) == 0);
	}
	metrics_head(f, "yip_rendezvous_lookups_total", "counter",
	             "Peer lookups sent to each rendezvous server.");
	for (size_t i = 0; i < s->n_servers; i++) {
		snprintf(idx, sizeof(idx), "%zu", i);
		metrics_sample(f, "yip_rendezvous_lookups_total", "server", idx,
		               s->servers[i].lookups);
	}
	metrics_head(f, "yip_rendezvous_introductions_total", "counter",
	             "Introductions received from each rendezvous server.");
	for (size_t i = 0; i < s->n_servers; i++) {
		snprintf(idx, sizeof(idx), "%zu", i);
		metrics_sample(f, "yip_rendezvous_introductions_total", "server", idx,
		               s->servers[i].intros);
	}
}

static void members(FILE *f, const struct yip_ctl_snapshot *s)
{
	const struct yip_ctl_membership *m = &s->members;

	if (!m->present)
		return;
	metrics_metric(f, "yip_members_admitted_total", "counter", "Members admitted as peers.",
	               m->admitted);
	metrics_metric(f, "yip_members_removed_total", "counter",
	               "Members removed (revoked, expired).", m->removed);
	metrics_head(f, "yip_members_refused_total", "counter",
	             "Certificates refused, by verdict.");
	for (unsigned v = 0; v < MEMBER_VERDICT_COUNT; v++)
		metrics_sample(f, "yip_members_refused_total", "reason",
		               member_verdict_name((enum member_verdict)v), m->refused[v]);
	if (!m->gossip)
		return;
	metrics_metric(f, "yip_gossip_neighbours", "gauge", "Gossip neighbours.",
	               m->gossip_neighbours);
	metrics_metric(f, "yip_gossip_items", "gauge", "Items the gossip store holds.",
	               m->gossip_items);
	metrics_metric(f, "yip_gossip_sent_messages_total", "counter", "Gossip messages sent.",
	               m->gossip_tx_msgs);
	metrics_metric(f, "yip_gossip_sent_bytes_total", "counter", "Gossip bytes sent.",
	               m->gossip_tx_bytes);
	metrics_metric(f, "yip_gossip_received_messages_total", "counter",
	               "Gossip messages received.", m->gossip_rx_msgs);
	metrics_metric(f, "yip_gossip_received_bytes_total", "counter", "Gossip bytes received.",
	               m->gossip_rx_bytes);
	metrics_metric(f, "yip_gossip_accepted_total", "counter", "Gossip items accepted.",
	               m->gossip_accepted);
	metrics_metric(f, "yip_gossip_dropped_total", "counter", "Gossip messages dropped.",
	               m->gossip_drops);
}

static void datapath(FILE *f, const struct yip_ctl_snapshot *s)
{
	const struct yip_ctl_datapath *d = &s->datapath;

	if (!d->present)
		return;
	metrics_metric(f, "yip_tls_links", "gauge", "TLS links open now.", d->tls_links);
	metrics_metric(f, "yip_tls_links_opened_total", "counter", "TLS links opened.",
	               d->tls_opened);
	metrics_metric(f, "yip_tls_links_failed_total", "counter", "TLS links that failed to open.",
	               d->tls_failed);
	metrics_metric(f, "yip_aqm_marks_total", "counter", "Packets CoDel marked with ECN CE.",
	               d->aqm_marks);
}

/* The first 8 bytes of a key in hex: a peer's label. */
static void short_key(char out[17], const uint8_t *key)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 8; i++) {
		out[2 * i] = hex[key[i] >> 4];
		out[2 * i + 1] = hex[key[i] & 15];
	}
	out[16] = '\0';
}

static void per_peer(FILE *f, const struct yip_ctl_snapshot *s)
{
	static const struct {
		const char *name, *type, *help;
	} t[] = {
	    {"yip_peer_received_bytes_total", "counter", "Inner bytes received from the peer."},
	    {"yip_peer_sent_bytes_total", "counter", "Inner bytes sent to the peer."},
	    {"yip_peer_up", "gauge", "1 if the peer has an established session."},
	    {"yip_peer_last_handshake_timestamp_seconds", "gauge",
	     "Unix time of the peer's latest handshake (0: never)."},
	};
	size_t n = s->n_peers < YIP_CTL_METRICS_MAX_PEERS ? s->n_peers : YIP_CTL_METRICS_MAX_PEERS;
	char key[17];

	if (!s->metrics_peers)
		return;
	metrics_metric(f, "yip_peer_series_omitted", "gauge",
	               "Peers left out of the per-peer series (over the limit).", s->n_peers - n);
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		metrics_head(f, t[k].name, t[k].type, t[k].help);
		for (size_t i = 0; i < n; i++) {
			const struct yip_ctl_peer *p = &s->peers[i];
			uint64_t v = k == 0   ? p->stats.rx_bytes
			             : k == 1 ? p->stats.tx_bytes
			             : k == 2 ? p->established
			                      : p->latest_handshake;

			short_key(key, p->public_key);
			metrics_sample(f, t[k].name, "peer", key, v);
		}
	}
}

char *yip_ctl_metrics(const struct yip_ctl_snapshot *s, size_t *out_len)
{
	char *text = NULL;
	size_t size = 0;
	struct sums m;
	FILE *f = open_memstream(&text, &size);

	if (f == NULL)
		return NULL;
	sum_peers(s, &m);
	metrics_process(f, s->start_time_s);
	traffic(f, s);
	peers(f, s, &m);
	recovery(f, &m);
	drops(f, s);
	servers(f, s);
	members(f, s);
	datapath(f, s);
	per_peer(f, s);
	return metrics_finish(f, &text, &size, out_len);
}
