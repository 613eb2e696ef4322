/*
 * claimlife.h - the life of one claim in the ledger (SPEC.md 4.1-4.3,
 * 6.6), the same for every program that makes or ends one: vfpick
 * --claim, libvirt-hook, vfstore release and reconcile.
 *
 *	new		claimlife_new(): the claim, claimed_at now
 *	configure	claimlife_configure(): the profile's type to the VF
 *	complete	claimlife_complete(): endpoints, control socket and
 *			console given anew replace the claim's
 *	adopt		claimlife_adopt(): the claim of a VF a running VM
 *			holds (adopt.h's rules first), its type as it is
 *	deconfigure	claimlife_deconfigure(): the one VFIO holder rule
 *	release		claimlife_release(), claimlife_release_all() for
 *			many: removed, saved once, then each one's audit
 *			line (claimlife_audit()) and suspicion
 *
 * The caller holds the store's exclusive lock, saves the ledger where
 * a step says so, and logs. Nothing here prints or exits: 0, or -1
 * with errno.
 */
#ifndef VFS_CLAIMLIFE_H
#define VFS_CLAIMLIFE_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic.h"
#include "claims.h"
#include "placement.h"
#include "store.h"
#include "suspicion.h"
#include "vfio.h"

/*
 * How an assignment ended: the fields of its release's audit line
 * (src/vfstore/auditfields.h). Every pointer is borrowed; NULL leaves
 * the field out.
 */
struct claimlife_end {
	const char *command;		/* "release", "reconcile" */
	const char *vf;
	const char *instance_id;
	const char *reason;		/* --reason; reconcile's why */
	const char *liveness;		/* reconcile's verdict on the VMM */
	const char *domain;		/* libvirt-hook's domain name */
	bool deconfigured;
	/* How the assignment ended (SPEC.md 7.3): with how set, the
	 * release decides whether the VF is suspect (suspicion.h) once
	 * the ledger is saved, and tells it in *verdict. */
	const struct suspicion_how *how;
	struct suspicion_verdict *verdict;
	int audit_err;			/* claimlife_release_all(): its audit
					 * line's errno, or 0 */
};

/*
 * Inserts a copy of cl (its strings borrowed) with claimed_at set to
 * now, which is written to now (TIMEFMT_MAX bytes) for the caller's
 * log. -1 with errno: ENOMEM, or EOVERFLOW when the time cannot be
 * formatted. The ledger is not saved.
 */
int claimlife_new(struct claims *c, struct claim *cl, char *now, size_t len);

/*
 * Writes type id to vf's current_vgpu_type unless the VF holds it
 * already (*already: a retried configure; the driver takes a new type
 * only on a free VF). 0, or -1 with the write's errno.
 */
int claimlife_configure(const char *sysfs_root, const char *vf,
    unsigned id, bool *already);

/*
 * Sets cl's control socket, guest endpoint and console log to those
 * given (NULL: kept as it is) where they differ. The number changed
 * (the caller saves when it is not 0), or -1/ENOMEM.
 */
int claimlife_complete(struct claim *cl, const char *control_socket,
    const char *vsock, const char *app_log);

/*
 * claimlife_new() of the claim of v, whose adoption adopt_check()
 * allowed: its type the one the VF holds, its profile cl->profile or
 * the name under which v offers that type (adopt_profile()). cl's
 * instance and endpoints are the caller's; on return cl->type_id is the
 * ledger's copy (valid while c holds the claim).
 */
int claimlife_adopt(struct claims *c, const struct placement_vf *v,
    struct claim *cl, char *now, size_t len);

/*
 * The one VFIO holder rule (SPEC.md 4.2): a VF whose current_vgpu_type
 * is 0 has nothing to reset; otherwise 0 is written unless a process
 * holds its VFIO device, by held (a scan of PROC, vfio.h). 0, with
 * *wrote when 0 was written; or -1 with errno: EBUSY with the holder in
 * *pid, else the write's errno (*pid 0).
 */
int claimlife_deconfigure(const char *sysfs_root, const struct vfio_scan *held,
    const char *vf, long *pid, bool *wrote);

/*
 * claimlife_deconfigure() with a scan of PROC_ROOT/proc of its own,
 * made only when the VF holds a type: a PROC that cannot be scanned is
 * -1 with errno and *pid -1 (nobody may be assumed to hold nothing).
 */
int claimlife_deconfigure_scan(const char *sysfs_root, const char *proc_root,
    const char *vf, long *pid, bool *wrote);

/*
 * Removes the claim of end->instance_id from c and saves the ledger
 * (end's strings must not point into the claim, which this frees);
 * once that is durable, appends the audit line, then decides the
 * suspicion when end->how is set (end->verdict). 0; -1 with errno and
 * res->step, s->why when the save failed (the claim is gone from c
 * only). A failed audit line leaves the release standing: its errno in
 * *audit_err, else 0.
 */
int claimlife_release(struct store *s, struct claims *c,
    const struct claimlife_end *end, struct atomic_result *res,
    int *audit_err);

/*
 * The one release path, for one claim or many (reconcile's pass): the
 * claims of ends[0..n) are removed from c and the ledger saved once;
 * once that is durable, each end's audit line (its audit_err) and its
 * suspicion (how, verdict). 0; -1 with errno (and res->step when the
 * save failed): nothing released but in c.
 */
int claimlife_release_all(struct store *s, struct claims *c,
    struct claimlife_end *ends, size_t n, struct atomic_result *res);

/*
 * The audit line of a durable release (SPEC.md 4.1): vf, reason, then
 * instance_id, liveness, domain and deconfigured. 0, or -1 with errno
 * (auditlog_append()'s; EILSEQ: a string not UTF-8).
 */
int claimlife_audit(const char *gpu_dir, const struct claimlife_end *end);

#endif
