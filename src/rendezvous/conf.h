/*
 * yip-rendezvous's settings: its configuration file (key=value lines, '#'
 * comments), its command-line options (the same settings under the same
 * names with '-' for '_') and its key file (what `yip-rendezvous --genkey`
 * prints). Pure parsing, no I/O: the program reads the files and checks
 * their modes. Errors name "file:line: what is wrong", or the option.
 * docs/rendezvous.md lists the settings.
 */
#ifndef YIP_RENDEZVOUS_CONF_H
#define YIP_RENDEZVOUS_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "config/config.h"
#include "crypto/crypto.h"
#include "reality/reality.h"
#include "rendezvous/rendezvous.h"

#define RDV_DEFAULT_PORT     7000
#define RDV_CONF_PATH_MAX    1024
#define RDV_CONF_MAX_RATE    (16ULL << 30) /* bytes per second: keeps the engine's refill in range */
#define RDV_CONF_MIN_BURST   (64ULL << 10) /* one datagram of the largest size fits */
#define RDV_CONF_NODES_LIMIT 10000000
#define RDV_CONF_FILE_LIMIT  (64 * 1024) /* bytes of a configuration or key file */
#define RDV_CONF_HOST_MAX    256         /* the decoy's HOST:PORT */

#define RDV_CONF_KEYS(X)                                                                           \
	X(LISTEN, "listen")                                                                        \
	X(ALT_PORT, "alt_port")                                                                    \
	X(KEY, "key")                                                                              \
	X(RELAY, "relay")                                                                          \
	X(RELAY_RATE, "relay_rate")                                                                \
	X(RELAY_BURST, "relay_burst")                                                              \
	X(MAX_NODES, "max_nodes")                                                                  \
	X(OBF_PSK, "obf_psk")                                                                      \
	X(USER, "user")                                                                            \
	X(SANDBOX, "sandbox")                                                                      \
	X(CA, "ca")                                                                                \
	X(NETWORK, "network")                                                                      \
	X(REVOCATIONS, "revocations")                                                              \
	X(LISTEN_TCP, "listen_tcp")                                                                \
	X(TLS_CERT, "tls_cert")                                                                    \
	X(TLS_KEY, "tls_key")                                                                      \
	X(DECOY, "decoy")                                                                          \
	X(LISTEN_QUIC, "listen_quic")                                                              \
	X(REALITY_DEST, "reality_dest")                                                            \
	X(REALITY_PRIVATE_KEY, "reality_private_key")                                              \
	X(REALITY_SHORT_ID, "reality_short_id")                                                    \
	X(REALITY_SERVER_NAME, "reality_server_name")

enum rdv_conf_key {
#define X(name, str) RDV_CONF_##name,
	RDV_CONF_KEYS(X)
#undef X
	    RDV_CONF_COUNT
};

struct rdv_conf {
	union yip_sockaddr listen; /* address and port of the main socket */
	bool alt_port_set;         /* false: the listen port + 1 */
	uint16_t alt_port;         /* 0: no second port */
	char key_file[RDV_CONF_PATH_MAX];
	bool relay;
	uint64_t relay_rate, relay_burst; /* bytes per second per node; bytes */
	size_t max_nodes;
	bool obf; /* obf_psk set: every datagram obfuscated (docs/obfuscation.md) */
	uint8_t obf_psk[YIP_KEY_LEN];
	char user[YIP_USER_MAX + 1];   /* to run as once set up; "" = the default */
	enum yip_sandbox_mode sandbox; /* on (the default), log, off */
	/* Members only (docs/membership.md): the CA's public key and the
	 * network; a revocation list file (optional). */
	bool has_ca;
	uint8_t ca[MEMBER_SIGN_PUBLIC];
	char network[WIRE_NETWORK_MAX + 1];
	char revocations_file[RDV_CONF_PATH_MAX];
	/* The TLS front (docs/rendezvous.md, "The TLS front"): its TCP address,
	 * certificate chain and key (PEM files), and the decoy's HOST:PORT
	 * ("": the built-in site), resolved when the server starts. */
	bool has_tcp;
	union yip_sockaddr listen_tcp;
	char tls_cert[RDV_CONF_PATH_MAX], tls_key[RDV_CONF_PATH_MAX];
	char decoy[RDV_CONF_HOST_MAX];
	/* The REALITY front on listen_tcp instead of the TLS front
	 * (docs/rendezvous.md, "The REALITY front"): the real site's
	 * HOST:PORT, the key file, the short ids and server names it takes
	 * (both repeatable: each setting adds one). */
	char reality_dest[RDV_CONF_HOST_MAX];
	char reality_key_file[RDV_CONF_PATH_MAX];
	uint8_t reality_ids[REALITY_IDS_MAX][WIRE_REALITY_SHORT_ID];
	size_t n_reality_ids;
	char reality_names[REALITY_NAMES_MAX][254];
	size_t n_reality_names;
	/* The QUIC listener (docs/rendezvous.md, "QUIC"): its UDP address; it
	 * shows tls_cert and tls_key if set, else a self-signed certificate. */
	bool has_quic;
	union yip_sockaddr listen_quic;
	unsigned line[RDV_CONF_COUNT]; /* where the file set each key; 0 = it did not */
};

/* Defaults: 0.0.0.0:7000, second port 7001, no key file, and the engine's defaults. */
void rdv_conf_default(struct rdv_conf *c);

/* The setting called name (as in the file), or -1. */
int rdv_conf_key(const char *name);

/* Whether a setting may be given more than once (each time adds one). */
bool rdv_conf_repeatable(enum rdv_conf_key key);

/* Sets one setting from its text. Returns 0, or -1 with the reason in err. */
int rdv_conf_set(struct rdv_conf *c, enum rdv_conf_key key, const char *value, char *err,
                 size_t errlen);

/*
 * Parses a configuration file's text (len bytes, any bytes at all) named
 * name into c, on top of what c holds. A key may appear once. Returns 0, or
 * -1 with "name:line: message" in err.
 */
int rdv_conf_parse(struct rdv_conf *c, const char *text, size_t len, const char *name, char *err,
                   size_t errlen);

/* Checks the settings together (ports, key file). 0, or -1 with a message in err. */
int rdv_conf_check(const struct rdv_conf *c, char *err, size_t errlen);

/* The second port the settings give (0: none). */
uint16_t rdv_conf_alt_port(const struct rdv_conf *c);

/* Copies the engine's part into e (which keeps its private key and Init budgets). */
void rdv_conf_engine(const struct rdv_conf *c, struct rdv_config *e);

/*
 * A byte count: decimal digits with an optional K, M or G (2^10, 2^20, 2^30;
 * either case). Returns 0, or -1 if malformed or above max.
 */
int rdv_conf_bytes(const char *s, uint64_t max, uint64_t *out);

/*
 * A key file's text: "private=<64 hex digits>" and optionally the matching
 * "public=<64 hex digits>" (what --genkey prints), blank lines and '#'
 * comments. Returns 0 with the private key, or -1 with "name:line: message"
 * in err. Wipes its copies of the text.
 */
int rdv_keyfile_parse(const char *text, size_t len, const char *name,
                      uint8_t private_key[YIP_KEY_LEN], char *err, size_t errlen);

#endif
