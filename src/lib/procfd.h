/*
 * procfd.h - one walk over every PROC_ROOT/proc/PID/fd link: which
 * processes hold which files open. vfio.c asks it for the VFIO devices
 * of VFs (release, deconfigure, reconcile), holders.c for the host's
 * /dev/nvidia* nodes (vfrecover's quiesce). A process or an fd that
 * vanishes or cannot be read meanwhile holds nothing. Nothing here
 * prints or exits.
 */
#ifndef VFS_PROCFD_H
#define VFS_PROCFD_H

#include <stddef.h>
#include <sys/types.h>

/* What a procfd_fn returns for a link (or -1 to stop the walk). */
enum {
	PROCFD_NEXT = 0,		/* go on with the process's links */
	PROCFD_NEXT_PROCESS = 1		/* skip its other links */
};

/*
 * Called for a link whose target starts with the walk's prefix. proc_fd
 * is the PROC_ROOT/proc directory (for openat() of "PID/comm"), pid the
 * process's directory name, target the link's target.
 */
typedef int procfd_fn(void *arg, int proc_fd, const char *pid,
    const char *target);

/*
 * Calls fn for every fd link under PROC_ROOT/proc whose target starts
 * with prefix. *links (if not NULL) counts every link read. 0, or -1 with
 * errno: PROC_ROOT/proc cannot be listed (a caller that must not act
 * blindly then acts on nothing), or fn returned -1 (its errno).
 */
int procfd_walk(const char *proc_root, const char *prefix, procfd_fn *fn,
    void *arg, size_t *links);

/*
 * As procfd_fn, with rdev: the device numbers of the open file when it
 * is a character device (stat(2) of the fd link, which reaches the file
 * wherever its path, e.g. in a chroot), else 0.
 */
typedef int procfd_chr_fn(void *arg, int proc_fd, const char *pid,
    const char *target, dev_t rdev);

/*
 * As procfd_walk, but fn is also called for every link (prefix or not)
 * whose open file is a character device, with its numbers.
 */
int procfd_walk_chr(const char *proc_root, const char *prefix,
    procfd_chr_fn *fn, void *arg, size_t *links);

#endif
