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
 *   parses back to an equal object;
 * - the fast paths (jsonflat.c) agree with jansson: a line the fast
 *   reader takes, json_loadb() takes as the same object, members in the
 *   same order; an object the fast writer renders, json_dumpb() renders
 *   as the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fuzz.h"
#include "jsonflat.h"
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

/* The fast writer against json_dumpb(), byte for byte. */
static void
check_fast_dump(const json_t *obj)
{
	size_t m = json_dumpb(obj, NULL, 0, JSON_COMPACT), n;
	char *a = malloc(m + 1), *b = malloc(m + 1);

	if (a == NULL || b == NULL)
		abort();
	n = jsonflat_dump(obj, a, m + 1);
	fuzz_require(n == 0 || (n == m && json_dumpb(obj, b, m + 1,
	    JSON_COMPACT) == m && memcmp(a, b, m) == 0), T,
	    "fast writer differs from jansson");
	free(a);
	free(b);
}

/* The fast reader against json_loadb(): same object, same order. */
static void
check_fast_parse(const char *line, size_t len)
{
	json_t *flat = jsonflat_parse(line, len), *ref;
	char *a, *b;

	if (flat == NULL)
		return;
	ref = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	fuzz_require(ref != NULL && json_equal(flat, ref), T,
	    "fast reader took what jansson refuses or reads otherwise");
	a = json_dumps(flat, JSON_COMPACT);
	b = json_dumps(ref, JSON_COMPACT);
	fuzz_require(a == NULL || b == NULL || strcmp(a, b) == 0, T,
	    "fast reader's members in another order");
	free(a);
	free(b);
	json_decref(flat);
	json_decref(ref);
}

static void
check_parse(const char *line, size_t len)
{
	const char *why = NULL;
	json_t *obj, *back;
	char *text;

	check_fast_parse(line, len);
	obj = jsonl_parse(line, len, &why);
	if (obj == NULL) {
		fuzz_require(why != NULL, T, "rejection without a reason");
		return;
	}
	fuzz_require(json_is_object(obj), T, "accepted a non-object");
	check_fast_dump(obj);
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
