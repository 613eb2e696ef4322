/*
 * claimop.h - what `vfstore release` (release.c) and `vfstore
 * deconfigure` (deconfigure.c) share (SPEC.md 4.2): the claims ledger
 * loaded under the store's exclusive lock, the VFIO-holder scan, the
 * write of 0 to current_vgpu_type, the save and the audit line
 * (auditfields.h, after the change is durable), and a refusal logged
 * with its exit code. The result says what happened; the command logs
 * and prints the rest.
 */
#ifndef VFS_CLAIMOP_H
#define VFS_CLAIMOP_H

#include <stdbool.h>

#include "vfaddr.h"

enum claimop_status {
	CLAIMOP_DONE,		/* released (durable) or deconfigured */
	CLAIMOP_NO_CLAIM,	/* release: the instance has none; no change */
	CLAIMOP_CLAIMED,	/* deconfigure: instance claims the VF */
	CLAIMOP_NO_SCAN,	/* PROC could not be scanned (err) */
	CLAIMOP_HELD,		/* pid holds the VF's VFIO device */
	CLAIMOP_SYSFS,		/* writing current_vgpu_type failed (err) */
	CLAIMOP_PERSIST		/* saving the ledger failed (step, s->why) */
};

struct claimop {
	enum claimop_status status;
	char vf[VF_ADDR_LEN + 1];	/* the VF acted on ("" if none) */
	const char *instance;		/* CLAIMED: the claim's (borrowed
					 * from the ledger, while locked) */
	long pid;			/* HELD */
	int err;			/* NO_SCAN, SYSFS: errno */
	const char *step;		/* PERSIST: the atomic step */
	bool deconfigured;		/* DONE: 0 written */
	int audit_err;			/* DONE, but the audit line failed:
					 * its errno; else 0 */
};

struct ctx;
struct suspicion_verdict;

/*
 * Under the exclusive lock: with release, removes --instance's claim and
 * saves the ledger, --deconfigure first resetting the VF's
 * current_vgpu_type unless a process holds its VFIO device (or PROC
 * cannot be scanned: then nothing changes), and judges the VF by how the
 * instance ended (*v: the suspicion's verdict); without, resets --vf's
 * current_vgpu_type unless a claim covers it or a process holds its
 * VFIO device (v NULL). A refusal is logged. The exit code (0 when
 * there is nothing to log: DONE, NO_CLAIM), *r the result.
 */
int claimop_locked(struct ctx *c, bool release, struct claimop *r,
    struct suspicion_verdict *v);

#endif
