/*
 * yip-rendezvous's status: the JSON reply, written straight from the
 * engine's state (a server may hold 100 000 nodes: no document tree is
 * built for them), and the text view that `yip-rendezvous status` prints.
 * Every string written is hex, a formatted address or a fixed name, so no
 * escaping is needed.
 */
#include "ctl/rendezvous.h"
#include "ctl/fields.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "util/clock.h"
#include "util/hex.h"

const char *yip_rdv_nat_name(unsigned nat)
{
	static const char *const names[WIRE_NAT_COUNT] = {"unknown", "none", "endpoint-independent",
	                                                  "per-destination"};

	return nat < WIRE_NAT_COUNT ? names[nat] : "unknown";
}

const char *yip_rdv_reality_outcome_name(unsigned o)
{
	static const char *const more[] = {
#define X(name, str) str,
	    YIP_RDV_REALITY_MORE(X)
#undef X
	};

	if (o < REALITY_VERDICTS)
		return reality_verdict_name(o);
	return o < YIP_RDV_REALITY_OUTCOMES ? more[o - REALITY_VERDICTS] : "?";
}

const char *yip_rdv_decoy_name(unsigned r)
{
	static const char *const names[] = {
#define X(name, str) str,
	    YIP_RDV_DECOY_REASONS(X)
#undef X
	};

	return r < YIP_RDV_DECOY_COUNT ? names[r] : "?";
}

/* ---- the reply ------------------------------------------------------------------- */

/* Unix seconds of monotonic time t, seen from st's moment. */
static uint64_t unix_of(const struct yip_rdv_status *st, uint64_t t)
{
	uint64_t ago = t < st->now ? (st->now - t) / YIP_NS_PER_S : 0;

	return ago < st->now_wall_s ? st->now_wall_s - ago : 0;
}

static void put_key(FILE *f, const char *name, const uint8_t key[YIP_KEY_LEN])
{
	char hex[2 * YIP_KEY_LEN + 1];

	yip_hex_encode(hex, key, YIP_KEY_LEN);
	fprintf(f, "\"%s\":\"%s\"", name, hex);
}

static void put_addr(FILE *f, const char *name, const union yip_sockaddr *a)
{
	char s[YIP_ADDRSTRLEN];

	yip_sockaddr_format(a, s, sizeof(s));
	fprintf(f, "\"%s\":\"%s\"", name, s);
}

static void put_node(FILE *f, const struct yip_rdv_status *st, const struct rdv_node *n)
{
	const struct rdv_node_stats *s = &n->stats;

	fputc('{', f);
	put_key(f, "public_key", n->key);
	fputc(',', f);
	put_addr(f, "address", &n->addr);
	fprintf(f, ",\"address_confirmed\":%s,\"via\":\"%s\"", n->confirmed ? "true" : "false",
	        n->sock != RDV_SOCK_STREAM   ? "udp"
	        : rdv_is_quic_addr(&n->addr) ? "quic"
	                                     : "tls");
	if (n->move != NULL) {
		fputc(',', f);
		put_addr(f, "moving_to", &n->move->to);
	}
	fprintf(f, ",\"since\":%" PRIu64 ",\"last_seen\":%" PRIu64 ",\"registered\":%s",
	        unix_of(st, n->since), unix_of(st, n->last_rx), n->registered ? "true" : "false");
	fprintf(f, ",\"nat\":\"%s\",\"relay_id\":%" PRIu32 ",\"relay\":%s",
	        yip_rdv_nat_name(n->nat), n->relay_id,
	        n->flags & WIRE_CTRL_RELAY ? "true" : "false");
	fputs(",\"candidates\":[", f);
	for (unsigned i = 0; i < n->n_cands && i < WIRE_MAX_CANDS; i++) {
		char a[YIP_ADDRSTRLEN];

		yip_sockaddr_format(&n->cands[i], a, sizeof(a));
		fprintf(f, "%s\"%s\"", i ? "," : "", a);
	}
	fprintf(f,
	        "],\"relay_in_dgrams\":%" PRIu64 ",\"relay_in_bytes\":%" PRIu64
	        ",\"relay_out_dgrams\":%" PRIu64 ",\"relay_out_bytes\":%" PRIu64
	        ",\"relay_refused\":%" PRIu64 ",\"lookups\":%" PRIu64 ",\"intros\":%" PRIu64
	        ",\"unknowns\":%" PRIu64,
	        s->relay_in_dgrams, s->relay_in_bytes, s->relay_out_dgrams, s->relay_out_bytes,
	        s->relay_refused, s->lookups, s->intros, s->unknowns);
	if (st->srv->members_only) {
		fprintf(f, ",\"guest\":%s", n->guest ? "true" : "false");
		/* A certificate that ran out while registered: the engine refuses
		 * the node from then on (member_until), so the status says so. */
		bool expired = n->member && st->now_wall_s > n->member_until;

		fprintf(f, ",\"member\":%s,\"refused\":\"%s\"",
		        n->member && !expired ? "true" : "false",
		        n->member ? (expired ? member_verdict_name(MEMBER_EXPIRED) : "")
		        : n->refused == RDV_REFUSED_NO_CERT
		            ? "no_certificate"
		            : member_verdict_name((enum member_verdict)n->refused));
	}
	fputc('}', f);
}

