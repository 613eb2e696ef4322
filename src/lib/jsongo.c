/*
 * jsongo.c - Go's encoding/json over a store's raw text, where jansson's
 * tree cannot tell (jsongo.h): repeated keys, escapes in timestamps, and
 * keys in another case. The text has passed jansson's parser, so the
 * walk below can trust its syntax and only follows the schema.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsongo.h"
#include "timefmt.h"

/* The length of "2026-08-20T15:00:31", where a fraction may follow. */
#define SECONDS_END 19
#define KEY_MAX 64		/* a field's key, folded: 14 x 3 bytes */

/* jsondoc_why()'s twin (this module is under jsondoc): formats why and
 * returns -1 with errno EINVAL. */
__attribute__((format(printf, 3, 4)))
static int
go_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	errno = EINVAL;
	return -1;
}

/* --- keys ------------------------------------------------------------- */

/* One folded byte or sequence of a key at *p: the ASCII letter in lower
 * case; U+017F (long s) as 's', U+212A (Kelvin) as 'k', as Go's
 * equalFoldRight; any other byte as itself. */
static char
fold_next(const char **p)
{
	const unsigned char *u = (const unsigned char *)*p;

	if (u[0] == 0xc5 && u[1] == 0xbf) {
		*p += 2;
		return 's';
	}
	if (u[0] == 0xe2 && u[1] == 0x84 && u[2] == 0xaa) {
		*p += 3;
		return 'k';
	}
	(*p)++;
	return u[0] >= 'A' && u[0] <= 'Z' ? (char)(u[0] - 'A' + 'a') :
	    (char)u[0];
}

/* True when key is known in another case (never when it is known). */
static bool
fold_equal(const char *key, const char *known)
{
	const char *p = key;

	if (strcmp(key, known) == 0)
		return false;
	while (*p != '\0' && *known != '\0')
		if (fold_next(&p) != *known++)
			return false;
	return *p == '\0' && *known == '\0';
}

/* The field of o named key exactly, or NULL; *other is a field key is
 * in another case (NULL when none). */
static const struct jsongo_field *
field_find(const struct jsongo_obj *o, const char *key,
    const struct jsongo_field **other)
{
	size_t i;

	*other = NULL;
	for (i = 0; i < o->n; i++)
		if (strcmp(key, o->fields[i].key) == 0)
			return &o->fields[i];
	for (i = 0; i < o->n && *other == NULL; i++)
		if (fold_equal(key, o->fields[i].key))
			*other = &o->fields[i];
	return NULL;
}

static int
case_why(const char *key, const char *known, const char *noun, char *why,
    size_t whylen)
{
	return go_why(why, whylen, "unmarshal %s: key \"%.64s\" is "
	    "\"%s\" in another case (upstream folds the case of keys; "
	    "vfsentinel reads exact keys only)", noun, key, known);
}

static int keys_obj(const json_t *obj, const struct jsongo_obj *o,
    const char *noun, char *why, size_t whylen);

static int
keys_array(const json_t *arr, const struct jsongo_obj *o, const char *noun,
    char *why, size_t whylen)
{
	size_t i;

	for (i = 0; i < json_array_size(arr); i++)
		if (json_is_object(json_array_get(arr, i)) &&
		    keys_obj(json_array_get(arr, i), o, noun, why, whylen) < 0)
			return -1;
	return 0;
}

static int
keys_obj(const json_t *obj, const struct jsongo_obj *o, const char *noun,
    char *why, size_t whylen)
{
	const struct jsongo_field *f, *other;
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		f = field_find(o, key, &other);
		if (other != NULL)
			return case_why(key, other->key, noun, why, whylen);
		if (f != NULL && f->type == JSONGO_ARRAY && json_is_array(v) &&
		    keys_array(v, f->elem, noun, why, whylen) < 0)
			return -1;
	}
	return 0;
}

int
jsongo_keys(const json_t *root, const struct jsongo_obj *schema,
    const char *noun, char *why, size_t whylen)
{
	if (schema == NULL || !json_is_object(root))
		return 0;
	return keys_obj(root, schema, noun, why, whylen);
}

/* --- timestamps ------------------------------------------------------- */

