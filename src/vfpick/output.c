/*
 * output.c - vfpick --format libvirt: the <hostdev> element of the
 * claimed VF, for a domain XML (SPEC.md 6.4). managed='no': the VF stays
 * bound to the vendor-VFIO driver, which libvirt must not rebind, and
 * the libvirt hook (libvirt-hook) finds the claim already made.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "vfpick.h"

int
output_hostdev(const char *vf)
{
	unsigned dom, bus, slot, fn;

	/* vf is canonical (vfaddr_valid): DDDD:BB:DD.F in hex. */
	if (sscanf(vf, "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn) != 4)
		return log_fail(EX_SOFTWARE, "bad VF address", "{s:s}", "vf",
		    vf);
	if (printf("<hostdev mode='subsystem' type='pci' managed='no'>\n"
	    "  <source>\n"
	    "    <address domain='0x%04x' bus='0x%02x' slot='0x%02x' "
	    "function='0x%x'/>\n"
	    "  </source>\n"
	    "</hostdev>\n", dom, bus, slot, fn) < 0 || fflush(stdout) != 0)
		return log_fail(EX_IOERR, "write stdout failed", "{s:s}",
		    "error", strerror(errno));
	return 0;
}
