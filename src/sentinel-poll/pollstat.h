/*
 * pollstat.h - sentinel-poll's --metrics-file (SPEC 4.4): what the
 * sentinel saw at its last scan or sysfs re-check, so an alert can tell
 * a dead sentinel (the file stale or absent) from an idle host (the file
 * fresh, no framework or no targets), from claims of dead VMs
 * (targets above polled) and from claims the sentinel cannot check, by
 * reason (SPEC 7.1). Written for node_exporter's textfile collector
 * through prom.h. Nothing here prints or exits.
 */
#ifndef VFS_POLLSTAT_H
#define VFS_POLLSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/*
 * Why a claim is not checked (SPEC 7.1), in the order that decides
 * between them: a claim is counted under the first that applies.
 */
enum pollstat_reason {
	POLLSTAT_NO_SOURCE,		/* no agent endpoint, no console log */
	POLLSTAT_PERMISSION,		/* a socket or log the sentinel may not
					 * use (EACCES, EPERM) */
	POLLSTAT_VMM_NOT_ALIVE,		/* the VMM is gone */
	POLLSTAT_VMM_UNCERTAIN,		/* no control socket, or its liveness
					 * cannot be told */
	POLLSTAT_CONSOLE_UNREADABLE,	/* the console log is not a regular
					 * file, or cannot be read */
	POLLSTAT_REASON_N,
	POLLSTAT_NONE = POLLSTAT_REASON_N
};

/* "no_source", "permission", ... (static); the label values. */
const char *pollstat_reason_name(enum pollstat_reason r);

struct pollstat {
	bool framework_present;		/* a VF has creatable_vgpu_types */
	size_t targets;			/* targets listed by the last scan */
	size_t polled;			/* of those, whose VMM was alive */
	size_t unpolled[POLLSTAT_REASON_N];	/* not checked, by reason */
	time_t last_scan;		/* end of the last scan or re-check */
};

/*
 * The exposition of s (five gauges, HELP and TYPE each; the unpolled
 * one has a sample for every reason, 0 when none) written to path
 * atomically (prom_write_textfile()). 0 or -1/errno.
 */
int pollstat_write(const struct pollstat *s, const char *path);

#endif
