/*
 * quarantine.h - the engine of `vfstore quarantine` and `vfstore clear`
 * (SPEC.md 4.2) over a health state the caller has loaded under the
 * store's exclusive lock: the change to each VF, the save, and the audit
 * line that keeps the failures the records held (auditfields.h). Nothing
 * declared here prints or exits; the commands beside it in quarantine.c
 * (cmd_quarantine, quarantine_vfs, quarantine_log) are vfstore.h's.
 */
#ifndef VFS_QUARANTINE_H
#define VFS_QUARANTINE_H

#include <stdbool.h>

#include <jansson.h>

#include "healthfile.h"
#include "store.h"
#include "sysfs.h"

enum vfops_status {
	VFOPS_DONE,		/* durable (or nothing to change) */
	VFOPS_NOMEM,		/* nothing saved */
	VFOPS_PERSIST		/* the save failed (step, s->why) */
};

struct vfops_result {
	enum vfops_status status;
	const char *step;		/* PERSIST: the atomic step */
	int audit_err;			/* DONE, but the audit line failed:
					 * its errno; else 0 */
	bool changed;			/* some VF changed: else the command
					 * was a no-op, audited "unchanged" */
};

/*
 * Quarantines (quarantine true) or clears every VF of l in h that this
 * changes, saves h if that changed it (or its load applied the
 * threshold), then audits the command: card is --card's (NULL for
 * --vf), reason --reason's (or NULL). A VF quarantined already (by an
 * operator or by its failures) is left as it is, failures included, as
 * is a VF without a record for clear (SPEC.md 6.3); changed[i] (l->n
 * of them) says which VFs changed, and the audit line's outcome is
 * "unchanged" when none did.
 */
void quarantine_run(struct store *s, struct health *h, bool quarantine,
    const struct vf_list *l, const char *card, const char *reason,
    bool *changed, struct vfops_result *r);

/* The output line of vf after quarantine_run(): its record (quarantine) or
 * {"vf_address":...,"quarantined":false} (clear), with "outcome":
 * "quarantined", "cleared", or "unchanged" (changed false). New ref or
 * NULL. */
json_t *quarantine_json(const struct health *h, bool quarantine, const char *vf,
    bool changed);

#endif
