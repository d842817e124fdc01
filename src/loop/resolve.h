/*
 * Host names of configured endpoints and rendezvous servers, resolved again
 * every interval (docs/configuration.md, endpoint): a peer whose address
 * changes behind its name is found again without a restart. getaddrinfo
 * blocks, so a thread of its own does it; when a name resolves to a new
 * address it tells the loop through an eventfd on the loop's epoll set, and
 * the loop hands the address to the engine (yip_device_set_endpoint) on its
 * own thread. A name that does not resolve keeps its last address.
 */
#ifndef YIP_LOOP_RESOLVE_H
#define YIP_LOOP_RESOLVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr/addr.h"
#include "config/config.h"

/* A name and whose it is: the peer with public key key, or (server)
 * rendezvous server `server` in the configuration's order. */
struct resolve_name {
	bool is_server;
	uint8_t key[YIP_KEY_LEN]; /* a peer's */
	size_t server;
	char *text;              /* host:port, as configured */
	union yip_sockaddr addr; /* the latest answer */
	bool changed;            /* not handed to the engine yet */
};

struct resolver {
	int efd;    /* readable when some name changed */
	int family; /* what listen can reach: AF_INET, AF_INET6 or AF_UNSPEC */
	uint64_t interval;
	size_t n;
	struct resolve_name *names;
	pthread_t thread;
	pthread_mutex_t mu; /* names[].addr and .changed, stop */
	pthread_cond_t cv;
	bool stop;
	uint64_t rounds, failed; /* statistics */
};

/*
 * Collects cfg's host names and, if there are any (and interval is not 0),
 * starts the thread. Returns 0 with *out the resolver (NULL: nothing to
 * resolve), or -1.
 */
int resolver_start(struct resolver **out, const struct yip_config *cfg, uint64_t interval);

/*
 * Stops the thread and frees r (NULL is fine). A lookup still under way
 * after a bounded wait keeps r: it is left to the process's exit.
 */
void resolver_stop(struct resolver *r);

/* Calls fn for every name whose address changed since the last call. */
void resolver_take(struct resolver *r, void (*fn)(void *arg, const struct resolve_name *name),
                   void *arg);

#endif
