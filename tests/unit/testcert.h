/*
 * A self-signed certificate for unit tests: key's public key under the
 * name CN=cn, valid from an hour ago for 30 days, signed by key with
 * SHA-256. The caller frees it (X509_free).
 */
#ifndef YIP_TESTS_TESTCERT_H
#define YIP_TESTS_TESTCERT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

static inline X509 *self_signed(EVP_PKEY *key, const char *cn)
{
	X509 *x = X509_new();
	X509_NAME *name;

	assert_non_null(key);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 30);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, name);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	return x;
}

#endif
