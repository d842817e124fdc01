/*
 * yip-rendezvous: the rendezvous server daemon (src/rendezvous on
 * src/rdvloop/rdvloop.c), and `yip-rendezvous status`, its status client.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "config/keytext.h"
#include "crypto/crypto.h"
#include "ctl/ctl.h"
#include "ctl/rendezvous.h"
#include "poll/notify.h"
#include "rdvloop/rdvloop.h"
#include "rendezvous/conf.h"
#include "rendezvous/rendezvous.h"
#include "sandbox/sandbox.h"
#include "udp/udp.h"
#include "util/file.h"
#include "util/hex.h"
#include "util/log.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

#define IO_TIMEOUT_S       5   /* status: for connecting, sending and each read */
#define BUSY_RETRIES       20  /* the daemon serves one client at a time */
#define OPT_SETTING        256 /* getopt values OPT_SETTING + enum rdv_conf_key */
#define OPT_METRICS_LISTEN 200
#define OPT_METRICS_REMOTE 201

/* --metrics-listen (docs/operations.md, "Metrics"); NULL: none. */
static const union yip_sockaddr *metrics_listen;

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: yip-rendezvous [options] --key FILE    run the server in the foreground\n"
	    "       yip-rendezvous --genkey                print a new key pair (a key file)\n"
	    "       yip-rendezvous --reality-genkey        print a new REALITY key pair (the\n"
	    "                                              private key file, the nodes' pbk)\n"
	    "       yip-rendezvous --pubkey                read a private key or key file on\n"
	    "                                              stdin, print its public key\n"
	    "       yip-rendezvous status [--json] [--summary | node-public-key]\n"
	    "                                              ask the running server (--summary:\n"
	    "                                              without the list of nodes)\n"
	    "       yip-rendezvous --version | --help\n"
	    "\n"
	    "options (each also a key=value line of --config, named with '_' for '-'):\n"
	    "  --listen ADDR:PORT   main UDP socket (default 0.0.0.0:%d; [::]:PORT for IPv6\n"
	    "                       and IPv4)\n"
	    "  --alt-port N         second UDP port, for NAT mapping probes (default: the\n"
	    "                       listen port + 1; 0: none)\n"
	    "  --key FILE           the key file (--genkey's output, mode 0600)\n"
	    "  --relay on|off       forward datagrams between introduced nodes (default on)\n"
	    "  --relay-rate BYTES   per node, per second (K, M, G suffixes; default 128M)\n"
	    "  --relay-burst BYTES  per node, at once above the rate (default 8M)\n"
	    "  --max-nodes N        registered at once (default 100000)\n"
	    "  --obf-psk HEX        obfuscate every datagram with this network key (64 hex\n"
	    "                       digits; the nodes' obf_psk); better set in --config\n"
	    "  --user NAME          run as NAME once set up (default %s if it exists, else %s)\n"
	    "  --metrics-listen ADDR:PORT  Prometheus metrics on http://ADDR:PORT/metrics\n"
	    "                       (a loopback address, unless --metrics-remote)\n"
	    "  --metrics-remote     allow a --metrics-listen address that is not loopback\n"
	    "  --sandbox on|log|off the user, no_new_privs and a seccomp allow-list\n"
	    "                       (log: only log what it would refuse; default on)\n"
	    "  --ca KEY             admit only members certified by this CA (yip-ca pubkey)\n"
	    "  --network NAME       ... of this network (both needed: docs/membership.md)\n"
	    "  --revocations FILE   a revocation list of that CA (yip-ca revoke; SIGHUP:\n"
	    "                       read it again)\n"
	    "  --listen-tcp ADDR:PORT  a TLS front on TCP (e.g. 0.0.0.0:443): nodes over\n"
	    "                       TLS; every other visitor gets the decoy\n"
	    "  --tls-cert FILE      the front's certificate chain (PEM, leaf first)\n"
	    "  --tls-key FILE       ... and its private key (PEM); both needed\n"
	    "  --decoy HOST:PORT    a plain HTTP server for visitors that are not nodes\n"
	    "                       (default: a built-in static site)\n"
	    "  --reality-dest HOST:PORT  a REALITY front on --listen-tcp instead: visitors\n"
	    "                       are spliced to this real site; sealed hellos are nodes\n"
	    "  --reality-private-key FILE  its key (--reality-genkey's output, mode 0600)\n"
	    "  --reality-short-id HEX  a short id nodes seal (0-16 hex digits; repeatable)\n"
	    "  --reality-server-name NAME  an SNI nodes send (the site's; repeatable)\n"
	    "  --listen-quic ADDR:PORT  nodes over QUIC on this UDP address (e.g.\n"
	    "                       0.0.0.0:443); --tls-cert/--tls-key, else self-signed\n"
	    "  --config FILE        read settings from FILE; options given here win\n"
	    "  -v                   debug logging\n"
	    "  --log-format F       text (default) or json: one JSON object per line\n"
	    "\n"
	    "The status socket is %s/%s%s (%s changes the directory).\n"
	    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error.\n"
	    "Reference: docs/rendezvous.md; the status: docs/control.md\n",
	    RDV_DEFAULT_PORT, SANDBOX_OWN_USER, SANDBOX_DEFAULT_USER, YIP_CTL_DEFAULT_DIR,
	    YIP_RDV_CTL_NAME, YIP_CTL_SUFFIX, YIP_CTL_DIR_ENV);
}

