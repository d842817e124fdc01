/*
 * The link seam (link/link.h) with a link kind of the test's own: a pipe,
 * a reliable and ordered byte stream in memory between two engines, each
 * datagram a length-prefixed record in it, as a TLS stream will carry
 * them. Each node also has a main UDP link, which nothing should use: the
 * peers know of each other only through the pipe. A full session runs over
 * it (handshake, data both ways, a rekey); over a reliable pipe no repair
 * symbol, NACK or ARQ copy appears, and the same pipe marked unreliable
 * shows that the traffic would have had them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto.h"
#include "link/link.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

#define PIPE_LINK  3          /* the pipe's id in both nodes' tables */
#define N_LINKS    4          /* ids 0 (main) .. PIPE_LINK */
#define PIPE_BYTES (1u << 22) /* bytes in flight one way, at most */

/* Rekeys every 2 s; keys live 6 s (set in pair_up). */
static struct yip_timing timing;

/* One direction of the pipe: records of a 4-byte length and the datagram. */
struct stream {
	uint8_t *bytes;
	size_t head, tail; /* read at head, written at tail */
};

struct node {
	struct yip_device *dev; /* yip_device_size() bytes: opaque here */
	uint8_t key[YIP_KEY_LEN];
	union yip_sockaddr addr; /* what the other side sees as this node's address */
	struct yip_links links;
	struct yip_link slot[N_LINKS];
	uint8_t *build;     /* YIP_MAX_DGRAM: where the engine builds a datagram */
	struct stream *out; /* the pipe towards the other node */
	uint64_t sent[256]; /* datagrams on the pipe, by wire type */
	uint64_t main_sent; /* datagrams on the main link */
	uint64_t wall;
	/* What reached the device, checked against what the other side sent. */
	uint64_t rx_packets, rx_bytes, rx_bad;
	uint32_t rx_next; /* sequence number the next packet must carry */
};

static struct node N[2];
static struct stream S[2]; /* S[i]: from node i */

/* ---- the pipe link ---- */

static uint8_t *pipe_buf(void *ctx, uint32_t link)
{
	struct node *n = ctx;

	assert_int_equal(link, PIPE_LINK);
	return n->build;
}

static bool pipe_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                      uint32_t block)
{
	struct node *n = ctx;
	struct stream *s = n->out;
	uint32_t l = (uint32_t)len;

	(void)to; /* a stream has one other end */
	(void)block;
	assert_int_equal(link, PIPE_LINK);
	assert_true(s->tail + 4 + len <= PIPE_BYTES);
	memcpy(s->bytes + s->tail, &l, 4);
	memcpy(s->bytes + s->tail + 4, n->build, len);
	s->tail += 4 + len;
	n->sent[n->build[0]]++;
	return true;
}

static const struct yip_link_ops pipe_ops = {
    .kind = YIP_LINK_MEMORY,
    .buf = pipe_buf,
    .send = pipe_send,
};

/* The main UDP link: present, as it always is, but nobody's path. */
static uint8_t *main_buf(void *ctx, uint32_t link)
{
	struct node *n = ctx;

	(void)link;
	return n->build;
}

static bool main_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                      uint32_t block)
{
	struct node *n = ctx;

	(void)link, (void)to, (void)len, (void)block;
	n->main_sent++;
	return true;
}

static const struct yip_link_ops main_ops = {
    .kind = YIP_LINK_UDP,
    .buf = main_buf,
    .send = main_send,
};

/* ---- the rest of struct yip_io ---- */

/* Packets carry a sequence number after a 28-byte IPv4/UDP header and
 * then bytes made from it: tun_write checks both. */
#define HDR 28

static uint8_t fill(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 7 + i);
}

