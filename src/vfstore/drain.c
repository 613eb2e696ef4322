/*
 * drain.c - `vfstore drain`, and the half of it that `vfstore undrain`
 * (undrain.c) shares (SPEC.md 6.3): the drain file (src/lib/drain.c)
 * edited under the store's exclusive lock and audited. The health
 * records are never read for it nor touched, so an undrain restores
 * exactly the placement state before the drain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditfields.h"
#include "drain.h"
#include "log.h"
#include "sysfs.h"
#include "timefmt.h"

#include "vfstore.h"

/* Loads the drain file (the lock held); 0, or the logged exit status. */
int
drain_load(struct ctx *c, struct drains *d)
{
	if (drains_load(&c->s, d) == 0)
		return 0;
	return ctx_unavailable(c, "VF drains unavailable");
}

/* Drains (now, for --reason) or undrains each VF of l; changed[i]. */
static int
edit_drains(struct ctx *c, struct drains *d, const struct vf_list *l,
    bool drain, bool *changed)
{
	char at[TIMEFMT_MAX];
	struct timespec now;
	size_t i;

	timefmt_now(&now);
	if (timefmt_format(&now, at, sizeof(at)) < 0)
		return EX_SOFTWARE;
	for (i = 0; i < l->n; i++) {
		changed[i] = false;
		if (!drain)
			drains_remove(d, l->v[i], &changed[i]);
		else if (drains_add(d, l->v[i], at, c->a.reason,
		    &changed[i]) < 0)
			return EX_OSERR;
	}
	return 0;
}

/* Saves d when something changed, and audits the command. */
static int
save_audit(struct ctx *c, const struct drains *d, const struct vf_list *l,
    bool drain, bool any)
{
	struct atomic_result res;

	if (any && drains_save(&c->s, d, &res) < 0) {
		log_msg(LVL_ERROR, "cannot persist VF drains", "{s:s, s:s}",
		    "step", res.step ? res.step : "", "error", c->s.why);
		return EX_IOERR;
	}
	ctx_audited(c, auditfields_vfs(c->s.dir, drain ? "drain" : "undrain",
	    c->a.card, l, c->a.reason, NULL, any ? NULL : "unchanged") < 0 ?
	    errno : 0, c->a.vf ? "vf" : "card", c->a.vf ? c->a.vf : c->a.card);
	return 0;
}

/* The output line of vf: its drain, and what the command did to it. */
static json_t *
drain_json(const struct drains *d, const char *vf, bool changed, bool drain)
{
	const char *outcome = !changed ? "unchanged" : drain ? "drained" :
	    "undrained";
	const struct drain *dr = drains_find(d, vf);

	if (dr == NULL)
		return json_pack("{s:s, s:b, s:s}", "vf_address", vf,
		    "drained", 0, "outcome", outcome);
	return json_pack("{s:s, s:b, s:s, s:s, s:s}", "vf_address", vf,
	    "drained", 1, "drained_at", dr->drained_at, "reason", dr->reason,
	    "outcome", outcome);
}

static void
log_drain(const struct ctx *c, bool drain, bool any)
{
	const char *what = c->a.vf ? "vf" : "card";
	const char *addr = c->a.vf ? c->a.vf : c->a.card;
	const char *reason = c->a.reason ? c->a.reason : "";

	if (!any)
		log_msg(LVL_INFO, drain ? "drain changed nothing: already "
		    "drained" : "undrain changed nothing: not drained",
		    "{s:s, s:s}", what, addr, "reason", reason);
	else
		log_msg(drain ? LVL_WARN : LVL_INFO, drain ? "drained VF by "
		    "operator" : "undrained VF by operator", "{s:s, s:s}",
		    what, addr, "reason", reason);
}

/* Edits, saves and audits under the exclusive lock; *any: a change. */
static int
drain_locked(struct ctx *c, struct drains *d, const struct vf_list *l,
    bool drain, bool *changed, bool *any)
{
	size_t i;
	int rc;

	if ((rc = ctx_lock(c, true)) != 0)
		return rc;
	if ((rc = drain_load(c, d)) == 0 &&
	    (rc = edit_drains(c, d, l, drain, changed)) == 0) {
		for (i = 0; i < l->n; i++)
			*any |= changed[i];
		rc = save_audit(c, d, l, drain, *any);
	}
	store_unlock(&c->s);
	return rc;
}

int
drain_run(struct ctx *c, bool drain)
{
	struct drains d = { 0 };
	struct vf_list l;
	bool *changed = NULL, any = false;
	size_t i;
	int rc;

	if ((rc = target_vfs(c, &l)) != 0)
		return rc;
	if ((drain && (rc = target_check_present(c, "")) != 0) ||
	    (changed = calloc(l.n + 1, sizeof(*changed))) == NULL) {
		free(l.v);
		return rc != 0 ? rc : EX_OSERR;
	}
	if ((rc = drain_locked(c, &d, &l, drain, changed, &any)) == 0)
		log_drain(c, drain, any);
	for (i = 0; i < l.n && rc == 0; i++)
		rc = emit(drain_json(&d, l.v[i], changed[i], drain));
	drains_release(&d);
	free(changed);
	free(l.v);
	return rc;
}

int
cmd_drain(struct ctx *c)
{
	return drain_run(c, true);
}
