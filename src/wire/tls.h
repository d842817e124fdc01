/*
 * TLS 1.3 on the wire (RFC 8446): the record header, the handshake
 * message header, a Chrome-shaped ClientHello encoder and its decoder,
 * decoders for what a server sends (ServerHello and HelloRetryRequest,
 * EncryptedExtensions, Certificate, CertificateVerify, NewSessionTicket,
 * KeyUpdate, alerts), and encoders for the server's EncryptedExtensions,
 * Certificate and CertificateVerify (src/tls/server.c). Unlike the rest
 * of src/wire, multi-byte fields are big-endian, as TLS has them.
 *
 * The decoders read one message body (the bytes after the 4-byte handshake
 * header) and check every length against the body: a vector that runs past
 * its parent, a count past a fixed capacity, or trailing bytes refuse the
 * whole message. What they hand back points into the input.
 *
 * The engine that drives a connection, and chooses what goes into a
 * ClientHello, is src/tls.
 */
#ifndef YIP_WIRE_TLS_H
#define YIP_WIRE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Record content types. */
enum {
	TLS_CT_CCS = 20,
	TLS_CT_ALERT = 21,
	TLS_CT_HANDSHAKE = 22,
	TLS_CT_APP = 23,
};

/* Handshake message types. */
enum {
	TLS_HS_CLIENT_HELLO = 1,
	TLS_HS_SERVER_HELLO = 2,
	TLS_HS_NEW_SESSION_TICKET = 4,
	TLS_HS_ENCRYPTED_EXTENSIONS = 8,
	TLS_HS_CERTIFICATE = 11,
	TLS_HS_CERTIFICATE_REQUEST = 13,
	TLS_HS_CERTIFICATE_VERIFY = 15,
	TLS_HS_FINISHED = 20,
	TLS_HS_KEY_UPDATE = 24,
	TLS_HS_COMPRESSED_CERTIFICATE = 25,
};

/* Record sizes: the header, the largest plaintext (2^14), the largest
 * protected record body (2^14 + 256, RFC 8446 5.2). */
#define TLS_REC_HDR    5
#define TLS_REC_PLAIN  16384
#define TLS_REC_CIPHER (TLS_REC_PLAIN + 256)
#define TLS_REC_MAX    (TLS_REC_HDR + TLS_REC_CIPHER)
#define TLS_HS_HDR     4
#define TLS_RANDOM_LEN 32
#define TLS_SID_MAX    32

/* The groups and key shares this side knows. */
#define TLS_GROUP_P256      0x0017
#define TLS_GROUP_P384      0x0018
#define TLS_GROUP_X25519    0x001d
#define TLS_GROUP_MLKEM768X 0x11ec /* X25519MLKEM768 */
#define TLS_X25519_LEN      32
#define TLS_MLKEM768_EK_LEN 1184 /* an ML-KEM-768 encapsulation key */
#define TLS_MLKEMX_LEN      (TLS_MLKEM768_EK_LEN + TLS_X25519_LEN)

/* Extension ids. */
#define TLS_EXT_SNI            0x0000
#define TLS_EXT_STATUS_REQUEST 0x0005
#define TLS_EXT_GROUPS         0x000a
#define TLS_EXT_POINT_FORMATS  0x000b
#define TLS_EXT_SIGALGS        0x000d
#define TLS_EXT_ALPN           0x0010
#define TLS_EXT_SCT            0x0012
#define TLS_EXT_EMS            0x0017
#define TLS_EXT_COMPRESS_CERT  0x001b
#define TLS_EXT_SESSION_TICKET 0x0023
#define TLS_EXT_VERSIONS       0x002b
#define TLS_EXT_COOKIE         0x002c
#define TLS_EXT_PSK_MODES      0x002d
#define TLS_EXT_KEY_SHARE      0x0033
#define TLS_EXT_QUIC_TP        0x0039 /* quic_transport_parameters (RFC 9001 8.2) */
#define TLS_EXT_ALPS           0x44cd
#define TLS_EXT_TRUST_ANCHORS  0xca34 /* trust anchor ids, an experimental codepoint */
#define TLS_EXT_ECH            0xfe0d
#define TLS_EXT_RENEGOTIATION  0xff01

/* GREASE (RFC 8701): 0x0a0a, 0x1a1a, ... 0xfafa. */
static inline bool tls_grease(uint16_t v)
{
	return (v & 0x0f0f) == 0x0a0a && (v >> 12) == ((v >> 4) & 0xf);
}

/* ---- records and handshake headers ---- */

