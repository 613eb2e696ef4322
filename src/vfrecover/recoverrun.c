/*
 * recoverrun.c - the step machine of vfrecover (recoverrun.h): the
 * steps, the cycle and its resume, the dry run. A step's frame (its
 * line, journal entry, audit line, commands) is step.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <jansson.h>

#include "claims.h"
#include "drain.h"
#include "healthfile.h"
#include "healthrules.h"
#include "io.h"
#include "lock.h"
#include "step.h"
#include "suspect.h"
#include "sig.h"

/* The paths of the card's journal and lock; VFSENTINEL_CARD. */
static int
paths(struct recovery_run *r)
{
	if (store_init(&r->view.store, r->conf->data_dir) < 0 ||
	    io_pathf(r->rdir, sizeof(r->rdir), "%s/recovery",
	    r->view.store.dir) < 0 ||
	    io_pathf(r->jpath, sizeof(r->jpath), "%s/%s.json", r->rdir,
	    r->card) < 0 ||
	    io_pathf(r->jname, sizeof(r->jname), "%s.json", r->card) < 0 ||
	    io_pathf(r->lastname, sizeof(r->lastname), "%s.last.json",
	    r->card) < 0 ||
	    io_pathf(r->lockname, sizeof(r->lockname), "%s.lock",
	    r->card) < 0 ||
	    io_pathf(r->env_card, sizeof(r->env_card), "VFSENTINEL_CARD=%s",
	    r->card) < 0)
		return step_fail(r, EX_USAGE, RECOVERRUN_EV_PATH, NULL);
	return 0;
}

/* --- the steps ----------------------------------------------------------- */

/* The card and its VFs; the wedged ones; the systemic guard. */
static int
preflight_checks(struct recovery_run *r, struct systemic *sy)
{
	const char *root = r->conf->sysfs_root;
	size_t i;
	int rc;

	if (!card_present(root, r->card))
		return step_status(r, "failed", json_pack("{s:s}", "error",
		    "no such PCI device")), STEP_FAILED;
	if (!r->resumed && (card_virtfns(root, r->card, &r->vfs) < 0
	    || r->vfs.n == 0 || !card_enabled(root, r->card, 1, &i)))
		return step_status(r, "failed", json_pack("{s:s}", "error",
		    "no VF in the vendor-VFIO framework")), STEP_FAILED;
	if ((rc = step_load(r, false, true)) != 0)
		return rc;
	store_unlock(&r->view.store);
	for (i = 0; !r->resumed && i < r->vfs.n; i++)
		if (health_vf_quarantined(&r->view.health, r->vfs.v[i]) &&
		    sysfs_vf_list_add(&r->wedged, r->vfs.v[i]) < 0)
			rc = step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM, NULL);
	if (rc == 0 && card_systemic(r->conf, &r->view, sy) < 0)
		rc = step_fail(r, errno == ENOMEM ? EX_OSERR : EX_IOERR,
		    RECOVERRUN_EV_SYSTEMIC, io_strerror(errno));
	hostview_release(&r->view);
	return rc;
}

/* The systemic guard's fields; true when it stops the run. */
static bool
systemic_stops(struct recovery_run *r, const struct systemic *sy, json_t *f)
{
	if (!sy->suspected || r->resumed)
		return false;
	json_object_set_new(f, "systemic_reason", json_string(sy->reason));
	if (!r->cf->force) {
		json_object_set_new(f, "error", json_string(
		    "systemic failure suspected; --force to cycle"));
		return true;
	}
	json_object_set_new(f, "forced", json_true());
	return false;
}

static int
step_preflight(struct recovery_run *r)
{
	struct systemic sy = { 0 };
	json_t *f;
	int rc;

	if ((rc = preflight_checks(r, &sy)) != 0)
		return rc == STEP_FAILED ? step_finish(r, STEP_PREFLIGHT,
		    true) : rc;
	f = json_pack("{s:o, s:o}", "vfs", recovery_list_json(&r->vfs),
	    "wedged", recovery_list_json(&r->wedged));
	if (r->resumed)
		json_object_set_new(f, "resumed", json_true());
	if (systemic_stops(r, &sy, f)) {
		step_status(r, "failed", f);
		return step_finish(r, STEP_PREFLIGHT, true);
	}
	step_status(r, "done", f);
	if (!r->cf->dry_run && !r->resumed && (r->j = recovery_journal_new(
	    r->card, &r->vfs, &r->wedged)) == NULL)
		return step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM, NULL);
	return step_finish(r, STEP_PREFLIGHT, false);
}

