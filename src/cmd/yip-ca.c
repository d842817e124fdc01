/*
 * yip-ca: the certificate authority of a CA-gated network, offline
 * (docs/membership.md). It makes the CA key, and signs certificates, root
 * sets and revocation lists (src/membership); it shows and verifies any
 * membership object. It never touches the network.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "addr/addr.h"
#include "config/lines.h"
#include "ctl/members.h"
#include "membership/member.h"
#include "util/file.h"
#include "util/hex.h"

enum { EXIT_INVALID = 1, EXIT_USAGE = 2 };

#define MAX_FILE      (1u << 20) /* bytes of any file yip-ca reads */
#define DEFAULT_DAYS  365
#define MAX_DAYS      36500
#define KEY_FILE_MODE 0600
#define OBJ_FILE_MODE 0644

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: yip-ca genkey [--out FILE [--force]]\n"
	    "           a new CA key pair; with --out, the key file (mode 0600) and the\n"
	    "           public key on stdout\n"
	    "       yip-ca pubkey FILE\n"
	    "           the public key of a CA key file\n"
	    "       yip-ca sign-cert --ca-key FILE --network NAME --name NAME\n"
	    "           (--request FILE | --key KEY --sign-key KEY) --addr PREFIX [--addr ...]\n"
	    "           [--group G ...] [--days N | --not-after DATE] [--not-before DATE]\n"
	    "           a certificate (default: valid from now for %d days)\n"
	    "       yip-ca sign-roots --ca-key FILE --network NAME [--serial N]\n"
	    "           (--root KEY@IP:PORT[,IP:PORT...] ... | --roots FILE)\n"
	    "           a root set (default serial: the current Unix time)\n"
	    "       yip-ca revoke --ca-key FILE --network NAME [--list OLD] [--serial N]\n"
	    "           [--cert FILE ...] [--key KEY ...]\n"
	    "           a revocation list: OLD's entries and the new ones\n"
	    "       yip-ca show FILE [--json] [--ca KEY [--network NAME]]\n"
	    "           any membership object in words; with --ca, checked too\n"
	    "       yip-ca verify --ca KEY --network NAME [--at DATE] [--revocations FILE]\n"
	    "           [--peer-key KEY] FILE\n"
	    "           prints the verdict (ok, expired, wrong_ca, ...); exit 0 if ok\n"
	    "       yip-ca --version | --help\n"
	    "\n"
	    "Objects are written to stdout, or to --out FILE (refused if FILE exists, unless\n"
	    "--force). FILE may be '-' for stdin. KEY is 64 hex digits; for --ca also a CA key\n"
	    "file. DATE is YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ (UTC) or @UNIX-SECONDS.\n"
	    "Exit status: 0 success, 1 verify: not valid (or a write failed), 2 usage or\n"
	    "input error. Reference: docs/membership.md\n",
	    DEFAULT_DAYS);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("yip-ca: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

static uint64_t now_unix(void)
{
	return (uint64_t)time(NULL);
}

/* ---- reading ------------------------------------------------------------------------ */

/* The whole of path ("-": stdin), NUL-terminated; exits on failure. */
static char *slurp(const char *path, size_t *len)
{
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC), rc;
	char *buf;

	if (fd < 0)
		die_usage("cannot read %s: %s", path, strerror(errno));
	rc = yip_read_fd(fd, MAX_FILE, &buf, len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc == -EFBIG)
		die_usage("%s: longer than %u bytes: not a yip file", path, MAX_FILE);
	if (rc == -ENOMEM)
		die_usage("out of memory");
	if (rc != 0)
		die_usage("cannot read %s: %s", path, strerror(-rc));
	return buf;
}

/* The object in the text file path, of kind want (0: any), into out. */
static size_t read_object(const char *path, uint8_t want, uint8_t *out, size_t cap)
{
	char err[256];
	size_t len, n;
	char *text = slurp(path, &len);

	if (member_unarmor(text, len, want, out, cap, &n, err, sizeof(err)) != 0)
		die_usage("%s: %s", path, err);
	free(text);
	return n;
}

/* A decoded object that fails its parse: exits naming the file and kind. */
static void parsed(enum member_verdict v, const char *path, uint8_t kind)
{
	if (v != MEMBER_OK)
		die_usage("%s: not a valid %s (its fields are malformed)", path,
		          member_kind_name(kind));
}

static void hex_key(const char *what, const char *s, uint8_t key[32])
{
	char reason[160];

	if (lines_hex_key(what, s, key, reason, sizeof(reason)) != 0)
		die_usage("%s", reason);
}

/* A CA key file: ca_private=<seed> and optionally ca_public=<key>. */
struct ca_file {
	const char *path;
	bool has_seed, has_public;
	uint8_t seed[32], pub[32];
	char reason[200];
};

