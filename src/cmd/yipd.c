/* yipd: the yip daemon. */
#include <arpa/inet.h>
#include <getopt.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/keytext.h"
#include "crypto/crypto.h"
#include "ctl/ctl.h"
#include "loop/loop.h"
#include "peer/peer.h"
#include "privsep/privsep.h"
#include "poll/notify.h"
#include "quic/conn.h"
#include "sandbox/sandbox.h"
#include "tun/tun.h"
#include "udp/udp.h"
#include "util/clock.h"
#include "util/hex.h"
#include "util/log.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f, "usage: yipd [-v] <config>      run the daemon in the foreground\n"
	           "       yipd --genkey             print a new private and public key\n"
	           "       yipd --pubkey             read a private key (hex) on stdin, print its "
	           "public key\n"
	           "       yipd --cert-request       read a private key (hex) on stdin, print the "
	           "certificate\n"
	           "                                 request a CA signs (docs/membership.md)\n"
	           "       yipd --addr <public-key>  print the node's key-derived IPv6 address\n"
	           "       yipd --version | --help\n"
	           "\n"
	           "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error.\n"
	           "Configuration reference: docs/configuration.md\n");
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
		fprintf(stderr, "yipd: --pubkey: %s\n", reason);
	return rc == 0 ? 0 : rc == -1 ? EXIT_USAGE : EXIT_RUNTIME;
}

static int cmd_cert_request(void)
{
	char reason[160];
	int rc = keytext_cert_request(stdin, stdout, reason, sizeof(reason));

	if (rc == -1)
		fprintf(stderr, "yipd: --cert-request: %s\n", reason);
	return rc == 0 ? 0 : rc == -1 ? EXIT_USAGE : EXIT_RUNTIME;
}

static int cmd_addr(const char *arg)
{
	uint8_t pub[YIP_KEY_LEN], addr[YIP_ADDR_LEN];
	char s[INET6_ADDRSTRLEN];

	if (yip_hex_decode(pub, YIP_KEY_LEN, arg) != 0) {
		fprintf(stderr, "yipd: --addr: expected a public key of 64 hex digits\n");
		return EXIT_USAGE;
	}
	yip_addr_from_public(addr, pub);
	inet_ntop(AF_INET6, addr, s, sizeof(s));
	printf("%s\n", s);
	return 0;
}

/* Addresses, MTU, link state and routes, all over rtnetlink. */
static int configure_device(const struct yip_config *cfg, const char *ifname, char *err,
                            size_t errlen)
{
	struct yip_cidr self = {.family = AF_INET6, .plen = 128};
	struct yip_cidr mesh = {.family = AF_INET6, .plen = 8, .addr = {0xfd}};
	struct tun_netlink nl;
	bool tap = cfg->device_kind == YIP_DEVICE_TAP;
	int rc = -1;

	if (tun_netlink_open(&nl, ifname, err, errlen) != 0)
		return -1;
	yip_addr_from_public(self.addr, cfg->public_key);
	/* The kernel's default queue of 500 packets overflows whenever a TCP
	 * burst outruns one wakeup of the loop; every overflow is a loss the
	 * inner TCP pays a window for. 2000 doubled 20 ms-RTT throughput here. */
	if (tun_set_mtu(&nl, cfg->mtu, err, errlen) != 0 ||
	    tun_set_txqueuelen(&nl, YIP_TXQUEUELEN, err, errlen) != 0 ||
	    tun_add_address(&nl, &self, err, errlen) != 0)
		goto out;
	for (size_t i = 0; i < cfg->n_addresses; i++)
		if (tun_add_address(&nl, &cfg->addresses[i], err, errlen) != 0)
			goto out;
	if (tun_set_up(&nl, tap, err, errlen) != 0 || tun_add_route(&nl, &mesh, err, errlen) != 0)
		goto out;
	/* On an L2 segment the interface addresses' subnets are on-link; allowed_ips
	 * routes are an L3 notion. */
	if (tap)
		goto done;
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const struct yip_peer_config *pc = &cfg->peers[i];

		for (size_t j = 0; j < pc->n_allowed_ips; j++) {
			char s[YIP_ADDRSTRLEN];

			if (pc->allowed_ips[j].plen == 0) {
				yip_cidr_format(&pc->allowed_ips[j], s, sizeof(s));
				log_warn("not installing a kernel route for %s: it would also "
				         "capture the tunnel's own traffic; route it with policy "
				         "routing (see docs/configuration.md)",
				         s);
				continue;
			}
			if (tun_add_route(&nl, &pc->allowed_ips[j], err, errlen) != 0)
				goto out;
		}
	}
