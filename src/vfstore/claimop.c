/*
 * claimop.c - the half of `vfstore release` (release.c) and `vfstore
 * deconfigure` (deconfigure.c) that both share: the claims ledger
 * changed under the exclusive lock (SPEC.md 4.2; the logic is
 * claimrelease.c), and a refusal logged with its exit code.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "claimrelease.h"
#include "claims.h"
#include "log.h"
#include "store.h"

#include "vfstore.h"

/* Logs a claimop that changed nothing; its exit code (0: none to log). */
static int
claimop_refused(struct ctx *c, const struct claimop *r)
{
	switch (r->status) {
	case CLAIMOP_DONE:
	case CLAIMOP_NO_CLAIM:
		return 0;
	case CLAIMOP_CLAIMED:
		log_msg(LVL_ERROR, "VF is claimed; not deconfigured",
		    "{s:s, s:s}", "vf", r->vf, "instance_id", r->instance);
		return EXIT_NO;
	case CLAIMOP_NO_SCAN:
		log_msg(LVL_ERROR, "cannot scan for VFIO holders; not "
		    "deconfigured", "{s:s, s:s, s:s}", "vf", r->vf,
		    "proc_root", c->a.proc_root, "error", strerror(r->err));
		return r->err == ENOMEM ? EX_OSERR : EX_IOERR;
	case CLAIMOP_HELD:
		log_msg(LVL_ERROR, "VF is held open; not deconfigured",
		    "{s:s, s:I}", "vf", r->vf, "pid", (json_int_t)r->pid);
		return EXIT_NO;
	case CLAIMOP_SYSFS:
		log_msg(LVL_ERROR, "cannot reset current_vgpu_type",
		    "{s:s, s:s}", "vf", r->vf, "error", strerror(r->err));
		return EX_IOERR;
	case CLAIMOP_PERSIST:
		log_msg(LVL_ERROR, "cannot persist VF claims", "{s:s, s:s}",
		    "step", r->step, "error", c->s.why);
		return EX_IOERR;
	}
	return EX_SOFTWARE;
}

/* Runs op (release or deconfigure) on the ledger under the exclusive
 * lock; its exit code, *r the result. */
int
claimop_locked(struct ctx *c, bool release, struct claimop *r,
    struct suspicion_verdict *v)
{
	char source[STORE_STRING_MAX + 16];
	struct suspicion_how how = { .ended = c->a.ended, .source = source,
	    .window = c->conf.suspect_window,
	    .on_unknown = c->conf.suspect_on_unknown,
	    .threshold = c->conf.threshold,
	    .read_max = c->conf.console_read_max };
	struct claimop_where w = { .sysfs_root = c->conf.sysfs_root,
	    .proc_root = c->a.proc_root, .reason = c->a.reason,
	    .how = &how, .verdict = v };
	struct claims cl;
	int rc;

	how.ignore_ok = !c->conf.suspect_trust_ok;	/* SPEC 8.2 */
	/* The reporter and its evidence (SPEC.md 7.3): the operator's
	 * --reason, when given, is vfstore's evidence. */
	snprintf(source, sizeof(source), "vfstore%s%.256s",
	    c->a.reason != NULL ? ": " : "",
	    c->a.reason != NULL ? c->a.reason : "");
	if ((rc = ctx_open_claims(c, true, &cl)) != 0)
		return rc;
	if (release)
		claimrelease_release(&c->s, &cl, &w, c->a.instance,
		    c->a.deconfigure, r);
	else
		claimrelease_deconfigure(&c->s, &cl, &w, c->a.vf, r);
	rc = claimop_refused(c, r);	/* while r->instance is valid */
	store_unlock(&c->s);
	claims_release(&cl);
	return rc;
}
