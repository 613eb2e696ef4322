/*
 * claimlife.c - the life of one claim in the ledger (claimlife.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adopt.h"
#include "auditlog.h"
#include "claimlife.h"
#include "sysfs.h"
#include "timefmt.h"
#include "utf8.h"

int
claimlife_new(struct claims *c, struct claim *cl, char *now, size_t len)
{
	struct timespec ts;

	timefmt_now(&ts);
	if (timefmt_format(&ts, now, len) == -1) {
		errno = EOVERFLOW;
		return -1;
	}
	cl->claimed_at = now;
	return claims_add(c, cl);
}

int
claimlife_configure(const char *sysfs_root, const char *vf, unsigned id,
    bool *already)
{
	unsigned cur;

	*already = sysfs_vgpu_type(sysfs_root, vf, &cur) == 0 && cur == id;
	if (*already)
		return 0;
	return sysfs_set_vgpu_type(sysfs_root, vf, id);
}

/* Sets *slot to a copy of v when v is given and differs. 1 if set, 0 if
 * not, -1/ENOMEM. */
static int
update_str(char **slot, const char *v)
{
	char *copy;

	if (v == NULL || (*slot != NULL && strcmp(*slot, v) == 0))
		return 0;
	if ((copy = strdup(v)) == NULL)
		return -1;
	free(*slot);
	*slot = copy;
	return 1;
}

int
claimlife_complete(struct claim *cl, const char *control_socket,
    const char *vsock, const char *app_log)
{
	int r[3];

	r[0] = update_str(&cl->control_socket, control_socket);
	r[1] = update_str(&cl->vsock, vsock);
	r[2] = update_str(&cl->app_log, app_log);
	if (r[0] < 0 || r[1] < 0 || r[2] < 0) {
		errno = ENOMEM;
		return -1;
	}
	return r[0] + r[1] + r[2];
}

int
claimlife_adopt(struct claims *c, const struct placement_vf *v,
    struct claim *cl, char *now, size_t len)
{
	char type_id[16];
	const struct claim *added;

	(void)snprintf(type_id, sizeof(type_id), "%u", v->vi->current_type);
	memcpy(cl->vf, v->vi->addr, sizeof(cl->vf));
	cl->profile = (char *)adopt_profile(v, cl->profile);
	cl->type_id = type_id;
	if (claimlife_new(c, cl, now, len) == -1) {
		cl->type_id = NULL;
		return -1;
	}
	/* type_id is this function's: cl keeps the ledger's copy. */
	added = claims_find_vf(c, cl->vf);
	cl->type_id = added != NULL ? added->type_id : NULL;
	return 0;
}

int
claimlife_deconfigure(const char *sysfs_root, const struct vfio_scan *held,
    const char *vf, long *pid, bool *wrote)
{
	unsigned cur;

	*wrote = false;
	*pid = 0;
	if (sysfs_vgpu_type(sysfs_root, vf, &cur) == 0 && cur == 0)
		return 0;
	if ((*pid = vfio_scan_holder(held, sysfs_root, vf)) != 0) {
		errno = EBUSY;
		return -1;
	}
	if (sysfs_set_vgpu_type(sysfs_root, vf, 0) == -1)
		return -1;
	*wrote = true;
	return 0;
}

int
claimlife_deconfigure_scan(const char *sysfs_root, const char *proc_root,
    const char *vf, long *pid, bool *wrote)
{
	struct vfio_scan held;
	unsigned cur;
	int rc, saved;

	*wrote = false;
	*pid = 0;
	if (sysfs_vgpu_type(sysfs_root, vf, &cur) == 0 && cur == 0)
		return 0;
	if (vfio_scan_load(&held, proc_root) == -1) {
		*pid = -1;
		return -1;
	}
	rc = claimlife_deconfigure(sysfs_root, &held, vf, pid, wrote);
	saved = errno;
	vfio_scan_release(&held);
	errno = saved;
	return rc;
}

int
claimlife_audit(const char *gpu_dir, const struct claimlife_end *end)
{
	struct audit_event ev = { .command = end->command, .vf = end->vf,
	    .reason = end->reason };
	json_t *extra;

	if (!utf8_valid_str(end->instance_id)) {
		errno = EILSEQ;
		return -1;
	}
	extra = json_pack("{s:s, s:s*, s:s*, s:b}", "instance_id",
	    end->instance_id, "liveness", end->liveness, "domain",
	    end->domain, "deconfigured", end->deconfigured);
	return auditlog_append_extra(gpu_dir, &ev, extra);
}

int
claimlife_release_all(struct store *s, struct claims *c,
    struct claimlife_end *ends, size_t n, struct atomic_result *res)
{
	struct suspicion_case *sc = calloc(n > 0 ? n : 1, sizeof(*sc));
	size_t i;
	int rc = 0, err;

	if (sc == NULL)
		return -1;
	for (i = 0; i < n && rc == 0; i++)
		if (ends[i].how != NULL && suspicion_case_init(&sc[i],
		    claims_find_instance(c, ends[i].instance_id)) < 0)
			rc = -1;
	if (rc == 0) {
		for (i = 0; i < n; i++)
			claims_remove_instance(c, ends[i].instance_id);
		rc = claims_save(s, c, res);
	}
	err = errno;
	for (i = 0; i < n && rc == 0; i++) {
		ends[i].audit_err = claimlife_audit(s->dir, &ends[i]) == -1 ?
		    errno : 0;
		if (ends[i].how != NULL && ends[i].verdict != NULL)
			suspicion_decide(s, &sc[i], ends[i].how,
			    ends[i].verdict);
	}
	for (i = 0; i < n; i++)
		suspicion_case_release(&sc[i]);
	free(sc);
	errno = err;
	return rc;
}

int
claimlife_release(struct store *s, struct claims *c,
    const struct claimlife_end *end, struct atomic_result *res,
    int *audit_err)
{
	struct claimlife_end one = *end;
	int rc = claimlife_release_all(s, c, &one, 1, res);

	*audit_err = one.audit_err;
	return rc;
}
