/*
 * libFuzzer target for the control protocol. The input is used three ways:
 * as a request line for the parser and for a reply built from a fixed
 * snapshot (which must always be valid JSON), and as a reply for yipctl's
 * renderer in every view; and for ping and netcheck (src/ctl/reach.c): as a
 * ping target, and as a ping or netcheck reply read back by yipctl.
 * Nothing may crash, leak or read out of bounds.
 */
#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/reach.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
	static FILE *f;

	if (f == NULL)
		f = fopen("/dev/null", "w");
	if (f == NULL)
		__builtin_trap();
	return f;
}

static void fixed_snapshot(struct yip_ctl_snapshot *s, struct yip_ctl_peer *p, struct yip_cidr *ip)
{
	memset(s, 0, sizeof(*s));
	memset(p, 0, sizeof(*p));
	memset(ip, 0, sizeof(*ip));
	snprintf(s->device, sizeof(s->device), "yip0");
	memset(s->public_key, 0x11, sizeof(s->public_key));
	s->listen_port = 443;
	s->fec = true;
	s->drops[0] = UINT64_MAX;
	memset(p->public_key, 0xab, sizeof(p->public_key));
	ip->family = AF_INET;
	ip->plen = 8;
	ip->addr[0] = 10;
	p->allowed_ips = ip;
	p->n_allowed_ips = 1;
	p->rtt_ms = 1.5;
	p->latest_handshake = 1700000000;
	p->stats.rx_bytes = 12345;
	s->peers = p;
	s->n_peers = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct yip_ctl_request req;
	struct yip_ctl_snapshot snap;
	struct yip_ctl_peer peer;
	struct yip_cidr ip;
	char err[256], *reply;
	size_t len = 0;
	bool ping = false;
	cJSON *j;

	/* Request parsing: success only for a known command, failure always explained. */
	err[0] = '\0';
	if (yip_ctl_parse_request(text, size, &req, err, sizeof(err)) == 0) {
		ping = req.cmd == YIP_CTL_PING;
		if (size >= YIP_CTL_MAX_REQUEST ||
		    (req.cmd != YIP_CTL_SHOW && req.cmd != YIP_CTL_STATS &&
		     req.cmd != YIP_CTL_MEMBERS && req.cmd != YIP_CTL_PING &&
		     req.cmd != YIP_CTL_NETCHECK && req.cmd != YIP_CTL_RELOAD &&
		     req.cmd != YIP_CTL_LOG && req.cmd != YIP_CTL_METRICS))
			__builtin_trap();
	} else if (err[0] == '\0') {
		__builtin_trap();
	}

	/* Whatever the request, the reply is one line of valid JSON that renders. */
	fixed_snapshot(&snap, &peer, &ip);
	reply = yip_ctl_reply(&snap, text, size, &len);
	if (reply == NULL)
		return 0; /* out of memory */
	/* metrics: the exposition text, not JSON (fuzz_metrics_http and test_ctl_metrics). */
	if (len > 0 && reply[0] == '#') {
		free(reply);
		return 0;
	}
	if (len == 0 || reply[len - 1] != '\n' || memchr(reply, '\n', len - 1) != NULL)
		__builtin_trap();
	j = cJSON_ParseWithLength(reply, len);
	if (!cJSON_IsObject(j))
		__builtin_trap();
	cJSON_Delete(j);
	if (yip_ctl_render(sink(), YIP_CTL_VIEW_SHOW, reply, len, 1700000001, err, sizeof(err)) !=
	        0 &&
	    strstr(reply, "\"error\"") == NULL)
		__builtin_trap();
	free(reply);

	/* ping and netcheck: the target resolved, the replies built and read back. */
	if (ping) {
		struct yip_ping_info pi = {.round = 1, .n = 1};
		struct yip_ctl_ping_reply pr;
		int k;

		fixed_snapshot(&snap, &peer, &ip);
		err[0] = '\0';
		k = yip_ctl_resolve_peer(&snap, req.target, err, sizeof(err));
		if (k >= 0) {
			pi.probes[0].answered = true;
			pi.probes[0].rtt = 1234567;
			pi.probes[0].addr.in4.sin_family = AF_INET;
			pi.probes[0].addr.in4.sin_port = 1;
			reply =
			    yip_ctl_ping_reply(&snap, (size_t)k, YIP_PING_SENT, false, &pi, &len);
			if (reply != NULL) {
				if (yip_ctl_ping_parse(reply, len, &pr, err, sizeof(err)) != 0 ||
				    pr.n != 1 || !pr.pongs[0].answered)
					__builtin_trap();
				free(reply);
			}
		} else if (err[0] == '\0') {
			__builtin_trap();
		}
	}
	{
		struct yip_ctl_ping_reply pr;
		struct yip_ctl_ping_tally t = {0};

		err[0] = '\0';
		if (yip_ctl_ping_parse(text, size, &pr, err, sizeof(err)) == 0) {
			if (pr.n > YIP_MAX_PATHS)
				__builtin_trap();
			for (unsigned k = 0; k < pr.n; k++) {
				yip_ctl_pong_line(sink(), &pr, k);
				yip_ctl_ping_count(&t, &pr, k);
			}
			t.rounds = 1;
			yip_ctl_ping_summary(sink(), &t, pr.name);
		} else if (err[0] == '\0') {
			__builtin_trap();
		}
		err[0] = '\0';
		if (yip_ctl_netcheck_render(sink(), text, size, err, sizeof(err)) != 0 &&
		    err[0] == '\0')
			__builtin_trap();
		(void)yip_ctl_netcheck_status(text, size);
	}

	/* The renderer on arbitrary bytes, in every view. */
	for (int v = YIP_CTL_VIEW_SHOW; v <= YIP_CTL_VIEW_MEMBERS; v++) {
		err[0] = '\0';
		if (yip_ctl_render(sink(), (enum yip_ctl_view)v, text, size, 1700000000, err,
		                   sizeof(err)) != 0 &&
		    err[0] == '\0')
			__builtin_trap();
	}
	return 0;
}
