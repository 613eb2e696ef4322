/*
 * fuzz-jsonl.c - the bounded JSON-lines reader and the line parser.
 *
 * Input: byte 0 picks the size of the writes into a non-blocking pipe
 * that the reader drains; in the rest every byte 0x01 stands for 16384
 * bytes of "a", so four of them make a line of exactly JSONL_MAX and
 * short inputs still reach the over-long paths. Properties:
 * - the reader returns exactly the lines of a plain split at '\n' (one
 *   trailing '\r' removed, a final unterminated line included), and
 *   JSONL_TOO_LONG exactly for lines over JSONL_MAX bytes;
 * - jsonl_parse() returns only objects, and an object dumped compactly
 *   parses back to an equal object.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fuzz.h"
#include "jsonl.h"

#define T "jsonl"

struct expect {
	const char *p;		/* the expanded input */
	size_t len;
	size_t pos;		/* start of the next expected line */
};

/* Checks one reader result against the next line of the plain split. */
static void
check_next(struct expect *e, enum jsonl_status st, const char *line,
    size_t len)
{
	const char *s = e->p + e->pos, *nl;
	size_t n;

	fuzz_require(e->pos < e->len, T, "reader returned an extra line");
	nl = memchr(s, '\n', e->len - e->pos);
	n = nl != NULL ? (size_t)(nl - s) : e->len - e->pos;
	e->pos += n + 1;
	if (n > JSONL_MAX) {
		fuzz_require(st == JSONL_TOO_LONG, T, "long line not dropped");
		return;
	}
	fuzz_require(st == JSONL_LINE, T, "short line dropped");
	if (n > 0 && s[n - 1] == '\r')
		n--;
	fuzz_require(len == n && memcmp(line, s, n) == 0 && line[n] == '\0',
	    T, "line differs from the input");
}

static void
check_parse(const char *line, size_t len)
{
	const char *why = NULL;
	json_t *obj, *back;
	char *text;

	obj = jsonl_parse(line, len, &why);
	if (obj == NULL) {
		fuzz_require(why != NULL, T, "rejection without a reason");
		return;
	}
	fuzz_require(json_is_object(obj), T, "accepted a non-object");
	text = json_dumps(obj, JSON_COMPACT);
	if (text != NULL) {
		back = jsonl_parse(text, strlen(text), &why);
		fuzz_require(back != NULL && json_equal(obj, back), T,
		    "compact dump does not parse back equal");
		json_decref(back);
		free(text);
	}
	json_decref(obj);
}

/* Writes the next piece of the input into the pipe; closes it at the end. */
static void
pump(int *wfd, const char *p, size_t len, size_t *pos, size_t chunk)
{
	size_t n = len - *pos;
	ssize_t w;

	if (*wfd < 0)
		return;
	if (n == 0) {
		close(*wfd);
		*wfd = -1;
		return;
	}
	if (n > chunk)
		n = chunk;
	w = write(*wfd, p + *pos, n);
	if (w > 0)
		*pos += (size_t)w;
	else if (errno != EAGAIN)
		abort();
}

static void
run_reader(const char *p, size_t len, size_t chunk)
{
	struct jsonl_reader r;
	struct expect e = { p, len, 0 };
	enum jsonl_status st;
	size_t pos = 0, n = 0;
	char *line = NULL;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    jsonl_reader_init(&r, fds[0]) < 0)
		abort();
	while ((st = jsonl_next(&r, &line, &n)) != JSONL_END) {
		if (st == JSONL_NEED) {
			pump(&fds[1], p, len, &pos, chunk);
			fuzz_require(jsonl_fill(&r) >= 0 || errno == EAGAIN,
			    T, "fill failed");
			continue;
		}
		check_next(&e, st, line, n);
		if (st == JSONL_LINE)
			check_parse(line, n);
	}
	fuzz_require(e.pos >= e.len, T, "reader ended before the input");
	jsonl_reader_release(&r);
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *p;
	size_t len, chunk;

	if (size < 1)
		return 0;
	p = fuzz_expand(data + 1, size - 1, &len);
	chunk = data[0] < 16 ? (size_t)data[0] + 1 :
	    (size_t)(data[0] - 15) * 277;
	/* At most ~64 writes per input keeps the fuzzer fast. */
	if (chunk < len / 64)
		chunk = len / 64;
	run_reader(p, len, chunk);
	free(p);
	return 0;
}