/* The drain file, under the lock step_load() took. */
static int
load_drains(struct recovery_run *r)
{
	if (drains_load(&r->view.store, &r->view.drains) == 0)
		return 0;
	if (r->view.store.nomem)
		return step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM,
		    r->view.store.why);
	return step_fail(r, EX_UNAVAILABLE, RECOVERRUN_EV_UNAVAILABLE,
	    r->view.store.why);
}

/*
 * clear: the suspicions of the card's VFs end too (SPEC.md 7.3), saved
 * before the drains are lifted, each audited unsuspect (cause clear).
 * 0, or step_fail()'s code.
 */
static int
clear_suspects(struct recovery_run *r)
{
	struct suspects *d = &r->view.suspects, gone = { 0 };
	const struct suspect *sp;
	struct atomic_result res;
	bool changed = false, added;
	size_t i;
	int rc = 0;

	if (suspects_load(&r->view.store, d) < 0)
		return step_fail(r, EX_UNAVAILABLE, RECOVERRUN_EV_UNAVAILABLE,
		    r->view.store.why);
	for (i = 0; i < r->vfs.n && rc == 0; i++) {
		if ((sp = suspects_find(d, r->vfs.v[i])) == NULL)
			continue;
		added = false;
		if (suspects_add(&gone, sp, &added) < 0)
			rc = step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM, NULL);
		else
			suspects_remove(d, r->vfs.v[i], &changed);
	}
	if (rc == 0 && changed && suspects_save(&r->view.store, d, &res) < 0)
		rc = step_fail(r, EX_IOERR, RECOVERRUN_EV_SAVE,
		    r->view.store.why);
	for (i = 0; rc == 0 && i < gone.n; i++)
		(void)suspect_audit_end(r->view.store.dir, &gone.v[i],
		    "clear");
	suspects_release(&gone);
	return rc;
}

/*
 * drain: the card's VFs into the drain file, the health records left
 * alone (SPEC.md 6.3). clear: their records cleared (*dropped, what they
 * held), saved, then the drains lifted: a crash between the two saves
 * leaves the card drained, and the rerun clears again.
 */
static int
edit_files(struct recovery_run *r, enum recovery_step step,
    struct health *h, struct drains *d, json_t **dropped)
{
	struct atomic_result res;
	bool hchanged = false, dchanged = false;
	int rc;

	if ((step == STEP_CLEAR && card_clear(h, &r->vfs, &hchanged,
	    dropped) < 0) || card_drains(d, &r->vfs, step == STEP_DRAIN,
	    &dchanged) < 0)
		return step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM, NULL);
	if (step == STEP_CLEAR && (hchanged || h->requarantined) &&
	    health_save(&r->view.store, h, &res) < 0)
		return step_fail(r, EX_IOERR, RECOVERRUN_EV_SAVE,
		    r->view.store.why);
	if (step == STEP_CLEAR && (rc = clear_suspects(r)) != 0)
		return rc;
	if (dchanged && drains_save(&r->view.store, d, &res) < 0)
		return step_fail(r, EX_IOERR, RECOVERRUN_EV_SAVE,
		    r->view.store.why);
	return 0;
}

/* drain and clear: edit the store under its exclusive lock, audited. */
static int
step_edit(struct recovery_run *r, enum recovery_step step)
{
	json_t *dropped = NULL, *extra = NULL;
	int rc;

	if ((rc = step_load(r, true, false)) != 0)
		return rc;
	if ((rc = load_drains(r)) == 0)
		rc = edit_files(r, step, &r->view.health, &r->view.drains,
		    &dropped);
	if (rc == 0) {
		step_status(r, "done", json_pack("{s:o}", "vfs",
		    recovery_list_json(&r->vfs)));
		if (dropped != NULL)
			extra = json_pack("{s:O}", "dropped", dropped);
		rc = step_audit(r, step, extra, true);
		json_decref(extra);
	}
	hostview_release(&r->view);
	json_decref(dropped);
	return rc != 0 ? rc : step_finish(r, step, true);
}

/* The busy VFs of the card now (a new array), or NULL: not provable. */
static int
busy_now(struct recovery_run *r, json_t **busy)
{
	int rc;

	*busy = NULL;
	if ((rc = step_load(r, false, true)) != 0)
		return rc;
	store_unlock(&r->view.store);
	if (card_busy(r->conf->sysfs_root, r->cf->proc_root, &r->view,
	    &r->vfs, busy) < 0)
		(void)step_fail(r, 0, RECOVERRUN_EV_IDLE, strerror(errno));
	hostview_release(&r->view);
	return 0;
}