struct walk {
	FILE *f;
	const struct yip_rdv_status *st;
	const uint8_t *only; /* a node's key, or NULL for all */
	size_t known, registered, written;
	bool write;
};

static void count_node(void *arg, const struct rdv_node *n)
{
	struct walk *w = arg;

	w->known++;
	w->registered += n->registered;
}

static void write_node(void *arg, const struct rdv_node *n)
{
	struct walk *w = arg;

	if (w->only != NULL && memcmp(n->key, w->only, YIP_KEY_LEN) != 0)
		return;
	if (w->written++ > 0)
		fputc(',', w->f);
	put_node(w->f, w->st, n);
}

static void put_front(FILE *f, const struct yip_rdv_front *t)
{
	fputs(",\"tls_front\":{", f);
	put_addr(f, "listen", &t->listen);
	if (t->decoy) {
		fputc(',', f);
		put_addr(f, "decoy", &t->decoy_addr);
	} else {
		fputs(",\"decoy\":\"built-in\"", f);
	}
	fprintf(f,
	        ",\"open\":%" PRIu64 ",\"tcp_accepted\":%" PRIu64 ",\"tcp_refused\":%" PRIu64
	        ",\"tls_failed\":%" PRIu64 ",\"tls_timeouts\":%" PRIu64 ",\"yip_streams\":%" PRIu64
	        ",\"decoy_streams\":%" PRIu64 ",\"decoy_failed\":%" PRIu64
	        ",\"site_requests\":%" PRIu64 ",\"frames_in\":%" PRIu64 ",\"frames_out\":%" PRIu64,
	        t->open, t->tcp_accepted, t->tcp_refused, t->tls_failed, t->tls_timeouts,
	        t->yip_streams, t->decoy_streams, t->decoy_failed, t->site_requests, t->frames_in,
	        t->frames_out);
	fputs(",\"decoy_reasons\":{", f);
	for (unsigned r = 0; r < YIP_RDV_DECOY_COUNT; r++)
		fprintf(f, "%s\"%s\":%" PRIu64, r ? "," : "", yip_rdv_decoy_name(r),
		        t->decoy_reasons[r]);
	fprintf(f,
	        "},\"stream_drops\":{\"broken\":%" PRIu64 ",\"full\":%" PRIu64 ",\"stale\":%" PRIu64
	        ",\"too_big\":%" PRIu64 "}}",
	        t->stream_broken, t->stream_full, t->stream_stale, t->stream_too_big);
}