static int ca_line(void *arg, unsigned line, char *s)
{
	struct ca_file *cf = arg;
	char *key, *value;
	uint8_t *dst;

	(void)line;
	if (!lines_pair(s, &key, &value)) {
		snprintf(cf->reason, sizeof(cf->reason), "expected key=value");
		return -1;
	}
	if (strcmp(key, "private") == 0 || strcmp(key, "public") == 0) {
		snprintf(cf->reason, sizeof(cf->reason),
		         "'%s=' is a yip node key; a CA key file has ca_private= (yip-ca genkey)",
		         key);
		return -1;
	}
	if (strcmp(key, "ca_private") == 0) {
		dst = cf->seed;
		cf->has_seed = true;
	} else if (strcmp(key, "ca_public") == 0) {
		dst = cf->pub;
		cf->has_public = true;
	} else {
		snprintf(cf->reason, sizeof(cf->reason), "unknown key '%s'", key);
		return -1;
	}
	return lines_hex_key(key, value, dst, cf->reason, sizeof(cf->reason));
}

/* Reads a CA key file; with need_secret, it must hold the private key. */
static void read_ca_file(const char *path, bool need_secret, uint8_t pub[32], uint8_t sec[64])
{
	struct ca_file cf = {.path = path};
	uint8_t derived[32], secret[64];
	unsigned at;
	size_t len;
	char *text = slurp(path, &len);

	if (lines_each(text, len, ca_line, &cf, &at, cf.reason, sizeof(cf.reason)) != 0)
		die_usage("%s:%u: %s", path, at, cf.reason);
	sodium_memzero(text, len);
	free(text);
	if (cf.has_seed) {
		member_ca_keypair(cf.seed, derived, secret);
		sodium_memzero(cf.seed, sizeof(cf.seed));
		if (cf.has_public && memcmp(derived, cf.pub, 32) != 0)
			die_usage("%s: ca_public= is not the public key of ca_private=", path);
		memcpy(pub, derived, 32);
		if (sec != NULL)
			memcpy(sec, secret, 64);
		sodium_memzero(secret, sizeof(secret));
		return;
	}
	if (need_secret)
		die_usage("%s: no ca_private= line (the CA's private key is needed to sign)", path);
	if (!cf.has_public)
		die_usage("%s: no ca_public= or ca_private= line: not a CA key file", path);
	memcpy(pub, cf.pub, 32);
}

/* --ca: 64 hex digits, or a CA key file. */
static void ca_public_arg(const char *s, uint8_t pub[32])
{
	if (strlen(s) == 64 && yip_hex_decode(pub, 32, s) == 0) {
		if (sodium_is_zero(pub, 32))
			die_usage("--ca: the all-zero key is no CA key");
		return;
	}
	if (access(s, R_OK) != 0)
		die_usage("--ca: '%.80s' is neither a public key (64 hex digits) nor a CA key file",
		          s);
	read_ca_file(s, false, pub, NULL);
}

/* YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ (or a space for T), @seconds. */
static uint64_t parse_date(const char *opt, const char *s)
{
	struct tm tm = {0};
	int y, mo, d, h = 0, mi = 0, sec = 0, n = -1;
	unsigned long long v;
	char sep;
	time_t t;

	if (s[0] == '@') {
		char *end;

		errno = 0;
		v = strtoull(s + 1, &end, 10);
		if (s[1] < '0' || s[1] > '9' || *end != '\0' || errno != 0)
			die_usage("%s '%s': expected @ and a number of seconds", opt, s);
		return v;
	}
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10 && s[n] == '\0') {
		/* the start of that day */
	} else if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2dZ%n", &y, &mo, &d, &sep, &h, &mi, &sec, &n) ==
	               7 &&
	           n == 20 && s[n] == '\0' && (sep == 'T' || sep == ' ')) {
	} else {
		die_usage("%s '%s': expected YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or @SECONDS", opt, s);
	}
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59)
		die_usage("%s '%s': no such date (UTC, from 1970)", opt, s);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1 || tm.tm_mday != d)
		die_usage("%s '%s': no such date", opt, s);
	return (uint64_t)t;
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v < min || v > max)
		die_usage("%s '%s': expected a number from %" PRIu64 " to %" PRIu64, opt, s, min,
		          max);
	return v;
}

static void network_arg(const char *s, char out[WIRE_NETWORK_MAX + 1])
{
	if (!wire_network_ok(s))
		die_usage("--network '%s': a network name is 1 to %d characters of a-z, 0-9, '.', "
		          "'_' and '-'",
		          s, WIRE_NETWORK_MAX);
	strcpy(out, s);
}

/* ---- options ------------------------------------------------------------------------ */

/* Options several commands take, which next_option handles (codes above any character). */
enum { OPT_OUT = 256, OPT_FORCE, OPT_CA_KEY, OPT_CA, OPT_NETWORK };

/* clang-format off */
/* --out FILE and --force: where an object goes. */
#define OUTPUT_OPTIONS \
	{"out", required_argument, NULL, OPT_OUT}, {"force", no_argument, NULL, OPT_FORCE}
