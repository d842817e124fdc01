/*
 * The control protocol between yipd and yipctl (see docs/control.md): a
 * client connects to the device's Unix stream socket, sends one request line
 * and reads one JSON document, then the daemon closes the connection.
 *
 * ctl.c and render.c are pure: they parse request lines, copy the engine's
 * state into a snapshot, turn a snapshot into JSON, and turn JSON back into
 * text for people, so that all of it can be unit-tested and fuzzed without
 * sockets. server.c is the daemon's side of the socket, driven by the event
 * loop's fd registry (src/poll) and never blocking it.
 */
#ifndef YIP_CTL_CTL_H
#define YIP_CTL_CTL_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include "addr/addr.h"
#include "config/config.h"
#include "crypto/crypto.h"
#include "fec/policy.h"
#include "flow/flow.h"
#include "peer/peer.h"
#include "util/log.h"

#define YIP_CTL_DEFAULT_DIR "/run/yip"
#define YIP_CTL_DIR_ENV     "YIP_CTL_DIR" /* overrides the directory (tests); read in src/cmd */
#define YIP_CTL_SUFFIX      ".sock"
#define YIP_CTL_MAX_REQUEST 256         /* bytes of a request line, newline included */
#define YIP_CTL_REQUEST_MS  1000        /* a client has this long to send its request */
#define YIP_CTL_REPLY_MS    2000        /* and this long to read the reply */
#define YIP_CTL_MAX_REPLY   (64u << 20) /* yipctl refuses longer replies */

/* ---- Requests ---- */

enum yip_ctl_cmd {
	YIP_CTL_SHOW,     /* "show" or "show <peer public key>" */
	YIP_CTL_STATS,    /* "stats" */
	YIP_CTL_MEMBERS,  /* "members": a CA-gated network's members (docs/membership.md) */
	YIP_CTL_RELOAD,   /* "reload": the configuration file read again and applied */
	YIP_CTL_LOG,      /* "log" or "log <level>": the daemon's log level, shown or set */
	YIP_CTL_METRICS,  /* "metrics": Prometheus text (docs/operations.md, "Metrics") */
	YIP_CTL_PING,     /* "ping <target>" (a round of probes) or "ping <target> poll" */
	YIP_CTL_NETCHECK, /* "netcheck" or "netcheck probe" (fresh probes first) */
};

#define YIP_CTL_TARGET_MAX 96 /* a ping's target: key, member name or address */

struct yip_ctl_request {
	enum yip_ctl_cmd cmd;
	bool has_peer;
	uint8_t peer[YIP_KEY_LEN];
	bool has_level; /* log <level> */
	enum yip_log_level level;
	char target[YIP_CTL_TARGET_MAX + 1]; /* ping */
	bool poll;                           /* ping: only read; netcheck: probe first */
};

/*
 * Parses one request line of len bytes, without its terminating newline (a
 * trailing '\r' is allowed). Words are separated by spaces or tabs; any other
 * control byte, a byte outside ASCII, or a line of YIP_CTL_MAX_REQUEST bytes
 * or more is an error. Returns 0, or -1 with a message in err.
 */
int yip_ctl_parse_request(const char *line, size_t len, struct yip_ctl_request *req, char *err,
                          size_t errlen);

/* ---- What the engine does not keep ---- */

/* The device's name and the port the daemon listens on (every peer's
 * allowed IPs are the engine's). */
struct yip_ctl_config {
	char device[IFNAMSIZ];
	uint16_t listen_port;
};

void yip_ctl_config_init(struct yip_ctl_config *c, const char *device, uint16_t listen_port);

/* ---- Snapshots of the engine ---- */

/* The link a current path uses (link/link.h), as the loop describes it. */
struct yip_ctl_link {
	const char *kind;    /* "udp", "tls"; NULL: not filled in */
	const char *version; /* TLS: "TLSv1.3" */
	const char *cipher, *sni, *alpn;
	bool accepted; /* TLS: the other end dialed */
};