static int cmd_genkey(void)
{
	return keytext_genkey(stdout) == 0 ? 0 : EXIT_RUNTIME;
}

static int cmd_pubkey(void)
{
	char reason[160];
	int rc = keytext_pubkey(stdin, stdout, reason, sizeof(reason));

	if (rc == -1)
		fprintf(stderr, "yip-rendezvous: --pubkey: %s\n", reason);
	return rc == 0 ? 0 : rc == -1 ? EXIT_USAGE : EXIT_RUNTIME;
}

/* ---- files ------------------------------------------------------------------------- */

/*
 * Reads a small regular file into a fresh buffer (wiped and freed by
 * drop_text). A key file (secret) must give group and others no access.
 * Returns 0, or -1 with a message in err.
 */
static int read_text(const char *path, bool secret, char **out, size_t *out_len, char *err,
                     size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc;

	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (secret && (st.st_mode & 077) != 0) {
		snprintf(err, errlen,
		         "%s: mode %04o lets group or others at the private key; refusing it "
		         "(chmod 600 %s)",
		         path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -1;
	}
	rc = yip_read_fd(fd, RDV_CONF_FILE_LIMIT, out, out_len);
	close(fd);
	if (rc == -EFBIG)
		snprintf(err, errlen, "%s: longer than %d bytes", path, RDV_CONF_FILE_LIMIT);
	else if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (rc != 0)
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(-rc));
	return rc == 0 ? 0 : -1;
}

static void drop_text(char *text, size_t len)
{
	if (text == NULL)
		return;
	sodium_memzero(text, len);
	free(text);
}

/* ---- the server ------------------------------------------------------------------- */

static int open_sockets(const struct rdv_conf *c, int fd[RDV_SOCKS], char *err, size_t errlen)
{
	union yip_sockaddr alt = c->listen;
	uint16_t port = rdv_conf_alt_port(c), bound;

	fd[RDV_SOCK_MAIN] = fd[RDV_SOCK_ALT] = -1;
	fd[RDV_SOCK_MAIN] = udp_open(&c->listen, true, 0, 0, &bound, err, errlen);
	if (fd[RDV_SOCK_MAIN] < 0 || port == 0)
		return fd[RDV_SOCK_MAIN] < 0 ? -1 : 0;
	if (alt.sa.sa_family == AF_INET)
		alt.in4.sin_port = htons(port);
	else
		alt.in6.sin6_port = htons(port);
	fd[RDV_SOCK_ALT] = udp_open(&alt, true, 0, 0, &bound, err, errlen);
	if (fd[RDV_SOCK_ALT] < 0) {
		close(fd[RDV_SOCK_MAIN]);
		fd[RDV_SOCK_MAIN] = -1;
		return -1;
	}
	return 0;
}

/*
 * The members-only gate of c, with its revocation list read from its file
 * (checked: this CA, this network). 0, or -1 with a message in err. *revs
 * is allocated (the list is up to 135 KB) and freed by the caller.
 */
static int load_members(const struct rdv_conf *c, struct rdv_members *m,
                        struct member_revocations **revs, char *err, size_t errlen)
{
	struct member_revocations *r;
	enum member_verdict v;
	uint8_t *raw;
	char *text, why[200];
	size_t len, rlen;
	int rc;