/* --ca-key FILE and --network NAME, what signs for which network, and the
 * output: sign-cert, sign-roots, revoke. */
#define SIGNING_OPTIONS \
	{"ca-key", required_argument, NULL, OPT_CA_KEY}, \
	{"network", required_argument, NULL, OPT_NETWORK}, OUTPUT_OPTIONS
/* --ca KEY and --network NAME, what an object is checked against: show, verify. */
#define CHECKING_OPTIONS \
	{"ca", required_argument, NULL, OPT_CA}, {"network", required_argument, NULL, OPT_NETWORK}
/* clang-format on */

/* The values of the common options (o below). */
struct common {
	const char *out; /* NULL: stdout */
	bool force;
	const char *ca_key;
	bool have_ca;
	uint8_t ca[32];
	char network[WIRE_NETWORK_MAX + 1]; /* "": not given */
};

/* The next option (getopt_long) that is not one of the common ones, which go
 * into o; -1 after the last. An option not in opts exits. */
static int next_option(int argc, char **argv, const struct option *opts, struct common *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case '?':
			exit(EXIT_USAGE);
		case OPT_OUT:
			o->out = optarg;
			break;
		case OPT_FORCE:
			o->force = true;
			break;
		case OPT_CA_KEY:
			o->ca_key = optarg;
			break;
		case OPT_CA:
			ca_public_arg(optarg, o->ca);
			o->have_ca = true;
			break;
		case OPT_NETWORK:
			network_arg(optarg, o->network);
			break;
		default:
			return c;
		}
	}
	return -1;
}

/* After the options of cmd: exits if any argument is left. */
static void no_arguments(int argc, char **argv, const char *cmd)
{
	if (optind != argc)
		die_usage("%s: unexpected argument '%s'", cmd, argv[optind]);
}

/* The revocation list in path, which must be the CA's for network; on the heap. */
static struct member_revocations *read_revocations(const char *path, const uint8_t ca[32],
                                                   const char *network)
{
	struct member_revocations *r = malloc(sizeof(*r));
	enum member_verdict v;
	size_t n;

	if (r == NULL)
		die_usage("out of memory");
	n = read_object(path, WIRE_OBJ_REVOCATIONS, r->raw, sizeof(r->raw));
	parsed(member_revocations_parse(r, r->raw, n), path, WIRE_OBJ_REVOCATIONS);
	v = member_revocations_check(r, ca, network, 0);
	if (v != MEMBER_OK)
		die_usage("%s: %s (%s)", path, member_verdict_name(v), member_verdict_text(v));
	return r;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Writes text to path (NULL: stdout), refusing to replace a file unless force. */
static int write_text(const char *path, bool force, mode_t mode, const char *text)
{
	size_t len = strlen(text);
	int fd;

	if (path == NULL) {
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
			fprintf(stderr, "yip-ca: writing to stdout: %s\n", strerror(errno));
			return EXIT_INVALID;
		}
		return 0;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (force ? O_TRUNC : O_EXCL),
	          mode);
	if (fd < 0) {
		if (errno == EEXIST)
			die_usage("%s exists; not replacing it (--force to replace)", path);
		die_usage("cannot create %s: %s", path, strerror(errno));
	}
	/* A key file replaced with --force gets the mode a new one would. */
	if ((force && fchmod(fd, mode) != 0) || write(fd, text, len) != (ssize_t)len ||
	    fsync(fd) != 0) {
		fprintf(stderr, "yip-ca: writing %s: %s\n", path, strerror(errno));
		close(fd);
		return EXIT_INVALID;
	}
	if (close(fd) != 0) {
		fprintf(stderr, "yip-ca: writing %s: %s\n", path, strerror(errno));
		return EXIT_INVALID;
	}
	return 0;
}

/* comment lines (each "# ...\n") then the object's text form. */
static int write_object(const struct common *o, const char *comment, const uint8_t *obj, size_t len)
{
	size_t clen = strlen(comment), cap = clen + member_armor_size(len);
	char *text = malloc(cap);
	int rc;

	if (text == NULL)
		die_usage("out of memory");
	memcpy(text, comment, clen);
	if (member_armor(text + clen, cap - clen, obj, len) == 0)
		die_usage("cannot encode the object");
	rc = write_text(o->out, o->force, OBJ_FILE_MODE, text);
	free(text);
	return rc;
}

/* ---- genkey, pubkey ---------------------------------------------------------------------- */

