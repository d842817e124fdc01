/*
 * yipd configuration: a line format of key=value pairs, '#' comments, blank
 * lines, and [peer] blocks. See docs/configuration.md. Every error names
 * file:line and what is wrong.
 */
#ifndef YIP_CONFIG_CONFIG_H
#define YIP_CONFIG_CONFIG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "crypto/crypto.h"
#include "util/log.h"

#define YIP_DEFAULT_PORT         443
#define YIP_FALLBACK_PORT        8443
#define YIP_DEFAULT_MTU          1420 /* when mtu=auto finds no underlay route */
#define YIP_TXQUEUELEN           2000 /* packets the device may queue for yipd */
#define YIP_MIN_MTU              1280
#define YIP_MAX_MTU              9000
#define YIP_DEFAULT_DEVICE       "yip0"
#define YIP_MAX_PEERS            1024
#define YIP_MAX_ALLOWED_PER_PEER 256
#define YIP_MAX_ADDRESSES        64

#define YIP_MAX_WORKERS 16

#define YIP_MAX_RENDEZVOUS 4 /* rendezvous servers a node uses together */
/* rendezvous= lines: each server may be named once over UDP, once over QUIC and once over TLS. */
#define YIP_MAX_RENDEZVOUS_LINES  (3 * YIP_MAX_RENDEZVOUS)
#define YIP_MAX_OBF_JUNK          16 /* obf_junk at most */
#define YIP_DEFAULT_NAT_KEEPALIVE 20 /* seconds: well under the 30 s UDP mappings often last */

/* The link an endpoint= or rendezvous= is reached over: HOST:PORT or udp://, tls://
 * (and reality://, a TLS link to a REALITY front), quic://. */
enum yip_transport { YIP_TRANSPORT_UDP = 0, YIP_TRANSPORT_TLS = 1, YIP_TRANSPORT_QUIC = 2 };
enum yip_device_kind { YIP_DEVICE_TUN = 0, YIP_DEVICE_TAP = 1 };
enum yip_io_driver { YIP_IO_EPOLL = 0, YIP_IO_URING = 1, YIP_IO_URING_BUSY = 2 };
/* sandbox=: on (the default), log (violations are logged, not fatal), off. */
enum yip_sandbox_mode { YIP_SANDBOX_ON = 0, YIP_SANDBOX_LOG = 1, YIP_SANDBOX_OFF = 2 };

#define YIP_DEFAULT_STATE_DIR "/var/lib/yip"

#define YIP_USER_MAX 32 /* characters of a user name */

struct yip_peer_config {
	uint8_t public_key[YIP_KEY_LEN];
	bool has_endpoint;
	union yip_sockaddr endpoint; /* resolved at load time */
	char *endpoint_name;         /* HOST:PORT as written if HOST is a name, else NULL */
	unsigned endpoint_line;
	uint8_t transport; /* enum yip_transport: from the endpoint's scheme */
	char *tls_sni;     /* this peer's tls_sni=, NULL if not set (then cfg->tls_sni) */
	struct yip_cidr *allowed_ips; /* heap array, n_allowed_ips entries */
	size_t n_allowed_ips;
	unsigned persistent_keepalive; /* seconds, 0 = off */
	unsigned line;                 /* line of the [peer] header */
};

/* A rendezvous server (docs/nat.md): where it is and its static public key. */
struct yip_rendezvous_config {
	union yip_sockaddr addr; /* resolved at load time */
	char *name;              /* HOST:PORT as written if HOST is a name, else NULL */
	uint8_t transport;       /* enum yip_transport */
	uint8_t public_key[YIP_KEY_LEN];
	bool has_key;
	unsigned line; /* of its rendezvous= line */
	/* reality://HOST:PORT?pbk=HEX&sid=HEX&sni=NAME: a TLS link to a REALITY
	 * front (docs/transports.md), its key, short id and server name. */
	bool reality;
	uint8_t reality_pub[YIP_KEY_LEN];
	uint8_t reality_sid[8];
	char reality_sni[254];
};

