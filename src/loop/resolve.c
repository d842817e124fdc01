#include "loop/resolve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

#define STOP_WAIT_MS 2000 /* for a lookup under way at exit */

static int add_name(struct resolver *r, const uint8_t *key, size_t server, const char *text,
                    const union yip_sockaddr *addr)
{
	struct resolve_name *n = &r->names[r->n];

	n->text = strdup(text);
	if (n->text == NULL)
		return -1;
	n->is_server = key == NULL;
	if (key != NULL)
		memcpy(n->key, key, YIP_KEY_LEN);
	n->server = server;
	n->addr = *addr;
	n->changed = false;
	r->n++;
	return 0;
}

/* Sleeps until the next round or stop; false on stop. */
static bool wait_round(struct resolver *r)
{
	struct timespec until;
	bool go;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(r->interval / 1000000000ULL);
	until.tv_nsec += (long)(r->interval % 1000000000ULL);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->mu);
	while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &until) != ETIMEDOUT)
		;
	go = !r->stop;
	pthread_mutex_unlock(&r->mu);
	return go;
}

static void *run(void *arg)
{
	struct resolver *r = arg;

	while (wait_round(r)) {
		bool any = false;

		for (size_t i = 0; i < r->n; i++) {
			union yip_sockaddr a;
			char err[256];

			if (yip_endpoint_parse_family(r->names[i].text, 0, true, r->family, &a,
			                              NULL, err, sizeof(err)) != 0) {
				r->failed++;
				log_debug("resolve: %s (keeping the last address)", err);
				continue;
			}
			pthread_mutex_lock(&r->mu);
			if (!yip_sockaddr_eq(&a, &r->names[i].addr)) {
				r->names[i].addr = a;
				r->names[i].changed = any = true;
			}
			pthread_mutex_unlock(&r->mu);
		}
		r->rounds++;
		if (any) {
			uint64_t one = 1;
			ssize_t w = write(r->efd, &one, sizeof(one));

			(void)w; /* a full counter is still readable */
		}
	}
	return NULL;
}

static void resolver_free(struct resolver *r)
{
	if (r->efd >= 0)
		close(r->efd);
	for (size_t i = 0; i < r->n; i++)
		free(r->names[i].text);
	free(r->names);
	free(r);
}

int resolver_start(struct resolver **out, const struct yip_config *cfg, uint64_t interval)
{
	pthread_condattr_t ca;
	struct resolver *r;
	size_t names = 0;

	*out = NULL;
	/* UDP endpoints only: a tls:// one is dialed at the address it had at
	 * start (docs/transports.md). */
	for (size_t i = 0; i < cfg->n_peers; i++)
		names += cfg->peers[i].endpoint_name != NULL &&
		         cfg->peers[i].transport == YIP_TRANSPORT_UDP;
	for (size_t i = 0; i < cfg->n_rendezvous; i++)
		names += cfg->rendezvous[i].name != NULL &&
		         cfg->rendezvous[i].transport == YIP_TRANSPORT_UDP;
	if (names == 0 || interval == 0)
		return 0;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -1;
	r->efd = -1;
	r->interval = interval;
	r->family = yip_listen_family(&cfg->listen);
	r->names = calloc(names, sizeof(*r->names));
	if (r->names == NULL)
		goto fail;
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (cfg->peers[i].endpoint_name != NULL &&
		    cfg->peers[i].transport == YIP_TRANSPORT_UDP &&
		    add_name(r, cfg->peers[i].public_key, 0, cfg->peers[i].endpoint_name,
		             &cfg->peers[i].endpoint) != 0)
			goto fail;
	for (size_t i = 0; i < cfg->n_rendezvous; i++)
		if (cfg->rendezvous[i].name != NULL &&
		    cfg->rendezvous[i].transport == YIP_TRANSPORT_UDP &&
		    add_name(r, NULL, yip_config_server_of_line(cfg, i), cfg->rendezvous[i].name,
		             &cfg->rendezvous[i].addr) != 0)
			goto fail;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0)
		goto fail;
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&r->thread, NULL, run, r) != 0) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		goto fail;
	}
	*out = r;
	return 0;
fail:
	resolver_free(r);
	return -1;
}

void resolver_stop(struct resolver *r)
{
	struct timespec until;

	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_WAIT_MS / 1000;
	if (pthread_timedjoin_np(r->thread, NULL, &until) != 0) {
		log_warn("resolve: a lookup is still under way at exit");
		pthread_detach(r->thread);
		return;
	}
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	resolver_free(r);
}

void resolver_take(struct resolver *r, void (*fn)(void *arg, const struct resolve_name *name),
                   void *arg)
{
	uint64_t count;

	if (r == NULL || read(r->efd, &count, sizeof(count)) != sizeof(count))
		return;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n; i++) {
		if (!r->names[i].changed)
			continue;
		r->names[i].changed = false;
		fn(arg, &r->names[i]);
	}
	pthread_mutex_unlock(&r->mu);
}
