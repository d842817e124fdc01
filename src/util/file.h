/* Reading a small file whole: a configuration, a key, a membership object. */
#ifndef YIP_UTIL_FILE_H
#define YIP_UTIL_FILE_H

#include <stddef.h>

/*
 * Reads fd to its end into a fresh buffer *out (malloc'd; a NUL follows the
 * *len bytes read). Returns 0; -EFBIG if fd holds more than max bytes;
 * -ENOMEM; or the -errno of a failed read. The file may hold a private key:
 * every buffer given up on the way is wiped, and the caller wipes *out (len
 * bytes) before it frees it if the text is secret.
 */
int yip_read_fd(int fd, size_t max, char **out, size_t *len);

#endif
