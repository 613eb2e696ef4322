/*
 * reconcileengine.h - release the claims of VMs that are provably gone
 * (SPEC.md 4.2, `vfstore reconcile`), never one whose VMM may live.
 *
 * One pass: the ledger is read without a lock (it is only ever replaced
 * by rename), the listener table of PROC/net/unix and the VFIO holders
 * of PROC/PID/fd are read once, and every claim older than the grace
 * period gets a liveness (4.4): a process holding the VF's VFIO device
 * makes it alive whatever the control socket says; a claim without a
 * control socket is otherwise uncertain. Only when some claim is gone,
 * and not in a dry run, the pass takes the exclusive lock, loads the
 * ledger again, reads both tables again, and releases a gone claim only
 * if it is unchanged (same VF, instance, claimed_at and control socket),
 * its VMM still gone and no process holds its VF; each released VF is
 * deconfigured (claimlife_deconfigure()) first; then all of them go by
 * the one release path, claimlife_release_all(): one save, an audit
 * line and the suspicion rule each, under the lock. The library
 * neither prints nor logs: the caller gets one result per claim.
 *
 *	struct reconcile_pass p;
 *	reconcileengine_run(&conf, &p);	(results in p.v even on -1)
 *	... print p.v[i] ...
 *	reconcileengine_pass_release(&p);
 */
#ifndef VFS_RECONCILEENGINE_H
#define VFS_RECONCILEENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "log.h"
#include "store.h"
#include "suspicion.h"
#include "vfio.h"
#include "vmm.h"

struct reconcile_conf {
	struct store *s;		/* borrowed, store_init()ed */
	const char *sysfs_root;
	const char *proc_root;		/* PROC_ROOT/proc is /proc */
	unsigned grace;			/* seconds a claim is left alone */
	unsigned lock_timeout;		/* seconds, for the release phase */
	bool dry_run;			/* decide only, change nothing */
	const struct suspicion_how *how;	/* suspect.* and the
						 * threshold; NULL: no
						 * suspicion decided */
};

/* What a pass found out about one claim. */
struct reconcile_claim {
	char vf[VF_ADDR_LEN + 1];
	char *instance_id;		/* owned */
	bool examined;			/* older than the grace period */
	bool verification;		/* vfrecover's (a verify_token) */
	enum vmm_state liveness;
	const char *reason;		/* static: why this liveness/outcome */
	int err;			/* errno behind reason, or 0 */
	long holder;			/* pid holding the VFIO device, or 0 */
	bool released;			/* removed from the ledger, durable */
	bool deconfigured;		/* 0 written to current_vgpu_type */
	int audit_err;			/* released, but its audit line
					 * failed: that errno; else 0 */
	const char *end;		/* the VMM check's end: "unclean" for
					 * a socket that refused connections
					 * (vmm_why_refused), else "unknown" */
	const char *ended;		/* released: end (7.3); else NULL */
	struct suspicion_verdict verdict;	/* released: the rule's */
};

enum reconcile_status {
	RECONCILE_OK,
	RECONCILE_UNAVAILABLE,		/* store unavailable: s->why */
	RECONCILE_LOCK_TIMEOUT,		/* the exclusive lock: s->why */
	RECONCILE_LOCK_FAILED,		/* cannot take the lock: s->why */
	RECONCILE_PERSIST,		/* saving the ledger failed: s->why */
	RECONCILE_NOMEM
};

/* A VF of the inventory that a process holds through VFIO with no claim
 * in the ledger (SPEC 8.1): nothing watches its guest. */
struct reconcile_unclaimed {
	char vf[VF_ADDR_LEN + 1];
	long pid;			/* one holder */
	char comm[32];			/* its PROC/PID/comm; "" unread */
};

struct reconcile_pass {
	struct reconcile_claim *v;	/* owned, ledger order */
	size_t n;
	struct reconcile_unclaimed *unclaimed;	/* owned, VF order */
	size_t nunclaimed;
	bool inventory_read;		/* unclaimed is the whole answer */
	size_t uncertain;		/* examined claims left uncertain */
	size_t released;
	size_t audit_failed;		/* releases whose audit line failed */
	enum reconcile_status status;
	const char *step;		/* a failed persist's atomic step */
};

/*
 * One pass (p needs no initialisation). 0, or -1 with p->status: the
 * store was unavailable (nothing examined), the release phase could not
 * take the lock, or the ledger could not be saved (nothing released; a
 * VF may already be deconfigured, which a gone VMM cannot mind). p->v
 * holds every claim decided so far in each case.
 */
int reconcileengine_run(const struct reconcile_conf *conf,
    struct reconcile_pass *p);

/*
 * The output line of one examined claim (SPEC.md 4.2): instance_id,
 * vf_address, liveness, released, reason, then deconfigured, pid, error
 * and dry_run where they apply. New reference, or NULL/ENOMEM.
 */
json_t *reconcileengine_claim_json(const struct reconcile_claim *r,
    bool dry_run);

/*
 * How a claim's outcome is logged: the level, and the message in *msg
 * (static): uncertain at warn, releases at info, alive and not yet
 * judged at debug.
 */
enum log_level reconcileengine_claim_msg(const struct reconcile_claim *r,
    bool dry_run, const char **msg);

/* Frees the results and empties p. */
void reconcileengine_pass_release(struct reconcile_pass *p);

/*
 * Rewrites the Prometheus textfile path (prom_write_textfile) with the
 * two counters of a long-running reconcile:
 * hypeman_instances_vgpu_liveness_uncertain_total (upstream's name) and
 * vfsentinel_claims_released_total, and the gauge
 * vfsentinel_unclaimed_vfs_in_use (the last pass's VFs in use with no
 * claim). 0 or -1/errno.
 */
int reconcileengine_write_metrics(const char *path,
    unsigned long long uncertain,
    unsigned long long released, size_t unclaimed);

#endif
