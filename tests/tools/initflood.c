/*
 * yip-initflood: a handshake flood, for tests/netns/handshake_flood.sh.
 *
 * It precomputes a set of 149-byte Inits to one responder, each with a
 * valid mac1 (so the responder cannot refuse it for the price of one
 * BLAKE2b) and its own sender index, of three kinds in turn (--inits
 * LIST picks some: random,stranger,named; named only with --name):
 *
 *   random    random bytes where the Noise message goes: the responder pays
 *             one X25519 (es) before the static key fails to decrypt
 *             (drop handshake_failed);
 *   stranger  a real Noise msg1 from a fresh key pair nobody configured:
 *             es, then unknown_peer;
 *   named     a real Noise msg1 whose encrypted static key is a configured
 *             peer's public key (--name), made without that peer's private
 *             key (the ss DH uses a random one): the responder pays es and
 *             ss before the payload fails to decrypt (handshake_failed), or
 *             refuses it first under the peer's budget (rate_limited).
 *
 * and sends them round robin with sendmmsg, --batch at a time (default
 * 64), for --secs seconds, either as fast as one core can (--rate 0, the
 * default) or paced to --rate datagrams a second (a batch at a time: a
 * steady trickle needs --batch 1).
 *
 * Sources: --ports sockets on ephemeral ports, one batch from each in turn.
 * With --src-base A --sources N every datagram also names one of N
 * consecutive IPv4 addresses from A as its source (IP_PKTINFO); the caller
 * must have routed them to this host (ip route add local A/len dev lo) so
 * that replies come back. With --cookies K the tool reads the responder's
 * Cookie replies to the first K sources (all of them without --sources:
 * K is then 0 or 1), opens them as an initiator does (src/cookie) and sends
 * every later Init from that address and port with a valid mac2, so those
 * Inits pass the cookie check and meet the per-source budget instead; the
 * other sources' Inits keep a zero mac2 and are answered with Cookies.
 *
 * --kind garbage sends datagrams of the same size but of type 9, which a
 * responder drops as malformed after reading the first byte: a flood that
 * costs the responder nothing but its receive path. --kind init (the
 * default) sends the Inits.
 *
 * It stops after --secs seconds (default 5) or at SIGTERM or SIGINT, and
 * prints
 *   sent N secs S rate R cookies C errors E start T0 end T1
 * (datagrams sent, seconds, datagrams a second, cookies opened, failed
 * sends, and when the flood began and ended in CLOCK_MONOTONIC ns).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cookie/cookie.h"
#include "crypto/crypto.h"
#include "noise/noise.h"
#include "util/clock.h"
#include "util/hex.h"
#include "wire/wire.h"

#define BATCH     64
#define MAX_NAMES 8
#define MAX_SET   65536 /* the low 16 bits of a sender index name its slot */
#define MAX_PORTS 64
#define MAX_SRCS  65536
#define GARBAGE   9 /* a type no yip datagram has */

static struct {
	struct sockaddr_in to;
	uint8_t responder[YIP_KEY_LEN];
	uint8_t names[MAX_NAMES][YIP_KEY_LEN];
	unsigned nnames;
	unsigned set, ports, sources;
	struct in_addr src_base;
	double secs, rate;
	bool garbage;
	unsigned cookies; /* sources that use cookies */
	unsigned kinds;   /* bit k: Init kind k (random, stranger, named) */
	unsigned batch;   /* datagrams per sendmmsg */
} opt = {.set = 1024, .ports = 1, .secs = 5, .kinds = 7, .batch = BATCH};

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("yip-initflood: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void usage(void)
{
	fputs("usage: yip-initflood --to IP:PORT --key RESPONDER_PUBLIC_HEX\n"
	      "         [--name PEER_PUBLIC_HEX]... [--kind init|garbage] [--inits LIST]\n"
	      "         [--secs S] [--rate N] [--batch N] [--set N] [--ports N]\n"
	      "         [--src-base IPV4 --sources N] [--cookies K]\n",
	      stderr);
	exit(2);
}

static void key_arg(uint8_t key[YIP_KEY_LEN], const char *s)
{
	if (strlen(s) != 2 * YIP_KEY_LEN || yip_hex_decode(key, YIP_KEY_LEN, s) != 0)
		die("not a public key (64 hex digits): %s", s);
}

static unsigned num_arg(const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < lo || v > hi)
		die("%s: expected a number from %u to %u", s, lo, hi);
	return (unsigned)v;
}

