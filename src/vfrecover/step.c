/*
 * step.c - the frame of one vfrecover step (step.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include <jansson.h>

#include "auditlog.h"
#include "claims.h"
#include "healthfile.h"
#include "metrics.h"
#include "step.h"
#include "runcmd.h"

/* --- events, output, journal, audit -------------------------------------- */

/* Tells ev to the event function; returns code. */
int
step_tell(struct recovery_run *r, int code, struct recoverrun_event ev)
{
	r->cf->event(r->cf->arg, &ev);
	return code;
}

/* Tells an event of kind with only an error (or none). */
int
step_fail(struct recovery_run *r, int code, enum recoverrun_event_kind kind,
    const char *error)
{
	return step_tell(r, code, (struct recoverrun_event){ .kind = kind,
	    .error = error });
}

static int
journal_failed(struct recovery_run *r)
{
	return step_tell(r, EX_IOERR, (struct recoverrun_event){
	    .kind = RECOVERRUN_EV_JOURNAL, .path = r->jpath,
	    .error = strerror(errno) });
}

void
step_emit(struct recovery_run *r, json_t *obj)
{
	r->cf->emit(r->cf->arg, obj);
}

/* Appends the step's audit line under the store's exclusive lock. */
int
step_audit(struct recovery_run *r, enum recovery_step step,
    const json_t *fields, bool locked)
{
	struct audit_event ev = { .command = recovery_step_name(step),
	    .card = r->card, .nvfs = r->vfs.n,
	    .outcome = r->status_word, .extra = fields };
	int rc;

	ev.vfs = (const char (*)[VF_ADDR_LEN + 1])r->vfs.v;
	if (step == STEP_DRAIN)
		ev.reason = RECOVERY_DRAIN_REASON;
	if (!locked && store_lock(&r->view.store, true,
	    r->cf->lock_timeout) < 0)
		return step_fail(r, errno == EWOULDBLOCK ? EX_TEMPFAIL :
		    EX_IOERR, RECOVERRUN_EV_AUDIT_LOCK, r->view.store.why[0] ?
		    r->view.store.why : strerror(errno));
	rc = r->cf->audit(r->cf->arg, r->view.store.dir, &ev);
	if (!locked)
		store_unlock(&r->view.store);
	if (rc < 0)
		return step_tell(r, EX_IOERR, (struct recoverrun_event){
		    .kind = RECOVERRUN_EV_AUDIT, .step = ev.command,
		    .error = strerror(errno) });
	return 0;
}

/* Prints the step's line, records it in the journal, audits it. */
int
step_finish(struct recovery_run *r, enum recovery_step step, bool audited)
{
	json_t *line = json_pack("{s:s, s:s, s:s}", "card", r->card, "step",
	    recovery_step_name(step), "status", r->status_word);
	int rc = 0;

	if (line != NULL && r->fields != NULL)
		json_object_update(line, r->fields);
	step_emit(r, line);
	if (!r->cf->dry_run && r->j != NULL && (recovery_journal_set(r->j,
	    step, r->status_word) < 0 || recovery_journal_save(r->rdir_fd,
	    r->jname, r->j) < 0))
		rc = journal_failed(r);
	else if (!r->cf->dry_run && r->j != NULL)
		step_metrics(r);
	if (rc == 0 && !r->cf->dry_run && !audited)
		rc = step_audit(r, step, r->fields, false);
	json_decref(r->fields);
	r->fields = NULL;
	return rc != 0 ? rc : strcmp(r->status_word, "failed") == 0 ?
	    STEP_FAILED : 0;
}

/* Marks step started in the journal before its command runs. */
int
step_start(struct recovery_run *r, enum recovery_step step)
{
	if (recovery_journal_set(r->j, step, "started") < 0 ||
	    recovery_journal_save(r->rdir_fd, r->jname, r->j) < 0)
		return journal_failed(r);
	step_metrics(r);
	return 0;
}

