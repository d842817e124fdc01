/*
 * Membership objects (src/membership) as JSON, for `yip-ca show --json`
 * and yipctl. Each function returns a new cJSON object the caller deletes,
 * or NULL when out of memory. Every object has "kind" (member_kind_name),
 * "format" and "bytes"; keys are 64 hex digits as everywhere in yip; times
 * are both UTC ISO 8601 strings and Unix seconds ("..._unix"); 64-bit
 * numbers are written exactly.
 */
#ifndef YIP_CTL_MEMBERS_H
#define YIP_CTL_MEMBERS_H

#include <stdint.h>

#include <cJSON.h>

#include "membership/member.h"

/* now (Unix seconds) gives "expires_in_days" (negative once expired) and "validity". */
cJSON *yip_ctl_cert_json(const struct member_cert *c, uint64_t now);
cJSON *yip_ctl_request_json(const struct member_request *r);
cJSON *yip_ctl_roots_json(const struct member_roots *r);
cJSON *yip_ctl_revocations_json(const struct member_revocations *r);
cJSON *yip_ctl_record_json(const struct member_record *r, uint64_t now);

#endif
