/*
 * suspect.h - the suspect VFs, DATA_DIR/gpu/vf-suspect.json (SPEC.md 7.3):
 *
 *	{"version": 1, "suspects": [{"vf_address": "0000:e3:00.4",
 *	 "instance_id": "i-1", "assigned_at": "2026-12-07T10:00:00Z",
 *	 "ended_at": "2026-12-07T10:00:42Z", "ended": "unclean",
 *	 "source": "libvirt-hook: reason=crashed"}]}
 *
 * A VF whose assignment ended abruptly before its guest ever proved the
 * GPU initialised: the VMM may have been killed while the guest's driver
 * set the VF up, which wedges it. vfsentinel's own file (vf-health.json
 * stays upstream's), beside the other stores and under their lock:
 * loaded strictly (a file that does not load makes placement fail
 * closed, and is never overwritten) and saved with atomic_write(), as
 * vf-drain.json is. A suspicion is never a failure.
 *
 * Ownership: struct suspects owns its strings; suspects_release() frees
 * them. Nothing here prints or exits: -1 with errno, and for the loader
 * and saver s->why naming the file.
 */
#ifndef VFS_SUSPECT_H
#define VFS_SUSPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic.h"
#include "store.h"

#define SUSPECT_FILE "vf-suspect.json"
#define SUSPECT_NOUN "VF suspects"

struct suspect {
	char vf[VF_ADDR_LEN + 1];
	char *instance_id;		/* owned; the suspected assignment */
	char *assigned_at;		/* owned; its claim's claimed_at */
	char *ended_at;			/* owned, RFC 3339: the release */
	char *ended;			/* owned: clean, unclean, unknown */
	char *source;			/* owned: "REPORTER: evidence" */
	char *profile;			/* owned: the released claim's
					 * profile (SPEC.md 8.2); NULL when
					 * it had none */
};

struct suspects {
	struct suspect *v;		/* owned, sorted by vf */
	size_t n;
	size_t cap;
};

/* DATA_DIR/gpu/vf-suspect.json into buf. 0, or -1/ENAMETOOLONG. */
int suspects_path(const struct store *s, char *buf, size_t len);

/*
 * Loads the file; a missing file is no suspect. -1 with s->why ("PATH:
 * validate VF suspects suspect 0: ...") when it cannot be used
 * (s->unavailable for a missing DATA_DIR/gpu, s->nomem for ENOMEM): the
 * caller fails closed.
 */
int suspects_load(struct store *s, struct suspects *d);

/* Parses the file's text by the loader's rules (for it and fuzzing). */
int suspects_parse(const char *text, size_t len, struct suspects *d,
    char *why, size_t whylen);

/* The file's text (2-space indent, as the other stores). New buffer, or
 * NULL/ENOMEM (EILSEQ: a string that is not UTF-8). */
char *suspects_dump(const struct suspects *d, size_t *len);

/* Saves atomically and durably. -1 with errno, s->why and res. */
int suspects_save(struct store *s, const struct suspects *d,
    struct atomic_result *res);

/* The suspicion of vf (borrowed, valid until d changes), or NULL. */
const struct suspect *suspects_find(const struct suspects *d, const char *vf);

/* True for "clean", "unclean" and "unknown", the ends of SPEC.md 7.3. */
bool suspect_ended_valid(const char *ended);

/*
 * Adds a copy of sp (its strings borrowed) unless its VF is suspect
 * already (then nothing changes). Sets *changed when d changed. 0, or
 * -1/ENOMEM (EINVAL: a bad VF address or end).
 */
int suspects_add(struct suspects *d, const struct suspect *sp,
    bool *changed);

/* Ends the suspicion of vf; sets *changed when there was one. */
void suspects_remove(struct suspects *d, const char *vf, bool *changed);

/*
 * The audit lines of SPEC.md 7.3, appended under the store's exclusive
 * lock once the change is durable: "suspect" (vf, instance_id,
 * assigned_at, ended, source) for a new suspicion, "unsuspect" (the
 * same, and cause: "ok", "failure", "verify" or "clear") for its end.
 * 0, or -1 with errno (auditlog_append()'s; ENOMEM).
 */
int suspect_audit(const char *gpu_dir, const struct suspect *sp);
int suspect_audit_end(const char *gpu_dir, const struct suspect *sp,
    const char *cause);

/*
 * The counters resources-report derives from the audit log (SPEC.md
 * 7.3): "suspect" lines, and the verifications, the lines of command
 * "verify" by their "result", "pass", "fail" or "error" (vfrecover
 * --verify-suspects writes one per VF). Both generations of the log are
 * read. 0, or -1 with errno (auditlog_read()'s).
 */
struct suspect_counts {
	unsigned long long suspects;
	unsigned long long pass, fail, error, interrupted;
};
int suspect_audit_counts(const char *gpu_dir, struct suspect_counts *n);

void suspects_release(struct suspects *d);

#endif