static void put_reality(FILE *f, const struct yip_rdv_reality *t)
{
	fputs(",\"reality\":{", f);
	put_addr(f, "listen", &t->listen);
	fputc(',', f);
	put_addr(f, "target", &t->target);
	fprintf(f,
	        ",\"open\":%" PRIu64 ",\"pending\":%" PRIu64 ",\"accepted\":%" PRIu64
	        ",\"refused\":%" PRIu64 ",\"spliced\":%" PRIu64 ",\"tls_failed\":%" PRIu64
	        ",\"yip_streams\":%" PRIu64 ",\"frames_in\":%" PRIu64 ",\"frames_out\":%" PRIu64
	        ",\"bytes_to_target\":%" PRIu64 ",\"bytes_from_target\":%" PRIu64,
	        t->open, t->pending, t->accepted, t->refused, t->spliced, t->tls_failed,
	        t->yip_streams, t->frames_in, t->frames_out, t->bytes_to_target,
	        t->bytes_from_target);
	fputs(",\"outcomes\":{", f);
	for (unsigned o = 0; o < YIP_RDV_REALITY_OUTCOMES; o++)
		fprintf(f, "%s\"%s\":%" PRIu64, o ? "," : "", yip_rdv_reality_outcome_name(o),
		        t->outcome[o]);
	fprintf(f,
	        "},\"stream_drops\":{\"broken\":%" PRIu64 ",\"full\":%" PRIu64 ",\"stale\":%" PRIu64
	        ",\"too_big\":%" PRIu64 "}}",
	        t->stream_broken, t->stream_full, t->stream_stale, t->stream_too_big);
}

static void put_quic(FILE *f, const struct yip_rdv_quic *q)
{
	fputs(",\"quic\":{", f);
	put_addr(f, "listen", &q->listen);
	fprintf(f,
	        ",\"open\":%" PRIu64 ",\"handshaking\":%" PRIu64 ",\"accepted\":%" PRIu64
	        ",\"refused\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"timeouts\":%" PRIu64
	        ",\"idle\":%" PRIu64 ",\"yip_conns\":%" PRIu64 ",\"decoy_requests\":%" PRIu64
	        ",\"dgrams_in\":%" PRIu64 ",\"dgrams_out\":%" PRIu64 ",\"not_quic\":%" PRIu64,
	        q->open, q->handshaking, q->accepted, q->refused, q->failed, q->timeouts, q->idle,
	        q->yip_conns, q->decoy_requests, q->dgrams_in, q->dgrams_out, q->not_quic);
	fprintf(f,
	        ",\"dgram_drops\":{\"too_big\":%" PRIu64 ",\"stale\":%" PRIu64
	        ",\"refused\":%" PRIu64 "}}",
	        q->dgram_too_big, q->dgram_stale, q->dgram_refused);
}

