/*
 * Unit tests for fec: the coefficients and the encoder against a naive GF(2^8)
 * reference written here from scratch, exhaustive erasure patterns for small
 * blocks, random erasure patterns with mixed symbol lengths for large ones,
 * and the failure behaviour.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "fec/fec.h"
#include "fec/policy.h"

#define TESTRAND_SEED 0x5eed0fec2024ULL
#include "testrand.h"

#ifndef FEC_MAX_LEN
#define FEC_MAX_LEN 9216
#endif

#define NSYM (FEC_MAX_K + FEC_MAX_R)

/* ---- Naive GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D). ---- */

static uint8_t ref_mul_slow(uint8_t a, uint8_t b)
{
	uint8_t p = 0;

	while (b != 0) {
		if (b & 1)
			p ^= a;
		a = (uint8_t)((a & 0x80) ? (a << 1) ^ 0x1d : a << 1);
		b >>= 1;
	}
	return p;
}

static uint8_t ref_mul_tab[256][256];
static uint8_t ref_inv_tab[256];

static void ref_init(void)
{
	unsigned a, b;

	if (ref_inv_tab[1] == 1)
		return;
	for (a = 0; a < 256; a++)
		for (b = 0; b < 256; b++)
			ref_mul_tab[a][b] = ref_mul_slow((uint8_t)a, (uint8_t)b);
	for (a = 1; a < 256; a++)
		for (b = 1; b < 256; b++)
			if (ref_mul_tab[a][b] == 1)
				ref_inv_tab[a] = (uint8_t)b;
}

static uint8_t ref_coef(unsigned r, unsigned j, unsigned i)
{
	return r == 1 ? 1 : ref_inv_tab[(FEC_MAX_K + j) ^ i];
}

/* repair[j] = sum_i c(r, j, i) * src[i], each src[i] zero-padded to len. */
static void ref_encode(unsigned k, unsigned r, uint8_t *const *src, const size_t *src_len,
                       size_t len, uint8_t *const *repair)
{
	unsigned i, j;
	size_t b;

	for (j = 0; j < r; j++) {
		memset(repair[j], 0, len);
		for (i = 0; i < k; i++) {
			const uint8_t *row = ref_mul_tab[ref_coef(r, j, i)];

			for (b = 0; b < src_len[i]; b++)
				repair[j][b] ^= row[src[i][b]];
		}
	}
}

/* ---- Deterministic PRNG (splitmix64). ---- */

/* ---- Shared block buffers. ---- */

static uint8_t orig[FEC_MAX_K][FEC_MAX_LEN]; /* sources, zero-padded to the block length */
static uint8_t work[FEC_MAX_K][FEC_MAX_LEN]; /* what the receiver holds */
static uint8_t rep[FEC_MAX_R][FEC_MAX_LEN];  /* repairs from fec_encode_add */
static uint8_t repsave[FEC_MAX_R][FEC_MAX_LEN];
static uint8_t refrep[FEC_MAX_R][FEC_MAX_LEN]; /* repairs from ref_encode */
static size_t slen[FEC_MAX_K];
static uint8_t *origp[FEC_MAX_K], *workp[FEC_MAX_K], *repp[FEC_MAX_R], *refp[FEC_MAX_R];

static int setup(void **state)
{
	unsigned i;

	(void)state;
	ref_init();
	fec_init();
	for (i = 0; i < FEC_MAX_K; i++) {
		origp[i] = orig[i];
		workp[i] = work[i];
	}
	for (i = 0; i < FEC_MAX_R; i++) {
		repp[i] = rep[i];
		refp[i] = refrep[i];
	}
	return 0;
}

/*
 * Makes k random sources of len bytes (mixed: random lengths 1..len, one of
 * them exactly len) and encodes them with r repairs, each source added with its
 * own length, in a random order.
 */
