/*
 * quarantine.c - operator quarantine and clear of VFs (quarantine.h).
 */
#include <errno.h>
#include <string.h>

#include "healthrules.h"
#include "auditfields.h"
#include "quarantine.h"

void
vfops_run(struct store *s, struct health *h, bool quarantine,
    const struct vf_list *l, const char *card, const char *reason,
    struct vfops_result *r)
{
	struct atomic_result res = { 0 };
	json_t *dropped = storeaudit_failures(h, l);
	bool changed = false;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->status = dropped == NULL ? VFOPS_NOMEM : VFOPS_DONE;
	for (i = 0; i < l->n && r->status == VFOPS_DONE; i++)
		if (quarantine && health_quarantine(h, l->v[i], &changed) < 0)
			r->status = VFOPS_NOMEM;
		else if (!quarantine)
			(void)health_clear(h, l->v[i], &changed);
	if (r->status == VFOPS_DONE && (changed || h->requarantined) &&
	    health_save(s, h, &res) < 0) {
		r->status = VFOPS_PERSIST;
		r->step = res.step ? res.step : "";
	}
	if (r->status == VFOPS_DONE && storeaudit_vfs(s->dir, quarantine ?
	    "quarantine" : "clear", card, l, reason, dropped) < 0)
		r->audit_err = errno;
	json_decref(dropped);
}

json_t *
vfops_json(const struct health *h, bool quarantine, const char *vf)
{
	if (quarantine)
		return health_record_json(health_find(h, vf));
	return json_pack("{s:s, s:b}", "vf_address", vf, "quarantined", 0);
}
