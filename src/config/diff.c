/* What a reload may not change: the interface keys fixed for yipd's life (config.h). */
#include <sodium.h>
#include <string.h>

#include "config/config.h"

static bool str_eq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Equal as configured: both unset, or both set to the same address. */
static bool addr_eq(bool has_a, const union yip_sockaddr *a, bool has_b,
                    const union yip_sockaddr *b)
{
	return has_a == has_b && (!has_a || yip_sockaddr_eq(a, b));
}

static bool listen_eq(const struct yip_config *a, const struct yip_config *b)
{
	return a->listen_port_given == b->listen_port_given &&
	       a->listen.sa.sa_family == b->listen.sa.sa_family &&
	       (a->listen.sa.sa_family == AF_UNSPEC || yip_sockaddr_eq(&a->listen, &b->listen));
}

static bool rendezvous_eq(const struct yip_config *a, const struct yip_config *b)
{
	if (a->n_rendezvous != b->n_rendezvous)
		return false;
	for (size_t i = 0; i < a->n_rendezvous; i++) {
		const struct yip_rendezvous_config *x = &a->rendezvous[i], *y = &b->rendezvous[i];

		if (!str_eq(x->name, y->name) || x->transport != y->transport ||
		    x->has_key != y->has_key || x->reality != y->reality ||
		    memcmp(x->public_key, y->public_key, sizeof(x->public_key)) != 0 ||
		    memcmp(x->reality_pub, y->reality_pub, sizeof(x->reality_pub)) != 0 ||
		    memcmp(x->reality_sid, y->reality_sid, sizeof(x->reality_sid)) != 0 ||
		    strcmp(x->reality_sni, y->reality_sni) != 0 ||
		    (x->name == NULL && !yip_sockaddr_eq(&x->addr, &y->addr)))
			return false;
	}
	return true;
}

size_t yip_config_fixed_changes(const struct yip_config *a, const struct yip_config *b,
                                const char **keys, size_t max)
{
	const struct {
		const char *key;
		bool same;
	} fixed[] = {
	    {"local_private", memcmp(a->public_key, b->public_key, sizeof(a->public_key)) == 0},
	    {"listen", listen_eq(a, b)},
	    {"listen_tls",
	     addr_eq(a->has_listen_tls, &a->listen_tls, b->has_listen_tls, &b->listen_tls)},
	    {"listen_quic",
	     addr_eq(a->has_listen_quic, &a->listen_quic, b->has_listen_quic, &b->listen_quic)},
	    {"quic_cc", a->quic_cc == b->quic_cc},
	    {"tls_cert", str_eq(a->tls_cert_path, b->tls_cert_path)},
	    {"tls_key", str_eq(a->tls_key_path, b->tls_key_path)},
	    {"tls_sni", str_eq(a->tls_sni, b->tls_sni)},
	    {"device", strcmp(a->device, b->device) == 0},
	    {"device_kind", a->device_kind == b->device_kind},
	    {"mtu", a->mtu == b->mtu},
	    {"fec", a->fec_off == b->fec_off},
	    {"offload", a->offload_off == b->offload_off},
	    {"cipher", a->ciphers == b->ciphers},
	    {"io", a->io == b->io},
	    {"workers", a->workers == b->workers},
	    {"rendezvous", rendezvous_eq(a, b)},
	    {"nat_keepalive", a->nat_keepalive == b->nat_keepalive},
	    {"relay", a->relay_off == b->relay_off},
	    {"obf_psk",
	     a->obf == b->obf && sodium_memcmp(a->obf_psk, b->obf_psk, sizeof(a->obf_psk)) == 0},
	    {"obf_junk", a->obf_junk == b->obf_junk},
	    {"obf_cover_ms", a->obf_cover_ms == b->obf_cover_ms},
	    {"user", strcmp(a->user, b->user) == 0},
	    {"sandbox", a->sandbox == b->sandbox},
	    {"ca", a->has_ca == b->has_ca &&
	               memcmp(a->ca_public, b->ca_public, sizeof(a->ca_public)) == 0},
	    {"cert", str_eq(a->cert_path, b->cert_path)},
	    {"roots", str_eq(a->roots_path, b->roots_path)},
	    {"revocations", str_eq(a->revocations_path, b->revocations_path)},
	    {"state_dir", str_eq(a->state_dir, b->state_dir)},
	    {"metrics_listen", addr_eq(a->has_metrics_listen, &a->metrics_listen,
	                               b->has_metrics_listen, &b->metrics_listen)},
	    {"metrics_remote", a->metrics_remote == b->metrics_remote},
	    {"metrics_peers", a->metrics_peers == b->metrics_peers},
	    {"log_format", a->log_format == b->log_format},
	};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!fixed[i].same) {
			if (n < max)
				keys[n] = fixed[i].key;
			n++;
		}
	return n;
}