struct tls_rec {
	uint8_t type;
	uint16_t version;
	uint16_t len; /* of the body after the header */
};

/*
 * The record header at in: 1 with rec filled, 0 if fewer than 5 bytes are
 * there, -1 if it cannot start a TLS record (an unknown content type, a
 * version whose major is not 3, or a body longer than max, which is
 * TLS_REC_PLAIN for plaintext records and TLS_REC_CIPHER for protected
 * ones).
 */
int tls_rec_get(struct tls_rec *rec, const uint8_t *in, size_t len, size_t max);
void tls_rec_put(uint8_t out[TLS_REC_HDR], uint8_t type, uint16_t version, uint16_t len);

/* The handshake message at in: its type, body and whole length (header
 * included), or 0 if it is not all there yet. */
size_t tls_hs_get(const uint8_t *in, size_t len, uint8_t *type, const uint8_t **body,
                  size_t *body_len);
void tls_hs_put(uint8_t out[TLS_HS_HDR], uint8_t type, size_t body_len);

/* ---- the ClientHello ---- */

/* The extensions a Chrome-shaped hello carries besides its two GREASE
 * ones, in no particular order (a hello permutes them). */
#define TLS_CH_EXTS 17
extern const uint16_t tls_ch_exts[TLS_CH_EXTS];

/* The extensions of chromium's QUIC hello (no GREASE ones: it sends none
 * there), in no particular order (a hello permutes them all). */
#define TLS_CH_QUIC_EXTS 12
extern const uint16_t tls_ch_quic_exts[TLS_CH_QUIC_EXTS];

/* The largest quic_transport_parameters body a hello carries or an
 * EncryptedExtensions may hand out. */
#define TLS_QUIC_TP_MAX 1024

/*
 * What varies from one ClientHello to the next; tls_ch_put writes the rest
 * as Chrome does (src/tls/hello.c says where each value comes from). order
 * holds the TLS_CH_EXTS extension ids in wire order (between the two GREASE
 * extensions), each once; without an sni (sni_len 0) the SNI extension is
 * left out wherever order places it. mlkem is the X25519MLKEM768 share
 * (encapsulation key, then X25519 key), x25519 the plain X25519 share.
 * ech_payload_len is one of Chrome's four GREASE ECH sizes. The GREASE
 * values lead cipher_suites, supported_groups (and key_share),
 * supported_versions and signature_algorithms, and are the first and last
 * extension (ext1 and ext2, which differ); each must be a GREASE value.
 *
 * quic: the hello of a QUIC connection, shaped as chromium's (src/tls/hello.c):
 * order holds the TLS_CH_QUIC_EXTS ids instead (the rest of it unused), no
 * GREASE anywhere (the grease_ values unused), an empty legacy_session_id
 * (sid unused), the three TLS 1.3 suites, ALPN and ALPS h3, and quic_tp
 * (quic_tp_len bytes, at most TLS_QUIC_TP_MAX) as the body of
 * quic_transport_parameters.
 */
struct tls_ch {
	uint8_t random[TLS_RANDOM_LEN];
	uint8_t sid[TLS_SID_MAX];
	uint16_t grease_cipher, grease_group, grease_ext1, grease_ext2, grease_version,
	    grease_sigalg;
	uint16_t order[TLS_CH_EXTS];
	const char *sni;
	size_t sni_len;
	const uint8_t *mlkem; /* TLS_MLKEMX_LEN */
	const uint8_t *x25519;
	uint8_t ech_config_id;
	const uint8_t *ech_enc; /* 32 bytes, an X25519 public key's size */
	const uint8_t *ech_payload;
	size_t ech_payload_len;
	/* The second hello, after a HelloRetryRequest: retry_group nonzero
	 * makes key_share that group's share alone, and a cookie (if any)
	 * follows key_share. */
	uint16_t retry_group;
	const uint8_t *retry_share;
	size_t retry_share_len;
	const uint8_t *cookie;
	size_t cookie_len;
	bool quic;
	const uint8_t *quic_tp;
	size_t quic_tp_len;
};

/* The largest hello tls_ch_put writes (an SNI of 255 bytes, the largest
 * ECH payload; a second hello's cookie adds its length), header included. */
#define TLS_CH_MAX 2400

/* Writes the ClientHello handshake message (header included) to out; its
 * length, or 0 if it does not fit in cap or ch is not a hello it writes
 * (an order that is not a permutation, an SNI longer than 255). */
size_t tls_ch_put(uint8_t *out, size_t cap, const struct tls_ch *ch);

