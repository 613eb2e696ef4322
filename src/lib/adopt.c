/*
 * adopt.c - the rules for adopting a running VM's VF (adopt.h): the one
 * place vfpick --adopt and libvirt-hook's reconnect take them from.
 */
#include <stdbool.h>
#include <stdio.h>

#include "adopt.h"
#include "vfio.h"

static bool
has_profile(const char *profile)
{
	return profile != NULL && profile[0] != '\0';
}

enum adopt_verdict
adopt_check(const struct placement_vf *v, const char *profile, char *msg,
    size_t len)
{
	const char *vf = v->vi->addr;
	unsigned cur = v->vi->current_type;

	if (v->claim != NULL) {
		(void)snprintf(msg, len, "VF %s is claimed by %.256s", vf,
		    v->claim->instance_id);
		return ADOPT_CLAIMED;
	}
	if (v->quarantined) {
		(void)snprintf(msg, len, "VF %s is quarantined", vf);
		return ADOPT_QUARANTINED;
	}
	if (v->drained) {
		(void)snprintf(msg, len, "VF %s is drained", vf);
		return ADOPT_DRAINED;
	}
	if (cur == 0) {
		(void)snprintf(msg, len, "VF %s has no vGPU type configured: "
		    "nothing to adopt", vf);
		return ADOPT_UNCONFIGURED;
	}
	if (has_profile(profile) && placement_type_id(v->vi, profile) != cur) {
		(void)snprintf(msg, len, "VF %s is configured with vGPU type "
		    "%u, not profile '%.128s'", vf, cur, profile);
		return ADOPT_OTHER_TYPE;
	}
	return ADOPT_OK;
}

const char *
adopt_profile(const struct placement_vf *v, const char *profile)
{
	size_t i;

	if (has_profile(profile))
		return profile;
	for (i = 0; i < v->vi->ntypes; i++)
		if (v->vi->types[i].id == v->vi->current_type)
			return v->vi->types[i].name;
	return NULL;
}

const char *
adopt_holder(const char *sysfs_root, const char *proc_root, const char *vf,
    long *pid)
{
	*pid = vfio_holder(sysfs_root, proc_root, vf);
	if (*pid > 0)
		return NULL;
	if (*pid == 0)
		return "no process holds the VF's VFIO device: the VM may not "
		    "have started";
	return "cannot scan /proc for the VF's VFIO holder";
}