static void parse(int argc, char **argv)
{
	static const struct option longs[] = {
	    {"to", required_argument, NULL, 't'},       {"key", required_argument, NULL, 'k'},
	    {"name", required_argument, NULL, 'n'},     {"kind", required_argument, NULL, 'K'},
	    {"inits", required_argument, NULL, 'I'},    {"batch", required_argument, NULL, 'B'},
	    {"secs", required_argument, NULL, 's'},     {"rate", required_argument, NULL, 'r'},
	    {"set", required_argument, NULL, 'S'},      {"ports", required_argument, NULL, 'p'},
	    {"src-base", required_argument, NULL, 'b'}, {"sources", required_argument, NULL, 'N'},
	    {"cookies", required_argument, NULL, 'c'},  {NULL, 0, NULL, 0}};
	bool have_to = false, have_key = false;
	char host[64], *colon;
	int c;

	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 't':
			if (strlen(optarg) >= sizeof(host))
				die("--to: too long");
			strcpy(host, optarg);
			colon = strrchr(host, ':');
			if (colon == NULL)
				die("--to: expected IPV4:PORT");
			*colon = '\0';
			opt.to.sin_family = AF_INET;
			opt.to.sin_port = htons((uint16_t)num_arg(colon + 1, 1, 65535));
			if (inet_pton(AF_INET, host, &opt.to.sin_addr) != 1)
				die("--to: not an IPv4 address: %s", host);
			have_to = true;
			break;
		case 'k':
			key_arg(opt.responder, optarg);
			have_key = true;
			break;
		case 'n':
			if (opt.nnames == MAX_NAMES)
				die("at most %d --name", MAX_NAMES);
			key_arg(opt.names[opt.nnames++], optarg);
			break;
		case 'K':
			if (strcmp(optarg, "garbage") == 0)
				opt.garbage = true;
			else if (strcmp(optarg, "init") != 0)
				die("--kind: init or garbage");
			break;
		case 'I': {
			static const char *const kinds[] = {"random", "stranger", "named"};
			char *list = optarg, *w;
			unsigned k;

			opt.kinds = 0;
			while ((w = strsep(&list, ",")) != NULL) {
				for (k = 0; k < 3 && strcmp(w, kinds[k]) != 0; k++)
					;
				if (k == 3)
					die("--inits: random, stranger or named, not '%s'", w);
				opt.kinds |= 1u << k;
			}
			break;
		}
		case 'B':
			opt.batch = num_arg(optarg, 1, BATCH);
			break;
		case 's':
			opt.secs = num_arg(optarg, 1, 3600);
			break;
		case 'r':
			opt.rate = num_arg(optarg, 0, 100000000);
			break;
		case 'S':
			opt.set = num_arg(optarg, 3, MAX_SET);
			break;
		case 'p':
			opt.ports = num_arg(optarg, 1, MAX_PORTS);
			break;
		case 'b':
			if (inet_pton(AF_INET, optarg, &opt.src_base) != 1)
				die("--src-base: not an IPv4 address: %s", optarg);
			break;
		case 'N':
			opt.sources = num_arg(optarg, 1, MAX_SRCS);
			break;
		case 'c':
			opt.cookies = num_arg(optarg, 0, MAX_SRCS);
			break;

		default:
			usage();
		}
	}
	if (optind != argc || !have_to || !have_key)
		usage();
	if (opt.sources > 0 && opt.src_base.s_addr == 0)
		die("--sources needs --src-base");
	if (opt.nnames == 0)
		opt.kinds &= ~4u;
	if (opt.kinds == 0)
		die("--inits: no kind of Init left (named needs --name)");
	if (opt.cookies > (opt.sources > 0 ? opt.sources : 1))
		die("--cookies: more than the sources");
}

