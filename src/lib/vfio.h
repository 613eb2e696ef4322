/*
 * vfio.h - who holds a VF's VFIO device open (vfstore release
 * --deconfigure and deconfigure must not reset the vGPU type under a
 * running VM; vfstore reconcile keeps the claim of a VF a process holds).
 *
 * A VF's device is its IOMMU group, /dev/vfio/GROUP (GROUP: the basename
 * of the VF's iommu_group link), or its iommufd cdev,
 * /dev/vfio/devices/vfioN (N listed in the VF's vfio-dev/). A holder has
 * a link under PROC/PID/fd/ whose open file is one of them. It is
 * matched by the device numbers (stat(2) of the fd link, which reaches
 * the file wherever its path: a VMM in a chroot shows
 * /JAIL/dev/vfio/N) against those sysfs gives: the group's
 * SYSFS/sys/class/vfio/GROUP/dev, the cdev's vfio-dev/vfioN/dev
 * ("MAJ:MIN"). A link whose target cannot be stat'ed (a fake /proc
 * tree) is matched by its path under /dev/vfio/. One scan of every
 * PROC/PID/fd link collects the character devices and /dev/vfio/ paths
 * held and answers for all VFs:
 *
 *	struct vfio_scan held;
 *	if (vfio_scan_load(&held, proc_root) == 0) {
 *		pid = vfio_scan_holder(&held, sysfs_root, vf);
 *		...
 *		vfio_scan_release(&held);
 *	}
 */
#ifndef VFS_VFIO_H
#define VFS_VFIO_H

#include <stddef.h>
#include <sys/types.h>

/* One character device or /dev/vfio/ path some process holds open. */
struct vfio_open {
	char *dev;			/* owned: "/dev/vfio/42", ... */
	dev_t rdev;			/* its numbers; 0: not stat'ed */
	long pid;			/* one holder (the first seen) */
};

/* The devices held open on the host, each once, sorted by path. */
struct vfio_scan {
	struct vfio_open *v;		/* owned */
	size_t n;
	size_t cap;
	size_t links;			/* fd links read (for the benchmark) */
};

/*
 * Reads every PROC_ROOT/proc/PID/fd link once into s (s needs no
 * initialisation) and keeps the character devices and the links under
 * /dev/vfio/. A process or an fd
 * that vanishes or cannot be read meanwhile counts as holding nothing (a
 * process that exits holds nothing). 0, or -1 with errno and s empty
 * when PROC_ROOT/proc cannot be listed (a caller that must not act
 * blindly then acts on no VF) or on ENOMEM.
 */
int vfio_scan_load(struct vfio_scan *s, const char *proc_root);

/* Frees the set and empties s. */
void vfio_scan_release(struct vfio_scan *s);

/*
 * The pid of a process that, by the scan s, holds vf's VFIO device
 * (found from SYSFS_ROOT), or 0 when none does (also for a VF without
 * a VFIO device).
 */
long vfio_scan_holder(const struct vfio_scan *s, const char *sysfs_root,
    const char *vf);

/*
 * One scan and one look-up: the pid of a process with an fd open on
 * vf's VFIO device, 0 when none was found, or -1 with errno when
 * PROC_ROOT/proc could not be scanned (nobody may be assumed to hold
 * nothing then).
 */
long vfio_holder(const char *sysfs_root, const char *proc_root,
    const char *vf);

#endif
