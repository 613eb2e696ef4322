/*
 * claims.c - the claims ledger's commands: claims lists it, release
 * removes an instance's claim, deconfigure resets a VF no claim holds
 * (SPEC.md 4.2; the logic is claimrelease.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "claimrelease.h"
#include "suspect.h"
#include "claims.h"
#include "log.h"
#include "store.h"
#include "sysfs.h"

#include "vfstore.h"

static bool
given(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/*
 * What sentinel-poll can use of a claim (SPEC 7.1): its agent endpoint,
 * its console log, both, or none. A claim without the VMM's control
 * socket is never polled (its liveness cannot be told): none.
 */
static const char *
sentinel_sources(const struct claim *cl)
{
	bool agent = given(cl->vsock), console = given(cl->app_log);

	if (!given(cl->control_socket))
		return "none";
	if (agent && console)
		return "agent,console";
	return agent ? "agent" : console ? "console" : "none";
}

/* A claim's line: the ledger's fields and sentinel_sources. */
static json_t *
claim_line(const struct claim *cl)
{
	json_t *o = claim_json(cl);

	if (o != NULL && json_object_set_new(o, "sentinel_sources",
	    json_string(sentinel_sources(cl))) == -1) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

int
cmd_claims(struct ctx *c)
{
	struct claims cl;
	size_t i;
	int rc;

	if ((rc = ctx_open_claims(c, false, &cl)) != 0)
		return rc;
	store_unlock(&c->s);
	for (i = 0; i < cl.n && rc == 0; i++)
		rc = emit(claim_line(&cl.v[i]));
	claims_release(&cl);
	return rc;
}

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
static int
claimop_locked(struct ctx *c, bool release, struct claimop *r,
    struct suspicion_verdict *v)
{
	char source[STORE_STRING_MAX + 16];
	struct suspicion_how how = { .ended = c->a.ended, .source = source,
	    .window = c->conf.suspect_window,
	    .on_unknown = c->conf.suspect_on_unknown,
	    .threshold = c->conf.threshold };
	struct claimop_where w = { .sysfs_root = c->conf.sysfs_root,
	    .proc_root = c->a.proc_root, .reason = c->a.reason,
	    .how = &how, .verdict = v };
	struct claims cl;
	int rc;

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

/* A suspicion that could not be decided: the release stands, the
 * command exits 74 (as for a failed audit line). */
static void
verdict_failed(struct ctx *c, const struct claimop *r,
    const struct suspicion_verdict *v)
{
	if (v->err == 0)
		return;
	log_msg(LVL_ERROR, "cannot decide whether the VF is suspect",
	    "{s:s, s:s}", "vf", r->vf, "error", v->why != NULL &&
	    v->why[0] != '\0' ? v->why : strerror(v->err));
	c->audit_failed = true;
}

int
cmd_release(struct ctx *c)
{
	struct suspicion_verdict v = { 0 };
	struct claimop r;
	int rc;

	if (c->a.ended == NULL)
		c->a.ended = "unknown";
	if (!suspect_ended_valid(c->a.ended))
		cli_usage_error(&c->cli, "release: --ended takes clean, "
		    "unclean or unknown");
	if (c->a.proc_root == NULL)
		c->a.proc_root = "/";
	if ((rc = claimop_locked(c, true, &r, &v)) != 0)
		return rc;
	if (r.status == CLAIMOP_NO_CLAIM)
		return emit(json_pack("{s:s, s:b, s:s, s:b}", "instance_id",
		    c->a.instance, "released", 0, "ended", c->a.ended,
		    "suspect", 0));
	log_msg(v.suspect ? LVL_WARN : LVL_INFO, v.quarantined ?
	    "released VF claim; a second suspicion quarantined the VF" :
	    v.suspect ? "released VF claim; the VF is suspect" :
	    "released VF claim", "{s:s, s:s, s:s, s:s*}", "vf", r.vf,
	    "instance_id", c->a.instance, "ended", c->a.ended, "reason",
	    c->a.reason);
	ctx_audited(c, r.audit_err, "vf", r.vf);
	verdict_failed(c, &r, &v);
	return emit(json_pack("{s:s, s:s, s:b, s:b, s:s, s:b}",
	    "instance_id", c->a.instance, "vf_address", r.vf, "released", 1,
	    "deconfigured", c->a.deconfigure, "ended", c->a.ended,
	    "suspect", v.suspect));
}

/*
 * `deconfigure --vf VF`: the dirty VF a crashed launcher left (a vGPU
 * type written, no claim), under the exclusive lock so that no vfpick
 * claims it meanwhile.
 */
int
cmd_deconfigure(struct ctx *c)
{
	struct claimop r;
	int rc;

	if (c->a.proc_root == NULL)
		c->a.proc_root = "/";
	if (!sysfs_vf_present(c->conf.sysfs_root, c->a.vf)) {
		log_msg(LVL_ERROR, "no such VF on this host; check the address",
		    "{s:s, s:s}", "vf", c->a.vf, "sysfs_root",
		    c->conf.sysfs_root);
		return EX_DATAERR;
	}
	if ((rc = claimop_locked(c, false, &r, NULL)) != 0)
		return rc;
	log_msg(LVL_INFO, "deconfigured VF", "{s:s, s:s*}", "vf", c->a.vf,
	    "reason", c->a.reason);
	ctx_audited(c, r.audit_err, "vf", r.vf);
	return emit(json_pack("{s:s, s:b}", "vf_address", c->a.vf,
	    "deconfigured", 1));
}