static int cmd_genkey(int argc, char **argv)
{
	static const struct option opts[] = {OUTPUT_OPTIONS, {NULL, 0, NULL, 0}};
	struct common o = {0};
	uint8_t seed[32], pub[32], sec[64];
	char text[256], hs[65], hp[65];
	int rc;

	while (next_option(argc, argv, opts, &o) != -1)
		; /* --out and --force are all it takes */
	no_arguments(argc, argv, "genkey");
	randombytes_buf(seed, sizeof(seed));
	member_ca_keypair(seed, pub, sec);
	yip_hex_encode(hs, seed, 32);
	yip_hex_encode(hp, pub, 32);
	snprintf(text, sizeof(text),
	         "# yip CA key. Keep it offline: whoever holds it can admit anyone.\n"
	         "ca_private=%s\nca_public=%s\n",
	         hs, hp);
	rc = write_text(o.out, o.force, KEY_FILE_MODE, text);
	if (rc == 0 && o.out != NULL)
		printf("%s\n", hp);
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(sec, sizeof(sec));
	sodium_memzero(hs, sizeof(hs));
	sodium_memzero(text, sizeof(text));
	return rc;
}

static int cmd_pubkey(int argc, char **argv)
{
	uint8_t pub[32];
	char hp[65];

	if (argc != 2)
		die_usage("pubkey: expected one CA key file");
	read_ca_file(argv[1], false, pub, NULL);
	yip_hex_encode(hp, pub, 32);
	printf("%s\n", hp);
	return 0;
}

/* ---- sign-cert ---------------------------------------------------------------------------- */

static int cmd_sign_cert(int argc, char **argv)
{
	static const struct option opts[] = {
	    SIGNING_OPTIONS,
	    {"request", required_argument, NULL, 'r'},
	    {"key", required_argument, NULL, 'k'},
	    {"sign-key", required_argument, NULL, 's'},
	    {"name", required_argument, NULL, 'm'},
	    {"addr", required_argument, NULL, 'a'},
	    {"group", required_argument, NULL, 'g'},
	    {"days", required_argument, NULL, 'd'},
	    {"not-after", required_argument, NULL, 'A'},
	    {"not-before", required_argument, NULL, 'B'},
	    {NULL, 0, NULL, 0},
	};
	struct common o = {0};
	const char *request = NULL;
	bool have_key = false, have_sign = false;
	bool have_after = false, have_before = false;
	uint64_t days = 0;
	struct wire_cert f;
	struct member_cert cert;
	uint8_t ca_pub[32], ca_sec[64];
	char err[160], comment[1024], hk[65], t1[MEMBER_TIME_LEN], t2[MEMBER_TIME_LEN];
	int c, rc;

	memset(&f, 0, sizeof(f));
	while ((c = next_option(argc, argv, opts, &o)) != -1) {
		switch (c) {
		case 'r':
			request = optarg;
			break;
		case 'k':
			hex_key("--key", optarg, f.key);
			have_key = true;
			break;
		case 's':
			hex_key("--sign-key", optarg, f.sign_key);
			if (!crypto_core_ed25519_is_valid_point(f.sign_key))
				die_usage("--sign-key: not an Ed25519 public key");
			have_sign = true;
			break;
		case 'm':
			if (!wire_member_name_ok(optarg))
				die_usage("--name '%s': a member name is 1 to %d printable ASCII "
				          "characters, not starting or ending with a space",
				          optarg, WIRE_MEMBER_NAME_MAX);
			strcpy(f.name, optarg);
			break;
		case 'a':
			if (f.n_prefixes == WIRE_CERT_PREFIXES)
				die_usage("--addr: at most %d prefixes", WIRE_CERT_PREFIXES);
			if (yip_cidr_parse(optarg, true, &f.prefixes[f.n_prefixes], err,
			                   sizeof(err)) != 0)
				die_usage("--addr '%s': %s", optarg, err);
			for (unsigned i = 0; i < f.n_prefixes; i++)
				if (f.prefixes[i].family == f.prefixes[f.n_prefixes].family &&
				    f.prefixes[i].plen == f.prefixes[f.n_prefixes].plen &&
				    memcmp(f.prefixes[i].addr, f.prefixes[f.n_prefixes].addr, 16) ==
				        0)
					die_usage("--addr '%s' given twice", optarg);
			f.n_prefixes++;
			break;
		case 'g':
			if (f.n_groups == WIRE_CERT_GROUPS)
				die_usage("--group: at most %d groups", WIRE_CERT_GROUPS);
			if (!wire_group_ok(optarg))
				die_usage(
				    "--group '%s': a group name is 1 to %d characters of a-z, "
				    "0-9, '.', '_' and '-'",
				    optarg, WIRE_GROUP_MAX);
			for (unsigned i = 0; i < f.n_groups; i++)
				if (strcmp(f.groups[i], optarg) == 0)
					die_usage("--group '%s' given twice", optarg);
			strcpy(f.groups[f.n_groups++], optarg);
			break;
		case 'd':
			days = parse_u64("--days", optarg, 1, MAX_DAYS);
			break;
		case 'A':
			f.not_after = parse_date("--not-after", optarg);
			have_after = true;
			break;
		case 'B':
			f.not_before = parse_date("--not-before", optarg);
			have_before = true;
			break;
		}
	}
	no_arguments(argc, argv, "sign-cert");
	if (o.ca_key == NULL || o.network[0] == '\0' || f.name[0] == '\0' || f.n_prefixes == 0)
		die_usage(
		    "sign-cert: --ca-key, --network, --name and at least one --addr are needed");
	if (request != NULL && (have_key || have_sign))
		die_usage("sign-cert: --request, or --key with --sign-key, not both");
	if (request == NULL && !(have_key && have_sign))
		die_usage("sign-cert: the member's keys are needed: --request FILE (from yipd "
		          "--cert-request), or --key and --sign-key");
	if (days != 0 && have_after)
		die_usage("sign-cert: --days or --not-after, not both");
	if (request != NULL) {
		struct member_request req;
		uint8_t raw[WIRE_REQUEST_LEN];
		size_t n = read_object(request, WIRE_OBJ_REQUEST, raw, sizeof(raw));

		parsed(member_request_parse(&req, raw, n), request, WIRE_OBJ_REQUEST);
		if (member_request_check(&req) != MEMBER_OK)
			die_usage(
			    "%s: the request's self-signature does not verify (altered, or not "
			    "made by yipd --cert-request)",
			    request);
		memcpy(f.key, req.f.key, 32);
		memcpy(f.sign_key, req.f.sign_key, 32);
	}
	if (!have_before)
		f.not_before = now_unix();
	if (!have_after) {
		if (days == 0)
			days = DEFAULT_DAYS;
		f.not_after = f.not_before + days * 86400;
	}
	if (f.not_after <= f.not_before)
		die_usage("sign-cert: the certificate would end before it starts");
	strcpy(f.network, o.network);
	read_ca_file(o.ca_key, true, ca_pub, ca_sec);
	rc = member_cert_sign(&cert, &f, ca_sec);
	sodium_memzero(ca_sec, sizeof(ca_sec));
	if (rc != 0)
		die_usage("sign-cert: cannot sign these fields");
	yip_hex_encode(hk, f.key, 32);
	member_format_time(t1, f.not_before);
	member_format_time(t2, f.not_after);
	snprintf(comment, sizeof(comment),
	         "# yip certificate: \"%s\" in network %s\n# member key %s\n# valid %s to %s\n",
	         f.name, f.network, hk, t1, t2);
	return write_object(&o, comment, cert.raw, cert.len);
}