static int
step_idle(struct recovery_run *r)
{
	long long end = io_now_ms() + (long long)r->cf->wait * 1000;
	json_t *busy;
	int rc;

	for (;;) {
		if ((rc = busy_now(r, &busy)) != 0)
			return rc;
		if (busy == NULL) {
			step_status(r, "failed", json_pack("{s:s}", "error",
			    "cannot scan for VFIO holders"));
			break;
		}
		if (json_array_size(busy) == 0) {
			json_decref(busy);
			step_status(r, "done", NULL);
			break;
		}
		if (sig_stop || io_now_ms() >= end) {
			step_status(r, "failed", json_pack("{s:o}", "busy",
			    busy));
			break;
		}
		json_decref(busy);
		(void)poll(NULL, 0, 1000);
	}
	return step_finish(r, STEP_IDLE, false);
}

/* The card named in host.lock by its holder (for the waiters' messages
 * only): a valid address, else "". */
static void
host_holder(struct recovery_run *r, char *buf, size_t len)
{
	int fd = openat(r->rdir_fd, "host.lock", O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	if (!vfaddr_valid(buf))
		buf[0] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * The host's quiesce-restore window (quiesce and restore act on the
 * whole host, DCGM): host.lock, held from quiesce to restore, names its
 * card. Another card's run waits for it up to --wait and reports the
 * wait (RECOVERRUN_EV_HOST_WAIT). 0, or an exit code (the card stays
 * drained).
 */
static int
host_lock(struct recovery_run *r)
{
	char holder[VF_ADDR_LEN + 1] = "";

	if (r->host_fd >= 0)
		return 0;
	if ((r->host_fd = lock_acquire_at(r->rdir_fd, "host.lock", true,
	    0)) < 0 && errno == EWOULDBLOCK) {
		host_holder(r, holder, sizeof(holder));
		step_emit(r, json_pack("{s:s, s:s}", "card", r->card,
		    "waiting_for", holder));
		(void)step_tell(r, 0, (struct recoverrun_event){
		    .kind = RECOVERRUN_EV_HOST_WAIT, .path = holder });
		r->host_fd = lock_acquire_at(r->rdir_fd, "host.lock", true,
		    r->cf->wait);
	}
	if (r->host_fd < 0)
		return step_fail(r, errno == EWOULDBLOCK ? EX_TEMPFAIL :
		    errno == EACCES || errno == EPERM ? EX_NOPERM : EX_IOERR,
		    RECOVERRUN_EV_HOST_BUSY, strerror(errno));
	/* The name is for the waiters' messages only. */
	if (ftruncate(r->host_fd, 0) == 0 && pwrite(r->host_fd, r->card,
	    strlen(r->card), 0) < 0)
		errno = 0;
	return 0;
}

static void
host_unlock(struct recovery_run *r)
{
	lock_release(r->host_fd);
	r->host_fd = -1;
}

static int
step_quiesce(struct recovery_run *r)
{
	json_t *held;
	int rc;

	if ((rc = host_lock(r)) != 0 ||
	    (rc = step_start(r, STEP_QUIESCE)) != 0)
		return rc;
	step_status(r, "done", NULL);
	if (r->conf->quiesce_command[0] != '\0' && !step_command(r, "quiesce",
	    r->conf->quiesce_command, NULL, NULL))
		r->status_word = "failed";
	else if ((rc = card_wait_unheld(r->cf->proc_root,
	    r->conf->settle_timeout, &held)) != 0) {
		r->status_word = "failed";
		json_object_set_new(r->fields, rc > 0 ? "holders" : "error",
		    rc > 0 ? held : json_string("cannot scan for /dev/nvidia "
		    "holders"));
	}
	return step_finish(r, STEP_QUIESCE, false);
}

/* After sriov-manage: true when sysfs agrees (*have: VFs ready). */
static bool
sriov_settled(struct recovery_run *r, bool dis, size_t *have)
{
	const char *root = r->conf->sysfs_root;

	if (dis)
		return card_wait_disabled(root, r->card,
		    r->conf->settle_timeout);
	return card_wait_enabled(root, r->card, r->vfs.n,
	    r->conf->settle_timeout, have);
}

/* disable and enable: sriov-manage, then sysfs must agree. */
static int
step_switch(struct recovery_run *r, enum recovery_step step)
{
	bool dis = step == STEP_DISABLE;
	size_t have = 0;
	int rc;

	if ((rc = step_start(r, step)) != 0)
		return rc;
	step_status(r, "done", NULL);
	if (!step_sriov(r, recovery_step_name(step), dis ? "-d" : "-e"))
		r->status_word = "failed";
	else if (!sriov_settled(r, dis, &have)) {
		r->status_word = "failed";
		json_object_set_new(r->fields, "error", json_string(dis ?
		    "VFs still present after sriov-manage -d" :
		    "VFs missing after sriov-manage -e"));
		if (!dis)
			json_object_set_new(r->fields, "ready",
			    json_integer((json_int_t)have));
	}
	if (!dis)
		json_object_set_new(r->fields, "expected",
		    json_integer((json_int_t)r->vfs.n));
	return step_finish(r, step, false);
}

static int
restore_command(struct recovery_run *r)
{
	step_status(r, "done", NULL);
	if (r->conf->restore_command[0] == '\0')
		r->status_word = "skipped";
	else if (!step_command(r, "restore", r->conf->restore_command, NULL,
	    NULL))
		r->status_word = "failed";
	return step_finish(r, STEP_RESTORE, false);
}

/* restore, in the host's window (a resumed run may wait for it). */
static int
step_restore(struct recovery_run *r)
{
	int rc;

	if ((rc = host_lock(r)) != 0)
		return rc;
	rc = restore_command(r);
	host_unlock(r);
	return rc;
}

static int
step_verify(struct recovery_run *r)
{
	size_t i;

	step_status(r, "done", json_pack("{s:o}", "vfs",
	    recovery_list_json(&r->wedged)));
	if (r->conf->verify_command[0] == '\0' || r->wedged.n == 0) {
		r->status_word = "skipped";
		(void)step_fail(r, 0, RECOVERRUN_EV_NO_VERIFY, NULL);
	}
	for (i = 0; strcmp(r->status_word, "done") == 0 && i < r->wedged.n;
	    i++)
		if (!step_command(r, "verify", r->conf->verify_command, NULL,
		    r->wedged.v[i])) {
			r->status_word = "failed";
			json_object_set_new(r->fields, "vf",
			    json_string(r->wedged.v[i]));
		}
	return step_finish(r, STEP_VERIFY, false);
}

static int
run_step(struct recovery_run *r, enum recovery_step step)
{
	switch (step) {
	case STEP_PREFLIGHT: return step_preflight(r);
	case STEP_DRAIN: return step_edit(r, STEP_DRAIN);
	case STEP_IDLE: return step_idle(r);
	case STEP_QUIESCE: return step_quiesce(r);
	case STEP_DISABLE: return step_switch(r, STEP_DISABLE);
	case STEP_ENABLE: return step_switch(r, STEP_ENABLE);
	case STEP_RESTORE: return step_restore(r);
	case STEP_VERIFY: return step_verify(r);
	case STEP_CLEAR: return step_edit(r, STEP_CLEAR);
	default: return EX_SOFTWARE;
	}
}

/* --- the run ------------------------------------------------------------- */

/* The final line and the exit code of a run that got this far. */
static int
conclude(struct recovery_run *r, int rc, enum recovery_step last)
{
	if (rc == 0 && !sig_stop) {
		if (renameat(r->rdir_fd, r->jname, r->rdir_fd,
		    r->lastname) < 0 || fsync(r->rdir_fd) < 0)
			return step_tell(r, EX_IOERR,
			    (struct recoverrun_event){
			    .kind = RECOVERRUN_EV_MOVE, .path = r->jpath,
			    .error = strerror(errno) });
		step_metrics(r);
		step_emit(r, json_pack("{s:s, s:s}", "card", r->card, "result",
		    "recovered"));
		return 0;
	}
	if (sig_stop && (rc == 0 || rc == STEP_FAILED))
		return step_tell(r, EX_TEMPFAIL, (struct recoverrun_event){
		    .kind = RECOVERRUN_EV_STOPPED,
		    .step = recovery_step_name(last) });
	if (rc == STEP_FAILED)
		step_emit(r, last == STEP_IDLE ? json_pack("{s:s, s:s}",
		    "card", r->card, "result", "busy") : json_pack(
		    "{s:s, s:s, s:s}", "card", r->card, "result", "failed",
		    "step", recovery_step_name(last)));
	return rc;
}

/* The steps after preflight; restore whenever quiesce was started. */
static int
cycle(struct recovery_run *r)
{
	enum recovery_step s, start = STEP_DRAIN, last = STEP_PREFLIGHT;
	bool restored = false;
	int rc = 0, rc2;

	if (r->resumed && recovery_needs_restore(r->j)) {
		last = STEP_RESTORE;
		if ((rc = step_restore(r)) != 0)
			return conclude(r, rc, last);
	}
	if (r->resumed)
		start = recovery_resume_point(r->j);
	for (s = STEP_DRAIN; s <= STEP_CLEAR && rc == 0 && !sig_stop; s++) {
		if (s >= STEP_QUIESCE && s < start)
			continue;
		last = s;
		restored = restored || s == STEP_RESTORE;
		rc = run_step(r, s);
	}
	if (!restored && recovery_needs_restore(r->j)) {
		rc2 = step_restore(r);
		if (rc == 0 || (rc == STEP_FAILED && rc2 > STEP_FAILED))
			rc = rc2;
	}
	return conclude(r, rc, last);
}

/* The journal directory and the card's lock. */
static int
lock_card(struct recovery_run *r)
{
	char why[PATH_MAX + 256];

	if (access(r->view.store.dir, F_OK) < 0)
		return step_fail(r, EX_UNAVAILABLE, RECOVERRUN_EV_UNAVAILABLE,
		    "the state directory is missing; create it with "
		    "vfstore init");
	if ((r->rdir_fd = recovery_dir_open(r->view.store.dir, true, why,
	    sizeof(why))) < 0)
		return step_tell(r, EX_IOERR, (struct recoverrun_event){
		    .kind = RECOVERRUN_EV_DIR, .path = r->rdir,
		    .error = why[0] != '\0' ? why : strerror(errno) });
	if ((r->lock_fd = lock_acquire_at(r->rdir_fd, r->lockname, true,
	    0)) < 0)
		return errno == EWOULDBLOCK ? step_fail(r, EX_TEMPFAIL,
		    RECOVERRUN_EV_CARD_BUSY, strerror(errno)) : step_fail(r,
		    errno == EACCES || errno == EPERM ? EX_NOPERM : EX_IOERR,
		    RECOVERRUN_EV_CARD_LOCK, strerror(errno));
	return 0;
}

/* Takes the card's lock, loads a journal, runs. */
static int
recover(struct recovery_run *r)
{
	char why[PATH_MAX + 128];
	int rc;

	if ((rc = lock_card(r)) != 0)
		return rc;
	rc = recovery_journal_load(r->rdir_fd, r->jname, r->card, &r->j, why,
	    sizeof(why));
	if (rc < 0)
		return step_fail(r, errno == EINVAL ? EX_DATAERR : EX_IOERR,
		    RECOVERRUN_EV_LOAD, errno == EINVAL ? why :
		    strerror(errno));
	if (rc == 1 && (r->resumed = true) &&
	    (recovery_journal_list(r->j, "vfs", &r->vfs) < 0 ||
	    recovery_journal_list(r->j, "wedged", &r->wedged) < 0))
		return step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM, NULL);
	if ((rc = step_preflight(r)) != 0)
		return conclude(r, rc, STEP_PREFLIGHT);
	return cycle(r);
}

