/*
 * recoverrun.h - the step machine of vfrecover (SPEC.md 4.6): preflight,
 * drain, idle, quiesce, disable, enable, restore, verify and clear of one
 * card, each written to the journal (recovery.h) and audited before the
 * next starts, and the resume of a journal a killed run left: restore
 * first if it is owed, then from the first step not done (a cycle again
 * as a whole). A dry run prints the plan and changes nothing.
 *
 * Nothing here prints or exits: step and result lines go to the caller's
 * emit function, whatever is worth a log line to its event function, and
 * each audit line to its audit function (auditlog_append() in the program,
 * called under the store's exclusive lock). SIGTERM and SIGINT (sig.h)
 * finish the running step, restore if needed and end the run.
 */
#ifndef VFS_RECOVERRUN_H
#define VFS_RECOVERRUN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "auditlog.h"
#include "conf.h"

#define RECOVERRUN_NO 1		/* a step's "no": the card stays drained */

enum recoverrun_event_kind {
	RECOVERRUN_EV_PATH,	/* a path under data_dir is too long */
	RECOVERRUN_EV_UNAVAILABLE,	/* error: the store is unavailable
				 * (or its directory missing) */
	RECOVERRUN_EV_LOCK,	/* error: the store cannot be locked */
	RECOVERRUN_EV_NOMEM,	/* error (or NULL): out of memory */
	RECOVERRUN_EV_AUDIT_LOCK,	/* error: nor for the audit line */
	RECOVERRUN_EV_AUDIT,	/* step, error: an audit line not written */
	RECOVERRUN_EV_JOURNAL,	/* path, error: the journal not written */
	RECOVERRUN_EV_SYSTEMIC,	/* error: the systemic rule failed */
	RECOVERRUN_EV_SAVE,	/* error: the health store or the drain
				   file not saved */
	RECOVERRUN_EV_IDLE,	/* error: cannot tell whether VFs are idle */
	RECOVERRUN_EV_MOVE,	/* path, error: the journal not moved */
	RECOVERRUN_EV_DIR,	/* path, error: no journal directory */
	RECOVERRUN_EV_CARD_BUSY,	/* error: another run holds the card */
	RECOVERRUN_EV_CARD_LOCK,	/* error: the card cannot be locked */
	RECOVERRUN_EV_LOAD,	/* error: the journal does not load */
	RECOVERRUN_EV_COMMAND,	/* ok, step, command, result, output */
	RECOVERRUN_EV_NO_VERIFY,	/* a warning: no verification boot */
	RECOVERRUN_EV_STOPPED,	/* step: a stop signal ended the run */
	RECOVERRUN_EV_HOST_WAIT,	/* path: the card that holds the host's
					 * quiesce-restore window, waited for */
	RECOVERRUN_EV_HOST_BUSY,	/* error: it stayed held past --wait */
	RECOVERRUN_EV_METRICS	/* path, error: a warning, once a run:
				 * the textfile not written */
};

/* What happened; the fields the kind names are set, borrowed for the
 * call. */
struct recoverrun_event {
	enum recoverrun_event_kind kind;
	const char *error;		/* NULL for none */
	const char *path;
	const char *step;
	const char *command;		/* COMMAND: the script or program */
	const char *result;		/* COMMAND: runcmd_describe() */
	const char *output;		/* COMMAND: its output, len bytes */
	size_t len;
	bool ok;			/* COMMAND: it exited 0 */
};

/* Takes one output line (the reference too; NULL: out of memory). */
typedef void recoverrun_emit_fn(void *arg, json_t *line);
typedef void recoverrun_event_fn(void *arg,
    const struct recoverrun_event *ev);
/* Appends ev to GPU_DIR's audit log: 0, or -1 with errno. */
typedef int recoverrun_audit_fn(void *arg, const char *gpu_dir,
    const struct audit_event *ev);

struct recoverrun_conf {
	const struct conf *conf;	/* data_dir, sysfs_root, recovery.* */
	const char *card;		/* the PF, a valid address */
	const char *proc_root;		/* PROC is PROC_ROOT/proc */
	unsigned wait;			/* --wait: seconds for idle */
	unsigned lock_timeout;		/* seconds, for the store */
	const char *metrics;		/* the textfile (metrics.h)
					 * rewritten after each journal
					 * change, or NULL */
	bool dry_run, force;
	recoverrun_emit_fn *emit;
	recoverrun_event_fn *event;
	recoverrun_audit_fn *audit;
	void *arg;			/* for emit, event and audit */
};

/*
 * Runs the recovery (or with dry_run the plan) of conf->card; conf is
 * borrowed. The exit code (SPEC.md 4.6): 0 recovered (a dry run that
 * would proceed), RECOVERRUN_NO a step failed or the card is busy, 64 a
 * path too long, 65 the journal is not one, 69 the store unavailable, 71
 * out of memory, 74 the journal, the audit log or the store could not be
 * written, 75 the card is locked by another run, or a stop signal.
 */
int recoverrun_run(const struct recoverrun_conf *conf);

#endif
