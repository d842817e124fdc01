/*
 * The seam between a QUIC client connection (quic/conn.c) and its TLS:
 * the few things ngtcp2 needs of a client's TLS 1.3. GnuTLS through
 * ngtcp2_crypto_gnutls is one (quic_tls_gnutls, in conn.c); yip's own
 * Chrome-shaped engine (src/tls) is to be another. The packet protection
 * callbacks (encrypt, decrypt, hp_mask, update_key, ...) are ngtcp2_crypto's
 * for every TLS: they take the AEAD and cipher handles a TLS installed
 * with ngtcp2_crypto_derive_and_install_{rx,tx}_key or
 * ngtcp2_conn_install_*_key.
 */
#ifndef YIP_QUIC_TLS_H
#define YIP_QUIC_TLS_H

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "quic/conn.h"

struct quic_tls_ops {
	const char *name;
	/*
	 * The client's TLS state for the connection qc (just made by
	 * ngtcp2_conn_client_new); ref's get_conn gives qc back from a TLS
	 * callback. It sets up whatever the callbacks below need (for GnuTLS:
	 * the session, ngtcp2_conn_set_tls_native_handle). NULL with err.
	 */
	void *(*client_new)(ngtcp2_conn *qc, ngtcp2_crypto_conn_ref *ref,
	                    const struct quic_dial_config *cfg, char *err, size_t errlen);
	/* Frees it, secrets wiped. */
	void (*free)(void *tls);
	/* ngtcp2's client_initial: installs the Initial keys and submits the
	 * ClientHello (ngtcp2_crypto_client_initial_cb for GnuTLS). */
	ngtcp2_client_initial client_initial;
	/* ngtcp2's recv_crypto_data: feeds the TLS the server's handshake bytes,
	 * installs keys as they come, calls ngtcp2_conn_handshake_completed. */
	ngtcp2_recv_crypto_data recv_crypto_data;
	/* The cipher suite's name and the ALPN agreed (NULL: none), for yipctl. */
	void (*info)(void *tls, const char **cipher, const char **alpn);
};

/* GnuTLS (ngtcp2_crypto_gnutls): the default. */
extern const struct quic_tls_ops quic_tls_gnutls;

#endif
