/*
 * recoverrun.c - unit tests (TAP) for vfrecover's step machine (src/vfrecover/
 * recoverrun.c): over a fake card with two VFs, the engine's lines, events
 * and audit calls through its callbacks: a failed audit write stops the
 * run at that step, reported with the step, and restore still runs;
 * a sriov-manage that changes nothing fails disable, then restore; a
 * dry run audits nothing.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "vfrecover/recoverrun.h"
#include "tap.h"

#define PF "0000:e3:00.0"
#define VF4 "0000:e3:00.4"
#define VF5 "0000:e3:00.5"

static char root[256];			/* short: paths under it fit */

/* What the callbacks saw. */
struct seen {
	char steps[512];		/* "step:status ..." of the lines */
	char last[256];			/* the last line */
	char audits[512];		/* "command:outcome ..." */
	char fail_audit[32];		/* the audit command to fail */
	char audit_step[64];		/* the AUDIT event's step:error */
	char cmd_steps[128];		/* "step:ok ..." of COMMAND events */
};

static void
add_word(char *buf, size_t len, const char *a, const char *b)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s:%s", n ? " " : "", a, b);
}

static void
emit(void *arg, json_t *line)
{
	struct seen *s = arg;
	char *text = json_dumps(line, JSON_COMPACT);

	if (json_object_get(line, "status") != NULL)
		add_word(s->steps, sizeof(s->steps), json_string_value(
		    json_object_get(line, "step")), json_string_value(
		    json_object_get(line, "status")));
	snprintf(s->last, sizeof(s->last), "%s", text ? text : "(null)");
	free(text);
	json_decref(line);
}

static void
event(void *arg, const struct recoverrun_event *ev)
{
	struct seen *s = arg;

	if (ev->kind == RECOVERRUN_EV_AUDIT)
		snprintf(s->audit_step, sizeof(s->audit_step), "%s:%s",
		    ev->step, ev->error);
	if (ev->kind == RECOVERRUN_EV_COMMAND)
		add_word(s->cmd_steps, sizeof(s->cmd_steps), ev->step,
		    ev->ok ? "ok" : "failed");
}

static int
audit(void *arg, const char *gpu_dir, const struct audit_event *ev)
{
	struct seen *s = arg;

	(void)gpu_dir;
	add_word(s->audits, sizeof(s->audits), ev->command, ev->outcome);
	if (strcmp(ev->command, s->fail_audit) == 0) {
		errno = ENOSPC;
		return -1;
	}
	return 0;
}

static void
put(const char *dir, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL || fwrite(data, 1, len, f) != len ||
	    fclose(f) != 0)
		abort();
}

/* A PCI function libpci accepts: an NVIDIA L40S (10de:26b9, 030200). */
static void
mk_pcifn(const char *bdf, char *dir, size_t len)
{
	static const char res[] = "0x0000000000000000 0x0000000000000000 "
	    "0x0000000000000000\n";
	unsigned char config[256] = { 0xde, 0x10, 0xb9, 0x26 };
	char cmd[PATH_MAX * 2];

	snprintf(dir, len, "%s/sys/bus/pci/devices/%s", root, bdf);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/nvidia'", dir);
	if (system(cmd) != 0)
		abort();
	put(dir, "vendor", "0x10de\n", 7);
	put(dir, "device", "0x26b9\n", 7);
	put(dir, "class", "0x030200\n", 9);
	put(dir, "revision", "0x00\n", 5);
	put(dir, "irq", "0\n", 2);
	config[10] = 0x02;
	config[11] = 0x03;
	put(dir, "config", config, sizeof(config));
	snprintf(cmd, sizeof(cmd), "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; "
	    "do printf '%s'; done >'%s/resource'", res, dir);
	if (system(cmd) != 0)
		abort();
}

