/* One JSON document as one line of a control reply (ctl.h). */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

char *yip_ctl_json_line(struct cJSON *o, size_t *out_len)
{
	char *text, *line;
	size_t n;

	if (o == NULL)
		return NULL;
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text == NULL)
		return NULL;
	n = strlen(text);
	line = realloc(text, n + 2);
	if (line == NULL) {
		free(text);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*out_len = n + 1;
	return line;
}
