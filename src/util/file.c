#include "util/file.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIRST_CAP 4096

static void drop(char *buf, size_t len)
{
	sodium_memzero(buf, len);
	free(buf);
}

int yip_read_fd(int fd, size_t max, char **out, size_t *len)
{
	/* The buffer doubles up to max + 1 bytes: room for the NUL, and a full
	 * one means fd holds more than max. Not realloc: it cannot wipe the
	 * block it leaves. */
	size_t cap = max < FIRST_CAP ? max + 1 : FIRST_CAP, n = 0;
	char *buf = malloc(cap), *bigger;
	ssize_t r;

	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			size_t next = cap > max / 2 ? max + 1 : cap * 2;

			if (cap > max) {
				drop(buf, n);
				return -EFBIG;
			}
			if ((bigger = malloc(next)) == NULL) {
				drop(buf, n);
				return -ENOMEM;
			}
			memcpy(bigger, buf, n);
			drop(buf, n);
			buf = bigger;
			cap = next;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int saved = errno;

			drop(buf, n);
			return -saved;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
