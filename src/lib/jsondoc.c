/*
 * jsondoc.c - the strict, Go-compatible decoding of the store's
 * versioned documents (SPEC.md 4.1): upstream reads them with Go's
 * encoding/json and then validates, so a type mismatch anywhere is an
 * "unmarshal" error that wins over every validation error, JSON null
 * reads as the zero value and unknown keys are ignored; duplicates are
 * found the way upstream's maps find them, at their second position in
 * file order.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonarena.h"
#include "jsondoc.h"
#include "jsongo.h"
#include "timefmt.h"

int
jsondoc_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	errno = EINVAL;
	return -1;
}

static int
dup_cmp(const void *x, const void *y)
{
	const struct jsondoc_dup *a = x, *b = y;
	int c;

	c = strcmp(a->a, b->a);
	if (c == 0 && a->b != NULL)
		c = strcmp(a->b, b->b);
	if (c == 0)
		c = (a->idx > b->idx) - (a->idx < b->idx);
	return c;
}

/* True when keys are strictly ascending: no duplicates, nothing to sort
 * (files vfsentinel or upstream wrote are in address order). */
static bool
keys_ascending(const struct jsondoc_dup *keys, size_t n)
{
	size_t i;
	int c;

	for (i = 1; i < n; i++) {
		c = strcmp(keys[i - 1].a, keys[i].a);
		if (c == 0 && keys[i].b != NULL)
			c = strcmp(keys[i - 1].b, keys[i].b);
		if (c >= 0)
			return false;
	}
	return true;
}

void
jsondoc_mark_dups(struct jsondoc_dup *keys, size_t n, bool *dup)
{
	size_t i;

	if (keys_ascending(keys, n))
		return;
	qsort(keys, n, sizeof(*keys), dup_cmp);
	for (i = 1; i < n; i++) {
		if (strcmp(keys[i].a, keys[i - 1].a) != 0)
			continue;
		if (keys[i].b != NULL && strcmp(keys[i].b, keys[i - 1].b) != 0)
			continue;
		dup[keys[i].idx] = true;
	}
}

const char *
jsondoc_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	default:
		return "number";
	}
}

int
jsondoc_member(const json_t *obj, const char *key, json_type want,
    const char *gotype, const json_t **out, const char *noun, char *why,
    size_t whylen)
{
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_typeof(v) != want &&
	    !(want == JSON_TRUE && json_is_boolean(v)))
		return jsondoc_why(why, whylen, "unmarshal %s: json: cannot "
		    "unmarshal %s into field \"%s\" of type %s", noun,
		    jsondoc_type(v), key, gotype);
	*out = v;
	return 0;
}

int
jsondoc_str(const json_t *obj, const char *key, const char **out,
    const char *noun, char *why, size_t whylen)
{
	const json_t *v;

	if (jsondoc_member(obj, key, JSON_STRING, "string", &v, noun, why,
	    whylen) < 0)
		return -1;
	*out = v != NULL ? json_string_value(v) : NULL;
	return 0;
}

int
jsondoc_time(const json_t *obj, const char *key, struct timespec *ts,
    bool *set, const char *noun, char *why, size_t whylen)
{
	const char *s;

	*set = false;
	memset(ts, 0, sizeof(*ts));
	if (jsondoc_str(obj, key, &s, noun, why, whylen) < 0)
		return -1;
	if (s == NULL)
		return 0;
	if (jsongo_time_parse(s, ts) < 0)
		return jsondoc_why(why, whylen, "unmarshal %s: parsing time "
		    "\"%s\": %s", noun, s, jsongo_time_why(s));
	*set = true;
	return 0;
}

/* Version (Go int; missing or null reads as 0) and the named array. */
static int
doc_header(const json_t *root, const char *arrkey, long long *version,
    const json_t **arr, const char *noun, char *why, size_t whylen)
{
	const json_t *v;

	if (!json_is_object(root))
		return jsondoc_why(why, whylen, "unmarshal %s: json: cannot "
		    "unmarshal %s into a document object", noun,
		    jsondoc_type(root));
	if (jsondoc_member(root, "version", JSON_INTEGER, "int", &v, noun,
	    why, whylen) < 0)
		return -1;
	*version = v != NULL ? json_integer_value(v) : 0;
	return jsondoc_member(root, arrkey, JSON_ARRAY, "array", arr, noun,
	    why, whylen);
}