static void put_server(FILE *f, const struct yip_rdv_status *st, const struct walk *w)
{
	const struct rdv_server *s = st->srv;
	const struct rdv_stats *c = &s->stats;
	uint16_t port = ntohs(st->listen.sa.sa_family == AF_INET ? st->listen.in4.sin_port
	                                                         : st->listen.in6.sin6_port);

	fputs("{\"server\":\"yip-rendezvous\",", f);
	put_key(f, "public_key", s->public_key);
	fputc(',', f);
	put_addr(f, "listen", &st->listen);
	fprintf(f, ",\"port\":%u,\"alt_port\":%u", port, st->alt_port);
	fprintf(f, ",\"relay\":%s,\"relay_rate\":%" PRIu64 ",\"relay_burst\":%" PRIu64,
	        s->cfg.relay ? "true" : "false", s->cfg.relay_rate, s->cfg.relay_burst);
	fprintf(f, ",\"max_nodes\":%zu,\"nodes_known\":%zu,\"nodes_registered\":%zu",
	        s->cfg.max_nodes, w->known, w->registered);
	fprintf(f,
	        ",\"counters\":{\"handshakes\":%" PRIu64 ",\"registrations\":%" PRIu64
	        ",\"lookups\":%" PRIu64 ",\"intros\":%" PRIu64 ",\"unknowns\":%" PRIu64
	        ",\"relayed_dgrams\":%" PRIu64 ",\"relayed_bytes\":%" PRIu64
	        ",\"challenges\":%" PRIu64 ",\"challenges_unpaid\":%" PRIu64 ",\"moves\":%" PRIu64
	        ",\"replay_overflows\":%" PRIu64 ",\"streams_gone\":%" PRIu64 "}",
	        c->handshakes, c->registrations, c->lookups, c->intros, c->unknowns,
	        c->relayed_dgrams, c->relayed_bytes, c->challenges, c->unpaid, c->moves,
	        c->seen_overflows, c->streams_gone);
	fprintf(f, ",\"replay_memory\":%zu,\"replay_memory_max\":%zu", s->n_seen, rdv_seen_max(s));
	if (st->front != NULL)
		put_front(f, st->front);
	if (st->reality != NULL)
		put_reality(f, st->reality);
	if (st->quic != NULL)
		put_quic(f, st->quic);
	fprintf(f, ",\"members_only\":%s", s->members_only ? "true" : "false");
	if (s->members_only) {
		fprintf(f, ",\"network\":\"%s\",\"admitted\":%" PRIu64 ",\"evicted\":%" PRIu64,
		        s->members.network, c->admitted, c->evicted);
		fprintf(f,
		        ",\"guests\":%zu,\"max_guests\":%zu,\"guests_evicted\":%" PRIu64
		        ",\"guests_expired\":%" PRIu64,
		        s->n_guests, rdv_max_guests(s), c->guests_evicted, c->guests_expired);
		if (s->members.revs != NULL)
			fprintf(f, ",\"revocations_serial\":%" PRIu64, s->members.revs->f.serial);
		fputs(",\"refused\":{", f);
		for (int v = 0; v < MEMBER_VERDICT_COUNT; v++)
			fprintf(f, "%s\"%s\":%" PRIu64, v ? "," : "",
			        v == 0 ? "no_certificate"
			               : member_verdict_name((enum member_verdict)v),
			        c->refused[v]);
		fputc('}', f);
	}
	fputs(",\"drops\":{", f);
	for (int d = 0; d < RDV_DROP_COUNT; d++)
		fprintf(f, "%s\"%s\":%" PRIu64, d ? "," : "", rdv_drop_name((enum rdv_drop)d),
		        s->drops[d]);
	fprintf(f,
	        "},\"io\":{\"rx_dgrams\":%" PRIu64 ",\"rx_truncated\":%" PRIu64
	        ",\"tx_dgrams\":%" PRIu64 ",\"tx_failed\":%" PRIu64 ",\"udp_gso\":%s"
	        ",\"udp_trains\":%" PRIu64 ",\"udp_train_dgrams\":%" PRIu64 "}",
	        st->rx_dgrams, st->rx_truncated, st->tx_dgrams, st->tx_failed,
	        st->udp_gso ? "true" : "false", st->udp_trains, st->udp_train_dgrams);
}

char *yip_rdv_ctl_reply(const struct yip_rdv_status *st, const char *line, size_t len,
                        size_t *out_len)
{
	struct yip_ctl_request req;
	struct walk w = {0};
	char err[128], *buf = NULL;
	size_t size = 0;
	FILE *f;

	if (yip_ctl_parse_request(line, len, &req, err, sizeof(err)) != 0)
		return yip_ctl_error_reply(err, out_len);
	w.st = st;
	w.only = req.has_peer ? req.peer : NULL;
	rdv_each(st->srv, count_node, &w);
	f = open_memstream(&buf, &size);
	if (f == NULL)
		return NULL;
	w.f = f;
	put_server(f, st, &w);
	if (req.cmd == YIP_CTL_SHOW) {
		fputs(",\"nodes\":[", f);
		rdv_each(st->srv, write_node, &w);
		fputc(']', f);
	}
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	if (req.has_peer && w.written == 0) {
		free(buf);
		return yip_ctl_error_reply("no such node", out_len);
	}
	*out_len = size;
	return buf;
}

