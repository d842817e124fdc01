/*
 * yip-rendezvous's counters as Prometheus text (ctl/rendezvous.h,
 * docs/operations.md, "Metrics"). Pure: it writes text into memory.
 */
#include "ctl/rendezvous.h"

#include <stdio.h>
#include <stdlib.h>

#include "ctl/metrics_text.h"
#include "membership/member.h"

static void rdv_engine(FILE *f, const struct yip_rdv_status *st)
{
	const struct rdv_server *srv = st->srv;
	const struct rdv_stats *t = &srv->stats;

	metrics_metric(f, "yip_rendezvous_nodes", "gauge", "Nodes registered now.", srv->n_nodes);
	metrics_metric(f, "yip_rendezvous_guests", "gauge",
	               "Registered nodes that are guests (not admitted members).", srv->n_guests);
	metrics_metric(f, "yip_rendezvous_handshakes_total", "counter",
	               "Handshakes completed with nodes.", t->handshakes);
	metrics_metric(f, "yip_rendezvous_registrations_total", "counter",
	               "Registrations accepted.", t->registrations);
	metrics_metric(f, "yip_rendezvous_lookups_total", "counter", "Lookups answered.",
	               t->lookups);
	metrics_metric(f, "yip_rendezvous_introductions_total", "counter", "Introductions sent.",
	               t->intros);
	metrics_metric(f, "yip_rendezvous_relayed_packets_total", "counter", "Datagrams relayed.",
	               t->relayed_dgrams);
	metrics_metric(f, "yip_rendezvous_relayed_bytes_total", "counter", "Bytes relayed.",
	               t->relayed_bytes);
	metrics_metric(f, "yip_rendezvous_admitted_total", "counter",
	               "Members whose certificate was accepted.", t->admitted);
	metrics_head(f, "yip_rendezvous_refused_total", "counter",
	             "Registrations refused, by reason (a certificate missing or its verdict).");
	for (unsigned v = 0; v < MEMBER_VERDICT_COUNT; v++)
		metrics_sample(f, "yip_rendezvous_refused_total", "reason",
		               v == 0 ? "no_certificate"
		                      : member_verdict_name((enum member_verdict)v),
		               t->refused[v]);
	metrics_metric(f, "yip_rendezvous_evicted_total", "counter",
	               "Members dropped: revoked or expired.", t->evicted);
	metrics_head(f, "yip_rendezvous_drops_total", "counter", "Datagrams dropped, by reason.");
	for (unsigned d = 0; d < RDV_DROP_COUNT; d++)
		metrics_sample(f, "yip_rendezvous_drops_total", "reason",
		               rdv_drop_name((enum rdv_drop)d), srv->drops[d]);
	metrics_metric(f, "yip_rendezvous_received_datagrams_total", "counter",
	               "UDP datagrams received on both sockets.", st->rx_dgrams);
	metrics_metric(f, "yip_rendezvous_sent_datagrams_total", "counter",
	               "UDP datagrams handed to the kernel.", st->tx_dgrams);
	metrics_metric(f, "yip_rendezvous_send_failed_total", "counter",
	               "UDP datagrams the kernel refused.", st->tx_failed);
}

static void rdv_fronts(FILE *f, const struct yip_rdv_status *st)
{
	if (st->front != NULL) {
		const struct yip_rdv_front *t = st->front;

		metrics_metric(f, "yip_rendezvous_tls_connections", "gauge",
		               "TLS front: connections open.", t->open);
		metrics_metric(f, "yip_rendezvous_tls_accepted_total", "counter",
		               "TLS front: connections accepted.", t->tcp_accepted);
		metrics_metric(f, "yip_rendezvous_tls_refused_total", "counter",
		               "TLS front: connections closed at once (over a limit).",
		               t->tcp_refused);
		metrics_metric(f, "yip_rendezvous_tls_failed_total", "counter",
		               "TLS front: handshakes that failed or timed out.",
		               t->tls_failed + t->tls_timeouts);
		metrics_metric(f, "yip_rendezvous_tls_yip_streams_total", "counter",
		               "TLS front: connections whose first frame authenticated.",
		               t->yip_streams);
		metrics_head(f, "yip_rendezvous_tls_decoy_total", "counter",
		             "TLS front: connections served by the decoy or the site, by reason.");
		for (unsigned r = 0; r < YIP_RDV_DECOY_COUNT; r++)
			metrics_sample(f, "yip_rendezvous_tls_decoy_total", "reason",
			               yip_rdv_decoy_name(r), t->decoy_reasons[r]);
	}
	if (st->reality != NULL) {
		const struct yip_rdv_reality *t = st->reality;

		metrics_metric(f, "yip_rendezvous_reality_connections", "gauge",
		               "REALITY front: connections open.", t->open);
		metrics_metric(f, "yip_rendezvous_reality_accepted_total", "counter",
		               "REALITY front: connections accepted.", t->accepted);
		metrics_metric(f, "yip_rendezvous_reality_refused_total", "counter",
		               "REALITY front: connections closed at once (over a limit).",
		               t->refused);
		metrics_head(f, "yip_rendezvous_reality_outcomes_total", "counter",
		             "REALITY front: connections by what became of them.");
		for (unsigned o = 0; o < YIP_RDV_REALITY_OUTCOMES; o++)
			metrics_sample(f, "yip_rendezvous_reality_outcomes_total", "outcome",
			               yip_rdv_reality_outcome_name(o), t->outcome[o]);
		metrics_metric(
		    f, "yip_rendezvous_reality_yip_streams_total", "counter",
		    "REALITY front: authenticated connections whose handshake completed.",
		    t->yip_streams);
		metrics_metric(f, "yip_rendezvous_reality_spliced_bytes_total", "counter",
		               "REALITY front: bytes spliced to and from the target.",
		               t->bytes_to_target + t->bytes_from_target);
	}
	if (st->quic != NULL) {
		const struct yip_rdv_quic *t = st->quic;

		metrics_metric(f, "yip_rendezvous_quic_connections", "gauge",
		               "QUIC: connections open.", t->open);
		metrics_metric(f, "yip_rendezvous_quic_accepted_total", "counter",
		               "QUIC: connections begun.", t->accepted);
		metrics_metric(f, "yip_rendezvous_quic_refused_total", "counter",
		               "QUIC: Initials dropped over a limit.", t->refused);
		metrics_metric(f, "yip_rendezvous_quic_failed_total", "counter",
		               "QUIC: handshakes that failed or timed out.",
		               t->failed + t->timeouts);
		metrics_metric(f, "yip_rendezvous_quic_yip_connections_total", "counter",
		               "QUIC: connections whose first datagram authenticated.",
		               t->yip_conns);
		metrics_metric(f, "yip_rendezvous_quic_decoy_requests_total", "counter",
		               "QUIC: HTTP/3 requests the decoy answered.", t->decoy_requests);
	}
}

char *yip_rdv_metrics(const struct yip_rdv_status *st, uint64_t start_s, size_t *out_len)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (f == NULL)
		return NULL;
	metrics_process(f, start_s);
	rdv_engine(f, st);
	rdv_fronts(f, st);
	return metrics_finish(f, &text, &size, out_len);
}
