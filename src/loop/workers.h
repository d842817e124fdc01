/*
 * The crypto worker pool: the event loop hands a batch's AEAD work (sealing
 * what it is about to send, opening what it just received) to the pool and
 * waits for it, so the engine stays single-threaded and packets keep their
 * order. The calling thread works too; helpers claim jobs one at a time
 * from a shared counter, so a helper that wakes late costs nothing but its
 * wake-up. No locks and no allocation per batch.
 */
#ifndef YIP_LOOP_WORKERS_H
#define YIP_LOOP_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/crypto.h"

struct crypto_job {
	bool skip;         /* nothing to do (a placeholder keeping positions) */
	bool open;         /* open (decrypt) into out, else seal in place at in */
	int result;        /* open: 0 or -1 */
	const uint8_t *ad; /* the datagram header, authenticated */
	size_t adlen;
	uint8_t *in; /* plaintext (seal) or ciphertext with tag (open) */
	size_t len;  /* of in */
	uint8_t *out;
	uint64_t counter;
	const struct yip_cipher_key *key; /* a slot of the batch's crypto_keys */
};

/*
 * The keys a batch's jobs use, copied so the engine may rekey while the
 * batch waits. A batch rarely needs more than one per peer.
 */
#define CRYPTO_KEYS 16

struct crypto_keys {
	struct yip_cipher_key slot[CRYPTO_KEYS];
	unsigned n;
};

/* A slot holding key: an existing one or a new copy; NULL when all are taken. */
const struct yip_cipher_key *crypto_keys_add(struct crypto_keys *ks,
                                             const struct yip_cipher_key *key);

/* Wipes the slots in use. */
void crypto_keys_clear(struct crypto_keys *ks);

#define WORKERS_MAX_JOBS 4096 /* at most 2^20 fit a ticket */

struct workers {
	unsigned n_threads; /* helpers besides the caller */
	pthread_t threads[16];
	struct crypto_job *jobs;
	unsigned n_jobs;
	_Atomic uint64_t ticket;     /* job count << 20 | next job to claim */
	_Atomic unsigned done;       /* jobs finished */
	_Atomic uint32_t generation; /* futex: bumped for each batch */
	_Atomic uint32_t finished;   /* futex: the caller waits on it */
	_Atomic bool stop;
	uint64_t batches, helped; /* statistics: batches run, jobs helpers did */
	_Atomic uint64_t helped_atomic;
};

/* Starts threads - 1 helpers (threads >= 1). Returns 0 or -1. */
int workers_start(struct workers *w, unsigned threads);

/* Runs jobs[0..n) to completion, on this thread and the helpers. The caller
 * clears the keys when it is done with them. */
void workers_run(struct workers *w, struct crypto_job *jobs, unsigned n);

void workers_stop(struct workers *w);

#endif