void
step_metrics(struct recovery_run *r)
{
	if (r->cf->metrics == NULL ||
	    metrics_write(r->view.store.dir, r->cf->metrics) == 0 ||
	    r->metrics_warned)
		return;
	r->metrics_warned = true;
	(void)step_tell(r, 0, (struct recoverrun_event){
	    .kind = RECOVERRUN_EV_METRICS, .path = r->cf->metrics,
	    .error = strerror(errno) });
}

void
step_status(struct recovery_run *r, const char *word, json_t *fields)
{
	r->status_word = word;
	json_decref(r->fields);
	r->fields = fields != NULL ? fields : json_object();
}

/* --- commands ------------------------------------------------------------ */

/* Tells the result of a command run for step. */
static void
tell_command(struct recovery_run *r, const char *step, const char *command,
    const struct runcmd_result *res, const char *what)
{
	struct recoverrun_event ev = { .kind = RECOVERRUN_EV_COMMAND,
	    .step = step, .command = command, .result = what,
	    .output = res->output, .len = res->len, .ok = runcmd_ok(res) };

	r->cf->event(r->cf->arg, &ev);
}

/*
 * Runs a configured command for step; true when it exited 0. The output
 * goes to the event function, the result into the step's fields.
 */
bool
step_command(struct recovery_run *r, const char *step, const char *script,
    char *const args[], const char *vf)
{
	char env_vf[VF_ADDR_LEN + 32], buf[32];
	char *env[3] = { r->env_card, NULL, NULL };
	struct runcmd_result res;
	const char *what;
	bool ok;

	if (vf != NULL) {
		(void)snprintf(env_vf, sizeof(env_vf), "VFSENTINEL_VF=%s", vf);
		env[1] = env_vf;
	}
	if (runcmd_run(script, args, env, r->conf->step_timeout, &res) < 0) {
		json_object_set_new(r->fields, "error",
		    json_string(strerror(errno)));
		return false;
	}
	ok = runcmd_ok(&res);
	what = runcmd_describe(&res, buf, sizeof(buf));
	tell_command(r, step, args ? args[0] : script, &res, what);
	if (!ok)
		json_object_set_new(r->fields, "error", json_string(what));
	runcmd_release(&res);
	return ok;
}

/* sriov-manage OPT PF, without a shell's word splitting of the path. */
bool
step_sriov(struct recovery_run *r, const char *step, const char *opt)
{
	char *args[] = { (char *)r->conf->sriov_manage, (char *)opt,
	    (char *)r->card, NULL };

	return step_command(r, step, "exec \"$0\" \"$@\"", args, NULL);
}

/* --- the store ----------------------------------------------------------- */

/* Locks the store and loads the health store (and the ledger, with
 * claims) into r->view. */
int
step_load(struct recovery_run *r, bool exclusive, bool claims)
{
	struct health *h = &r->view.health;

	memset(h, 0, sizeof(*h));
	if (store_lock(&r->view.store, exclusive, r->cf->lock_timeout) < 0) {
		if (r->view.store.unavailable)
			return step_fail(r, EX_UNAVAILABLE,
			    RECOVERRUN_EV_UNAVAILABLE, r->view.store.why);
		return step_fail(r, errno == EWOULDBLOCK ? EX_TEMPFAIL :
		    errno == EACCES || errno == EPERM ? EX_NOPERM : EX_IOERR,
		    RECOVERRUN_EV_LOCK, r->view.store.why);
	}
	if (health_load(&r->view.store, h, r->conf->threshold) == 0) {
		if (!claims || claims_load(&r->view.store,
		    &r->view.claims) == 0)
			return 0;
		health_release(h);
	}
	store_unlock(&r->view.store);
	if (r->view.store.nomem)
		return step_fail(r, EX_OSERR, RECOVERRUN_EV_NOMEM,
		    r->view.store.why);
	return step_fail(r, EX_UNAVAILABLE, RECOVERRUN_EV_UNAVAILABLE,
	    r->view.store.why);
}

