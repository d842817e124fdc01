/*
 * Systematic Reed–Solomon erasure code over GF(2^8) (ISA-L), for blocks of
 * up to FEC_MAX_K source symbols and FEC_MAX_R repair symbols. Pure: no
 * I/O, no allocation after fec_init().
 *
 * Generator: source symbol i (0 <= i < K) is sent as is. Repair symbol j
 * (0 <= j < R) is sum_i c(R, j, i) * source_i with
 *
 *   c(1, 0, i) = 1                                  (R = 1: plain XOR parity)
 *   c(R, j, i) = 1 / ((FEC_MAX_K + j) XOR i)        (R >= 2: Cauchy)
 *
 * Neither depends on K, so a sender can fold each source into the repairs
 * the moment it is sent (fec_encode_add) and close the block at any K.
 * Any K of the K + R symbols recover the block (the Cauchy matrix is
 * superregular because FEC_MAX_K + FEC_MAX_R <= 256 keeps x_j and y_i distinct).
 *
 * Symbols in one block may differ in length: a shorter symbol counts as
 * zero-padded to the block's longest, and repairs are as long as the
 * longest source added to them.
 */
#ifndef YIP_FEC_FEC_H
#define YIP_FEC_FEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FEC_MAX_K   64
#define FEC_MAX_R   16
#define FEC_MAX_LEN 9216 /* longest symbol fec_decode accepts */

/* Builds the coefficient tables once. Thread-safe after the first call returns. */
void fec_init(void);

/* The coefficient c(r, j, i) above (for tests and the naive reference). */
uint8_t fec_coef(unsigned r, unsigned j, unsigned i);

/*
 * Adds source symbol i (len bytes) into the r repair accumulators repair[0..r-1],
 * which the caller zeroed beforehand and which hold at least len bytes.
 * 1 <= r <= FEC_MAX_R, i < FEC_MAX_K.
 */
void fec_encode_add(unsigned r, unsigned i, const uint8_t *src, size_t len, uint8_t **repair);

/*
 * Recovers missing sources of a block of k sources protected by r repairs.
 *   src[i]     buffer of source i (len bytes); have_src[i] says whether it holds data
 *              (shorter symbols must have been zero-padded to len by the caller).
 *              Missing sources are written in place; their buffers must hold len bytes.
 *   rep[j]     repair j (len bytes) if have_rep[j], else ignored.
 * Returns the number of sources recovered (0 if none were missing), or -1 if
 * fewer than k symbols are present (nothing is written then).
 */
int fec_decode(unsigned k, unsigned r, size_t len, uint8_t **src, const bool *have_src,
               uint8_t **rep, const bool *have_rep);

#endif
