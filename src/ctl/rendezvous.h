/*
 * yip-rendezvous's status over the control socket (docs/control.md,
 * "yip-rendezvous"): the same socket server and request lines as yipd's
 * (src/ctl/server.c, yip_ctl_parse_request), its own JSON document, and
 * its rendering for people. Pure: a reply is built from the engine's state
 * and the daemon's counters, and rendering reads any bytes at all.
 */
#ifndef YIP_CTL_RENDEZVOUS_H
#define YIP_CTL_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr/addr.h"
#include "rendezvous/rendezvous.h"

#define YIP_RDV_CTL_NAME "rendezvous" /* the socket is <dir>/rendezvous.sock */

/* What the daemon adds to the engine's state. */
struct yip_rdv_status {
	const struct rdv_server *srv;
	union yip_sockaddr listen; /* the main socket's address */
	uint16_t alt_port;         /* the second socket's port; 0: none */
	uint64_t now;              /* monotonic ns, the clock the engine is fed */
	uint64_t now_wall_s;       /* Unix seconds at the same moment */
	uint64_t rx_dgrams;        /* datagrams received on both sockets */
	uint64_t
	    rx_truncated;   /* longer than the receive buffer: dropped, not given to the engine */
	uint64_t tx_dgrams; /* handed to the kernel */
	uint64_t tx_failed; /* refused by the kernel, or for a family the socket cannot reach */
	bool udp_gso;
	uint64_t udp_trains, udp_train_dgrams; /* messages sent, and the datagrams in them */
};

/* "unknown", "none", "endpoint-independent", "per-destination" (enum wire_nat). */
const char *yip_rdv_nat_name(unsigned nat);

/*
 * The reply to one request line (as for yip_ctl_parse_request): "show"
 * (everything, every node), "show <node public key>" (that node only) or
 * "stats" (everything but the nodes). A JSON document and a newline,
 * NUL-terminated, in a heap buffer the caller frees; *out_len is its length
 * without the NUL. A bad request or an unknown node gives {"error": "..."}.
 * NULL only when out of memory.
 */
char *yip_rdv_ctl_reply(const struct yip_rdv_status *st, const char *line, size_t len,
                        size_t *out_len);

/*
 * Writes a reply of len bytes (any bytes at all) to out for people: the
 * server, its counters and drops, then at most max_nodes nodes (and how
 * many more there are). now_s is the current Unix time. Missing or
 * mistyped fields show as unknown. Returns 0, or -1 with a message in err
 * when the reply is not a JSON object or is an error reply.
 */
int yip_rdv_ctl_render(FILE *out, const char *json, size_t len, uint64_t now_s, size_t max_nodes,
                       char *err, size_t errlen);

#endif
