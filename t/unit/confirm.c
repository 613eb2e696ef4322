/*
 * confirm.c - unit tests (TAP) for the confirmation batch of
 * sentinel-poll (same assignment, instance gone, another VF or claim
 * time) and for the poller's textfile (four gauges, HELP and TYPE).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentinel-poll/confirm.h"
#include "sentinel-poll/pollstat.h"
#include "tap.h"

static struct target
mk(char *vf, char *id, char *at)
{
	struct target t = { .vf = vf, .instance_id = id, .claimed_at = at };

	return t;
}

static void
test_judge(void)
{
	struct target polled = mk("0000:e3:00.4", "i-1", "T1");
	struct target same = mk("0000:e3:00.4", "i-1", "T1");
	struct target other_vf = mk("0000:e3:00.5", "i-1", "T1");
	struct target other_at = mk("0000:e3:00.4", "i-1", "T2");
	struct target stranger = mk("0000:e3:00.4", "i-2", "T1");
	struct targets now = { .v = &same, .n = 1 };
	struct confirm_batch b = { 0 };

	ok(confirm_add(&b, &polled, CP_FAILED, "NVRM: x") == 0 && b.n == 1 &&
	    strcmp(b.v[0].nvrm, "NVRM: x") == 0, "a failed verdict is held "
	    "with a copy of its message");
	ok(confirm_add(&b, &polled, CP_OK, NULL) == 0 && b.n == 2 &&
	    b.v[1].nvrm == NULL, "an ok verdict has no message");
	ok(confirm_judge(&b.v[0], &now) == CONFIRM_SAME, "same assignment");
	now.v = &other_vf;
	ok(confirm_judge(&b.v[0], &now) == CONFIRM_CHANGED, "another VF");
	now.v = &other_at;
	ok(confirm_judge(&b.v[0], &now) == CONFIRM_CHANGED,
	    "another claim time");
	now.v = &stranger;
	ok(confirm_judge(&b.v[0], &now) == CONFIRM_GONE, "instance gone");
	confirm_clear(&b);
	ok(b.n == 0 && confirm_add(&b, &polled, CP_FAILED, NULL) == 0 &&
	    strcmp(b.v[0].nvrm, "") == 0, "cleared, reused; NULL nvrm is \"\"");
	confirm_release(&b);
	ok(b.v == NULL && b.n == 0, "released");
}

static void
test_textfile(void)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	struct pollstat s = { .framework_present = true, .targets = 3,
	    .polled = 2, .last_scan = 1796000000 };
	const char *text;

	tap_tmpdir(dir, sizeof(dir), "confirm");
	snprintf(path, sizeof(path), "%s/p.prom", dir);
	ok(pollstat_write(&s, path) == 0, "the textfile is written");
	text = tap_slurp(path);
	ok(text != NULL && strstr(text, "\nvfsentinel_sentinel_targets 3\n") &&
	    strstr(text, "\nvfsentinel_sentinel_polled 2\n") &&
	    strstr(text, "\nvfsentinel_sentinel_framework_present 1\n") &&
	    strstr(text, "\nvfsentinel_sentinel_last_scan_timestamp_seconds "
	    "1796000000\n"), "four samples");
	ok(text != NULL && strncmp(text, "# HELP vfsentinel_sentinel_", 27)
	    == 0 && strstr(text, "# TYPE vfsentinel_sentinel_polled gauge\n"),
	    "HELP and TYPE lines, gauges");
	snprintf(path, sizeof(path), "%s/p.prom/x", dir);
	ok(pollstat_write(&s, path) == -1, "a path under a file fails");
	snprintf(path, sizeof(path), "%s/p.prom", dir);
	remove(path);
	remove(dir);
}

int
main(void)
{
	test_judge();
	test_textfile();
	return done_testing();
}
