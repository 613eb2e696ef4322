/*
 * deconfigure.c - `vfstore deconfigure --vf VF` (SPEC.md 4.2): the dirty
 * VF a crashed launcher left (a vGPU type written, no claim), under the
 * exclusive lock so that no vfpick claims it meanwhile (the lock, the
 * change and the refusals are claimop.c).
 */
#include "claimop.h"
#include "log.h"
#include "sysfs.h"

#include "vfstore.h"

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
