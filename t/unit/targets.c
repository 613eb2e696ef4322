/*
 * targets.c - unit tests (TAP) for the target list: --targets lines
 * (required fields, defaults, bad lines with their reason), lookup,
 * copies from the claims ledger, and the marks kept from scan to scan
 * with the 5-minute repeat of a check failure's warn.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonl.h"
#include "store.h"
#include "sentinel-poll/targets.h"
#include "tap.h"
#include "claims.h"

static int
parse(struct targets *ts, const char *line, const char **why)
{
	*why = NULL;
	return targets_parse_line(ts, line, strlen(line), why);
}

static void
test_lines(void)
{
	struct targets ts = { 0 };
	const struct target *t;
	const char *why;

	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.4\",\"instance_id\":"
	    "\"i-1\",\"claimed_at\":\"2026-08-20T15:00:00Z\",\"vsock\":"
	    "\"vsock:7:9999\",\"control_socket\":\"/run/i-1.sock\","
	    "\"app_log\":\"/var/log/i-1\"}", &why) == 1 && ts.n == 1,
	    "a full line is appended");
	t = &ts.v[0];
	ok(strcmp(t->vf, "0000:e3:00.4") == 0 &&
	    strcmp(t->instance_id, "i-1") == 0 &&
	    strcmp(t->claimed_at, "2026-08-20T15:00:00Z") == 0 &&
	    strcmp(t->vsock, "vsock:7:9999") == 0 &&
	    strcmp(t->control_socket, "/run/i-1.sock") == 0 &&
	    strcmp(t->app_log, "/var/log/i-1") == 0, "with every field");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.5\",\"instance_id\":"
	    "\"i-2\"}", &why) == 1 && ts.n == 2, "a minimal line is appended");
	t = &ts.v[1];
	ok(strcmp(t->claimed_at, "") == 0 && t->vsock == NULL &&
	    t->control_socket == NULL && t->app_log == NULL,
	    "claimed_at defaults to \"\", the rest to absent");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00\",\"instance_id\":"
	    "\"i-3\"}", &why) == 0 && ts.n == 2, "an invalid VF is refused");
	is_str(why, "needs a valid vf_address and an instance_id",
	    "with the reason");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.6\",\"instance_id\":"
	    "\"\"}", &why) == 0 && ts.n == 2, "an empty instance is refused");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.6\"", &why) == 0 &&
	    why != NULL && strncmp(why, "invalid JSON", 12) == 0 && ts.n == 2,
	    "bad JSON is refused with the parser's reason");
	ok(parse(&ts, "[1]", &why) == 0 && ts.n == 2,
	    "a line that is no object is refused");
	ok(targets_find(&ts, "i-2") == &ts.v[1] &&
	    targets_find(&ts, "i-9") == NULL, "targets_find by instance");
	targets_release(&ts);
	ok(ts.n == 0 && ts.v == NULL, "targets_release empties the list");
}

static void
test_copies(void)
{
	struct claim cl[2] = {
		{ "0000:e3:00.4", "i-1", "2026-08-20T15:00:00Z", NULL, NULL,
		    "vsock:3:1", "/run/a.sock", NULL, NULL, NULL, NULL, NULL,
		    NULL },
		{ "0000:e3:00.5", "i-2", "2026-08-20T16:00:00Z", NULL, NULL,
		    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }
	};
	struct claims c = { cl, 2, 2 };
	struct targets ts = { 0 }, copy = { 0 };

	ok(targets_from_claims(&c, &ts) == 0 && ts.n == 2,
	    "every claim becomes a target");
	ok(strcmp(ts.v[0].vsock, "vsock:3:1") == 0 &&
	    strcmp(ts.v[0].control_socket, "/run/a.sock") == 0 &&
	    ts.v[0].app_log == NULL && ts.v[1].vsock == NULL,
	    "with the claim's endpoint and control socket");
	ok(ts.v[0].vf != cl[0].vf && ts.v[0].instance_id != cl[0].instance_id,
	    "as deep copies");
	ok(targets_append_all(&copy, &ts) == 0 && copy.n == 2 &&
	    strcmp(copy.v[1].instance_id, "i-2") == 0 &&
	    copy.v[1].instance_id != ts.v[1].instance_id,
	    "targets_append_all deep-copies a list");
	targets_release(&ts);
	targets_release(&copy);
}

static unsigned long bad_lines[4];
static int nbad, nlong;

static void
count_bad(void *arg, unsigned long lineno, const char *why)
{
	(void)arg;
	if (why == NULL)
		nlong++;
	else if (nbad < 4)
		bad_lines[nbad++] = lineno;
}

/* The test's temporary directory, for the --targets files. */
static char dir[PATH_MAX];

