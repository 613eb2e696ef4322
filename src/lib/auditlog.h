/*
 * auditlog.h - DATA_DIR/gpu/audit.jsonl, one JSON line per state change an
 * operator command or vfrecover made (SPEC.md 4.1):
 *
 *	{"ts":...,"prog":"vfstore","command":"clear","card":"0000:e3:00.0",
 *	 "vfs":["0000:e3:00.4"],"reason":"...","uid":0,"user":"alice",
 *	 "outcome":"ok", ...the caller's extra fields}
 *
 * The caller holds the store's exclusive lock (store_lock()), so the size
 * check and the rotation to audit.jsonl.1 (one generation, at 1 MiB) race
 * with no other writer; the line itself is one write(2) on an O_APPEND
 * descriptor, then fsync(2). Nothing here prints or exits.
 */
#ifndef VFS_AUDITLOG_H
#define VFS_AUDITLOG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "store.h"

#define AUDIT_FILE "audit.jsonl"
#define AUDIT_OLD_FILE "audit.jsonl.1"
#define AUDIT_ROTATE_BYTES (1024 * 1024)

/* One line's fields. Every pointer is borrowed; NULL leaves it out. */
struct audit_event {
	const char *prog;		/* NULL: log_prog() */
	const char *command;		/* "clear", "drain", ... (required) */
	const char *card;
	const char *vf;
	const char (*vfs)[VF_ADDR_LEN + 1];	/* nvfs addresses, or NULL */
	size_t nvfs;
	const char *reason;
	const char *outcome;		/* NULL: "ok" */
	const json_t *extra;		/* an object whose members follow */
};

/*
 * Appends ev's line to GPU_DIR/audit.jsonl (created mode 0644; given to
 * the owner of GPU_DIR when root creates it), rotating first when the
 * file has reached AUDIT_ROTATE_BYTES. 0, or -1 with errno (EINVAL: no
 * command, or extra not an object; EILSEQ: a string not UTF-8).
 */
int auditlog_append(const char *gpu_dir, const struct audit_event *ev);

/* auditlog_append() of ev with extra as its extra fields: extra is a new
 * reference the call takes (and drops); NULL is -1/ENOMEM, for the
 * json_pack() of the caller. */
int auditlog_append_extra(const char *gpu_dir, struct audit_event *ev,
    json_t *extra);

/*
 * The line of ev as a new JSON object (ts now, uid, user filled in), for
 * auditlog_append() and tests. New reference, or NULL with errno.
 */
json_t *auditlog_line(const struct audit_event *ev);

/*
 * Calls fn on every line of GPU_DIR/audit.jsonl.1 then audit.jsonl (oldest
 * first) that names vf (its "vf" or a member of its "vfs") or card (its
 * "card"); NULL filters match everything. The object is borrowed for the
 * call. A line that is not a JSON object is skipped and counted in
 * *skipped (if not NULL). A nonzero return of fn stops the walk and is
 * returned; otherwise 0, or -1 with errno (a file that cannot be read;
 * a missing one is empty).
 */
int auditlog_read(const char *gpu_dir, const char *vf, const char *card,
    int (*fn)(const json_t *line, void *arg), void *arg, size_t *skipped);

/*
 * auditlog_read() of the lines whose bytes hold text (such as
 * "\"command\":\"clear\"", as auditlog_append() writes it: compact JSON):
 * the others are passed over unparsed, so a reader that wants a few lines
 * of a full log (2 MiB) does not parse all of it. Same returns.
 */
int auditlog_read_text(const char *gpu_dir, const char *text,
    int (*fn)(const json_t *line, void *arg), void *arg, size_t *skipped);

/*
 * auditlog_read() that calls fn on the last limit matching lines only: a
 * first walk counts the matches, a second skips all but the last limit
 * (lines appended between the walks are passed too). Needs no memory
 * for the lines and no lock. Same returns as auditlog_read().
 */
int auditlog_read_last(const char *gpu_dir, const char *vf, const char *card,
    unsigned long long limit, int (*fn)(const json_t *line, void *arg),
    void *arg, size_t *skipped);

#endif