int
jsongo_time_parse(const char *s, struct timespec *ts)
{
	char buf[64];
	size_t n;

	if (strpbrk(s, "tz") != NULL)
		return -1;
	if (strlen(s) <= SECONDS_END || (s[SECONDS_END] != '.' &&
	    s[SECONDS_END] != ','))
		return timefmt_parse(s, ts);
	n = strspn(s + SECONDS_END + 1, "0123456789");
	if (snprintf(buf, sizeof(buf), "%.*s.%.*s%s", SECONDS_END, s,
	    (int)(n < 9 ? n : 9), s + SECONDS_END + 1,
	    s + SECONDS_END + 1 + n) >= (int)sizeof(buf))
		return -1;
	return timefmt_parse(buf, ts);
}

static bool
digits(const char *s, size_t n)
{
	return strspn(s, "0123456789") >= n;
}

const char *
jsongo_time_why(const char *s)
{
	size_t n = strlen(s);
	const char *z;

	if (n > 12 && digits(s, 4) && s[4] == '-' && s[7] == '-' &&
	    s[10] == 'T' && digits(s + 11, 1) && s[12] == ':')
		return "the hour has one digit (upstream reads it; "
		    "vfsentinel wants two)";
	z = n >= 6 ? s + n - 6 : NULL;
	if (z != NULL && n > SECONDS_END && (z[0] == '+' || z[0] == '-') &&
	    digits(z + 1, 2) && z[3] == ':' && digits(z + 4, 2) &&
	    ((z[1] - '0') * 10 + z[2] - '0' > 23 || z[4] > '5'))
		return "offset out of range (upstream reads it; vfsentinel "
		    "wants -23:59 to +23:59)";
	return "not an RFC 3339 timestamp";
}

/* --- the walk of the raw text ----------------------------------------- */

struct scan {
	const char *p;
	const char *end;
	const char *noun;
	char *why;
	size_t whylen;
	bool kept;			/* an error is kept in why */
};

/* The Go name of the value at sc->p, as jsondoc_type(). */
static const char *
raw_type(const char *p)
{
	switch (*p) {
	case '{': return "object";
	case '[': return "array";
	case '"': return "string";
	case 't': case 'f': return "bool";
	case 'n': return "null";
	default: return "number";
	}
}

/* Keeps the first error (Go's saveError) and goes on: "unmarshal NOUN:
 * json: cannot unmarshal TYPE into WHAT", or with what NULL, key's
 * repeat (why NULL) or case (other, its field). */
static void
keep(struct scan *sc, const char *msg)
{
	if (sc->kept)
		return;
	go_why(sc->why, sc->whylen, "unmarshal %s: %s", sc->noun, msg);
	sc->kept = true;
}

/* "json: cannot unmarshal TYPE into field "KEY" of type GOTYPE", the
 * wording of jsondoc_member(), or into a NAME object (key NULL). */
static void
keep_type(struct scan *sc, const char *key, const char *gotype)
{
	char msg[256];

	if (key != NULL)
		(void)snprintf(msg, sizeof(msg), "json: cannot unmarshal %s "
		    "into field \"%s\" of type %s", raw_type(sc->p), key,
		    gotype);
	else
		(void)snprintf(msg, sizeof(msg), "json: cannot unmarshal %s "
		    "into a %s object", raw_type(sc->p), gotype);
	keep(sc, msg);
}

/* Past the string at sc->p ('"'); its raw bytes [*s, *s + *n). */
static void
skip_string(struct scan *sc, const char **s, size_t *n)
{
	const char *p = sc->p + 1;

	while (p < sc->end && *p != '"')
		p += *p == '\\' ? 2 : 1;
	*s = sc->p + 1;
	*n = (size_t)(p - *s);
	sc->p = p < sc->end ? p + 1 : p;
}

/* Past any value at sc->p. */
static void
skip_value(struct scan *sc)
{
	const char *s;
	size_t n, depth = 0;

	do {
		if (*sc->p == '"') {
			skip_string(sc, &s, &n);
			continue;
		}
		if (*sc->p == '{' || *sc->p == '[')
			depth++;
		else if (*sc->p == '}' || *sc->p == ']')
			depth--;
		else if (depth == 0) {
			sc->p += strcspn(sc->p, ",]}");
			return;
		}
		sc->p++;
	} while (depth > 0 && sc->p < sc->end);
}


