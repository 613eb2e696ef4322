/*
 * logtail.c - unit tests (TAP) for the console-log tail state machine
 * (upstream tests 69-72), and the per-instance tails that read the logs
 * (assignments, sweep, appends, rotation, truncation, errors).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sentinel-poll/logtail.h"
#include "tap.h"

#define FAILED_LINE "2026/08/20 15:00:31 [guest-agent] " \
	"HYPEMAN-GPU-INIT-FAILED ts=2026-08-20T15:00:31.5Z " \
	"nvrm=\"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)\""
#define OK_LINE "2026/08/20 15:01:00 [guest-agent] " \
	"HYPEMAN-GPU-INIT-OK ts=2026-08-20T15:01:00Z"
#define NVRM "NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"

/* Feeds s whole (as one read) and returns bytes consumed. */
static ssize_t
feed(struct logtail *t, const char *s)
{
	return logtail_feed(t, s, strlen(s));
}

static void
test_whole_lines(void)
{
	struct logtail t;

	logtail_init(&t);
	ok(feed(&t, "boot\n" FAILED_LINE "\n") == 5 + (ssize_t)
	    strlen(FAILED_LINE) + 1 && t.last == GUEST_MARKER_FAILED,
	    "a whole marker line counts");
	is_str(t.nvrm, NVRM, "the nvrm payload is kept");
	logtail_pass_begin(&t);
	ok(t.last == GUEST_MARKER_NONE && t.nvrm == NULL,
	    "a new pass forgets the last marker");
	ok(feed(&t, FAILED_LINE "\r\n") > 0 && t.last == GUEST_MARKER_FAILED,
	    "a CRLF line counts");
	logtail_release(&t);
}

static void
test_partial_line(void)
{
	struct logtail t;
	const char *m = FAILED_LINE;

	logtail_init(&t);
	ok(feed(&t, m) == 0 && t.last == GUEST_MARKER_NONE && t.offset == 0,
	    "a partial last line waits");
	ok(feed(&t, FAILED_LINE "\n") > 0 && t.last == GUEST_MARKER_FAILED,
	    "the completed line counts");
	logtail_release(&t);
}

static void
test_not_markers(void)
{
	static const char *const lines[] = {
		"[   27.031415] NVRM: GPU 0000:e3:00.4: RmInitAdapter failed! "
		    "(0x22:0x65:884)\n",
		"# dmesg | grep -c HYPEMAN-GPU-INIT-FAILED\n",
		"2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-FAILED "
		    "ts=2026-08-20T15:00:31Z nvrm=\"NVRM: GPU 0000:00:03.0: "
		    "RmInit\n",
		"2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-FAILED "
		    "ts=2026-08-20T15:00:31Z nvrm=\"oops RmInitAdapter "
		    "failed!\"\n",
		"2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-READY "
		    "ts=2026-08-20T15:00:31Z\n",
		"echo '" FAILED_LINE "'\n",
		OK_LINE " trailing\n",
	};
	struct logtail t;
	size_t i;

	logtail_init(&t);
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		ok(feed(&t, lines[i]) == (ssize_t)strlen(lines[i]) &&
		    t.last == GUEST_MARKER_NONE, "not a marker: line %zu", i);
	logtail_release(&t);
}

static void
test_last_wins(void)
{
	struct logtail t;

	logtail_init(&t);
	feed(&t, FAILED_LINE "\n" OK_LINE "\n");
	ok(t.last == GUEST_MARKER_OK && t.nvrm == NULL,
	    "FAILED then OK: OK wins");
	feed(&t, FAILED_LINE "\n");
	ok(t.last == GUEST_MARKER_FAILED, "a later FAILED wins again");
	logtail_release(&t);
}