/* ---- sign-roots --------------------------------------------------------------------------- */

/* Adds a root: key, then addresses in addrs (separated by sep). */
static void add_root(struct wire_roots *r, const char *where, const char *keytext, char *addrs,
                     const char *sep)
{
	struct wire_root *e;
	char err[160], *save = NULL, *tok;

	if (r->n_roots == WIRE_ROOTS_MAX_ROOTS)
		die_usage("%s: at most %d roots", where, WIRE_ROOTS_MAX_ROOTS);
	e = &r->roots[r->n_roots];
	memset(e, 0, sizeof(*e));
	{
		char what[300];

		snprintf(what, sizeof(what), "%s: root key", where);
		hex_key(what, keytext, e->key);
	}
	for (unsigned i = 0; i < r->n_roots; i++)
		if (memcmp(r->roots[i].key, e->key, 32) == 0)
			die_usage("%s: root %s listed twice", where, keytext);
	for (tok = strtok_r(addrs, sep, &save); tok != NULL; tok = strtok_r(NULL, sep, &save)) {
		union yip_sockaddr *a = &e->addrs[e->n_addrs];

		if (e->n_addrs == WIRE_ROOT_ADDRS)
			die_usage("%s: at most %d addresses per root", where, WIRE_ROOT_ADDRS);
		if (yip_endpoint_parse(tok, 0, false, a, NULL, err, sizeof(err)) != 0)
			die_usage("%s: %s", where, err);
		if (!wire_endpoint_ok(a))
			die_usage("%s: %s is not an address a node can send to", where, tok);
		for (unsigned i = 0; i < e->n_addrs; i++)
			if (yip_sockaddr_eq(&e->addrs[i], a))
				die_usage("%s: %s listed twice", where, tok);
		e->n_addrs++;
	}
	if (e->n_addrs == 0)
		die_usage("%s: root %s has no address (KEY IP:PORT)", where, keytext);
	r->n_roots++;
}

struct roots_file {
	struct wire_roots *r;
	const char *path;
};

static int roots_line(void *arg, unsigned line, char *s)
{
	struct roots_file *rf = arg;
	char where[300], *sp = s + strcspn(s, " \t");

	snprintf(where, sizeof(where), "%s:%u", rf->path, line);
	if (*sp == '\0')
		die_usage("%s: expected KEY IP:PORT [IP:PORT...]", where);
	*sp++ = '\0';
	add_root(rf->r, where, s, sp, " \t");
	return 0;
}