/* ---- for people --------------------------------------------------------------------- */

/* A string field with every byte that is not printable ASCII replaced by '?'. */
static void put_str(FILE *out, const cJSON *o, const char *name, const char *none)
{
	put_str_or(out, str_field(o, name), none);
}

static const char *yes_no(const cJSON *o, const char *name)
{
	const cJSON *f = field(o, name);

	return cJSON_IsBool(f) ? (cJSON_IsTrue(f) ? "yes" : "no") : "unknown";
}

static void put_ago(FILE *out, uint64_t t, uint64_t now_s)
{
	char d[128];

	if (t == 0) {
		fputs("unknown", out);
		return;
	}
	yip_ctl_format_duration(d, sizeof(d), t < now_s ? now_s - t : 0);
	fprintf(out, "%s ago", d);
}

static void put_bytes(FILE *out, uint64_t n)
{
	char b[32];

	yip_ctl_format_bytes(b, sizeof(b), n);
	fputs(b, out);
}

/* "name 3, other 1" for the non-zero numbers of object o, or "none". */
static void put_counts(FILE *out, const cJSON *o)
{
	const cJSON *d;
	bool any = false;

	if (cJSON_IsObject(o)) {
		cJSON_ArrayForEach(d, o)
		{
			uint64_t n = cJSON_IsNumber(d) ? to_u64(d->valuedouble) : 0;

			if (n == 0)
				continue;
			fputs(any ? ", " : "", out);
			put_str_or(out, d->string, "?");
			fprintf(out, " %" PRIu64, n);
			any = true;
		}
	}
	fputs(any ? "" : "none", out);
}

static void show_front(FILE *out, const cJSON *t)
{
	if (!cJSON_IsObject(t))
		return;
	fputs("\n  TLS front: TCP ", out);
	put_str(out, t, "listen", "(unknown)");
	fputs(", decoy ", out);
	put_str(out, t, "decoy", "(unknown)");
	fprintf(out,
	        "; %" PRIu64 " open, %" PRIu64 " accepted, %" PRIu64 " refused (limits)"
	        "\n    TLS handshakes failed %" PRIu64 ", timed out %" PRIu64
	        "\n    yip streams %" PRIu64 " (frames in %" PRIu64 ", out %" PRIu64 "; dropped: ",
	        u64_field(t, "open"), u64_field(t, "tcp_accepted"), u64_field(t, "tcp_refused"),
	        u64_field(t, "tls_failed"), u64_field(t, "tls_timeouts"),
	        u64_field(t, "yip_streams"), u64_field(t, "frames_in"), u64_field(t, "frames_out"));
	put_counts(out, field(t, "stream_drops"));
	fprintf(out, ")\n    decoy streams %" PRIu64 " (", u64_field(t, "decoy_streams"));
	put_counts(out, field(t, "decoy_reasons"));
	fprintf(out, "), decoy unreachable %" PRIu64 ", built-in site requests %" PRIu64,
	        u64_field(t, "decoy_failed"), u64_field(t, "site_requests"));
}

