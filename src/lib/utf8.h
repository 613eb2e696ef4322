/*
 * utf8.h - the one rule for text that goes into a store (SPEC.md 2.3):
 * valid UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF) without NUL. It is the rule jansson's loader applies, so a
 * string that passes can always be written and read back.
 */
#ifndef VFS_UTF8_H
#define VFS_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True if the len bytes at s are valid UTF-8 and hold no NUL. */
bool utf8_valid(const char *s, size_t len);

/* utf8_valid() of a C string; NULL counts as valid (absent). */
bool utf8_valid_str(const char *s);

/* True if s is valid UTF-8 of fewer than max bytes without control
 * characters (C0 and DEL): safe for a log field and a file name. */
bool utf8_printable(const char *s, size_t max);

#endif
