/*
 * vfio.c - unit tests (TAP) for listing a card's VFs (sysfs_card_vfs)
 * and finding the process that holds a VF's VFIO device open
 * (vfio_holder, and the one scan of vfio_scan_load that answers for every
 * VF), over a fake sysfs tree and a fake /proc in a temporary
 * directory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysfs.h"
#include "tap.h"
#include "vfio.h"

#define CARD "0000:e3:00.0"
#define VF4 "0000:e3:00.4"
#define VF5 "0000:e3:00.5"
#define OTHER "0000:e4:00.4"

static char root[PATH_MAX];

/* Creates root/rel (a directory, or a link to target when not NULL). */
static void
make(const char *rel, const char *target)
{
	char path[PATH_MAX * 2], cmd[PATH_MAX * 3];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (target == NULL) {
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
		if (system(cmd) != 0)
			abort();
		return;
	}
	if (symlink(target, path) != 0)
		abort();
}

static void
make_vf(const char *vf, const char *card, const char *group)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", vf);
	make(rel, NULL);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/physfn", vf);
	snprintf(target, sizeof(target), "../%s", card);
	make(rel, target);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/iommu_group", vf);
	snprintf(target, sizeof(target), "../../../../kernel/iommu_groups/%s",
	    group);
	make(rel, target);
}

static void
test_card_vfs(void)
{
	struct vf_list l = { 0 };

	ok(sysfs_card_vfs(root, CARD, &l) == 0 && l.n == 2,
	    "the card's two VFs are listed");
	ok(l.n == 2 && strcmp(l.v[0], VF4) == 0 && strcmp(l.v[1], VF5) == 0,
	    "sorted by address, the other card's VF left out");
	free(l.v);
	memset(&l, 0, sizeof(l));
	ok(sysfs_card_vfs(root, "0000:e5:00.0", &l) == 0 && l.n == 0,
	    "a card without VFs lists none");
	ok(sysfs_card_vfs("/nonexistent-sysfs", CARD, &l) == 0 && l.n == 0,
	    "a missing devices dir lists none");
}

static void
test_holder(void)
{
	make("proc", NULL);
	ok(vfio_holder(root, root, VF4) == 0, "no process holds the VF");
	make("proc/4242/fd", NULL);
	make("proc/4242/fd/0", "/dev/null");
	make("proc/4242/fd/7", "/dev/vfio/41");
	ok(vfio_holder(root, root, VF4) == 0,
	    "another group's device does not count");
	make("proc/4242/fd/8", "/dev/vfio/42");
	ok(vfio_holder(root, root, VF4) == 4242,
	    "the holder of the VF's group is found");
	ok(vfio_holder(root, root, VF5) == 0, "the VF beside it is free");
	make("sys/bus/pci/devices/" VF5 "/vfio-dev/vfio3", NULL);
	make("proc/77/fd", NULL);
	make("proc/77/fd/3", "/dev/vfio/devices/vfio3");
	ok(vfio_holder(root, root, VF5) == 77,
	    "the holder of the VF's iommufd cdev is found");
	ok(vfio_holder(root, root, OTHER) == 0,
	    "a VF whose group nobody holds is free");
	ok(vfio_holder(root, root, "0000:e3:00.6") == 0,
	    "a VF without a VFIO device is held by none");
}

static void
test_scan(void)
{
	struct vfio_scan s;

	ok(vfio_scan_load(&s, root) == 0, "one scan of the fake /proc");
	ok(vfio_scan_holder(&s, root, VF4) == 4242 &&
	    vfio_scan_holder(&s, root, VF5) == 77 &&
	    vfio_scan_holder(&s, root, OTHER) == 0,
	    "the one scan answers for every VF");
	ok(s.links == 4, "each fd link was read once (%zu)", s.links);
	ok(s.n == 4, "only the /dev/vfio/ paths and /dev/null, a character "
	    "device, are kept (%zu)", s.n);
	vfio_scan_release(&s);
	make("proc/90/fd", NULL);
	make("proc/90/fd/1", "/dev/vfio/42");
	make("proc/notapid", NULL);
	ok(vfio_scan_load(&s, root) == 0 && s.n == 4,
	    "a path two processes hold is kept once");
	vfio_scan_release(&s);
	ok(vfio_scan_load(&s, "/nonexistent-proc-root") == -1 && s.n == 0,
	    "an unreadable /proc is an error, not an empty scan");
	ok(vfio_holder(root, "/nonexistent-proc-root", VF4) == -1,
	    "vfio_holder says so too");
}

/* A holder by the device numbers sysfs gives (a chroot's path): the fake
 * link points at /dev/full, whose numbers the group's dev file names. */
static void
test_rdev(void)
{
	char cmd[PATH_MAX + 64];

	make("sys/class/vfio/44", NULL);
	snprintf(cmd, sizeof(cmd), "echo 1:7 >'%s/sys/class/vfio/44/dev'",
	    root);
	if (system(cmd) != 0)
		abort();
	ok(vfio_holder(root, root, OTHER) == 0, "nobody holds /dev/full");
	make("proc/500/fd", NULL);
	make("proc/500/fd/3", "/dev/full");
	ok(vfio_holder(root, root, OTHER) == 500,
	    "the holder of the group's device numbers is found, any path");
}

int
main(void)
{
	tap_tmpdir(root, sizeof(root), "vfio");
	make_vf(VF4, CARD, "42");
	make_vf(VF5, CARD, "43");
	make_vf(OTHER, "0000:e4:00.0", "44");
	test_card_vfs();
	test_holder();
	test_scan();
	test_rdev();
	tap_rmtree(root);
	return done_testing();
}
