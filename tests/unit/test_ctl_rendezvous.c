/*
 * yip-rendezvous's status (src/ctl/rendezvous.c) from a real engine: three
 * nodes (tests/lib/rdvclient.h) complete Noise handshakes, register, one
 * looks another up and is introduced, a relayed datagram goes through and
 * a forged one is refused; then the JSON replies to show, show <node> and
 * stats are checked field by field, and their rendering for people.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/rendezvous.h"
#include "rdvclient.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"
#include "util/hex.h"

#define WALL0 1700000000ULL /* Unix seconds at monotonic time 0 */

struct out {
	unsigned sock;
	union yip_sockaddr to;
	size_t len;
	uint8_t buf[2048];
};

static struct rdv_server S;
static struct out outbox[16];
static unsigned n_out;
static struct rdvc nodes[3];
static uint64_t now = 10 * YIP_NS_PER_S;

static uint8_t *io_buf(void *ctx)
{
	(void)ctx;
	assert_true(n_out < 16);
	return outbox[n_out].buf;
}

static void io_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	assert_true(len <= sizeof(outbox[0].buf));
	outbox[n_out].sock = sock;
	outbox[n_out].to = *to;
	outbox[n_out].len = len;
	n_out++;
}

/* The datagram the server sent last to c, opened (asserts there is exactly one). */
static void expect(struct rdvc *c, uint8_t kind, struct wire_ctrl *m)
{
	assert_int_equal(n_out, 1);
	assert_true(yip_sockaddr_eq(&outbox[0].to, &c->addr));
	assert_true(rdvc_open(c, outbox[0].buf, outbox[0].len, m));
	assert_int_equal(m->kind, kind);
	n_out = 0;
}

static void to_server(struct rdvc *c, const struct wire_ctrl *m)
{
	uint8_t d[WIRE_DATA_MIN + WIRE_CTRL_MAX];
	size_t len = rdvc_seal_ctrl(c, m, d);

	assert_true(len > 0);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &c->addr, d, len);
}

static void join(struct rdvc *c, const char *ip)
{
	uint8_t init[WIRE_INIT_LEN];
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER,
	                        .flags = WIRE_CTRL_RELAY,
	                        .nat = WIRE_NAT_EIM,
	                        .n_cands = 1};
	struct wire_ctrl m;

	rdvc_init(c, NULL, ip, 51820);
	reg.cands[0] = c->addr;
	reg.cands[0].in4.sin_addr.s_addr ^= 0x0a0000ff; /* some local address */
	assert_int_equal(rdvc_init_msg(c, S.public_key, (WALL0 + 5) * YIP_NS_PER_S,
	                               YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305), init),
	                 WIRE_INIT_LEN);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &c->addr, init, sizeof(init));
	assert_int_equal(n_out, 1);
	assert_true(rdvc_resp(c, outbox[0].buf, outbox[0].len));
	n_out = 0;
	to_server(c, &reg);
	expect(c, WIRE_CTRL_REGISTERED, &m);
}

