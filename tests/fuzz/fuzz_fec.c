/*
 * libFuzzer target for the erasure codec: the input chooses a block shape,
 * symbol lengths, an erasure pattern and the data; the block is encoded,
 * erased and decoded. Whenever at least K symbols survive, the sources must
 * come back exactly (zero padding included); otherwise fec_decode must fail
 * without writing. Present symbols must never change.
 *
 * Input layout (missing bytes read as 0):
 *   [0] K - 1 (mod 64)   [1] R - 1 (mod 16)   [2..3] length (little endian)
 *   [4] flags: 1 mixed symbol lengths, 2 near-maximal length, 4 erase anywhere
 *       in the block count range (else at most R + 1), 8 add sources backwards
 *   [5] number of erasures, then that many symbol indices (mod K + R)
 *   rest: data, repeated over the sources
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fec/fec.h"

#include "reader.h"

#ifndef FEC_MAX_LEN
#define FEC_MAX_LEN 9216
#endif

#define F_MIXED   1
#define F_BIG     2
#define F_ANY     4
#define F_REVERSE 8

static uint8_t orig[FEC_MAX_K][FEC_MAX_LEN];
static uint8_t work[FEC_MAX_K][FEC_MAX_LEN];
static uint8_t rep[FEC_MAX_R][FEC_MAX_LEN];
static uint8_t repsave[FEC_MAX_R][FEC_MAX_LEN];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {data, size};
	uint8_t *srcp[FEC_MAX_K], *repp[FEC_MAX_R];
	bool have_src[FEC_MAX_K], have_rep[FEC_MAX_R];
	size_t slen[FEC_MAX_K], len = 0, b;
	unsigned k, r, flags, nerase, i, j, present = 0, lost = 0;
	uint16_t raw;
	int rc;

	fec_init();
	k = 1 + next(&rd) % FEC_MAX_K;
	r = 1 + next(&rd) % FEC_MAX_R;
	raw = (uint16_t)(next(&rd) | next(&rd) << 8);
	flags = next(&rd);
	size_t maxlen = flags & F_BIG ? FEC_MAX_LEN - raw % 512 : 1 + raw % 2048;

	/* Which symbols get lost: gone[s] for symbol s, sources first. */
	bool gone[FEC_MAX_K + FEC_MAX_R] = {false};
	nerase = next(&rd) % (flags & F_ANY ? k + r + 1 : r + 2);
	for (i = 0; i < nerase; i++)
		gone[next(&rd) % (k + r)] = true;

	/* The rest is the data, repeated; an empty rest gives a counter pattern. */
	const uint8_t *payload = rd.p;
	size_t plen = rd.n, pos = 0;

	for (i = 0; i < k; i++) {
		slen[i] = maxlen;
		if (flags & F_MIXED)
			slen[i] = 1 + (i * 2654435761u + raw) % maxlen;
		if (slen[i] > len)
			len = slen[i];
		memset(orig[i], 0, maxlen);
		for (b = 0; b < slen[i]; b++) {
			uint8_t v = (uint8_t)(i * 31 + b * 7);

			if (plen > 0) {
				v ^= payload[pos];
				pos = pos + 1 == plen ? 0 : pos + 1;
			}
			orig[i][b] = v;
		}
		srcp[i] = work[i];
	}
	for (j = 0; j < r; j++) {
		memset(rep[j], 0, len);
		repp[j] = rep[j];
	}
	for (i = 0; i < k; i++) {
		unsigned s = flags & F_REVERSE ? k - 1 - i : i;

		fec_encode_add(r, s, orig[s], slen[s], repp);
	}
	if (r == 1) { /* a single repair is plain parity */
		for (b = 0; b < len; b++) {
			uint8_t x = 0;

			for (i = 0; i < k; i++)
				x ^= orig[i][b];
			if (rep[0][b] != x)
				__builtin_trap();
		}
	}

	for (i = 0; i < k; i++) {
		have_src[i] = !gone[i];
		if (have_src[i]) {
			memcpy(work[i], orig[i], len);
			present++;
		} else {
			memset(work[i], 0xa5, len);
			lost++;
		}
	}
	for (j = 0; j < r; j++) {
		have_rep[j] = !gone[k + j];
		if (have_rep[j]) {
			memcpy(repsave[j], rep[j], len);
			present++;
		} else {
			memset(rep[j], 0x5a, len);
		}
	}

	rc = fec_decode(k, r, len, srcp, have_src, repp, have_rep);
	if (present >= k) {
		if (rc != (int)lost)
			__builtin_trap();
		for (i = 0; i < k; i++)
			if (memcmp(work[i], orig[i], len) != 0)
				__builtin_trap();
	} else {
		if (rc != -1)
			__builtin_trap();
		for (i = 0; i < k; i++)
			if (!have_src[i])
				for (b = 0; b < len; b++)
					if (work[i][b] != 0xa5)
						__builtin_trap();
	}
	for (j = 0; j < r; j++)
		if (have_rep[j] && memcmp(rep[j], repsave[j], len) != 0)
			__builtin_trap();
	return 0;
}