	memset(m, 0, sizeof(*m));
	memcpy(m->ca_public, c->ca, MEMBER_SIGN_PUBLIC);
	snprintf(m->network, sizeof(m->network), "%s", c->network);
	*revs = NULL;
	if (c->revocations_file[0] == '\0')
		return 0;
	if (read_text(c->revocations_file, false, &text, &len, err, errlen) != 0)
		return -1;
	raw = malloc(WIRE_REVOCATIONS_MAX);
	r = malloc(sizeof(*r));
	if (raw == NULL || r == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else if (member_unarmor(text, len, WIRE_OBJ_REVOCATIONS, raw, WIRE_REVOCATIONS_MAX, &rlen,
	                          why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%.200s: %s", c->revocations_file, why);
		rc = -1;
	} else if ((v = member_revocations_parse(r, raw, rlen)) != MEMBER_OK ||
	           (v = member_revocations_check(r, c->ca, c->network, 0)) != MEMBER_OK) {
		snprintf(err, errlen, "%.200s: %s", c->revocations_file, member_verdict_text(v));
		rc = -1;
	} else {
		m->revs = *revs = r;
		r = NULL;
		rc = 0;
	}
	free(raw);
	free(r);
	free(text);
	return rc;
}

static bool has_revocations(const struct rdv_conf *c)
{
	return c->has_ca && c->revocations_file[0] != '\0';
}

/* What SIGHUP reads again: the members-only gate and its revocation list. */
struct gate {
	const struct rdv_conf *conf;
	struct member_revocations *revs;    /* in force (NULL: none) */
	struct member_revocations *retired; /* replaced at the last reload: freed at the next */
};

/*
 * The loop's reload (SIGHUP): the revocation list read again. A file that
 * cannot be read or checked, or a list older than the one in force (a
 * rollback would re-admit revoked members), leaves the gate as it is.
 */
static int reload_gate(void *arg, struct rdv_members *m)
{
	struct gate *g = arg;
	struct member_revocations *revs;
	char err[512];

	/* The engine moved off the retired list when the last reload returned. */
	free(g->retired);
	g->retired = NULL;
	if (load_members(g->conf, m, &revs, err, sizeof(err)) != 0) {
		log_err("SIGHUP: %s; the revocation list in force stays", err);
		return -1;
	}
	if (revs != NULL && g->revs != NULL && revs->f.serial < g->revs->f.serial) {
		log_err("SIGHUP: %s has serial %" PRIu64 ", older than the %" PRIu64
		        " in force; keeping that one",
		        g->conf->revocations_file, revs->f.serial, g->revs->f.serial);
		free(revs);
		return -1;
	}
	g->retired = g->revs;
	g->revs = revs;
	return 0;
}

/* The REALITY front's settings: its key read, its target resolved (now:
 * the sandbox resolves nothing). */
static int reality_setup(const struct rdv_conf *c, struct rdv_reality_config *r, char *err,
                         size_t errlen)
{
	char *text, why[200];
	size_t len;
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (yip_endpoint_parse(c->reality_dest, 0, true, &r->target, NULL, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reality_dest %s: %s", c->reality_dest, why);
		return -1;
	}
	if (read_text(c->reality_key_file, true, &text, &len, err, errlen) != 0)
		return -1;
	rc = rdv_keyfile_parse(text, len, c->reality_key_file, r->seal.priv, err, errlen);
	drop_text(text, len);
	if (rc != 0)
		return -1;
	for (size_t i = 0; i < c->n_reality_names; i++)
		r->seal.names[i] = c->reality_names[i];
	r->seal.n_names = c->n_reality_names;
	memcpy(r->seal.ids, c->reality_ids, sizeof(r->seal.ids));
	r->seal.n_ids = c->n_reality_ids;
	return 0;
}

static int serve(const struct rdv_conf *c)
{
	struct rdv_config engine;
	struct rdv_loop_config lc;
	struct rdv_front_config front;
	struct rdv_reality_config reality = {.fd = -1};
	struct rdv_quic_config quic = {.fd = -1};
	char *cert = NULL, *key = NULL;
	size_t cert_len = 0, key_len = 0;
	struct rdv_members members;
	struct gate gate = {.conf = c};
	struct sandbox sb;
	struct yip_notify notify;
	enum yip_sandbox_mode mode = c->sandbox;
	const char *env = getenv("YIP_SANDBOX");
	char err[512], *text;
	size_t len;
	int rc;

	/* YIP_SANDBOX overrides the setting, as for yipd. */
	if (env != NULL && *env != '\0' && yip_config_sandbox_mode(env, &mode) != 0) {
		log_warn("ignoring YIP_SANDBOX=%s (want on, log or off)", env);
		mode = c->sandbox;
	}
	sandbox_nodump(); /* before the key is read: no core dump will hold it */
	/* A revocation list is read again on SIGHUP, from inside the sandbox. */
	if (sandbox_init(&sb, mode, c->user,
	                 SANDBOX_RENDEZVOUS | (has_revocations(c) ? SANDBOX_READ : 0u) |
	                     (c->has_tcp ? SANDBOX_TCP : 0u),
	                 err, sizeof(err)) != 0) {
		fprintf(stderr, "yip-rendezvous: %s\n", err);
		return EXIT_USAGE;
	}
	rdv_config_default(&engine);
	rdv_conf_engine(c, &engine);
	if (read_text(c->key_file, true, &text, &len, err, sizeof(err)) != 0) {
		fprintf(stderr, "yip-rendezvous: %s\n", err);
		return EXIT_USAGE;
	}
	rc = rdv_keyfile_parse(text, len, c->key_file, engine.private_key, err, sizeof(err));
	drop_text(text, len);
	if (rc != 0) {
		fprintf(stderr, "yip-rendezvous: %s\n", err);
		return EXIT_USAGE;
	}
	if (c->has_ca && load_members(c, &members, &gate.revs, err, sizeof(err)) != 0) {
		fprintf(stderr, "yip-rendezvous: %s\n", err);
		sodium_memzero(&engine, sizeof(engine));
		return EXIT_USAGE;
	}
	lc = (struct rdv_loop_config){
	    .members = c->has_ca ? &members : NULL,
	    .engine = &engine,
	    .family = c->listen.sa.sa_family,
	    .listen = c->listen,
	    .alt_port = rdv_conf_alt_port(c),
	    /* The status socket; the loop removes it when it stops. */
	    .ctl_dir = yip_ctl_dir(getenv(YIP_CTL_DIR_ENV)),
	    .sandbox = &sb,
	    .reload = has_revocations(c) ? reload_gate : NULL,
	    .reload_arg = &gate,
	};
	if (c->has_tcp && c->reality_dest[0] != '\0') {
		if (reality_setup(c, &reality, err, sizeof(err)) != 0) {
			fprintf(stderr, "yip-rendezvous: %s\n", err);
			sodium_memzero(&engine, sizeof(engine));
			free(gate.revs);
			return EXIT_USAGE;
		}
		lc.reality = &reality;
	} else if (c->has_tcp) {
		/* The decoy's name is resolved once, now: the sandbox resolves nothing. */
		front = (struct rdv_front_config){
		    .cert_path = c->tls_cert, .key_path = c->tls_key, .decoy = c->decoy[0] != '\0'};
		if (front.decoy && yip_endpoint_parse(c->decoy, 0, true, &front.decoy_addr, NULL,
		                                      err, sizeof(err)) != 0) {
			fprintf(stderr, "yip-rendezvous: decoy %s: %s\n", c->decoy, err);
			sodium_memzero(&engine, sizeof(engine));
			free(gate.revs);
			return EXIT_USAGE;
		}
		lc.front = &front;
	}
	if (c->has_quic) {
		/* The certificate and key are read now: the sandbox opens no files. */
		if (c->tls_cert[0] != '\0' &&
		    (read_text(c->tls_cert, false, &cert, &cert_len, err, sizeof(err)) != 0 ||
		     read_text(c->tls_key, false, &key, &key_len, err, sizeof(err)) != 0)) {
			fprintf(stderr, "yip-rendezvous: QUIC listener: %s\n", err);
			drop_text(cert, cert_len);
			sodium_memzero(&engine, sizeof(engine));
			free(gate.revs);
			return EXIT_USAGE;
		}
		quic = (struct rdv_quic_config){.fd = -1,
		                                .listen = c->listen_quic,
		                                .cert_pem = (const uint8_t *)cert,
		                                .cert_len = cert_len,
		                                .key_pem = (const uint8_t *)key,
		                                .key_len = key_len};
		lc.quic = &quic;
	}
	if (open_sockets(c, lc.fd, err, sizeof(err)) != 0 ||
	    (c->has_tcp && (*(lc.reality != NULL ? &reality.fd : &front.fd) =
	                        rdv_front_listen(&c->listen_tcp, err, sizeof(err))) < 0) ||
	    (c->has_quic && (quic.fd = rdv_quic_listen(&c->listen_quic, err, sizeof(err))) < 0)) {
		log_err("%s", err);
		drop_text(cert, cert_len);
		drop_text(key, key_len);
		for (unsigned s = 0; s < RDV_SOCKS; s++)
			if (lc.fd[s] >= 0)
				close(lc.fd[s]);
		sodium_memzero(&engine, sizeof(engine));
		free(gate.revs);
		free(gate.retired);
		return EXIT_RUNTIME;
	}
	/* The service manager's socket, connected before the sandbox; the
	 * variables removed so that children do not take them for theirs. */
	if (yip_notify_open(
	        &notify, getenv("NOTIFY_SOCKET"),
	        yip_notify_watchdog(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid()), err,
	        sizeof(err)) != 0)
		log_warn("%s; not notifying the service manager", err);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	lc.notify = &notify;
	lc.metrics_listen = metrics_listen;
	rc = rdv_loop_run(&lc) == 0 ? 0 : EXIT_RUNTIME;
	yip_notify_close(&notify);
	sodium_memzero(&reality, sizeof(reality));
	drop_text(cert, cert_len);
	drop_text(key, key_len);
	sodium_memzero(&engine, sizeof(engine));
	free(gate.revs);
	free(gate.retired);
	for (unsigned s = 0; s < RDV_SOCKS; s++)
		if (lc.fd[s] >= 0)
			close(lc.fd[s]);
	return rc;
}

/* ---- status ------------------------------------------------------------------------ */

static int cmd_status(int argc, char **argv)
{
	const char *dir = yip_ctl_dir(getenv(YIP_CTL_DIR_ENV)), *node = NULL;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], request[YIP_CTL_MAX_REQUEST];
	char err[512];
	bool json = false, summary = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--summary") == 0 || strcmp(argv[i], "-s") == 0) {
			summary = true;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "yip-rendezvous status: unknown option '%s'\n", argv[i]);
			return EXIT_USAGE;
		} else if (node == NULL) {
			uint8_t key[YIP_KEY_LEN];

			node = argv[i];
			if (yip_hex_decode(key, YIP_KEY_LEN, node) != 0) {
				fprintf(
				    stderr,
				    "yip-rendezvous status: a node public key is %d hex digits\n",
				    2 * YIP_KEY_LEN);
				return EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "yip-rendezvous status: too many arguments\n");
			return EXIT_USAGE;
		}
	}
	if (summary && node != NULL) {
		fprintf(stderr, "yip-rendezvous status: --summary lists no node\n");
		return EXIT_USAGE;
	}
	if (yip_ctl_socket_path(path, sizeof(path), dir, YIP_RDV_CTL_NAME) != 0) {
		fprintf(stderr, "yip-rendezvous status: the socket path under %s is too long\n",
		        dir);
		return EXIT_USAGE;
	}
	/* "stats" is everything but the nodes: for a server with many, a short reply. */
	if (summary)
		snprintf(request, sizeof(request), "stats");
	else
		snprintf(request, sizeof(request), node ? "show %s" : "show", node ? node : "");
	for (int attempt = 0;; attempt++) {
		char *reply = NULL;
		size_t len = 0;
		int e = 0;

		if (yip_ctl_ask(path, request, IO_TIMEOUT_S, &reply, &len, &e, err, sizeof(err)) !=
		    0) {
			if (e == ENOENT || e == ECONNREFUSED)
				fprintf(stderr,
				        "yip-rendezvous status: the server is not running (%s)\n",
				        err);
			else
				fprintf(stderr, "yip-rendezvous status: %s%s\n", err,
				        e == EACCES || e == EPERM ? " (it needs root)" : "");
			return EXIT_RUNTIME;
		}
		if (json)
			rc = yip_ctl_render(stdout, YIP_CTL_VIEW_JSON, reply, len, 0, err,
			                    sizeof(err));
		else
			rc = yip_rdv_ctl_render(stdout, reply, len, (uint64_t)time(NULL), SIZE_MAX,
			                        err, sizeof(err));
		free(reply);
		if (rc == 0)
			break;
		if (strncmp(err, "busy", 4) == 0 && attempt < BUSY_RETRIES) {
			struct timespec ts = {.tv_nsec = 50 * 1000 * 1000};

			nanosleep(&ts, NULL);
			continue;
		}
		fprintf(stderr, "yip-rendezvous status: %s\n", err);
		return EXIT_RUNTIME;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "yip-rendezvous status: writing output: %s\n", strerror(errno));
		return EXIT_RUNTIME;
	}
	return 0;
}

