/*
 * jsonflat.h - the common shape of a JSON line, read and written without
 * jansson's general parser and dumper (jsonl.c's fast paths).
 *
 * Check lines and answer lines are flat objects of short ASCII strings;
 * jansson's lexer and dumper spend most of `vfstore apply`'s instructions
 * on them (callgrind). Both functions here accept only that shape and say
 * "not mine" for anything else, so the caller falls back to jansson, and
 * every error message and edge case stays jansson's. What they do accept
 * they handle exactly as jansson does (t/unit/jsonl.c, t/fuzz/fuzz-jsonl.c
 * compare the two).
 */
#ifndef VFS_JSONFLAT_H
#define VFS_JSONFLAT_H

#include <stddef.h>
#include <jansson.h>

/*
 * The object of the len bytes at s when they are JSON whitespace around
 * an object whose members are all strings of printable ASCII without a
 * backslash, under distinct keys of the same kind: what
 * json_loadb(s, len, JSON_REJECT_DUPLICATES) returns for them. NULL for
 * any other text (or out of memory): parse it with jansson.
 */
json_t *jsonflat_parse(const char *s, size_t len);

/*
 * Renders obj as json_dumpb(obj, buf, size, JSON_COMPACT) does when it is
 * an object whose members are strings of ASCII (any escapes), integers,
 * booleans or null; returns the length that needs (written only up to
 * size). 0 for any other value: dump it with jansson.
 */
size_t jsonflat_dump(const json_t *obj, char *buf, size_t size);

#endif
