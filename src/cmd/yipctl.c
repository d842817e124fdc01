/* yipctl: asks a running yipd for its status over the control socket. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/reach.h"
#include "ctl/rendezvous.h"
#include "util/hex.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

#define IO_TIMEOUT_S 5  /* for connect, send and each read */
#define BUSY_RETRIES 20 /* the daemon serves one client at a time */
#define MAX_LISTED   64

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: yipctl [show] [--json] [device [peer-public-key]]\n"
	        "                                 device, keys, and per peer: endpoint, allowed\n"
	        "                                 IPs, handshake, RTT, transfer, loss, FEC/ARQ\n"
	        "       yipctl peers [device]     one line per peer\n"
	        "       yipctl stats [--json] [device]  drop counters, data-path counters\n"
	        "       yipctl members [--json] [device]  a CA-gated network's members: names,\n"
	        "                                 addresses, groups, expiry, connected or why not\n"
	        "       yipctl reload [--json] [device]  read the configuration file again and\n"
	        "                                 apply the difference: peers added, changed and\n"
	        "                                 removed; returns when it is applied\n"
	        "       yipctl log [LEVEL] [device]  show the daemon's log level, or set it\n"
	        "                                 (error, warn, info, debug) until it exits\n"
	        "       yipctl metrics [device]   Prometheus text, as metrics_listen serves it\n"
	        "       yipctl ping [-c N] [-i SEC] [--until-direct] PEER [device]\n"
	        "                                 probes inside the session on every path; PEER:\n"
	        "                                 public key, member name or address. Exit 0: a\n"
	        "                                 direct pong, 3: only relayed, 1: no reply\n"
	        "       yipctl netcheck [--json] [device]  reflexive addresses, NAT mapping, UDP,\n"
	        "                                 RTT to each rendezvous server, relay\n"
	        "       yipctl --version | --help\n"
	        "\n"
	        "The daemon's control socket is %s/<device>%s (set %s to change the\n"
	        "directory). Without a device, the only socket there is used.\n"
	        "Exit status: 0 success, 1 runtime failure (e.g. yipd not running), 2 usage.\n"
	        "Reference: docs/control.md\n",
	        YIP_CTL_DEFAULT_DIR, YIP_CTL_SUFFIX, YIP_CTL_DIR_ENV);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* With no device named: the single socket in dir, or a list and EXIT_USAGE. */
