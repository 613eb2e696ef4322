/*
 * report.c - vfstore's report-failure and report-success (SPEC.md 4.2),
 * the one-shot form of what `apply` does for a stream (check is
 * check.c, show show.c).
 */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "drain.h"
#include "healthrules.h"
#include "log.h"
#include "store.h"
#include "auditfields.h"
#include "healthfile.h"
#include "claims.h"

#include "vfstore.h"

/* --- report-failure, report-success ---------------------------------- */

static int
check_report_args(const struct args *a)
{
	if (!vfaddr_valid(a->vf)) {
		log_msg(LVL_ERROR, "invalid VF address", "{s:s}", "vf", a->vf);
		return EX_DATAERR;
	}
	if (strlen(a->instance) > STORE_STRING_MAX ||
	    strlen(a->assigned_at) > STORE_STRING_MAX) {
		log_msg(LVL_ERROR, "instance or assigned-at longer than 256 "
		    "bytes", NULL);
		return EX_DATAERR;
	}
	return 0;
}

/* Applies one report under the exclusive lock and saves if it changed
 * anything. */
static int
change_report(struct ctx *c, bool failure, struct health_report *rep)
{
	struct health_view v;
	struct health h;
	int rc;

	if ((rc = ctx_open_health(c, true, &h, &v)) != 0)
		return rc;
	if (failure && healthrules_report_failure(&h, rep) < 0)
		rc = EX_OSERR;
	else if (!failure)
		healthrules_report_success(&h, rep);
	if (rc == 0 && rep->changed)
		rc = ctx_save_health(c, &h, &v);
	if (rc == 0 && failure && rep->outcome == HEALTH_QUARANTINED)
		ctx_audited(c, auditfields_quarantined(c->s.dir,
		    "report-failure", &h, rep, c->conf.threshold, NULL) < 0 ?
		    errno : 0, "vf", rep->vf);
	store_unlock(&c->s);
	health_release(&h);
	healthview_release(&v);
	return rc;
}

/*
 * Runs one report. A success is first decided without any lock, as
 * upstream's fast path does: files are only ever replaced by rename, so
 * the read sees one whole version, and the routine "OK from a healthy VF"
 * neither waits for a writer nor creates or touches any file. A failure,
 * and a success that changes state, run under the exclusive lock with a
 * fresh load, and save.
 */
static int
run_report(struct ctx *c, bool failure, struct health_report *rep)
{
	struct health_view v;
	struct health h;
	bool noop;
	int rc;

	if (failure)
		return change_report(c, failure, rep);
	if ((rc = ctx_load_health(c, &h, &v)) != 0)
		return rc;
	noop = healthrules_success_noop(&h, rep);
	health_release(&h);
	healthview_release(&v);
	return noop ? 0 : change_report(c, failure, rep);
}

void
report_log(const struct health_report *rep, bool failure, unsigned threshold,
    const char *nvrm)
{
	const char *fmt = "{s:s, s:s, s:s, s:I, s:I}";

	if (failure && rep->outcome == HEALTH_QUARANTINED)
		log_msg(LVL_ERROR, "quarantined wedged vGPU VF", fmt, "vf",
		    rep->vf, "instance_id", rep->instance, "nvrm", nvrm,
		    "failures", (json_int_t)rep->failures, "threshold",
		    (json_int_t)threshold);
	else if (failure && rep->outcome == HEALTH_RECORDED)
		log_msg(LVL_WARN, "recorded vGPU VF init failure below "
		    "quarantine threshold", fmt, "vf", rep->vf, "instance_id",
		    rep->instance, "nvrm", nvrm, "failures",
		    (json_int_t)rep->failures, "threshold",
		    (json_int_t)threshold);
	else if (!failure && rep->rescinded)
		log_msg(LVL_INFO, "rescinded vGPU VF quarantine after "
		    "successful driver init from the triggering assignment",
		    "{s:s, s:s, s:I}", "vf", rep->vf, "instance_id",
		    rep->instance, "cleared", (json_int_t)rep->cleared);
	else if (!failure && rep->cleared > 0)
		log_msg(LVL_INFO, "cleared recorded vGPU VF init failures "
		    "after successful driver init", "{s:s, s:s, s:I}", "vf",
		    rep->vf, "instance_id", rep->instance, "cleared",
		    (json_int_t)rep->cleared);
}

static int
cmd_report(struct ctx *c, bool failure)
{
	struct health_report rep = { .vf = c->a.vf, .instance = c->a.instance,
	    .assigned_at = c->a.assigned_at, .outcome = HEALTH_UNCHANGED };
	int rc;

	if ((rc = check_report_args(&c->a)) != 0)
		return rc;
	if ((rc = run_report(c, failure, &rep)) != 0)
		return rc;
	report_log(&rep, failure, c->conf.threshold, "");
	return emit(failure ? healthrules_failure_json(&rep,
	    c->conf.threshold) : healthrules_success_json(&rep));
}

int
cmd_report_failure(struct ctx *c)
{
	return cmd_report(c, true);
}

int
cmd_report_success(struct ctx *c)
{
	return cmd_report(c, false);
}
