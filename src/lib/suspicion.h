/*
 * suspicion.h - the suspicion rule of SPEC.md 7.3, decided in one place
 * for every release: the one release path, claimlife_release_all()
 * (claimlife.h), calls it for the libvirt hook's release end, vfstore
 * release, vfrecover's verification claims and vfstore reconcile:
 *
 * A released assignment makes its VF suspect when it ended unclean (or
 * unknown, with suspect.on_unknown), had no ok_at and no failure
 * recorded, had an agent endpoint or a console log (one that could never
 * prove itself is not suspected), lasted at most suspect.window seconds
 * from claimed_at, and its console log holds no OK marker (read once,
 * here). A second suspicion from another assignment quarantines the VF
 * (quarantined_at, no failure, as an operator's quarantine).
 *
 *	suspicion_case_init(&sc, claims_find_instance(c, id));
 *	... the claim is removed and the ledger saved ...
 *	suspicion_decide(s, &sc, &how, &verdict);
 *	suspicion_case_release(&sc);
 *
 * The caller holds the store's exclusive lock. Nothing here prints or
 * exits.
 */
#ifndef VFS_SUSPICION_H
#define VFS_SUSPICION_H

#include <stdbool.h>

#include "store.h"
#include "claims.h"

/* What the release knew of the end, and the configuration's rule. */
struct suspicion_how {
	const char *ended;		/* clean, unclean, unknown; NULL:
					 * unknown */
	const char *source;		/* "REPORTER: evidence" */
	unsigned window;		/* suspect.window, seconds */
	bool on_unknown;		/* suspect.on_unknown */
	unsigned threshold;		/* gpu.vf_quarantine_threshold */
	bool ignore_ok;			/* suspect.trust_ok = false (SPEC
					 * 8.2): the assignment's ok_at and
					 * console OK markers do not count */
	size_t read_max;		/* sentinel.console_read_max: the
					 * console log's last bytes read (SPEC
					 * 8.3); 0: SUSPICION_READ_MAX */
};

#define SUSPICION_READ_MAX 4194304	/* console_read_max's default */

/* What the decision did. */
struct suspicion_verdict {
	bool suspect;			/* the VF is suspect now */
	bool quarantined;		/* a second suspicion quarantined it */
	int err;			/* a store that did not load or save
					 * (nothing decided), or an audit
					 * line not written: errno; else 0 */
	const char *why;		/* with err: s->why or "" */
	int console_err;		/* the console log was refused (SPEC
					 * 8.3): IO_ENOTREG (not a regular
					 * file) or ELOOP (a link), else 0;
					 * the caller warns */
	char console_path[4096];	/* with console_err: its path */
};

/* The released claim's facts, copied before the claim is freed. */
struct suspicion_case {
	char vf[VF_ADDR_LEN + 1];	/* "" when there was no claim */
	char *instance_id;		/* owned */
	char *claimed_at;		/* owned */
	char *app_log;			/* owned; NULL when none */
	char *profile;			/* owned; NULL when none */
	unsigned long long console_offset;	/* the assignment's console
					 * starts there in console_inode
					 * (SPEC 8.2); 0, 0: unknown */
	unsigned long long console_inode;
	bool ok;			/* ok_at was set */
	bool provable;			/* an agent endpoint or console */
};

/* Copies what the rule reads of cl (NULL: no claim). 0 or -1/ENOMEM. */
int suspicion_case_init(struct suspicion_case *sc, const struct claim *cl);

/* Decides, and saves and audits a new suspicion or quarantine. */
void suspicion_decide(struct store *s, const struct suspicion_case *sc,
    const struct suspicion_how *how, struct suspicion_verdict *v);

void suspicion_case_release(struct suspicion_case *sc);

#endif
