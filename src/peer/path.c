/*
 * Where a peer's datagrams go. Today a peer has one endpoint: configured,
 * or learned from the last authenticated datagram (roaming).
 */
#include "peer/internal.h"

#include "util/log.h"

void path_confirm(struct yip_peer *p, const union yip_sockaddr *src)
{
	char a[YIP_ADDRSTRLEN], b[YIP_ADDRSTRLEN];

	if (p->has_endpoint && yip_sockaddr_eq(&p->endpoint, src))
		return;
	if (p->has_endpoint) {
		p->stats.roams++;
		yip_sockaddr_format(&p->endpoint, a, sizeof(a));
		yip_sockaddr_format(src, b, sizeof(b));
		log_info("peer %02x%02x%02x%02x: endpoint moved from %s to %s", p->public_key[0],
		         p->public_key[1], p->public_key[2], p->public_key[3], a, b);
	}
	p->endpoint = *src;
	p->has_endpoint = true;
}