static int
hex4(const char *s)
{
	int v = 0, i;

	for (i = 0; i < 4; i++)
		v = v * 16 + (s[i] <= '9' ? s[i] - '0' : (s[i] | 0x20) - 'a' +
		    10);
	return v;
}

/* Appends code point c as UTF-8 at *o (room checked by the caller). */
static void
put_utf8(char **o, long c)
{
	unsigned char *u = (unsigned char *)*o;

	if (c < 0x80) {
		*u++ = (unsigned char)c;
	} else if (c < 0x800) {
		*u++ = (unsigned char)(0xc0 | c >> 6);
		*u++ = (unsigned char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		*u++ = (unsigned char)(0xe0 | c >> 12);
		*u++ = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		*u++ = (unsigned char)(0x80 | (c & 0x3f));
	} else {
		*u++ = (unsigned char)(0xf0 | c >> 18);
		*u++ = (unsigned char)(0x80 | (c >> 12 & 0x3f));
		*u++ = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		*u++ = (unsigned char)(0x80 | (c & 0x3f));
	}
	*o = (char *)u;
}

/* The escape at s (after its backslash) into *o; its length after the
 * backslash. jansson has checked it (no lone surrogate, no \u0000). */
static size_t
unescape(const char *s, char **o)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = strchr(from, *s);
	long c;

	if (*s != 'u') {
		*(*o)++ = e != NULL ? to[e - from] : *s;
		return 1;
	}
	c = hex4(s + 1);
	if (c >= 0xd800 && c < 0xdc00 && s[5] == '\\' && s[6] == 'u') {
		put_utf8(o, 0x10000 + ((c - 0xd800) << 10) +
		    (hex4(s + 7) - 0xdc00));
		return 11;
	}
	put_utf8(o, c);
	return 5;
}

/* The key s (n raw bytes) decoded into buf; false when longer than any
 * field's key can be (it is then no field's). */
static bool
key_decode(const char *s, size_t n, char *buf, size_t size)
{
	const char *end = s + n;
	char *o = buf;

	while (s < end) {
		if ((size_t)(o - buf) + 5 >= size)
			return false;
		if (*s == '\\')
			s += 1 + unescape(s + 1, &o);
		else
			*o++ = *s++;
	}
	*o = '\0';
	return true;
}

/* A time: null, or a string Go parses. -1 at once: Go returns the error
 * of time.Time's UnmarshalJSON as it comes. */
static int
scan_time(struct scan *sc, const char *key)
{
	struct timespec ts;
	char buf[64];
	const char *s;
	size_t n;

	if (*sc->p != '"') {
		if (*sc->p != 'n')
			keep_type(sc, key, "string");
		skip_value(sc);
		return 0;
	}
	skip_string(sc, &s, &n);
	if (memchr(s, '\\', n) != NULL)
		return go_why(sc->why, sc->whylen, "unmarshal %s: "
		    "parsing time \"%.*s\": a JSON escape in a timestamp "
		    "(upstream parses the raw bytes)", sc->noun,
		    (int)(n < 128 ? n : 128), s);
	(void)snprintf(buf, sizeof(buf), "%.*s", (int)n, s);
	if (n >= sizeof(buf) || jsongo_time_parse(buf, &ts) < 0)
		return go_why(sc->why, sc->whylen, "unmarshal %s: "
		    "parsing time \"%s\": %s", sc->noun, buf,
		    jsongo_time_why(buf));
	return 0;
}

static int scan_object(struct scan *sc, const struct jsongo_obj *o);

static int
scan_array(struct scan *sc, const struct jsongo_obj *o)
{
	if (*++sc->p == ']') {
		sc->p++;
		return 0;
	}
	for (;;) {
		if (*sc->p == '{') {
			if (scan_object(sc, o) < 0)
				return -1;
		} else {
			if (*sc->p != 'n')
				keep_type(sc, NULL, o->name);
			skip_value(sc);
		}
		if (sc->p >= sc->end || *sc->p++ != ',')
			return 0;
	}
}

