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
 *
 * The harness's own work on up to 64 symbols of 9 KiB (making the sources,
 * checking parity and erased symbols) goes a word or a memcpy/memcmp at a
 * time, in functions built without coverage instrumentation (NOCOV):
 * byte loops with a comparison traced per byte cost far more than the codec
 * itself, and what they compare tells the fuzzer nothing.
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

#define NOCOV __attribute__((no_sanitize("coverage"), noinline))

static uint8_t orig[FEC_MAX_K][FEC_MAX_LEN];
static uint8_t work[FEC_MAX_K][FEC_MAX_LEN];
static uint8_t rep[FEC_MAX_R][FEC_MAX_LEN];
static uint8_t repsave[FEC_MAX_R][FEC_MAX_LEN];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* (b * 7) mod 256 for b = 0, 1, ...: source i's pattern (i * 31 + b * 7)
 * is this from offset (i * 31 * 183) mod 256, 183 being 7's inverse. */
static uint8_t ramp[256 + FEC_MAX_LEN];

static uint64_t word(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* dst[0..n) ^= src[0..n), a word at a time. */
NOCOV static void xor_into(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t b = 0;

	for (; b + 8 <= n; b += 8) {
		uint64_t w = word(dst + b) ^ word(src + b);

		memcpy(dst + b, &w, sizeof(w));
	}
	for (; b < n; b++)
		dst[b] ^= src[b];
}

/* The payload repeated to at least plen + FEC_MAX_LEN bytes, when shorter than FEC_MAX_LEN. */
static uint8_t again[3 * FEC_MAX_LEN];

/* Source i's n bytes: its pattern XORed with the payload, repeated from *pos. */
NOCOV static void make_source(unsigned i, size_t n, const uint8_t *payload, size_t plen,
                              size_t *pos)
{
	memcpy(orig[i], ramp + (i * 31u * 183u) % 256, n);
	if (plen == 0)
		return;
	if (plen < FEC_MAX_LEN) {
		xor_into(orig[i], again + *pos, n);
		*pos = (*pos + n) % plen;
		return;
	}
	for (size_t b = 0; b < n;) {
		size_t c = plen - *pos < n - b ? plen - *pos : n - b;

		xor_into(orig[i] + b, payload + *pos, c);
		b += c;
		*pos = (*pos + c) % plen;
	}
}

/* The single repair is the XOR of the k sources. */
NOCOV static bool is_parity(unsigned k, size_t len)
{
	static uint8_t x[FEC_MAX_LEN];

	memset(x, 0, len);
	for (unsigned i = 0; i < k; i++)
		xor_into(x, orig[i], len);
	return memcmp(x, rep[0], len) == 0;
}

/* Every one of the len bytes at p is v: the first is, and each equals the next. */
static bool all_are(const uint8_t *p, size_t len, uint8_t v)
{
	return len == 0 || (p[0] == v && memcmp(p, p + 1, len - 1) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader rd = {data, size};
	uint8_t *srcp[FEC_MAX_K], *repp[FEC_MAX_R];
	bool have_src[FEC_MAX_K], have_rep[FEC_MAX_R];
	size_t slen[FEC_MAX_K], len = 0;
	unsigned k, r, flags, nerase, i, j, present = 0, lost = 0;
	uint16_t raw;
	int rc;

	fec_init();
	if (ramp[1] == 0)
		for (size_t b = 0; b < sizeof(ramp); b++)
			ramp[b] = (uint8_t)(b * 7);
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

	if (plen > 0 && plen < FEC_MAX_LEN) {
		size_t have = plen;

		memcpy(again, payload, plen);
		while (have < plen + FEC_MAX_LEN) {
			size_t c = have < sizeof(again) - have ? have : sizeof(again) - have;

			memcpy(again + have, again, c);
			have += c;
		}
	}

	for (i = 0; i < k; i++) {
		slen[i] = maxlen;
		if (flags & F_MIXED)
			slen[i] = 1 + (i * 2654435761u + raw) % maxlen;
		if (slen[i] > len)
			len = slen[i];
		memset(orig[i], 0, maxlen);
		make_source(i, slen[i], payload, plen, &pos);
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
	if (r == 1 && !is_parity(k, len))
		__builtin_trap();

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
			if (!have_src[i] && !all_are(work[i], len, 0xa5))
				__builtin_trap();
	}
	for (j = 0; j < r; j++)
		if (have_rep[j] && memcmp(rep[j], repsave[j], len) != 0)
			__builtin_trap();
	return 0;
}
