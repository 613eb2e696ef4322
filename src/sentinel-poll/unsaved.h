/*
 * unsaved.h - the failures sentinel-poll saw that the store may not hold
 * yet (SPEC 7.2: nothing the sentinel saw is lost while it runs). Per
 * assignment (instance, VF, claim time) and per source, the last failure
 * seen: the agent's FAILED answer, the console's FAILED marker, the
 * guest kernel's console line. The poller reports each again at every
 * scan until the store holds the assignment's failure (storeread.h) or
 * the assignment is no longer listed, so a report that vfstore apply
 * could not save (its lock held, a failed write) is not lost when the
 * console tail has moved past it or the agent stopped answering.
 *
 * Ownership: a struct unsaved owns its entries, their keys and texts.
 * An entry is borrowed until the set changes. Nothing here prints.
 */
#ifndef VFS_UNSAVED_H
#define VFS_UNSAVED_H

#include <stdbool.h>
#include <stddef.h>

#include "targets.h"

enum unsaved_source {
	UNSAVED_AGENT,			/* a FAILED answer */
	UNSAVED_MARKER,			/* a FAILED console marker */
	UNSAVED_KERNEL,			/* the guest kernel's console line */
	UNSAVED_N
};

struct unsaved_entry {
	char *key;			/* owned: targets_key() */
	char *nvrm[UNSAVED_N];		/* owned: the failure seen, or NULL */
	bool fresh[UNSAVED_N];		/* seen in this scan */
	bool listed;			/* listed since the last sweep */
};

struct unsaved {
	struct unsaved_entry *v;	/* owned */
	size_t n;
};

/*
 * Keeps nvrm (copied; NULL is "") as t's failure from src, seen in this
 * scan. 0 or -1/ENOMEM.
 */
int unsaved_set(struct unsaved *u, const struct target *t,
    enum unsaved_source src, const char *nvrm);

/* Forgets t's failure from src (a newer OK from the same source). */
void unsaved_clear(struct unsaved *u, const struct target *t,
    enum unsaved_source src);

/* t's entry, marked listed, or NULL (none, or ENOMEM). Borrowed. */
struct unsaved_entry *unsaved_get(struct unsaved *u, const struct target *t);

/* true if e holds a failure to report again: one not seen in this scan,
 * or (console sources) seen in this scan, which waits for the store. */
bool unsaved_pending(const struct unsaved_entry *e);

/* Forgets every failure of e: the store holds the assignment's. */
void unsaved_saved(struct unsaved_entry *e);

/*
 * The end of a scan: forgets the entries whose assignment was not listed
 * (unsaved_get) and those without a failure; the rest become not fresh
 * and not listed.
 */
void unsaved_sweep(struct unsaved *u);

void unsaved_release(struct unsaved *u);

#endif
