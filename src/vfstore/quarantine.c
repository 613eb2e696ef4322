/*
 * quarantine.c - operator quarantine and clear of VFs (quarantine.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "healthrules.h"
#include "auditfields.h"
#include "quarantine.h"
#include "healthfile.h"

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