static void
test_split_marker(void)
{
	struct logtail t;
	char *half = strndup(FAILED_LINE, 60);
	char buf[1024];

	logtail_init(&t);
	snprintf(buf, sizeof(buf), "%s\n[ 31.2] kernel says hi\n%s\n",
	    half, &FAILED_LINE[60]);
	feed(&t, buf);
	ok(t.last == GUEST_MARKER_NONE,
	    "a marker split by an interleaved line does not count");
	feed(&t, FAILED_LINE "\n");
	ok(t.last == GUEST_MARKER_FAILED, "the next intact repeat counts");
	free(half);
	logtail_release(&t);
}

/* Feeds len bytes of 'x' in chunks the way a caller would. */
static void
feed_junk(struct logtail *t, size_t len)
{
	char *big = malloc(len);

	memset(big, 'x', len);
	ok(logtail_feed(t, big, len) == (ssize_t)len && t->skipping,
	    "a %zu-byte unterminated line is consumed and skipped", len);
	free(big);
}

static void
test_oversized(void)
{
	struct logtail t;
	ssize_t n;

	logtail_init(&t);
	feed_junk(&t, LOGTAIL_LINE_MAX + 1);
	n = feed(&t, "tail " FAILED_LINE "\n");
	ok(n > 0 && !t.skipping && t.last == GUEST_MARKER_NONE,
	    "the tail of an over-long line is discarded across feeds");
	feed(&t, FAILED_LINE "\n");
	ok(t.last == GUEST_MARKER_FAILED, "the next whole line counts");
	logtail_pass_begin(&t);
	feed_junk(&t, LOGTAIL_LINE_MAX + 1);
	logtail_restart(&t);
	ok(!t.skipping && t.offset == 0, "a restart resets the skip state");
	ok(feed(&t, FAILED_LINE "\n") > 0 && t.last == GUEST_MARKER_FAILED,
	    "after a restart markers count again");
	logtail_release(&t);
}

static void
test_exact_limit(void)
{
	struct logtail t;
	char *line = malloc(LOGTAIL_LINE_MAX + 1);

	logtail_init(&t);
	memset(line, 'y', LOGTAIL_LINE_MAX);
	ok(logtail_feed(&t, line, LOGTAIL_LINE_MAX) == 0,
	    "a line of exactly the limit still waits for its newline");
	line[LOGTAIL_LINE_MAX] = '\n';
	ok(logtail_feed(&t, line, LOGTAIL_LINE_MAX + 1) ==
	    LOGTAIL_LINE_MAX + 1 && !t.skipping,
	    "and is consumed whole once complete");
	ok(t.offset == LOGTAIL_LINE_MAX + 1, "offset counts consumed bytes");
	free(line);
	logtail_release(&t);
}

static void
test_escapes(void)
{
	struct logtail t;

	logtail_init(&t);
	feed(&t, "2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-FAILED "
	    "ts=x nvrm=\"NVRM: a\\\\b\\x09c RmInitAdapter failed!\"\n");
	is_str(t.nvrm, "NVRM: a\\b\tc RmInitAdapter failed!",
	    "marker escapes are undone");
	logtail_release(&t);
}

static int nopen, nread, nirregular, last_err;
static char last_path[PATH_MAX * 2];

static void
report(void *arg, const char *path, enum logtail_error what, int err)
{
	(void)arg;
	if (what == LOGTAIL_OPEN)
		nopen++;
	else if (what == LOGTAIL_READ)
		nread++;
	else
		nirregular++;
	last_err = err;
	snprintf(last_path, sizeof(last_path), "%s", path);
}

static void
append(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);

	fputs(text, f);
	fclose(f);
}

