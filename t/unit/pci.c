/*
 * pci.c - unit tests for the libpci wrapper over fake sysfs trees (TAP).
 *
 * libpci's own error handler would exit(1) on every malformed tree
 * below; reaching the end of this program is part of what is tested.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pci.h"
#include "tap.h"

static char root[PATH_MAX];

static int
put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root,
	    rel) >= (int)sizeof(path))
		return -1;
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int
mkfn(const char *bdf, const char *vendor, const char *device)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root,
	    bdf) >= (int)sizeof(path) || mkdir(path, 0755) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/vendor", bdf);
	if (put(path, vendor) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/device", bdf);
	if (put(path, device) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/class", bdf);
	return put(path, "0x030200\n");
}

/* Runs "VERB ROOT/sys/bus/pci/devices/REL". */
static int
sh(const char *verb, const char *rel)
{
	char cmd[PATH_MAX * 2];

	snprintf(cmd, sizeof(cmd), "%s '%s/sys/bus/pci/devices/%s'", verb,
	    root, rel);
	return system(cmd);
}

static void
test_detect(void)
{
	char why[PATH_MAX + 64] = "";	/* a path and its strerror */

	ok(pci_has_nvidia(root, why, sizeof(why)) == 0,
	    "no sys/bus/pci at all: no NVIDIA function");
	sh("mkdir -p", "");
	ok(pci_has_nvidia(root, why, sizeof(why)) == 0,
	    "empty devices/: none");
	mkfn("0000:00:00.0", "0x8086\n", "0x1237\n");
	ok(pci_has_nvidia(root, why, sizeof(why)) == 0,
	    "an Intel host bridge only: none");
	mkfn("0000:00:03.0", "0x10de\n", "0x26b9\n");
	ok(pci_has_nvidia(root, why, sizeof(why)) == 1,
	    "an NVIDIA function (0x10de): found");
	sh("mkdir", ".hidden");
	ok(pci_has_nvidia(root, why, sizeof(why)) == 1,
	    "dot entries are ignored, as libpci does");
}

static void
test_malformed(void)
{
	char why[PATH_MAX + 64] = "";	/* a path and its strerror */

	sh("mkdir", "notabdf");
	ok(pci_has_nvidia(root, why, sizeof(why)) == -1 &&
	    strstr(why, "notabdf") != NULL,
	    "an entry that is not a PCI address: error naming it");
	sh("rmdir", "notabdf");
	sh("rm", "0000:00:00.0/vendor");
	ok(pci_has_nvidia(root, why, sizeof(why)) == -1 &&
	    strstr(why, "0000:00:00.0/vendor") != NULL,
	    "a function without vendor: error naming the file");
	sh("mkdir", "0000:00:00.0/vendor");
	ok(pci_has_nvidia(root, why, sizeof(why)) == -1,
	    "a vendor that is a directory: error");
	sh("rmdir", "0000:00:00.0/vendor");
	put("0000:00:00.0/vendor", "0x8086\n");
	ok(pci_has_nvidia(root, why, sizeof(why)) == 1, "repaired: found");
}

static void
test_name(void)
{
	char name[256] = "";
	int rc;

	rc = pci_device_name(root, "0000:00:03.0", name, sizeof(name));
	printf("# name: %s\n", name);
	/* lspci -mm's device name alone (t/35 compares it with lspci): the
	 * L40S's in the udev hwdb or a newer pci.ids, else libpci's
	 * "Device 26b9"; never the vendor's. */
	ok(rc == 0 && (strcmp(name, "Device 26b9") == 0 ||
	    strstr(name, "L40S") != NULL), "device name of the NVIDIA VF");
	ok(pci_device_name(root, "0000:00:09.0", name, sizeof(name)) == -1,
	    "device name of a missing function: -1, no exit");
	ok(pci_device_name(root, "not-an-address", name, sizeof(name)) == -1
	    && errno == EINVAL, "device name of a bad address: EINVAL");
	ok(pci_device_name(root, "0000:00:03.0", name, 8) == 0 &&
	    strlen(name) < 8, "device name truncated to the buffer");
}

int
main(void)
{
	tap_tmpdir(root, sizeof(root), "pci");
	test_detect();
	test_malformed();
	test_name();
	tap_rmtree(root);
	return done_testing();
}