/* ---- the command line -------------------------------------------------------------- */

/* Under journald (JOURNAL_STREAM names our stderr): its line shape, no timestamp. */
static void log_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;

	yip_log_set_journal(js != NULL && fstat(STDERR_FILENO, &st) == 0 &&
	                    yip_log_journal_stream(js, (uint64_t)st.st_dev, (uint64_t)st.st_ino));
}

/* The long option that sets setting k. */
static const char *option_name(const struct option *opts, int k)
{
	for (; opts->name != NULL; opts++)
		if (opts->val == OPT_SETTING + k)
			return opts->name;
	return "?";
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"genkey", no_argument, NULL, 'g'},
	    {"metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN},
	    {"metrics-remote", no_argument, NULL, OPT_METRICS_REMOTE},
	    {"pubkey", no_argument, NULL, 'p'},
	    {"config", required_argument, NULL, 'c'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"log-format", required_argument, NULL, 'L'},
	    {"listen", required_argument, NULL, OPT_SETTING + RDV_CONF_LISTEN},
	    {"alt-port", required_argument, NULL, OPT_SETTING + RDV_CONF_ALT_PORT},
	    {"key", required_argument, NULL, OPT_SETTING + RDV_CONF_KEY},
	    {"relay", required_argument, NULL, OPT_SETTING + RDV_CONF_RELAY},
	    {"relay-rate", required_argument, NULL, OPT_SETTING + RDV_CONF_RELAY_RATE},
	    {"relay-burst", required_argument, NULL, OPT_SETTING + RDV_CONF_RELAY_BURST},
	    {"max-nodes", required_argument, NULL, OPT_SETTING + RDV_CONF_MAX_NODES},
	    {"obf-psk", required_argument, NULL, OPT_SETTING + RDV_CONF_OBF_PSK},
	    {"user", required_argument, NULL, OPT_SETTING + RDV_CONF_USER},
	    {"sandbox", required_argument, NULL, OPT_SETTING + RDV_CONF_SANDBOX},
	    {"ca", required_argument, NULL, OPT_SETTING + RDV_CONF_CA},
	    {"network", required_argument, NULL, OPT_SETTING + RDV_CONF_NETWORK},
	    {"revocations", required_argument, NULL, OPT_SETTING + RDV_CONF_REVOCATIONS},
	    {"listen-tcp", required_argument, NULL, OPT_SETTING + RDV_CONF_LISTEN_TCP},
	    {"tls-cert", required_argument, NULL, OPT_SETTING + RDV_CONF_TLS_CERT},
	    {"tls-key", required_argument, NULL, OPT_SETTING + RDV_CONF_TLS_KEY},
	    {"decoy", required_argument, NULL, OPT_SETTING + RDV_CONF_DECOY},
	    {"listen-quic", required_argument, NULL, OPT_SETTING + RDV_CONF_LISTEN_QUIC},
	    {"reality-genkey", no_argument, NULL, 'G'},
	    {"reality-dest", required_argument, NULL, OPT_SETTING + RDV_CONF_REALITY_DEST},
	    {"reality-private-key", required_argument, NULL,
	     OPT_SETTING + RDV_CONF_REALITY_PRIVATE_KEY},
	    {"reality-short-id", required_argument, NULL, OPT_SETTING + RDV_CONF_REALITY_SHORT_ID},
	    {"reality-server-name", required_argument, NULL,
	     OPT_SETTING + RDV_CONF_REALITY_SERVER_NAME},
	    {NULL, 0, NULL, 0},
	};
	const char *set[RDV_CONF_COUNT] = {NULL}, *config = NULL;
	/* Repeatable settings, in the order given: each adds one. */
	const char *more[2 * (REALITY_IDS_MAX + REALITY_NAMES_MAX)];
	int more_key[2 * (REALITY_IDS_MAX + REALITY_NAMES_MAX)];
	size_t n_more = 0;
	struct rdv_conf conf;
	char err[512];
	const char *metrics_arg = NULL;
	bool metrics_remote = false;
	static union yip_sockaddr metrics_addr;
	int c;

	log_journal();
	if (yip_crypto_init() != 0) {
		fprintf(stderr, "yip-rendezvous: libsodium failed to initialise\n");
		return EXIT_RUNTIME;
	}
	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		return cmd_status(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
		case 'G':
			return cmd_genkey();
		case 'p':
			return cmd_pubkey();
		case 'c':
			config = optarg;
			break;
		case 'V':
			printf("yip-rendezvous %s\n", YIP_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			yip_log_set_level(YIP_LOG_DEBUG);
			break;
		case 'L': {
			enum yip_log_format f;

			if (yip_log_format_parse(optarg, &f) != 0) {
				fprintf(stderr,
				        "yip-rendezvous: --log-format: expected text or json\n");
				return EXIT_USAGE;
			}
			yip_log_set_format(f);
			break;
		}
		case OPT_METRICS_LISTEN:
			metrics_arg = optarg;
			break;
		case OPT_METRICS_REMOTE:
			metrics_remote = true;
			break;
		default:
			if (c >= OPT_SETTING && c < OPT_SETTING + RDV_CONF_COUNT &&
			    rdv_conf_repeatable((enum rdv_conf_key)(c - OPT_SETTING))) {
				if (n_more == sizeof(more) / sizeof(more[0])) {
					fprintf(stderr, "yip-rendezvous: too many --%s\n",
					        option_name(opts, c - OPT_SETTING));
					return EXIT_USAGE;
				}
				more_key[n_more] = c - OPT_SETTING;
				more[n_more++] = optarg;
				break;
			}
			if (c >= OPT_SETTING && c < OPT_SETTING + RDV_CONF_COUNT) {
				set[c - OPT_SETTING] = optarg; /* the last one given wins */
				break;
			}
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "yip-rendezvous: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (metrics_arg != NULL) {
		if (yip_endpoint_parse(metrics_arg, 0, false, &metrics_addr, NULL, err,
		                       sizeof(err)) != 0 ||
		    yip_metrics_listen_check(&metrics_addr, metrics_remote, err, sizeof(err)) !=
		        0) {
			fprintf(stderr, "yip-rendezvous: --metrics-listen: %s\n", err);
			return EXIT_USAGE;
		}
		metrics_listen = &metrics_addr;
	} else if (metrics_remote) {
		fprintf(stderr, "yip-rendezvous: --metrics-remote needs --metrics-listen\n");
		return EXIT_USAGE;
	}
	rdv_conf_default(&conf);
	if (config != NULL) {
		char *text;
		size_t len;
		int rc;

		if (read_text(config, false, &text, &len, err, sizeof(err)) != 0) {
			fprintf(stderr, "yip-rendezvous: %s\n", err);
			return EXIT_USAGE;
		}
		rc = rdv_conf_parse(&conf, text, len, config, err, sizeof(err));
		drop_text(text, len);
		if (rc != 0) {
			fprintf(stderr, "yip-rendezvous: %s\n", err);
			return EXIT_USAGE;
		}
	}
	for (int k = 0; k < RDV_CONF_COUNT; k++) {
		if (set[k] == NULL)
			continue;
		if (rdv_conf_set(&conf, (enum rdv_conf_key)k, set[k], err, sizeof(err)) != 0) {
			fprintf(stderr, "yip-rendezvous: --%s: %s\n", option_name(opts, k), err);
			return EXIT_USAGE;
		}
	}
	for (size_t i = 0; i < n_more; i++) {
		if (rdv_conf_set(&conf, (enum rdv_conf_key)more_key[i], more[i], err,
		                 sizeof(err)) != 0) {
			fprintf(stderr, "yip-rendezvous: --%s: %s\n",
			        option_name(opts, more_key[i]), err);
			return EXIT_USAGE;
		}
	}
	if (rdv_conf_check(&conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "yip-rendezvous: %s\n", err);
		return EXIT_USAGE;
	}
	return serve(&conf);
}
