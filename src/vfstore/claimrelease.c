/*
 * claimrelease.c - release and deconfigure of one claim or VF (claimrelease.h).
 */
#include <errno.h>
#include <string.h>

#include "claimrelease.h"
#include "reconcileengine.h"
#include "auditfields.h"
#include "vfio.h"
#include "claims.h"

/*
 * Writes 0 to vf's current_vgpu_type unless a process holds its VFIO
 * device. A PROC that cannot be scanned refuses too: nobody can be
 * assumed to hold nothing. 0, or -1 with r->status set.
 */
static int
reset_type(const struct claimop_where *w, const char *vf, struct claimop *r)
{
	struct vfio_scan held;
	int rc = 0;

	if (vfio_scan_load(&held, w->proc_root) < 0) {
		r->status = CLAIMOP_NO_SCAN;
		r->err = errno;
		return -1;
	}
	if (reconcile_deconfigure(w->sysfs_root, &held, vf, &r->pid) < 0) {
		r->status = r->pid != 0 ? CLAIMOP_HELD : CLAIMOP_SYSFS;
		r->err = errno;
		rc = -1;
	}
	vfio_scan_release(&held);
	r->deconfigured = rc == 0;
	return rc;
}

static void
result_init(struct claimop *r, const char *vf)
{
	memset(r, 0, sizeof(*r));
	r->status = CLAIMOP_DONE;
	if (vf != NULL)
		memcpy(r->vf, vf, sizeof(r->vf));
}

void
claimop_release(struct store *s, struct claims *cl,
    const struct claimop_where *w, const char *instance, bool deconfigure,
    struct claimop *r)
{
	struct claim *found = claims_find_instance(cl, instance);
	struct atomic_result res = { 0 };

	result_init(r, found != NULL ? found->vf : NULL);
	if (found == NULL) {
		r->status = CLAIMOP_NO_CLAIM;
		return;
	}
	if (deconfigure && reset_type(w, r->vf, r) < 0)
		return;
	claims_remove_instance(cl, instance);
	if (claims_save(s, cl, &res) < 0) {
		r->status = CLAIMOP_PERSIST;
		r->step = res.step ? res.step : "";
		return;
	}
	if (storeaudit_release(s->dir, "release", r->vf, instance, NULL,
	    w->reason, deconfigure) < 0)
		r->audit_err = errno;
}

void
claimop_deconfigure(struct store *s, const struct claims *cl,
    const struct claimop_where *w, const char *vf, struct claimop *r)
{
	const struct claim *found = claims_find_vf(cl, vf);

	result_init(r, vf);
	if (found != NULL) {
		r->status = CLAIMOP_CLAIMED;
		r->instance = found->instance_id;
		return;
	}
	if (reset_type(w, vf, r) == 0 &&
	    storeaudit_deconfigure(s->dir, vf, w->reason) < 0)
		r->audit_err = errno;
}
