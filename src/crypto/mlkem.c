/* ML-KEM-768, FIPS 203: see mlkem.h. Section numbers are FIPS 203's. */
#include "crypto/mlkem.h"

#include <openssl/evp.h>
#include <sodium/utils.h>
#include <string.h>

#define N    256
#define Q    3329
#define K    3
#define DU   10
#define DV   4
#define POLY 384 /* ByteEncode12 of one polynomial */

struct poly {
	uint16_t c[N]; /* each in [0, Q) */
};

/* 17^BitRev7(i) mod q (section 4.3). */
static const uint16_t zetas[128] = {
    1,    1729, 2580, 3289, 2642, 630,  1897, 848,  1062, 1919, 193,  797,  2786, 3260, 569,  1746,
    296,  2447, 1339, 1476, 3046, 56,   2240, 1333, 1426, 2094, 535,  2882, 2393, 2879, 1974, 821,
    289,  331,  3253, 1756, 1197, 2304, 2277, 2055, 650,  1977, 2513, 632,  2865, 33,   1320, 1915,
    2319, 1435, 807,  452,  1438, 2868, 1534, 2402, 2647, 2617, 1481, 648,  2474, 3110, 1227, 910,
    17,   2761, 583,  2649, 1637, 723,  2288, 1100, 1409, 2662, 3281, 233,  756,  2156, 3015, 3050,
    1703, 1651, 2789, 1789, 1847, 952,  1461, 2687, 939,  2308, 2437, 2388, 733,  2337, 268,  641,
    1584, 2298, 2037, 3220, 375,  2549, 2090, 1645, 1063, 319,  2773, 757,  2099, 561,  2466, 2594,
    2804, 1092, 403,  1026, 1143, 2150, 2775, 886,  1722, 1212, 1874, 1029, 2110, 2935, 885,  2154,
};

/* 17^(2 BitRev7(i) + 1) mod q (section 4.3.1). */
static const uint16_t gammas[128] = {
    17,   3312, 2761, 568,  583,  2746, 2649, 680,  1637, 1692, 723,  2606, 2288, 1041, 1100, 2229,
    1409, 1920, 2662, 667,  3281, 48,   233,  3096, 756,  2573, 2156, 1173, 3015, 314,  3050, 279,
    1703, 1626, 1651, 1678, 2789, 540,  1789, 1540, 1847, 1482, 952,  2377, 1461, 1868, 2687, 642,
    939,  2390, 2308, 1021, 2437, 892,  2388, 941,  733,  2596, 2337, 992,  268,  3061, 641,  2688,
    1584, 1745, 2298, 1031, 2037, 1292, 3220, 109,  375,  2954, 2549, 780,  2090, 1239, 1645, 1684,
    1063, 2266, 319,  3010, 2773, 556,  757,  2572, 2099, 1230, 561,  2768, 2466, 863,  2594, 735,
    2804, 525,  1092, 2237, 403,  2926, 1026, 2303, 1143, 2186, 2150, 1179, 2775, 554,  886,  2443,
    1722, 1607, 1212, 2117, 1874, 1455, 1029, 2300, 2110, 1219, 2935, 394,  885,  2444, 2154, 1175,
};

/* ---- SHA-3 (section 4.1), from libcrypto ---- */

/* md(a || b): a fixed-length hash when outlen is 0, else outlen bytes of an XOF. */
static int digest(const EVP_MD *md, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                  uint8_t *out, size_t outlen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx != NULL && EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
	         EVP_DigestUpdate(ctx, a, alen) == 1 &&
	         (blen == 0 || EVP_DigestUpdate(ctx, b, blen) == 1) &&
	         (outlen > 0 ? EVP_DigestFinalXOF(ctx, out, outlen)
	                     : EVP_DigestFinal_ex(ctx, out, NULL)) == 1;

	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -1;
}

#define xof(md, a, alen, b, blen, out, outlen) digest(md, a, alen, b, blen, out, outlen)
#define hash(md, a, alen, b, blen, out)        digest(md, a, alen, b, blen, out, 0)

/* PRF_eta(s, b) with eta = 2: SHAKE256(s || b), 128 bytes. */
static int prf(const uint8_t s[32], uint8_t b, uint8_t out[128])
{
	return xof(EVP_shake256(), s, 32, &b, 1, out, 128);
}

/* ---- sampling (section 4.2.2) ---- */

/* Algorithm 7, SampleNTT(rho || j || i). SHAKE's output for more bytes
 * begins with its output for fewer, so a short stream is read again longer. */