static void show_reality(FILE *out, const cJSON *t)
{
	if (!cJSON_IsObject(t))
		return;
	fputs("\n  REALITY front: TCP ", out);
	put_str(out, t, "listen", "(unknown)");
	fputs(", target ", out);
	put_str(out, t, "target", "(unknown)");
	fprintf(out,
	        "; %" PRIu64 " open (%" PRIu64 " undecided), %" PRIu64 " accepted, %" PRIu64
	        " refused (limits)\n    spliced to the target %" PRIu64 " (%" PRIu64
	        " bytes in, %" PRIu64 " out); outcomes: ",
	        u64_field(t, "open"), u64_field(t, "pending"), u64_field(t, "accepted"),
	        u64_field(t, "refused"), u64_field(t, "spliced"), u64_field(t, "bytes_to_target"),
	        u64_field(t, "bytes_from_target"));
	put_counts(out, field(t, "outcomes"));
	fprintf(out,
	        "\n    yip streams %" PRIu64 ", handshakes failed %" PRIu64 " (frames in %" PRIu64
	        ", out %" PRIu64 "; dropped: ",
	        u64_field(t, "yip_streams"), u64_field(t, "tls_failed"), u64_field(t, "frames_in"),
	        u64_field(t, "frames_out"));
	put_counts(out, field(t, "stream_drops"));
	fputc(')', out);
}

static void show_quic(FILE *out, const cJSON *q)
{
	if (!cJSON_IsObject(q))
		return;
	fputs("\n  QUIC: UDP ", out);
	put_str(out, q, "listen", "(unknown)");
	fprintf(out,
	        "; %" PRIu64 " open (%" PRIu64 " in their handshake), %" PRIu64
	        " accepted, %" PRIu64 " refused (limits)"
	        "\n    handshakes failed %" PRIu64 ", timed out %" PRIu64 "; closed idle %" PRIu64
	        "; not QUIC %" PRIu64 "\n    yip connections %" PRIu64 " (datagrams in %" PRIu64
	        ", out %" PRIu64 "; dropped: ",
	        u64_field(q, "open"), u64_field(q, "handshaking"), u64_field(q, "accepted"),
	        u64_field(q, "refused"), u64_field(q, "failed"), u64_field(q, "timeouts"),
	        u64_field(q, "idle"), u64_field(q, "not_quic"), u64_field(q, "yip_conns"),
	        u64_field(q, "dgrams_in"), u64_field(q, "dgrams_out"));
	put_counts(out, field(q, "dgram_drops"));
	fprintf(out, "), decoy requests %" PRIu64, u64_field(q, "decoy_requests"));
}

