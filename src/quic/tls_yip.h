/*
 * yip's own TLS 1.3 client engine (src/tls, QUIC mode) behind the QUIC
 * client's TLS seam (quic/tls.h): chromium 156's QUIC ClientHello and
 * transport parameters (tests/tls/quic_chromium.md) instead of GnuTLS's.
 * Set quic_dial_config.tls = &quic_tls_yip. ALPN is h3 (the engine offers
 * nothing else; a cfg->alpn other than "h3" refuses the dial). The
 * server's certificate is not checked (tls_verify_any): the inner Noise
 * handshake authenticates the peer, as with the GnuTLS client.
 *
 * Its shape op frames the first flight as chromium 156 does (until the
 * server answers): each client Initial decrypted and rebuilt with the same
 * packet number and CRYPTO bytes, cut into 4 to 9 fragments per frame in
 * a random order with PINGs and PADDING runs between them, its packet
 * number in 1 byte (the first) or 2 (the rest), 1250-byte datagrams.
 */
#ifndef YIP_QUIC_TLS_YIP_H
#define YIP_QUIC_TLS_YIP_H

#include "quic/tls.h"

extern const struct quic_tls_ops quic_tls_yip;

#endif
