/* The lines of Prometheus text exposition (see metrics_text.h). */
#include "ctl/metrics_text.h"

#include <stdlib.h>

/* Writes a label value with \, " and newline escaped. */
static void label_value(FILE *f, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

void metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{label="value"} n, or name n without a label. */
void metrics_sample(FILE *f, const char *name, const char *label, const char *value, uint64_t n)
{
	fputs(name, f);
	if (label != NULL) {
		fprintf(f, "{%s=\"", label);
		label_value(f, value);
		fputs("\"}", f);
	}
	fprintf(f, " %llu\n", (unsigned long long)n);
}

void metrics_metric(FILE *f, const char *name, const char *type, const char *help, uint64_t n)
{
	metrics_head(f, name, type, help);
	metrics_sample(f, name, NULL, NULL, n);
}

void metrics_process(FILE *f, uint64_t start_s)
{
	metrics_head(f, "yip_build_info", "gauge",
	             "The version of yip running, as a label; always 1.");
	metrics_sample(f, "yip_build_info", "version", YIP_VERSION, 1);
	if (start_s != 0)
		metrics_metric(f, "process_start_time_seconds", "gauge",
		               "Start time of the process since the Unix epoch, in seconds.",
		               start_s);
}

char *metrics_finish(FILE *f, char **text, size_t *size, size_t *out_len)
{
	if (fclose(f) != 0 || *text == NULL) {
		free(*text);
		return NULL;
	}
	*out_len = *size;
	return *text;
}
