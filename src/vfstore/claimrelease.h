/*
 * claimrelease.h - `vfstore release` and `vfstore deconfigure` (SPEC.md 4.2)
 * over a ledger the caller has loaded under the store's exclusive lock:
 * the VFIO-holder scan, the write of 0 to current_vgpu_type, the save and
 * the audit line (auditfields.h, after the change is durable). The result
 * says what happened; nothing here prints or exits.
 *
 *	open the store exclusively, claims_load(s, &cl)
 *	claimrelease_release(s, &cl, &where, "i-1", true, &r);
 *	(where.reason: the operator's --reason for the audit line, or NULL)
 *	... log r, print the answer ...
 *	store_unlock(s); claims_release(&cl);
 */
#ifndef VFS_CLAIMRELEASE_H
#define VFS_CLAIMRELEASE_H

#include <stdbool.h>

#include "claims.h"
#include "store.h"
#include "suspicion.h"

enum claimop_status {
	CLAIMOP_DONE,		/* released (durable) or deconfigured */
	CLAIMOP_NO_CLAIM,	/* release: the instance has none; no change */
	CLAIMOP_CLAIMED,	/* deconfigure: instance claims the VF */
	CLAIMOP_NO_SCAN,	/* PROC could not be scanned (err) */
	CLAIMOP_HELD,		/* pid holds the VF's VFIO device */
	CLAIMOP_SYSFS,		/* writing current_vgpu_type failed (err) */
	CLAIMOP_PERSIST		/* saving the ledger failed (step, s->why) */
};

struct claimop_where {
	const char *sysfs_root;
	const char *proc_root;		/* PROC_ROOT/proc is /proc */
	const char *reason;		/* --reason, audited; NULL: none */
	const struct suspicion_how *how;	/* release: how it ended, or
						 * NULL (claimlife_end) */
	struct suspicion_verdict *verdict;
};

struct claimop {
	enum claimop_status status;
	char vf[VF_ADDR_LEN + 1];	/* the VF acted on ("" if none) */
	const char *instance;		/* CLAIMED: the claim's (borrowed
					 * from the ledger) */
	long pid;			/* HELD */
	int err;			/* NO_SCAN, SYSFS: errno */
	const char *step;		/* PERSIST: the atomic step */
	bool deconfigured;		/* DONE: 0 written */
	int audit_err;			/* DONE, but the audit line failed:
					 * its errno; else 0 */
};

/*
 * Removes instance's claim from cl and saves it; with deconfigure the
 * VF's current_vgpu_type is first reset unless a process holds its VFIO
 * device (or PROC cannot be scanned: then nothing changes).
 */
void claimrelease_release(struct store *s, struct claims *cl,
    const struct claimop_where *w, const char *instance, bool deconfigure,
    struct claimop *r);

/* Resets vf's current_vgpu_type unless a claim covers vf or a process
 * holds its VFIO device. */
void claimrelease_deconfigure(struct store *s, const struct claims *cl,
    const struct claimop_where *w, const char *vf, struct claimop *r);

#endif