static int setup(void **state)
{
	struct rdv_io io = {NULL, io_buf, io_send};
	struct rdv_config cfg;
	struct wire_ctrl m, q = {.kind = WIRE_CTRL_LOOKUP, .id = 7};
	uint8_t d[WIRE_RELAY_HDR + 100] = {0};
	char err[128];

	(void)state;
	yip_crypto_init();
	rdv_config_default(&cfg);
	yip_key_generate(cfg.private_key);
	cfg.alt_port = 7001;
	assert_int_equal(rdv_init(&S, &cfg, &io, err, sizeof(err)), 0);
	join(&nodes[0], "192.0.2.1");
	now += 3 * YIP_NS_PER_S;
	join(&nodes[1], "192.0.2.2");
	join(&nodes[2], "192.0.2.3");
	/* 0 asks for 1, 1 accepts: both are introduced */
	memcpy(q.key, nodes[1].pub, YIP_KEY_LEN);
	to_server(&nodes[0], &q);
	expect(&nodes[1], WIRE_CTRL_ASK, &m);
	q = (struct wire_ctrl){.kind = WIRE_CTRL_ANSWER, .id = m.id, .flags = WIRE_CTRL_ACCEPT};
	memcpy(q.key, nodes[0].pub, YIP_KEY_LEN);
	to_server(&nodes[1], &q);
	assert_int_equal(n_out, 2); /* an INTRO each */
	n_out = 0;
	/* one relayed datagram 0 -> 1 (100 bytes carried), one forged from 2's address */
	wire_relay_put(d, WIRE_RELAY_TO_SERVER, nodes[0].token, nodes[1].relay_id);
	rdv_rx(&S, now, RDV_SOCK_MAIN, &nodes[0].addr, d, sizeof(d));
	assert_int_equal(n_out, 1);
	n_out = 0;
	rdv_rx(&S, now, RDV_SOCK_MAIN, &nodes[2].addr, d, sizeof(d));
	assert_int_equal(n_out, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rdv_free(&S);
	return 0;
}

/* The TLS front's counters, when a test sets front_on. */
static bool front_on;
static struct yip_rdv_front front = {
    .listen = {.in4 = {.sin_family = AF_INET}},
    .tcp_accepted = 11,
    .tls_failed = 2,
    .yip_streams = 1,
    .decoy_streams = 8,
    .decoy_reasons = {4, 1, 3},
    .stream_full = 5,
};

/* The QUIC listener's, when a test sets quic_on. */
static bool quic_on;
static struct yip_rdv_quic quic = {
    .listen = {.in4 = {.sin_family = AF_INET}},
    .open = 3,
    .handshaking = 1,
    .accepted = 9,
    .refused = 4,
    .yip_conns = 2,
    .dgrams_in = 70,
    .dgram_too_big = 6,
};

static char *reply(const char *req, size_t *len)
{
	struct yip_rdv_status st = {
	    .srv = &S,
	    .front = front_on ? &front : NULL,
	    .quic = quic_on ? &quic : NULL,
	    .listen = {.in4 = {.sin_family = AF_INET, .sin_port = htons(7000)}},
	    .alt_port = 7001,
	    .now = now + 2 * YIP_NS_PER_S,
	    .now_wall_s = WALL0 + (now + 2 * YIP_NS_PER_S) / YIP_NS_PER_S,
	    .rx_dgrams = 12,
	    .tx_dgrams = 10,
	    .tx_failed = 1,
	    .udp_gso = true,
	};
	char *r = yip_rdv_ctl_reply(&st, req, strlen(req), len);

	assert_non_null(r);
	assert_int_equal(strlen(r), *len);
	assert_true(*len > 0 && r[*len - 1] == '\n');
	return r;
}

static uint64_t num(const cJSON *o, const char *path)
{
	char buf[128], *save = NULL;
	const cJSON *v = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k != NULL; k = strtok_r(NULL, ".", &save))
		v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(k))
		                     : cJSON_GetObjectItemCaseSensitive(v, k);
	if (!cJSON_IsNumber(v))
		fail_msg("%s is not a number", path);
	return (uint64_t)v->valuedouble;
}

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsString(v))
		fail_msg("%s is not a string", name);
	return v->valuestring;
}

/* The node object for c in a reply's nodes array. */
static const cJSON *node_of(const cJSON *root, const struct rdvc *c)
{
	char hex[2 * YIP_KEY_LEN + 1];
	const cJSON *n;

	yip_hex_encode(hex, c->pub, YIP_KEY_LEN);
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(root, "nodes"))
	{
		if (strcmp(str(n, "public_key"), hex) == 0)
			return n;
	}
	fail_msg("no node %s", hex);
	return NULL;
}

/* The server's record of c. */
static struct rdv_node *record_of(const struct rdvc *c)
{
	for (struct rdv_node *n = S.lru_head; n != NULL; n = n->lru_next)
		if (memcmp(n->key, c->pub, YIP_KEY_LEN) == 0)
			return n;
	fail_msg("no record for a node");
	return NULL;
}

/*
 * A members-only server's nodes: a member, one whose certificate ran out
 * while registered (the engine refuses it from then on, so the status must
 * not call it a member), and one that never showed a certificate.
 */
