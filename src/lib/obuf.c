/*
 * obuf.c - the growing output buffer and its JSON string writer, which
 * escapes exactly as Go's encodeState.string does (SPEC.md 4.1: a file
 * vfsentinel rewrites is the file upstream would write).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obuf.h"
#include "utf8.h"

void
obuf_put(struct obuf *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
obuf_str(struct obuf *b, const char *s)
{
	obuf_put(b, s, strlen(s));
}

void
obuf_indent(struct obuf *b, int depth)
{
	static const char line[] = "\n                                ";

	obuf_put(b, line, 1 + (size_t)depth * 2);
}

/*
 * The escape Go writes for the byte at s, or NULL when it goes raw. *n
 * is the number of bytes the escape stands for (3 for U+2028/U+2029).
 */
static const char *
escape_at(const unsigned char *s, size_t *n, char *esc, size_t len)
{
	/* Pairs of (byte, letter of its short escape). */
	static const char short_esc[] = "\nn\rr\tt\"\"\\\\";
	const char *p = memchr(short_esc, *s, sizeof(short_esc) - 1);

	*n = 1;
	if (s[0] == 0xe2 && s[1] == 0x80 && (s[2] & 0xfe) == 0xa8) {
		*n = 3;
		snprintf(esc, len, "\\u%04x", 0x2000 | (s[2] & 0x3f));
	} else if (p != NULL && (p - short_esc) % 2 == 0) {
		snprintf(esc, len, "\\%c", p[1]);
	} else if (*s < 0x20 || *s == '<' || *s == '>' || *s == '&') {
		snprintf(esc, len, "\\u%04x", *s);
	} else {
		return NULL;
	}
	return esc;
}

/*
 * True when s is ASCII with nothing escape_at() would escape (control
 * bytes, '"', '\\', '<', '>', '&'), as every key, address and time is:
 * then it goes out in one copy, with no UTF-8 check needed. *n: its
 * length.
 */
static bool
plain_ascii(const unsigned char *u, size_t *n)
{
	size_t i;

	for (i = 0; u[i] != '\0'; i++)
		if (u[i] < 0x20 || u[i] >= 0x80 || u[i] == '"' ||
		    u[i] == '\\' || u[i] == '<' || u[i] == '>' || u[i] == '&')
			return false;
	*n = i;
	return true;
}

void
obuf_quote(struct obuf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	const char *run = s, *esc;
	char buf[8];
	size_t n;

	if (plain_ascii(u, &n)) {
		obuf_put(b, "\"", 1);
		obuf_put(b, s, n);
		obuf_put(b, "\"", 1);
		return;
	}
	if (!utf8_valid_str(s))
		b->bad_text = true;
	obuf_put(b, "\"", 1);
	while (*u != '\0') {
		esc = escape_at(u, &n, buf, sizeof(buf));
		if (esc == NULL) {
			u++;
			continue;
		}
		obuf_put(b, run, (size_t)((const char *)u - run));
		obuf_str(b, esc);
		u += n;
		run = (const char *)u;
	}
	obuf_put(b, run, (size_t)((const char *)u - run));
	obuf_put(b, "\"", 1);
}

void
obuf_key(struct obuf *b, int depth, const char *key, bool *first)
{
	if (!*first)
		obuf_put(b, ",", 1);
	*first = false;
	obuf_indent(b, depth);
	obuf_quote(b, key);
	obuf_put(b, ": ", 2);
}

void
obuf_item(struct obuf *b, size_t i, int depth)
{
	if (i > 0)
		obuf_put(b, ",", 1);
	obuf_indent(b, depth);
}

void
obuf_array_end(struct obuf *b, size_t n, int depth)
{
	if (n > 0)
		obuf_indent(b, depth);
	obuf_put(b, "]", 1);
}

void
obuf_doc_begin(struct obuf *b, const char *arrkey)
{
	bool first = true;

	obuf_put(b, "{", 1);
	obuf_key(b, 1, "version", &first);
	obuf_put(b, "1", 1);
	obuf_key(b, 1, arrkey, &first);
	obuf_put(b, "[", 1);
}

char *
obuf_doc_end(struct obuf *b, size_t n, size_t *len)
{
	obuf_array_end(b, n, 1);
	obuf_str(b, "\n}");
	return obuf_finish(b, len);
}

char *
obuf_finish(struct obuf *b, size_t *len)
{
	char *p = b->p;

	if (b->failed || b->bad_text) {
		errno = b->failed ? ENOMEM : EILSEQ;
		obuf_release(b);
		return NULL;
	}
	if (p == NULL && (p = calloc(1, 1)) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	*len = b->len;
	memset(b, 0, sizeof(*b));
	return p;
}

void
obuf_release(struct obuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