done:
	rc = 0;
out:
	tun_netlink_close(&nl);
	return rc;
}

/*
 * mtu=auto: the largest inner packet whose datagrams (a repair is the
 * largest: see docs/protocol.md, "Overhead"; relayed, it has a relay header
 * too) fit the underlay path to every peer with a known endpoint and to
 * every rendezvous server, without fragmentation.
 */
static unsigned auto_mtu(const struct yip_config *cfg)
{
	/* Through a rendezvous server's relay a datagram carries its header too;
	 * with obf_psk each of the two layers a trailer (docs/obfuscation.md). */
	bool relayed = cfg->n_rendezvous > 0 && !cfg->relay_off;
	unsigned obf = cfg->obf ? OBF_TRAILER : 0;
	unsigned overhead = YIP_DGRAM_OVERHEAD + obf + (relayed ? WIRE_RELAY_HDR + obf : 0);
	unsigned best = 0;

	for (size_t i = 0; i < cfg->n_peers + cfg->n_rendezvous; i++) {
		const union yip_sockaddr *to;
		unsigned room;

		if (i < cfg->n_peers && !cfg->peers[i].has_endpoint)
			continue;
		to = i < cfg->n_peers ? &cfg->peers[i].endpoint
		                      : &cfg->rendezvous[i - cfg->n_peers].addr;
		room = udp_path_payload(to);
		/* A quic:// path (to a peer, or to a server whose relay may carry
		 * the peers' datagrams): QUIC packets of at most QUIC_PKT_MAX, each
		 * carrying one datagram behind QUIC's own header (docs/protocol.md). */
		if ((i < cfg->n_peers
		         ? cfg->peers[i].transport
		         : cfg->rendezvous[i - cfg->n_peers].transport) == YIP_TRANSPORT_QUIC)
			room =
			    (room < QUIC_PKT_MAX ? room : QUIC_PKT_MAX) > QUIC_DGRAM_OVERHEAD
			        ? (room < QUIC_PKT_MAX ? room : QUIC_PKT_MAX) - QUIC_DGRAM_OVERHEAD
			        : 0;
		if (room > overhead && (best == 0 || room - overhead < best))
			best = room - overhead;
	}
	if (best == 0)
		return YIP_DEFAULT_MTU - obf;
	if (best < YIP_MIN_MTU) {
		log_warn("the path to a peer leaves room for %u-byte packets; using %u, which "
		         "the underlay will have to fragment",
		         best, YIP_MIN_MTU);
		return YIP_MIN_MTU;
	}
	return best > YIP_MAX_MTU ? YIP_MAX_MTU : best;
}

/* workers= (YIP_WORKERS overrides it); auto is one thread per two CPUs. */
static unsigned worker_count(const struct yip_config *cfg)
{
	const char *env = getenv("YIP_WORKERS");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cfg->workers;

	if (env != NULL && *env != '\0') {
		char *end;
		unsigned long v = strtoul(env, &end, 10);

		if (*end == '\0' && v >= 1 && v <= YIP_MAX_WORKERS)
			n = (unsigned)v;
		else
			log_warn("ignoring YIP_WORKERS=%s (want 1 to %d)", env, YIP_MAX_WORKERS);
	}
	if (n == 0)
		n = cpus >= 4 ? (unsigned)(cpus / 2) : 1;
	return n > YIP_MAX_WORKERS ? YIP_MAX_WORKERS : n;
}

/* YIP_REKEY_INTERVAL_MS (tests): rekey that often instead of every 120 s. */
static void rekey_override(struct yip_timing *t)
{
	const char *env = getenv("YIP_REKEY_INTERVAL_MS");
	char *end;
	unsigned long long ms;

	if (env == NULL || *env == '\0')
		return;
	ms = strtoull(env, &end, 10);
	if (*end == '\0' && ms >= 100)
		yip_timing_rekey(t, ms * YIP_NS_PER_MS);
	else
		log_warn("ignoring YIP_REKEY_INTERVAL_MS=%s (want milliseconds >= 100)", env);
}

