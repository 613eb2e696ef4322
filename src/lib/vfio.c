/*
 * vfio.c - who holds a VF's VFIO device open: one scan of every
 * PROC/PID/fd link collects the character devices held (by number) and
 * the /dev/vfio/GROUP (legacy group) and /dev/vfio/devices/vfioN
 * (iommufd cdev) paths; each VF is then looked up in that set. A host
 * with 20,000 open fds costs one pass over them whatever the number of
 * VFs asked about.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "io.h"
#include "procfd.h"
#include "sysfs.h"
#include "vfio.h"

static const char vfio_dir[] = "/dev/vfio/";
static const char cdev_dir[] = "/dev/vfio/devices/";

/*
 * Longest link target kept: "/dev/vfio/devices/" and a name of at most
 * VF_ADDR_LEN, or a group number. A longer target is no VFIO device.
 */
#define TARGET_MAX 64

void
vfio_scan_release(struct vfio_scan *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].dev);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int
open_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vfio_open *)a)->dev,
	    ((const struct vfio_open *)b)->dev);
}

/* bsearch(3): key is the path, elem a struct vfio_open. */
static int
key_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct vfio_open *)elem)->dev);
}

static const struct vfio_open *
scan_find(const struct vfio_scan *s, const char *dev)
{
	if (s->n == 0)
		return NULL;
	return bsearch(dev, s->v, s->n, sizeof(*s->v), key_cmp);
}

/* Adds dev (rdev) held by pid (unsorted; vfio_scan_load sorts). 0 or
 * -1. */
static int
scan_add(struct vfio_scan *s, const char *dev, dev_t rdev, long pid)
{
	struct vfio_open *v;
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].dev, dev) == 0 && s->v[i].rdev == rdev)
			return 0;
	if (s->n == s->cap) {
		v = reallocarray(s->v, s->cap ? s->cap * 2 : 8, sizeof(*v));
		if (v == NULL)
			return -1;
		s->v = v;
		s->cap = s->cap ? s->cap * 2 : 8;
	}
	if ((s->v[s->n].dev = strdup(dev)) == NULL)
		return -1;
	s->v[s->n].rdev = rdev;
	s->v[s->n++].pid = pid;
	return 0;
}

/* A procfd_chr_fn: keeps a character device (by its numbers; the path
 * may be a chroot's) or a /dev/vfio/ target of at most TARGET_MAX bytes
 * (by its path, for a target that cannot be stat'ed). */
static int
scan_link(void *arg, int proc_fd, const char *pid, const char *target,
    dev_t rdev)
{
	(void)proc_fd;
	if (rdev == 0 && (strncmp(target, vfio_dir, strlen(vfio_dir)) != 0 ||
	    strlen(target) >= TARGET_MAX))
		return PROCFD_NEXT;
	return scan_add(arg, target, rdev, strtol(pid, NULL, 10));
}

int
vfio_scan_load(struct vfio_scan *s, const char *proc_root)
{
	int err;

	memset(s, 0, sizeof(*s));
	if (procfd_walk_chr(proc_root, vfio_dir, scan_link, s,
	    &s->links) < 0) {
		err = errno;
		vfio_scan_release(s);
		errno = err;
		return -1;
	}
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), open_cmp);
	return 0;
}

/*
 * The holder of the character device whose "MAJ:MIN" the sysfs file
 * DIR/NAME/dev gives, or 0 (none, or no such file).
 */
static long
rdev_holder(const struct vfio_scan *s, const char *dir, const char *name)
{
	char path[PATH_MAX], num[32];
	unsigned maj, min;
	size_t i;
	dev_t d;

	if (io_pathf(path, sizeof(path), "%s/%s/dev", dir, name) < 0 ||
	    io_read_attr(path, num, sizeof(num)) < 0 ||
	    sscanf(num, "%u:%u", &maj, &min) != 2 ||
	    (d = makedev(maj, min)) == 0)
		return 0;
	for (i = 0; i < s->n; i++)
		if (s->v[i].rdev == d)
			return s->v[i].pid;
	return 0;
}

/* The holder of /dev/vfio/GROUP, GROUP the VF's iommu_group link: by
 * the group's device numbers (SYSFS/class/vfio/GROUP/dev), or its path. */
static long
group_holder(const struct vfio_scan *s, const char *sysfs_root,
    const char *vf)
{
	char path[PATH_MAX], link[PATH_MAX], dev[TARGET_MAX];
	const struct vfio_open *o;
	const char *base;
	ssize_t n;
	long pid;

	if (sysfs_vf_path(sysfs_root, vf, "iommu_group", path,
	    sizeof(path)) < 0 ||
	    (n = readlink(path, link, sizeof(link) - 1)) <= 0)
		return 0;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (io_pathf(path, sizeof(path), "%s/sys/class/vfio",
	    sysfs_root) == 0 && (pid = rdev_holder(s, path, base)) != 0)
		return pid;
	if (io_pathf(dev, sizeof(dev), "%s%s", vfio_dir, base) < 0)
		return 0;
	return (o = scan_find(s, dev)) != NULL ? o->pid : 0;
}

/* The holder of /dev/vfio/devices/X, X listed in the VF's vfio-dev/:
 * by X's device numbers (vfio-dev/X/dev), or its path. */
static long
cdev_holder(const struct vfio_scan *s, const char *sysfs_root,
    const char *vf)
{
	char path[PATH_MAX], dev[TARGET_MAX];
	const struct vfio_open *o;
	struct dirent *de;
	long pid = 0;
	DIR *d;

	if (sysfs_vf_path(sysfs_root, vf, "vfio-dev", path,
	    sizeof(path)) < 0 || (d = opendir(path)) == NULL)
		return 0;
	while (pid == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		pid = rdev_holder(s, path, de->d_name);
		if (pid == 0 && io_pathf(dev, sizeof(dev), "%s%s", cdev_dir,
		    de->d_name) == 0 && (o = scan_find(s, dev)) != NULL)
			pid = o->pid;
	}
	closedir(d);
	return pid;
}

long
vfio_scan_holder(const struct vfio_scan *s, const char *sysfs_root,
    const char *vf)
{
	long pid;

	if (s->n == 0)
		return 0;
	if ((pid = group_holder(s, sysfs_root, vf)) != 0)
		return pid;
	return cdev_holder(s, sysfs_root, vf);
}

long
vfio_holder(const char *sysfs_root, const char *proc_root, const char *vf)
{
	struct vfio_scan s;
	long pid;

	if (vfio_scan_load(&s, proc_root) < 0)
		return -1;
	pid = vfio_scan_holder(&s, sysfs_root, vf);
	vfio_scan_release(&s);
	return pid;
}
