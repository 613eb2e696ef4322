/*
 * suspectcmd.c - vfstore's side of the suspect VFs (SPEC.md 7.3): the
 * loader that fails closed like the drains', and the end of suspicions
 * that `clear --vf|--card` makes, saved then audited ("unsuspect",
 * cause "clear").
 */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "suspect.h"

#include "vfstore.h"

int
suspectcmd_load(struct ctx *c, struct suspects *d)
{
	if (suspects_load(&c->s, d) == 0)
		return 0;
	return ctx_unavailable(c, "VF suspects unavailable");
}

/* Audits each suspicion of gone ended for cause; one failure noted. */
static void
audit_ends(struct ctx *c, const struct suspects *gone, const char *cause)
{
	size_t i;

	for (i = 0; i < gone->n; i++)
		ctx_audited(c, suspect_audit_end(c->s.dir, &gone->v[i],
		    cause) < 0 ? errno : 0, "vf", gone->v[i].vf);
}

int
suspectcmd_clear(struct ctx *c, struct suspects *d, const struct vf_list *l,
    bool *changed)
{
	struct suspects gone = { 0 };
	struct atomic_result res;
	const struct suspect *sp;
	bool was = false, any = false;
	size_t i;
	int rc = 0;

	for (i = 0; i < l->n && rc == 0; i++) {
		if ((sp = suspects_find(d, l->v[i])) == NULL)
			continue;
		if (suspects_add(&gone, sp, &was) < 0)
			rc = EX_OSERR;
		else
			suspects_remove(d, l->v[i], &changed[i]);
		any = true;
	}
	if (rc == 0 && any && suspects_save(&c->s, d, &res) < 0) {
		log_msg(LVL_ERROR, "cannot persist VF suspects", "{s:s, s:s}",
		    "step", res.step ? res.step : "", "error", c->s.why);
		rc = EX_IOERR;
	}
	if (rc == 0)
		audit_ends(c, &gone, "clear");
	suspects_release(&gone);
	return rc;
}
