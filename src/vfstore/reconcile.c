/*
 * reconcile.c - `vfstore reconcile`: one pass or a pass every --interval
 * of the engine (reconcileengine.c), which releases the claims of VMs
 * that are provably gone; here its lines, logs and textfile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auditlog.h"
#include "cli.h"
#include "io.h"
#include "log.h"
#include "reconcileengine.h"
#include "wait.h"

#include "vfstore.h"

/* How often the running service repeats the warning of one unclaimed
 * VF in use (SPEC 8.1); a --once run warns every time. */
#define UNCLAIMED_WARN_EVERY 300

/* A VF in use with no claim, and when it was last warned of. */
struct warned {
	char vf[VF_ADDR_LEN + 1];
	time_t at;
};

/* The counters of --metrics-file, over every pass of this run, and the
 * unclaimed VFs warned of. */
struct totals {
	unsigned long long uncertain;
	unsigned long long released;
	struct warned *w;		/* owned */
	size_t nw;
	bool repeat;			/* --interval: rate-limit warnings */
};

/* True when the warning of vf is due (and marks it given now). */
static bool
warn_due(struct totals *t, const char *vf, time_t now)
{
	struct warned *w;
	size_t i;

	for (i = 0; i < t->nw; i++)
		if (strcmp(t->w[i].vf, vf) == 0)
			break;
	if (i < t->nw && t->repeat &&
	    now - t->w[i].at < UNCLAIMED_WARN_EVERY)
		return false;
	if (i == t->nw) {
		if ((w = realloc(t->w, (t->nw + 1) * sizeof(*w))) == NULL)
			return true;	/* warned every time: no harm */
		t->w = w;
		(void)snprintf(w[t->nw++].vf, sizeof(w->vf), "%s", vf);
	}
	t->w[i].at = now;
	return true;
}

/* The pass's VFs in use with no claim: nothing watches their guests. */
static void
unclaimed_log(const struct reconcile_pass *p, struct totals *t)
{
	time_t now = time(NULL);
	size_t i;

	for (i = 0; i < p->nunclaimed; i++)
		if (warn_due(t, p->unclaimed[i].vf, now))
			log_msg(LVL_WARN, "VF in use with no claim: not "
			    "watched", "{s:s, s:I, s:s, s:s}", "vf",
			    p->unclaimed[i].vf, "pid",
			    (json_int_t)p->unclaimed[i].pid, "comm",
			    p->unclaimed[i].comm, "fix", "claim it (vfpick "
			    "--adopt), or restart libvirtd once if its qemu "
			    "hook was installed after libvirtd started");
}

/* Uncertain at warn, releases at info (audited from issue 12 on). */
static void
reconcile_log(const struct reconcile_claim *r, bool dry_run)
{
	const char *msg;
	enum log_level lvl = reconcileengine_claim_msg(r, dry_run, &msg);

	if (r->released)
		log_msg(lvl, msg, "{s:s, s:s, s:s, s:b}", "vf", r->vf,
		    "instance_id", r->instance_id, "reason", r->reason,
		    "deconfigured", r->deconfigured);
	else if (r->err != 0)
		log_msg(lvl, msg, "{s:s, s:s, s:s, s:s}", "vf", r->vf,
		    "instance_id", r->instance_id, "reason", r->reason,
		    "error", strerror(r->err));
	else
		log_msg(lvl, msg, "{s:s, s:s, s:s}", "vf", r->vf,
		    "instance_id", r->instance_id, "reason", r->reason);
	if (r->verdict.suspect)
		log_msg(LVL_WARN, r->verdict.quarantined ? "a second "
		    "suspicion quarantined the VF" : "the VF is suspect: its "
		    "VMM ended before the guest said OK", "{s:s, s:s, s:s}",
		    "vf", r->vf, "instance_id", r->instance_id, "ended",
		    r->ended);
	if (r->verdict.console_err != 0)
		log_msg(LVL_WARN, "console log refused: not read at release",
		    "{s:s, s:s, s:s, s:s}", "vf", r->vf, "instance_id",
		    r->instance_id, "path", r->verdict.console_path, "error",
		    io_strerror(r->verdict.console_err));
	if (!r->verdict.suspect && r->verdict.err != 0)
		log_msg(LVL_ERROR, "cannot decide whether the VF is suspect",
		    "{s:s, s:s}", "vf", r->vf, "error",
		    strerror(r->verdict.err));
}

