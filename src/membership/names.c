#include <stdio.h>
#include <time.h>

#include "membership/internal.h"

static const char *const verdict_names[MEMBER_VERDICT_COUNT] = {
    [MEMBER_OK] = "ok",
    [MEMBER_MALFORMED] = "malformed",
    [MEMBER_BAD_SIGNATURE] = "bad_signature",
    [MEMBER_WRONG_CA] = "wrong_ca",
    [MEMBER_WRONG_NETWORK] = "wrong_network",
    [MEMBER_EXPIRED] = "expired",
    [MEMBER_NOT_YET_VALID] = "not_yet_valid",
    [MEMBER_REVOKED] = "revoked",
    [MEMBER_KEY_MISMATCH] = "key_mismatch",
    [MEMBER_OLDER] = "older",
};

static const char *const verdict_texts[MEMBER_VERDICT_COUNT] = {
    [MEMBER_OK] = "valid",
    [MEMBER_MALFORMED] = "not a well-formed object of the kind expected",
    [MEMBER_BAD_SIGNATURE] = "the member's own signature does not verify",
    [MEMBER_WRONG_CA] = ("the CA signature does not verify under the CA key given: issued by "
                         "another CA, or altered"),
    [MEMBER_WRONG_NETWORK] = "issued for another network",
    [MEMBER_EXPIRED] = "expired",
    [MEMBER_NOT_YET_VALID] = "not valid yet",
    [MEMBER_REVOKED] = "revoked: the member's key or this certificate is on the revocation list",
    [MEMBER_KEY_MISMATCH] = "the certificate is for another key than the one presented",
    [MEMBER_OLDER] = "older than one already seen (a lower serial)",
};

const char *member_verdict_name(enum member_verdict v)
{
	return (unsigned)v < MEMBER_VERDICT_COUNT ? verdict_names[v] : "?";
}

const char *member_verdict_text(enum member_verdict v)
{
	return (unsigned)v < MEMBER_VERDICT_COUNT ? verdict_texts[v] : "?";
}

const char *member_kind_name(uint8_t kind)
{
	switch (kind) {
	case WIRE_OBJ_CERT:
		return "certificate";
	case WIRE_OBJ_ROOTS:
		return "root set";
	case WIRE_OBJ_REVOCATIONS:
		return "revocation list";
	case WIRE_OBJ_RECORD:
		return "member record";
	case WIRE_OBJ_REQUEST:
		return "certificate request";
	default:
		return NULL;
	}
}

const char *member_kind_label(uint8_t kind)
{
	switch (kind) {
	case WIRE_OBJ_CERT:
		return "CERTIFICATE";
	case WIRE_OBJ_ROOTS:
		return "ROOT SET";
	case WIRE_OBJ_REVOCATIONS:
		return "REVOCATION LIST";
	case WIRE_OBJ_RECORD:
		return "MEMBER RECORD";
	case WIRE_OBJ_REQUEST:
		return "CERTIFICATE REQUEST";
	default:
		return NULL;
	}
}

void member_format_time(char out[MEMBER_TIME_LEN], uint64_t unix_s)
{
	struct tm tm;
	time_t t = (time_t)unix_s;

	/* Beyond what struct tm holds (year > 2^31), say so in seconds. */
	if (unix_s > (uint64_t)INT64_MAX || gmtime_r(&t, &tm) == NULL ||
	    strftime(out, MEMBER_TIME_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, MEMBER_TIME_LEN, "@%llu", (unsigned long long)unix_s);
}

/* "3 days", "1 day", "5 hours", "2 minutes", "40 seconds". */
static void span(char *out, size_t outlen, uint64_t s)
{
	static const struct {
		uint64_t secs;
		const char *unit;
	} units[] = {{86400, "day"}, {3600, "hour"}, {60, "minute"}, {1, "second"}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t n = s / units[i].secs;

		if (n > 0 || units[i].secs == 1) {
			snprintf(out, outlen, "%llu %s%s", (unsigned long long)n, units[i].unit,
			         n == 1 ? "" : "s");
			return;
		}
	}
}

void member_format_validity(char *out, size_t outlen, uint64_t not_before, uint64_t not_after,
                            uint64_t now)
{
	char s[48];

	if (now < not_before) {
		span(s, sizeof(s), not_before - now);
		snprintf(out, outlen, "not valid for another %s", s);
	} else if (now >= not_after) {
		span(s, sizeof(s), now - not_after);
		snprintf(out, outlen, "expired %s ago", s);
	} else {
		span(s, sizeof(s), not_after - now);
		snprintf(out, outlen, "expires in %s", s);
	}
}
