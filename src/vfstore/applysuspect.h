/*
 * applysuspect.h - the suspect VFs in `vfstore apply` (SPEC.md 7.3), for
 * applybatch.c: an OK confirmed for a suspect VF ends the suspicion
 * (cause "ok"); a failure of a later assignment quarantines the VF at
 * once, whatever the threshold (the record holds that one failure and
 * quarantined_at; the suspicion is never written as a failure), and
 * ends it (cause "failure"); a failure of the suspected assignment itself
 * is tallied as any and ends it too.
 *
 * The suspect file is cached like the other two (reloaded when it
 * changed), so that an OK of a VF without failures, claim or suspicion
 * still takes no lock. Nothing here prints or exits.
 */
#ifndef VFS_APPLYSUSPECT_H
#define VFS_APPLYSUSPECT_H

#include <stdbool.h>

#include "applybatch.h"
#include "healthfile.h"
#include "suspect.h"

/* Reloads the cache when the file changed (no lock). */
void applysuspect_refresh(struct apply *ap);

/* True when the report of it must go to the locked batch for a suspicion. */
bool applysuspect_needs_lock(const struct apply *ap, const struct item *it);

/*
 * Under the lock, after the reports were applied to h: ends the
 * suspicions of d the batch's reports end, quarantining for a later
 * assignment's failure (in h, and its report's outcome; *hchanged set).
 * The ended suspicions are copied to gone. True when d changed.
 */
bool applysuspect_apply(struct apply *ap, struct health *h,
    struct suspects *d, struct suspects *gone, bool *hchanged);

/* Once h is durable: saves d, audits the ended suspicions of gone; a
 * failure fails the batch's reports on those VFs. */
void applysuspect_save(struct apply *ap, struct suspects *d,
    const struct suspects *gone);

#endif