/* Logs a pass that could not finish; its exit code. */
static int
reconcile_status(const struct reconcile_pass *p, const struct store *s)
{
	const char *msg = "VF claims unavailable; nothing released";
	int rc = EX_UNAVAILABLE;

	switch (p->status) {
	case RECONCILE_OK:
		return 0;
	case RECONCILE_UNAVAILABLE:
		break;
	case RECONCILE_LOCK_TIMEOUT:
		msg = "lock wait timed out; nothing released";
		rc = EX_TEMPFAIL;
		break;
	case RECONCILE_LOCK_FAILED:
		msg = "cannot take the store lock; nothing released";
		rc = EX_IOERR;
		break;
	case RECONCILE_PERSIST:
		msg = "cannot persist VF claims; nothing released";
		rc = EX_IOERR;
		break;
	case RECONCILE_NOMEM:
		log_msg(LVL_ERROR, "out of memory", NULL);
		return EX_OSERR;
	}
	log_msg(LVL_ERROR, msg, "{s:s, s:s}", "step", p->step ? p->step : "",
	    "error", s->why);
	return rc;
}

/*
 * One pass: its lines, logs and textfile. The pass's exit code; *out
 * the output's (74 when stdout failed).
 */
static int
reconcile_once(struct ctx *c, const struct reconcile_conf *conf,
    struct totals *t, int *out)
{
	struct reconcile_pass p;
	size_t i, n;
	int rc;

	(void)reconcileengine_run(conf, &p);
	rc = reconcile_status(&p, &c->s);
	unclaimed_log(&p, t);
	t->uncertain += p.uncertain;
	t->released += p.released;
	for (i = 0; i < p.n; i++) {
		reconcile_log(&p.v[i], conf->dry_run);
		if (p.v[i].audit_err != 0)
			log_msg(LVL_ERROR, "cannot write the audit log",
			    "{s:s, s:s, s:s, s:s}", "vf", p.v[i].vf,
			    "instance_id", p.v[i].instance_id, "file",
			    AUDIT_FILE, "error", strerror(p.v[i].audit_err));
		if (p.v[i].examined && *out == 0)
			*out = emit(reconcileengine_claim_json(&p.v[i],
			    conf->dry_run));
	}
	if (rc == 0 && p.audit_failed > 0)
		rc = EX_IOERR;
	n = p.nunclaimed;
	reconcileengine_pass_release(&p);
	if (c->a.metrics != NULL && reconcileengine_write_metrics(c->a.metrics,
	    t->uncertain, t->released, n) < 0)
		log_msg(LVL_WARN, "cannot write metrics file", "{s:s, s:s}",
		    "path", c->a.metrics, "error", strerror(errno));
	return rc;
}

/*
 * `reconcile`: --once (the default) exits with the pass's code;
 * --interval repeats until SIGTERM/SIGINT (0), a failed pass logged
 * and retried at the next one; stdout's failure ends either (74).
 */
int
cmd_reconcile(struct ctx *c)
{
	struct suspicion_how how = { .window = c->conf.suspect_window,
	    .on_unknown = c->conf.suspect_on_unknown,
	    .threshold = c->conf.threshold,
	    .read_max = c->conf.console_read_max,
	    .ignore_ok = !c->conf.suspect_trust_ok };	/* SPEC 8.2 */
	struct reconcile_conf conf = { .s = &c->s, .how = &how,
	    .sysfs_root = c->conf.sysfs_root,
	    .proc_root = c->a.proc_root ? c->a.proc_root : "/",
	    .grace = c->conf.reconcile_grace,
	    .lock_timeout = c->cli.lock_timeout, .dry_run = c->a.dry_run };
	struct totals t = { 0 };
	struct stop st = { .why = RUNNING };
	unsigned interval = 0;
	int rc, out = 0;

	if (c->a.once && c->a.interval != NULL)
		cli_usage_error(&c->cli, "reconcile: --once and --interval "
		    "exclude each other");
	if (c->a.interval != NULL)
		interval = cli_uint(&c->cli, "--interval", c->a.interval, 1,
		    86400);
	if (c->a.grace != NULL)
		conf.grace = cli_uint(&c->cli, "--grace", c->a.grace, 0, 86400);
	if (interval == 0) {
		rc = reconcile_once(c, &conf, &t, &out);
		free(t.w);
		return out != 0 ? out : rc;
	}
	cli_stop_signals(true);
	t.repeat = true;
	do {
		(void)reconcile_once(c, &conf, &t, &out);
		if (out != 0)
			wait_stop_set(&st, STOP_OUTPUT, 0);
	} while (out == 0 && wait_nap(&st, interval) == 0);
	free(t.w);
	if (st.why == STOP_PEER)
		log_msg(LVL_ERROR, "stdout reader went away", NULL);
	return wait_exit_code(&st);
}