static void show_server(FILE *out, const cJSON *r)
{
	const cJSON *c = field(r, "counters"), *drops = field(r, "drops"), *io = field(r, "io"), *d;
	uint64_t total = 0;

	fputs("rendezvous server\n  public key: ", out);
	put_str(out, r, "public_key", "(unknown)");
	fputs("\n  listening: ", out);
	put_str(out, r, "listen", "(unknown)");
	if (u64_field(r, "alt_port") != 0)
		fprintf(out, ", second port %" PRIu64, u64_field(r, "alt_port"));
	else
		fputs(", no second port", out);
	fprintf(out, "\n  relay: %s",
	        cJSON_IsBool(field(r, "relay")) ? (cJSON_IsTrue(field(r, "relay")) ? "on" : "off")
	                                        : "unknown");
	if (cJSON_IsTrue(field(r, "relay"))) {
		fputs(", ", out);
		put_bytes(out, u64_field(r, "relay_rate"));
		fputs("/s per node, burst ", out);
		put_bytes(out, u64_field(r, "relay_burst"));
	}
	fprintf(out, "\n  nodes: %" PRIu64 " registered, %" PRIu64 " known (at most %" PRIu64 ")",
	        u64_field(r, "nodes_registered"), u64_field(r, "nodes_known"),
	        u64_field(r, "max_nodes"));
	fprintf(out,
	        "\n  handshakes: %" PRIu64 ", registrations: %" PRIu64 ", lookups: %" PRIu64
	        ", introductions: %" PRIu64 ", unknown: %" PRIu64,
	        u64_field(c, "handshakes"), u64_field(c, "registrations"), u64_field(c, "lookups"),
	        u64_field(c, "intros"), u64_field(c, "unknowns"));
	if (cJSON_IsTrue(field(r, "members_only"))) {
		const cJSON *refused = field(r, "refused");
		uint64_t any = 0;

		fputs("\n  members only: network ", out);
		put_str(out, r, "network", "(unknown)");
		fprintf(out, "; admitted %" PRIu64 ", evicted %" PRIu64, u64_field(r, "admitted"),
		        u64_field(r, "evicted"));
		fprintf(out,
		        "; guests %" PRIu64 " (at most %" PRIu64 "; %" PRIu64 " made room, %" PRIu64
		        " timed out)",
		        u64_field(r, "guests"), u64_field(r, "max_guests"),
		        u64_field(r, "guests_evicted"), u64_field(r, "guests_expired"));
		if (cJSON_IsNumber(field(r, "revocations_serial")))
			fprintf(out, "; revocation list %" PRIu64,
			        u64_field(r, "revocations_serial"));
		fputs("; refused:", out);
		if (cJSON_IsObject(refused)) {
			cJSON_ArrayForEach(d, refused)
			{
				uint64_t n = cJSON_IsNumber(d) ? to_u64(d->valuedouble) : 0;

				if (n == 0 || d->string == NULL)
					continue;
				fprintf(out, "%s", any++ ? ", " : " ");
				put_str_or(out, d->string, "?");
				fprintf(out, " %" PRIu64, n);
			}
		}
		fputs(any ? "" : " none", out);
	}
	fprintf(out,
	        "\n  address changes: %" PRIu64 " confirmed, %" PRIu64 " challenges sent, %" PRIu64
	        " waiting for bytes",
	        u64_field(c, "moves"), u64_field(c, "challenges"),
	        u64_field(c, "challenges_unpaid"));
	fprintf(out,
	        "\n  replay memory: %" PRIu64 " forgotten nodes' Init timestamps (at most %" PRIu64
	        "), overflowed %" PRIu64 " times",
	        u64_field(r, "replay_memory"), u64_field(r, "replay_memory_max"),
	        u64_field(c, "replay_overflows"));
	show_front(out, field(r, "tls_front"));
	show_reality(out, field(r, "reality"));
	show_quic(out, field(r, "quic"));
	fprintf(out, "\n  relayed: %" PRIu64 " datagrams, ", u64_field(c, "relayed_dgrams"));
	put_bytes(out, u64_field(c, "relayed_bytes"));
	fprintf(out,
	        "\n  datagrams: %" PRIu64 " received, %" PRIu64 " sent, %" PRIu64
	        " send failures, %" PRIu64 " truncated",
	        u64_field(io, "rx_dgrams"), u64_field(io, "tx_dgrams"), u64_field(io, "tx_failed"),
	        u64_field(io, "rx_truncated"));
	fputs("\n  drops:", out);
	if (cJSON_IsObject(drops)) {
		cJSON_ArrayForEach(d, drops)
		{
			uint64_t n = cJSON_IsNumber(d) ? to_u64(d->valuedouble) : 0;

			if (n == 0)
				continue;
			fputs(total == 0 ? " " : ", ", out);
			for (const char *s = d->string ? d->string : "?"; *s; s++)
				fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s
				                                                            : '?',
				      out);
			fprintf(out, " %" PRIu64, n);
			total = n > UINT64_MAX - total ? UINT64_MAX : total + n;
		}
	}
	fputs(total == 0 ? " none\n" : "\n", out);
}

