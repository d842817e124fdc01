/* Key pairs as text, for the --genkey and --pubkey commands of yipd and
 * yip-rendezvous: "private=<hex>" and "public=<hex>" lines; and yipd's
 * --cert-request. */
#ifndef YIP_CONFIG_KEYTEXT_H
#define YIP_CONFIG_KEYTEXT_H

#include <stddef.h>
#include <stdio.h>

/* Prints a new key pair as private= and public= lines. 0, or -1 if writing failed. */
int keytext_genkey(FILE *out);

/*
 * Reads a private key from the first line of in (64 hex digits, bare or
 * after "private=") and prints its public key. 0; -1 with a reason for a
 * bad or missing key; -2 if writing failed.
 */
int keytext_pubkey(FILE *in, FILE *out, char *reason, size_t rlen);

/*
 * Reads a private key as keytext_pubkey does and prints the member's
 * certificate request (src/membership) in its text form, with comment
 * lines naming the keys. Return values as keytext_pubkey's.
 */
int keytext_cert_request(FILE *in, FILE *out, char *reason, size_t rlen);

#endif
