/*
 * Lines of Prometheus text exposition, format 0.0.4, for metrics.c (yipd)
 * and rdv_metrics.c (yip-rendezvous): a metric's HELP and TYPE lines, and
 * its samples with at most one label, whose value is escaped.
 */
#ifndef YIP_CTL_METRICS_TEXT_H
#define YIP_CTL_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

void metrics_head(FILE *f, const char *name, const char *type, const char *help);
/* name{label="value"} n; label NULL: name n. */
void metrics_sample(FILE *f, const char *name, const char *label, const char *value, uint64_t n);
/* A metric of one sample without labels, its HELP and TYPE lines first. */
void metrics_metric(FILE *f, const char *name, const char *type, const char *help, uint64_t n);

/* yip_build_info, and process_start_time_seconds unless start_s is 0. */
void metrics_process(FILE *f, uint64_t start_s);

/* Closes f, an open_memstream of *text and *size: the text (the caller
 * frees it) and its length in *out_len, or NULL when out of memory. */
char *metrics_finish(FILE *f, char **text, size_t *size, size_t *out_len);

#endif
