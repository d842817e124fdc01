/*
 * Systematic Reed–Solomon erasure code over GF(2^8) on top of ISA-L.
 *
 * Encoding folds one source at a time into the repairs with
 * ec_encode_data_update() and tables precomputed for all FEC_MAX_K columns, so
 * the block can be closed at any K. Decoding solves for the m missing sources
 * from m present repairs: with C the m x m submatrix of coefficients (chosen
 * repairs x missing sources) and P the m x (K - m) coefficients of the present
 * sources,
 *
 *   rep = C * missing + P * present   =>   missing = C^-1 * rep + (C^-1 * P) * present
 *
 * so one m x K decode matrix and a single ec_encode_data() pass over the
 * chosen repairs and the present sources write the missing sources directly,
 * with no scratch buffers of symbol length.
 *
 * ISA-L's dispatched ec_encode_data() and ec_encode_data_update() handle any
 * length >= 1: below their SIMD width (32 bytes for AVX2, 64 for AVX-512) they
 * fall back to the portable base versions, and longer lengths that are not a
 * multiple of the width are finished with masked tails. The low-level
 * gf_vect_mad()/gf_*vect_dot_prod() kernels are not used here because they
 * refuse short vectors.
 */
#include "fec/fec.h"

#include <isa-l/erasure_code.h>
#include <string.h>

/* Longest symbol fec_decode() accepts: yip's largest MTU (9000) plus headers. */
#ifndef FEC_MAX_LEN
#define FEC_MAX_LEN 9216
#endif

/* ISA-L expands every coefficient into 32 bytes of lookup tables. */
#define GF_TBL_BYTES 32

/* Cauchy coefficients c(R >= 2, j, i), row-major (row j, column i). */
static unsigned char cauchy_coefs[FEC_MAX_R * FEC_MAX_K];
/* Their ISA-L tables: rows j < FEC_MAX_R over all FEC_MAX_K columns. */
static unsigned char cauchy_tbls[FEC_MAX_R * FEC_MAX_K * GF_TBL_BYTES];
/* The single all-ones row used when R = 1. */
static unsigned char ones_tbls[FEC_MAX_K * GF_TBL_BYTES];
/*
 * Log and antilog tables of ISA-L's field (generator 2), built with its own
 * gf_mul, to form decode matrices without a library call per product.
 * exp_tab is doubled so that exp_tab[log a + log b] needs no reduction.
 */
static uint8_t log_tab[256];
static uint8_t exp_tab[2 * 255];
static bool fec_ready;

static uint8_t cauchy_coef(unsigned j, unsigned i)
{
	/* (FEC_MAX_K + j) ^ i lies in [FEC_MAX_K, 2 * FEC_MAX_K) and is never 0. */
	return gf_inv((unsigned char)((FEC_MAX_K + j) ^ i));
}

void fec_init(void)
{
	unsigned char ones[FEC_MAX_K];
	unsigned char x = 1;
	unsigned j, i;

	if (fec_ready)
		return;
	for (i = 0; i < 255; i++) {
		exp_tab[i] = exp_tab[i + 255] = x;
		log_tab[x] = (uint8_t)i;
		x = gf_mul(x, 2);
	}
	for (j = 0; j < FEC_MAX_R; j++)
		for (i = 0; i < FEC_MAX_K; i++)
			cauchy_coefs[j * FEC_MAX_K + i] = cauchy_coef(j, i);
	memset(ones, 1, sizeof(ones));
	ec_init_tables(FEC_MAX_K, FEC_MAX_R, cauchy_coefs, cauchy_tbls);
	ec_init_tables(FEC_MAX_K, 1, ones, ones_tbls);
	fec_ready = true;
}

uint8_t fec_coef(unsigned r, unsigned j, unsigned i)
{
	if (r == 0 || r > FEC_MAX_R || j >= r || i >= FEC_MAX_K)
		return 0;
	if (r == 1)
		return 1;
	return cauchy_coef(j, i);
}

