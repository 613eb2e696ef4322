/*
 * quarantine.c - operator quarantine and clear of VFs: the engine
 * (quarantine.h), then `vfstore quarantine` and the half of it that
 * `vfstore clear` (clear.c) shares (vfstore.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "healthrules.h"
#include "auditfields.h"
#include "quarantine.h"
#include "healthfile.h"
#include "log.h"
#include "suspect.h"

#include "vfstore.h"

/* True when the command changes nothing for vf: quarantining a VF that
 * is quarantined (by an operator or by its failures), clearing one
 * without a record (SPEC.md 6.3). */
static bool
vf_noop(const struct health *h, bool quarantine, const char *vf)
{
	return quarantine ? health_vf_quarantined(h, vf) :
	    health_find(h, vf) == NULL;
}

/* changed[i] for each VF of l, and the changed ones in todo. */
static int
vfs_to_change(const struct health *h, bool quarantine,
    const struct vf_list *l, bool *changed, struct vf_list *todo)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		changed[i] = !vf_noop(h, quarantine, l->v[i]);
		if (changed[i] && sysfs_vf_list_add(todo, l->v[i]) < 0)
			return -1;
	}
	return 0;
}

/* Quarantines or clears the VFs of todo, and saves h if that (or its
 * load applying the threshold) changed it. */
static void
change_vfs(struct store *s, struct health *h, bool quarantine,
    const struct vf_list *todo, struct vfops_result *r)
{
	struct atomic_result res = { 0 };
	bool changed = false;
	size_t i;

	for (i = 0; i < todo->n && r->status == VFOPS_DONE; i++)
		if (quarantine && healthrules_quarantine(h, todo->v[i],
		    &changed) < 0)
			r->status = VFOPS_NOMEM;
		else if (!quarantine)
			(void)healthrules_clear(h, todo->v[i], &changed);
	if (r->status == VFOPS_DONE && (changed || h->requarantined) &&
	    health_save(s, h, &res) < 0) {
		r->status = VFOPS_PERSIST;
		r->step = res.step ? res.step : "";
	}
}

void
quarantine_run(struct store *s, struct health *h, bool quarantine,
    const struct vf_list *l, const char *card, const char *reason,
    bool *changed, struct vfops_result *r)
{
	struct vf_list todo = { 0 };
	json_t *dropped = NULL;

	memset(r, 0, sizeof(*r));
	r->status = VFOPS_DONE;
	if (vfs_to_change(h, quarantine, l, changed, &todo) < 0 ||
	    (dropped = auditfields_failures(h, &todo)) == NULL)
		r->status = VFOPS_NOMEM;
	change_vfs(s, h, quarantine, &todo, r);
	r->changed = todo.n > 0;
	if (r->status == VFOPS_DONE && auditfields_vfs(s->dir, quarantine ?
	    "quarantine" : "clear", card, l, reason, dropped,
	    r->changed ? NULL : "unchanged") < 0)
		r->audit_err = errno;
	json_decref(dropped);
	free(todo.v);
}

json_t *
quarantine_json(const struct health *h, bool quarantine, const char *vf,
    bool changed)
{
	const char *outcome = !changed ? "unchanged" : quarantine ?
	    "quarantined" : "cleared";
	json_t *o;

	if (!quarantine)
		return json_pack("{s:s, s:b, s:s}", "vf_address", vf,
		    "quarantined", 0, "outcome", outcome);
	o = health_record_json(health_find(h, vf));
	if (o != NULL && json_object_set_new(o, "outcome",
	    json_string(outcome)) < 0) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* --- the commands: quarantine, and clear's shared half ------------------ */

/* quarantine_run() on h, loaded under the exclusive lock: its exit code;
 * changed[i] per VF, *any when one changed. */
static int
run_vfops(struct ctx *c, struct health *h, bool quarantine,
    const struct vf_list *l, bool *changed, bool *any)
{
	struct vfops_result r;

	quarantine_run(&c->s, h, quarantine, l, c->a.card, c->a.reason, changed,
	    &r);
	if (r.status == VFOPS_NOMEM)
		return EX_OSERR;
	if (r.status == VFOPS_PERSIST) {
		log_msg(LVL_ERROR, "cannot persist VF health state",
		    "{s:s, s:s}", "step", r.step, "error", c->s.why);
		return EX_IOERR;
	}
	*any = r.changed;
	ctx_audited(c, r.audit_err, c->a.vf ? "vf" : "card",
	    c->a.vf ? c->a.vf : c->a.card);
	return 0;
}

int
quarantine_vfs(struct ctx *c, bool quarantine, bool *any)
{
	struct suspects sus = { 0 };
	bool *changed = NULL;
	struct vf_list l;
	struct health h;
	size_t i;
	int rc;

	if ((rc = target_vfs(c, &l)) != 0 ||
	    (rc = ctx_open_health(c, true, &h, NULL)) != 0) {
		free(l.v);
		return rc;
	}
	if (quarantine && (rc = target_check_present(c,
	    ", or quarantine it with --force")) != 0)
		l.n = 0;
	if (rc == 0 && (changed = calloc(l.n + 1, sizeof(*changed))) == NULL)
		rc = EX_OSERR;
	/* A clear ends suspicions too (SPEC.md 7.3); their file is loaded
	 * first, so one that does not load changes nothing (69). */
	if (rc == 0 && !quarantine)
		rc = suspectcmd_load(c, &sus);
	if (rc == 0)
		rc = run_vfops(c, &h, quarantine, &l, changed, any);
	if (rc == 0 && !quarantine)
		rc = suspectcmd_clear(c, &sus, &l, changed);
	for (i = 0; i < l.n && rc == 0; i++)
		*any |= changed[i];
	store_unlock(&c->s);
	suspects_release(&sus);
	for (i = 0; i < l.n && rc == 0; i++)
		rc = emit(quarantine_json(&h, quarantine, l.v[i], changed[i]));
	health_release(&h);
	free(changed);
	free(l.v);
	return rc;
}

void
quarantine_log(const struct ctx *c, enum log_level level, const char *msg)
{
	log_msg(level, msg, "{s:s, s:s}", c->a.vf ? "vf" : "card",
	    c->a.vf ? c->a.vf : c->a.card, "reason",
	    c->a.reason ? c->a.reason : "");
}

int
cmd_quarantine(struct ctx *c)
{
	bool any = false;
	int rc = quarantine_vfs(c, true, &any);

	if (rc == 0)
		quarantine_log(c, any ? LVL_WARN : LVL_INFO, any ?
		    "quarantined VF by operator" : "quarantine changed "
		    "nothing: quarantined already");
	return rc;
}
