/*
 * obuf.h - a growing output buffer for the text the library writes: the
 * store's JSON documents in the layout of Go's json.MarshalIndent (and
 * jq --indent 2) and the Prometheus exposition text.
 *
 * The writers never check a return value: a failed allocation latches
 * b->failed, a string that is not valid UTF-8 latches b->bad_text, and
 * obuf_finish() reports either at the end. The caller owns b and frees
 * what obuf_finish() returns (or calls obuf_release() instead).
 */
#ifndef VFS_OBUF_H
#define VFS_OBUF_H

#include <stdbool.h>
#include <stddef.h>

struct obuf {
	char *p;			/* owned; NUL-terminated */
	size_t len;
	size_t cap;
	bool failed;			/* out of memory */
	bool bad_text;			/* a string the loader would refuse */
};

/* Appends n bytes of s / the string s. */
void obuf_put(struct obuf *b, const char *s, size_t n);
void obuf_str(struct obuf *b, const char *s);

/* A newline and depth levels of two-space indent. */
void obuf_indent(struct obuf *b, int depth);

/*
 * s as a JSON string the way Go's encoding/json writes it (HTML escaping
 * on, Go 1.19): \" \\ \n \r \t, every other byte below 0x20 as \u00XX,
 * <, > and & as \u003c \u003e \u0026, U+2028 and U+2029 as \u2028 and
 * \u2029; DEL and all other UTF-8 raw. Invalid UTF-8 (which Go would
 * write as \ufffd) sets b->bad_text: the loader refuses it.
 */
void obuf_quote(struct obuf *b, const char *s);

/* An object member's start: ",\n" (not for the first), indent, "key": */
void obuf_key(struct obuf *b, int depth, const char *key, bool *first);

/* Starts item i of an array at depth: ",\n" (not for the first), indent. */
void obuf_item(struct obuf *b, size_t i, int depth);

/* Closes an array of n items whose "[" is at depth ("[]" when empty). */
void obuf_array_end(struct obuf *b, size_t n, int depth);

/*
 * A store document, {"version": 1, "KEY": [...]}: obuf_doc_begin() writes
 * it up to the "[" of KEY's array, the caller the n items (obuf_item() at
 * depth 2), obuf_doc_end() the rest, then returns obuf_finish().
 */
void obuf_doc_begin(struct obuf *b, const char *arrkey);
char *obuf_doc_end(struct obuf *b, size_t n, size_t *len);

/*
 * The text (*len bytes, NUL-terminated) for the caller to free, or NULL
 * with errno ENOMEM (b->failed) or EILSEQ (b->bad_text); the buffer is
 * freed then.
 */
char *obuf_finish(struct obuf *b, size_t *len);

/* Frees the buffer; b is empty again. */
void obuf_release(struct obuf *b);

#endif
