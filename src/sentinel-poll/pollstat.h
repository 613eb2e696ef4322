/*
 * pollstat.h - sentinel-poll's --metrics-file (SPEC 4.4): what the
 * sentinel saw at its last scan or sysfs re-check, so an alert can tell
 * a dead sentinel (the file stale or absent) from an idle host (the file
 * fresh, no framework or no targets) and from claims of dead VMs
 * (targets above polled). Written for node_exporter's textfile
 * collector through prom.h. Nothing here prints or exits.
 */
#ifndef VFS_POLLSTAT_H
#define VFS_POLLSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct pollstat {
	bool framework_present;		/* a VF has creatable_vgpu_types */
	size_t targets;			/* targets listed by the last scan */
	size_t polled;			/* of those, whose VMM was alive */
	time_t last_scan;		/* end of the last scan or re-check */
};

/*
 * The exposition of s (four gauges, HELP and TYPE each) written to path
 * atomically (prom_write_textfile()). 0 or -1/errno.
 */
int pollstat_write(const struct pollstat *s, const char *path);

#endif
