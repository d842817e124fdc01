/*
 * libFuzzer target for yip-rendezvous's status (src/ctl/rendezvous.c): the
 * input as a request line answered from a server engine with one node in
 * it (the reply must always be one JSON object and a newline), and as a
 * reply for the text view and the JSON view of `yip-rendezvous status`.
 */
#include <arpa/inet.h>
#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/rendezvous.h"
#include "rdvclient.h"
#include "rendezvous/rendezvous.h"
#include "util/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rdv_server S;
static uint8_t out[2][512];
static size_t out_len[2];
static unsigned n_out;

static uint8_t *io_buf(void *ctx)
{
	(void)ctx;
	return out[n_out < 2 ? n_out : 1];
}

static void io_send(void *ctx, unsigned sock, const union yip_sockaddr *to, size_t len)
{
	(void)ctx;
	(void)sock;
	(void)to;
	if (n_out < 2)
		out_len[n_out++] = len;
}

static FILE *sink(void)
{
	static FILE *f;

	if (f == NULL)
		f = fopen("/dev/null", "w");
	if (f == NULL)
		__builtin_trap();
	return f;
}

/* A server with one registered node, built once. */
static void setup(void)
{
	struct rdv_io io = {NULL, io_buf, io_send};
	struct wire_ctrl reg = {.kind = WIRE_CTRL_REGISTER, .nat = WIRE_NAT_APDM, .n_cands = 1};
	uint8_t init[WIRE_INIT_LEN], d[WIRE_DATA_MIN + WIRE_CTRL_MAX];
	struct rdv_config cfg;
	static struct rdvc c;
	char err[128];
	size_t len;

	yip_crypto_init();
	rdv_config_default(&cfg);
	memset(cfg.private_key, 0x42, YIP_KEY_LEN);
	if (rdv_init(&S, &cfg, &io, err, sizeof(err)) != 0)
		__builtin_trap();
	rdvc_init(&c, NULL, "2001:db8::1", 51820);
	rdvc_init_msg(&c, S.public_key, 1700000000ULL * YIP_NS_PER_S,
	              YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305), init);
	rdv_rx(&S, YIP_NS_PER_S, RDV_SOCK_MAIN, &c.addr, init, sizeof(init));
	if (n_out != 1 || !rdvc_resp(&c, out[0], out_len[0]))
		__builtin_trap();
	reg.cands[0] = c.addr;
	len = rdvc_seal_ctrl(&c, &reg, d);
	rdv_rx(&S, YIP_NS_PER_S, RDV_SOCK_MAIN, &c.addr, d, len);
	if (S.stats.registrations != 1)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	const char *text = (const char *)data;
	struct yip_rdv_status st = {
	    .srv = &S, .alt_port = 7001, .now = 5 * YIP_NS_PER_S, .now_wall_s = 1700000005};
	char err[256], *reply;
	size_t len = 0;
	cJSON *root;

	if (!ready) {
		setup();
		ready = true;
	}
	st.listen.in6.sin6_family = AF_INET6;
	st.listen.in6.sin6_port = htons(7000);
	reply = yip_rdv_ctl_reply(&st, text, size, &len);
	if (reply == NULL)
		return 0; /* out of memory */
	if (len == 0 || strlen(reply) != len || reply[len - 1] != '\n')
		__builtin_trap();
	root = cJSON_ParseWithLength(reply, len);
	if (!cJSON_IsObject(root))
		__builtin_trap();
	cJSON_Delete(root);
	free(reply);

	yip_rdv_ctl_render(sink(), text, size, 1700000000, 3, err, sizeof(err));
	yip_ctl_render(sink(), YIP_CTL_VIEW_JSON, text, size, 0, err, sizeof(err));
	return 0;
}