/* The file NAME in dir holding text; its path in buf. */
static void
write_file(char *buf, size_t len, const char *name, const char *text)
{
	FILE *f;

	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len ||
	    (f = fopen(buf, "w")) == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

static void
test_files(void)
{
	struct targets ts = { 0 }, in = { 0 };
	struct targets_source src = { 0 };
	struct targets_why why;
	char path[PATH_MAX], want[PATH_MAX + 8];

	write_file(path, sizeof(path), "files.jsonl", "{\"vf_address\":"
	    "\"0000:e3:00.4\",\"instance_id\":\"i-1\"}\nnot json\n\n"
	    "{\"vf_address\":\"0000:e3:00.5\",\"instance_id\":\"i-2\"}\n"
	    "[1]\n");
	ok(targets_from_file(path, &ts, count_bad, NULL, &why) == 0 &&
	    ts.n == 2, "a file's good lines are appended");
	ok(nbad == 3 && bad_lines[0] == 2 && bad_lines[1] == 3 &&
	    bad_lines[2] == 5 && nlong == 0,
	    "its bad lines (an empty one too) are reported with their "
	    "numbers");
	targets_release(&ts);
	nbad = 0;
	src.path = path;
	ok(targets_list(&src, &ts, NULL, NULL, &why) == 0 && ts.n == 2 &&
	    nbad == 0, "targets_list reads the file; no callback, quiet");
	targets_release(&ts);
	unlink(path);
	snprintf(want, sizeof(want), "open %s: ", path);
	errno = 0;
	ok(targets_from_file(path, &ts, count_bad, NULL, &why) == -1 &&
	    errno == ENOENT && !why.nomem && strncmp(why.text, want,
	    strlen(want)) == 0 && strstr(why.text, strerror(ENOENT)) != NULL,
	    "a missing file: -1/ENOENT, the path and error in why");
	ok(parse(&in, "{\"vf_address\":\"0000:e3:00.6\",\"instance_id\":"
	    "\"i-3\"}", &(const char *){ NULL }) == 1, "a stdin list");
	src.path = "-";
	src.stdin_list = &in;
	ok(targets_list(&src, &ts, NULL, NULL, &why) == 0 && ts.n == 1 &&
	    ts.v[0].instance_id != in.v[0].instance_id,
	    "targets_list \"-\" deep-copies the stdin list");
	targets_release(&ts);
	targets_release(&in);
}

static void
test_long_line(void)
{
	struct targets ts = { 0 };
	struct targets_why why;
	char path[PATH_MAX], *text;
	size_t n = JSONL_MAX + 1;

	text = malloc(n + 64);
	memset(text, 'x', n);
	strcpy(text + n, "\n{\"vf_address\":\"0000:e3:00.4\",\"instance_id\":"
	    "\"i-1\"}\n");
	write_file(path, sizeof(path), "long.jsonl", text);
	free(text);
	nlong = nbad = 0;
	ok(targets_from_file(path, &ts, count_bad, NULL, &why) == 0 &&
	    ts.n == 1 && nlong == 1 && nbad == 0,
	    "an over-long line is skipped and reported with why NULL");
	unlink(path);
	targets_release(&ts);
}

static void
test_ledger(void)
{
	struct targets ts = { 0 };
	struct targets_source src = { 0 };
	struct targets_why why;

	src.data_dir = "/nonexistent/unit-targets";
	ok(targets_list(&src, &ts, NULL, NULL, &why) == -1 && ts.n == 0 &&
	    !why.nomem && why.text[0] != '\0',
	    "a ledger without DATA_DIR/gpu: -1 with a reason, not nomem");
}

static void
test_marks(void)
{
	struct target_marks m = { 0 };
	struct target a = { "0000:e3:00.4", "i-1", "t1", NULL, NULL, NULL, 0,
	    0 };
	struct target b = { "0000:e3:00.4", "i-1", "t2", NULL, NULL, NULL, 0,
	    0 };

	ok(targets_marks_set(&m, &a) == 1 && m.n == 1, "a new mark: 1");
	ok(targets_marks_set(&m, &a) == 0 && m.n == 1, "marked again: 0");
	ok(targets_marks_set(&m, &b) == 1 && m.n == 2,
	    "another claim time is another assignment");
	targets_marks_sweep(&m);
	ok(m.n == 2, "a sweep keeps what was marked since the last one");
	ok(targets_marks_set(&m, &a) == 0, "a kept mark is not new");
	targets_marks_sweep(&m);
	ok(m.n == 1 && strstr(m.v[0].key, "t1") != NULL,
	    "the next sweep forgets what was not marked again");
	targets_marks_sweep(&m);
	ok(m.n == 0 && targets_marks_set(&m, &a) == 1,
	    "once forgotten, a mark is new again");
	targets_marks_release(&m);
	ok(m.n == 0 && m.v == NULL, "targets_marks_release empties the set");
}

/* The 5-minute rule of a check failure's warn (FAIL_LOG_MS), on a clock
 * the test sets. */
static void
test_mark_repeat(void)
{
	const long long every = 300000;
	struct target_mark m = { 0 };

	ok(targets_mark_repeat(&m, "connect: Permission denied", 1000,
	    every) == 0, "the first failure is new");
	ok(targets_mark_repeat(&m, "connect: Permission denied", 2000,
	    every) == 1, "the same reason a second later repeats it");
	ok(targets_mark_repeat(&m, "connect: Permission denied",
	    1000 + every - 1, every) == 1, "and just under 5 minutes later");
	ok(targets_mark_repeat(&m, "connect: Permission denied", 1000 + every,
	    every) == 0, "5 minutes after the last new one it is new again");
	ok(targets_mark_repeat(&m, "connect: Permission denied",
	    2000 + every, every) == 1, "and the clock starts from there");
	ok(targets_mark_repeat(&m, "timeout", 3000 + every, every) == 0,
	    "another reason is new at once");
	ok(targets_mark_repeat(&m, "connect: Permission denied",
	    4000 + every, every) == 0, "and so is the first one back");
	ok(targets_mark_repeat(&m, "", 5000 + every, every) == 0 &&
	    targets_mark_repeat(&m, "", 6000 + every, every) == 1,
	    "an empty reason is one like any other");
	free(m.why);
}

int
main(void)
{
	tap_tmpdir(dir, sizeof(dir), "targets");
	test_lines();
	test_copies();
	test_files();
	test_long_line();
	test_ledger();
	test_marks();
	test_mark_repeat();
	if (rmdir(dir) != 0)
		ok(0, "the temp dir is left empty and removed");
	return done_testing();
}
