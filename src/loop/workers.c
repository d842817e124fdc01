#include "loop/workers.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sodium.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/log.h"

/* Batches smaller than this are not worth a wake-up. */
#define WORKERS_MIN_BATCH 8

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

const struct yip_cipher_key *crypto_keys_add(struct crypto_keys *ks,
                                             const struct yip_cipher_key *key)
{
	/* Newest first: consecutive jobs nearly always share a key. */
	for (unsigned i = ks->n; i-- > 0;)
		if (yip_cipher_key_eq(&ks->slot[i], key))
			return &ks->slot[i];
	if (ks->n == CRYPTO_KEYS)
		return NULL;
	ks->slot[ks->n] = *key;
	return &ks->slot[ks->n++];
}

void crypto_keys_clear(struct crypto_keys *ks)
{
	sodium_memzero(ks->slot, ks->n * sizeof(ks->slot[0]));
	ks->n = 0;
}

static void job_run(struct crypto_job *j)
{
	if (j->skip)
		return;
	if (j->open)
		j->result =
		    yip_cipher_open(j->out, j->key, j->counter, j->ad, j->adlen, j->in, j->len);
	else
		yip_cipher_seal(j->in, j->key, j->counter, j->ad, j->adlen, j->in, j->len);
}

/*
 * The ticket packs the batch's job count and the next job to claim into one
 * atomic word, so a helper that wakes late can never claim a job of a batch
 * that has already been reset: its compare-and-swap fails instead.
 */
#define TICKET_IDX(t) ((unsigned)((t)&0xfffffu))
#define TICKET_N(t)   ((unsigned)(((t) >> 20) & 0xfffffu))

static bool claim(struct workers *w, unsigned *idx)
{
	uint64_t t = atomic_load(&w->ticket);

	while (TICKET_IDX(t) < TICKET_N(t)) {
		if (atomic_compare_exchange_weak(&w->ticket, &t, t + 1)) {
			*idx = TICKET_IDX(t);
			return true;
		}
	}
	return false;
}

/* Claims and runs jobs until none are left; returns how many it ran. */
static unsigned drain(struct workers *w)
{
	unsigned ran = 0, i;

	while (claim(w, &i)) {
		job_run(&w->jobs[i]);
		ran++;
		if (atomic_fetch_add(&w->done, 1) + 1 == w->n_jobs) {
			atomic_store(&w->finished, 1);
			futex_wake(&w->finished, 1);
		}
	}
	return ran;
}

static void *helper(void *arg)
{
	struct workers *w = arg;
	uint32_t seen = atomic_load(&w->generation);

	for (;;) {
		uint32_t g;

		while ((g = atomic_load(&w->generation)) == seen && !atomic_load(&w->stop))
			futex_wait(&w->generation, seen);
		if (atomic_load(&w->stop))
			return NULL;
		seen = g;
		atomic_fetch_add(&w->helped_atomic, drain(w));
	}
}

int workers_start(struct workers *w, unsigned threads)
{
	memset(w, 0, sizeof(*w));
	if (threads > 1 + sizeof(w->threads) / sizeof(w->threads[0]))
		threads = 1 + sizeof(w->threads) / sizeof(w->threads[0]);
	for (unsigned i = 0; i + 1 < threads; i++) {
		int rc = pthread_create(&w->threads[i], NULL, helper, w);

		if (rc != 0) {
			log_warn("workers: cannot start a thread: %s; using %u", strerror(rc),
			         i + 1);
			break;
		}
		w->n_threads++;
	}
	return 0;
}

void workers_run(struct workers *w, struct crypto_job *jobs, unsigned n)
{
	if (n == 0)
		return;
	if (w->n_threads == 0 || n < WORKERS_MIN_BATCH) {
		for (unsigned i = 0; i < n; i++)
			job_run(&jobs[i]);
	} else {
		w->jobs = jobs;
		w->n_jobs = n;
		atomic_store(&w->done, 0);
		atomic_store(&w->finished, 0);
		atomic_store(&w->ticket, (uint64_t)n << 20); /* publishes the batch */
		atomic_fetch_add(&w->generation, 1);
		futex_wake(&w->generation, (int)w->n_threads);
		drain(w);
		/* Only jobs a helper has claimed and not finished are left. */
		while (atomic_load(&w->done) < n)
			futex_wait(&w->finished, 0);
		w->helped = atomic_load(&w->helped_atomic);
	}
	w->batches++;
}

void workers_stop(struct workers *w)
{
	atomic_store(&w->stop, true);
	atomic_fetch_add(&w->generation, 1);
	futex_wake(&w->generation, INT_MAX);
	for (unsigned i = 0; i < w->n_threads; i++)
		pthread_join(w->threads[i], NULL);
	w->n_threads = 0;
}
