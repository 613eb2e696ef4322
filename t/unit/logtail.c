/*
 * logtail.c - unit tests (TAP) for the console-log tail state machine
 * (upstream tests 69-72).
 */
#include <stdlib.h>
#include <string.h>

#include "logtail.h"
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
	return done_testing();
}