struct yip_ctl_peer {
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t address[YIP_ADDR_LEN];
	bool has_endpoint;
	union yip_sockaddr endpoint;
	const struct yip_cidr *allowed_ips; /* points into the snapshot's allowed */
	size_t n_allowed_ips;
	bool established;
	uint64_t unanswered_s;     /* seconds our handshakes have gone unanswered, 0 = not */
	const char *hint;          /* why, once that is long enough (static); NULL = none */
	uint64_t latest_handshake; /* Unix seconds, 0 = never */
	const char *cipher;        /* of the current session; NULL = none */
	double rtt_ms;             /* negative = unknown */
	double loss_estimate;      /* fraction, 0..1 */
	struct yip_peer_stats stats;
	uint64_t recovery_mem; /* bytes loss recovery holds for the peer now */
	struct fec_params fec[FLOW_CLASSES];
	/* Paths (docs/nat.md): the current one, since when, why relayed, the candidates. */
	bool has_path;
	char path[YIP_ADDRSTRLEN + 16];
	uint64_t path_age_s;
	const char *relayed_why; /* static strings from the engine; NULL = not relayed */
	const char *nat;         /* the peer's NAT mapping */
	uint32_t path_link;
	struct yip_ctl_link link; /* of the current path: filled in by the loop */
	unsigned n_paths;
	struct yip_path_info paths[YIP_MAX_PATHS];
	/* CA-gated networks: added at run time, a root, its certificate. */
	bool dynamic, root, handshaking, has_cert;
	struct wire_cert cert;
};

/* A CA-gated node's membership (present: the node is one). */
struct yip_ctl_membership {
	bool present;
	char network[WIRE_NETWORK_MAX + 1];
	struct wire_cert cert; /* ours */
	enum member_verdict cert_verdict;
	uint64_t now_unix; /* when the snapshot was taken, for expiry */
	bool has_roots, has_revocations;
	uint64_t roots_serial, revocations_serial, n_revoked;
	uint64_t no_cert, refused[MEMBER_VERDICT_COUNT], admitted, removed;
	uint64_t intros_held, intros_used, asks_refused;
	uint64_t roots_older, revocations_older;
	bool gossip;
	uint64_t gossip_items, gossip_neighbours, gossip_active;
	uint64_t gossip_tx_msgs, gossip_tx_bytes, gossip_rx_msgs, gossip_rx_bytes;
	uint64_t gossip_accepted, gossip_drops;
};

/* The event loop's side: how packets move, and what its offloads and queue did. */
struct yip_ctl_datapath {
	bool present;   /* false: not filled in (no "datapath" in replies) */
	const char *io; /* "epoll", "uring", "uring-busy" */
	unsigned workers;
	bool tun_offload, udp_gso, udp_gro;
	uint64_t tso_reads, tso_segments; /* super-packets read, segments cut from them */
	uint64_t gro_coalesced;           /* segments merged into a previous one on delivery */
	uint64_t udp_trains, udp_train_datagrams;
	uint64_t aqm_marks, aqm_drops; /* CoDel signals: CE marks, drops (both queues) */
	uint64_t timer_runs;           /* peers whose timers ran (each due peer once per tick) */
	/* TLS links (docs/transports.md). */
	uint64_t tls_links, tls_dialed, tls_accepted, tls_opened, tls_failed, tls_refused_full,
	    tls_refused_busy;
	uint64_t tls_bad_frames;
	/* The QUIC listener's HTTP/3 decoy (docs/quic-decoy.md): requests answered,
	 * streams refused (too many, headers or body too big), streams reset as
	 * malformed, connections it ended. */
	uint64_t quic_decoy_requests, quic_decoy_refused, quic_decoy_malformed, quic_decoy_errors;
};

struct yip_ctl_snapshot {
	char device[IFNAMSIZ];
	uint8_t public_key[YIP_KEY_LEN];
	uint8_t address[YIP_ADDR_LEN];
	uint16_t listen_port;
	bool fec;
	bool obf;        /* obf_psk is set */
	const char *nat; /* our NAT mapping as the rendezvous servers show it */
	struct yip_server_info servers[YIP_MAX_RENDEZVOUS];
	struct yip_ctl_link server_links[YIP_MAX_RENDEZVOUS]; /* filled in by the loop */
	/* Why the loop's last TLS or REALITY dial to server i failed, while it
	 * has no link (filled in by the loop; NULL: none). */
	const char *server_dial_error[YIP_MAX_RENDEZVOUS];
	size_t n_servers;
	uint64_t drops[YIP_DROP_COUNT];
	struct yip_ctl_peer *peers; /* heap array */
	size_t n_peers;
	struct yip_cidr *allowed; /* heap array: every peer's allowed IPs, in order */
	struct yip_ctl_membership members;
	struct yip_ctl_datapath datapath; /* filled in by the loop after the snapshot */
	struct yip_device_totals totals;  /* counters that only grow (metrics) */
	/* Metrics' settings, filled in by the loop (zero: no per-peer series). */
	uint64_t start_time_s; /* the process's start, Unix seconds (0: unknown) */
	bool metrics_peers;    /* metrics_peers = on */
};