static int sample_ntt(struct poly *a, const uint8_t rho[32], uint8_t j, uint8_t i)
{
	uint8_t seed[34], buf[168 * 12];
	size_t len = 168 * 3;

	memcpy(seed, rho, 32);
	seed[32] = j;
	seed[33] = i;
	for (;;) {
		size_t n = 0, p = 0;

		if (xof(EVP_shake128(), seed, sizeof(seed), NULL, 0, buf, len) != 0)
			return -1;
		while (n < N && p + 3 <= len) {
			unsigned d1 = buf[p] | (unsigned)(buf[p + 1] & 15) << 8;
			unsigned d2 = buf[p + 1] >> 4 | (unsigned)buf[p + 2] << 4;

			p += 3;
			if (d1 < Q)
				a->c[n++] = (uint16_t)d1;
			if (d2 < Q && n < N)
				a->c[n++] = (uint16_t)d2;
		}
		if (n == N)
			return 0;
		if (len == sizeof(buf))
			return -1; /* 2016 bytes short of 256 draws: never, in practice */
		len *= 2;
	}
}

/* Algorithm 8, SamplePolyCBD_2. */
static void cbd2(struct poly *f, const uint8_t b[128])
{
	for (size_t i = 0; i < N; i++) {
		unsigned byte = b[i / 2] >> (4 * (i & 1));
		unsigned x = (byte & 1) + (byte >> 1 & 1), y = (byte >> 2 & 1) + (byte >> 3 & 1);

		f->c[i] = (uint16_t)((x + Q - y) % Q);
	}
}

/* ---- the NTT (section 4.3) ---- */

static void ntt(struct poly *f)
{
	unsigned k = 1;

	for (unsigned len = 128; len >= 2; len >>= 1)
		for (unsigned start = 0; start < N; start += 2 * len) {
			uint32_t z = zetas[k++];

			for (unsigned j = start; j < start + len; j++) {
				uint32_t t = z * f->c[j + len] % Q;

				f->c[j + len] = (uint16_t)((f->c[j] + Q - t) % Q);
				f->c[j] = (uint16_t)((f->c[j] + t) % Q);
			}
		}
}

static void ntt_inv(struct poly *f)
{
	unsigned k = 127;

	for (unsigned len = 2; len <= 128; len <<= 1)
		for (unsigned start = 0; start < N; start += 2 * len) {
			uint32_t z = zetas[k--];

			for (unsigned j = start; j < start + len; j++) {
				uint32_t t = f->c[j];

				f->c[j] = (uint16_t)((t + f->c[j + len]) % Q);
				f->c[j + len] = (uint16_t)(z * ((f->c[j + len] + Q - t) % Q) % Q);
			}
		}
	for (unsigned j = 0; j < N; j++)
		f->c[j] = (uint16_t)((uint32_t)f->c[j] * 3303 % Q); /* 3303 = 128^-1 */
}

/* acc += f * g in the NTT domain (Algorithms 11 and 12). */
static void mul_acc(struct poly *acc, const struct poly *f, const struct poly *g)
{
	for (unsigned i = 0; i < 128; i++) {
		uint32_t a0 = f->c[2 * i], a1 = f->c[2 * i + 1], b0 = g->c[2 * i],
		         b1 = g->c[2 * i + 1];
		uint32_t c0 = (a0 * b0 + a1 * b1 % Q * gammas[i]) % Q, c1 = (a0 * b1 + a1 * b0) % Q;

		acc->c[2 * i] = (uint16_t)((acc->c[2 * i] + c0) % Q);
		acc->c[2 * i + 1] = (uint16_t)((acc->c[2 * i + 1] + c1) % Q);
	}
}

static void add(struct poly *f, const struct poly *g)
{
	for (unsigned j = 0; j < N; j++)
		f->c[j] = (uint16_t)((f->c[j] + g->c[j]) % Q);
}

/* ---- encodings (section 4.2.1) ---- */

static void encode12(uint8_t *out, const struct poly *f)
{
	for (unsigned i = 0; i < N / 2; i++) {
		unsigned a = f->c[2 * i], b = f->c[2 * i + 1];

		out[3 * i] = (uint8_t)a;
		out[3 * i + 1] = (uint8_t)(a >> 8 | (b & 15) << 4);
		out[3 * i + 2] = (uint8_t)(b >> 4);
	}
}

/* Returns 0, or -1 if a coefficient is q or more (reduced anyway). */
static int decode12(struct poly *f, const uint8_t *in)
{
	unsigned bad = 0;

	for (unsigned i = 0; i < N / 2; i++) {
		unsigned a = in[3 * i] | (unsigned)(in[3 * i + 1] & 15) << 8;
		unsigned b = in[3 * i + 1] >> 4 | (unsigned)in[3 * i + 2] << 4;

		bad |= (unsigned)(a >= Q) | (unsigned)(b >= Q);
		f->c[2 * i] = (uint16_t)(a % Q);
		f->c[2 * i + 1] = (uint16_t)(b % Q);
	}
	return bad ? -1 : 0;
}