/* The precomputed datagrams, WIRE_INIT_LEN bytes each: Inits, or garbage. */
static uint8_t (*set)[WIRE_INIT_LEN], (*garbage)[WIRE_INIT_LEN];
static int fds[MAX_PORTS]; /* one socket per port */
static uint64_t seq;       /* datagrams prepared so far */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Slot i's Init: the (i mod n)th of the n kinds chosen (random, stranger, named). */
static void make_init(unsigned i, const uint8_t mac1_key[YIP_KEY_LEN])
{
	uint8_t *d = set[i], *msg1, s_priv[YIP_KEY_LEN], s_pub[YIP_KEY_LEN];
	uint8_t payload[WIRE_INIT_PAYLOAD];
	struct wire_init_payload pl = {.ciphers = 3};
	unsigned n = (unsigned)__builtin_popcount(opt.kinds), kind = 0, r = i % n;
	uint32_t sender, high;
	struct noise_hs hs;

	for (;; kind++)
		if ((opt.kinds >> kind & 1) != 0 && r-- == 0)
			break;
	do
		high = randombytes_uniform(1u << 16);
	while (high == 0);
	sender = high << 16 | i;
	msg1 = wire_init_put(d, sender);
	if (kind == 0) {
		randombytes_buf(msg1, WIRE_MSG1_LEN);
	} else {
		yip_key_generate(s_priv);
		if (kind == 1)
			yip_key_public(s_pub, s_priv);
		else
			memcpy(s_pub, opt.names[(i / n) % opt.nnames], YIP_KEY_LEN);
		noise_hs_init(&hs, true, (const uint8_t *)WIRE_PROLOGUE, WIRE_PROLOGUE_LEN, s_priv,
		              s_pub, opt.responder);
		yip_tai64n(pl.tai64n, yip_now_wall());
		wire_init_payload_put(payload, &pl);
		if (noise_write_msg1(&hs, payload, sizeof(payload), msg1, WIRE_MSG1_LEN) !=
		    WIRE_MSG1_LEN)
			die("noise_write_msg1 failed");
		noise_hs_wipe(&hs);
	}
	wire_init_mac1_put(d, mac1_key);
	memset(d + WIRE_INIT_MAC2, 0, WIRE_MAC_LEN);
}

/* Cookies by (source address, port): cookie[s * ports + p]. */
static uint8_t (*cookie)[WIRE_COOKIE_LEN];
static bool *have_cookie;
static uint64_t cookies_opened;
static struct cookie_jar jar;

static unsigned nsrc(void)
{
	return opt.sources > 0 ? opt.sources : 1;
}

/* Reads what came back on socket p (port index p); keeps the cookies that open. */
static void take_cookies(int fd, unsigned p)
{
	static uint8_t buf[BATCH][128];
	static uint8_t ctl[BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	uint64_t now = yip_now_mono();
	int n, i;

	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){buf[i], sizeof(buf[i])};
		m[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i],
		                               .msg_iovlen = 1,
		                               .msg_control = ctl[i],
		                               .msg_controllen = sizeof(ctl[i])};
	}
	n = recvmmsg(fd, m, BATCH, MSG_DONTWAIT, NULL);
	for (i = 0; i < n; i++) {
		struct wire_cookie c;
		struct cmsghdr *cm;
		unsigned slot, s = 0;

		if (!wire_cookie_get(&c, buf[i], m[i].msg_len))
			continue;
		slot = c.receiver & 0xffff;
		if (slot >= opt.set ||
		    c.receiver != ((uint32_t)set[slot][4] | (uint32_t)set[slot][5] << 8 |
		                   (uint32_t)set[slot][6] << 16 | (uint32_t)set[slot][7] << 24))
			continue;
		if (opt.sources > 0) {
			s = opt.sources; /* none, until IP_PKTINFO says */
			for (cm = CMSG_FIRSTHDR(&m[i].msg_hdr); cm != NULL;
			     cm = CMSG_NXTHDR(&m[i].msg_hdr, cm)) {
				struct in_pktinfo pi;

				if (cm->cmsg_level != IPPROTO_IP || cm->cmsg_type != IP_PKTINFO)
					continue;
				memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
				s = ntohl(pi.ipi_addr.s_addr) - ntohl(opt.src_base.s_addr);
			}
			if (s >= opt.cookies)
				continue;
		}
		memcpy(jar.last_mac1, set[slot] + WIRE_INIT_MAC1, WIRE_MAC_LEN);
		jar.sent = true;
		if (!cookie_jar_take(&jar, now, &c))
			continue;
		memcpy(cookie[s * opt.ports + p], jar.cookie, WIRE_COOKIE_LEN);
		have_cookie[s * opt.ports + p] = true;
		cookies_opened++;
	}
}