/* The card PF with VFs .4 and .5 (virtfn0, virtfn1), free. */
static void
mk_card(void)
{
	static const char types[] = "ID    : vGPU Name\n"
	    "1160  : NVIDIA L40S-12Q\n";
	char pf[PATH_MAX], vf[PATH_MAX], cmd[PATH_MAX * 3];
	const char *vfs[] = { VF4, VF5 };
	int i;

	mk_pcifn(PF, pf, sizeof(pf));
	for (i = 0; i < 2; i++) {
		mk_pcifn(vfs[i], vf, sizeof(vf));
		put(vf, "nvidia/current_vgpu_type", "0\n", 2);
		put(vf, "nvidia/creatable_vgpu_types", types,
		    sizeof(types) - 1);
		snprintf(cmd, sizeof(cmd), "ln -s '../%s' '%s/physfn' && "
		    "ln -s '../%s' '%s/virtfn%d'", PF, vf, vfs[i], pf, i);
		if (system(cmd) != 0)
			abort();
	}
	put(pf, "sriov_numvfs", "2\n", 2);
}

/* A fresh data dir and fake /proc; runs the engine. */
static int
run(struct seen *s, const char *fail_audit, bool dry_run)
{
	struct conf c;
	char proc[512], cmd[2048];
	struct recoverrun_conf rc = { .conf = &c, .card = PF,
	    .proc_root = root, .dry_run = dry_run, .emit = emit,
	    .event = event, .audit = audit, .arg = s };

	memset(s, 0, sizeof(*s));
	snprintf(s->fail_audit, sizeof(s->fail_audit), "%s", fail_audit);
	conf_defaults(&c);
	snprintf(c.data_dir, sizeof(c.data_dir), "%s/data", root);
	snprintf(c.sysfs_root, sizeof(c.sysfs_root), "%s", root);
	snprintf(c.sriov_manage, sizeof(c.sriov_manage), "/bin/true");
	c.quiesce_command[0] = c.restore_command[0] = '\0';
	c.settle_timeout = 1;
	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/data' && mkdir -p '%s' "
	    "'%s/data/gpu'", root, proc, root);
	if (system(cmd) != 0)
		abort();
	return recoverrun_run(&rc);
}

static void
test_audit_fails(void)
{
	struct seen s;

	ok(run(&s, "quiesce", false) == EX_IOERR, "quiesce's audit: 74");
	is_str(s.steps, "preflight:done drain:done idle:done quiesce:done "
	    "restore:skipped", "it stops after quiesce; restore runs");
	is_str(s.audit_step, "quiesce:No space left on device",
	    "the failed audit is reported with its step and error");
	is_str(s.audits, "preflight:done drain:done idle:done "
	    "quiesce:done restore:skipped", "restore is audited too");
	is_str(s.cmd_steps, "", "sriov-manage never ran");
	ok(run(&s, "drain", false) == EX_IOERR, "drain's audit: 74");
	is_str(s.steps, "preflight:done", "no drain line, nothing after");
	is_str(s.audit_step, "drain:No space left on device",
	    "reported as drain's");
}

static void
test_sriov_noop(void)
{
	struct seen s;

	ok(run(&s, "", false) == RECOVERRUN_NO, "disable fails: exit 1");
	is_str(s.steps, "preflight:done drain:done idle:done quiesce:done "
	    "disable:failed restore:skipped", "then restore");
	is_str(s.cmd_steps, "disable:ok", "sriov-manage -d exited 0");
	is_str(s.last, "{\"card\":\"" PF "\",\"result\":\"failed\","
	    "\"step\":\"disable\"}", "the final line names disable");
}

static void
test_dry_run(void)
{
	struct seen s;

	ok(run(&s, "preflight", true) == 0, "a dry run of an idle card: 0");
	is_str(s.audits, "", "it audits nothing");
	is_str(s.last, "{\"card\":\"" PF "\",\"result\":\"dry_run\"}",
	    "its final line");
	ok(strstr(s.steps, "clear:planned") != NULL, "every step planned");
}

int
main(void)
{
	tap_tmpdir(root, sizeof(root), "recoverrun");
	mk_card();
	test_audit_fails();
	test_sriov_noop();
	test_dry_run();
	tap_rmtree(root);
	return done_testing();
}
