/*
 * pci.c - unit tests for the libpci wrapper over fake sysfs trees (TAP).
 *
 * libpci's own error handler would exit(1) on every malformed tree
 * below; reaching the end of this program is part of what is tested.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pci.h"

static int ntest;
static int nfail;
static char root[64];

static void
ok(int cond, const char *name)
{
	ntest++;
	if (!cond)
		nfail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", ntest, name);
}

static int
put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root, rel);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int
mkfn(const char *bdf, const char *vendor, const char *device)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root, bdf);
	if (mkdir(path, 0755) < 0)
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
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s '%s/sys/bus/pci/devices/%s'", verb,
	    root, rel);
	return system(cmd);
}

static void
test_detect(void)
{
	char why[256] = "";

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
	char why[256] = "";

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
	ok(rc == 0 && (strstr(name, "NVIDIA") != NULL ||
	    strstr(name, "10de") != NULL), "device name of the NVIDIA VF");
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
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/vfs-pci-unit.XXXXXX");
	if (mkdtemp(root) == NULL) {
		printf("1..0 # skip mkdtemp: %s\n", strerror(errno));
		return 0;
	}
	test_detect();
	test_malformed();
	test_name();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", root);
	printf("1..%d\n", ntest);
	return nfail != 0;
}
