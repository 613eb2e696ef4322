/*
 * step.h - the frame of one vfrecover step, for recoverrun.c
 * (the engine; recoverrun.h is its interface): the run's state, the
 * step's line, journal entry and audit line, the configured commands it
 * runs and the store it loads (step_*: a recovery step). Events go to
 * the run's event function; nothing here prints or exits.
 */
#ifndef VFS_STEP_H
#define VFS_STEP_H

#include <limits.h>
#include <stdbool.h>

#include <jansson.h>

#include "claims.h"
#include "healthfile.h"
#include "healthrules.h"
#include "hostview.h"
#include "recoverrun.h"
#include "recovery.h"
#include "store.h"
#include "sysfs.h"
#include "vfaddr.h"

#define STEP_FAILED RECOVERRUN_NO

/* A run of one card. */
struct recovery_run {
	const struct recoverrun_conf *cf;
	const struct conf *conf;
	const char *card;
	bool resumed;
	struct hostview view;		/* its store, and what a step loads */
	char rdir[PATH_MAX], jpath[PATH_MAX];	/* for messages */
	int rdir_fd;			/* recovery/, checked (SPEC 7.2):
					   every file is reached through it */
	char jname[NAME_MAX + 1];	/* PF.json */
	char lastname[NAME_MAX + 1];	/* PF.last.json */
	char lockname[NAME_MAX + 1];	/* PF.lock */
	int lock_fd;
	int host_fd;			/* host.lock, held from quiesce to
					   restore */
	json_t *j;			/* the journal */
	struct vf_list vfs, wedged;
	const char *status_word;	/* the running step's status */
	json_t *fields;			/* the running step's fields */
	char env_card[VF_ADDR_LEN + 32];
	bool metrics_warned;		/* RECOVERRUN_EV_METRICS reported */
};

/* Tells ev to the event function; returns code. */
int step_tell(struct recovery_run *r, int code,
    struct recoverrun_event ev);

/* Tells an event of kind with only an error (or NULL); returns code. */
int step_fail(struct recovery_run *r, int code,
    enum recoverrun_event_kind kind, const char *error);

/* Hands obj (a new reference, or NULL) to the emit function. */
void step_emit(struct recovery_run *r, json_t *obj);

/*
 * Appends step's audit line (its outcome the running step's status,
 * fields the extra members) under the store's exclusive lock, taken here
 * unless locked. 0, or the exit code (the error reported as an event).
 */
int step_audit(struct recovery_run *r, enum recovery_step step,
    const json_t *fields, bool locked);

/* The running step's status and fields (a new reference; NULL: {}). */
void step_status(struct recovery_run *r, const char *word,
    json_t *fields);

/*
 * Emits the step's line, writes it to the journal (not in a dry run)
 * and audits it (unless audited). 0, STEP_FAILED for a failed step, or
 * the exit code (the error reported as an event).
 */
int step_finish(struct recovery_run *r, enum recovery_step step,
    bool audited);

/*
 * Writes step as started to the journal. 0, or the exit code (the
 * error reported as an event).
 */
int step_start(struct recovery_run *r, enum recovery_step step);

/*
 * Rewrites the metrics textfile, if any, from the journals; a failure is
 * reported (RECOVERRUN_EV_METRICS) once a run and changes nothing else.
 */
void step_metrics(struct recovery_run *r);

/*
 * Runs script (/bin/sh -c, args its $0...) for step, with VFSENTINEL_VF
 * when vf is not NULL; true when it exited 0. Its result is reported as
 * an event; a failure also goes into the step's "error".
 */
bool step_command(struct recovery_run *r, const char *step,
    const char *script, char *const args[], const char *vf);

/* sriov-manage OPT PF (step_command()). */
bool step_sriov(struct recovery_run *r, const char *step,
    const char *opt);

/*
 * Locks the store (exclusive or shared) and loads the health store
 * into r->view, and the ledger with claims. 0 with the store locked
 * (hostview_release() unlocks and frees), or the exit code (the error
 * reported as an event).
 */
int step_load(struct recovery_run *r, bool exclusive, bool claims);

#endif
