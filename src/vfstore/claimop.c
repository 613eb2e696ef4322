/*
 * claimop.c - release and deconfigure of one claim or VF under the
 * store's exclusive lock, and their refusals (claimop.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auditfields.h"
#include "claimlife.h"
#include "claimop.h"
#include "claims.h"
#include "log.h"
#include "store.h"
#include "suspicion.h"

#include "vfstore.h"

/*
 * Writes 0 to vf's current_vgpu_type unless a process holds its VFIO
 * device (claimlife.h's rule). A PROC that cannot be scanned refuses
 * too: nobody can be assumed to hold nothing. 0, or -1 with r->status
 * set.
 */
static int
reset_type(const struct ctx *c, const char *vf, struct claimop *r)
{
	bool wrote;

	if (claimlife_deconfigure_scan(c->conf.sysfs_root, c->a.proc_root,
	    vf, &r->pid, &wrote) == 0) {
		r->deconfigured = true;
		return 0;
	}
	r->err = errno;
	if (r->pid < 0) {
		r->pid = 0;
		r->status = CLAIMOP_NO_SCAN;
	} else
		r->status = r->pid != 0 ? CLAIMOP_HELD : CLAIMOP_SYSFS;
	return -1;
}

static void
result_init(struct claimop *r, const char *vf)
{
	memset(r, 0, sizeof(*r));
	r->status = CLAIMOP_DONE;
	if (vf != NULL)
		memcpy(r->vf, vf, sizeof(r->vf));
}

/* Removes --instance's claim from cl and saves it (claimlife.h), the
 * VF deconfigured first with --deconfigure. */
static void
release_claim(struct ctx *c, struct claims *cl,
    const struct suspicion_how *how, struct suspicion_verdict *v,
    struct claimop *r)
{
	struct claim *found = claims_find_instance(cl, c->a.instance);
	struct claimlife_end end = { .command = "release",
	    .instance_id = c->a.instance, .reason = c->a.reason,
	    .deconfigured = c->a.deconfigure, .how = how, .verdict = v };
	struct atomic_result res = { 0 };

	result_init(r, found != NULL ? found->vf : NULL);
	if (found == NULL) {
		r->status = CLAIMOP_NO_CLAIM;
		return;
	}
	if (c->a.deconfigure && reset_type(c, r->vf, r) < 0)
		return;
	end.vf = r->vf;
	if (claimlife_release(&c->s, cl, &end, &res, &r->audit_err) < 0) {
		r->status = CLAIMOP_PERSIST;
		r->step = res.step ? res.step : "";
	}
}

/* Resets --vf's current_vgpu_type unless a claim covers it. */
static void
deconfigure_vf(struct ctx *c, const struct claims *cl, struct claimop *r)
{
	const struct claim *found = claims_find_vf(cl, c->a.vf);

	result_init(r, c->a.vf);
	if (found != NULL) {
		r->status = CLAIMOP_CLAIMED;
		r->instance = found->instance_id;
		return;
	}
	if (reset_type(c, c->a.vf, r) == 0 &&
	    auditfields_deconfigure(c->s.dir, c->a.vf, c->a.reason) < 0)
		r->audit_err = errno;
}

/* Logs a claimop that changed nothing; its exit code (0: none to log). */
static int
refused(struct ctx *c, const struct claimop *r)
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
		release_claim(c, &cl, &how, v, r);
	else
		deconfigure_vf(c, &cl, r);
	rc = refused(c, r);		/* while r->instance is valid */
	store_unlock(&c->s);
	claims_release(&cl);
	return rc;
}