static void make_block(unsigned k, unsigned r, size_t len, bool mixed)
{
	unsigned order[FEC_MAX_K], i, j;

	for (i = 0; i < k; i++) {
		slen[i] = mixed ? 1 + rnd((unsigned)len) : len;
		order[i] = i;
	}
	if (mixed)
		slen[rnd(k)] = len; /* the block is as long as its longest source */
	for (i = 0; i < k; i++) {
		memset(orig[i], 0, len);
		fill_random(orig[i], slen[i]);
	}
	for (j = 0; j < r; j++)
		memset(rep[j], 0, len);
	for (i = k; i > 1; i--) {
		unsigned t = rnd(i), u = order[i - 1];

		order[i - 1] = order[t];
		order[t] = u;
	}
	for (i = 0; i < k; i++)
		fec_encode_add(r, order[i], orig[order[i]], slen[order[i]], repp);
}

/*
 * Erases the symbols not in `keep` (bits 0..k-1 sources, k..k+r-1 repairs),
 * decodes and checks the outcome: recovery when at least k symbols are kept,
 * otherwise -1 with nothing written. Present symbols must never change.
 */
static void check_decode(unsigned k, unsigned r, size_t len, const bool *keep)
{
	bool have_src[FEC_MAX_K] = {false}, have_rep[FEC_MAX_R] = {false};
	unsigned i, j, kept = 0, lost = 0;
	int rc;

	for (i = 0; i < k; i++) {
		have_src[i] = keep[i];
		if (keep[i]) {
			memcpy(work[i], orig[i], len);
			kept++;
		} else {
			memset(work[i], 0xa5, len);
			lost++;
		}
	}
	for (j = 0; j < r; j++) {
		have_rep[j] = keep[k + j];
		kept += keep[k + j];
		memcpy(repsave[j], rep[j], len);
		if (!keep[k + j]) /* a lost repair's buffer holds junk the decoder must ignore */
			memset(rep[j], 0x5a, len);
	}

	rc = fec_decode(k, r, len, workp, have_src, repp, have_rep);
	if (kept >= k) {
		assert_int_equal(rc, (int)lost);
		for (i = 0; i < k; i++)
			assert_memory_equal(work[i], orig[i], len);
	} else {
		assert_int_equal(rc, -1);
		for (i = 0; i < k; i++)
			if (!keep[i])
				for (size_t b = 0; b < len; b++)
					assert_int_equal(work[i][b], 0xa5);
	}
	for (j = 0; j < r; j++) {
		if (keep[k + j])
			assert_memory_equal(rep[j], repsave[j], len);
		memcpy(rep[j], repsave[j], len);
	}
}

/* ---- Tests. ---- */

static void test_field_is_isal(void **state)
{
	unsigned a, b;

	(void)state;
	/* The reference field must be ISA-L's: x^8 = x^4 + x^3 + x^2 + 1. */
	assert_int_equal(ref_mul_slow(0x80, 0x02), 0x1d);
	for (a = 0; a < 256; a++) {
		for (b = 0; b < 256; b++)
			assert_int_equal(gf_mul((unsigned char)a, (unsigned char)b),
			                 ref_mul_tab[a][b]);
		if (a != 0)
			assert_int_equal(gf_inv((unsigned char)a), ref_inv_tab[a]);
	}
}

static void test_coef(void **state)
{
	unsigned r, j, i;

	(void)state;
	for (i = 0; i < FEC_MAX_K; i++)
		assert_int_equal(fec_coef(1, 0, i), 1);
	for (r = 2; r <= FEC_MAX_R; r++)
		for (j = 0; j < r; j++)
			for (i = 0; i < FEC_MAX_K; i++) {
				uint8_t c = fec_coef(r, j, i);

				assert_int_not_equal(c, 0);
				assert_int_equal(c, ref_inv_tab[(FEC_MAX_K + j) ^ i]);
				/* Independent of R: the same as with the most repairs. */
				assert_int_equal(c, fec_coef(FEC_MAX_R, j, i));
				assert_int_equal(ref_mul_tab[c][(FEC_MAX_K + j) ^ i], 1);
			}
	fec_init(); /* idempotent */
	assert_int_equal(fec_coef(5, 3, 7), ref_inv_tab[(FEC_MAX_K + 3) ^ 7]);
}

static void check_encode_vs_ref(unsigned k, unsigned r, size_t len, bool mixed)
{
	unsigned j;

	make_block(k, r, len, mixed);
	ref_encode(k, r, origp, slen, len, refp);
	for (j = 0; j < r; j++)
		assert_memory_equal(rep[j], refrep[j], len);
}