static void members_status(void **state)
{
	uint64_t wall = WALL0 + (now + 2 * YIP_NS_PER_S) / YIP_NS_PER_S; /* reply()'s clock */
	struct rdv_node *n0 = record_of(&nodes[0]), *n1 = record_of(&nodes[1]);
	struct rdv_node *n2 = record_of(&nodes[2]);
	const cJSON *a, *b, *c;
	size_t len;
	char *r;
	cJSON *root;

	(void)state;
	S.members_only = true;
	snprintf(S.members.network, sizeof(S.members.network), "lab");
	n0->member = true;
	n0->member_until = wall + 100;
	n1->member = true;
	n1->member_until = wall - 1;
	n2->member = false;
	n2->refused = RDV_REFUSED_NO_CERT;
	n2->guest = true; /* as the engine would have it (the lists are not the point here) */
	S.n_guests = 1;
	r = reply("show", &len);
	root = cJSON_Parse(r);
	assert_non_null(root);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "members_only")));
	assert_string_equal(str(root, "network"), "lab");
	assert_null(cJSON_GetObjectItemCaseSensitive(root, "revocations_serial")); /* no list */
	a = node_of(root, &nodes[0]);
	b = node_of(root, &nodes[1]);
	c = node_of(root, &nodes[2]);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "member")));
	assert_string_equal(str(a, "refused"), "");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(b, "member")));
	assert_string_equal(str(b, "refused"), "expired");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "member")));
	assert_string_equal(str(c, "refused"), "no_certificate");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "guest")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(a, "guest")));
	assert_int_equal(num(root, "guests"), 1);
	assert_int_equal(num(root, "max_guests"), 25000);
	cJSON_Delete(root);
	free(r);
	n2->guest = false; /* back as it is in the lists, for rdv_free */
	S.n_guests = 0;
}

static void show(void **state)
{
	char hex[2 * YIP_KEY_LEN + 1];
	const cJSON *a, *b, *drops;
	size_t len;
	char *r = reply("show", &len);
	cJSON *root = cJSON_Parse(r);

	(void)state;
	assert_non_null(root);
	yip_hex_encode(hex, S.public_key, YIP_KEY_LEN);
	assert_string_equal(str(root, "public_key"), hex);
	assert_string_equal(str(root, "listen"), "0.0.0.0:7000");
	assert_int_equal(num(root, "port"), 7000);
	assert_int_equal(num(root, "alt_port"), 7001);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "relay")));
	assert_int_equal(num(root, "relay_rate"), 128 << 20);
	assert_int_equal(num(root, "nodes_known"), 3);
	assert_int_equal(num(root, "nodes_registered"), 3);
	assert_int_equal(num(root, "counters.handshakes"), 3);
	assert_int_equal(num(root, "counters.registrations"), 3);
	assert_int_equal(num(root, "counters.lookups"), 1);
	assert_int_equal(num(root, "counters.intros"), 1);
	assert_int_equal(num(root, "counters.relayed_dgrams"), 1);
	assert_int_equal(num(root, "counters.relayed_bytes"), 100);
	assert_int_equal(num(root, "counters.moves"), 0);
	assert_int_equal(num(root, "counters.challenges"), 0);
	assert_int_equal(num(root, "replay_memory"), 0);
	assert_true(num(root, "replay_memory_max") > 0);
	assert_int_equal(num(root, "io.rx_dgrams"), 12);
	assert_int_equal(num(root, "io.tx_failed"), 1);
	/* every drop reason, by name, in the engine's order */
	drops = cJSON_GetObjectItemCaseSensitive(root, "drops");
	assert_int_equal(cJSON_GetArraySize(drops), RDV_DROP_COUNT);
	for (int d = 0; d < RDV_DROP_COUNT; d++)
		assert_string_equal(cJSON_GetArrayItem(drops, d)->string,
		                    rdv_drop_name((enum rdv_drop)d));
	assert_int_equal(num(drops, "relay_source"), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "nodes")), 3);

	a = node_of(root, &nodes[0]);
	b = node_of(root, &nodes[1]);
	assert_string_equal(str(a, "address"), "192.0.2.1:51820");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "address_confirmed")));
	assert_null(cJSON_GetObjectItemCaseSensitive(a, "moving_to"));
	assert_string_equal(str(a, "nat"), "endpoint-independent");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "registered")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "relay")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "candidates")), 1);
	/* a joined 3 s before the others and was last heard 2 s before the reply */
	assert_int_equal(num(a, "since"), WALL0 + 10);
	assert_int_equal(num(b, "since"), WALL0 + 13);
	assert_int_equal(num(a, "last_seen"), WALL0 + 13);
	assert_int_equal(num(a, "relay_id"), nodes[0].relay_id);
	assert_int_equal(num(a, "relay_in_dgrams"), 1);
	assert_int_equal(num(a, "relay_in_bytes"), 100);
	assert_int_equal(num(a, "relay_refused"), 1); /* its token, from 2's address */
	assert_int_equal(num(b, "relay_out_dgrams"), 1);
	assert_int_equal(num(b, "relay_out_bytes"), 100);
	assert_int_equal(num(a, "lookups"), 1);
	assert_int_equal(num(a, "intros"), 1);
	assert_int_equal(num(b, "intros"), 1);
	cJSON_Delete(root);
	free(r);
}

