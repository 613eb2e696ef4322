/*
 * pci-name - test aid: prints pci_device_name() of one function under a
 * sysfs root, to compare with lspci(8) on the same fake tree.
 *
 * usage: pci-name SYSFS_ROOT BDF
 */
#include <stdio.h>

#include "pci.h"

int
main(int argc, char **argv)
{
	char name[256];

	if (argc != 3) {
		fputs("usage: pci-name SYSFS_ROOT BDF\n", stderr);
		return 64;
	}
	if (pci_device_name(argv[1], argv[2], name, sizeof(name)) < 0) {
		perror("pci_device_name");
		return 1;
	}
	puts(name);
	return 0;
}
