/*
 * auditfields.h - the audit lines of vfstore's state changes (SPEC.md
 * 4.1): which fields the line of each command carries, written with
 * auditlog_append(). The caller holds the store's exclusive lock and calls
 * after the change is durable; a failure leaves the change standing.
 * Nothing here prints or exits. Each writer returns 0, or -1 with errno
 * (auditlog_append()'s).
 *
 *	command		fields besides ts, prog, uid, user, outcome
 *	quarantine	card (--card), vf (--vf), vfs, reason, failures
 *	clear		card (--card), vf (--vf), vfs, reason, failures
 *	drain, undrain	card (--card), vf (--vf), vfs, reason
 *	report-failure,	vf, instance_id, assigned_at, threshold, failures,
 *	apply		nvrm (apply, when the check line had one)
 *	release		vf, instance_id, reason, domain, deconfigured
 *	reconcile	vf, instance_id, liveness, reason, deconfigured
 *	deconfigure	vf, reason
 *	edit		file, reason
 *	suspect		vf, instance_id, assigned_at, ended, source
 *	unsuspect	vf, instance_id, assigned_at, ended, source, cause
 *
 * "reason" is the operator's --reason (left out when none was given;
 * reconcile's is why the VMM is gone). "domain" is libvirt-hook's (its
 * release end, prog "libvirt-hook", has no reason); vfstore's release
 * has none. The release and reconcile lines have one writer,
 * claimlife_audit() (src/lib/claimlife.h), the same for every program
 * that ends a claim. The suspect and unsuspect lines (SPEC.md 7.3) are
 * written by suspect_audit() and suspect_audit_end() (src/lib/suspect.h),
 * the same for every program; cause is "ok", "failure", "verify" or
 * "clear".
 * "failures" is one array of the failures the VFs' records held (before
 * a quarantine or clear dropped them; after a report tallied the last),
 * each with its vf_address, instance_id, assigned_at and reported_at.
 * An operator command that changed nothing has outcome "unchanged".
 */
#ifndef VFS_AUDITFIELDS_H
#define VFS_AUDITFIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "healthfile.h"
#include "healthrules.h"
#include "store.h"
#include "sysfs.h"

/*
 * The failures of the records of the VFs of l in h, in l's order, each
 * with its vf_address: a new array, or NULL/ENOMEM.
 */
json_t *auditfields_failures(const struct health *h, const struct vf_list *l);

/*
 * An operator quarantine, clear, drain or undrain (the command's name) of
 * the VFs of l, all of card (NULL: one VF by --vf). failures (borrowed,
 * NULL for none) is what the records held before, from
 * auditfields_failures(); outcome NULL is "ok", "unchanged" a command
 * that changed nothing.
 */
int auditfields_vfs(const char *gpu_dir, const char *command,
    const char *card, const struct vf_list *l, const char *reason,
    const json_t *failures, const char *outcome);

/* The quarantine rep made ("report-failure", "apply"); nvrm NULL or "":
 * none. */
int auditfields_quarantined(const char *gpu_dir, const char *command,
    const struct health *h, const struct health_report *rep,
    unsigned threshold, const char *nvrm);

/* deconfigure --vf; reason --reason's or NULL. */
int auditfields_deconfigure(const char *gpu_dir, const char *vf,
    const char *reason);

/* An edit that replaced file (vf-health.json or vf-claims.json); reason
 * --reason's or NULL. */
int auditfields_edit(const char *gpu_dir, const char *file,
    const char *reason);

#endif
