/*
 * vfio.c - who holds a VF's VFIO device open: a scan of PROC/PID/fd
 * links for the VF's /dev/vfio/GROUP (legacy group) or
 * /dev/vfio/devices/vfioN (iommufd cdev) path.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "sysfs.h"
#include "vfio.h"

/* The VFIO device paths of vf: /dev/vfio/G and /dev/vfio/devices/X. */
static int
vfio_paths(const char *sysfs_root, const char *vf, struct vf_list *names,
    char *group, size_t glen)
{
	char path[PATH_MAX], link[PATH_MAX];
	struct dirent *de;
	const char *base;
	ssize_t n;
	DIR *d;

	group[0] = '\0';
	if (sysfs_vf_path(sysfs_root, vf, "iommu_group", path,
	    sizeof(path)) == 0 &&
	    (n = readlink(path, link, sizeof(link) - 1)) > 0) {
		link[n] = '\0';
		base = strrchr(link, '/');
		if (snprintf(group, glen, "/dev/vfio/%.255s",
		    base ? base + 1 : link) >= (int)glen)
			group[0] = '\0';
	}
	if (sysfs_vf_path(sysfs_root, vf, "vfio-dev", path, sizeof(path)) < 0 ||
	    (d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && strlen(de->d_name) <= VF_ADDR_LEN &&
		    vf_list_add(names, de->d_name) < 0)
			break;
	closedir(d);
	return 0;
}

static bool
link_is_vfio(const char *target, const char *group, const struct vf_list *x)
{
	static const char pre[] = "/dev/vfio/devices/";
	size_t i;

	if (group[0] != '\0' && strcmp(target, group) == 0)
		return true;
	if (strncmp(target, pre, sizeof(pre) - 1) != 0)
		return false;
	for (i = 0; i < x->n; i++)
		if (strcmp(target + sizeof(pre) - 1, x->v[i]) == 0)
			return true;
	return false;
}

/* True if some fd of process dir pid points at the VF's VFIO device. */
static bool
pid_holds(const char *proc, const char *pid, const char *group,
    const struct vf_list *x)
{
	char dir[PATH_MAX], path[PATH_MAX * 2], link[PATH_MAX];
	struct dirent *de;
	bool held = false;
	ssize_t n;
	DIR *d;

	if (snprintf(dir, sizeof(dir), "%.3800s/%.32s/fd", proc, pid) >=
	    (int)sizeof(dir) || (d = opendir(dir)) == NULL)
		return false;
	while (!held && (de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		held = link_is_vfio(link, group, x);
	}
	closedir(d);
	return held;
}

long
vfio_holder(const char *sysfs_root, const char *proc_root, const char *vf)
{
	char proc[PATH_MAX], group[PATH_MAX];
	struct vf_list x = { 0 };
	struct dirent *de;
	long pid = 0;
	DIR *d;

	vfio_paths(sysfs_root, vf, &x, group, sizeof(group));
	if (snprintf(proc, sizeof(proc), "%s/proc", proc_root) >=
	    (int)sizeof(proc))
		proc[0] = '\0';
	if ((group[0] != '\0' || x.n > 0) && proc[0] != '\0' &&
	    (d = opendir(proc)) != NULL) {
		while (pid == 0 && (de = readdir(d)) != NULL)
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
			    pid_holds(proc, de->d_name, group, &x))
				pid = strtol(de->d_name, NULL, 10);
		closedir(d);
	}
	free(x.v);
	return pid;
}