static void io_tun_write(void *ctx, const uint8_t *pkt, size_t len)
{
	struct node *n = ctx;
	uint32_t seq;
	bool ok = len >= HDR + 4;

	if (ok) {
		memcpy(&seq, pkt + HDR, 4);
		ok = seq == n->rx_next;
		for (size_t i = HDR + 4; ok && i < len; i++)
			ok = pkt[i] == fill(seq, i);
	}
	n->rx_next++;
	n->rx_packets++;
	n->rx_bytes += len;
	n->rx_bad += !ok;
}

static uint64_t io_wall(void *ctx)
{
	struct node *n = ctx;

	return n->wall += 20000000;
}

static const char *const inner[2] = {"10.0.0.1", "10.0.0.2"};

/* Node i, knowing the other's key and prefix but no endpoint; pipe_flags
 * are what its pipe link says of itself. */
static void node_init(int i, uint32_t pipe_flags)
{
	struct node *n = &N[i];
	struct yip_cidr cidr = {.family = AF_INET, .plen = 32};
	struct yip_peer_config pc = {.allowed_ips = &cidr, .n_allowed_ips = 1};
	struct yip_config cfg = {.peers = &pc, .n_peers = 1};
	struct yip_io io = {
	    .ctx = n, .links = &n->links, .tun_write = io_tun_write, .wall_ns = io_wall};
	char err[256];

	memcpy(cfg.private_key, n->key, YIP_KEY_LEN);
	yip_key_public(cfg.public_key, n->key);
	yip_key_public(pc.public_key, N[1 - i].key);
	inet_pton(AF_INET, inner[1 - i], cidr.addr);
	n->wall = 1700000000ULL * YIP_NS_PER_S;
	n->links = (struct yip_links){n->slot, N_LINKS};
	assert_int_equal(
	    yip_link_set(&n->links, YIP_LINK_MAIN, &main_ops, n, YIP_MAX_DGRAM, YIP_LINK_BATCH), 0);
	assert_int_equal(
	    yip_link_set(&n->links, PIPE_LINK, &pipe_ops, n, YIP_MAX_DGRAM, pipe_flags), 0);
	n->out = &S[i];
	n->dev = calloc(1, yip_device_size());
	assert_non_null(n->dev);
	if (yip_device_init(n->dev, &cfg, &io, &timing, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

static void pair_up(uint32_t pipe_flags)
{
	char err[128];

	memset(N, 0, sizeof(N));
	assert_int_equal(yip_crypto_init(), 0);
	yip_timing_default(&timing);
	yip_timing_rekey(&timing, 2 * YIP_NS_PER_S);
	for (int i = 0; i < 2; i++) {
		S[i] = (struct stream){.bytes = malloc(PIPE_BYTES)};
		N[i].build = malloc(YIP_MAX_DGRAM);
		assert_non_null(S[i].bytes);
		assert_non_null(N[i].build);
		yip_key_generate(N[i].key);
		assert_int_equal(yip_endpoint_parse(i == 0 ? "192.0.2.1:443" : "192.0.2.2:443", 0,
		                                    false, &N[i].addr, NULL, err, sizeof(err)),
		                 0);
	}
	for (int i = 0; i < 2; i++)
		node_init(i, pipe_flags);
}

static int setup_reliable(void **state)
{
	(void)state;
	pair_up(YIP_LINK_RELIABLE);
	return 0;
}

static int setup_unreliable(void **state)
{
	(void)state;
	pair_up(0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		yip_device_free(N[i].dev);
		free(N[i].dev);
		N[i].dev = NULL;
		free(N[i].build);
		free(S[i].bytes);
	}
	return 0;
}

/* Hands every record in flight to the node at the far end, until both ways are empty. */
static void drain(uint64_t now)
{
	bool any = true;

	while (any) {
		any = false;
		for (int i = 0; i < 2; i++) {
			struct stream *s = &S[i];
			uint8_t d[YIP_MAX_DGRAM];

			while (s->head < s->tail) {
				uint32_t l;

				memcpy(&l, s->bytes + s->head, 4);
				assert_true(l <= sizeof(d));
				memcpy(d, s->bytes + s->head + 4, l);
				s->head += 4 + l;
				yip_device_rx_link(N[1 - i].dev, now, PIPE_LINK, &N[i].addr, d, l);
				any = true;
			}
			s->head = s->tail = 0;
		}
	}
}

static uint32_t tx_seq[2];
static uint64_t tx_bytes[2];

/* Node i sends an IPv4/UDP packet of len bytes to the other: the next of
 * its sequence. Small ones are marked EF (interactive: FEC with a floor of
 * redundancy on any link that may lose them), large ones are bulk. */
static void send_packet(int i, uint64_t now, size_t len)
{
	uint8_t pkt[1500];
	uint32_t seq = tx_seq[i]++;

	assert_true(len >= HDR + 4 && len <= sizeof(pkt));
	memset(pkt, 0, HDR);
	pkt[0] = 0x45;
	pkt[1] = len < 200 ? 46 << 2 : 0;
	pkt[2] = (uint8_t)(len >> 8);
	pkt[3] = (uint8_t)len;
	pkt[8] = 64;
	pkt[9] = 17;
	inet_pton(AF_INET, inner[i], pkt + 12);
	inet_pton(AF_INET, inner[1 - i], pkt + 16);
	pkt[20] = 0x30, pkt[21] = len < 200 ? 0x38 : 0x39; /* ports 12344/5 -> 12345 */
	pkt[22] = 0x30, pkt[23] = 0x39;
	pkt[24] = (uint8_t)((len - 20) >> 8);
	pkt[25] = (uint8_t)(len - 20);
	memcpy(pkt + HDR, &seq, 4);
	for (size_t k = HDR + 4; k < len; k++)
		pkt[k] = fill(seq, k);
	yip_device_tx(N[i].dev, now, pkt, len);
	tx_bytes[i] += len;
}

/* A second of traffic both ways from `now`: small packets and bulk ones,
 * every 10 ms, timers run and the pipe drained as they go. */
static uint64_t traffic(uint64_t now)
{
	for (int t = 0; t < 100; t++, now += 10 * YIP_NS_PER_MS) {
		for (int i = 0; i < 2; i++) {
			send_packet(i, now, 64);
			for (int k = 0; k < 8; k++)
				send_packet(i, now, 1400);
		}
		drain(now);
		yip_device_timers(N[0].dev, now);
		yip_device_timers(N[1].dev, now);
		drain(now);
	}
	return now;
}

/* What node i's engine says of its one peer. */
static struct yip_peer_info peer_of(int i, uint64_t now)
{
	struct yip_peer_info info;

	assert_true(yip_device_peer_info(N[i].dev, 0, now, &info));
	return info;
}

/* A knows B's key and reaches it over the pipe; B learns A's way from A's
 * Init, as a server learns a client's from an accepted connection. The
 * first packet makes the handshake. */
static uint64_t open_session(uint64_t now)
{
	uint8_t b_pub[YIP_KEY_LEN];

	tx_seq[0] = tx_seq[1] = 0;
	tx_bytes[0] = tx_bytes[1] = 0;
	yip_key_public(b_pub, N[1].key);
	assert_int_equal(yip_device_link_path(N[0].dev, now, b_pub, PIPE_LINK, &N[1].addr), 0);
	send_packet(0, now, 64);
	drain(now);
	return now + 10 * YIP_NS_PER_MS;
}

static void check_delivered(void)
{
	for (int i = 0; i < 2; i++) {
		assert_int_equal(N[1 - i].rx_bad, 0);
		assert_int_equal(N[1 - i].rx_packets, tx_seq[i]);
		assert_int_equal(N[1 - i].rx_bytes, tx_bytes[i]);
	}
}

/*
 * Handshake, data both ways and a rekey, all over the pipe: every packet
 * arrives once, in order, intact; no repair symbol, NACK or ARQ copy is
 * made, and nothing touches the main link.
 */
static void test_session_over_pipe(void **state)
{
	uint64_t now = open_session(YIP_NS_PER_S);
	uint64_t rekeyed;

	(void)state;
	now = traffic(now);
	assert_true(peer_of(0, now).established);
	assert_true(peer_of(1, now).established);
	assert_int_equal(peer_of(0, now).stats.handshakes, 1);
	assert_int_equal(N[0].sent[WIRE_INIT], 1);
	assert_int_equal(N[1].sent[WIRE_RESP], 1);
	check_delivered();
	assert_true(tx_seq[0] > 100 && tx_seq[1] > 100);

	/* Past the rekey age: A's next packets start a handshake (B's answer
	 * comes back over the pipe too), and the traffic goes on. Every
	 * completed handshake is one Resp on the pipe, whoever began it (an
	 * Init may lose to the other side's: glare). */
	now += timing.rekey_after;
	rekeyed = now;
	now = traffic(now);
	assert_true(peer_of(0, now).stats.handshakes >= 2);
	assert_true(N[0].sent[WIRE_INIT] >= 2);
	assert_int_equal(N[0].sent[WIRE_RESP] + N[1].sent[WIRE_RESP],
	                 peer_of(0, now).stats.handshakes);
	check_delivered();
	/* Past the first keys' lifetime: they are gone, later ones carry it. */
	now = rekeyed + timing.reject_after;
	now = traffic(now);
	check_delivered();

	for (int i = 0; i < 2; i++) {
		struct yip_peer_info info = peer_of(i, now);

		assert_int_equal(N[i].sent[WIRE_REPAIR], 0);
		assert_int_equal(info.stats.repair_sent, 0);
		assert_int_equal(info.stats.nacks_sent, 0);
		assert_int_equal(info.stats.arq_sent, 0);
		assert_int_equal(info.stats.lost, 0);
		assert_int_equal(info.recovery_mem, 0); /* no ARQ history, no reassembly */
		assert_int_equal(N[i].main_sent, 0);
		assert_true(info.has_path);
		assert_non_null(strstr(info.path, "(memory link 3)"));
	}
}

/* The same pipe, saying it may lose datagrams: the same traffic gets repair
 * symbols and an ARQ history, so the test above shows the switch at work. */
static void test_unreliable_pipe_protects(void **state)
{
	uint64_t now = open_session(YIP_NS_PER_S);

	(void)state;
	now = traffic(now);
	check_delivered();
	assert_true(N[0].sent[WIRE_REPAIR] > 0);
	assert_true(peer_of(0, now).stats.repair_sent > 0);
	assert_true(peer_of(0, now).recovery_mem > 0);
}

/* A link that goes away takes its paths with it; the id names nothing after. */
static void test_link_closed(void **state)
{
	uint64_t now = open_session(YIP_NS_PER_S);
	struct yip_device_info dinfo;

	(void)state;
	now = traffic(now);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(peer_of(i, now).n_paths, 1);
		yip_device_link_closed(N[i].dev, PIPE_LINK);
		yip_link_del(&N[i].links, PIPE_LINK);
		assert_int_equal(peer_of(i, now).n_paths, 0);
		assert_false(peer_of(i, now).has_path);
	}
	/* With no path left, a packet has nowhere to go. */
	S[0].head = S[0].tail = 0;
	send_packet(0, now, 64);
	yip_device_info(N[0].dev, &dinfo);
	assert_int_equal(dinfo.drops[YIP_DROP_NO_ENDPOINT], 1);
	assert_int_equal(S[0].tail, 0);
	assert_int_equal(N[0].main_sent, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_session_over_pipe, setup_reliable, teardown),
	    cmocka_unit_test_setup_teardown(test_unreliable_pipe_protects, setup_unreliable,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_link_closed, setup_reliable, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
