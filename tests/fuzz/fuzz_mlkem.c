/*
 * libFuzzer target for ML-KEM-768 (src/crypto/mlkem.c) on what a peer
 * sends: the input is a ciphertext (first 1088 bytes, missing bytes 0)
 * for a fixed key pair, then an encapsulation key (the next 1184). Checked:
 * decapsulation always answers, the same way twice, and gives the
 * encapsulated secret for the ciphertext encapsulation made; encapsulation
 * to an arbitrary key either refuses it (a coefficient of q or more) or
 * answers, and the round trip through the fixed key always agrees.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/mlkem.h"

#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t ek[MLKEM768_EK_LEN], dk[MLKEM768_DK_LEN];
	static int ready;
	struct reader rd = {data, size};
	uint8_t ct[MLKEM768_CT_LEN], ct2[MLKEM768_CT_LEN], ek2[MLKEM768_EK_LEN];
	uint8_t ss[MLKEM_SS_LEN], ss2[MLKEM_SS_LEN], m[MLKEM_MSG_LEN] = {7};

	if (!ready) {
		uint8_t seed[MLKEM_SEED_LEN] = {1, 2, 3};

		if (mlkem768_keygen(ek, dk, seed) != 0)
			abort();
		ready = 1;
	}
	for (size_t i = 0; i < sizeof(ct); i++)
		ct[i] = next(&rd);
	for (size_t i = 0; i < sizeof(ek2); i++)
		ek2[i] = next(&rd);
	if (mlkem768_decaps(ss, ct, dk) != 0 || mlkem768_decaps(ss2, ct, dk) != 0 ||
	    memcmp(ss, ss2, sizeof(ss)) != 0)
		abort();
	memcpy(m, ct, sizeof(m));
	if (mlkem768_encaps(ct2, ss, ek, m) != 0 || mlkem768_decaps(ss2, ct2, dk) != 0 ||
	    memcmp(ss, ss2, sizeof(ss)) != 0)
		abort();
	(void)mlkem768_encaps(ct2, ss, ek2, m); /* refused or answered: no crash */
	return 0;
}
