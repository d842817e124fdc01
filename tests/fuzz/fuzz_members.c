/*
 * Admission by certificate (docs/protocol.md §3.7) with hostile
 * certificates: two CA-gated engines in memory, neither configured with
 * the other. The input is what the caller presents as its certificate in
 * an authentic Init (properly encrypted under the Noise handshake, so the
 * answering engine reaches the certificate parser and the admission
 * checks), and what the answering engine presents back in its Resp. Most
 * inputs are refused (counted); a valid certificate seed makes a peer,
 * which the next input's setup frees again.
 *
 * Input: the first byte chooses what the fuzz bytes are (bit 0: the
 * caller's certificate, else the answerer's; bit 1: start from a valid
 * certificate and XOR the rest of the input into it); then the bytes.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/member.h"
#include "pair.h"
#include "peer/internal.h"
#include "peer/peer.h"
#include "util/clock.h"
#include "wire/wire.h"

#include "memo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WALL (PAIR_WALL_START / YIP_NS_PER_S)

static uint8_t ca_pub[32], ca_sec[64];
static uint8_t priv[2][YIP_KEY_LEN], pub[2][YIP_KEY_LEN];
static struct member_cert certs[2];

static void init_once(void)
{
	static int done;
	uint8_t seed[32] = {7};

	if (done)
		return;
	done = 1;
	yip_crypto_init();
	member_ca_keypair(seed, ca_pub, ca_sec);
	for (int i = 0; i < 2; i++) {
		uint8_t spub[32], ssec[64];
		struct wire_cert f = {.network = "fuzz",
		                      .not_before = WALL - 86400,
		                      .not_after = WALL + 86400,
		                      .n_prefixes = 1};

		memset(priv[i], 0x31 + i, YIP_KEY_LEN);
		yip_key_public(pub[i], priv[i]);
		member_sign_keypair(priv[i], spub, ssec);
		snprintf(f.name, sizeof(f.name), "node %d", i);
		memcpy(f.key, pub[i], YIP_KEY_LEN);
		memcpy(f.sign_key, spub, 32);
		f.prefixes[0] = (struct yip_cidr){
		    .family = AF_INET, .plen = 32, .addr = {10, 0, 0, (uint8_t)(i + 1)}};
		if (member_cert_sign(&certs[i], &f, ca_sec) != 0)
			abort();
	}
}

/* Node i, CA-gated; node 0 knows node 1 as a root (its key and address). */
static int node(struct pair_node *n, int i)
{
	struct yip_config cfg = {.mtu = 1420, .has_ca = true};
	struct pair_opts o = {.out_cap = 8, .discard_overflow = true};
	struct yip_timing t;
	char err[128];

	yip_timing_default(&t);
	memcpy(cfg.private_key, priv[i], YIP_KEY_LEN);
	memcpy(cfg.public_key, pub[i], YIP_KEY_LEN);
	if (pair_node_init(n, &cfg, &t, &o, err, sizeof(err)) != 0)
		return -1;
	n->addr.in4.sin_family = AF_INET;
	n->addr.in4.sin_port = 0x1234;
	n->addr.in4.sin_addr.s_addr = (uint32_t)(0x0100000a + (i << 24));
	return yip_device_members_init(&n->dev, ca_pub, certs[i].raw, certs[i].len, err,
	                               sizeof(err)) < 0
	           ? -1
	           : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pair_node a, b;
	struct member_cert *bad;
	uint8_t pkt[28] = {0x45, 0, 0, 28, [8] = 64, 17, [12] = 10, 0, 0, 1, 10, 0, 0, 2};
	int who;

	if (size < 1)
		return 0;
	memo_reset();
	init_once();
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (node(&a, 0) != 0 || node(&b, 1) != 0)
		abort();
	who = data[0] & 1 ? 0 : 1;
	bad = &(who == 0 ? &a : &b)->dev.members->cert;
	data++;
	size--;
	if (data[-1] & 2) {
		/* A valid certificate, damaged. */
		for (size_t i = 0; i < size && i < bad->len; i++)
			bad->raw[i] ^= data[i];
	} else {
		bad->len = size < WIRE_HS_CERT_MAX ? size : WIRE_HS_CERT_MAX;
		memcpy(bad->raw, data, bad->len);
	}
	/* a calls b, the address it has for it from a root set of one. */
	{
		union yip_sockaddr ep = b.addr;
		char err[96];
		struct yip_peer *p = yip_device_peer_add(&a.dev, YIP_NS_PER_S, pub[1], NULL, 0, &ep,
		                                         1, 0, err, sizeof(err));

		if (p == NULL)
			abort();
		p->root = true;
	}
	yip_device_tx(&a.dev, YIP_NS_PER_S, pkt, sizeof(pkt));
	for (int round = 0; round < 4; round++) {
		for (unsigned i = 0; i < a.nout; i++)
			pair_rx(&b, YIP_NS_PER_S, &a.addr, a.out[i].buf, a.out[i].len);
		a.nout = 0;
		for (unsigned i = 0; i < b.nout; i++)
			pair_rx(&a, YIP_NS_PER_S, &b.addr, b.out[i].buf, b.out[i].len);
		b.nout = 0;
	}
	/* Whatever happened, the counters add up and the tables are sane. */
	{
		struct yip_members_info mi;
		struct yip_device_info di;
		uint64_t sum;

		yip_device_members_info(&b.dev, &mi);
		yip_device_info(&b.dev, &di);
		sum = mi.no_cert;
		for (int v = 0; v < MEMBER_VERDICT_COUNT; v++)
			sum += mi.refused[v];
		if (sum != di.drops[YIP_DROP_NOT_ADMITTED] || b.dev.n_peers > 1)
			abort();
	}
	yip_device_timers(&b.dev, 10 * YIP_NS_PER_S);
	pair_node_free(&a);
	pair_node_free(&b);
	return 0;
}
