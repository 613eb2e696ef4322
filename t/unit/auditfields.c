/*
 * auditfields.c - unit tests (TAP) for vfstore's audit fields
 * (src/vfstore/auditfields.c): the failures of the named records in order, each
 * with its vf_address; a record without failures adds none; the line of
 * a quarantine or clear (card, vf, vfs, failures); and auditlog_read_last()
 * (the last N matching lines, N 0 and N over the count).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "auditlog.h"
#include "log.h"
#include "vfstore/auditfields.h"
#include "tap.h"
#include "healthfile.h"

static char dir[PATH_MAX];

static const char health_text[] = "{\"version\":1,\"records\":["
    "{\"vf_address\":\"0000:e3:00.4\",\"failures\":["
    "{\"instance_id\":\"a\",\"assigned_at\":\"x\","
    "\"reported_at\":\"2026-08-20T15:00:00Z\"},"
    "{\"instance_id\":\"b\",\"assigned_at\":\"y\","
    "\"reported_at\":\"2026-08-20T16:00:00Z\"}]},"
    "{\"vf_address\":\"0000:e3:00.5\","
    "\"quarantined_at\":\"2026-08-20T16:00:00Z\"},"
    "{\"vf_address\":\"0000:e3:00.6\",\"failures\":["
    "{\"instance_id\":\"c\",\"assigned_at\":\"z\","
    "\"reported_at\":\"2026-08-20T17:00:00Z\"}]}]}";

/* "VF ID,VF ID,..." of a failures array. */
static void
failure_ids(const json_t *arr, char *buf, size_t len)
{
	const json_t *f;
	size_t i, n = 0;

	buf[0] = '\0';
	json_array_foreach(arr, i, f)
		n += (size_t)snprintf(buf + n, len - n, "%s%s %s", i ? "," : "",
		    json_string_value(json_object_get(f, "vf_address")),
		    json_string_value(json_object_get(f, "instance_id")));
}

static void
test_failures(void)
{
	char v[3][VF_ADDR_LEN + 1] = { "0000:e3:00.6", "0000:e3:00.5",
	    "0000:e3:00.4" };
	struct vf_list l = { v, 3 };
	struct health h;
	char why[256], ids[256];
	json_t *arr;

	ok(health_parse(health_text, strlen(health_text), &h, why,
	    sizeof(why)) == 0, "the health fixture parses");
	arr = auditfields_failures(&h, &l);
	ok(arr != NULL && json_array_size(arr) == 3, "three failures");
	failure_ids(arr, ids, sizeof(ids));
	is_str(ids, "0000:e3:00.6 c,0000:e3:00.4 a,0000:e3:00.4 b",
	    "in the list's order, oldest first, each with its VF");
	ok(json_object_get(json_array_get(arr, 0), "reported_at") != NULL,
	    "reported_at kept");
	json_decref(arr);
	l.n = 0;
	arr = auditfields_failures(&h, &l);
	ok(arr != NULL && json_array_size(arr) == 0, "no VFs: empty array");
	json_decref(arr);
	health_release(&h);
}

static int
keep_last(const json_t *line, void *arg)
{
	char *buf = arg;

	strcat(buf, json_string_value(json_object_get(line, "reason")));
	strcat(buf, " ");
	return 0;
}

static void
test_vfs_and_last(void)
{
	char v[2][VF_ADDR_LEN + 1] = { "0000:e3:00.4", "0000:e3:00.5" };
	struct vf_list l = { v, 2 }, one = { v, 1 };
	char got[256];
	const char *reasons[] = { "r1", "r2", "r3" };
	size_t i;

	for (i = 0; i < 3; i++)
		ok(auditfields_vfs(dir, "quarantine", i == 1 ? NULL :
		    "0000:e3:00.0", i == 1 ? &one : &l, reasons[i], NULL, NULL) == 0,
		    "line %zu appended", i + 1);
	got[0] = '\0';
	ok(auditlog_read_last(dir, NULL, NULL, 2, keep_last, got, NULL) == 0,
	    "auditlog_read_last runs");
	is_str(got, "r2 r3 ", "the last two lines, oldest first");
	got[0] = '\0';
	(void)auditlog_read_last(dir, NULL, "0000:e3:00.0", 5, keep_last, got,
	    NULL);
	is_str(got, "r1 r3 ", "a limit over the count: every match");
	got[0] = '\0';
	(void)auditlog_read_last(dir, "0000:e3:00.4", NULL, 0, keep_last, got,
	    NULL);
	is_str(got, "", "limit 0: none");
	got[0] = '\0';
	(void)auditlog_read_last(dir, "0000:e3:00.4", NULL, 1, keep_last, got,
	    NULL);
	is_str(got, "r3 ", "--vf names it in vfs of a --card line");
}

int
main(void)
{
	log_init("unit-auditfields");
	tap_tmpdir(dir, sizeof(dir), "auditfields");
	test_failures();
	test_vfs_and_last();
	tap_rmtree(dir);
	return done_testing();
}
