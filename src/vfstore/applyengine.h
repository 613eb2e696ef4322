/*
 * applyengine.h - the streaming engine of `vfstore apply` (SPEC.md 4.3): check
 * lines (JSON, one a line) in, one answer line out for each, in order.
 * Lines are taken in batches of up to APPLY_BATCH_MAX; a batch whose
 * reports change nothing is answered from a cached load (kept while the
 * health file's identity is unchanged), the others under one exclusive
 * lock, one fresh load and one save. An answer is given only after the
 * save returned. Counters go to an optional Prometheus textfile.
 *
 * A quarantine is audited (auditfields_quarantined(), under the lock,
 * after the save); a failed audit write is reported (APPLY_EV_AUDIT) and the
 * line's answer carries its outcome and an "error".
 *
 * Nothing here prints or exits: answer lines go to the caller's emit
 * function, and whatever is worth a log line is reported to its event
 * function. SIGTERM and SIGINT end the wait for input (sig.h), never a
 * batch half-way.
 */
#ifndef VFS_APPLYENGINE_H
#define VFS_APPLYENGINE_H

#include <stdbool.h>

#include <jansson.h>

#include "checkline.h"
#include "healthrules.h"
#include "store.h"

#define APPLY_BATCH_MAX 256	/* check lines per lock/load/save */

/* The check line's verdicts (checkline.h), in the engine's words. */
enum apply_check {
	APPLY_OK = CHECKLINE_OK,
	APPLY_FAILED = CHECKLINE_FAILED,
	APPLY_UNKNOWN = CHECKLINE_UNKNOWN,
	APPLY_RPC_ERROR = CHECKLINE_RPC_ERROR,
	APPLY_UNSUPPORTED = CHECKLINE_UNSUPPORTED,
	APPLY_LIST_ERROR = CHECKLINE_LIST_ERROR,
	APPLY_CHECK_N = CHECKLINE_VERDICT_N
};

enum apply_event_kind {
	APPLY_EV_UNAVAILABLE,	/* error; repeat: reported before */
	APPLY_EV_AVAILABLE,	/* the state loads again */
	APPLY_EV_BAD_LINE,	/* lineno, error: the line is skipped */
	APPLY_EV_PERSIST,	/* step, error: the save failed */
	APPLY_EV_REPORT,	/* rep, failure, nvrm; error: not applied */
	APPLY_EV_METRICS,	/* path, error: first failed write only */
	APPLY_EV_PEER_GONE,	/* the output's reader went away */
	APPLY_EV_READ,		/* error: reading the input (or setting
				 * up the stop signals) failed */
	APPLY_EV_AUDIT		/* rep, error: the audit line of its
				 * quarantine (durable) was not written */
};

struct apply_event {
	enum apply_event_kind kind;
	const char *error;
	bool repeat;
	unsigned long lineno;
	const char *step;
	const struct health_report *rep;
	bool failure;
	const char *nvrm;		/* "" when the line has none */
	const char *path;
	const struct store *s;		/* the store (UNAVAILABLE) */
};

/* Takes one answer line (the reference too); 0, or nonzero to stop. */
typedef int apply_emit_fn(void *arg, json_t *line);
typedef void apply_event_fn(void *arg, const struct apply_event *ev);
/* After a batch's answers (they may be buffered until then); 0, or
 * nonzero to stop as emit's. */
typedef int apply_flush_fn(void *arg);

struct apply_conf {
	struct store *s;		/* paths set (store_init) */
	unsigned threshold;
	unsigned lock_timeout;		/* seconds */
	const char *metrics;		/* textfile path, or NULL */
	int in_fd;			/* the check lines */
	int out_fd;			/* watched for its reader going away */
	apply_emit_fn *emit;
	apply_event_fn *event;
	apply_flush_fn *flush;		/* or NULL */
	void *arg;			/* for emit, event and flush */
};

/* "ok", "failed", ..., "list_error" (static). */
const char *applyengine_check_name(enum apply_check k);

struct apply;

/* An engine reading conf->in_fd; conf is borrowed. NULL/ENOMEM. */
struct apply *applyengine_new(const struct apply_conf *conf);

/*
 * Runs until end of input or a stop signal (0). Otherwise the emit
 * function's nonzero result, or -1: reading the input failed, the stop
 * signals could not be set up (both reported as APPLY_EV_READ) or the
 * output's reader went away (reported as APPLY_EV_PEER_GONE).
 */
int applyengine_run(struct apply *ap);

void applyengine_free(struct apply *ap);

#endif
