/* json_check.h — a strict JSON validator for the tests (RFC 8259 grammar, no extensions). */
#ifndef HVDLAB_JSON_CHECK_H
#define HVDLAB_JSON_CHECK_H

#include <stddef.h>

/* 0 when text[0..len) is exactly one JSON value (surrounding whitespace allowed), else -1 with
 * the byte offset of the first error in *where. */
int json_validate(const char *text, size_t len, size_t *where);
/* Occurrences of needle in haystack. */
size_t json_count(const char *haystack, const char *needle);

#endif