/* Capacities of the decoded hello's lists; a longer list refuses it. */
#define TLS_CH_LIST_MAX 64

/* A ClientHello decoded (tests, fuzzers, and later a REALITY front). */
struct tls_ch_view {
	uint16_t legacy_version;
	const uint8_t *random;
	size_t sid_len;
	size_t n_ciphers, n_exts, n_groups, n_sigalgs, n_shares, n_versions, n_compress, n_anchors;
	uint16_t ciphers[TLS_CH_LIST_MAX];
	uint16_t exts[TLS_CH_LIST_MAX];
	uint16_t groups[TLS_CH_LIST_MAX];
	uint16_t sigalgs[TLS_CH_LIST_MAX];
	uint16_t share_groups[TLS_CH_LIST_MAX];
	uint16_t share_lens[TLS_CH_LIST_MAX];
	uint16_t versions[TLS_CH_LIST_MAX];
	uint16_t compress[TLS_CH_LIST_MAX];
	const uint8_t *sni; /* the first host_name, or NULL */
	size_t sni_len;
	const uint8_t *alpn; /* the ALPN extension's protocol list, or NULL */
	size_t alpn_len;
	size_t ech_payload_len;
	const uint8_t *mlkem;   /* the X25519MLKEM768 share, or NULL */
	const uint8_t *x25519;  /* the X25519 share, or NULL */
	const uint8_t *anchors; /* trust_anchors' id list (n_anchors ids), or NULL */
	size_t anchors_len;
	const uint8_t *quic_tp; /* quic_transport_parameters' body, or NULL */
	size_t quic_tp_len;
};

/* Decodes a ClientHello body. */
bool tls_ch_get(struct tls_ch_view *v, const uint8_t *body, size_t len);

/* ---- QUIC transport parameters (RFC 9000 18) ---- */

/*
 * chromium 156's quic_transport_parameters (tests/tls/quic_chromium.md):
 * the values of the eleven it always sends, the initial_source_connection_id
 * (empty for chromium's zero-length SCID), google_connection_options' four
 * bytes, version_information (chosen version 1, others 1 and a GREASE
 * version, in the order grease_version_first says) and a GREASE parameter
 * (id 27 + 31 N, encoded in 8 bytes; grease_len random bytes). order is a
 * permutation of the TLS_QUIC_TPS parameters (indices 0..12: the
 * eleven values in the field order below, then version_information, then
 * GREASE).
 */
#define TLS_QUIC_TPS           13
#define TLS_QUIC_TP_GREASE_MAX 16
struct tls_quic_tp {
	uint64_t max_idle_timeout, max_udp_payload_size, initial_max_data,
	    initial_max_stream_data_bidi_local, initial_max_stream_data_bidi_remote,
	    initial_max_stream_data_uni, initial_max_streams_bidi, initial_max_streams_uni,
	    max_datagram_frame_size;
	const uint8_t *scid; /* initial_source_connection_id, scid_len bytes (at most 20) */
	size_t scid_len;
	uint8_t google_options[4];
	uint32_t grease_version;
	bool grease_version_first;
	uint64_t grease_id;
	uint8_t grease[TLS_QUIC_TP_GREASE_MAX];
	size_t grease_len;
	uint8_t order[TLS_QUIC_TPS];
};

/* Writes tp; its length, or 0 if it does not fit, a value is past 2^62,
 * order is no permutation or grease_id is no GREASE id. */
size_t tls_quic_tp_put(uint8_t *out, size_t cap, const struct tls_quic_tp *tp);

/*
 * Walks a transport parameters body: the parameter at *off (its id and
 * value) and *off moved past it; 1, or 0 at the end, -1 if it does not parse
 * (a varint or value past the end).
 */
int tls_quic_tp_next(const uint8_t *in, size_t len, size_t *off, uint64_t *id, const uint8_t **val,
                     size_t *val_len);

/* Whether a transport parameters body parses whole, no id twice among the
 * first 64 (RFC 9000 7.4: a repeated parameter is an error). */
bool tls_quic_tp_ok(const uint8_t *in, size_t len);

/* ---- what the server sends ---- */

/*
 * A ServerHello body. hrr: its random is RFC 8446's HelloRetryRequest
 * value; then share_group is the group the server asks for and share is
 * NULL, and cookie is the cookie it wants echoed (or NULL). version is 0
 * without a supported_versions extension (a TLS 1.2 server).
 */
