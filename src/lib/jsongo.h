/*
 * jsongo.h - what Go's encoding/json sees in a store's text that the tree
 * jansson builds has lost (SPEC 6.3): a key given twice (jansson keeps
 * the last value; Go decodes every one, keeps the first type error,
 * merges arrays into the elements already there and keeps a string or a
 * time when null follows), the raw bytes of a timestamp (Go parses them
 * with any escape still in them, and refuses), and keys that Go's
 * case-insensitive match would take for a field.
 *
 * The caller describes its document with a schema (the fields jsondoc.c
 * decodes). Nothing here prints; each check returns 0, or -1 with errno
 * EINVAL and why in the words of jsondoc.h ("unmarshal NOUN: ...").
 */
#ifndef VFS_JSONGO_H
#define VFS_JSONGO_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

enum jsongo_type {
	JSONGO_INT,			/* Go int */
	JSONGO_STRING,			/* Go string */
	JSONGO_TIME,			/* Go time.Time (null keeps it) */
	JSONGO_TIME_PTR,		/* Go *time.Time (null clears it) */
	JSONGO_ARRAY			/* Go slice of elem's objects */
};

struct jsongo_obj;

struct jsongo_field {
	const char *key;
	enum jsongo_type type;
	const struct jsongo_obj *elem;	/* JSONGO_ARRAY: its elements */
};

struct jsongo_obj {
	const char *name;		/* "record": "into a record object" */
	const struct jsongo_field *fields;
	size_t n;
};

/*
 * Checks every object of root the schema reaches for a key that is a
 * field's key in another case (Go's fold: ASCII case, and U+017F and
 * U+212A as s and k), which upstream would read into the field and this
 * loader would not see.
 */
int jsongo_keys(const json_t *root, const struct jsongo_obj *schema,
    const char *noun, char *why, size_t whylen);

/*
 * Walks text (len bytes of JSON that jansson accepted, whitespace outside
 * strings removed: jsondoc.c's compact form) as Go would decode it into
 * the schema, every value of a repeated key included: a time that does
 * not parse or holds an escape fails at once, as Go's does; a type error
 * is kept and the walk goes on, and so is a repeated key whose values Go
 * would merge or keep (an array after a non-empty array, a null after a
 * value), which this loader refuses. Call it only when the text has a
 * repeated key or an escape (jsondoc.c knows): otherwise the tree holds
 * all there is.
 */
int jsongo_scan(const char *text, size_t len,
    const struct jsongo_obj *schema, const char *noun, char *why,
    size_t whylen);

/*
 * Go's time.Parse(time.RFC3339, s) as far as this loader reads it
 * (timefmt_parse() with an upper-case T and Z only, '.' or ',' before
 * the fraction, any number of fraction digits cut to nanoseconds). 0, or
 * -1 (jsongo_time_why() says why).
 */
struct timespec;
int jsongo_time_parse(const char *s, struct timespec *ts);

/*
 * Why s is not a timestamp Go's RFC 3339 parser and this one both read,
 * as the end of a message: "the hour has one digit (...)", "offset out
 * of range (...)" or "not an RFC 3339 timestamp".
 */
const char *jsongo_time_why(const char *s);

#endif