static int cmd_sign_roots(int argc, char **argv)
{
	static const struct option opts[] = {
	    SIGNING_OPTIONS,
	    {"serial", required_argument, NULL, 's'},
	    {"root", required_argument, NULL, 'r'},
	    {"roots", required_argument, NULL, 'R'},
	    {NULL, 0, NULL, 0},
	};
	struct common o = {0};
	bool have_serial = false;
	struct wire_roots f;
	struct member_roots r;
	uint8_t ca_pub[32], ca_sec[64];
	char comment[512], t[MEMBER_TIME_LEN], reason[160];
	int c, rc;

	memset(&f, 0, sizeof(f));
	while ((c = next_option(argc, argv, opts, &o)) != -1) {
		switch (c) {
		case 's':
			f.serial = parse_u64("--serial", optarg, 1, UINT64_MAX);
			have_serial = true;
			break;
		case 'r': {
			char where[300], *at = strchr(optarg, '@');

			snprintf(where, sizeof(where), "--root '%s'", optarg);
			if (at == NULL)
				die_usage("%s: expected KEY@IP:PORT[,IP:PORT...]", where);
			*at = '\0';
			add_root(&f, where, optarg, at + 1, ",");
			break;
		}
		case 'R': {
			struct roots_file rf = {.r = &f, .path = optarg};
			unsigned at;
			size_t len;
			char *text = slurp(optarg, &len);

			if (lines_each(text, len, roots_line, &rf, &at, reason, sizeof(reason)) !=
			    0)
				die_usage("%s:%u: %s", optarg, at, reason);
			free(text);
			break;
		}
		}
	}
	no_arguments(argc, argv, "sign-roots");
	if (o.ca_key == NULL || o.network[0] == '\0')
		die_usage("sign-roots: --ca-key and --network are needed");
	strcpy(f.network, o.network);
	if (f.n_roots == 0)
		die_usage("sign-roots: no roots (--root KEY@IP:PORT or --roots FILE)");
	f.issued_at = now_unix();
	if (!have_serial)
		f.serial = f.issued_at;
	read_ca_file(o.ca_key, true, ca_pub, ca_sec);
	rc = member_roots_sign(&r, &f, ca_sec);
	sodium_memzero(ca_sec, sizeof(ca_sec));
	if (rc != 0)
		die_usage("sign-roots: cannot sign these fields");
	member_format_time(t, f.issued_at);
	snprintf(comment, sizeof(comment),
	         "# yip root set of network %s: serial %" PRIu64 ", %u root%s, issued %s\n",
	         f.network, f.serial, f.n_roots, f.n_roots == 1 ? "" : "s", t);
	return write_object(&o, comment, r.raw, r.len);
}

/* ---- revoke ------------------------------------------------------------------------------ */

static int cmd_revoke(int argc, char **argv)
{
	static const struct option opts[] = {
	    SIGNING_OPTIONS,
	    {"list", required_argument, NULL, 'l'},
	    {"cert", required_argument, NULL, 'C'},
	    {"key", required_argument, NULL, 'k'},
	    {"serial", required_argument, NULL, 's'},
	    {NULL, 0, NULL, 0},
	};
	struct common o = {0};
	const char *list = NULL;
	const char **certs = calloc((size_t)argc, sizeof(*certs));
	size_t n_certs = 0, n_new = 0, n_old = 0, n;
	uint8_t *entries = calloc((size_t)argc + WIRE_REVOKED_MAX, WIRE_REVOKED_ENTRY);
	struct member_revocations *old = NULL, *r = malloc(sizeof(*r));
	const char *network = o.network;
	char comment[512], t[MEMBER_TIME_LEN];
	uint8_t ca_pub[32], ca_sec[64];
	uint64_t serial = 0, issued;
	int c, rc;

	if (certs == NULL || entries == NULL || r == NULL)
		die_usage("out of memory");
	while ((c = next_option(argc, argv, opts, &o)) != -1) {
		switch (c) {
		case 'l':
			list = optarg;
			break;
		case 'C':
			certs[n_certs++] = optarg;
			break;
		case 'k': {
			uint8_t *e = entries + n_new++ * WIRE_REVOKED_ENTRY;

			e[0] = WIRE_REVOKED_KEY;
			hex_key("--key", optarg, e + 1);
			break;
		}
		case 's':
			serial = parse_u64("--serial", optarg, 1, UINT64_MAX);
			break;
		}
	}
	no_arguments(argc, argv, "revoke");
	if (o.ca_key == NULL || network[0] == '\0')
		die_usage("revoke: --ca-key and --network are needed");
	read_ca_file(o.ca_key, true, ca_pub, ca_sec);
	/* Certificates: revoked by hash, and only this CA's of this network. */
	for (size_t i = 0; i < n_certs; i++) {
		struct member_cert cert;
		uint8_t raw[WIRE_CERT_MAX], *e = entries + n_new++ * WIRE_REVOKED_ENTRY;
		enum member_verdict v;

		n = read_object(certs[i], WIRE_OBJ_CERT, raw, sizeof(raw));
		parsed(member_cert_parse(&cert, raw, n), certs[i], WIRE_OBJ_CERT);
		v = member_cert_check(&cert, ca_pub, network, cert.f.not_before);
		if (v != MEMBER_OK)
			die_usage("%s: not a certificate of this CA for network %s: %s (%s)",
			          certs[i], network, member_verdict_name(v),
			          member_verdict_text(v));
		e[0] = WIRE_REVOKED_CERT;
		member_cert_hash(&cert, e + 1);
	}
	/* The old list's entries stay. */
	if (list != NULL) {
		old = read_revocations(list, ca_pub, network);
		n_old = old->f.n;
		memcpy(entries + n_new * WIRE_REVOKED_ENTRY, member_revocations_entries(old),
		       n_old * WIRE_REVOKED_ENTRY);
	}
	issued = now_unix();
	if (serial == 0)
		serial = old != NULL && old->f.serial >= issued ? old->f.serial + 1 : issued;
	else if (old != NULL && serial <= old->f.serial)
		die_usage("revoke: --serial %" PRIu64 " is not above %s's serial %" PRIu64, serial,
		          list, old->f.serial);
	rc = member_revocations_sign(r, network, serial, issued, entries, n_new + n_old, ca_sec);
	sodium_memzero(ca_sec, sizeof(ca_sec));
	if (rc == -1)
		die_usage("revoke: more than %d revoked entries", WIRE_REVOKED_MAX);
	if (rc != 0)
		die_usage("revoke: out of memory");
	member_format_time(t, issued);
	snprintf(comment, sizeof(comment),
	         "# yip revocation list of network %s: serial %" PRIu64 ", %u revoked, issued %s\n",
	         network, serial, r->f.n, t);
	rc = write_object(&o, comment, r->raw, r->len);
	free(certs);
	free(entries);
	free(old);
	free(r);
	return rc;
}

