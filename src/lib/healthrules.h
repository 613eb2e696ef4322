/*
 * healthrules.h - the report rules of the VF health store (SPEC.md 4.1,
 * upstream 2.8) and the operator's quarantine and clear. They change a
 * struct health loaded by health_load() (store.h); the caller locks,
 * loads and saves. Every vf is a valid VF address (vfaddr_valid()).
 */
#ifndef VFS_HEALTHRULES_H
#define VFS_HEALTHRULES_H

#include <stdbool.h>
#include <stddef.h>

#include "healthfile.h"
#include "store.h"

enum health_outcome {
	HEALTH_UNCHANGED,
	HEALTH_RECORDED,
	HEALTH_QUARANTINED
};

/* One report of an assignment's driver init: the input, then the result. */
struct health_report {
	const char *vf;			/* borrowed */
	const char *instance;		/* borrowed */
	const char *assigned_at;	/* borrowed */
	enum health_outcome outcome;	/* failure reports */
	size_t failures;
	size_t cleared;			/* success reports */
	bool rescinded;
	bool changed;			/* h was modified */
};

/*
 * The record for vf (borrowed, valid until h next changes), inserted
 * empty in vf order if absent. NULL/ENOMEM.
 */
struct vf_record *healthrules_record_get(struct health *h, const char *vf);

/*
 * True when a failure report would change nothing: the VF is quarantined,
 * or this assignment is already tallied. Fills rep for the "unchanged"
 * answer either way.
 */
bool healthrules_failure_noop(const struct health *h,
    struct health_report *rep);

/*
 * Tallies a failure of the assignment (instance, assigned_at) unless it is
 * a no-op, quarantining the VF at h->threshold failures. 0, or -1/ENOMEM
 * with h as it was.
 */
int healthrules_report_failure(struct health *h, struct health_report *rep);

/* True when a success report would change nothing: no exact match. */
bool healthrules_success_noop(const struct health *h,
    struct health_report *rep);

/*
 * Clears the matched failure and every older one; rescinds a quarantine
 * only when nothing remains (the match was the newest tally).
 */
void healthrules_report_success(struct health *h, struct health_report *rep);

/*
 * Operator quarantine: quarantined_at (kept if already set) and no
 * failures, so no success report can ever rescind it. Sets *changed when
 * h changed. 0 or -1/ENOMEM.
 */
int healthrules_quarantine(struct health *h, const char *vf, bool *changed);

/* Removes vf's record, setting *changed when there was one. Returns 0. */
int healthrules_clear(struct health *h, const char *vf, bool *changed);

/*
 * The answer to a report (vfstore report-failure/-success, apply): for
 * a failure vf_address, outcome, failures and threshold; for a success
 * vf_address, cleared and rescinded. New ref, or NULL/ENOMEM.
 */
json_t *healthrules_failure_json(const struct health_report *rep,
    unsigned threshold);
json_t *healthrules_success_json(const struct health_report *rep);

#endif