/* offload= for the UDP socket: YIP_OFFLOAD=0 turns GSO/GRO off even when offload=on. */
static bool udp_offload(const struct yip_config *cfg)
{
	const char *env = getenv("YIP_OFFLOAD");

	return !cfg->offload_off && !(env != NULL && strcmp(env, "0") == 0);
}

/* io= from the configuration, unless YIP_IO in the environment says otherwise. */
static enum yip_io_driver io_driver(const struct yip_config *cfg)
{
	const char *env = getenv("YIP_IO");

	if (env == NULL || *env == '\0')
		return cfg->io;
	if (strcmp(env, "epoll") == 0)
		return YIP_IO_EPOLL;
	if (strcmp(env, "uring") == 0)
		return YIP_IO_URING;
	if (strcmp(env, "uring-busy") == 0)
		return YIP_IO_URING_BUSY;
	log_warn("ignoring YIP_IO=%s (want epoll, uring or uring-busy)", env);
	return cfg->io;
}

/* The engine's key memory (yip_device_key_memory), unmapped at exit. */
struct key_memory {
	void *mem;
	size_t len;
};

/*
 * Keeps the engine's keys out of core dumps and swap: the device (our
 * private key; sodium_malloc already did it), the key slots that hold every
 * session's keys and every handshake's state, for configured peers, members
 * added at run time and servers alike (memory locked as it is first
 * used), and the servers (our relay tokens).
 */
static void protect_keys(struct yip_device *dev, struct key_memory *km)
{
	void *servers;
	size_t len;

	km->len = yip_device_key_memory_size(dev);
	km->mem = sandbox_key_memory(km->len);
	if (km->mem != NULL)
		yip_device_key_memory(dev, km->mem, km->len);
	else
		log_warn("no memory of its own for session keys; they stay on the heap, which "
		         "may be swapped out");
	servers = yip_device_servers_memory(dev, &len);
	sandbox_protect(servers, len);
}

/* sandbox= from the configuration, unless YIP_SANDBOX in the environment says otherwise. */
static enum yip_sandbox_mode sandbox_mode(const struct yip_config *cfg)
{
	const char *env = getenv("YIP_SANDBOX");
	enum yip_sandbox_mode m;

	if (env == NULL || *env == '\0')
		return cfg->sandbox;
	if (yip_config_sandbox_mode(env, &m) == 0)
		return m;
	log_warn("ignoring YIP_SANDBOX=%s (want on, log or off)", env);
	return cfg->sandbox;
}

/* YIP_RESOLVE_INTERVAL_MS (tests): resolve host names again that often instead of every 60 s. */
static uint64_t resolve_interval(void)
{
	const char *env = getenv("YIP_RESOLVE_INTERVAL_MS");
	char *end;
	unsigned long long ms;

	if (env == NULL || *env == '\0')
		return YIP_RESOLVE_INTERVAL_NS;
	ms = strtoull(env, &end, 10);
	if (*end == '\0' && ms >= 100)
		return ms * YIP_NS_PER_MS;
	log_warn("ignoring YIP_RESOLVE_INTERVAL_MS=%s (want milliseconds >= 100)", env);
	return YIP_RESOLVE_INTERVAL_NS;
}

static bool has_names(const struct yip_config *cfg)
{
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (cfg->peers[i].endpoint_name != NULL)
			return true;
	for (size_t i = 0; i < cfg->n_rendezvous; i++)
		if (cfg->rendezvous[i].name != NULL)
			return true;
	return false;
}

/* Whether the node dials anything over TLS. */
static bool dials_tls(const struct yip_config *cfg)
{
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (cfg->peers[i].transport == YIP_TRANSPORT_TLS ||
		    cfg->peers[i].transport == YIP_TRANSPORT_QUIC)
			return true;
	for (size_t i = 0; i < cfg->n_rendezvous; i++)
		if (cfg->rendezvous[i].transport != YIP_TRANSPORT_UDP)
			return true;
	return false;
}

