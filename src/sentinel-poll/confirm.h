/*
 * confirm.h - upstream's assignment confirmation of sentinel-poll (SPEC
 * 4.4): a failed or ok verdict is held in a batch until the targets are
 * re-read; it is reported only if the instance still holds the same VF
 * and claim time, or is gone (a released wedge is still a wedge), and
 * dropped when the assignment changed during the poll.
 *
 * Ownership: a batch owns its array and each pending nvrm string; the
 * targets are borrowed from the scan's list, which must outlive the
 * batch's entries (confirm_clear() before the list is released). Nothing
 * here prints or exits.
 */
#ifndef VFS_CONFIRM_H
#define VFS_CONFIRM_H

#include <stddef.h>

#include "checkpool.h"
#include "targets.h"

/* A failed/ok verdict waiting for its assignment to be confirmed. */
struct pending {
	const struct target *t;		/* borrowed from the scan's list */
	enum checkpool_verdict v;
	char *nvrm;			/* owned, NULL for ok */
};

struct confirm_batch {
	struct pending *v;		/* owned */
	size_t n;
	long long since;		/* io_now_ms() of the first entry */
};

/*
 * Holds verdict v of target t (nvrm: the failure message of a failed
 * verdict, copied; NULL is ""). 0 or -1/ENOMEM, the batch unchanged.
 */
int confirm_add(struct confirm_batch *b, const struct target *t,
    enum checkpool_verdict v, const char *nvrm);

/* Empties the batch (frees the nvrm strings, keeps the array). */
void confirm_clear(struct confirm_batch *b);

/* Frees everything; b is empty. */
void confirm_release(struct confirm_batch *b);

enum confirm_result {
	CONFIRM_SAME,			/* the instance holds the assignment */
	CONFIRM_GONE,			/* the instance is no longer listed */
	CONFIRM_CHANGED			/* another VF or claim time: drop */
};

/* How the assignment of pe stands in now, the re-read targets. */
enum confirm_result confirm_judge(const struct pending *pe,
    const struct targets *now);

#endif
