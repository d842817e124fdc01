/*
 * IP addresses, prefixes and UDP endpoints: parsing and formatting.
 *
 * Parsing is strict on purpose: a configuration typo should be reported, not
 * silently turned into a different address. Addresses go through inet_pton
 * only; host names are accepted only for endpoints and only when asked to.
 */
#include "addr/addr.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define HOSTNAME_MAX 253 /* longest DNS name in text form */

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void __attribute__((format(printf, 3, 4)))
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static size_t family_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

static size_t family_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

/*
 * Parses a decimal number of at most maxdigits digits, no sign, no spaces and
 * nothing after it. Returns 0 and the value, or -1.
 */
static int parse_decimal(const char *s, size_t maxdigits, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (s[0] == '\0')
		return -1;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= maxdigits)
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Port 1..65535; writes a reason to err on failure. */
static int parse_port(const char *s, uint16_t *port, char *err, size_t errlen)
{
	unsigned long v;

	if (s[0] == '\0') {
		set_err(err, errlen, "missing port number after ':'");
		return -1;
	}
	if (parse_decimal(s, 5, &v) < 0 || v == 0 || v > 65535) {
		set_err(err, errlen, "bad port '%s' (expected a number from 1 to 65535)", s);
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

/*
 * Parses a bare IPv4 or IPv6 address (no brackets, port or prefix) into addr,
 * returning its family, or AF_UNSPEC with a reason in err.
 */
static int parse_ip(const char *s, uint8_t addr[16], char *err, size_t errlen)
{
	if (strchr(s, '%') != NULL) {
		set_err(err, errlen, "IPv6 scope ids ('%s') are not supported", s);
		return AF_UNSPEC;
	}
	if (inet_pton(AF_INET, s, addr) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, addr) == 1)
		return AF_INET6;
	set_err(err, errlen, "'%s' is not an IPv4 or IPv6 address", s);
	return AF_UNSPEC;
}

/* Copies s[0..len) into buf (bufsize bytes) as a string; -1 if it does not fit. */
static int copy_part(char *buf, size_t bufsize, const char *s, size_t len)
{
	if (len >= bufsize)
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return 0;
}

/* True if the first plen bits of a and b are equal. */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned int plen)
{
	unsigned int full = plen / 8, rest = plen % 8;
	uint8_t mask;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	mask = (uint8_t)(0xff00U >> rest);
	return ((a[full] ^ b[full]) & mask) == 0;
}

/* True if any bit past plen is set in addr (of nbytes bytes). */
static bool host_bits_set(const uint8_t *addr, size_t nbytes, unsigned int plen)
{
	size_t i;

	for (i = plen / 8; i < nbytes; i++) {
		uint8_t keep = i == plen / 8 ? (uint8_t)(0xff00U >> (plen % 8)) : 0;

		if (addr[i] & (uint8_t)~keep)
			return true;
	}
	return false;
}

static void clear_host_bits(uint8_t *addr, size_t nbytes, unsigned int plen)
{
	size_t i;

	for (i = plen / 8; i < nbytes; i++)
		addr[i] &= i == plen / 8 ? (uint8_t)(0xff00U >> (plen % 8)) : 0;
}

static int parse_plen(const char *s, int family, uint8_t *plen, char *err, size_t errlen)
{
	unsigned long v;

	if (s[0] == '\0') {
		set_err(err, errlen, "missing prefix length after '/'");
		return -1;
	}
	if (parse_decimal(s, 3, &v) < 0) {
		set_err(err, errlen, "bad prefix length '%s'", s);
		return -1;
	}
	if (v > family_bits(family)) {
		set_err(err, errlen, "prefix length %lu > %zu", v, family_bits(family));
		return -1;
	}
	*plen = (uint8_t)v;
	return 0;
}

