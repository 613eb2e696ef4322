/*
 * jsonl.h - bounded JSON-lines reading and compact line writing.
 *
 * The reader owns a fixed buffer of JSONL_MAX bytes per stream: a line
 * longer than that is never buffered whole, it is skipped up to its newline
 * and reported once as JSONL_TOO_LONG. It works on blocking and
 * non-blocking descriptors alike (jsonl_fill() reads once).
 */
#ifndef VFS_JSONL_H
#define VFS_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#define JSONL_MAX 65536		/* longest accepted line, newline excluded */

struct jsonl_reader {
	int fd;
	char *buf;		/* owned, JSONL_MAX + 1 bytes */
	size_t len;		/* bytes buffered */
	size_t off;		/* start of the unconsumed part */
	bool skipping;		/* inside an over-long line */
	bool eof;		/* read returned 0 */
	unsigned long lineno;	/* lines returned or rejected so far */
};

enum jsonl_status {
	JSONL_LINE,		/* a whole line is available */
	JSONL_TOO_LONG,		/* a line over JSONL_MAX was dropped */
	JSONL_NEED,		/* no whole line buffered: call jsonl_fill() */
	JSONL_END		/* end of input and nothing left */
};

int jsonl_reader_init(struct jsonl_reader *r, int fd);
void jsonl_reader_release(struct jsonl_reader *r);

/* Reads once from r->fd. Returns bytes read, 0 at EOF, -1/errno (EAGAIN
 * on an empty non-blocking descriptor). */
ssize_t jsonl_fill(struct jsonl_reader *r);

/*
 * Takes the next line out of the buffer. On JSONL_LINE *line points into
 * the reader's buffer (borrowed until the next call), NUL-terminated,
 * without the newline or a trailing '\r', and *len is its length. At EOF a
 * final line without a newline is still returned.
 */
enum jsonl_status jsonl_next(struct jsonl_reader *r, char **line, size_t *len);

/*
 * Parses one line that must hold one JSON object. Returns a new reference,
 * or NULL with *why pointing to a static or thread-unsafe buffer describing
 * the problem ("invalid JSON: ...", "not an object"). Duplicate keys are
 * rejected.
 */
json_t *jsonl_parse(const char *line, size_t len, const char **why);

/* Writes obj compactly plus '\n' and flushes. 0 or -1/errno. */
int jsonl_write(FILE *f, const json_t *obj);

/* The same without the flush (a batch of lines, flushed by the caller). */
int jsonl_put(FILE *f, const json_t *obj);

/*
 * A JSON string of the n bytes at s; when they are not valid UTF-8 each
 * byte outside ASCII, and each NUL, becomes '?' (a recording, a console
 * log or a guest owes us no encoding). New reference, or NULL/ENOMEM.
 */
json_t *jsonl_string_lossy(const char *s, size_t n);

/* Reads the string member key of obj: borrowed, NULL if absent or not a
 * string. */
const char *jsonl_str(const json_t *obj, const char *key);

#endif