static unsigned sandbox_uses(const struct yip_config *cfg, enum yip_io_driver io)
{
	return SANDBOX_YIPD | (io != YIP_IO_EPOLL ? SANDBOX_URING : 0) |
	       (has_names(cfg) ? SANDBOX_RESOLVE : 0) | (cfg->has_ca ? SANDBOX_MEMBERS : 0) |
	       (dials_tls(cfg) ? SANDBOX_TCP : 0);
}

/* Under journald (JOURNAL_STREAM names our stderr): its line shape, no timestamp. */
static void log_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;

	yip_log_set_journal(js != NULL && fstat(STDERR_FILENO, &st) == 0 &&
	                    yip_log_journal_stream(js, (uint64_t)st.st_dev, (uint64_t)st.st_ino));
}

/*
 * The service manager's socket (NOTIFY_SOCKET), connected now, while the
 * path can still be reached, and the watchdog (WATCHDOG_USEC, for us if
 * WATCHDOG_PID is unset or ours). The variables are removed so that
 * children do not take them for theirs.
 */
static void notify_open(struct yip_notify *n)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	uint64_t wd =
	    yip_notify_watchdog(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
	char err[256];

	if (yip_notify_open(n, sock, wd, err, sizeof(err)) != 0)
		log_warn("%s; not notifying the service manager", err);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static int run(const char *given, bool verbose)
{
	struct yip_config cfg;
	struct yip_timing timing;
	struct yip_device *dev;
	struct sandbox sb;
	enum yip_io_driver driver;
	struct yip_loop *loop;
	struct key_memory km = {NULL, 0};
	struct privsep ps = {.fd = -1};
	char path[PATH_MAX];
	unsigned mtu_conf;
	struct yip_loop_config lc;
	struct yip_io io;
	struct yip_notify notify;
	char err[512], ifname[IFNAMSIZ], addr[INET6_ADDRSTRLEN], host[256] = "localhost";
	uint8_t self[YIP_ADDR_LEN];
	uint16_t port;
	int tun_fd = -1, udp_fd = -1, rc = EXIT_RUNTIME;
	bool vnet = false;

	sandbox_nodump(); /* before the key is read: no core dump will hold it */
	/* A reload opens the file again, from wherever the daemon is then. */
	if (realpath(given, path) == NULL)
		snprintf(path, sizeof(path), "%s", given);
	if (yip_config_load(path, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "yipd: %s\n", err);
		return EXIT_USAGE;
	}
	yip_log_set_format(cfg.log_format);
	if (!verbose)
		yip_log_set_level(cfg.log_level_set ? cfg.log_level : YIP_LOG_INFO);
	notify_open(&notify);
	sandbox_check_secret_file(path);
	driver = io_driver(&cfg);
	if (sandbox_init(&sb, sandbox_mode(&cfg), cfg.user, sandbox_uses(&cfg, driver), err,
	                 sizeof(err)) != 0) {
		fprintf(stderr, "yipd: %s: %s\n", path, err);
		yip_config_free(&cfg);
		yip_notify_close(&notify);
		return EXIT_USAGE;
	}
	udp_fd = udp_open(&cfg.listen, cfg.listen_port_given, YIP_DEFAULT_PORT, YIP_FALLBACK_PORT,
	                  &port, err, sizeof(err));
	if (udp_fd < 0)
		goto fail;
	mtu_conf = cfg.mtu;
	if (cfg.mtu == 0)
		cfg.mtu = auto_mtu(&cfg);
	tun_fd = tun_open(cfg.device, cfg.device_kind == YIP_DEVICE_TAP, !cfg.offload_off, false,
	                  &vnet, ifname, err, sizeof(err));
	if (tun_fd < 0 || configure_device(&cfg, ifname, err, sizeof(err)) != 0)
		goto fail;
	/* Before any thread: the half that stays privileged for reloads (src/privsep). */
	if (privsep_start(&ps, path, ifname, sb.mode != YIP_SANDBOX_OFF, sb.mode, &cfg, sizeof(cfg),
	                  err, sizeof(err)) != 0)
		goto fail;
	lc = (struct yip_loop_config){
	    .tun_fd = tun_fd,
	    .tap = cfg.device_kind == YIP_DEVICE_TAP,
	    .vnet = vnet,
	    .udp_fd = udp_fd,
	    .udp_family = cfg.listen.sa.sa_family == AF_INET ? AF_INET : AF_INET6,
	    .udp_offload = udp_offload(&cfg),
	    .device_name = ifname,
	    .port = port,
	    .io = driver,
	    .workers = worker_count(&cfg),
	    /* The control socket for yipctl; yip_loop_free removes it. */
	    .ctl_dir = yip_ctl_dir(getenv(YIP_CTL_DIR_ENV)),
	    .config = &cfg,
	    .resolve_interval = resolve_interval(),
	    .sandbox = &sb,
	    .host_name = host,
	    .notify = &notify,
	};
	if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "localhost");
	err[0] = '\0';
	loop = yip_loop_init(&lc, err, sizeof(err));
	if (loop == NULL)
		goto fail;
	/* A state directory others could write to is a configuration error. */
	if (yip_loop_members_setup(loop, &cfg, err, sizeof(err)) != 0) {
		yip_loop_free(loop);
		rc = EXIT_USAGE;
		goto fail;
	}
	yip_loop_io(loop, &io);
	yip_timing_default(&timing);
	rekey_override(&timing);
	/* Guard pages, locked, out of core dumps; wiped by sodium_free. */
	dev = sodium_malloc(yip_device_size());
	if (dev == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		yip_loop_free(loop);
		goto fail;
	}
	if (yip_device_init(dev, &cfg, &io, &timing, err, sizeof(err)) != 0) {
		sodium_free(dev);
		yip_loop_free(loop);
		goto fail;
	}
	protect_keys(dev, &km);
	if (yip_loop_members_start(loop, dev, err, sizeof(err)) != 0) {
		yip_device_free(dev);
		sandbox_key_memory_free(km.mem, km.len);
		sodium_free(dev);
		yip_loop_free(loop);
		goto fail;
	}
	yip_addr_from_public(self, cfg.public_key);
	inet_ntop(AF_INET6, self, addr, sizeof(addr));
	log_info("yipd %s: device %s up, address %s, mtu %u, UDP port %u, %zu peer%s, "
	         "workers %u, io %s%s",
	         YIP_VERSION, ifname, addr, cfg.mtu, port, cfg.n_peers, cfg.n_peers == 1 ? "" : "s",
	         lc.workers, yip_loop_io_name(lc.io), cfg.obf ? ", obfuscation on (obf_psk)" : "");
	cfg.mtu = mtu_conf;
	yip_loop_reload_setup(loop, &cfg, &ps,
	                      sb.mode == YIP_SANDBOX_OFF || (sb.uses & SANDBOX_RESOLVE) != 0);

	rc = yip_loop_run(loop, dev) == 0 ? 0 : EXIT_RUNTIME;
	yip_loop_status(loop);
	yip_device_free(dev);
	sandbox_key_memory_free(km.mem, km.len);
	sodium_free(dev);
	yip_loop_free(loop);
	privsep_stop(&ps);
	close(tun_fd);
	close(udp_fd);
	yip_notify_close(&notify);
	return rc;
fail:
	log_err("%s", err);
	privsep_stop(&ps);
	yip_config_free(&cfg);
	if (tun_fd >= 0)
		close(tun_fd);
	if (udp_fd >= 0)
		close(udp_fd);
	yip_notify_close(&notify);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"genkey", no_argument, NULL, 'g'},       {"pubkey", no_argument, NULL, 'p'},
	    {"cert-request", no_argument, NULL, 'r'}, {"addr", required_argument, NULL, 'a'},
	    {"version", no_argument, NULL, 'V'},      {"help", no_argument, NULL, 'h'},
	    {"verbose", no_argument, NULL, 'v'},      {NULL, 0, NULL, 0},
	};
	bool verbose = false;
	int c;

	log_journal();
	if (yip_crypto_init() != 0) {
		fprintf(stderr, "yipd: libsodium failed to initialise\n");
		return EXIT_RUNTIME;
	}
	while ((c = getopt_long(argc, argv, "vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			return cmd_genkey();
		case 'p':
			return cmd_pubkey();
		case 'r':
			return cmd_cert_request();
		case 'a':
			return cmd_addr(optarg);
		case 'V':
			printf("yipd %s\n", YIP_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			yip_log_set_level(YIP_LOG_DEBUG);
			verbose = true;
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind == argc ? "yipd: missing configuration file\n"
		                               : "yipd: too many arguments\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	return run(argv[optind], verbose);
}