static void test_encode_matches_reference(void **state)
{
	unsigned t;
	size_t len;

	(void)state;
	/* Every short length, across ISA-L's SIMD widths and masked tails. */
	for (len = 1; len <= 200; len++)
		check_encode_vs_ref(5, 4, len, false);
	for (len = 1; len <= 200; len++)
		check_encode_vs_ref(3, 1, len, false);
	/* Random shapes, some with mixed symbol lengths. */
	for (t = 0; t < 300; t++)
		check_encode_vs_ref(1 + rnd(FEC_MAX_K), 1 + rnd(FEC_MAX_R), 1 + rnd(400),
		                    rnd(2) == 0);
	check_encode_vs_ref(FEC_MAX_K, FEC_MAX_R, 1500, false);
	check_encode_vs_ref(7, 3, FEC_MAX_LEN, true);
}

static void test_r1_is_xor(void **state)
{
	uint8_t x[FEC_MAX_LEN];
	unsigned t, i;
	size_t b, len;

	(void)state;
	for (t = 0; t < 200; t++) {
		unsigned k = 1 + rnd(FEC_MAX_K);

		len = t == 0 ? FEC_MAX_LEN : 1 + rnd(1500);
		make_block(k, 1, len, t % 2 == 1);
		memset(x, 0, len);
		for (i = 0; i < k; i++)
			for (b = 0; b < slen[i]; b++)
				x[b] ^= orig[i][b];
		assert_memory_equal(rep[0], x, len);
	}
}

/* Every subset of the K + R symbols, for K <= 8 and R <= 4. */
static void test_exhaustive_small(void **state)
{
	static const size_t lens[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129, 300};
	const unsigned nlens = sizeof(lens) / sizeof(lens[0]);
	unsigned k, r, li;

	(void)state;
	for (k = 1; k <= 8; k++)
		for (r = 1; r <= 4; r++)
			for (li = 0; li < nlens; li++) {
				unsigned n = k + r, mask;

				make_block(k, r, lens[li], li % 2 == 1);
				/* each length takes its share of the masks */
				for (mask = li; mask < (1u << n); mask += nlens) {
					bool keep[NSYM];
					unsigned s;

					for (s = 0; s < n; s++)
						keep[s] = (mask >> s) & 1;
					check_decode(k, r, lens[li], keep);
				}
			}
	/* And every mask at one length that is not a multiple of any SIMD width. */
	for (k = 1; k <= 8; k++)
		for (r = 1; r <= 4; r++) {
			unsigned n = k + r, mask;

			make_block(k, r, 77, true);
			for (mask = 0; mask < (1u << n); mask++) {
				bool keep[NSYM];
				unsigned s;

				for (s = 0; s < n; s++)
					keep[s] = (mask >> s) & 1;
				check_decode(k, r, 77, keep);
			}
		}
}

/* Erases exactly e of the k + r symbols, uniformly at random. */
static void random_erasures(unsigned k, unsigned r, unsigned e, bool *keep)
{
	unsigned idx[NSYM], n = k + r, s;

	for (s = 0; s < n; s++) {
		idx[s] = s;
		keep[s] = true;
	}
	for (s = 0; s < e; s++) {
		unsigned t = s + rnd(n - s), u = idx[s];

		idx[s] = idx[t];
		idx[t] = u;
		keep[idx[s]] = false;
	}
}

static void test_random_large(void **state)
{
	unsigned t;

	(void)state;
	for (t = 0; t < 4000; t++) {
		unsigned k = 1 + rnd(FEC_MAX_K), r = 1 + rnd(FEC_MAX_R), e, p;
		size_t len = t % 100 == 0 ? FEC_MAX_LEN - rnd(3) * rnd(200) : 1 + rnd(1500);
		bool keep[NSYM];

		make_block(k, r, len, rnd(2) == 0);
		/* several patterns per block: mostly recoverable, some one too many */
		for (p = 0; p < 4; p++) {
			e = rnd(8) == 0 ? r + 1 + rnd(3) : rnd(r + 1);
			if (e > k + r)
				e = k + r;
			random_erasures(k, r, e, keep);
			check_decode(k, r, len, keep);
		}
	}
}

