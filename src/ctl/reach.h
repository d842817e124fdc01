/*
 * Reachability: the ping and netcheck requests (docs/control.md, "ping"
 * and "netcheck"). The daemon's side builds their replies from the
 * engine's ping rounds and rendezvous state (the loop sends the probes);
 * yipctl's side reads the replies back and prints them. All pure.
 */
#ifndef YIP_CTL_REACH_H
#define YIP_CTL_REACH_H

#include <arpa/inet.h>

#include "ctl/ctl.h"

/* ---- The daemon's side ---- */

/*
 * The peer a ping's target names in snapshot s: its public key (64 hex
 * digits), its member name, its key-derived address, or an address inside
 * its allowed IPs. Returns its index in s->peers, or -1 with a message in err.
 */
int yip_ctl_resolve_peer(const struct yip_ctl_snapshot *s, const char *target, char *err,
                         size_t errlen);

/*
 * The reply to ping: peer k of s, status the enum yip_ping_status of the
 * round just asked for (polled: none was), pi its rounds. As yip_ctl_reply.
 */
char *yip_ctl_ping_reply(const struct yip_ctl_snapshot *s, size_t k, int status, bool polled,
                         const struct yip_ping_info *pi, size_t *out_len);

/* The reply to netcheck from s; probed: fresh probes went out just now. */
char *yip_ctl_netcheck_reply(const struct yip_ctl_snapshot *s, bool probed, size_t *out_len);

/* ---- yipctl's side ---- */

#define YIP_CTL_PING_NAME_MAX 64

struct yip_ctl_pong {
	bool relay;
	int server; /* relay: the server's index */
	char address[YIP_ADDRSTRLEN];
	bool answered;
	double rtt_ms;
};

struct yip_ctl_ping_reply {
	char status[16]; /* "sent", "polled", "no_session", "too_soon", "no_path" */
	char peer[2 * YIP_KEY_LEN + 1];
	char name[YIP_CTL_PING_NAME_MAX + 1]; /* member name, else the key's first 8 digits */
	char address[INET6_ADDRSTRLEN];       /* key-derived */
	uint64_t round;
	unsigned n;
	struct yip_ctl_pong pongs[YIP_MAX_PATHS];
};

/* Reads a ping reply; -1 with a message in err (the daemon's, for an error reply). */
int yip_ctl_ping_parse(const char *json, size_t len, struct yip_ctl_ping_reply *r, char *err,
                       size_t errlen);

/* "pong from NAME (ADDR) via direct A:P in 1.234 ms" or "... via relay A:P
 * (rendezvous server N) in ...", and a newline. */
void yip_ctl_pong_line(FILE *out, const struct yip_ctl_ping_reply *r, unsigned k);

/* What a run of pings saw, for the summary line and the exit status. */
struct yip_ctl_ping_tally {
	unsigned rounds, probes, direct, relayed;
	double min_ms, max_ms, sum_ms;
	bool has_direct;
	char direct_addr[YIP_ADDRSTRLEN]; /* the first direct pong's */
};

void yip_ctl_ping_count(struct yip_ctl_ping_tally *t, const struct yip_ctl_ping_reply *r,
                        unsigned k);

/* The summary line(s); returns the exit status: 0 a direct pong, 3 only
 * relayed ones, 1 none. */
int yip_ctl_ping_summary(FILE *out, const struct yip_ctl_ping_tally *t, const char *name);

/* netcheck's report for people (docs/control.md); -1 with a message in err
 * when the reply is not one (the daemon's message for an error reply). */
int yip_ctl_netcheck_render(FILE *out, const char *json, size_t len, char *err, size_t errlen);

/* The exit status for a netcheck reply: 0 if some server answered, 1 if none. */
int yip_ctl_netcheck_status(const char *json, size_t len);

#endif