int yip_cidr_parse(const char *s, bool allow_host, struct yip_cidr *out, char *err, size_t errlen)
{
	char ip[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t iplen = slash != NULL ? (size_t)(slash - s) : strlen(s);
	struct yip_cidr c;
	char fixed[YIP_ADDRSTRLEN];

	memset(&c, 0, sizeof(c));
	memset(out, 0, sizeof(*out));
	if (slash == NULL && !allow_host) {
		set_err(err, errlen, "'%s' has no prefix length (expected address/length)", s);
		return -1;
	}
	if (copy_part(ip, sizeof(ip), s, iplen) < 0) {
		set_err(err, errlen, "'%.*s' is not an IPv4 or IPv6 address", 64, s);
		return -1;
	}
	c.family = parse_ip(ip, c.addr, err, errlen);
	if (c.family == AF_UNSPEC)
		return -1;
	c.plen = (uint8_t)family_bits(c.family);
	if (slash != NULL && parse_plen(slash + 1, c.family, &c.plen, err, errlen) < 0)
		return -1;
	if (host_bits_set(c.addr, family_bytes(c.family), c.plen)) {
		clear_host_bits(c.addr, family_bytes(c.family), c.plen);
		yip_cidr_format(&c, fixed, sizeof(fixed));
		set_err(err, errlen, "host bits set in '%s' (did you mean %s?)", s, fixed);
		return -1;
	}
	*out = c;
	return 0;
}

void yip_cidr_format(const struct yip_cidr *c, char *out, size_t outlen)
{
	char ip[INET6_ADDRSTRLEN];

	if (outlen == 0)
		return;
	if ((c->family != AF_INET && c->family != AF_INET6) ||
	    inet_ntop(c->family, c->addr, ip, sizeof(ip)) == NULL) {
		snprintf(out, outlen, "(invalid prefix)");
		return;
	}
	snprintf(out, outlen, "%s/%u", ip, (unsigned int)c->plen);
}

bool yip_cidr_contains(const struct yip_cidr *c, int family, const uint8_t *addr)
{
	if (c->family != family || c->plen > family_bits(family))
		return false;
	return prefix_equal(c->addr, addr, c->plen);
}

bool yip_cidr_overlaps(const struct yip_cidr *a, const struct yip_cidr *b)
{
	unsigned int plen = a->plen < b->plen ? a->plen : b->plen;

	if (a->family != b->family || plen > family_bits(a->family))
		return false;
	return prefix_equal(a->addr, b->addr, plen);
}

static void fill_sockaddr(union yip_sockaddr *out, int family, const uint8_t *addr, uint16_t port)
{
	memset(out, 0, sizeof(*out));
	if (family == AF_INET) {
		out->in4.sin_family = AF_INET;
		out->in4.sin_port = htons(port);
		memcpy(&out->in4.sin_addr, addr, 4);
	} else {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = htons(port);
		memcpy(&out->in6.sin6_addr, addr, 16);
	}
}

/*
 * Letters, digits, '-' and '.', as in DNS names; everything else is a typo.
 * The last label may not start with a digit: no top-level domain does, and it
 * keeps getaddrinfo from reading inet_aton forms such as "0x7f.1" as addresses.
 */
static bool valid_hostname(const char *s)
{
	size_t i, len = strlen(s), end;

	if (len == 0 || len > HOSTNAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
			return false;
	}
	/* Find the start of the last label, ignoring one trailing dot ("host.example."). */
	end = s[len - 1] == '.' ? len - 1 : len;
	i = end;
	while (i > 0 && s[i - 1] != '.')
		i--;
	return i == end || !(s[i] >= '0' && s[i] <= '9');
}

/* True for strings that can only have been meant as an IPv4 address. */
static bool looks_like_ipv4(const char *s)
{
	return s[0] != '\0' && strspn(s, "0123456789.") == strlen(s);
}

static int resolve_host(const char *host, uint16_t port, int family, union yip_sockaddr *out,
                        char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family;
	hints.ai_socktype = SOCK_DGRAM;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0 || res == NULL) {
		set_err(err, errlen, "cannot resolve '%s'%s: %s", host,
		        family == AF_INET    ? " to an IPv4 address"
		        : family == AF_INET6 ? " to an IPv6 address"
		                             : "",
		        rc != 0 ? gai_strerror(rc) : "no addresses");
		if (res != NULL)
			freeaddrinfo(res);
		return -1;
	}
	/* getaddrinfo already ordered the results by RFC 6724 preference. */
	if (res->ai_family == AF_INET)
		fill_sockaddr(out, AF_INET,
		              (const uint8_t *)&((struct sockaddr_in *)res->ai_addr)->sin_addr,
		              port);
	else if (res->ai_family == AF_INET6)
		fill_sockaddr(out, AF_INET6,
		              (const uint8_t *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr,
		              port);
	else
		rc = -1;
	freeaddrinfo(res);
	if (rc != 0) {
		set_err(err, errlen, "cannot resolve '%s': no IPv4 or IPv6 address", host);
		return -1;
	}
	return 0;
}

/*
 * Splits s into the host part (brackets removed) and the port text (NULL if
 * absent). Returns 0, or -1 with a reason in err.
 */
static int split_endpoint(const char *s, char *host, size_t hostsize, const char **port,
                          bool *bracketed, char *err, size_t errlen)
{
	const char *orig = s, *colon, *close;

	*port = NULL;
	*bracketed = s[0] == '[';
	if (*bracketed) {
		close = strchr(s, ']');
		if (close == NULL) {
			set_err(err, errlen, "missing ']' in '%s'", s);
			return -1;
		}
		if (close[1] != '\0' && close[1] != ':') {
			set_err(err, errlen, "unexpected text after ']' in '%s'", s);
			return -1;
		}
		if (close[1] == ':')
			*port = close + 2;
		s++;
		colon = close;
	} else {
		colon = strchr(s, ':');
		/* More than one colon: an IPv6 address without brackets, so no port. */
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			colon = NULL;
		if (colon != NULL)
			*port = colon + 1;
	}
	if (copy_part(host, hostsize, s, colon != NULL ? (size_t)(colon - s) : strlen(s)) < 0) {
		set_err(err, errlen, "address too long in '%.*s'", 64, s);
		return -1;
	}
	if (host[0] == '\0') {
		set_err(err, errlen, "missing address in '%s'", orig);
		return -1;
	}
	return 0;
}

/* Parses the host part of an endpoint into out (port filled in by the caller). */
static bool is_literal(const char *host, bool bracketed)
{
	return bracketed || strchr(host, ':') != NULL || strchr(host, '%') != NULL ||
	       looks_like_ipv4(host);
}

static int parse_endpoint_host(const char *host, bool bracketed, bool resolve, int family,
                               uint16_t port, union yip_sockaddr *out, char *err, size_t errlen)
{
	uint8_t addr[16];

	if (is_literal(host, bracketed)) {
		int lit = parse_ip(host, addr, err, errlen);
		if (lit == AF_UNSPEC)
			return -1;
		if (bracketed && lit != AF_INET6) {
			set_err(err, errlen, "brackets are only for IPv6 addresses ('[%s]')", host);
			return -1;
		}
		fill_sockaddr(out, lit, addr, port);
		return 0;
	}
	if (!resolve) {
		set_err(err, errlen, "'%s' is not an IP address (host names are not allowed here)",
		        host);
		return -1;
	}
	if (!valid_hostname(host)) {
		set_err(err, errlen, "'%s' is not a valid host name", host);
		return -1;
	}
	return resolve_host(host, port, family, out, err, errlen);
}

int yip_endpoint_parse(const char *s, uint16_t default_port, bool resolve, union yip_sockaddr *out,
                       bool *port_given, char *err, size_t errlen)
{
	return yip_endpoint_parse_family(s, default_port, resolve, AF_UNSPEC, out, port_given, err,
	                                 errlen);
}

bool yip_endpoint_is_name(const char *s)
{
	char host[HOSTNAME_MAX + 1], err[8];
	const char *porttext;
	bool bracketed;

	return split_endpoint(s, host, sizeof(host), &porttext, &bracketed, err, sizeof(err)) ==
	           0 &&
	       !is_literal(host, bracketed);
}

int yip_listen_family(const union yip_sockaddr *listen)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (listen->sa.sa_family == AF_INET)
		return AF_INET;
	if (listen->sa.sa_family != AF_INET6 ||
	    memcmp(&listen->in6.sin6_addr, &any6, sizeof(any6)) == 0)
		return AF_UNSPEC; /* dual-stack: [::] with IPV6_V6ONLY off */
	return memcmp(listen->in6.sin6_addr.s6_addr, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0
	           ? AF_INET
	           : AF_INET6;
}

bool yip_listen_reaches(const union yip_sockaddr *listen, const union yip_sockaddr *to)
{
	int fam = yip_listen_family(listen), tofam = to->sa.sa_family;

	if (tofam == AF_INET6 &&
	    memcmp(to->in6.sin6_addr.s6_addr, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0)
		tofam = AF_INET;
	return fam == AF_UNSPEC || fam == tofam;
}

int yip_endpoint_parse_family(const char *s, uint16_t default_port, bool resolve, int family,
                              union yip_sockaddr *out, bool *port_given, char *err, size_t errlen)
{
	char host[HOSTNAME_MAX + 1];
	const char *porttext;
	bool bracketed;
	uint16_t port = default_port;

	memset(out, 0, sizeof(*out));
	if (port_given != NULL)
		*port_given = false;
	if (split_endpoint(s, host, sizeof(host), &porttext, &bracketed, err, errlen) < 0)
		return -1;
	if (porttext != NULL) {
		if (parse_port(porttext, &port, err, errlen) < 0)
			return -1;
	} else if (default_port == 0) {
		if (!bracketed && strchr(host, ':') != NULL)
			set_err(err, errlen, "missing port in '%s' (write IPv6 as [address]:port)",
			        s);
		else
			set_err(err, errlen, "missing port in '%s' (expected address:port)", s);
		return -1;
	}
	if (parse_endpoint_host(host, bracketed, resolve, family, port, out, err, errlen) < 0) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	if (port_given != NULL)
		*port_given = porttext != NULL;
	return 0;
}

static bool is_v4mapped(const struct sockaddr_in6 *in6)
{
	return memcmp(in6->sin6_addr.s6_addr, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

void yip_sockaddr_format(const union yip_sockaddr *a, char *out, size_t outlen)
{
	char ip[INET6_ADDRSTRLEN], scope[IF_NAMESIZE + 1] = "";

	if (outlen == 0)
		return;
	if (a->sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &a->in4.sin_addr, ip, sizeof(ip));
		snprintf(out, outlen, "%s:%u", ip, (unsigned int)ntohs(a->in4.sin_port));
	} else if (a->sa.sa_family == AF_INET6 && is_v4mapped(&a->in6)) {
		inet_ntop(AF_INET, &a->in6.sin6_addr.s6_addr[12], ip, sizeof(ip));
		snprintf(out, outlen, "%s:%u", ip, (unsigned int)ntohs(a->in6.sin6_port));
	} else if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		if (a->in6.sin6_scope_id != 0) {
			scope[0] = '%';
			if (if_indextoname(a->in6.sin6_scope_id, scope + 1) == NULL)
				snprintf(scope, sizeof(scope), "%%%u",
				         (unsigned int)a->in6.sin6_scope_id);
		}
		snprintf(out, outlen, "[%s%s]:%u", ip, scope,
		         (unsigned int)ntohs(a->in6.sin6_port));
	} else {
		snprintf(out, outlen, "(no address)");
	}
}

socklen_t yip_sockaddr_len(const union yip_sockaddr *a)
{
	switch (a->sa.sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

bool yip_sockaddr_eq(const union yip_sockaddr *a, const union yip_sockaddr *b)
{
	union yip_sockaddr x = *a, y = *b;

	/* Compare in one family so that 1.2.3.4 equals ::ffff:1.2.3.4. */
	yip_sockaddr_to_v6(&x);
	yip_sockaddr_to_v6(&y);
	if (x.sa.sa_family != y.sa.sa_family)
		return false;
	if (x.sa.sa_family != AF_INET6)
		return x.sa.sa_family == AF_UNSPEC;
	return x.in6.sin6_port == y.in6.sin6_port &&
	       memcmp(&x.in6.sin6_addr, &y.in6.sin6_addr, sizeof(x.in6.sin6_addr)) == 0;
}

void yip_sockaddr_to_v6(union yip_sockaddr *a)
{
	struct sockaddr_in6 in6;

	if (a->sa.sa_family != AF_INET)
		return;
	memset(&in6, 0, sizeof(in6));
	in6.sin6_family = AF_INET6;
	in6.sin6_port = a->in4.sin_port;
	memcpy(in6.sin6_addr.s6_addr, v4mapped_prefix, sizeof(v4mapped_prefix));
	memcpy(&in6.sin6_addr.s6_addr[12], &a->in4.sin_addr, 4);
	memset(a, 0, sizeof(*a));
	a->in6 = in6;
}

/* a as IPv4 (4 bytes into ip4) if it is AF_INET or IPv4-mapped AF_INET6. */
static bool as_v4(const union yip_sockaddr *a, uint8_t ip4[4])
{
	if (a->sa.sa_family == AF_INET) {
		memcpy(ip4, &a->in4.sin_addr, 4);
		return true;
	}
	if (a->sa.sa_family == AF_INET6 &&
	    memcmp(a->in6.sin6_addr.s6_addr, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0) {
		memcpy(ip4, a->in6.sin6_addr.s6_addr + 12, 4);
		return true;
	}
	return false;
}

size_t yip_sockaddr_source(const union yip_sockaddr *a, uint8_t out[YIP_SOURCE_LEN])
{
	memset(out, 0, YIP_SOURCE_LEN);
	if (as_v4(a, out + 1)) {
		out[0] = 4;
		return 5;
	}
	if (a->sa.sa_family != AF_INET6)
		return 0;
	out[0] = 6;
	memcpy(out + 1, a->in6.sin6_addr.s6_addr, 8);
	return 9;
}

enum yip_scope yip_sockaddr_scope(const union yip_sockaddr *a)
{
	static const uint8_t zero[16];
	uint8_t v4[4];

	if (as_v4(a, v4)) {
		uint16_t port = a->sa.sa_family == AF_INET ? a->in4.sin_port : a->in6.sin6_port;
		uint32_t ip =
		    (uint32_t)v4[0] << 24 | (uint32_t)v4[1] << 16 | (uint32_t)v4[2] << 8 | v4[3];

		if (port == 0 || ip >> 24 == 0 || ip == 0xffffffffu || ip >> 28 >= 0xe)
			return YIP_SCOPE_INVALID; /* 0/8, broadcast, multicast and 240/4 */
		if (ip >> 24 == 127)
			return YIP_SCOPE_LOOPBACK;
		if (ip >> 16 == 0xa9fe)
			return YIP_SCOPE_LINK_LOCAL;
		if (ip >> 24 == 10 || ip >> 20 == 0xac1 || ip >> 16 == 0xc0a8 || ip >> 22 == 0x191)
			return YIP_SCOPE_PRIVATE;
		return YIP_SCOPE_GLOBAL;
	}
	if (a->sa.sa_family == AF_INET6) {
		const uint8_t *ip = a->in6.sin6_addr.s6_addr;

		if (a->in6.sin6_port == 0 || ip[0] == 0xff || memcmp(ip, zero, 16) == 0)
			return YIP_SCOPE_INVALID;
		if (memcmp(ip, zero, 15) == 0 && ip[15] == 1)
			return YIP_SCOPE_LOOPBACK;
		if (ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80)
			return YIP_SCOPE_LINK_LOCAL;
		if ((ip[0] & 0xfe) == 0xfc)
			return YIP_SCOPE_PRIVATE;
		return YIP_SCOPE_GLOBAL;
	}
	return YIP_SCOPE_INVALID;
}