static void
test_tails_get(void)
{
	struct logtails ts;
	struct logtail_file *a, *b;

	ok(logtails_init(&ts) == 0 && ts.buf != NULL && ts.n == 0,
	    "logtails_init: an empty set with its window");
	a = logtails_get(&ts, "i-1", "0000:e3:00.4", "t1");
	ok(a != NULL && ts.n == 1 && a->seen && a->lt.offset == 0,
	    "a new instance gets a new tail, seen");
	a->lt.offset = 42;
	a->seen = false;
	b = logtails_get(&ts, "i-1", "0000:e3:00.4", "t1");
	ok(b == a && b->lt.offset == 42 && b->seen,
	    "the same assignment keeps its tail and position");
	b = logtails_get(&ts, "i-1", "0000:e3:00.5", "t2");
	ok(b != NULL && ts.n == 1 && b->lt.offset == 0 &&
	    strcmp(b->vf, "0000:e3:00.5") == 0,
	    "another assignment of the instance restarts its tail");
	ok(logtails_get(&ts, "i-2", "0000:e3:00.6", "t3") != NULL &&
	    ts.n == 2, "a second instance");
	logtails_sweep(&ts);
	ok(ts.n == 2 && !ts.v[0].seen && !ts.v[1].seen,
	    "a sweep keeps the tails got since the last one");
	ok(logtails_get(&ts, "i-2", "0000:e3:00.6", "t3") != NULL,
	    "one is got again");
	logtails_sweep(&ts);
	ok(ts.n == 1 && strcmp(ts.v[0].instance_id, "i-2") == 0,
	    "the next sweep drops the other");
	logtails_release(&ts);
	ok(ts.n == 0 && ts.v == NULL && ts.buf == NULL,
	    "logtails_release empties the set");
}

static void
test_tails_pass(void)
{
	struct logtail_io io = { .max = 4194304, .report = report };
	struct logtail_io quiet = { .max = 4194304 };
	struct logtails ts;
	struct logtail_file *f;
	char dir[PATH_MAX], path[PATH_MAX * 2], old[PATH_MAX * 2];

	tap_tmpdir(dir, sizeof(dir), "logtail");
	ok(logtails_init(&ts) == 0, "a log dir");
	snprintf(path, sizeof(path), "%s/console.log", dir);
	snprintf(old, sizeof(old), "%s/console.log.1", dir);
	f = logtails_get(&ts, "i-1", "0000:e3:00.4", "t1");
	ok(logtails_pass(&ts, f, path, &io) == 0 && nopen == 1 &&
	    last_err == ENOENT && strcmp(last_path, path) == 0 &&
	    f->lt.last == GUEST_MARKER_NONE,
	    "a missing log: reported as not opened, no marker");
	append(path, "w", "boot\n" FAILED_LINE "\nhalf");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_FAILED && f->lt.offset == 5 +
	    strlen(FAILED_LINE) + 1, "a marker is found; a partial line waits");
	is_str(f->lt.nvrm, NVRM, "with its message");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_NONE && f->lt.nvrm == NULL,
	    "the next pass reads only what was added: nothing");
	append(path, "a", " line\n" OK_LINE "\n");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_OK, "an appended marker is found");
	append(path, "a", FAILED_LINE "\n");
	ok(rename(path, old) == 0, "rotated to LOG.1");
	append(path, "w", "new boot\n");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_FAILED && f->lt.offset == 9,
	    "a rotation finishes LOG.1, then reads the new log from 0");
	unlink(old);
	append(path, "w", "x\n");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.offset == 2 && f->lt.last == GUEST_MARKER_NONE,
	    "a log that shrank is read from 0");
	unlink(path);
	ok(mkdir(path, 0700) == 0, "the log is a directory");
	nread = 0;
	f = logtails_get(&ts, "i-2", "0000:e3:00.5", "t2");
	ok(logtails_pass(&ts, f, path, &io) == 0 && nirregular == 1 &&
	    nread == 0 && f->lt.offset == 0,
	    "a directory is refused as not a regular file, not fatal");
	ok(logtails_pass(&ts, f, path, &quiet) == 0,
	    "no report: errors are silent");
	rmdir(path);
	rmdir(dir);
	logtails_release(&ts);
}

/* n lines of 99 bytes and a newline. */
static void
append_lines(const char *path, int n)
{
	FILE *f = fopen(path, "a");
	int i;

	for (i = 0; f != NULL && i < n; i++)
		fprintf(f, "%099d\n", i);
	if (f != NULL)
		fclose(f);
}