/* ByteEncode_d(Compress_d(f)) for d < 12, appended to out (32 d bytes). */
static void compress_encode(uint8_t *out, const struct poly *f, unsigned d)
{
	memset(out, 0, 32 * d);
	for (unsigned i = 0; i < N; i++) {
		uint32_t y = (((uint32_t)f->c[i] << d) + (Q - 1) / 2) / Q & ((1u << d) - 1);

		for (unsigned b = 0; b < d; b++) {
			unsigned at = i * d + b;

			out[at / 8] |= (uint8_t)((y >> b & 1) << (at % 8));
		}
	}
}

/* Decompress_d(ByteDecode_d(in)). */
static void decode_decompress(struct poly *f, const uint8_t *in, unsigned d)
{
	for (unsigned i = 0; i < N; i++) {
		uint32_t y = 0;

		for (unsigned b = 0; b < d; b++) {
			unsigned at = i * d + b;

			y |= (uint32_t)(in[at / 8] >> (at % 8) & 1) << b;
		}
		f->c[i] = (uint16_t)((Q * y + (1u << (d - 1))) >> d);
	}
}

/* ---- K-PKE (section 5) ---- */

/* Â[i][j] = SampleNTT(rho || j || i); transposed: Â[j][i] in [i][j]. */
static int matrix(struct poly a[K][K], const uint8_t rho[32], int transposed)
{
	for (uint8_t i = 0; i < K; i++)
		for (uint8_t j = 0; j < K; j++)
			if (sample_ntt(transposed ? &a[j][i] : &a[i][j], rho, j, i) != 0)
				return -1;
	return 0;
}