/* JSON's four whitespace bytes (1) and its structural ones (2). */
static const unsigned char byte_class[256] = {
	[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1,
	['{'] = 2, ['}'] = 2, ['['] = 2, [']'] = 2, [','] = 2, [':'] = 2,
	['"'] = 2,
};

static bool
is_space(char c)
{
	return byte_class[(unsigned char)c] == 1;
}

/* A byte that can continue a bare token (a number, true, a typo). */
static bool
is_word(char c)
{
	return byte_class[(unsigned char)c] == 0;
}

/*
 * Copies text without the whitespace outside strings, which jansson's
 * lexer reads a byte at a time through its stream (a third of a file
 * in upstream's indented layout, and as many instructions as the rest
 * of the lexing). One space stays where two bare tokens would join
 * ("tr ue", "1 2"), so every document parses, or fails with the same
 * message, as it was: jansson and Go have the same four whitespace
 * bytes, and the messages name tokens, never positions.
 */
static char *
compact(const char *text, size_t len, size_t *outlen, bool *escaped)
{
	char *out = malloc(len + 1);
	bool in_str = false;
	size_t i, o = 0;

	if (out == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		char c = text[i];

		if (!in_str && is_space(c)) {
			while (i + 1 < len && is_space(text[i + 1]))
				i++;
			if (o > 0 && i + 1 < len && is_word(out[o - 1]) &&
			    is_word(text[i + 1]))
				out[o++] = ' ';
			continue;
		}
		out[o++] = c;
		if (in_str && c == '\\' && i + 1 < len) {
			out[o++] = text[++i];
			*escaped = true;
		} else if (c == '"') {
			in_str = !in_str;
		}
	}
	out[o] = '\0';			/* for jsongo_scan()'s strcspn */
	*outlen = o;
	return out;
}

/*
 * jansson's reason, and where vfsentinel refuses what upstream reads (Go
 * reads invalid UTF-8 and lone surrogates as U+FFFD, and \u0000 as a
 * NUL), which it is.
 */
static void
parse_why(const json_error_t *err, const char *noun, char *why,
    size_t whylen)
{
	const char *near = strstr(err->text, " near ");

	switch (json_error_code(err)) {
	case json_error_invalid_utf8:
		jsondoc_why(why, whylen, "unmarshal %s: invalid UTF-8 "
		    "(upstream reads U+FFFD): %s", noun, err->text);
		return;
	case json_error_null_character:
	case json_error_null_byte_in_key:
		jsondoc_why(why, whylen, "unmarshal %s: a \\u0000 (NUL) in a "
		    "string (upstream reads it; vfsentinel stores no NUL)%s",
		    noun, near != NULL ? near : "");
		return;
	default:
		break;
	}
	if (strncmp(err->text, "invalid Unicode", 15) == 0)
		jsondoc_why(why, whylen, "unmarshal %s: a lone surrogate in a "
		    "string (upstream reads U+FFFD): %s", noun, err->text);
	else
		jsondoc_why(why, whylen, "unmarshal %s: %s", noun, err->text);
}

/*
 * The tree of the compacted text, loaded refusing repeated keys: where
 * one repeats, loaded again keeping the last (as before) and *dup set.
 */
static json_t *
load_dense(const char *dense, size_t n, bool *dup, json_error_t *err)
{
	json_t *root;

	*dup = false;
	root = json_loadb(dense, n, JSON_REJECT_DUPLICATES, err);
	if (root != NULL ||
	    json_error_code(err) != json_error_duplicate_key)
		return root;
	*dup = true;
	return json_loadb(dense, n, 0, err);
}

/*
 * Parses text; a repeated key or an escape anywhere sends the text
 * through Go's walk too (jsongo_scan()), the only reader that sees what
 * the tree has lost. Keys in another case are refused (jsongo_keys()).
 */
static json_t *
parse_text(const char *text, size_t len, const struct jsondoc_kind *k,
    char *why, size_t whylen)
{
	bool dup, escaped = false;
	json_error_t err;
	json_t *root;
	char *dense;
	size_t n;

	if ((dense = compact(text, len, &n, &escaped)) == NULL) {
		jsondoc_why(why, whylen, "unmarshal %s: out of memory",
		    k->noun);
		errno = ENOMEM;
		return NULL;
	}
	root = load_dense(dense, n, &dup, &err);
	if (root == NULL) {
		parse_why(&err, k->noun, why, whylen);
		if (json_error_code(&err) == json_error_out_of_memory)
			errno = ENOMEM;
	} else if (((dup || escaped) && jsongo_scan(dense, n, k->schema,
	    k->noun, why, whylen) < 0) ||
	    jsongo_keys(root, k->schema, k->noun, why, whylen) < 0) {
		root = NULL;		/* in the arena: dropped with it */
	}
	free(dense);
	return root;
}

static int
version_check(long long version, const json_t *arr, const char *noun,
    const char *arrname, char *why, size_t whylen)
{
	if (version != 1)
		return jsondoc_why(why, whylen, "validate %s: unsupported "
		    "version %lld", noun, version);
	if (arr == NULL)
		return jsondoc_why(why, whylen, "validate %s: expected a %s "
		    "array", noun, arrname);
	return 0;
}

/* The parse and decode; the tree (in the arena) is dropped by the caller. */
static int
doc_parse(const char *text, size_t len, const struct jsondoc_kind *k,
    void *dst, char *why, size_t whylen)
{
	const json_t *arr;
	const char **addrs = NULL;
	json_t *root;
	long long version = 0;
	int rc = -1;

	root = parse_text(text, len, k, why, whylen);
	if (root == NULL)
		return -1;
	if (doc_header(root, k->arrkey, &version, &arr, k->noun, why,
	    whylen) < 0)
		return -1;
	addrs = calloc(json_array_size(arr) + 1, sizeof(*addrs));
	if (addrs == NULL ||
	    k->decode(arr, dst, addrs, why, whylen) < 0 ||
	    version_check(version, arr, k->noun, k->arrkey, why,
	    whylen) < 0 ||
	    k->validate(dst, addrs, why, whylen) < 0)
		goto out;
	rc = 0;
out:
	free(addrs);
	return rc;
}

/*
 * The document lives only inside this call (what it decodes is copied
 * out), so jansson builds it in an arena (jsonarena.h) that is dropped
 * instead of freed value by value: about half of a load's instructions.
 */
int
jsondoc_parse(const char *text, size_t len, const struct jsondoc_kind *k,
    void *dst, char *why, size_t whylen)
{
	struct jsonarena arena;
	int rc, saved;

	if (jsonarena_begin(&arena, len < (1u << 20) ? len * 8 : 0) < 0) {
		jsondoc_why(why, whylen, "unmarshal %s: out of memory",
		    k->noun);
		errno = ENOMEM;
		return -1;
	}
	rc = doc_parse(text, len, k, dst, why, whylen);
	saved = errno;
	jsonarena_end(&arena);
	errno = saved;
	return rc;
}

char *
jsondoc_strdup(const char *s)
{
	return strdup(s != NULL ? s : "");
}
