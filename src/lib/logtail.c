/*
 * logtail.c - console-log marker tailing (upstream V2 rules).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "logtail.h"

void
logtail_init(struct logtail *t)
{
	memset(t, 0, sizeof(*t));
	t->last = GUEST_MARKER_NONE;
}

void
logtail_release(struct logtail *t)
{
	free(t->nvrm);
	t->nvrm = NULL;
}

void
logtail_pass_begin(struct logtail *t)
{
	t->last = GUEST_MARKER_NONE;
	free(t->nvrm);
	t->nvrm = NULL;
}

void
logtail_restart(struct logtail *t)
{
	t->offset = 0;
	t->skipping = false;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Undoes the marker escapes of guest_marker_format(): "\\" and "\xNN".
 * Anything else is kept as written. New string, NULL/ENOMEM.
 */
static char *
unescape(const char *s, size_t len)
{
	char *out;
	size_t i, o = 0;
	int hi, lo;

	if ((out = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len && s[i + 1] == '\\') {
			out[o++] = s[++i];
			continue;
		}
		if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' &&
		    (hi = hex_value(s[i + 2])) >= 0 &&
		    (lo = hex_value(s[i + 3])) >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 3;
			continue;
		}
		out[o++] = s[i];
	}
	out[o] = '\0';
	return out;
}

/* Records the marker of one whole line, if it is one. 0 or -1/ENOMEM. */
static int
take_line(struct logtail *t, const char *line, size_t len)
{
	const char *nvrm = NULL;
	size_t nlen = 0;
	enum guest_marker m;
	char *copy = NULL;

	m = guest_marker_match(line, len, &nvrm, &nlen);
	if (m == GUEST_MARKER_NONE)
		return 0;
	if (m == GUEST_MARKER_FAILED && (copy = unescape(nvrm, nlen)) == NULL)
		return -1;
	free(t->nvrm);
	t->nvrm = copy;
	t->last = m;
	return 0;
}

ssize_t
logtail_feed(struct logtail *t, const char *buf, size_t len)
{
	size_t pos = 0, n;
	const char *nl;

	while (pos < len) {
		nl = memchr(buf + pos, '\n', len - pos);
		if (nl == NULL) {
			if (!t->skipping && len - pos <= LOGTAIL_LINE_MAX)
				break;
			/* Over-long: drop it and everything up to its
			 * newline, in this call or a later one. */
			t->skipping = true;
			pos = len;
			break;
		}
		n = (size_t)(nl - (buf + pos));
		if (t->skipping)
			t->skipping = false;
		else if (n <= LOGTAIL_LINE_MAX &&
		    take_line(t, buf + pos, n) == -1)
			return -1;
		pos += n + 1;
	}
	t->offset += pos;
	return (ssize_t)pos;
}
