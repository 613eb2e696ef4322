/*
 * jsondoc.h - strict, Go-compatible decoding of the store's versioned
 * documents ({"version": 1, "records"/"claims": [...]}, SPEC.md 4.1),
 * shared by the health file (healthfile.c) and the claims ledger
 * (claims.c). Errors carry upstream's wording ("unmarshal NOUN: json:
 * cannot unmarshal string into field ...", "validate NOUN: ...") in why;
 * nothing here prints.
 */
#ifndef VFS_JSONDOC_H
#define VFS_JSONDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <jansson.h>

struct jsongo_obj;

/* Formats why (when not NULL) and returns -1 with errno EINVAL. */
int jsondoc_why(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An entry for duplicate detection: the key (a, b; b NULL when the key
 * is one string) of the element at file position idx. Borrowed. */
struct jsondoc_dup {
	const char *a;
	const char *b;
	size_t idx;
};

/*
 * Sorts keys and sets dup[idx] for every key equal to one at an earlier
 * position, so that a walk in file order reports the first repeat where
 * upstream's map-based check would.
 */
void jsondoc_mark_dups(struct jsondoc_dup *keys, size_t n, bool *dup);

/* The Go name of v's JSON type ("object", "string", "bool", ...). */
const char *jsondoc_type(const json_t *v);

/*
 * Member key of obj: absent or null -> *out NULL and 0. A value of
 * another JSON type than want (JSON_TRUE: any bool) is an unmarshal
 * error naming gotype, the Go field type, as Go's decoder makes it.
 */
int jsondoc_member(const json_t *obj, const char *key, json_type want,
    const char *gotype, const json_t **out, const char *noun, char *why,
    size_t whylen);

/* A string member: *out borrowed from obj, NULL when absent or null. */
int jsondoc_str(const json_t *obj, const char *key, const char **out,
    const char *noun, char *why, size_t whylen);

/* A timestamp member: absent/null -> *set false; a string that is not
 * RFC 3339 as Go's time.Time.UnmarshalJSON reads it (T and Z upper case;
 * a '.' or ',' fraction of any length, cut to nanoseconds) is an
 * unmarshal error. */
int jsondoc_time(const json_t *obj, const char *key, struct timespec *ts,
    bool *set, const char *noun, char *why, size_t whylen);

/* A copy of a string member's value, "" for NULL; NULL/ENOMEM. */
char *jsondoc_strdup(const char *s);

/*
 * One document kind: its noun for messages, the name of its array, how
 * to decode the array into dst (addrs[i]: element i's vf_address,
 * borrowed, possibly invalid) and then validate it.
 */
struct jsondoc_kind {
	const char *noun;
	const char *arrkey;
	int (*decode)(const json_t *arr, void *dst, const char **addrs,
	    char *why, size_t whylen);
	int (*validate)(void *dst, const char **addrs, char *why,
	    size_t whylen);
	const struct jsongo_obj *schema; /* the fields, for Go's rules that
					   the tree cannot check (jsongo.h);
					   NULL: none */
};

/*
 * Parses a versioned document into dst: JSON, the header, every element
 * decoded (type errors first, as in Go), the version, then validation.
 * 0 or -1 with why (errno ENOMEM when an allocation failed); dst may be
 * partly filled on failure.
 */
int jsondoc_parse(const char *text, size_t len, const struct jsondoc_kind *k,
    void *dst, char *why, size_t whylen);

#endif