static int pick_device(const char *dir, char *device, size_t len)
{
	char *names[MAX_LISTED];
	size_t n = 0, total = 0;
	struct dirent *e;
	DIR *d = opendir(dir);
	int rc;

	if (d == NULL) {
		if (errno == ENOENT)
			fprintf(stderr, "yipctl: no yipd is running (%s does not exist)\n", dir);
		else
			fprintf(stderr, "yipctl: cannot read %s: %s%s\n", dir, strerror(errno),
			        errno == EACCES ? " (yipctl needs root)" : "");
		return EXIT_RUNTIME;
	}
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name), sl = strlen(YIP_CTL_SUFFIX);
		struct stat st;

		if (l <= sl || strcmp(e->d_name + l - sl, YIP_CTL_SUFFIX) != 0)
			continue;
		/* yip-rendezvous's socket may share the directory: it is no device. */
		if (l - sl == strlen(YIP_RDV_CTL_NAME) &&
		    strncmp(e->d_name, YIP_RDV_CTL_NAME, l - sl) == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISSOCK(st.st_mode))
			continue;
		total++;
		if (n < MAX_LISTED && (names[n] = strndup(e->d_name, l - sl)) != NULL)
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	if (total == 0) {
		fprintf(stderr, "yipctl: no yipd is running (no control socket in %s)\n", dir);
		rc = EXIT_RUNTIME;
	} else if (total == 1 && n == 1) {
		snprintf(device, len, "%s", names[0]);
		rc = 0;
	} else {
		fprintf(stderr, "yipctl: %zu devices have a control socket in %s; name one:\n",
		        total, dir);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  %s\n", names[i]);
		rc = EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

/*
 * Sends request and reads the whole reply into *out (NUL-terminated, caller
 * frees). Returns 0, or EXIT_RUNTIME with a message printed.
 */
static int ask(const char *path, const char *device, const char *request, char **out,
               size_t *out_len)
{
	char err[512];
	int e;

	if (yip_ctl_ask(path, request, IO_TIMEOUT_S, out, out_len, &e, err, sizeof(err)) == 0)
		return 0;
	if (e == ENOENT || e == ECONNREFUSED)
		fprintf(stderr, "yipctl: yipd is not running for %s (cannot connect to %s: %s)\n",
		        device, path, strerror(e));
	else if (e != 0)
		fprintf(stderr, "yipctl: cannot connect to %s: %s%s\n", path, strerror(e),
		        e == EACCES || e == EPERM ? " (yipctl needs root)" : "");
	else
		fprintf(stderr, "yipctl: %s\n", err);
	return EXIT_RUNTIME;
}

/* ---- ping and netcheck (docs/control.md) ---- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ask(), retried while the daemon is busy with another client. The reply
 * is the daemon's JSON (an error reply too). */
static int ask_json(const char *path, const char *device, const char *request, char **out,
                    size_t *len)
{
	for (int attempt = 0;; attempt++) {
		int rc = ask(path, device, request, out, len);

		if (rc != 0)
			return rc;
		if (attempt >= BUSY_RETRIES || strstr(*out, "\"error\":\"busy") == NULL)
			return 0;
		free(*out);
		sleep_ms(50);
	}
}

/* Resolves the socket of device (NULL: the only one). 0, or an exit status. */
static int socket_of(const char *dir, const char *dev, char *device, char *path, size_t plen)
{
	int rc;

	if (dev != NULL) {
		if (strlen(dev) >= IFNAMSIZ) {
			fprintf(stderr, "yipctl: '%s' is not a device name\n", dev);
			return EXIT_USAGE;
		}
		snprintf(device, IFNAMSIZ, "%s", dev);
	} else if ((rc = pick_device(dir, device, IFNAMSIZ)) != 0) {
		return rc;
	}
	if (yip_ctl_socket_path(path, plen, dir, device) != 0) {
		fprintf(stderr, "yipctl: '%s' is not a device name, or %s is too long\n", device,
		        dir);
		return EXIT_USAGE;
	}
	return 0;
}

/* One round: starts it, then polls until every probe answered or wait_ms. */
static int ping_round(const char *path, const char *device, const char *target, unsigned wait_ms,
                      struct yip_ctl_ping_tally *t, char *name, size_t nlen)
{
	char request[YIP_CTL_MAX_REQUEST], err[256], *reply;
	struct yip_ctl_ping_reply r;
	bool shown[YIP_MAX_PATHS] = {false};
	double until = mono_ms() + wait_ms;
	size_t len;
	uint64_t round;
	int rc;

	for (;;) { /* the start; a round refused as too soon waits a little */
		snprintf(request, sizeof(request), "ping %s", target);
		if ((rc = ask_json(path, device, request, &reply, &len)) != 0)
			return rc;
		rc = yip_ctl_ping_parse(reply, len, &r, err, sizeof(err));
		free(reply);
		if (rc != 0) {
			fprintf(stderr, "yipctl: %s: %s\n", device, err);
			return EXIT_RUNTIME;
		}
		snprintf(name, nlen, "%s", r.name);
		if (strcmp(r.status, "too_soon") != 0 || mono_ms() >= until)
			break;
		sleep_ms(YIP_PING_GAP_MS / 4);
	}
	t->rounds++;
	if (strcmp(r.status, "sent") != 0) {
		printf("%s: %s\n", r.name,
		       strcmp(r.status, "no_session") == 0
		           ? "no session yet (a handshake was started)"
		       : strcmp(r.status, "no_path") == 0 ? "no path can carry a probe now"
		                                          : "rate limited");
		sleep_ms(wait_ms);
		return 0;
	}
	round = r.round;
	t->probes += r.n;
	for (;;) {
		unsigned open = 0;

		sleep_ms(20);
		snprintf(request, sizeof(request), "ping %s poll", target);
		if ((rc = ask_json(path, device, request, &reply, &len)) != 0)
			return rc;
		rc = yip_ctl_ping_parse(reply, len, &r, err, sizeof(err));
		free(reply);
		if (rc != 0) {
			fprintf(stderr, "yipctl: %s: %s\n", device, err);
			return EXIT_RUNTIME;
		}
		if (r.round != round)
			return 0; /* another client started a round: ours is over */
		for (unsigned k = 0; k < r.n; k++) {
			if (!r.pongs[k].answered) {
				open++;
				continue;
			}
			if (shown[k])
				continue;
			shown[k] = true;
			yip_ctl_pong_line(stdout, &r, k);
			fflush(stdout);
			yip_ctl_ping_count(t, &r, k);
		}
		if (open == 0 || mono_ms() >= until)
			return 0;
	}
}

static int ping_main(int argc, char **argv, const char *dir)
{
	const char *target = NULL, *dev = NULL;
	char device[IFNAMSIZ], path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char name[YIP_CTL_PING_NAME_MAX + 1] = "peer";
	struct yip_ctl_ping_tally t = {0};
	unsigned count = 10, interval_ms = 1000;
	bool until_direct = true;
	int rc;

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char *end;

		if ((strcmp(a, "-c") == 0 || strcmp(a, "-i") == 0) && i + 1 < argc) {
			double v = strtod(argv[++i], &end);

			if (*end != '\0' || !(v > 0) || v > 1e6 ||
			    (a[1] == 'c' && v != (double)(unsigned)v) ||
			    (a[1] == 'i' && v * 1000 < YIP_PING_GAP_MS)) {
				fprintf(
				    stderr,
				    "yipctl: ping %s wants a positive %s (an interval of at least "
				    "%.1f s)\n",
				    a, a[1] == 'c' ? "count" : "number of seconds",
				    YIP_PING_GAP_MS / 1000.0);
				return EXIT_USAGE;
			}
			if (a[1] == 'c') {
				count = (unsigned)v;
				until_direct = false;
			} else {
				interval_ms = (unsigned)(v * 1000);
			}
		} else if (strcmp(a, "--until-direct") == 0) {
			until_direct = true;
		} else if (a[0] == '-') {
			fprintf(stderr, "yipctl: unknown ping option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		} else if (target == NULL) {
			target = a;
		} else if (dev == NULL) {
			dev = a;
		} else {
			fprintf(stderr, "yipctl: too many arguments for ping\n");
			return EXIT_USAGE;
		}
	}
	if (target == NULL || strlen(target) > YIP_CTL_TARGET_MAX || strchr(target, ' ')) {
		fprintf(stderr, "yipctl: ping needs a peer: public key, member name or address\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if ((rc = socket_of(dir, dev, device, path, sizeof(path))) != 0)
		return rc;
	for (unsigned i = 0; i < count; i++) {
		double start = mono_ms(), left;

		if ((rc = ping_round(path, device, target, interval_ms, &t, name, sizeof(name))) !=
		    0)
			return rc;
		if (until_direct && t.has_direct)
			break;
		left = interval_ms - (mono_ms() - start);
		if (i + 1 < count && left > 0)
			sleep_ms((unsigned)left);
	}
	rc = yip_ctl_ping_summary(stdout, &t, name);
	fflush(stdout);
	return rc;
}

static int netcheck_main(int argc, char **argv, const char *dir)
{
	char device[IFNAMSIZ], path[sizeof(((struct sockaddr_un *)0)->sun_path)], err[256];
	const char *dev = NULL;
	char *reply;
	size_t len;
	bool json = false;
	int rc;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0) {
			json = true;
		} else if (argv[i][0] == '-' || dev != NULL) {
			fprintf(stderr, "yipctl: usage: yipctl netcheck [--json] [device]\n");
			return EXIT_USAGE;
		} else {
			dev = argv[i];
		}
	}
	if ((rc = socket_of(dir, dev, device, path, sizeof(path))) != 0)
		return rc;
	/* Fresh probes, then their answers: at most about 1.5 s. */
	if ((rc = ask_json(path, device, "netcheck probe", &reply, &len)) != 0)
		return rc;
	for (int i = 0; i < 15 && strstr(reply, "\"pending\":true") != NULL; i++) {
		free(reply);
		sleep_ms(100);
		if ((rc = ask_json(path, device, "netcheck", &reply, &len)) != 0)
			return rc;
	}
	if (json)
		rc = yip_ctl_render(stdout, YIP_CTL_VIEW_JSON, reply, len, 0, err, sizeof(err));
	else
		rc = yip_ctl_netcheck_render(stdout, reply, len, err, sizeof(err));
	if (rc != 0) {
		free(reply);
		fprintf(stderr, "yipctl: %s: %s\n", device, err);
		return EXIT_RUNTIME;
	}
	rc = yip_ctl_netcheck_status(reply, len);
	free(reply);
	if (rc != 0)
		fprintf(stderr, "yipctl: no rendezvous server answered\n");
	return fflush(stdout) != 0 ? EXIT_RUNTIME : rc;
}

int main(int argc, char **argv)
{
	const char *cmd = NULL, *level = NULL, *pos[2] = {NULL, NULL},
	           *dir = yip_ctl_dir(getenv(YIP_CTL_DIR_ENV));
	enum yip_ctl_view view = YIP_CTL_VIEW_SHOW;
	char device[IFNAMSIZ], path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char request[YIP_CTL_MAX_REQUEST], err[256];
	size_t npos = 0, max_pos;
	bool json = false, metrics = false;
	int rc;

	if (argc > 1 && strcmp(argv[1], "ping") == 0)
		return ping_main(argc, argv, dir);
	if (argc > 1 && strcmp(argv[1], "netcheck") == 0)
		return netcheck_main(argc, argv, dir);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			printf("yipctl %s\n", YIP_VERSION);
			return 0;
		} else if (strcmp(a, "--json") == 0 || strcmp(a, "-j") == 0) {
			json = true;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "yipctl: unknown option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE;
		} else if (cmd == NULL) {
			cmd = a;
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			fprintf(stderr, "yipctl: too many arguments\n");
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (cmd == NULL)
		cmd = "show";
	if (strcmp(cmd, "show") == 0) {
		view = json ? YIP_CTL_VIEW_JSON : YIP_CTL_VIEW_SHOW;
		max_pos = 2;
	} else if (strcmp(cmd, "peers") == 0) {
		view = YIP_CTL_VIEW_PEERS;
		max_pos = 1;
	} else if (strcmp(cmd, "stats") == 0) {
		view = json ? YIP_CTL_VIEW_JSON : YIP_CTL_VIEW_STATS;
		max_pos = 1;
	} else if (strcmp(cmd, "members") == 0) {
		view = json ? YIP_CTL_VIEW_JSON : YIP_CTL_VIEW_MEMBERS;
		max_pos = 1;
	} else if (strcmp(cmd, "reload") == 0) {
		view = json ? YIP_CTL_VIEW_JSON : YIP_CTL_VIEW_RELOAD;
		max_pos = 1;
	} else if (strcmp(cmd, "log") == 0) {
		enum yip_log_level lv;

		view = json ? YIP_CTL_VIEW_JSON : YIP_CTL_VIEW_LOG;
		max_pos = 1;
		/* log [LEVEL] [device]: a first word that names a level is the level */
		if (npos >= 1 && yip_log_level_parse(pos[0], &lv) == 0) {
			level = pos[0];
			pos[0] = pos[1];
			pos[1] = NULL;
			npos--;
		}
	} else if (strcmp(cmd, "metrics") == 0) {
		view = YIP_CTL_VIEW_JSON; /* only to read an error reply */
		metrics = true;
		max_pos = 1;
	} else {
		fprintf(stderr, "yipctl: unknown command '%s'\n", cmd);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (npos > max_pos) {
		fprintf(stderr, "yipctl: too many arguments for %s\n", cmd);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (json && (view != YIP_CTL_VIEW_JSON || metrics)) {
		fprintf(stderr, "yipctl: --json goes with show, stats, members, reload or log\n");
		return EXIT_USAGE;
	}
	if (npos == 2) {
		uint8_t key[YIP_KEY_LEN];

		if (yip_hex_decode(key, YIP_KEY_LEN, pos[1]) != 0) {
			fprintf(stderr, "yipctl: a peer public key is %d hex digits\n",
			        2 * YIP_KEY_LEN);
			return EXIT_USAGE;
		}
		snprintf(request, sizeof(request), "show %s", pos[1]);
	} else if (strcmp(cmd, "log") == 0) {
		snprintf(request, sizeof(request), "log%s%s", level != NULL ? " " : "",
		         level != NULL ? level : "");
	} else {
		snprintf(request, sizeof(request), "%s",
		         strcmp(cmd, "stats") == 0     ? "stats"
		         : strcmp(cmd, "members") == 0 ? "members"
		         : strcmp(cmd, "reload") == 0  ? "reload"
		         : metrics                     ? "metrics"
		                                       : "show");
	}

	if (npos >= 1) {
		snprintf(device, sizeof(device), "%s", pos[0]);
		if (strlen(pos[0]) >= sizeof(device)) {
			fprintf(stderr, "yipctl: '%s' is not a device name\n", pos[0]);
			return EXIT_USAGE;
		}
	} else if ((rc = pick_device(dir, device, sizeof(device))) != 0) {
		return rc;
	}
	if (yip_ctl_socket_path(path, sizeof(path), dir, device) != 0) {
		fprintf(stderr, "yipctl: '%s' is not a device name, or %s is too long\n", device,
		        dir);
		return EXIT_USAGE;
	}

	for (int attempt = 0;; attempt++) {
		char *reply = NULL;
		size_t len = 0;

		rc = ask(path, device, request, &reply, &len);
		if (rc != 0)
			return rc;
		/* metrics: the reply is the exposition text; a JSON object is an error. */
		if (metrics && len > 0 && reply[0] != '{')
			rc = fwrite(reply, 1, len, stdout) == len
			         ? 0
			         : (snprintf(err, sizeof(err), "writing output failed"), -1);
		else
			rc = yip_ctl_render(stdout, view, reply, len, (uint64_t)time(NULL), err,
			                    sizeof(err));
		if (metrics && rc == 0 && len > 0 && reply[0] == '{') {
			snprintf(err, sizeof(err), "the daemon did not answer with metrics");
			rc = -1;
		}
		free(reply);
		if (rc == 0)
			break;
		if (strncmp(err, "busy", 4) == 0 && attempt < BUSY_RETRIES) {
			struct timespec ts = {.tv_nsec = 50 * 1000 * 1000};

			nanosleep(&ts, NULL);
			continue;
		}
		fprintf(stderr, "yipctl: %s: %s\n", device, err);
		return EXIT_RUNTIME;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "yipctl: writing output: %s\n", strerror(errno));
		return EXIT_RUNTIME;
	}
	return 0;
}
