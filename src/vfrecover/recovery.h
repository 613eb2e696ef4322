/*
 * recovery.h - the parts of vfrecover (SPEC.md 4.6) that are not the
 * command line: the journal DATA_DIR/gpu/recovery/PF.json, the card's
 * SR-IOV state in sysfs, the idle rule, and the drain and clear of the
 * card's VFs in the health store.
 *
 * The journal is a JSON object owned by the caller:
 *
 *	{"version":1,"card":"0000:e3:00.0","started_at":"...",
 *	 "vfs":["0000:e3:00.4",...],"wedged":[...],
 *	 "steps":[{"step":"drain","status":"done","at":"..."},...]}
 *
 * A step's status is done, skipped or failed, or "started" while its
 * command runs (a journal left with quiesce started, by a kill -9, must
 * be restored first). Nothing here prints or exits.
 */
#ifndef VFS_RECOVERY_H
#define VFS_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "claims.h"
#include "conf.h"
#include "healthfile.h"
#include "hostview.h"
#include "store.h"
#include "sysfs.h"
#include "systemic.h"

/* The steps, in order. */
enum recovery_step {
	STEP_PREFLIGHT,
	STEP_DRAIN,
	STEP_IDLE,
	STEP_QUIESCE,
	STEP_DISABLE,
	STEP_ENABLE,
	STEP_RESTORE,
	STEP_VERIFY,
	STEP_CLEAR,
	RECOVERY_NSTEPS
};

#define RECOVERY_DRAIN_REASON "vfrecover: drain for SR-IOV cycle"

/* "preflight", ... (static). */
const char *recovery_step_name(enum recovery_step step);

/* The addresses of l as a JSON array. New reference, or NULL/ENOMEM. */
json_t *recovery_list_json(const struct vf_list *l);

/*
 * A new journal for card with its VFs and the wedged ones. New
 * reference, or NULL/ENOMEM.
 */
json_t *recovery_journal_new(const char *card, const struct vf_list *vfs,
    const struct vf_list *wedged);

/*
 * Opens DATA_DIR/gpu/recovery (made 0755 first with create) without
 * following a link, and checks it (SPEC 7.2): a real directory, owned by
 * root or by GPU_DIR's owner (root gives it to that owner), writable by
 * its owner alone. The descriptor, or -1 with errno (ENOENT: none, and
 * not create) and, for a refusal, the reason naming it in why ("" else).
 */
int recovery_dir_open(const char *gpu_dir, bool create, char *why,
    size_t whylen);

/*
 * Loads the journal name in the recovery directory dirfd: 1 with *out a
 * new reference, 0 when there is none, -1 with errno (EINVAL: not a
 * journal of card, with the reason in why).
 */
int recovery_journal_load(int dirfd, const char *name, const char *card,
    json_t **out, char *why, size_t whylen);

/* Writes j atomically as name in dirfd (mode 0644; given to the
 * directory's owner by root). 0 or -1/errno. */
int recovery_journal_save(int dirfd, const char *name, const json_t *j);

/* Sets step's status (now as "at"), replacing an earlier entry. 0/-1. */
int recovery_journal_set(json_t *j, enum recovery_step step,
    const char *status);

/* The status of step in j (borrowed), or NULL when it has none. */
const char *recovery_journal_status(const json_t *j, enum recovery_step step);

/* Removes the entries of steps from..RECOVERY_NSTEPS-1. */
void recovery_journal_drop_from(json_t *j, enum recovery_step from);

/*
 * Where a resumed run continues: the first step after preflight not done
 * or skipped. A cycle interrupted in quiesce, disable or enable runs
 * again as a whole: their entries (and restore's) are dropped from j and
 * STEP_QUIESCE is returned.
 */
enum recovery_step recovery_resume_point(json_t *j);

/*
 * The fields of step's line in a dry run (SPEC.md 4.6: the commands, the
 * VFs it would drain, what is busy now): {"vfs"} for drain and clear,
 * {"busy"} (borrowed; null when unknown) for idle, {"command"} for the
 * others, verify's with the wedged "vfs". New reference, or NULL.
 */
json_t *recovery_plan_fields(enum recovery_step step, const struct conf *c,
    const char *card, const struct vf_list *vfs,
    const struct vf_list *wedged, json_t *busy);

