/*
 * jsonflat.c - flat objects of plain strings read, flat objects of
 * scalars written, byte for byte as jansson 2.14 does (jsonflat.h).
 *
 * The reader takes only what jansson's lexer would take unchanged (no
 * escape, no control byte, nothing outside ASCII, so no UTF-8 check), and
 * checks duplicates by the object's size. The writer follows dump.c's
 * dump_string() for the flags jsonl_write() passes (JSON_COMPACT alone):
 * '"', '\\' and bytes under 0x20 escaped (\b \f \n \r \t, else \u00XX in
 * capitals), everything else ASCII copied; a byte over 0x7F needs the
 * UTF-8 check and is left to jansson.
 */
#include <stdbool.h>
#include <string.h>

#include "jsonflat.h"

/*
 * Each byte's class: 0 plain (the reader takes it, the writer copies it),
 * 1 DEL (copied, not taken: the reader keeps to printable bytes), 3 for
 * '"', '\\' and control bytes (escaped) and bytes over 0x7F (neither).
 */
#define NOT_PLAIN 1
#define NOT_COPIED 2
static const unsigned char byte_class[256] = {
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
};

/* --- reading ------------------------------------------------------------- */

struct scan {
	const char *p;
	const char *end;
};

static void
skip_ws(struct scan *sc)
{
	while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\t' ||
	    *sc->p == '\n' || *sc->p == '\r'))
		sc->p++;
}

/* Takes c after optional whitespace; false if something else is next. */
static bool
take(struct scan *sc, char c)
{
	skip_ws(sc);
	if (sc->p == sc->end || *sc->p != c)
		return false;
	sc->p++;
	return true;
}

/* Takes a string of plain bytes; *s and *n are its contents. */
static bool
take_plain(struct scan *sc, const char **s, size_t *n)
{
	const char *q;

	if (!take(sc, '"'))
		return false;
	for (q = sc->p; q < sc->end &&
	    (byte_class[(unsigned char)*q] & NOT_PLAIN) == 0; q++)
		continue;
	if (q == sc->end || *q != '"')
		return false;
	*s = sc->p;
	*n = (size_t)(q - sc->p);
	sc->p = q + 1;
	return true;
}

/* Adds one plain "key":"value" member; false if the key was there. */
static bool
take_member(struct scan *sc, json_t *obj)
{
	size_t had = json_object_size(obj), kn, vn;
	const char *k, *v;
	json_t *val;

	if (!take_plain(sc, &k, &kn) || !take(sc, ':') ||
	    !take_plain(sc, &v, &vn))
		return false;
	if ((val = json_stringn_nocheck(v, vn)) == NULL ||
	    json_object_setn_new_nocheck(obj, k, kn, val) < 0)
		return false;
	return json_object_size(obj) == had + 1;
}

json_t *
jsonflat_parse(const char *s, size_t len)
{
	struct scan sc = { s, s + len };
	json_t *obj;
	bool ok = true;

	if (!take(&sc, '{') || (obj = json_object()) == NULL)
		return NULL;
	if (!take(&sc, '}')) {
		do
			ok = take_member(&sc, obj);
		while (ok && take(&sc, ','));
		ok = ok && take(&sc, '}');
	}
	skip_ws(&sc);
	if (ok && sc.p == sc.end)
		return obj;
	json_decref(obj);
	return NULL;
}

/* --- writing ------------------------------------------------------------- */

/* Like dump.c's dump_to_buffer(): what does not fit is only counted. */
struct out {
	char *buf;
	size_t size;
	size_t used;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->used + n <= o->size)
		memcpy(o->buf + o->used, s, n);
	o->used += n;
}

static void
put_escape(struct out *o, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	const char seq[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

	switch (c) {
	case '"':
		put(o, "\\\"", 2);
		break;
	case '\\':
		put(o, "\\\\", 2);
		break;
	case '\b':
		put(o, "\\b", 2);
		break;
	case '\f':
		put(o, "\\f", 2);
		break;
	case '\n':
		put(o, "\\n", 2);
		break;
	case '\r':
		put(o, "\\r", 2);
		break;
	case '\t':
		put(o, "\\t", 2);
		break;
	default:
		put(o, seq, sizeof(seq));
	}
}

/* A quoted string; -1 at a byte over 0x7F (left to jansson). */
static int
put_string(struct out *o, const char *s, size_t n)
{
	const char *run = s, *end = s + n;
	unsigned char c;

	put(o, "\"", 1);
	for (; s < end; s++) {
		c = (unsigned char)*s;
		if ((byte_class[c] & NOT_COPIED) == 0)
			continue;
		if (c >= 0x80)
			return -1;
		put(o, run, (size_t)(s - run));
		put_escape(o, c);
		run = s + 1;
	}
	put(o, run, (size_t)(s - run));
	put(o, "\"", 1);
	return 0;
}

/* What "%" JSON_INTEGER_FORMAT prints. */
static void
put_integer(struct out *o, json_int_t v)
{
	char d[24], *p = d + sizeof(d);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v :
	    (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--p = '-';
	put(o, p, (size_t)(d + sizeof(d) - p));
}

/* A member's value; -1 for a kind left to jansson. */
static int
put_value(struct out *o, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return put_string(o, json_string_value(v),
		    json_string_length(v));
	case JSON_INTEGER:
		put_integer(o, json_integer_value(v));
		return 0;
	case JSON_TRUE:
		put(o, "true", 4);
		return 0;
	case JSON_FALSE:
		put(o, "false", 5);
		return 0;
	case JSON_NULL:
		put(o, "null", 4);
		return 0;
	default:
		return -1;
	}
}

size_t
jsonflat_dump(const json_t *obj, char *buf, size_t size)
{
	struct out o = { buf, size, 0 };
	json_t *j = (json_t *)obj;	/* jansson's iterators take no const */
	void *it;

	if (!json_is_object(obj))
		return 0;
	put(&o, "{", 1);
	for (it = json_object_iter(j); it != NULL;
	    it = json_object_iter_next(j, it)) {
		if (o.used > 1)
			put(&o, ",", 1);
		if (put_string(&o, json_object_iter_key(it),
		    json_object_iter_key_len(it)) < 0)
			return 0;
		put(&o, ":", 1);
		if (put_value(&o, json_object_iter_value(it)) < 0)
			return 0;
	}
	put(&o, "}", 1);
	return o.used;
}