void fec_encode_add(unsigned r, unsigned i, const uint8_t *src, size_t len, uint8_t **repair)
{
	/* Nothing to report through a void return: invalid calls add nothing. */
	if (r == 0 || r > FEC_MAX_R || i >= FEC_MAX_K || len == 0 || len > FEC_MAX_LEN ||
	    src == NULL || repair == NULL)
		return;
	if (!fec_ready)
		fec_init();
	/* ISA-L only reads the source; its prototype just lacks the const. */
	ec_encode_data_update((int)len, FEC_MAX_K, (int)r, (int)i, r == 1 ? ones_tbls : cauchy_tbls,
	                      (unsigned char *)src, repair);
}

/* fec_coef() for valid arguments, once fec_init() has run. */
static unsigned char coef_fast(unsigned r, unsigned j, unsigned i)
{
	return r == 1 ? 1 : cauchy_coefs[j * FEC_MAX_K + i];
}

int fec_decode(unsigned k, unsigned r, size_t len, uint8_t **src, const bool *have_src,
               uint8_t **rep, const bool *have_rep)
{
	unsigned missing[FEC_MAX_R], present[FEC_MAX_K], chosen[FEC_MAX_R];
	unsigned char sub[FEC_MAX_R * FEC_MAX_R], inv[FEC_MAX_R * FEC_MAX_R];
	unsigned char dec[FEC_MAX_R * FEC_MAX_K];
	unsigned char tbls[FEC_MAX_R * FEC_MAX_K * GF_TBL_BYTES];
	unsigned char *in[FEC_MAX_K], *out[FEC_MAX_R];
	unsigned m = 0, np = 0, nc = 0, i, j, a, b;

	if (k == 0 || k > FEC_MAX_K || r > FEC_MAX_R || len > FEC_MAX_LEN || src == NULL ||
	    have_src == NULL || (r > 0 && (rep == NULL || have_rep == NULL)))
		return -1;

	/* Sort the sources into present and missing; more than r missing is hopeless. */
	for (i = 0; i < k; i++) {
		if (src[i] == NULL)
			return -1;
		if (have_src[i]) {
			present[np++] = i;
		} else {
			if (m == r)
				return -1;
			missing[m++] = i;
		}
	}
	if (m == 0)
		return 0;
	/* Any m present repairs will do: every square Cauchy submatrix is invertible. */
	for (j = 0; j < r && nc < m; j++)
		if (have_rep[j] && rep[j] != NULL)
			chosen[nc++] = j;
	if (nc < m)
		return -1;
	if (len == 0)
		return (int)m;
	if (!fec_ready)
		fec_init();

	for (a = 0; a < m; a++)
		for (b = 0; b < m; b++)
			sub[a * m + b] = coef_fast(r, chosen[a], missing[b]);
	if (gf_invert_matrix(sub, inv, (int)m) != 0)
		return -1; /* cannot happen for this code; refuse rather than write garbage */

	/*
	 * Row b of the decode matrix: inv[b] against the chosen repairs, then
	 * inv[b] * P against the present sources.
	 */
	for (b = 0; b < m; b++) {
		unsigned char *row = &dec[b * k];
		unsigned char lg[FEC_MAX_R]; /* log of the nonzero inv[b][a], for a < nz */
		unsigned nz = 0, ca[FEC_MAX_R];

		for (a = 0; a < m; a++) {
			row[a] = inv[b * m + a];
			if (row[a] != 0) {
				lg[nz] = log_tab[row[a]];
				ca[nz++] = chosen[a];
			}
		}
		for (i = 0; i < np; i++) {
			unsigned char acc = 0;

			/* every coefficient is nonzero, so its log exists */
			for (a = 0; a < nz; a++)
				acc ^= exp_tab[lg[a] + log_tab[coef_fast(r, ca[a], present[i])]];
			row[m + i] = acc;
		}
	}
	for (a = 0; a < m; a++)
		in[a] = rep[chosen[a]];
	for (i = 0; i < np; i++)
		in[m + i] = src[present[i]];
	for (b = 0; b < m; b++)
		out[b] = src[missing[b]];

	ec_init_tables((int)k, (int)m, dec, tbls);
	ec_encode_data((int)len, (int)k, (int)m, tbls, in, out);
	return (int)m;
}