/* The worst cases: the most sources lost with every repair used. */
static void test_max_erasures(void **state)
{
	unsigned t;

	(void)state;
	for (t = 0; t < 200; t++) {
		unsigned k = 1 + rnd(FEC_MAX_K), r = 1 + rnd(FEC_MAX_R), i;
		size_t len = 1 + rnd(1500);
		bool keep[NSYM];

		make_block(k, r, len, true);
		for (i = 0; i < k + r; i++)
			keep[i] = true;
		/* lose min(k, r) sources and keep exactly the repairs needed */
		random_erasures(k, 0, k < r ? k : r, keep);
		check_decode(k, r, len, keep);
	}
}

static void test_too_few_symbols(void **state)
{
	bool have_src[FEC_MAX_K] = {false}, have_rep[FEC_MAX_R] = {false};
	unsigned i, j;
	size_t b;

	(void)state;
	make_block(10, 3, 200, false);
	for (i = 0; i < 10; i++) {
		have_src[i] = i >= 4; /* 4 sources lost, only 3 repairs exist */
		memcpy(work[i], orig[i], 200);
		if (!have_src[i])
			memset(work[i], 0xee, 200);
	}
	for (j = 0; j < 3; j++)
		have_rep[j] = true;
	assert_int_equal(fec_decode(10, 3, 200, workp, have_src, repp, have_rep), -1);
	for (i = 0; i < 4; i++)
		for (b = 0; b < 200; b++)
			assert_int_equal(work[i][b], 0xee);

	/* 2 sources and 2 repairs lost: 9 of 10 needed. */
	have_src[0] = have_src[1] = true;
	memcpy(work[0], orig[0], 200);
	memcpy(work[1], orig[1], 200);
	have_rep[0] = have_rep[2] = false;
	assert_int_equal(fec_decode(10, 3, 200, workp, have_src, repp, have_rep), -1);
	for (i = 2; i < 4; i++)
		for (b = 0; b < 200; b++)
			assert_int_equal(work[i][b], 0xee);

	/* With one repair back it works. */
	have_rep[2] = true;
	assert_int_equal(fec_decode(10, 3, 200, workp, have_src, repp, have_rep), 2);
	for (i = 0; i < 10; i++)
		assert_memory_equal(work[i], orig[i], 200);
}

static void test_nothing_missing(void **state)
{
	bool have_src[FEC_MAX_K], have_rep[FEC_MAX_R] = {false};
	unsigned i;

	(void)state;
	make_block(6, 2, 50, false);
	for (i = 0; i < 6; i++) {
		have_src[i] = true;
		memcpy(work[i], orig[i], 50);
	}
	assert_int_equal(fec_decode(6, 2, 50, workp, have_src, repp, have_rep), 0);
	assert_int_equal(fec_decode(6, 0, 50, workp, have_src, NULL, NULL), 0);
	for (i = 0; i < 6; i++)
		assert_memory_equal(work[i], orig[i], 50);
}

