/*
 * applybatch.h - the health state of the apply engine, for applyengine.c (the
 * batch loop and the answers; applyengine.h is its interface): the engine's
 * struct, a batch's items, and the cached load of the health file (kept
 * while the file's identity is unchanged) with the locked batch that
 * loads, applies, saves and audits (the applybatch_* functions). Events
 * go to the engine's event function; nothing here prints or exits.
 */
#ifndef VFS_APPLYBATCH_H
#define VFS_APPLYBATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "applyengine.h"
#include "claims.h"
#include "filekey.h"
#include "healthfile.h"
#include "suspect.h"
#include "healthrules.h"
#include "jsonl.h"

/* One input line of a batch. */
struct item {
	json_t *in;			/* the parsed line, or NULL */
	enum apply_check check;
	struct health_report rep;
	bool report;			/* a well-formed failed/ok line */
	const char *error;		/* static or in errbuf */
	const char *audit_error;	/* in errbuf: applied, not audited */
	const char *unsuspect;		/* it ended its VF's suspicion:
					   the cause, "ok" or "failure" */
	char errbuf[160];
	bool done;			/* answered from the cache */
};

struct apply {
	const struct apply_conf *conf;	/* borrowed */
	struct jsonl_reader r;
	struct health cache;
	struct filekey_cache key;	/* the file cache came from */
	struct claims ccache;		/* the ledger, for the OKs that set
					   ok_at (SPEC.md 7.3) */
	struct filekey_cache ckey;
	struct suspects scache;		/* the suspect VFs (applysuspect.h) */
	struct filekey_cache skey;
	bool unavailable;		/* last load failed; why in reason */
	bool persist_failed;
	char reason[1024];
	unsigned long long init_failures, quarantines, checks[APPLY_CHECK_N];
	bool metrics_dirty;
	bool metrics_warned;		/* the last write failed, reported */
	long long metrics_at;		/* io_now_ms() of the last write */
	struct item items[APPLY_BATCH_MAX];
	size_t n;
};

/* Tells ev to the event function, if there is one. */
void applybatch_tell(struct apply *ap, const struct apply_event *ev);

/* Reloads the cache when the health file changed (no lock). */
void applybatch_refresh(struct apply *ap);

/* Answers what the cache can; true if some report needs the lock. */
bool applybatch_from_cache(struct apply *ap);

/* Marks every report still unanswered as failed with prefix, reason. */
void applybatch_fail_pending(struct apply *ap, const char *prefix,
    const char *reason);

/*
 * Lock, fresh load, every report of the batch in order, one save and the
 * audit of its quarantines; a failure is in the pending items' errors.
 */
void applybatch_locked(struct apply *ap);

#endif