struct yip_config {
	uint8_t private_key[YIP_KEY_LEN];
	uint8_t public_key[YIP_KEY_LEN]; /* always derived from private_key */
	union yip_sockaddr listen;       /* family AF_UNSPEC when not set: dual-stack any */
	bool listen_port_given;          /* false: port 443, falling back to 8443 */
	bool has_listen_tls;             /* listen_tls=: accept TLS links on this TCP address */
	union yip_sockaddr listen_tls;
	bool has_listen_quic; /* listen_quic=: accept QUIC links on this UDP address */
	union yip_sockaddr listen_quic;
	/* metrics_listen= (docs/operations.md, "Metrics"): the Prometheus endpoint's
	 * TCP address; off loopback only with metrics_remote = on. metrics_peers:
	 * per-peer series. */
	bool has_metrics_listen, metrics_remote, metrics_peers;
	union yip_sockaddr metrics_listen;
	/* quic_cc: the congestion control inside QUIC links (default bbr2). */
	enum yip_quic_cc { YIP_QUIC_CC_BBR2 = 0, YIP_QUIC_CC_BBR, YIP_QUIC_CC_CUBIC } quic_cc;
	char *tls_cert_path; /* PEM files listen_tls presents; both NULL: a self-signed one */
	char *tls_key_path;
	char *tls_sni; /* the SNI every tls:// dial sends unless its [peer] says; NULL: not set */
	char device[IFNAMSIZ];
	enum yip_device_kind device_kind;
	struct yip_cidr *addresses; /* heap array */
	size_t n_addresses;
	unsigned mtu;                  /* 0 = auto: from the underlay path (the default) */
	bool fec_off;                  /* fec=off: no FEC or ARQ (for comparisons) */
	bool offload_off;              /* offload=off: no TSO/GRO on the device, no UDP GSO/GRO */
	unsigned ciphers;              /* YIP_CIPHER_BIT set allowed; 0 = auto (all this CPU has) */
	enum yip_io_driver io;         /* io=epoll (default), uring or uring-busy */
	unsigned workers;              /* data-path threads; 0 = auto */
	struct yip_peer_config *peers; /* heap array */
	size_t n_peers;
	/* One entry a rendezvous= line: at most YIP_MAX_RENDEZVOUS distinct keys,
	 * a key at most once over each transport. */
	struct yip_rendezvous_config rendezvous[YIP_MAX_RENDEZVOUS_LINES];
	size_t n_rendezvous;
	unsigned nat_keepalive; /* seconds between datagrams that hold NAT mappings; 0 = off */
	bool relay_off;         /* relay=off: never send through a rendezvous server */
	bool obf; /* obf_psk is set: every datagram obfuscated (docs/obfuscation.md) */
	uint8_t obf_psk[32];
	unsigned obf_junk;     /* junk datagrams before each Init on a direct path; 0 = off */
	unsigned obf_cover_ms; /* cover traffic when idle: mean interval in ms; 0 = off */
	enum yip_sandbox_mode sandbox;
	char user[YIP_USER_MAX + 1]; /* user= to run as once set up; "" = the default */
	/* A CA-gated network (docs/membership.md): the CA's public key and the
	 * files the daemon reads (NULL: not set). */
	bool has_ca;
	uint8_t ca_public[YIP_KEY_LEN];
	char *cert_path;
	char *roots_path;
	char *revocations_path;
	char *state_dir; /* NULL: YIP_DEFAULT_STATE_DIR */
	/* Logging (docs/operations.md): log_format= (text), log_level= (info; -v: debug). */
	enum yip_log_format log_format;
	bool log_level_set;
	enum yip_log_level log_level;
};

/*
 * A user name as user= takes it: 1 to YIP_USER_MAX letters, digits, '_',
 * '.' and '-', not starting with '-'. Returns 0, or -1 with the reason.
 */
int yip_config_user_check(const char *name, char *reason, size_t reasonlen);

/*
 * A name as tls_sni= takes it: a DNS host name of 1 to 253 characters,
 * letters, digits, '-' and '.', labels of 1 to 63 characters not starting
 * or ending with '-', and not an IP address. Returns 0, or -1 with the
 * reason.
 */
int yip_config_sni_check(const char *name, char *reason, size_t reasonlen);

/* Parses "on", "log" or "off"; 0, or -1. */
int yip_config_sandbox_mode(const char *s, enum yip_sandbox_mode *out);

/*
 * Parses text (len bytes, need not be NUL-terminated) as a configuration
 * named name (used in messages). Host names in endpoints are resolved only
 * if resolve is true (the fuzzer passes false), to an address of the family
 * listen can reach when listen is not dual-stack; an endpoint or rendezvous
 * server that listen cannot reach is an error. On error returns -1, frees
 * anything allocated, and writes "name:line: message" to err.
 */
int yip_config_parse(const char *text, size_t len, const char *name, bool resolve,
                     struct yip_config *cfg, char *err, size_t errlen);

/* Reads and parses a file; errors as above ("path: cannot open: ..." if unreadable). */
int yip_config_load(const char *path, struct yip_config *cfg, char *err, size_t errlen);

/* The same from an open file (not closed), named name in messages; resolve as for parse. */
int yip_config_load_fd(int fd, const char *name, bool resolve, struct yip_config *cfg, char *err,
                       size_t errlen);

/*
 * The server rendezvous line i names, counting servers (distinct keys) in
 * the order they first appear: a server named by UDP, by quic:// and by tls:// is one
 * (the engine's server index).
 */
size_t yip_config_server_of_line(const struct yip_config *cfg, size_t i);

/* Frees the arrays and wipes the private key. */
void yip_config_free(struct yip_config *cfg);

/*
 * The interface keys that differ between a running configuration a and a
 * new one b among those fixed for the daemon's life (every interface key
 * but address and log_level, which a reload applies): up to max of their names into
 * keys, in the order of docs/configuration.md. Returns how many differ
 * (0: a reload may apply b). local_private is compared through the public
 * key, so a may have its private key wiped.
 */
size_t yip_config_fixed_changes(const struct yip_config *a, const struct yip_config *b,
                                const char **keys, size_t max);

/*
 * A metrics endpoint's address (yipd's metrics_listen, yip-rendezvous's
 * --metrics-listen): 0 if it is a loopback address (127.0.0.0/8, ::1,
 * ::ffff:127.0.0.0/104) or remote is set; otherwise -1 with a message in
 * err that says how to allow it.
 */
int yip_metrics_listen_check(const union yip_sockaddr *a, bool remote, char *err, size_t errlen);

#endif
