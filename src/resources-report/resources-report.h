/*
 * resources-report.h - what the parts of resources-report share: the
 * state of one run (struct run) and the parts' entry points.
 * src/resources-report.c holds the options, the loading, the JSON
 * report and the output; gauges.c the Prometheus text. Program-side.
 */
#ifndef RESOURCES_REPORT_H
#define RESOURCES_REPORT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "claims.h"
#include "cli.h"
#include "drain.h"
#include "healthfile.h"
#include "hostview.h"
#include "placement.h"
#include "prom.h"
#include "store.h"
#include "sysfs.h"
#include "suspect.h"
#include "systemic.h"

#define CARD_NAME_MAX 256

struct name_cache {
	char key[40];			/* "0x10de:0x26b9" */
	char name[CARD_NAME_MAX];
	bool ok;			/* libpci named it */
};

struct run {
	struct cli cli;
	struct conf conf;
	bool prometheus;
	bool vfs;			/* --vfs */
	const char *output;
	struct hostview view;		/* stores, inventory, placement */
	bool available;			/* the three files loaded */
	char why[PATH_MAX + 128];	/* why not ("VF health state
					   unavailable: " WHY) */
	struct systemic sys;		/* only while available */
	struct suspect_counts counts;	/* from the audit log (7.3) */
	struct placement_profile *profiles;	/* owned */
	size_t nprofiles;
	struct name_cache *names;	/* one per card at most */
	size_t nnames;
};

/* gauges.c: the gauges of SPEC.md 4.5, then the per-VF and per-card
 * ones, build_info and the systemic flag, into p. */
void gauges_prom(const struct run *r, struct prom *p);

#endif
