/*
 * auditlog.c - unit tests (TAP) for the audit log (src/lib/auditlog.c): the
 * line's fields and their order, $SUDO_USER, the caller's extra fields,
 * one line per append, the rotation to audit.jsonl.1 at 1 MiB, and the
 * reader (both generations oldest first, filtered by VF and card).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "auditlog.h"
#include "log.h"
#include "tap.h"

static char dir[PATH_MAX];
static const char vfs[2][VF_ADDR_LEN + 1] = { "0000:e3:00.4",
    "0000:e3:00.5" };

static char *
dump(const json_t *obj)
{
	return json_dumps(obj, JSON_COMPACT);
}

static void
test_line(void)
{
	json_t *extra = json_pack("{s:i, s:s, s:s}", "failures", 2, "nvrm",
	    "RmInitAdapter failed!", "user", "mallory");
	struct audit_event ev = { .command = "clear", .card = "0000:e3:00.0",
	    .vfs = vfs, .nvfs = 2, .reason = "repaired", .extra = extra };
	json_t *obj;
	const char *key;
	json_t *v;
	char keys[256] = "";
	char *text;

	setenv("SUDO_USER", "alice", 1);
	obj = auditlog_line(&ev);
	ok(obj != NULL, "auditlog_line builds a line");
	json_object_foreach(obj, key, v) {
		strcat(keys, key);
		strcat(keys, " ");
	}
	is_str(keys, "ts prog command card vfs reason uid user outcome "
	    "failures nvrm ", "fields in SPEC order, extra ones after");
	is_str(json_string_value(json_object_get(obj, "user")), "alice",
	    "user is $SUDO_USER; an extra field never overrides it");
	is_str(json_string_value(json_object_get(obj, "prog")), "unit-audit",
	    "prog defaults to log_prog()");
	is_str(json_string_value(json_object_get(obj, "outcome")), "ok",
	    "outcome defaults to ok");
	ok(json_integer_value(json_object_get(obj, "uid")) == (long)getuid(),
	    "uid is the real uid");
	text = dump(json_object_get(obj, "vfs"));
	is_str(text, "[\"0000:e3:00.4\",\"0000:e3:00.5\"]", "vfs listed");
	free(text);
	json_decref(obj);
	unsetenv("SUDO_USER");
	ev.extra = NULL;
	obj = auditlog_line(&ev);
	ok(obj != NULL && json_string_value(json_object_get(obj, "user")) !=
	    NULL && strcmp(json_string_value(json_object_get(obj, "user")),
	    "alice") != 0, "without SUDO_USER, the uid's name");
	json_decref(obj);
	ev.reason = "bad \xff";
	ok(auditlog_line(&ev) == NULL && errno == EILSEQ,
	    "a reason that is not UTF-8: EILSEQ");
	ev.reason = NULL;
	ev.command = NULL;
	ok(auditlog_line(&ev) == NULL && errno == EINVAL, "no command: EINVAL");
	json_decref(extra);
}

/* Appends the line's command to the 4096-byte buffer arg, keeping only
 * the newest part when it fills up. */
static int
collect(const json_t *line, void *arg)
{
	char *buf = arg;
	size_t len = strlen(buf);

	if (len > 3000)
		memmove(buf, buf + len - 1000, 1001);
	strcat(buf, json_string_value(json_object_get(line, "command")));
	strcat(buf, " ");
	return 0;
}

static long
file_size(const char *name)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void
test_append_read(void)
{
	struct audit_event ev = { .command = "quarantine", .vf = vfs[0] };
	char got[4096] = "", path[PATH_MAX * 2];
	size_t skipped = 9;
	FILE *f;

	ok(auditlog_append(dir, &ev) == 0, "append creates audit.jsonl");
	ev.command = "clear";
	ev.vf = NULL;
	ev.card = "0000:e3:00.0";
	ev.vfs = vfs;
	ev.nvfs = 2;
	ok(auditlog_append(dir, &ev) == 0, "a second line");
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	f = fopen(path, "a");
	fputs("not json\n", f);
	fclose(f);
	ev.command = "other";
	ev.card = "0000:e4:00.0";
	ev.vfs = NULL;
	ok(auditlog_append(dir, &ev) == 0, "a line for another card");
	ok(auditlog_read(dir, NULL, NULL, collect, got, &skipped) == 0,
	    "read all");
	is_str(got, "quarantine clear other ", "every line, in order");
	ok(skipped == 1, "the bad line skipped and counted");
	got[0] = '\0';
	auditlog_read(dir, vfs[1], NULL, collect, got, NULL);
	is_str(got, "clear ", "filter by VF finds it in vfs");
	got[0] = '\0';
	auditlog_read(dir, vfs[0], NULL, collect, got, NULL);
	is_str(got, "quarantine clear ", "filter by VF: vf and vfs");
	got[0] = '\0';
	auditlog_read(dir, NULL, "0000:e4:00.0", collect, got, NULL);
	is_str(got, "other ", "filter by card");
}

static void
test_rotate(void)
{
	char reason[1000], got[4096] = "";
	struct audit_event ev = { .command = "fill", .reason = reason };
	int i;

	memset(reason, 'x', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	for (i = 0; file_size("audit.jsonl") < AUDIT_ROTATE_BYTES; i++)
		if (auditlog_append(dir, &ev) < 0)
			break;
	ok(file_size("audit.jsonl.1") < 0, "no rotation below 1 MiB");
	ev.command = "last";
	ev.reason = NULL;
	ok(auditlog_append(dir, &ev) == 0, "append at 1 MiB");
	ok(file_size("audit.jsonl.1") >= AUDIT_ROTATE_BYTES,
	    "the full file became audit.jsonl.1");
	ok(file_size("audit.jsonl") > 0 && file_size("audit.jsonl") < 1000,
	    "audit.jsonl starts again with one line");
	auditlog_read(dir, NULL, "0000:e4:00.0", collect, got, NULL);
	is_str(got, "other ", "the reader reads the old generation first");
	got[0] = '\0';
	ev.command = "later";
	auditlog_append(dir, &ev);
	auditlog_read(dir, NULL, NULL, collect, got, NULL);
	ok(strlen(got) > 11 && strcmp(got + strlen(got) - 11, "last later ")
	    == 0, "then the current one");
}

int
main(void)
{
	log_init("unit-audit");
	tap_tmpdir(dir, sizeof(dir), "auditlog");
	test_line();
	test_append_read();
	test_rotate();
	tap_rmtree(dir);
	return done_testing();
}