/* The value of field f. */
static int
scan_value(struct scan *sc, const struct jsongo_field *f)
{
	size_t n = strcspn(sc->p, ",]}");
	char c = *sc->p;

	switch (f->type) {
	case JSONGO_TIME:
	case JSONGO_TIME_PTR:
		return scan_time(sc, f->key);
	case JSONGO_ARRAY:
		if (c == '[')
			return scan_array(sc, f->elem);
		if (c != 'n')
			keep_type(sc, f->key, "array");
		break;
	case JSONGO_STRING:
		if (c != '"' && c != 'n')
			keep_type(sc, f->key, "string");
		break;
	case JSONGO_INT:
		if (c != 'n' && (strchr("-0123456789", c) == NULL ||
		    strcspn(sc->p, ".eE") < n))
			keep_type(sc, f->key, "int");
		break;
	}
	skip_value(sc);
	return 0;
}

/* What a repeated key's earlier values were. */
struct seen {
	bool any;			/* the key was there */
	bool value;			/* with a value other than null */
	bool items;			/* with a non-empty array */
};

/* A key given again: refused where Go would not simply take the last
 * value (it merges an array into the elements there, and keeps a
 * string, an int or a time.Time when null follows). */
static void
repeat(struct scan *sc, const struct jsongo_field *f, const struct seen *was)
{
	const char *key = f->key;

	char msg[256];

	if (!was->any || sc->kept)
		return;
	if (was->items)
		(void)snprintf(msg, sizeof(msg), "key \"%s\" repeats after a "
		    "non-empty array (upstream merges the two; vfsentinel "
		    "refuses)", key);
	else if (*sc->p == 'n' && was->value && f->type != JSONGO_ARRAY &&
	    f->type != JSONGO_TIME_PTR)
		(void)snprintf(msg, sizeof(msg), "key \"%s\" repeats as null "
		    "after a value (upstream keeps the value; vfsentinel "
		    "refuses)", key);
	else
		return;
	keep(sc, msg);
}

/* One member at sc->p (its key's '"'). */
static int
scan_member(struct scan *sc, const struct jsongo_obj *o, struct seen *seen)
{
	const struct jsongo_field *f, *other = NULL;
	char key[KEY_MAX], msg[256];
	const char *s;
	size_t n;

	skip_string(sc, &s, &n);
	sc->p++;			/* ':' */
	f = key_decode(s, n, key, sizeof(key)) ?
	    field_find(o, key, &other) : NULL;
	if (other != NULL) {
		(void)snprintf(msg, sizeof(msg), "key \"%s\" is \"%s\" in "
		    "another case (upstream folds the case of keys; "
		    "vfsentinel reads exact keys only)", key, other->key);
		keep(sc, msg);
	}
	if (f == NULL) {
		skip_value(sc);
		return 0;
	}
	seen += f - o->fields;
	repeat(sc, f, seen);
	seen->any = true;
	seen->value |= *sc->p != 'n';
	seen->items |= *sc->p == '[' && sc->p[1] != ']';
	return scan_value(sc, f);
}

static int
scan_object(struct scan *sc, const struct jsongo_obj *o)
{
	struct seen seen[16] = { { 0 } };

	if (o->n > sizeof(seen) / sizeof(seen[0]))
		return 0;
	if (*++sc->p == '}') {
		sc->p++;
		return 0;
	}
	for (;;) {
		if (scan_member(sc, o, seen) < 0)
			return -1;
		if (sc->p >= sc->end || *sc->p++ != ',')
			return 0;
	}
}

int
jsongo_scan(const char *text, size_t len, const struct jsongo_obj *schema,
    const char *noun, char *why, size_t whylen)
{
	struct scan sc = { .p = text, .end = text + len, .noun = noun,
	    .why = why, .whylen = whylen };

	if (schema == NULL || len == 0 || *text != '{')
		return 0;
	if (scan_object(&sc, schema) < 0)
		return -1;
	if (!sc.kept)
		return 0;
	errno = EINVAL;
	return -1;
}
