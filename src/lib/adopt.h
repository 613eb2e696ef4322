/*
 * adopt.h - when the claim of a VF a running VM already holds may be
 * recorded (SPEC.md 6.4 vfpick --adopt, 6.6 libvirt-hook's reconnect
 * begin): a host that ran VMs before vfsentinel, or a claim lost while
 * its VM kept running. Adopting records a claim and never touches the
 * VF, so it is refused wherever a claim made anew would be wrong: the VF
 * is claimed, quarantined or drained, has no vGPU type configured, or is
 * configured with a type other than the profile's. That no process holds
 * the VF's VFIO device is no refusal (the VM may still be starting), but
 * worth a warning.
 *
 * Nothing here prints or exits; the callers log and choose exit codes.
 */
#ifndef VFS_ADOPT_H
#define VFS_ADOPT_H

#include <stddef.h>

#include "placement.h"

enum adopt_verdict {
	ADOPT_OK = 0,
	ADOPT_CLAIMED,			/* claimed by another instance */
	ADOPT_QUARANTINED,
	ADOPT_DRAINED,
	ADOPT_UNCONFIGURED,		/* current_vgpu_type is 0 */
	ADOPT_OTHER_TYPE,		/* not the profile's type */
};

/*
 * Whether v may be adopted for profile (NULL or "": whatever type the VF
 * holds). ADOPT_OK, or why not, with one sentence naming the VF in msg
 * (truncated to len).
 */
enum adopt_verdict adopt_check(const struct placement_vf *v,
    const char *profile, char *msg, size_t len);

/*
 * The profile an adopted claim records: profile when given, else the
 * name under which v offers the type it holds; NULL when it offers none.
 * Borrowed from profile or from v's inventory.
 */
const char *adopt_profile(const struct placement_vf *v, const char *profile);

/*
 * Looks for the process holding vf's VFIO device. NULL when one does (its
 * pid in *pid), else a warning sentence (static storage) for the adopted
 * claim: none found (*pid 0), or /proc unreadable (*pid -1, errno set).
 */
const char *adopt_holder(const char *sysfs_root, const char *proc_root,
    const char *vf, long *pid);

#endif
