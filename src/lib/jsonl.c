/*
 * jsonl.c - bounded JSON-lines reading and compact line writing.
 *
 * The buffer holds twice the longest line, so a line is always whole in
 * it once its newline has arrived; a line that outgrows JSONL_MAX is
 * dropped as it streams in (never buffered whole) and reported once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "jsonflat.h"
#include "jsonl.h"

#define JSONL_CAP (2 * JSONL_MAX + 2)

int
jsonl_reader_init(struct jsonl_reader *r, int fd)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->buf = malloc(JSONL_CAP);
	return r->buf == NULL ? -1 : 0;
}

void
jsonl_reader_release(struct jsonl_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* Moves the unconsumed bytes to the front of the buffer. */
static void
compact(struct jsonl_reader *r)
{
	if (r->off == 0)
		return;
	memmove(r->buf, r->buf + r->off, r->len - r->off);
	r->len -= r->off;
	r->off = 0;
}

/* Starts dropping an over-long line: its bytes so far are discarded. */
static void
start_skip(struct jsonl_reader *r)
{
	r->skipping = true;
	r->off = r->len = 0;
}

ssize_t
jsonl_fill(struct jsonl_reader *r)
{
	ssize_t n;

	compact(r);
	if (r->len > JSONL_MAX)
		start_skip(r);
	n = io_read(r->fd, r->buf + r->len, JSONL_CAP - 1 - r->len);
	if (n == 0)
		r->eof = true;
	if (n > 0)
		r->len += (size_t)n;
	return n;
}

/* Hands out buf[off, end) as a line and consumes it and its newline. */
static enum jsonl_status
take(struct jsonl_reader *r, size_t end, size_t next, char **line,
    size_t *len)
{
	size_t n = end - r->off;

	r->lineno++;
	if (n > JSONL_MAX) {
		r->off = next;
		return JSONL_TOO_LONG;
	}
	*line = r->buf + r->off;
	if (n > 0 && (*line)[n - 1] == '\r')
		n--;
	(*line)[n] = '\0';
	*len = n;
	r->off = next;
	return JSONL_LINE;
}

static enum jsonl_status
next_skipping(struct jsonl_reader *r, char *nl)
{
	if (nl != NULL) {
		r->off = (size_t)(nl - r->buf) + 1;
		r->skipping = false;
		r->lineno++;
		return JSONL_TOO_LONG;
	}
	r->off = r->len = 0;
	if (r->eof) {
		r->skipping = false;
		r->lineno++;
		return JSONL_TOO_LONG;
	}
	return JSONL_NEED;
}

enum jsonl_status
jsonl_next(struct jsonl_reader *r, char **line, size_t *len)
{
	char *nl;
	size_t pending = r->len - r->off;

	nl = memchr(r->buf + r->off, '\n', pending);
	if (r->skipping)
		return next_skipping(r, nl);
	if (nl != NULL)
		return take(r, (size_t)(nl - r->buf),
		    (size_t)(nl - r->buf) + 1, line, len);
	if (pending > JSONL_MAX) {
		start_skip(r);
		return r->eof ? next_skipping(r, NULL) : JSONL_NEED;
	}
	if (r->eof) {
		if (pending == 0)
			return JSONL_END;
		compact(r);
		return take(r, r->len, r->len, line, len);
	}
	return JSONL_NEED;
}

/*
 * VFS_JSON_FAST=0 (make JSON_FAST=0; make check-asan builds so) leaves
 * every line to jansson, so that the suite itself, run both ways, shows
 * the fast paths below writing and reading what jansson does.
 */
#ifndef VFS_JSON_FAST
#define VFS_JSON_FAST 1
#endif

/* The common line, a flat object of plain strings, is built by
 * jsonflat_parse(); anything else, errors included, is jansson's. */
json_t *
jsonl_parse(const char *line, size_t len, const char **why)
{
	static char msg[200];
	json_error_t err;
	json_t *obj;

	if (VFS_JSON_FAST && (obj = jsonflat_parse(line, len)) != NULL)
		return obj;
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (obj == NULL) {
		(void)snprintf(msg, sizeof(msg), "invalid JSON: %s", err.text);
		*why = msg;
		return NULL;
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		*why = "not a JSON object";
		return NULL;
	}
	return obj;
}

/*
 * The line is rendered into a buffer and written with one fwrite:
 * json_dumpf() calls fwrite once a token, which was a third of the time
 * of `vfstore apply` (callgrind). A flat line of scalars is rendered by
 * jsonflat_dump(), the same bytes for a third of json_dumpb()'s
 * instructions; a longer one than the stack buffer by jansson.
 */
int
jsonl_put(FILE *f, const json_t *obj)
{
	char stack[4096], *buf = stack;
	size_t n;
	int rc = 0;

	n = VFS_JSON_FAST ? jsonflat_dump(obj, stack, sizeof(stack)) : 0;
	if (n == 0)
		n = json_dumpb(obj, stack, sizeof(stack), JSON_COMPACT);
	if (n > sizeof(stack)) {
		if ((buf = malloc(n)) == NULL)
			return -1;
		n = json_dumpb(obj, buf, n, JSON_COMPACT);
	}
	if (n == 0) {
		errno = errno != 0 ? errno : EIO;
		rc = -1;
	} else if (fwrite(buf, 1, n, f) != n || putc('\n', f) == EOF) {
		rc = -1;
	}
	if (buf != stack)
		free(buf);
	return rc;
}

int
jsonl_write(FILE *f, const json_t *obj)
{
	if (jsonl_put(f, obj) < 0 || fflush(f) == EOF)
		return -1;
	return 0;
}

const char *
jsonl_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

json_t *
jsonl_string_lossy(const char *s, size_t n)
{
	json_t *j;
	char *copy;
	size_t i;

	if ((j = json_stringn(s, n)) != NULL)
		return j;
	if ((copy = malloc(n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		copy[i] = (unsigned char)s[i] < 0x80 && s[i] != '\0' ?
		    s[i] : '?';
	j = json_stringn(copy, n);
	free(copy);
	if (j == NULL)
		errno = ENOMEM;
	return j;
}
