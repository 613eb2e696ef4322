/*
 * holders.h - which processes hold a host /dev/nvidia* node open
 * (vfrecover's quiesce, SPEC.md 4.6): sriov-manage -d needs the driver's
 * unbind lock, which the kernel grants only at a usage count of 0, so
 * DCGM's nv-hostengine, dcgm-exporter, nvidia-persistenced or a stray
 * nvidia-smi make it fail with "Cannot obtain unbindLock".
 *
 * One pass over every PROC_ROOT/proc/PID/fd link (procfd_walk(), the
 * walk vfio_scan_load() makes for /dev/vfio/). Nothing here prints.
 */
#ifndef VFS_HOLDERS_H
#define VFS_HOLDERS_H

#include <stddef.h>

#define HOLDER_COMM_MAX 64

struct holder {
	long pid;
	char comm[HOLDER_COMM_MAX];	/* PROC/PID/comm, "" if unreadable */
	char dev[64];			/* the first node seen held */
};

struct holders {
	struct holder *v;		/* owned, by pid */
	size_t n;
	size_t cap;
};

/*
 * Fills h (no initialisation needed) with each process that has an fd
 * link starting with prefix ("/dev/nvidia"), once per process. A process
 * that vanishes meanwhile holds nothing. 0, or -1 with errno (and h
 * empty) when PROC_ROOT/proc cannot be listed or on ENOMEM.
 */
int holders_scan(struct holders *h, const char *proc_root,
    const char *prefix);

void holders_release(struct holders *h);

#endif