/* ---- show, verify ------------------------------------------------------------------------- */

/* Any object, parsed. Large: on the heap. */
struct any {
	uint8_t kind;
	union {
		struct member_cert cert;
		struct member_roots roots;
		struct member_revocations revs;
		struct member_record record;
		struct member_request request;
	} u;
};

static struct any *read_any(const char *path)
{
	struct any *a = malloc(sizeof(*a));
	uint8_t *raw = malloc(WIRE_OBJ_MAX);
	enum member_verdict v = MEMBER_MALFORMED;
	size_t n;

	if (a == NULL || raw == NULL)
		die_usage("out of memory");
	n = read_object(path, 0, raw, WIRE_OBJ_MAX);
	a->kind = raw[0];
	switch (a->kind) {
	case WIRE_OBJ_CERT:
		v = member_cert_parse(&a->u.cert, raw, n);
		break;
	case WIRE_OBJ_ROOTS:
		v = member_roots_parse(&a->u.roots, raw, n);
		break;
	case WIRE_OBJ_REVOCATIONS:
		v = member_revocations_parse(&a->u.revs, raw, n);
		break;
	case WIRE_OBJ_RECORD:
		v = member_record_parse(&a->u.record, raw, n);
		break;
	case WIRE_OBJ_REQUEST:
		v = member_request_parse(&a->u.request, raw, n);
		break;
	}
	parsed(v, path, a->kind);
	free(raw);
	return a;
}

/* The check of a with the CA (NULL: only a request's self-signature);
 * network NULL means the object's own. */
static enum member_verdict check_any(const struct any *a, const uint8_t *ca, const char *network,
                                     const struct member_revocations *revs, const uint8_t *peer,
                                     uint64_t now)
{
	enum member_verdict v;

	switch (a->kind) {
	case WIRE_OBJ_CERT:
		if (network == NULL)
			network = a->u.cert.f.network;
		if (peer != NULL)
			return member_cert_admit(&a->u.cert, ca, network, revs, peer, now);
		v = member_cert_check(&a->u.cert, ca, network, now);
		return v == MEMBER_OK && member_is_revoked(revs, &a->u.cert) ? MEMBER_REVOKED : v;
	case WIRE_OBJ_ROOTS:
		return member_roots_check(&a->u.roots, ca,
		                          network != NULL ? network : a->u.roots.f.network, 0);
	case WIRE_OBJ_REVOCATIONS:
		return member_revocations_check(&a->u.revs, ca,
		                                network != NULL ? network : a->u.revs.f.network, 0);
	case WIRE_OBJ_RECORD:
		return member_record_check(&a->u.record, ca,
		                           network != NULL ? network : a->u.record.cert.f.network,
		                           revs, now);
	default:
		return member_request_check(&a->u.request);
	}
}

static void print_line(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
}