struct tls_sh {
	bool hrr;
	const uint8_t *random;
	const uint8_t *sid;
	size_t sid_len;
	uint16_t cipher;
	uint16_t version;
	uint16_t share_group;
	const uint8_t *share;
	size_t share_len;
	const uint8_t *cookie;
	size_t cookie_len;
};

bool tls_sh_get(struct tls_sh *sh, const uint8_t *body, size_t len);

/*
 * EncryptedExtensions: the ALPN protocol the server chose (NULL if none);
 * alps, whether it answered application_settings; quic_tp, the body of
 * quic_transport_parameters if it sent one (NULL if not; a TCP hello never
 * offers it, so the engine refuses it there); unsolicited, whether it sent
 * an extension neither hello offers. One extension twice refuses the
 * message.
 */
struct tls_ee {
	const uint8_t *alpn;
	size_t alpn_len;
	const uint8_t *quic_tp;
	size_t quic_tp_len;
	bool alps, unsolicited;
};

bool tls_ee_get(struct tls_ee *ee, const uint8_t *body, size_t len);

/* A Certificate message: its request context and up to TLS_CHAIN_MAX
 * DER certificates, the leaf first (the entries' extensions are skipped). */
#define TLS_CHAIN_MAX 10

struct tls_chain {
	size_t n;
	const uint8_t *der[TLS_CHAIN_MAX];
	size_t len[TLS_CHAIN_MAX];
};

bool tls_cert_get(struct tls_chain *chain, size_t *ctx_len, const uint8_t *body, size_t len);

/* CertificateVerify: the signature scheme and the signature. */
bool tls_cv_get(uint16_t *scheme, const uint8_t **sig, size_t *sig_len, const uint8_t *body,
                size_t len);

/* NewSessionTicket: checked for shape only (this client keeps no tickets). */
bool tls_nst_get(const uint8_t *body, size_t len);

/* KeyUpdate: whether the peer asks for one back. */
bool tls_ku_get(bool *requested, const uint8_t *body, size_t len);

/* An alert record's body. */
bool tls_alert_get(uint8_t *level, uint8_t *desc, const uint8_t *body, size_t len);

/* ---- what a server sends (src/tls/server.c) ---- */

/* A ServerHello message (header included) from sh: its random (RFC 8446's
 * HelloRetryRequest value if hrr), sid, cipher, then supported_versions
 * (left out if version is 0) and key_share (share_group alone if share is
 * NULL); its length, or 0 if it does not fit in cap. For tests and
 * fuzzers: a front takes its ServerHello from the target. */
size_t tls_sh_put(uint8_t *out, size_t cap, const struct tls_sh *sh);

/* An EncryptedExtensions message (header included) naming the ALPN
 * protocol alpn (alpn_len bytes, 1 to 255), or empty if alpn is NULL; its
 * length, or 0 if it does not fit in cap. */
size_t tls_ee_put(uint8_t *out, size_t cap, const uint8_t *alpn, size_t alpn_len);

/* A Certificate message (header included): an empty request context, then
 * chain->n DER certificates (leaf first), none with extensions; its length,
 * or 0 if it does not fit in cap (or chain->n is 0 or a certificate is
 * empty or over 2^24 - 1 bytes). */
size_t tls_cert_put(uint8_t *out, size_t cap, const struct tls_chain *chain);

/* A CertificateVerify message (header included): scheme and the signature. */
size_t tls_cv_put(uint8_t *out, size_t cap, uint16_t scheme, const uint8_t *sig, size_t sig_len);

/* Alert descriptions this side sends or names. */
enum {
	TLS_ALERT_CLOSE_NOTIFY = 0,
	TLS_ALERT_UNEXPECTED_MESSAGE = 10,
	TLS_ALERT_BAD_RECORD_MAC = 20,
	TLS_ALERT_RECORD_OVERFLOW = 22,
	TLS_ALERT_HANDSHAKE_FAILURE = 40,
	TLS_ALERT_BAD_CERTIFICATE = 42,
	TLS_ALERT_ILLEGAL_PARAMETER = 47,
	TLS_ALERT_DECODE_ERROR = 50,
	TLS_ALERT_DECRYPT_ERROR = 51,
	TLS_ALERT_PROTOCOL_VERSION = 70,
	TLS_ALERT_INTERNAL_ERROR = 80,
	TLS_ALERT_MISSING_EXTENSION = 109,
	TLS_ALERT_UNSUPPORTED_EXTENSION = 110,
	TLS_ALERT_NO_APPLICATION_PROTOCOL = 120,
};

#endif
