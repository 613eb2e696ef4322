/*
 * recovery.c - unit tests (TAP) for vfrecover's library (src/vfrecover/
 * recovery.c): the journal (new, set, save, load, refusals), where a
 * resumed run continues, when restore is owed, and the card's SR-IOV
 * state read from a fake sysfs tree (virtfn* links, sriov_numvfs,
 * creatable_vgpu_types).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "vfrecover/recovery.h"
#include "tap.h"

#define PF "0000:e3:00.0"

static char root[PATH_MAX];

/* Runs a shell command with $D the fake devices directory. */
static void
sh(const char *cmd)
{
	if (system(cmd) != 0)
		abort();
}

/* A journal with steps done up to (excluding) stop, stop at status. */
static json_t *
journal_upto(enum recovery_step stop, const char *status)
{
	struct vf_list vfs = { 0 }, wedged = { 0 };
	json_t *j;
	int s;

	sysfs_vf_list_add(&vfs, "0000:e3:00.4");
	j = recovery_journal_new(PF, &vfs, &wedged);
	for (s = STEP_PREFLIGHT; s < (int)stop; s++)
		recovery_journal_set(j, s, "done");
	if (status != NULL)
		recovery_journal_set(j, stop, status);
	free(vfs.v);
	return j;
}

static void
test_resume(void)
{
	json_t *j = journal_upto(STEP_IDLE, "failed");

	ok(recovery_resume_point(j) == STEP_IDLE, "idle failed: resume at idle");
	ok(!recovery_needs_restore(j), "no quiesce: no restore owed");
	json_decref(j);
	j = journal_upto(STEP_ENABLE, "started");
	ok(recovery_needs_restore(j), "quiesce without restore: restore owed");
	ok(recovery_resume_point(j) == STEP_QUIESCE,
	    "enable interrupted: the cycle again from quiesce");
	ok(recovery_journal_status(j, STEP_DISABLE) == NULL &&
	    recovery_journal_status(j, STEP_ENABLE) == NULL,
	    "the cycle's entries are dropped");
	is_str(recovery_journal_status(j, STEP_IDLE), "done", "idle kept");
	json_decref(j);
	j = journal_upto(STEP_VERIFY, "failed");
	ok(!recovery_needs_restore(j), "restored: nothing owed");
	ok(recovery_resume_point(j) == STEP_VERIFY, "verify failed: verify");
	recovery_journal_set(j, STEP_RESTORE, "failed");
	ok(recovery_needs_restore(j), "a failed restore is owed again");
	json_decref(j);
}

static void
test_save_load(void)
{
	char gpu[PATH_MAX + 8], path[PATH_MAX * 2], name[64];
	char why[PATH_MAX + 256];
	json_t *j = journal_upto(STEP_QUIESCE, "started"), *back = NULL;
	FILE *f;
	int fd;

	snprintf(gpu, sizeof(gpu), "%s/gpu", root);
	snprintf(name, sizeof(name), "%s.json", PF);
	snprintf(path, sizeof(path), "%s/recovery/%s", gpu, name);
	ok(mkdir(gpu, 0755) == 0, "the gpu dir");
	ok(recovery_dir_open(gpu, false, why, sizeof(why)) == -1 &&
	    errno == ENOENT, "no recovery dir, none made: ENOENT");
	fd = recovery_dir_open(gpu, true, why, sizeof(why));
	ok(fd >= 0, "recovery dir made and opened");
	ok(recovery_journal_load(fd, name, PF, &back, why, sizeof(why)) == 0 &&
	    back == NULL, "no journal: 0");
	ok(recovery_journal_save(fd, name, j) == 0, "save");
	ok(recovery_journal_load(fd, name, PF, &back, why, sizeof(why)) == 1 &&
	    json_equal(j, back), "load gives back what was saved");
	json_decref(back);
	ok(recovery_journal_load(fd, name, "0000:e4:00.0", &back, why,
	    sizeof(why)) == -1 && errno == EINVAL, "another card's: EINVAL");
	f = fopen(path, "w");
	fputs("{\"version\":1,\"card\":\"" PF "\",\"vfs\":[\"x\"],"
	    "\"wedged\":[],\"steps\":[]}", f);
	fclose(f);
	ok(recovery_journal_load(fd, name, PF, &back, why, sizeof(why)) == -1 &&
	    strstr(why, "vfs") != NULL, "a bad VF address is refused: %s",
	    why);
	close(fd);
	/* A link in place of recovery/ is refused, naming it. */
	setenv("G", gpu, 1);
	sh("mv \"$G/recovery\" \"$G/real\" && ln -s real \"$G/recovery\"");
	ok(recovery_dir_open(gpu, true, why, sizeof(why)) == -1 &&
	    errno == ENOTDIR && strstr(why, "/gpu/recovery is not a real "
	    "directory") != NULL, "a link is refused: %s", why);
	sh("rm \"$G/recovery\" && mv \"$G/real\" \"$G/recovery\" && "
	    "chmod 777 \"$G/recovery\"");
	ok(recovery_dir_open(gpu, true, why, sizeof(why)) == -1 &&
	    errno == EPERM && strstr(why, "mode 777") != NULL,
	    "a directory others may write is refused: %s", why);
	json_decref(j);
}

static void
test_card(void)
{
	struct vf_list l = { 0 };
	size_t have = 9;

	sh("mkdir -p \"$D/" PF "\"");
	ok(card_present(root, PF), "the card is present");
	ok(!card_present(root, "0000:e4:00.0"), "another is not");
	ok(card_disabled(root, PF), "no virtfn: disabled");
	sh("mkdir -p \"$D/0000:e3:00.4/nvidia\" && "
	    "ln -s ../0000:e3:00.4 \"$D/" PF "/virtfn0\"");
	ok(card_virtfns(root, PF, &l) == 0 && l.n == 1 &&
	    strcmp(l.v[0], "0000:e3:00.4") == 0, "virtfn0 lists the VF");
	ok(!card_disabled(root, PF), "a virtfn: not disabled");
	ok(!card_enabled(root, PF, 1, &have) && have == 0,
	    "no creatable_vgpu_types: not ready");
	sh("echo 'ID : vGPU Name' "
	    ">\"$D/0000:e3:00.4/nvidia/creatable_vgpu_types\"");
	ok(card_enabled(root, PF, 1, &have) && have == 1,
	    "with its types: ready");
	ok(!card_enabled(root, PF, 2, &have), "one of two: not yet");
	sh("echo 0 >\"$D/" PF "/sriov_numvfs\"");
	ok(card_disabled(root, PF), "sriov_numvfs 0: disabled");
	free(l.v);
}

int
main(void)
{
	char cmd[PATH_MAX + 32];

	tap_tmpdir(root, sizeof(root), "recovery");
	if (snprintf(cmd, sizeof(cmd), "%s/sys/bus/pci/devices", root) >=
	    (int)sizeof(cmd))
		return 1;
	setenv("D", cmd, 1);
	test_resume();
	test_save_load();
	test_card();
	tap_rmtree(root);
	return done_testing();
}