/* Sends one batch from port p: Inits, or garbage. Returns how many went. */
static unsigned send_batch(unsigned p, bool inits)
{
	static uint8_t scratch[BATCH][WIRE_INIT_LEN];
	static uint8_t ctl[BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	unsigned j;
	int n;

	for (j = 0; j < opt.batch; j++, seq++) {
		unsigned k = (unsigned)(seq % opt.set);
		unsigned s = (unsigned)(seq % nsrc());
		uint8_t *d = inits ? set[k] : garbage[k];

		if (inits && s < opt.cookies && have_cookie[s * opt.ports + p]) {
			memcpy(scratch[j], d, WIRE_INIT_LEN);
			wire_mac2_put(scratch[j], cookie[s * opt.ports + p]);
			d = scratch[j];
		}
		iov[j] = (struct iovec){d, WIRE_INIT_LEN};
		m[j].msg_hdr = (struct msghdr){.msg_name = &opt.to,
		                               .msg_namelen = sizeof(opt.to),
		                               .msg_iov = &iov[j],
		                               .msg_iovlen = 1};
		if (opt.sources > 0) {
			struct in_pktinfo pi = {0};
			struct cmsghdr *cm;

			pi.ipi_spec_dst.s_addr = htonl(ntohl(opt.src_base.s_addr) + s);
			m[j].msg_hdr.msg_control = ctl[j];
			m[j].msg_hdr.msg_controllen = sizeof(ctl[j]);
			cm = CMSG_FIRSTHDR(&m[j].msg_hdr);
			cm->cmsg_level = IPPROTO_IP;
			cm->cmsg_type = IP_PKTINFO;
			cm->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		}
	}
	n = sendmmsg(fds[p], m, opt.batch, 0);
	if (opt.cookies > 0)
		take_cookies(fds[p], p);
	return n > 0 ? (unsigned)n : 0;
}

/* Sleeps until sent datagrams are due at rate per second from since. */
static void pace(uint64_t since, uint64_t sent, double rate)
{
	uint64_t due = since + (uint64_t)((double)sent * 1e9 / rate), now = yip_now_mono();

	if (due > now) {
		struct timespec ts = {(time_t)((due - now) / 1000000000ULL),
		                      (long)((due - now) % 1000000000ULL)};
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	uint8_t mac1_key[YIP_KEY_LEN];
	uint64_t start, now, end, sent = 0, errors = 0, batches = 0;
	unsigned i, p;
	double secs;

	parse(argc, argv);
	if (yip_crypto_init() != 0)
		die("libsodium failed to initialise");
	set = calloc(opt.set, sizeof(*set));
	garbage = calloc(opt.set, sizeof(*garbage));
	cookie = calloc((size_t)nsrc() * opt.ports, sizeof(*cookie));
	have_cookie = calloc((size_t)nsrc() * opt.ports, sizeof(*have_cookie));
	if (set == NULL || garbage == NULL || cookie == NULL || have_cookie == NULL)
		die("out of memory");
	wire_mac1_key(mac1_key, opt.responder);
	cookie_jar_init(&jar, opt.responder);
	for (i = 0; i < opt.set; i++) {
		if (!opt.garbage)
			make_init(i, mac1_key);
		randombytes_buf(garbage[i], WIRE_INIT_LEN);
		memset(garbage[i], 0, 4);
		garbage[i][0] = GARBAGE;
	}
	for (p = 0; p < opt.ports; p++) {
		struct sockaddr_in any = {.sin_family = AF_INET};
		int on = 1;

		fds[p] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[p] < 0 || bind(fds[p], (struct sockaddr *)&any, sizeof(any)) != 0)
			die("socket: %s", strerror(errno));
		if (opt.cookies > 0 &&
		    setsockopt(fds[p], IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) != 0)
			die("IP_PKTINFO: %s", strerror(errno));
	}

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	start = yip_now_mono();
	end = start + (uint64_t)(opt.secs * 1e9);
	for (now = start; now < end && !stop; now = yip_now_mono(), batches++) {
		unsigned n;

		if (opt.rate > 0)
			pace(start, sent, opt.rate);
		n = send_batch((unsigned)(batches % opt.ports), !opt.garbage);
		sent += n;
		errors += opt.batch - n;
	}
	now = yip_now_mono();
	secs = (double)(now - start) / 1e9;
	printf("sent %llu secs %.2f rate %.0f cookies %llu errors %llu start %llu end %llu\n",
	       (unsigned long long)sent, secs, (double)sent / secs,
	       (unsigned long long)cookies_opened, (unsigned long long)errors,
	       (unsigned long long)start, (unsigned long long)now);
	return sent > 0 ? 0 : 1;
}
