/*
 * utf8.c - strict UTF-8 validation (RFC 3629), as jansson decodes.
 */
#include <string.h>

#include "utf8.h"

/* The length of the sequence that lead byte c starts, 0 if none. */
static size_t
seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;	/* continuation byte, 0xc0/0xc1 (overlong), > 0xf4 */
}

/* True if the n-byte sequence at p is well formed and in range. */
static bool
seq_valid(const unsigned char *p, size_t n)
{
	unsigned long cp;
	size_t i;

	if (n == 1)
		return p[0] != 0;
	cp = p[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return false;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000))
		return false;			/* overlong */
	return cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
}

bool
utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = seq_len(p[i]);
		if (n == 0 || n > len - i || !seq_valid(p + i, n))
			return false;
		i += n;
	}
	return true;
}

bool
utf8_valid_str(const char *s)
{
	return s == NULL || utf8_valid(s, strlen(s));
}

bool
utf8_printable(const char *s, size_t max)
{
	const unsigned char *p;

	if (strlen(s) >= max || !utf8_valid_str(s))
		return false;
	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}
