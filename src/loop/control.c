/*
 * The loop's side of the control protocol (src/ctl, docs/control.md): the
 * control socket, and the status log of SIGUSR1 and shutdown, which shows
 * the same snapshot as `yipctl show` and `yipctl stats`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop/internal.h"

#include "ctl/reach.h"

#include "poll/daemon.h"
#include "util/clock.h"
#include "util/log.h"

/* What the loop knows of link id: its kind, and a TLS connection's details. */
static void link_describe(const struct yip_loop *l, uint32_t id, struct yip_ctl_link *out)
{
	const struct yip_link *lk = yip_link_get(&l->links, id);
	struct loop_tls_link_info ti;
	struct loop_quic_link_info qi;

	*out = (struct yip_ctl_link){0};
	if (lk == NULL)
		return;
	out->kind = yip_link_kind_name(lk->ops->kind);
	if (lk->ops->kind == YIP_LINK_TLS && loop_tls_link_info(&l->tls, id, &ti))
		*out = (struct yip_ctl_link){.kind = ti.reality ? "reality" : out->kind,
		                             .version = ti.version,
		                             .cipher = ti.cipher,
		                             .sni = ti.sni,
		                             .alpn = ti.alpn,
		                             .accepted = ti.accepted};
	if (lk->ops->kind == YIP_LINK_QUIC && loop_quic_link_info(&l->quic, id, &qi))
		*out = (struct yip_ctl_link){.kind = out->kind,
		                             .version = qi.version,
		                             .cipher = qi.cipher,
		                             .sni = qi.sni,
		                             .alpn = qi.alpn,
		                             .accepted = qi.accepted};
}

/* A snapshot of the engine with the loop's own counters. */
static int snapshot(struct yip_loop *l, struct yip_ctl_snapshot *snap)
{
	const struct loop_tls_stats *ts = &l->tls.stats;
	const struct yip_h3_stats *hs = &l->quic.decoy.stats;

	if (yip_ctl_snapshot_take(snap, &l->ctl_cfg, l->dev, yip_now_mono()) != 0)
		return -1;
	snap->start_time_s = l->start_time_s;
	snap->metrics_peers = l->metrics_peers;
	for (size_t i = 0; i < snap->n_peers; i++)
		if (snap->peers[i].has_path)
			link_describe(l, snap->peers[i].path_link, &snap->peers[i].link);
	for (size_t i = 0; i < snap->n_servers; i++) {
		if (snap->servers[i].has_path)
			link_describe(l, snap->servers[i].link, &snap->server_links[i]);
		snap->server_dial_error[i] = loop_tls_server_error(&l->tls, i);
	}
	snap->datapath = (struct yip_ctl_datapath){
	    .present = true,
	    .io = l->io_name,
	    .workers = l->workers.n_threads + 1,
	    .tun_offload = l->vnet,
	    .udp_gso = l->tx.gso,
	    .udp_gro = l->rx.gro,
	    .tso_reads = l->tso_reads,
	    .tso_segments = l->tso_segments,
	    .gro_coalesced = l->vnet ? l->gro.coalesced : 0,
	    .udp_trains = l->tx.trains_sent,
	    .udp_train_datagrams = l->tx.train_dgrams,
	    .aqm_marks = l->shape.tx_marks + l->shape.rx_marks,
	    .aqm_drops = l->shape.tx_drops + l->shape.rx_drops,
	    .timer_runs = yip_device_timer_runs(l->dev),
	    .tls_links = ts->opened - ts->closed,
	    .tls_dialed = ts->dialed,
	    .tls_accepted = ts->accepted,
	    .tls_opened = ts->opened,
	    .tls_failed = ts->failed,
	    .tls_refused_full = ts->refused_full,
	    .tls_refused_busy = ts->refused_busy,
	    .tls_bad_frames = ts->bad_frames,
	    .quic_decoy_requests = hs->requests,
	    .quic_decoy_refused = hs->refused_streams + hs->refused_headers + hs->refused_body,
	    .quic_decoy_malformed = hs->malformed,
	    .quic_decoy_errors = hs->conn_errors + l->quic.decoy.open_failed,
	};
	return 0;
}

/*
 * ping and netcheck act on the engine before they answer (docs/control.md):
 * a round of probes to the peer, fresh probes to the servers. NULL: the
 * request is another one (or out of memory, with *oom).
 */
static char *reach_reply(struct yip_loop *l, const struct yip_ctl_snapshot *snap,
                         const struct yip_ctl_request *req, size_t *out_len)
{
	uint64_t now = yip_now_mono();
	struct yip_ping_info pi;
	char err[256];
	int k, status = YIP_PING_SENT;

	if (req->cmd == YIP_CTL_NETCHECK) {
		struct yip_ctl_snapshot fresh;
		char *r;

		if (!req->poll || yip_device_netcheck(l->dev, now) < 0)
			return yip_ctl_netcheck_reply(snap, false, out_len);
		/* the probes' state (pending) as they leave */
		if (snapshot(l, &fresh) != 0)
			return NULL;
		r = yip_ctl_netcheck_reply(&fresh, true, out_len);
		yip_ctl_snapshot_free(&fresh);
		return r;
	}
	k = yip_ctl_resolve_peer(snap, req->target, err, sizeof(err));
	if (k < 0)
		return yip_ctl_error_reply(err, out_len);
	if (!req->poll)
		status = yip_device_ping(l->dev, now, snap->peers[k].public_key);
	if (!yip_device_ping_info(l->dev, snap->peers[k].public_key, now, &pi))
		return yip_ctl_error_reply("no such peer", out_len);
	return yip_ctl_ping_reply(snap, (size_t)k, status, req->poll, &pi, out_len);
}

