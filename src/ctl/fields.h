/*
 * Reading fields of a daemon's JSON reply defensively, for the renderers
 * of src/ctl (render.c for yipd, rendezvous.c for yip-rendezvous): a field
 * of the wrong type, or missing, reads as absent; numbers are clamped to
 * the range of uint64_t; strings are printed with every byte that is not
 * printable ASCII replaced by '?'. Private to src/ctl.
 */
#ifndef YIP_CTL_FIELDS_H
#define YIP_CTL_FIELDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

static inline uint64_t to_u64(double v)
{
	if (!(v > 0)) /* also NaN */
		return 0;
	if (v >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)v;
}

static inline const cJSON *field(const cJSON *o, const char *name)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

static inline const char *str_field(const cJSON *o, const char *name)
{
	const cJSON *f = field(o, name);

	return cJSON_IsString(f) && f->valuestring ? f->valuestring : NULL;
}

static inline bool num_field(const cJSON *o, const char *name, double *v)
{
	const cJSON *f = field(o, name);

	if (!cJSON_IsNumber(f))
		return false;
	*v = f->valuedouble;
	return true;
}

static inline uint64_t u64_field(const cJSON *o, const char *name)
{
	double v;

	return num_field(o, name, &v) ? to_u64(v) : 0;
}

/* Prints s with every byte that is not printable ASCII replaced by '?'. */
static inline void put_clean(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		fputc(c >= 0x20 && c < 0x7f ? c : '?', out);
	}
}

static inline void put_str_or(FILE *out, const char *s, const char *none)
{
	put_clean(out, s ? s : none);
}

#endif
