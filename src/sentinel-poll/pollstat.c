/*
 * pollstat.c - the four gauges of sentinel-poll's textfile (pollstat.h).
 * Gauges, not counters: each file states the last scan, and a restarted
 * sentinel states the same things again.
 */
#include "pollstat.h"
#include "prom.h"

static void
gauge(struct prom *p, const char *name, const char *help, double value)
{
	prom_family(p, name, "gauge", help);
	prom_sample(p, name, NULL, value);
}

int
pollstat_write(const struct pollstat *s, const char *path)
{
	struct prom p;
	const char *text;
	size_t len;
	int rc = -1;

	prom_init(&p);
	gauge(&p, "vfsentinel_sentinel_framework_present", "1 if a VF of "
	    "this host has the NVIDIA vendor-VFIO vGPU framework, else 0 "
	    "(the sentinel waits for it).", s->framework_present);
	gauge(&p, "vfsentinel_sentinel_targets", "Targets (claims) the "
	    "last scan listed.", (double)s->targets);
	gauge(&p, "vfsentinel_sentinel_polled", "Targets of the last scan "
	    "whose VMM was alive and that were polled.", (double)s->polled);
	gauge(&p, "vfsentinel_sentinel_last_scan_timestamp_seconds", "Unix "
	    "time of the end of the last scan, or of the last sysfs "
	    "re-check while waiting for the framework.",
	    (double)s->last_scan);
	if ((text = prom_finish(&p, &len)) != NULL)
		rc = prom_write_textfile(path, text, len);
	prom_release(&p);
	return rc;
}