/*
 * Calls fn on each journal in GPU_DIR/recovery (PF.json, PF.last.json),
 * by name, with "state" set to "in_progress" or "last" (borrowed for the
 * call); CARD non-NULL: that card's files only, chosen by their name so
 * that an unreadable one is shown too. A file that does not load is
 * skipped. 0 (none, or no directory) or -1/errno (a refused directory:
 * recovery_dir_open()'s reason in why).
 */
int recovery_journals(const char *gpu_dir, const char *card,
    void (*fn)(json_t *journal, void *arg), void *arg, char *why,
    size_t whylen);

/* The journal's "vfs" or "wedged" list into l (appended). 0 or -1. */
int recovery_journal_list(const json_t *j, const char *key,
    struct vf_list *l);

/*
 * True when quiesce was started and no restore was done after it: DCGM
 * may be stopped and must be restored before anything else.
 */
bool recovery_needs_restore(const json_t *j);

/*
 * The card's VFs by its SR-IOV links: SYSFS/devices/PF/virtfn* (the
 * targets' basenames, sorted), into l. 0 (none) or -1/errno.
 */
int card_virtfns(const char *sysfs_root, const char *card,
    struct vf_list *l);

/* True when PF is a PCI device of this sysfs. */
bool card_present(const char *sysfs_root, const char *card);

/* Disabled: sriov_numvfs reads 0, or no virtfn* link is left. */
bool card_disabled(const char *sysfs_root, const char *card);

/*
 * Enabled again: want VFs by virtfn*, each with a readable, non-empty
 * nvidia/creatable_vgpu_types (sriov-manage has exited 0 without making
 * VFs). *have gets the number of ready VFs.
 */
bool card_enabled(const char *sysfs_root, const char *card,
    size_t want, size_t *have);

/*
 * Waits up to timeout_s seconds (polling every 200 ms; a stop signal,
 * sig_stop, ends the wait) until the card has no VF left, or until it
 * has want VFs ready (card_enabled(); *have the ready ones).
 * True when it got there.
 */
bool card_wait_disabled(const char *sysfs_root, const char *card,
    unsigned timeout_s);
bool card_wait_enabled(const char *sysfs_root, const char *card,
    size_t want, unsigned timeout_s, size_t *have);

/*
 * Waits up to timeout_s seconds (as above) until no process holds a
 * host /dev/nvidia* node open (holders.h). 0: none; 1: *held is a new
 * array of the holders ({"pid","comm","dev"}) still there; -1 with errno
 * when PROC_ROOT/proc cannot be scanned.
 */
int card_wait_unheld(const char *proc_root, unsigned timeout_s,
    json_t **held);

/*
 * The systemic-failure rule (systemic.h) of configuration conf over
 * the whole host's VFs (v: its health store and ledger loaded; the
 * inventory and placement are added to it), with the cards'
 * recoveries from the audit log of v's store. 0 or -1/errno (also when
 * the audit log cannot be read: a card that failed again after its
 * recovery must not be cycled unseen).
 */
int card_systemic(const struct conf *conf, struct hostview *v,
    struct systemic *out);

/*
 * The idle rule for vfs: each VF claimed (instance_id), allocated in
 * sysfs without a claim (current_type), both from the placement rule, or
 * held open through VFIO (pid) is one object of the new array *busy
 * ({"vf","why":"claimed|allocated|held",...}). proc_root is scanned once;
 * v holds the health store and the ledger, the inventory and placement
 * are added to it. 0 (the array may be empty) or -1 with errno (/proc
 * unreadable: nobody may be assumed idle; ENOMEM; sysfs unreadable).
 */
int card_busy(const char *sysfs_root, const char *proc_root,
    struct hostview *v, const struct vf_list *vfs, json_t **busy);

/*
 * Drains (drain true, as `vfstore drain --card`, now and for
 * RECOVERY_DRAIN_REASON) or undrains (as `vfstore undrain --card`) every
 * VF of vfs in d; *changed tells whether d must be saved. The health
 * records are not touched. 0 or -1/ENOMEM.
 */
struct drains;
int card_drains(struct drains *d, const struct vf_list *vfs,
    bool drain, bool *changed);

/*
 * Clears (as `vfstore clear --card`) every VF of vfs in h; *changed tells
 * whether h must be saved. The records that had failures go, as they
 * were, into the new array *dropped (health_record_json()), for the
 * audit line (the caller frees it, also after -1). 0 or -1/ENOMEM.
 */
int card_clear(struct health *h, const struct vf_list *vfs,
    bool *changed, json_t **dropped);

#endif
