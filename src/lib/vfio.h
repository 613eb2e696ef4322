/*
 * vfio.h - who holds a VF's VFIO device open (vfstore release
 * --deconfigure must not reset the vGPU type under a running VM).
 */
#ifndef VFS_VFIO_H
#define VFS_VFIO_H

/*
 * The pid of a process with an fd open on vf's VFIO device, found under
 * PROC_ROOT/proc, or 0 when none was found. The device is the VF's IOMMU
 * group (/dev/vfio/GROUP) or its iommufd cdev (/dev/vfio/devices/vfioN),
 * both read from SYSFS_ROOT. Best effort: a process or an fd that cannot
 * be read counts as not holding it.
 */
long vfio_holder(const char *sysfs_root, const char *proc_root,
    const char *vf);

#endif