/*
 * Copies the device's state at monotonic time now (ns); c supplies the name,
 * port and allowed IPs and may be NULL. Returns 0, or -1 (out of memory).
 */
int yip_ctl_snapshot_take(struct yip_ctl_snapshot *s, const struct yip_ctl_config *c,
                          const struct yip_device *dev, uint64_t now);
void yip_ctl_snapshot_free(struct yip_ctl_snapshot *s);

/* ---- Replies ---- */

/*
 * The reply to one request line (as for yip_ctl_parse_request): a JSON
 * document and a newline, NUL-terminated, in a heap buffer the caller frees;
 * *out_len is its length without the NUL. A bad request or an unknown peer
 * gives {"error": "..."}. NULL only when out of memory.
 */
char *yip_ctl_reply(const struct yip_ctl_snapshot *s, const char *line, size_t len,
                    size_t *out_len);

/* {"error": msg} and a newline, as above. */
char *yip_ctl_error_reply(const char *msg, size_t *out_len);

/* {"log_level": "<level>"} and a newline: the reply to "log" and "log
 * <level>", which the daemon's loop answers itself (it sets the level). */
char *yip_ctl_log_reply(enum yip_log_level level, size_t *out_len);
/* ---- Metrics (metrics.c; docs/operations.md, "Metrics") ---- */

/* Per-peer series for at most this many peers (metrics_peers = on). */
#define YIP_CTL_METRICS_MAX_PEERS 64

/*
 * The snapshot as Prometheus text exposition (format 0.0.4), NUL-terminated,
 * in a heap buffer the caller frees; *out_len is its length without the NUL.
 * NULL only when out of memory. The reply to a "metrics" request.
 */
char *yip_ctl_metrics(const struct yip_ctl_snapshot *s, size_t *out_len);

/* ---- Rendering replies for people (yipctl) ---- */

enum yip_ctl_view {
	YIP_CTL_VIEW_SHOW,    /* like `wg show` */
	YIP_CTL_VIEW_PEERS,   /* one line per peer */
	YIP_CTL_VIEW_STATS,   /* drop counters */
	YIP_CTL_VIEW_JSON,    /* the document, pretty-printed */
	YIP_CTL_VIEW_MEMBERS, /* a CA-gated network's members */
	YIP_CTL_VIEW_RELOAD,  /* what a reload changed: "+1 ~1 -0", a line each */
	YIP_CTL_VIEW_LOG,     /* "log level: info" */
};

/*
 * Writes a reply of len bytes (any bytes at all) to out as view v, with
 * now_s the current Unix time for "12 seconds ago". Fields that are missing
 * or of the wrong type are shown as unknown; control characters in strings
 * are replaced. Returns 0, or -1 with a message in err when the reply is not
 * a JSON object or is an error reply (err then holds the daemon's message).
 */
int yip_ctl_render(FILE *out, enum yip_ctl_view v, const char *json, size_t len, uint64_t now_s,
                   char *err, size_t errlen);

/* "1 hour, 2 minutes, 5 seconds" (no "ago"); "0 seconds" for 0. */
void yip_ctl_format_duration(char *out, size_t outlen, uint64_t secs);

/* "512 B", "1.20 KiB", "3.40 MiB", ... up to EiB. */
void yip_ctl_format_bytes(char *out, size_t outlen, uint64_t bytes);

/* ---- Replies ---- */

struct cJSON;

/* o as one line of JSON and a newline (o is freed); NULL if o is NULL or out of memory. */
char *yip_ctl_json_line(struct cJSON *o, size_t *out_len);

/* ---- Reload (docs/control.md, "reload") ---- */

#define YIP_CTL_RELOAD_LINES 64

