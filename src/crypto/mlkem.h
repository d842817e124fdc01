/*
 * ML-KEM-768 (FIPS 203): key generation, encapsulation and decapsulation,
 * as TLS's X25519MLKEM768 group needs them (the key share's first 1184
 * bytes are an encapsulation key, the server's answer's first 1088 a
 * ciphertext; the group's secret is the 32-byte ML-KEM secret, then
 * X25519's). SHA3-256, SHA3-512, SHAKE128 and SHAKE256 come from
 * libcrypto; the lattice arithmetic is here. Deterministic from the
 * caller's randomness, so it is checked against an independent
 * implementation's outputs (tests/unit/test_mlkem.c). Decapsulation is
 * constant time in the secret key and the ciphertext, and rejects
 * implicitly (a wrong ciphertext gives a pseudorandom secret, no error).
 */
#ifndef YIP_CRYPTO_MLKEM_H
#define YIP_CRYPTO_MLKEM_H

#include <stdint.h>

#define MLKEM768_EK_LEN 1184 /* encapsulation (public) key */
#define MLKEM768_DK_LEN 2400 /* decapsulation (secret) key */
#define MLKEM768_CT_LEN 1088 /* ciphertext */
#define MLKEM_SS_LEN    32   /* shared secret */
#define MLKEM_SEED_LEN  64   /* key generation's randomness: d then z */
#define MLKEM_MSG_LEN   32   /* encapsulation's randomness: m */

/* ML-KEM.KeyGen_internal(d, z) with seed = d || z. 0, or -1 if libcrypto failed. */
int mlkem768_keygen(uint8_t ek[MLKEM768_EK_LEN], uint8_t dk[MLKEM768_DK_LEN],
                    const uint8_t seed[MLKEM_SEED_LEN]);

/*
 * ML-KEM.Encaps_internal(ek, m): the ciphertext and the shared secret. -1
 * if ek fails FIPS 203's modulus check (a coefficient of 3329 or more) or
 * libcrypto failed.
 */
int mlkem768_encaps(uint8_t ct[MLKEM768_CT_LEN], uint8_t ss[MLKEM_SS_LEN],
                    const uint8_t ek[MLKEM768_EK_LEN], const uint8_t m[MLKEM_MSG_LEN]);

/* ML-KEM.Decaps(dk, ct). 0, or -1 only if libcrypto failed. */
int mlkem768_decaps(uint8_t ss[MLKEM_SS_LEN], const uint8_t ct[MLKEM768_CT_LEN],
                    const uint8_t dk[MLKEM768_DK_LEN]);

#endif