static void one_node_and_stats(void **state)
{
	char req[128], hex[2 * YIP_KEY_LEN + 1];
	size_t len;
	char *r;
	cJSON *root;

	(void)state;
	yip_hex_encode(hex, nodes[2].pub, YIP_KEY_LEN);
	snprintf(req, sizeof(req), "show %s", hex);
	r = reply(req, &len);
	root = cJSON_Parse(r);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "nodes")), 1);
	assert_string_equal(
	    str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "nodes"), 0),
	        "public_key"),
	    hex);
	assert_int_equal(num(root, "nodes_known"), 3);
	cJSON_Delete(root);
	free(r);

	r = reply("stats", &len);
	root = cJSON_Parse(r);
	assert_null(cJSON_GetObjectItemCaseSensitive(root, "nodes"));
	assert_int_equal(num(root, "counters.registrations"), 3);
	cJSON_Delete(root);
	free(r);

	memset(hex, 'e', 2 * YIP_KEY_LEN);
	snprintf(req, sizeof(req), "show %s", hex);
	r = reply(req, &len);
	assert_string_equal(r, "{\"error\":\"no such node\"}\n");
	free(r);
	r = reply("dump", &len);
	assert_non_null(strstr(r, "\"error\":\"unknown request 'dump'"));
	free(r);
}

static void render(void **state)
{
	char *r, *text = NULL, err[256];
	size_t len, size = 0;
	FILE *f;

	(void)state;
	r = reply("show", &len);
	f = open_memstream(&text, &size);
	assert_int_equal(yip_rdv_ctl_render(f, r, len, WALL0 + 20, 2, err, sizeof(err)), 0);
	fclose(f);
	assert_non_null(strstr(text, "rendezvous server\n  public key: "));
	assert_non_null(strstr(text, "  listening: 0.0.0.0:7000, second port 7001\n"));
	assert_non_null(strstr(text, "  relay: on, 128.00 MiB/s per node, burst 8.00 MiB\n"));
	assert_non_null(strstr(text, "  nodes: 3 registered, 3 known (at most 100000)\n"));
	assert_non_null(strstr(text, "  relayed: 1 datagrams, 100 B\n"));
	assert_non_null(strstr(text, "  drops: relay_source 1\n"));
	assert_non_null(strstr(
	    text, "  address changes: 0 confirmed, 0 challenges sent, 0 waiting for bytes\n"));
	assert_non_null(
	    strstr(text, "  replay memory: 0 forgotten nodes' Init timestamps (at most "));
	assert_non_null(strstr(text, "  address: 192.0.2.1:51820\n"));
	assert_non_null(strstr(text, "  registered: yes, since 10 seconds ago; last seen "));
	assert_non_null(strstr(text, "  nat: endpoint-independent\n"));
	assert_non_null(
	    strstr(text, "(1 more nodes: yip-rendezvous status --json lists every one)"));
	free(text);
	free(r);

	/* an error reply, and things that are not replies */
	assert_int_equal(
	    yip_rdv_ctl_render(stdout, "{\"error\":\"busy\x01\"}", 17, 0, 9, err, sizeof(err)), -1);
	assert_string_equal(err, "busy?");
	assert_int_equal(yip_rdv_ctl_render(stdout, "[1]", 3, 0, 9, err, sizeof(err)), -1);
	assert_string_equal(err, "the reply is not a JSON object");
	text = NULL;
	f = open_memstream(&text, &size);
	assert_int_equal(yip_rdv_ctl_render(f, "{\"nodes\":[{},1]}", 16, 0, 9, err, sizeof(err)),
	                 0);
	fclose(f);
	assert_non_null(strstr(text, "public key: (unknown)"));
	free(text);
}