/* What a reload did, or why it did nothing. */
struct yip_ctl_reload {
	bool ok;
	unsigned added, changed, removed;      /* peers */
	char error[512];                       /* !ok: why */
	char lines[YIP_CTL_RELOAD_LINES][160]; /* each change, for people */
	size_t n_lines, more;                  /* more: changes past the lines */
};

/* Adds a line to r (counted in more when r is full). */
void yip_ctl_reload_note(struct yip_ctl_reload *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The reply to "reload": {"reload": {...}} or {"error": ...}; NULL if out of memory. */
char *yip_ctl_reload_reply(const struct yip_ctl_reload *r, size_t *out_len);

/* ---- Socket paths ---- */

/* The socket directory: override (the value of $YIP_CTL_DIR, which the
 * programs read) if not NULL and not empty, else YIP_CTL_DEFAULT_DIR. */
const char *yip_ctl_dir(const char *override);

/*
 * Writes dir/device.sock. Returns 0, or -1 if device is not a valid
 * interface name (empty, too long, '/', '.' or '..') or the path does not
 * fit a Unix socket address.
 */
int yip_ctl_socket_path(char *out, size_t outlen, const char *dir, const char *device);

/* ---- The client's side (client.c) ---- */

/*
 * Connects to the socket at path, sends request and a newline, and reads
 * the whole reply into *out (NUL-terminated, the caller frees; at most
 * YIP_CTL_MAX_REPLY bytes), each step bounded by timeout_s seconds.
 * Returns 0; or -1 with *conn_errno set when the connection itself failed
 * (ENOENT, ECONNREFUSED: no daemon; EACCES: not allowed), or with
 * *conn_errno 0 and a message in err for anything later.
 */
int yip_ctl_ask(const char *path, const char *request, int timeout_s, char **out, size_t *out_len,
                int *conn_errno, char *err, size_t errlen);

/* ---- The daemon's side of the socket (server.c) ---- */

/* Builds a reply (as yip_ctl_reply) for a request line; NULL when out of memory. */
typedef char *(*yip_ctl_reply_fn)(void *ctx, const char *line, size_t len, size_t *out_len);

struct yip_poll;

struct yip_ctl_server {
	int fd;                 /* listening, -1 = none */
	int client;             /* the one client being served, -1 = none */
	struct yip_poll *poll;  /* where both are watched; NULL = not yet */
	yip_ctl_reply_fn reply; /* answers a request */
	void *reply_ctx;
	int dirfd;        /* the socket's directory, for what is done by name in it; -1 = none */
	const char *name; /* the socket file's name in it (a suffix of path) */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;    /* of the socket file we made, to unlink only ours */
	uid_t owner;       /* besides root, the one user whose clients are served */
	uint64_t deadline; /* monotonic ns; 0 = no client */
	bool writing;
	char req[YIP_CTL_MAX_REQUEST];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
	uint64_t served, refused;
};

/*
 * Creates dir (0700) if missing and listens on dir/device.sock (0600),
 * replacing a stale socket file but never a live daemon's. An existing dir
 * must be a directory, not a symbolic link, owned by root or by owner, and
 * writable by no one else: whoever can write there could put a socket of
 * their own in place of ours and answer yipctl. owner is the user the
 * daemon runs as once sandboxed (src/sandbox), who is also the one user
 * besides root whose requests are answered. Returns 0, or -1 with a message
 * in err (s is then closed).
 */
int yip_ctl_server_open(struct yip_ctl_server *s, const char *dir, const char *device, uid_t owner,
                        char *err, size_t errlen);

/*
 * Watches the listening socket on p (src/poll), and each client it takes:
 * one client at a time is served, the others turned away; requests are
 * answered by reply(ctx, ...). 0, or -1 with errno.
 */
int yip_ctl_server_watch(struct yip_ctl_server *s, struct yip_poll *p, yip_ctl_reply_fn reply,
                         void *ctx);

/* Drops the client if its deadline has passed; returns the deadline still pending, or 0. */
uint64_t yip_ctl_server_expire(struct yip_ctl_server *s, uint64_t now);

/* Closes everything and removes the socket file if it is still ours. Safe to repeat. */
void yip_ctl_server_close(struct yip_ctl_server *s);

#endif
