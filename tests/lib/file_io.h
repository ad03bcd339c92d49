/* file_io.h — whole files into memory for the tests and the graders.
 *
 * Public: file_read, file_lines, fd_read_text.
 */
#ifndef HVDLAB_FILE_IO_H
#define HVDLAB_FILE_IO_H

#include <stddef.h>

/* The bytes of the file at path in a malloc'd buffer with a '\0' after the last one (so a text
 * file is a C string); their number in *len when len is not NULL. NULL when the file cannot be
 * opened or read whole. */
char *file_read(const char *path, size_t *len);

/* Splits text in place into its lines: each '\n' becomes '\0' and (*lines)[i] points at the
 * start of line i; a last line without '\n' counts too, an empty text has no lines. *lines is
 * malloc'd (free it, then text). Returns the number of lines. */
size_t file_lines(char *text, char ***lines);

/* Reads fd to its end (a pipe from a child, say) into out as a C string, cut to outlen - 1
 * bytes; closes fd. Returns the bytes kept. */
size_t fd_read_text(int fd, char *out, size_t outlen);

#endif