static void test_bad_arguments(void **state)
{
	bool have_src[FEC_MAX_K + 1], have_rep[FEC_MAX_R + 1];
	uint8_t *srcs[FEC_MAX_K + 1], *reps[FEC_MAX_R + 1];
	uint8_t before[64];
	unsigned i;

	(void)state;
	for (i = 0; i <= FEC_MAX_K; i++) {
		srcs[i] = work[i % FEC_MAX_K];
		have_src[i] = i != 0;
	}
	for (i = 0; i <= FEC_MAX_R; i++) {
		reps[i] = rep[i % FEC_MAX_R];
		have_rep[i] = true;
	}
	assert_int_equal(fec_decode(0, 2, 10, srcs, have_src, reps, have_rep), -1);
	assert_int_equal(fec_decode(FEC_MAX_K + 1, 2, 10, srcs, have_src, reps, have_rep), -1);
	assert_int_equal(fec_decode(4, FEC_MAX_R + 1, 10, srcs, have_src, reps, have_rep), -1);
	assert_int_equal(fec_decode(4, 2, FEC_MAX_LEN + 1, srcs, have_src, reps, have_rep), -1);
	assert_int_equal(fec_decode(4, 2, 10, NULL, have_src, reps, have_rep), -1);
	assert_int_equal(fec_decode(4, 2, 10, srcs, NULL, reps, have_rep), -1);
	assert_int_equal(fec_decode(4, 2, 10, srcs, have_src, NULL, have_rep), -1);
	assert_int_equal(fec_decode(4, 2, 10, srcs, have_src, reps, NULL), -1);
	/* r = 0 cannot recover anything */
	assert_int_equal(fec_decode(4, 0, 10, srcs, have_src, NULL, NULL), -1);
	srcs[0] = NULL;
	assert_int_equal(fec_decode(4, 2, 10, srcs, have_src, reps, have_rep), -1);

	/* fec_encode_add ignores calls outside its contract. */
	memset(rep[0], 0, sizeof(before));
	memset(rep[1], 0, sizeof(before));
	memset(before, 0, sizeof(before));
	fill_random(orig[0], sizeof(before));
	fec_encode_add(0, 0, orig[0], sizeof(before), repp);
	fec_encode_add(FEC_MAX_R + 1, 0, orig[0], sizeof(before), repp);
	fec_encode_add(2, FEC_MAX_K, orig[0], sizeof(before), repp);
	fec_encode_add(2, 0, orig[0], 0, repp);
	fec_encode_add(2, 0, NULL, sizeof(before), repp);
	fec_encode_add(2, 0, orig[0], sizeof(before), NULL);
	assert_memory_equal(rep[0], before, sizeof(before));
	assert_memory_equal(rep[1], before, sizeof(before));
	assert_int_equal(fec_coef(0, 0, 0), 0);
	assert_int_equal(fec_coef(2, 2, 0), 0);
	assert_int_equal(fec_coef(2, 0, FEC_MAX_K), 0);
	assert_int_equal(fec_coef(FEC_MAX_R + 1, 0, 0), 0);
}

/* Decoding is the same whichever repairs happen to arrive. */
static void test_any_repairs(void **state)
{
	unsigned k = 20, r = 8, mask;
	bool keep[NSYM];

	(void)state;
	make_block(k, r, 333, true);
	for (mask = 0; mask < (1u << r); mask++) {
		unsigned j, n = 0;

		for (j = 0; j < r; j++) {
			keep[k + j] = (mask >> j) & 1;
			n += keep[k + j];
		}
		random_erasures(k, 0, n, keep); /* lose as many sources as repairs kept */
		check_decode(k, r, 333, keep);
	}
}

/* ---- The control law (policy.c). ---- */

/* The examples docs/protocol.md §10.3 gives, at a 20 ms round trip. */
static void test_policy_examples(void **state)
{
	struct fec_params b, d, i;

	(void)state;
	fec_policy(FLOW_BULK, 0, 1, 0.02, false, &b);
	fec_policy(FLOW_DEFAULT, 0, 1, 0.02, false, &d);
	fec_policy(FLOW_INTERACTIVE, 0, 1, 0.02, false, &i);
	assert_int_equal(b.r, 0); /* a clean link: no redundancy */
	assert_int_equal(d.r, 0);
	assert_int_equal(i.k, 1);
	assert_int_equal(i.r, 1); /* but interactive keeps its floor */
	fec_policy(FLOW_BULK, 0.01, 1, 0.02, false, &b);
	assert_int_equal(b.k, 64);
	assert_int_equal(b.r, 5);
	fec_policy(FLOW_BULK, 0.05, 1, 0.02, false, &b);
	assert_int_equal(b.k, 64);
	assert_int_equal(b.r, 12);
	fec_policy(FLOW_DEFAULT, 0.05, 1, 0.02, false, &d);
	assert_int_equal(d.k, 16);
	assert_int_equal(d.r, 7);
	/* Lanes: bulk interleaves when told loss may come in runs, no other class does. */
	assert_int_equal(b.lanes, 1);
	assert_int_equal(d.lanes, 1);
	fec_policy(FLOW_BULK, 0.05, 1, 0.02, true, &b);
	fec_policy(FLOW_DEFAULT, 0.05, 1, 0.02, true, &d);
	assert_int_equal(b.lanes, FEC_BULK_LANES);
	assert_int_equal(b.r, 12); /* single losses: the same repairs either way */
	assert_int_equal(d.lanes, 1);
	/* Runs of 4 over 4 lanes are single losses to each block, not over one. */
	fec_policy(FLOW_BULK, 0.05, 4, 0.02, true, &b);
	assert_int_equal(b.r, 12);
	fec_policy(FLOW_BULK, 0.05, 4, 0.02, false, &b);
	assert_true(b.r > 12);
	/* Without a round trip (or a short one) bulk aims at its base target. */
	fec_policy(FLOW_BULK, 0.01, 1, 0, false, &b);
	assert_int_equal(b.r, 4);
	fec_policy(FLOW_BULK, 0.05, 1, 0.005, false, &b);
	assert_int_equal(b.r, 11);
}

