/*
 * systemic.h - the systemic-failure rule of SPEC.md 4.5: failures on
 * many VFs at once point at a cause no SR-IOV cycle cures (a driver or
 * guest-image rollout), not at a wedged VF. resources-report reports it;
 * vfrecover refuses to cycle a card while it holds (4.6).
 *
 * It reads a struct placement (placement.h), so the VFs and cards it
 * counts are those placement classified, with their health records.
 * Nothing here prints or exits.
 */
#ifndef VFS_SYSTEMIC_H
#define VFS_SYSTEMIC_H

#include <stdbool.h>
#include <time.h>

#include "conf.h"
#include "healthfile.h"
#include "placement.h"

/* The recovery.systemic_* keys (SPEC.md 2.4, 4.6). */
struct systemic_rule {
	unsigned window;		/* seconds back from now */
	unsigned cards;			/* recent VFs on this many cards */
	unsigned vfs;			/* or this many on one card */
};

struct systemic {
	bool suspected;
	unsigned vfs;			/* VFs whose newest failure is recent */
	unsigned cards;			/* the cards those VFs lie on */
	unsigned most;			/* the most of them on one card */
	char reason[128];		/* "failures on 3 VFs of 2 cards within
					   3600 s" when suspected, else "" */
};

/* The rule of a configuration. */
struct systemic_rule systemic_rule_of(const struct conf *c);

/*
 * True if the newest failure of rec was reported within window seconds
 * before now (or after now: a clock step back still counts it).
 */
bool systemic_recent(const struct vf_record *rec, unsigned window,
    const struct timespec *now);

/*
 * Counts the VFs of p whose newest failure is recent and applies the
 * rule at now. 0, or -1/ENODATA when p was built without a health store
 * (nothing is known; out is cleared).
 */
int systemic_check(const struct placement *p, const struct systemic_rule *rule,
    const struct timespec *now, struct systemic *out);

#endif