/* The TLS front's counters, in the reply and for people. */
static void front_status(void **state)
{
	char *r, *text = NULL, err[256];
	size_t len, size = 0;
	cJSON *j;
	FILE *f;

	(void)state;
	front.listen.in4.sin_port = htons(443);
	r = reply("stats", &len);
	assert_null(strstr(r, "tls_front"));
	free(r);
	front_on = true;
	r = reply("stats", &len);
	front_on = false;
	j = cJSON_Parse(r);
	assert_non_null(j);
	assert_int_equal(num(j, "tls_front.tcp_accepted"), 11);
	assert_int_equal(num(j, "tls_front.decoy_reasons.idle"), 3);
	assert_int_equal(num(j, "tls_front.stream_drops.full"), 5);
	assert_int_equal(num(j, "counters.streams_gone"), 0);
	cJSON_Delete(j);
	f = open_memstream(&text, &size);
	assert_int_equal(yip_rdv_ctl_render(f, r, len, WALL0 + 20, 2, err, sizeof(err)), 0);
	fclose(f);
	assert_non_null(
	    strstr(text, "  TLS front: TCP 0.0.0.0:443, decoy built-in; 0 open, 11 accepted"));
	assert_non_null(strstr(text, "    TLS handshakes failed 2, timed out 0\n"));
	assert_non_null(strstr(text, "dropped: full 5)"));
	assert_non_null(strstr(text, "decoy streams 8 (not_frame 4, not_authenticated 1, idle 3)"));
	free(text);
	free(r);
}

/* The QUIC listener's counters, in the reply and for people. */
static void quic_status(void **state)
{
	char *r, *text = NULL, err[256];
	size_t len, size = 0;
	cJSON *j;
	FILE *f;

	(void)state;
	quic.listen.in4.sin_port = htons(443);
	r = reply("stats", &len);
	assert_null(strstr(r, "\"quic\""));
	free(r);
	quic_on = true;
	r = reply("stats", &len);
	quic_on = false;
	j = cJSON_Parse(r);
	assert_non_null(j);
	assert_int_equal(num(j, "quic.accepted"), 9);
	assert_int_equal(num(j, "quic.refused"), 4);
	assert_int_equal(num(j, "quic.dgrams_in"), 70);
	assert_int_equal(num(j, "quic.dgram_drops.too_big"), 6);
	cJSON_Delete(j);
	f = open_memstream(&text, &size);
	assert_int_equal(yip_rdv_ctl_render(f, r, len, WALL0 + 20, 2, err, sizeof(err)), 0);
	fclose(f);
	assert_non_null(strstr(text, "  QUIC: UDP 0.0.0.0:443; 3 open (1 in their handshake), 9 "
	                             "accepted, 4 refused (limits)\n"));
	assert_non_null(strstr(text, "    yip connections 2 (datagrams in 70, out 0; dropped: "
	                             "too_big 6), decoy requests 0"));
	free(text);
	free(r);
}

/* A node on a QUIC connection says so; one on a stream says TLS. */
static void quic_via(void **state)
{
	union yip_sockaddr a;

	(void)state;
	rdv_stream_addr(&a, RDV_QUIC_ID_BIT | 5);
	assert_true(rdv_is_stream_addr(&a));
	assert_true(rdv_is_quic_addr(&a));
	assert_int_equal(rdv_stream_id(&a), RDV_QUIC_ID_BIT | 5);
	rdv_stream_addr(&a, 5);
	assert_false(rdv_is_quic_addr(&a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(show),           cmocka_unit_test(one_node_and_stats),
	    cmocka_unit_test(render),         cmocka_unit_test(front_status),
	    cmocka_unit_test(quic_status),    cmocka_unit_test(quic_via),
	    cmocka_unit_test(members_status), /* last: makes the server members-only */
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