/*
 * Bulk's target tightens past 10 ms round trip (ARQ comes too late for the
 * inner TCP there); an unknown round trip counts as a short one, and the
 * other classes do not depend on it.
 */
static void test_policy_rtt(void **state)
{
	struct fec_params a, b;
	unsigned prev = 0;

	(void)state;
	for (double rtt = 0.005; rtt <= 0.4; rtt *= 1.5) {
		fec_policy(FLOW_BULK, 0.01, 1, rtt, false, &a);
		assert_int_equal(a.k, 64);
		assert_true(a.r >= prev); /* never fewer repairs for a longer trip */
		prev = a.r;
		if (rtt <= 0.010) {
			fec_policy(FLOW_BULK, 0.01, 1, 0, false, &b);
			assert_int_equal(a.r, b.r);
		}
		fec_policy(FLOW_DEFAULT, 0.01, 1, rtt, false, &a);
		fec_policy(FLOW_DEFAULT, 0.01, 1, 0, false, &b);
		assert_int_equal(a.r, b.r);
	}
	fec_policy(FLOW_BULK, 0.01, 1, 0.1, false, &a);
	fec_policy(FLOW_BULK, 0.01, 1, 0.02, false, &b);
	assert_true(a.r >= b.r + 2);
	/* What it chose meets the tighter target (3e-3 / 100 at 100 ms, with
	 * the class's planning margin of 1.1 x loss + 0.2 %). */
	assert_true(fec_block_failure(a.k + a.r, a.r, 0.013, 1) <= 3e-3 / 100);
	/* A short block closed by its hold time follows the same target. */
	assert_true(fec_repairs_for(FLOW_BULK, 0.01, 1, 0.1, 16, a.r, 1) >=
	            fec_repairs_for(FLOW_BULK, 0.01, 1, 0.02, 16, a.r, 1));
	/* Where even the most repairs miss the tightened target, the block
	 * keeps its length (halving it would double the overhead for what
	 * only the round trip asked): 10 % at 200 ms. */
	fec_policy(FLOW_BULK, 0.1, 1, 0.2, false, &a);
	fec_policy(FLOW_BULK, 0.1, 1, 0, false, &b);
	assert_int_equal(a.k, b.k);
	assert_int_equal(a.r, FEC_MAX_R);
	/* Loss below the clean threshold stays free at any round trip. */
	fec_policy(FLOW_BULK, 0.001, 1, 0.3, false, &a);
	assert_int_equal(a.r, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_policy_examples),
	    cmocka_unit_test(test_policy_rtt),
	    cmocka_unit_test(test_field_is_isal),
	    cmocka_unit_test(test_coef),
	    cmocka_unit_test(test_encode_matches_reference),
	    cmocka_unit_test(test_r1_is_xor),
	    cmocka_unit_test(test_exhaustive_small),
	    cmocka_unit_test(test_random_large),
	    cmocka_unit_test(test_max_erasures),
	    cmocka_unit_test(test_too_few_symbols),
	    cmocka_unit_test(test_nothing_missing),
	    cmocka_unit_test(test_bad_arguments),
	    cmocka_unit_test(test_any_repairs),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