static void show_node(FILE *out, const cJSON *n, uint64_t now_s)
{
	const cJSON *cands = field(n, "candidates"), *a;
	bool any = false;

	fputs("\nnode: ", out);
	put_str(out, n, "public_key", "(unknown)");
	fputs("\n  address: ", out);
	put_str(out, n, "address", "(unknown)");
	if (str_field(n, "via") != NULL && strcmp(str_field(n, "via"), "tls") == 0)
		fputs(" (a stream of the TLS or REALITY front)", out);
	if (str_field(n, "via") != NULL && strcmp(str_field(n, "via"), "quic") == 0)
		fputs(" (a connection of the QUIC listener)", out);
	if (cJSON_IsFalse(field(n, "address_confirmed")))
		fputs(" (its Init's; not confirmed yet)", out);
	if (str_field(n, "moving_to") != NULL) {
		fputs(" (moving to ", out);
		put_str(out, n, "moving_to", "?");
		fputs(": challenged)", out);
	}
	fputs("\n  local addresses: ", out);
	if (cJSON_IsArray(cands)) {
		cJSON_ArrayForEach(a, cands)
		{
			if (!cJSON_IsString(a) || a->valuestring == NULL)
				continue;
			fputs(any ? ", " : "", out);
			for (const char *s = a->valuestring; *s; s++)
				fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s
				                                                            : '?',
				      out);
			any = true;
		}
	}
	fputs(any ? "" : "(none)", out);
	if (cJSON_IsBool(field(n, "member"))) {
		fprintf(out, "\n  member: %s", yes_no(n, "member"));
		if (!cJSON_IsTrue(field(n, "member"))) {
			fputs(" (", out);
			put_str(out, n, "refused", "?");
			fputc(')', out);
		}
		if (cJSON_IsTrue(field(n, "guest")))
			fputs(", a guest (forgotten 10 s after its handshake unless admitted)",
			      out);
	}
	fprintf(out, "\n  registered: %s, since ", yes_no(n, "registered"));
	put_ago(out, u64_field(n, "since"), now_s);
	fputs("; last seen ", out);
	put_ago(out, u64_field(n, "last_seen"), now_s);
	fputs("\n  nat: ", out);
	put_str(out, n, "nat", "(unknown)");
	fprintf(out, "\n  relay id: %" PRIu64 " (asks for the relay: %s)", u64_field(n, "relay_id"),
	        yes_no(n, "relay"));
	fprintf(out, "\n  relayed: sent %" PRIu64 " datagrams (", u64_field(n, "relay_in_dgrams"));
	put_bytes(out, u64_field(n, "relay_in_bytes"));
	fprintf(out, "), received %" PRIu64 " datagrams (", u64_field(n, "relay_out_dgrams"));
	put_bytes(out, u64_field(n, "relay_out_bytes"));
	fprintf(out, "), refused %" PRIu64, u64_field(n, "relay_refused"));
	fprintf(out, "\n  lookups: %" PRIu64 ", introductions: %" PRIu64 ", unknown: %" PRIu64 "\n",
	        u64_field(n, "lookups"), u64_field(n, "intros"), u64_field(n, "unknowns"));
}

int yip_rdv_ctl_render(FILE *out, const char *json, size_t len, uint64_t now_s, size_t max_nodes,
                       char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	const cJSON *e, *nodes, *n;
	size_t shown = 0, total = 0;

	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "the reply is not a JSON object");
		cJSON_Delete(root);
		return -1;
	}
	e = field(root, "error");
	if (e != NULL) {
		snprintf(err, errlen, "%s",
		         cJSON_IsString(e) && e->valuestring && e->valuestring[0]
		             ? e->valuestring
		             : "the daemon reported an error");
		for (char *s = err; *s; s++)
			if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
				*s = '?';
		cJSON_Delete(root);
		return -1;
	}
	show_server(out, root);
	nodes = field(root, "nodes");
	if (cJSON_IsArray(nodes)) {
		cJSON_ArrayForEach(n, nodes)
		{
			total++;
			if (shown < max_nodes) {
				show_node(out, n, now_s);
				shown++;
			}
		}
	}
	if (total > shown)
		fprintf(out, "\n(%zu more nodes: yip-rendezvous status --json lists every one)\n",
		        total - shown);
	cJSON_Delete(root);
	return 0;
}