/* Algorithm 14, K-PKE.Encrypt(ek, m, r). */
static int pke_encrypt(uint8_t ct[MLKEM768_CT_LEN], const uint8_t ek[MLKEM768_EK_LEN],
                       const uint8_t m[32], const uint8_t r[32])
{
	struct poly a[K][K], t[K], y[K], u[K], v, e, mu;
	uint8_t buf[128];
	uint8_t nonce = 0;
	int rc = -1;

	for (unsigned i = 0; i < K; i++)
		if (decode12(&t[i], ek + POLY * i) != 0)
			goto out;
	if (matrix(a, ek + POLY * K, 1) != 0)
		goto out;
	for (unsigned i = 0; i < K; i++) {
		if (prf(r, nonce++, buf) != 0)
			goto out;
		cbd2(&y[i], buf);
		ntt(&y[i]);
	}
	for (unsigned i = 0; i < K; i++) {
		memset(&u[i], 0, sizeof(u[i]));
		for (unsigned j = 0; j < K; j++)
			mul_acc(&u[i], &a[i][j], &y[j]); /* (Â^T ŷ)[i] */
		ntt_inv(&u[i]);
		if (prf(r, nonce++, buf) != 0)
			goto out;
		cbd2(&e, buf);
		add(&u[i], &e);
		compress_encode(ct + 32 * DU * i, &u[i], DU);
	}
	memset(&v, 0, sizeof(v));
	for (unsigned i = 0; i < K; i++)
		mul_acc(&v, &t[i], &y[i]);
	ntt_inv(&v);
	if (prf(r, nonce, buf) != 0)
		goto out;
	cbd2(&e, buf);
	add(&v, &e);
	decode_decompress(&mu, m, 1);
	add(&v, &mu);
	compress_encode(ct + 32 * DU * K, &v, DV);
	rc = 0;
out:
	sodium_memzero(y, sizeof(y));
	sodium_memzero(&e, sizeof(e));
	sodium_memzero(&mu, sizeof(mu));
	sodium_memzero(u, sizeof(u));
	sodium_memzero(&v, sizeof(v));
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

/* ---- ML-KEM (section 6) ---- */

int mlkem768_keygen(uint8_t ek[MLKEM768_EK_LEN], uint8_t dk[MLKEM768_DK_LEN],
                    const uint8_t seed[MLKEM_SEED_LEN])
{
	struct poly a[K][K], s[K], e, t;
	uint8_t g[64], buf[128], kk = K, nonce = 0;
	const uint8_t *rho = g, *sigma = g + 32;
	int rc = -1;

	/* Algorithm 13, K-PKE.KeyGen(d): (rho, sigma) = G(d || k). */
	if (hash(EVP_sha3_512(), seed, 32, &kk, 1, g) != 0 || matrix(a, rho, 0) != 0)
		goto out;
	for (unsigned i = 0; i < K; i++) {
		if (prf(sigma, nonce++, buf) != 0)
			goto out;
		cbd2(&s[i], buf);
		ntt(&s[i]);
	}
	for (unsigned i = 0; i < K; i++) {
		if (prf(sigma, nonce++, buf) != 0)
			goto out;
		cbd2(&e, buf);
		ntt(&e);
		t = e;
		for (unsigned j = 0; j < K; j++)
			mul_acc(&t, &a[i][j], &s[j]);
		encode12(ek + POLY * i, &t);
		encode12(dk + POLY * i, &s[i]);
	}
	memcpy(ek + POLY * K, rho, 32);
	/* Algorithm 16: dk = dk_pke || ek || H(ek) || z. */
	memcpy(dk + POLY * K, ek, MLKEM768_EK_LEN);
	if (hash(EVP_sha3_256(), ek, MLKEM768_EK_LEN, NULL, 0, dk + POLY * K + MLKEM768_EK_LEN) !=
	    0)
		goto out;
	memcpy(dk + MLKEM768_DK_LEN - 32, seed + 32, 32);
	rc = 0;
out:
	sodium_memzero(s, sizeof(s));
	sodium_memzero(&e, sizeof(e));
	sodium_memzero(g, sizeof(g));
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

int mlkem768_encaps(uint8_t ct[MLKEM768_CT_LEN], uint8_t ss[MLKEM_SS_LEN],
                    const uint8_t ek[MLKEM768_EK_LEN], const uint8_t m[MLKEM_MSG_LEN])
{
	uint8_t h[32], kr[64];
	int rc = -1;

	/* Algorithm 17: (K, r) = G(m || H(ek)); pke_encrypt does the modulus check. */
	if (hash(EVP_sha3_256(), ek, MLKEM768_EK_LEN, NULL, 0, h) == 0 &&
	    hash(EVP_sha3_512(), m, 32, h, 32, kr) == 0 && pke_encrypt(ct, ek, m, kr + 32) == 0) {
		memcpy(ss, kr, MLKEM_SS_LEN);
		rc = 0;
	}
	sodium_memzero(kr, sizeof(kr));
	return rc;
}

int mlkem768_decaps(uint8_t ss[MLKEM_SS_LEN], const uint8_t ct[MLKEM768_CT_LEN],
                    const uint8_t dk[MLKEM768_DK_LEN])
{
	const uint8_t *ek = dk + POLY * K, *h = ek + MLKEM768_EK_LEN, *z = h + 32;
	struct poly s, u, w, v;
	uint8_t m[32], kr[64], kbar[32], ct2[MLKEM768_CT_LEN];
	uint8_t diff = 0, mask;
	int rc = -1;

	/* Algorithm 15, K-PKE.Decrypt: w = v - NTT^-1(ŝ^T NTT(u)). */
	memset(&w, 0, sizeof(w));
	for (unsigned i = 0; i < K; i++) {
		(void)decode12(&s, dk + POLY * i); /* ours: reduced, never out of range */
		decode_decompress(&u, ct + 32 * DU * i, DU);
		ntt(&u);
		mul_acc(&w, &s, &u);
	}
	ntt_inv(&w);
	decode_decompress(&v, ct + 32 * DU * K, DV);
	for (unsigned j = 0; j < N; j++)
		v.c[j] = (uint16_t)((v.c[j] + Q - w.c[j]) % Q);
	compress_encode(m, &v, 1);
	/* Algorithm 18: re-encrypt, and answer J(z || c) unless it matches. */
	if (hash(EVP_sha3_512(), m, 32, h, 32, kr) != 0 ||
	    xof(EVP_shake256(), z, 32, ct, MLKEM768_CT_LEN, kbar, 32) != 0 ||
	    pke_encrypt(ct2, ek, m, kr + 32) != 0)
		goto out;
	for (size_t i = 0; i < MLKEM768_CT_LEN; i++)
		diff |= ct[i] ^ ct2[i];
	mask = (uint8_t) - (uint8_t)((diff | (uint8_t)-diff) >> 7 ^ 1); /* 0xff if equal */
	for (size_t i = 0; i < MLKEM_SS_LEN; i++)
		ss[i] = (uint8_t)((kr[i] & mask) | (kbar[i] & (uint8_t)~mask));
	rc = 0;
out:
	sodium_memzero(&s, sizeof(s));
	sodium_memzero(&w, sizeof(w));
	sodium_memzero(&v, sizeof(v));
	sodium_memzero(m, sizeof(m));
	sodium_memzero(kr, sizeof(kr));
	sodium_memzero(kbar, sizeof(kbar));
	sodium_memzero(ct2, sizeof(ct2));
	return rc;
}
