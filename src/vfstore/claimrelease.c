/*
 * claimrelease.c - release and deconfigure of one claim or VF (claimrelease.h).
 */
#include <errno.h>
#include <string.h>

#include "claimrelease.h"
#include "auditfields.h"
#include "claimlife.h"

/*
 * Writes 0 to vf's current_vgpu_type unless a process holds its VFIO
 * device (claimlife.h's rule). A PROC that cannot be scanned refuses
 * too: nobody can be assumed to hold nothing. 0, or -1 with r->status
 * set.
 */
static int
reset_type(const struct claimop_where *w, const char *vf, struct claimop *r)
{
	bool wrote;

	if (claimlife_deconfigure_scan(w->sysfs_root, w->proc_root, vf,
	    &r->pid, &wrote) == 0) {
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

void
claimrelease_release(struct store *s, struct claims *cl,
    const struct claimop_where *w, const char *instance, bool deconfigure,
    struct claimop *r)
{
	struct claim *found = claims_find_instance(cl, instance);
	struct claimlife_end end = { .command = "release",
	    .instance_id = instance, .reason = w->reason,
	    .deconfigured = deconfigure, .how = w->how,
	    .verdict = w->verdict };
	struct atomic_result res = { 0 };

	result_init(r, found != NULL ? found->vf : NULL);
	if (found == NULL) {
		r->status = CLAIMOP_NO_CLAIM;
		return;
	}
	if (deconfigure && reset_type(w, r->vf, r) < 0)
		return;
	end.vf = r->vf;
	if (claimlife_release(s, cl, &end, &res, &r->audit_err) < 0) {
		r->status = CLAIMOP_PERSIST;
		r->step = res.step ? res.step : "";
	}
}

void
claimrelease_deconfigure(struct store *s, const struct claims *cl,
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
	    auditfields_deconfigure(s->dir, vf, w->reason) < 0)
		r->audit_err = errno;
}
