/*
 * apply.c - `vfstore apply`: the streaming engine (applyengine.c)
 * reading sentinel-poll's check lines on stdin, with this program's
 * output and logs as its callbacks (SPEC.md 4.3).
 */
#include <unistd.h>

#include "applyengine.h"
#include "auditlog.h"
#include "cli.h"
#include "log.h"

#include "vfstore.h"

/* A batch's answers go out with one write at its end (apply_flush). */
static int
apply_emit(void *arg, json_t *line)
{
	(void)arg;
	return emit_line(line, true);
}

static int
apply_flush(void *arg)
{
	(void)arg;
	return emit_flush();
}

/* Logs what the engine tells that needs no state of its own. */
static void
apply_log(const struct apply_event *ev)
{
	if (ev->kind == APPLY_EV_AVAILABLE)
		log_msg(LVL_INFO, "VF health state available again", NULL);
	else if (ev->kind == APPLY_EV_BAD_LINE)
		log_msg(LVL_WARN, "skipping bad check line", "{s:I, s:s}",
		    "line", (json_int_t)ev->lineno, "error", ev->error);
	else if (ev->kind == APPLY_EV_PERSIST)
		log_msg(LVL_ERROR, "cannot persist VF health state",
		    "{s:s, s:s}", "step", ev->step, "error", ev->error);
	else if (ev->kind == APPLY_EV_METRICS)
		log_msg(LVL_WARN, "cannot write metrics file", "{s:s, s:s}",
		    "path", ev->path, "error", ev->error);
	else if (ev->kind == APPLY_EV_PEER_GONE)
		log_msg(LVL_ERROR, "stdout reader went away", NULL);
	else if (ev->kind == APPLY_EV_READ)
		log_msg(LVL_ERROR, "read stdin failed", "{s:s}", "error",
		    ev->error);
}

/* A report's effect is logged as the upstream controller does. */
static void
apply_event(void *arg, const struct apply_event *ev)
{
	const struct ctx *c = arg;
	const struct health_report *rep = ev->rep;

	if (ev->kind == APPLY_EV_UNAVAILABLE) {
		cli_die_nomem(ev->s);
		if (!ev->repeat)
			log_msg(LVL_ERROR, "VF health state unavailable; "
			    "reports fail closed", "{s:s}", "error", ev->error);
	} else if (ev->kind == APPLY_EV_REPORT && ev->error != NULL) {
		log_msg(LVL_ERROR, ev->failure ? "failed to record vGPU VF "
		    "init failure" : "failed to clear recorded vGPU VF init "
		    "failures", "{s:s, s:s, s:s}", "vf", rep->vf,
		    "instance_id", rep->instance, "error", ev->error);
	} else if (ev->kind == APPLY_EV_REPORT) {
		report_log(rep, ev->failure, c->conf.threshold, ev->nvrm);
	} else if (ev->kind == APPLY_EV_AUDIT) {
		log_msg(LVL_ERROR, "cannot write the audit log",
		    "{s:s, s:s, s:s, s:s}", "vf", rep->vf, "instance_id",
		    rep->instance, "file", AUDIT_FILE, "error", ev->error);
	} else {
		apply_log(ev);
	}
}

int
cmd_apply(struct ctx *c)
{
	struct apply_conf conf = { .s = &c->s, .threshold = c->conf.threshold,
	    .lock_timeout = c->cli.lock_timeout, .metrics = c->a.metrics,
	    .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO, .emit = apply_emit,
	    .flush = apply_flush,
	    .event = apply_event, .arg = c };
	struct apply *ap;
	int rc;

	if ((ap = applyengine_new(&conf)) == NULL) {
		log_msg(LVL_ERROR, "out of memory", NULL);
		return EX_OSERR;
	}
	rc = applyengine_run(ap);
	applyengine_free(ap);
	return rc < 0 ? EX_IOERR : rc;
}
