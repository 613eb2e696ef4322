/*
 * systemic.h - the systemic-failure rule of SPEC.md 4.5 as 6.5 amends
 * it: failures that point at a cause no SR-IOV cycle cures (a driver or
 * guest-image rollout: every VF that boots fails; a card that fails
 * again right after its cycle), distinguished from many wedges at once (a
 * mass VMM kill: the OOM killer, a launcher crash). resources-report
 * reports it; vfrecover refuses to cycle a card while it holds (4.6).
 *
 * With W the window (recovery.systemic_window) and now the time of the
 * check, a failure is recent when it was reported at or after now - W
 * (after now too: a clock stepped back), and its assignment began at its
 * assigned_at (when that is an RFC 3339 time; the sentinel writes the
 * claim's claimed_at there). Failure is suspected when either holds:
 *
 *   rollout: of the host's VFs assigned within the window (a recent
 *     failure of an assignment that began at or after now - W, or a claim
 *     made then), at least SYSTEMIC_MIN_VFS and at least the fraction
 *     recovery.systemic_fraction have such a failure. A mass kill of
 *     VMs that ran before the window adds none of its VFs; a failure
 *     whose assigned_at is no time counts in neither.
 *   recovery: a VF has a failure reported after the last recovery of its
 *     card (the audit line of vfrecover's clear, within the window) of an
 *     assignment that did not begin before it (an assigned_at that is no
 *     time: the report's).
 *
 * Only what the store shows counts: a VM that booted within the window
 * and ended cleanly left no claim, so the fraction may come out high.
 * It reads a struct placement (placement.h), so the VFs and cards it
 * counts are those placement classified, with their health records and
 * claims. Nothing here prints or exits.
 */
#ifndef VFS_SYSTEMIC_H
#define VFS_SYSTEMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "conf.h"
#include "healthfile.h"
#include "placement.h"
#include "vfaddr.h"

/* The fewest failed VFs the rollout rule takes: one failed boot is no
 * rollout, whatever else booted. */
#define SYSTEMIC_MIN_VFS 2

/* The recovery.systemic_* keys (SPEC.md 2.4, 6.5). */
struct systemic_rule {
	unsigned window;		/* seconds back from now */
	double fraction;		/* of the VFs assigned within it */
};

/* The last recovery of each card vfrecover recovered. */
struct systemic_recovery {
	char card[VF_ADDR_LEN + 1];
	struct timespec at;		/* the ts of its clear's audit line */
};

struct systemic_recoveries {
	struct systemic_recovery *v;	/* owned */
	size_t n;
};

struct systemic {
	bool suspected;
	unsigned assigned;		/* VFs assigned within the window */
	unsigned failed;		/* of them, failed on that assignment */
	unsigned recovered;		/* VFs failing since their card's
					   recovery */
	unsigned recovered_cards;	/* the cards of those */
	char reason[256];		/* "failures on 3 of the 6 VFs assigned
					   within 3600 s", "failures on 1 VF
					   of card PF since its recovery", or
					   both joined by "; " when suspected,
					   else "" */
};

/* The rule of a configuration. */
struct systemic_rule systemic_rule_of(const struct conf *c);

/*
 * Reads the last recovery of each card from the audit log under gpu_dir
 * (auditlog_read_text(): the lines of prog "vfrecover", command "clear",
 * outcome "done", their card and ts) into out, which the caller
 * releases. A line that says none of this is passed over. 0, or -1 with
 * errno (the log cannot be read: out then holds nothing; ENOMEM).
 */
int systemic_recoveries_load(const char *gpu_dir,
    struct systemic_recoveries *out);
void systemic_recoveries_release(struct systemic_recoveries *r);

/*
 * Applies the rule to the VFs of p at now, with the recoveries rec (NULL:
 * none known). 0, or -1/ENODATA when p was built without a health store
 * (nothing is known; out is cleared).
 */
int systemic_check(const struct placement *p,
    const struct systemic_recoveries *rec, const struct systemic_rule *rule,
    const struct timespec *now, struct systemic *out);

#endif