static int nstops, stop_after;

/* Stops the pass at the stop_after-th question (logtail_stop_fn). */
static bool
stop_at(void *arg)
{
	(void)arg;
	return ++nstops >= stop_after;
}

/* SPEC 7.2: a bound per pass, a rotated rest within it, a stop. */
static void
test_tails_bound(void)
{
	struct logtail_io io = { .max = 65536, .report = report };
	struct logtails ts;
	struct logtail_file *f;
	char dir[PATH_MAX], path[PATH_MAX * 2], old[PATH_MAX * 2];

	tap_tmpdir(dir, sizeof(dir), "logtail-bound");
	logtails_init(&ts);
	snprintf(path, sizeof(path), "%s/console.log", dir);
	snprintf(old, sizeof(old), "%s/console.log.0", dir);
	append_lines(path, 2000);
	append(path, "a", FAILED_LINE "\n");
	f = logtails_get(&ts, "i-1", "0000:e3:00.4", "t1");
	ok(logtails_pass(&ts, f, path, &io) == 0 && f->lt.offset <= 65537 &&
	    f->lt.offset >= 65536 - 100 && f->lt.last == GUEST_MARKER_NONE,
	    "a pass reads at most the bound (one window)");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.offset >= 2 * 65536 - 200 && f->lt.offset <= 2 * 65537,
	    "the next pass goes on where it stopped");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_FAILED,
	    "and the marker after 200,000 bytes is found in the fourth");
	/* virtlogd: LOG becomes LOG.0 with 100,000 bytes more. */
	append_lines(path, 1000);
	append(path, "a", OK_LINE "\n");
	ok(rename(path, old) == 0, "rotated to LOG.0");
	append(path, "w", FAILED_LINE "\n");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_NONE && f->lt.offset > 2000 * 100,
	    "the rotated rest counts against the bound: it is not finished");
	ok(logtails_pass(&ts, f, path, &io) == 0 &&
	    f->lt.last == GUEST_MARKER_FAILED &&
	    f->lt.offset == strlen(FAILED_LINE) + 1,
	    "the next pass finishes LOG.0 (its OK), then the new log");
	io.stop = stop_at;
	nstops = 0;
	stop_after = 2;
	append_lines(path, 3000);
	ok(logtails_pass(&ts, f, path, &io) == 0 && nstops == 2 &&
	    f->lt.offset < strlen(FAILED_LINE) + 1 + 3000 * 100,
	    "a stop ends the pass between two reads");
	unlink(old);
	unlink(path);
	rmdir(dir);
	logtails_release(&ts);
}

/* A FIFO, /dev/null and a link to a device are never read. */
static void
test_tails_not_regular(void)
{
	struct logtail_io io = { .max = 65536, .report = report };
	struct logtails ts;
	struct logtail_file *f;
	char dir[PATH_MAX], path[PATH_MAX * 2];

	tap_tmpdir(dir, sizeof(dir), "logtail-fifo");
	logtails_init(&ts);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ok(mkfifo(path, 0600) == 0, "a FIFO");
	f = logtails_get(&ts, "i-1", "0000:e3:00.4", "t1");
	nirregular = 0;
	ok(logtails_pass(&ts, f, path, &io) == 0 && nirregular == 1 &&
	    last_err == 0, "a FIFO without a writer is refused at once");
	unlink(path);
	ok(symlink("/dev/zero", path) == 0 &&
	    logtails_pass(&ts, f, path, &io) == 0 && nirregular == 2 &&
	    f->lt.offset == 0, "a link to /dev/zero is refused");
	unlink(path);
	rmdir(dir);
	logtails_release(&ts);
}

int
main(void)
{
	test_whole_lines();
	test_partial_line();
	test_not_markers();
	test_last_wins();
	test_split_marker();
	test_oversized();
	test_exact_limit();
	test_escapes();
	test_tails_get();
	test_tails_pass();
	test_tails_bound();
	test_tails_not_regular();
	return done_testing();
}