static int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
	    CHECKING_OPTIONS,
	    {"json", no_argument, NULL, 'j'},
	    {NULL, 0, NULL, 0},
	};
	struct common o = {0};
	bool json = false;
	char *text;
	uint64_t now = now_unix();
	enum member_verdict v = MEMBER_OK;
	struct any *a;
	cJSON *j = NULL;
	int c;

	while ((c = next_option(argc, argv, opts, &o)) != -1)
		if (c == 'j')
			json = true;
	if (optind != argc - 1)
		die_usage("show: expected one FILE");
	if (o.network[0] != '\0' && !o.have_ca)
		die_usage("show: --network needs --ca");
	a = read_any(argv[optind]);
	/* A request checks itself; the others need the CA. */
	if (o.have_ca || a->kind == WIRE_OBJ_REQUEST)
		v = check_any(a, o.ca, o.network[0] ? o.network : NULL, NULL, NULL, now);
	if (json) {
		switch (a->kind) {
		case WIRE_OBJ_CERT:
			j = yip_ctl_cert_json(&a->u.cert, now);
			break;
		case WIRE_OBJ_ROOTS:
			j = yip_ctl_roots_json(&a->u.roots);
			break;
		case WIRE_OBJ_REVOCATIONS:
			j = yip_ctl_revocations_json(&a->u.revs);
			break;
		case WIRE_OBJ_RECORD:
			j = yip_ctl_record_json(&a->u.record, now);
			break;
		default:
			j = yip_ctl_request_json(&a->u.request);
		}
		if (j != NULL && (o.have_ca || a->kind == WIRE_OBJ_REQUEST) &&
		    (cJSON_AddStringToObject(j, "check", member_verdict_name(v)) == NULL ||
		     cJSON_AddStringToObject(j, "check_text", member_verdict_text(v)) == NULL)) {
			cJSON_Delete(j);
			j = NULL;
		}
		if (j == NULL || (text = cJSON_Print(j)) == NULL)
			die_usage("out of memory");
		printf("%s\n", text);
		cJSON_free(text);
		cJSON_Delete(j);
	} else {
		switch (a->kind) {
		case WIRE_OBJ_CERT:
			member_cert_describe(&a->u.cert, now, print_line, NULL);
			break;
		case WIRE_OBJ_ROOTS:
			member_roots_describe(&a->u.roots, print_line, NULL);
			break;
		case WIRE_OBJ_REVOCATIONS:
			member_revocations_describe(&a->u.revs, print_line, NULL);
			break;
		case WIRE_OBJ_RECORD:
			member_record_describe(&a->u.record, now, print_line, NULL);
			break;
		default:
			member_request_describe(&a->u.request, print_line, NULL);
		}
		if (o.have_ca || a->kind == WIRE_OBJ_REQUEST)
			printf("  check:       %s: %s\n", member_verdict_name(v),
			       member_verdict_text(v));
		else
			printf("  check:       not checked (give --ca KEY)\n");
	}
	free(a);
	return fflush(stdout) == 0 ? 0 : EXIT_INVALID;
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
	    CHECKING_OPTIONS,
	    {"at", required_argument, NULL, 'a'},
	    {"revocations", required_argument, NULL, 'r'},
	    {"peer-key", required_argument, NULL, 'p'},
	    {NULL, 0, NULL, 0},
	};
	const char *revs_path = NULL;
	uint8_t peer[32];
	bool have_peer = false;
	uint64_t now = now_unix();
	struct common o = {0};
	struct member_revocations *revs = NULL;
	enum member_verdict v;
	struct any *a;
	int c;

	while ((c = next_option(argc, argv, opts, &o)) != -1) {
		switch (c) {
		case 'a':
			now = parse_date("--at", optarg);
			break;
		case 'r':
			revs_path = optarg;
			break;
		case 'p':
			hex_key("--peer-key", optarg, peer);
			have_peer = true;
			break;
		}
	}
	if (optind != argc - 1)
		die_usage("verify: expected one FILE");
	if (!o.have_ca || o.network[0] == '\0')
		die_usage("verify: --ca and --network are needed");
	if (revs_path != NULL)
		revs = read_revocations(revs_path, o.ca, o.network);
	a = read_any(argv[optind]);
	if (have_peer && a->kind != WIRE_OBJ_CERT)
		die_usage("verify: --peer-key is for certificates");
	v = check_any(a, o.ca, o.network, revs, have_peer ? peer : NULL, now);
	printf("%s\n", member_verdict_name(v));
	if (v != MEMBER_OK)
		fprintf(stderr, "yip-ca: %s: %s\n", argv[optind], member_verdict_text(v));
	free(a);
	free(revs);
	return v == MEMBER_OK ? 0 : EXIT_INVALID;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
	    {"genkey", cmd_genkey},         {"pubkey", cmd_pubkey}, {"sign-cert", cmd_sign_cert},
	    {"sign-roots", cmd_sign_roots}, {"revoke", cmd_revoke}, {"show", cmd_show},
	    {"verify", cmd_verify},
	};

	if (sodium_init() < 0) {
		fprintf(stderr, "yip-ca: libsodium failed to initialise\n");
		return EXIT_INVALID;
	}
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("yip-ca %s\n", YIP_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "yip-ca: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
