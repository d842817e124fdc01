/*
 * The HTTP/3 decoy (quic/h3.h) as a QUIC server connection's stream
 * handler (quic/conn.h): every connection the QUIC listener accepts gets
 * one when its handshake completes, whoever the client is, so a prober
 * meets an HTTP/3 server and a yip node's connection (whose traffic is
 * DATAGRAM frames) carries an idle one. The decoy sees streams only; it
 * knows nothing of DATAGRAMs, peers or the inner handshake
 * (docs/quic-decoy.md).
 */
#ifndef YIP_QUIC_DECOY_H
#define YIP_QUIC_DECOY_H

#include <stdint.h>

#include "quic/conn.h"
#include "quic/h3.h"

/* Shared by every connection of one listener: quic_server_config.streams_arg. */
struct quic_decoy {
	struct yip_h3_stats stats; /* all its connections' */
	uint64_t wall_s;           /* Unix seconds, for the answers' date: the caller sets it */
	uint64_t open_failed;      /* connections left without a decoy (out of memory) */
};

extern const struct quic_stream_handler quic_decoy_handler;

#endif
