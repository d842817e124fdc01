/*
 * Feeds arbitrary datagrams to an engine that has a live session, so every
 * parser on the receive path (type word, Init, Resp, Data, inner IP header)
 * sees hostile input. The first input byte chooses a valid prefix to start
 * from, so the fuzzer also reaches code behind the length/type checks.
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "peer/peer.h"
#include "util/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[4][YIP_MAX_DGRAM];
static size_t out_len[4];
static unsigned nout;
static uint64_t wall = 1700000000ULL * YIP_NS_PER_S;

static uint8_t *f_buf(void *ctx)
{
	(void)ctx;
	return out[nout & 3];
}

static void f_send(void *ctx, const union yip_sockaddr *to, size_t len, uint32_t train)
{
	(void)ctx;
	(void)to;
	(void)train;
	out_len[nout & 3] = len;
	nout++;
}

static void f_tun(void *ctx, const uint8_t *pkt, size_t len)
{
	(void)ctx;
	(void)pkt;
	(void)len;
}

static uint64_t f_wall(void *ctx)
{
	(void)ctx;
	return wall += 1000;
}

static struct yip_device dev;
static union yip_sockaddr from;
static uint8_t init_msg[WIRE_INIT_LEN];

static void setup(void)
{
	static const struct yip_io io = {NULL, f_buf, f_send, f_tun, f_wall, NULL};
	uint8_t other[YIP_KEY_LEN];
	struct yip_cidr c = {.family = AF_INET, .plen = 8, .addr = {10}};
	struct yip_peer_config pc = {.has_endpoint = true, .allowed_ips = &c, .n_allowed_ips = 1};
	struct yip_config cfg = {.mtu = 1420, .peers = &pc, .n_peers = 1};
	struct yip_timing t;
	uint8_t pkt[28] = {0x45, 0, 0, 28, [9] = 17, [12] = 10, 0, 0, 2, [16] = 10, 0, 0, 1};
	char err[128];

	yip_crypto_init();
	yip_timing_default(&t);
	yip_key_generate(cfg.private_key);
	yip_key_public(cfg.public_key, cfg.private_key);
	yip_key_generate(other);
	yip_key_public(pc.public_key, other);
	pc.endpoint.in4.sin_family = AF_INET;
	from = pc.endpoint;
	if (yip_device_init(&dev, &cfg, &io, &t, err, sizeof(err)) != 0)
		__builtin_trap();
	/* Start a handshake so an Init sits in out[0] and a pending state exists. */
	yip_device_tx(&dev, YIP_NS_PER_S, pkt, sizeof(pkt));
	memcpy(init_msg, out[0], sizeof(init_msg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	uint8_t buf[YIP_MAX_DGRAM + 64];
	size_t len;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (size == 0 || size > sizeof(buf))
		return 0;
	/* Mode byte: 0 raw; 1-3 overwrite the type word; 4 mutate a real Init. */
	switch (data[0] % 5) {
	case 0:
		memcpy(buf, data + 1, size - 1);
		len = size - 1;
		break;
	case 4:
		memcpy(buf, init_msg, sizeof(init_msg));
		for (size_t i = 1; i + 1 < size; i += 2)
			buf[data[i] % sizeof(init_msg)] ^= data[i + 1];
		len = sizeof(init_msg);
		break;
	default:
		memcpy(buf, data + 1, size - 1);
		len = size - 1 < 4 ? 4 : size - 1;
		memset(buf, 0, 4);
		buf[0] = (uint8_t)(data[0] % 5 == 3 ? WIRE_DATA : data[0] % 5);
		break;
	}
	yip_device_rx(&dev, 2 * YIP_NS_PER_S, &from, buf, len);
	yip_device_timers(&dev, 3 * YIP_NS_PER_S);
	return 0;
}