/* The plan, what is busy now; nothing changes. */
static int
dry_run(struct recovery_run *r)
{
	enum recovery_step step;
	json_t *busy = NULL;
	int rc;

	if ((rc = step_preflight(r)) != 0)
		return conclude(r, rc, STEP_PREFLIGHT);
	if ((rc = busy_now(r, &busy)) != 0)
		return rc;
	for (step = STEP_DRAIN; step <= STEP_CLEAR; step++) {
		step_status(r, "planned", recovery_plan_fields(step, r->conf,
		    r->card, &r->vfs, &r->wedged, busy));
		(void)step_finish(r, step, true);
	}
	rc = busy == NULL || json_array_size(busy) > 0 ? STEP_FAILED : 0;
	step_emit(r, json_pack("{s:s, s:s}", "card", r->card, "result",
	    rc == 0 ? "dry_run" : "busy"));
	json_decref(busy);
	return rc;
}

int
recoverrun_run(const struct recoverrun_conf *conf)
{
	struct recovery_run r = { .cf = conf, .conf = conf->conf,
	    .card = conf->card, .rdir_fd = -1, .lock_fd = -1,
	    .host_fd = -1 };
	int rc;

	if ((rc = paths(&r)) == 0)
		rc = conf->dry_run ? dry_run(&r) : recover(&r);
	json_decref(r.j);
	json_decref(r.fields);
	free(r.vfs.v);
	free(r.wedged.v);
	lock_release(r.host_fd);
	lock_release(r.lock_fd);
	if (r.rdir_fd >= 0)
		close(r.rdir_fd);
	return rc;
}
