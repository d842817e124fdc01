/* IP addresses, prefixes and UDP endpoints: parsing and formatting. */
#ifndef YIP_ADDR_ADDR_H
#define YIP_ADDR_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A socket address of either family. */
union yip_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

/* An IPv4 or IPv6 prefix. addr holds 4 or 16 bytes; bits past plen are zero. */
struct yip_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t plen;
	uint8_t addr[16];
};

#define YIP_ADDRSTRLEN 64 /* enough for "[v6%scope]:port" and "v6/128" */

/*
 * Parses "a.b.c.d/len" or "v6addr/len". Without "/len" the prefix is a host
 * (/32 or /128) only if allow_host is true. Host bits set past the prefix
 * length are an error (so typos are caught), as is any trailing garbage.
 * Returns 0, or -1 with a message in err (e.g. "prefix length 33 > 32").
 */
int yip_cidr_parse(const char *s, bool allow_host, struct yip_cidr *out, char *err, size_t errlen);

/* Writes "addr/len". */
void yip_cidr_format(const struct yip_cidr *c, char *out, size_t outlen);

/* True if addr (4 or 16 bytes of the prefix's family) lies inside the prefix. */
bool yip_cidr_contains(const struct yip_cidr *c, int family, const uint8_t *addr);

/* True if the two prefixes overlap (one contains the other). */
bool yip_cidr_overlaps(const struct yip_cidr *a, const struct yip_cidr *b);

/*
 * Parses a UDP endpoint: "a.b.c.d:port", "[v6]:port", "host:port". When
 * default_port is non-zero the port may be omitted ("a.b.c.d", "[v6]", "v6",
 * "host"); *port_given tells whether it was present (may be NULL). Host names
 * are resolved with getaddrinfo only if resolve is true, otherwise they are
 * an error. Returns 0, or -1 with a message in err.
 */
int yip_endpoint_parse(const char *s, uint16_t default_port, bool resolve, union yip_sockaddr *out,
                       bool *port_given, char *err, size_t errlen);

/*
 * The same, but a host name is resolved to an address of family (AF_INET or
 * AF_INET6; an error if it has none), or with AF_UNSPEC to the first one
 * getaddrinfo gives.
 */
int yip_endpoint_parse_family(const char *s, uint16_t default_port, bool resolve, int family,
                              union yip_sockaddr *out, bool *port_given, char *err, size_t errlen);

/* True if the endpoint text s names a host rather than an IP address. */
bool yip_endpoint_is_name(const char *s);

/*
 * The family a UDP socket bound to listen can send to: AF_INET or AF_INET6,
 * or AF_UNSPEC for both (AF_UNSPEC or [::]: a dual-stack socket). An
 * IPv4-mapped listen address is AF_INET.
 */
int yip_listen_family(const union yip_sockaddr *listen);

/* True if a socket bound to listen can send to `to` (see yip_listen_family). */
bool yip_listen_reaches(const union yip_sockaddr *listen, const union yip_sockaddr *to);

/* Writes "a.b.c.d:port" or "[v6]:port" (IPv4-mapped IPv6 printed as IPv4). */
void yip_sockaddr_format(const union yip_sockaddr *a, char *out, size_t outlen);

/* Length of the sockaddr for its family (for sendto/bind). */
socklen_t yip_sockaddr_len(const union yip_sockaddr *a);

/* Equality of family, address and port (IPv4 and IPv4-mapped IPv6 compare equal). */
bool yip_sockaddr_eq(const union yip_sockaddr *a, const union yip_sockaddr *b);

/* Converts an AF_INET address to IPv4-mapped AF_INET6 (for dual-stack sockets); others unchanged.
 */
void yip_sockaddr_to_v6(union yip_sockaddr *a);

/*
 * The part of a source address that one sender controls, for per-source
 * budgets: an IPv4 address (also when IPv4-mapped), or the /64 of an IPv6
 * address (every host gets a whole /64, so one attacker holds 2^64 of
 * them). Writes a family byte (4 or 6) and 4 or 8 address bytes; returns
 * the length (5 or 9), 0 for any other family.
 */
#define YIP_SOURCE_LEN 9
size_t yip_sockaddr_source(const union yip_sockaddr *a, uint8_t out[YIP_SOURCE_LEN]);

/* What an address is, for deciding whether to send to one we were told of. */
enum yip_scope {
	YIP_SCOPE_INVALID,    /* no port, unspecified, multicast, broadcast, other family */
	YIP_SCOPE_LOOPBACK,   /* 127/8, ::1 */
	YIP_SCOPE_LINK_LOCAL, /* 169.254/16, fe80::/10 */
	YIP_SCOPE_PRIVATE,    /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 */
	YIP_SCOPE_GLOBAL,
};
enum yip_scope yip_sockaddr_scope(const union yip_sockaddr *a);

#endif
