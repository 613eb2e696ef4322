/*
 * pollstat.c - the gauges of sentinel-poll's textfile (pollstat.h).
 * Gauges, not counters: each file states the last scan, and a restarted
 * sentinel states the same things again.
 */
#include "pollstat.h"
#include "prom.h"

static const char *const reason_names[POLLSTAT_REASON_N] = {
	"no_source", "permission", "vmm_not_alive", "vmm_uncertain",
	"console_unreadable"
};

const char *
pollstat_reason_name(enum pollstat_reason r)
{
	return r < POLLSTAT_REASON_N ? reason_names[r] : "none";
}

static void
gauge(struct prom *p, const char *name, const char *help, double value)
{
	prom_family(p, name, "gauge", help);
	prom_sample(p, name, NULL, value);
}

/* Every reason is written, 0 when none: an alert on the sum, or on one
 * reason, sees a series from the first scan on. */
static void
unpolled(struct prom *p, const struct pollstat *s)
{
	static const char name[] = "vfsentinel_sentinel_unpolled_targets";
	const char *labels[3] = { "reason", NULL, NULL };
	size_t r;

	prom_family(p, name, "gauge", "Targets (claims) of the last scan "
	    "the sentinel could not check, by the first reason that applied: "
	    "no_source, permission, vmm_not_alive, vmm_uncertain, "
	    "console_unreadable.");
	for (r = 0; r < POLLSTAT_REASON_N; r++) {
		labels[1] = reason_names[r];
		prom_sample(p, name, labels, (double)s->unpolled[r]);
	}
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
	unpolled(&p, s);
	gauge(&p, "vfsentinel_sentinel_last_scan_timestamp_seconds", "Unix "
	    "time of the end of the last scan, or of the last sysfs "
	    "re-check while waiting for the framework.",
	    (double)s->last_scan);
	if ((text = prom_finish(&p, &len)) != NULL)
		rc = prom_write_textfile(path, text, len);
	prom_release(&p);
	return rc;
}
