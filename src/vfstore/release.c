/*
 * release.c - `vfstore release --instance ID`: the instance's claim
 * removed (its VF deconfigured with --deconfigure), the VF judged for a
 * suspicion by how the instance ended (SPEC.md 4.2, 7.3; the lock, the
 * change and the refusals are claimop.c).
 */
#include <string.h>

#include "claimop.h"
#include "cli.h"
#include "io.h"
#include "log.h"
#include "suspect.h"
#include "suspicion.h"

#include "vfstore.h"

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

/* The released claim's console log was refused (SPEC.md 8.3). */
static void
console_refused(const struct claimop *r, const struct suspicion_verdict *v)
{
	if (v->console_err != 0)
		log_msg(LVL_WARN, "console log refused: not read at release",
		    "{s:s, s:s, s:s}", "vf", r->vf, "path", v->console_path,
		    "error", io_strerror(v->console_err));
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
	console_refused(&r, &v);
	verdict_failed(c, &r, &v);
	return emit(json_pack("{s:s, s:s, s:b, s:b, s:s, s:b}",
	    "instance_id", c->a.instance, "vf_address", r.vf, "released", 1,
	    "deconfigured", c->a.deconfigure, "ended", c->a.ended,
	    "suspect", v.suspect));
}