/* Answers one control request from a fresh snapshot. */
static char *ctl_reply(void *ctx, const char *line, size_t len, size_t *out_len)
{
	struct yip_ctl_snapshot snap;
	struct yip_ctl_request req;
	char *r, err[128];
	bool parsed = yip_ctl_parse_request(line, len, &req, err, sizeof(err)) == 0;

	if (parsed && req.cmd == YIP_CTL_RELOAD) {
		struct yip_ctl_reload *rl = malloc(sizeof(*rl));

		if (rl == NULL)
			return NULL;
		loop_reload_all(ctx, rl);
		r = yip_ctl_reload_reply(rl, out_len);
		free(rl);
		return r;
	}
	/* log [level]: the loop's own state, no snapshot needed */
	if (parsed && req.cmd == YIP_CTL_LOG) {
		if (req.has_level && req.level != yip_log_get_level()) {
			yip_log_set_level(req.level);
			log_info("log level now %s (yipctl log)", yip_log_level_name(req.level));
		}
		return yip_ctl_log_reply(yip_log_get_level(), out_len);
	}
	if (snapshot(ctx, &snap) != 0)
		return NULL;
	if (parsed && (req.cmd == YIP_CTL_PING || req.cmd == YIP_CTL_NETCHECK)) {
		r = reach_reply(ctx, &snap, &req, out_len);
		yip_ctl_snapshot_free(&snap);
		return r;
	}
	r = yip_ctl_reply(&snap, line, len, out_len);
	yip_ctl_snapshot_free(&snap);
	return r;
}

/* The body of a metrics scrape. */
static char *metrics_body(void *ctx, size_t *len)
{
	struct yip_ctl_snapshot snap;
	char *r;

	if (snapshot(ctx, &snap) != 0)
		return NULL;
	r = yip_ctl_metrics(&snap, len);
	yip_ctl_snapshot_free(&snap);
	return r;
}

int loop_metrics_open(struct yip_loop *l, const struct yip_config *config, char *err, size_t errlen)
{
	l->start_time_s = yip_now_wall() / YIP_NS_PER_S;
	l->metrics_peers = config->metrics_peers;
	if (!config->has_metrics_listen)
		return 0;
	if (yip_httpd_open(&l->metrics, &config->metrics_listen, err, errlen) != 0)
		return -1;
	if (yip_httpd_watch(&l->metrics, &l->poll, metrics_body, l) != 0) {
		snprintf(err, errlen, "metrics: %s", strerror(errno));
		yip_httpd_close(&l->metrics);
		return -1;
	}
	l->metrics_on = true;
	log_info("metrics on http://%s/metrics", l->metrics.addr);
	return 0;
}

void loop_metrics_close(struct yip_loop *l)
{
	if (l->metrics_on)
		yip_httpd_close(&l->metrics);
	l->metrics_on = false;
}

void loop_ctl_open(struct yip_loop *l, const char *dir)
{
	char err[256];

	if (yip_ctl_server_open(&l->ctl, dir, l->ctl_cfg.device,
	                        sandbox_uid(l->has_sandbox ? &l->sandbox : NULL), err,
	                        sizeof(err)) != 0) {
		log_warn("control socket disabled: %s", err);
		return;
	}
	if (yip_ctl_server_watch(&l->ctl, &l->poll, ctl_reply, l) != 0) {
		log_warn("control socket disabled: %s", strerror(errno));
		yip_ctl_server_close(&l->ctl);
		return;
	}
	l->ctl_on = true;
	log_info("control socket %s", l->ctl.path);
}

void loop_ctl_close(struct yip_loop *l)
{
	if (l->ctl_on)
		yip_ctl_server_close(&l->ctl);
	l->ctl_on = false;
}

uint64_t loop_ctl_expire(struct yip_loop *l, uint64_t now)
{
	return l->ctl_on ? yip_ctl_server_expire(&l->ctl, now) : 0;
}

/* Writes the reply to request as view v to out; false with a message in err. */
static bool render(FILE *out, const struct yip_ctl_snapshot *snap, const char *request,
                   enum yip_ctl_view v, char *err, size_t errlen)
{
	size_t len;
	char *reply = yip_ctl_reply(snap, request, strlen(request), &len);
	int rc;

	if (reply == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	rc = yip_ctl_render(out, v, reply, len, yip_now_wall() / YIP_NS_PER_S, err, errlen);
	free(reply);
	return rc == 0;
}

void yip_loop_status(struct yip_loop *l)
{
	struct yip_ctl_snapshot snap;
	char *text = NULL, err[256] = "out of memory";
	size_t size = 0;
	FILE *out;
	bool ok = false;

	if (snapshot(l, &snap) != 0) {
		log_warn("status: out of memory");
		return;
	}
	out = open_memstream(&text, &size);
	if (out != NULL) {
		ok = render(out, &snap, "show", YIP_CTL_VIEW_SHOW, err, sizeof(err)) &&
		     render(out, &snap, "stats", YIP_CTL_VIEW_STATS, err, sizeof(err));
		if (fclose(out) != 0)
			ok = false;
	}
	yip_ctl_snapshot_free(&snap);
	if (!ok) {
		log_warn("status: %s", err);
		free(text);
		return;
	}
	daemon_log_status(text);
	free(text);
}
