/*
 * targets.h - the guests sentinel-poll checks: copied from the claims
 * ledger (store.h) or parsed from --targets lines, one JSON object each:
 * {"vf_address", "instance_id", "claimed_at", "vsock", "control_socket",
 * "app_log", "console_offset", "console_inode"} (the last two decimal
 * strings, as in the ledger).
 *
 * Ownership: a struct targets owns its array and every string of its
 * targets (deep copies); targets_release() releases them. Pointers into a
 * list are borrowed until the list changes. Nothing here prints: a
 * listing that fails returns -1 with errno and its reason in a struct
 * targets_why, and a skipped --targets line is passed to the caller's
 * targets_bad_fn, which logs it.
 */
#ifndef VFS_TARGETS_H
#define VFS_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "claims.h"
#include "store.h"
#include "storeread.h"

struct target {
	char *vf;			/* all owned */
	char *instance_id;
	char *claimed_at;
	char *vsock;			/* NULL when absent */
	char *control_socket;
	char *app_log;
	unsigned long long console_offset;	/* the assignment's console
					 * starts there, in console_inode
					 * (SPEC 8.2); 0, 0: unknown */
	unsigned long long console_inode;
};

struct targets {
	struct target *v;		/* owned */
	size_t n;
	size_t cap;
};

/* Frees every target and empties ts. */
void targets_release(struct targets *ts);

/* Appends a deep copy of src's fields. 0 or -1/ENOMEM. */
int targets_add(struct targets *ts, const struct target *src);

/* Appends a deep copy of every target of src. 0 or -1/ENOMEM. */
int targets_append_all(struct targets *ts, const struct targets *src);

/* Borrowed pointer into ts (until ts changes), or NULL. */
const struct target *targets_find(const struct targets *ts,
    const char *instance_id);

/* Appends the ledger's claims. 0 or -1/ENOMEM. */
int targets_from_claims(const struct claims *c, struct targets *ts);

/*
 * Parses one --targets line and appends its target: claimed_at defaults
 * to "", a valid vf_address and a non-empty instance_id are required.
 * 1 appended; 0 a bad line, *why saying why (static, or borrowed until
 * the next jsonl_parse()); -1/ENOMEM.
 */
int targets_parse_line(struct targets *ts, const char *line, size_t len,
    const char **why);

/* --- listing ------------------------------------------------------------ */

#define TARGETS_WHY_MAX 1100	/* a reason: a path, a store reason, errno */

/* Why a listing failed. */
struct targets_why {
	char text[TARGETS_WHY_MAX];	/* truncated if longer */
	bool nomem;			/* the ledger did not fit in memory
					 * (store.h nomem): fatal, not a
					 * list error */
};

/* A skipped --targets line: why is NULL for one over the line limit. */
typedef void targets_bad_fn(void *arg, unsigned long lineno, const char *why);

/* Where a scan's targets come from. Every pointer is borrowed. */
struct targets_source {
	const char *path;		/* NULL: the ledger; "-": stdin_list */
	const char *data_dir;		/* the ledger's data directory */
	unsigned lock_timeout;		/* seconds for the shared lock */
	const struct targets *stdin_list; /* --targets -, read once */
	storeread_wait_fn *wait;	/* naps in the lock wait (NULL:
					 * nanosleep; storeread.h) */
	void *wait_arg;
};

/*
 * Appends the claims of the ledger in src->data_dir, read under a shared
 * lock waited for as storeread_lock(). 0, or -1 with errno and why set.
 */
int targets_from_ledger(const struct targets_source *src,
    struct targets *ts, struct targets_why *why);

/* Waits until fd can be read: 0, or -1 when the reading must stop. */
typedef int targets_ready_fn(void *arg, int fd);

/*
 * Appends the --targets lines read from fd to its end; a bad or over-long
 * line is skipped and passed to bad (NULL: quiet). ready (NULL: none) is
 * asked before each read, so that a stop can end the wait for a pipe.
 * 0, or -1 with errno and why set (a read error, ENOMEM; EINTR: ready
 * said stop).
 */
int targets_read_fd(int fd, struct targets *ts, targets_bad_fn *bad,
    void *arg, targets_ready_fn *ready, struct targets_why *why);

/* targets_read_fd() of the file at path, opened without blocking and
 * refused (EINVAL) unless a regular file. 0, or -1 with errno and why. */
int targets_from_file(const char *path, struct targets *ts,
    targets_bad_fn *bad, void *arg, struct targets_why *why);

/*
 * Appends every target of src, before any filter: the ledger, a copy of
 * the stdin list, or the file (bad as for targets_read_fd()). 0, or -1
 * with errno and why set.
 */
int targets_list(const struct targets_source *src, struct targets *ts,
    targets_bad_fn *bad, void *arg, struct targets_why *why);

/* --- marks -------------------------------------------------------------- */

/* The key of t's assignment, "INSTANCE\nVF\nCLAIMED_AT" (the caller frees
 * it); NULL/ENOMEM. */
char *targets_key(const struct target *t);

/*
 * A set of assignments (instance, VF, claim time) kept from scan to scan,
 * e.g. the targets already warned about. Owns its keys.
 */
struct target_mark {
	char *key;			/* owned */
	bool seen;			/* marked since the last sweep */
	char *why;			/* owned: the caller's, NULL at first */
	long long at;			/* the caller's, 0 at first */
};

struct target_marks {
	struct target_mark *v;		/* owned */
	size_t n;
};

/* Marks t's assignment: 1 if new to the set, 0 if in it, -1/ENOMEM. */
int targets_marks_set(struct target_marks *m, const struct target *t);

/* Marks t's assignment and returns its mark (new: why NULL, at 0),
 * owned by m until the next sweep; NULL/ENOMEM. */
struct target_mark *targets_marks_get(struct target_marks *m,
    const struct target *t);

/* true if t's assignment is in m; marks nothing. */
bool targets_marks_has(const struct target_marks *m, const struct target *t);

/*
 * A failure of m's assignment for why (not NULL) at now: 1 when it
 * repeats the last new one (the same why, less than every ago), 0 when
 * it is new (the first, another why, or the same again after every),
 * and then becomes the last new one; -1/ENOMEM when why could not be
 * kept (m then has none, so the next is new). now and every: any one
 * unit, e.g. milliseconds of io_now_ms().
 */
int targets_mark_repeat(struct target_mark *m, const char *why,
    long long now, long long every);

/* Forgets the assignments not marked since the last sweep. */
void targets_marks_sweep(struct target_marks *m);

/* Frees every key and empties m. */
void targets_marks_release(struct target_marks *m);

#endif
