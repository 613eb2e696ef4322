/*
 * logtail.h - the serial-console transport: a per-target tail of a VM's
 * console log that finds the guest's HYPEMAN-GPU-INIT markers (SPEC.md
 * 3.3 and 4.4, upstream V2).
 *
 * Only whole lines of exactly the marker shape count; a partial last line
 * waits for its newline; a line over LOGTAIL_LINE_MAX bytes is discarded
 * together with the rest of it that arrives later; the last marker of a
 * pass wins. The state machine is pure (no I/O): the caller reads the log
 * from t->offset and feeds the bytes. Lines are matched with
 * guestproto_marker_match(); the guest kernel's own RmInitAdapter line (SPEC
 * 6.2) with guestproto_kernel_line_match(), kept apart (whether it counts is
 * the caller's policy). Fuzzed.
 *
 * struct logtails is the I/O around it: one tail per instance and
 * assignment, read from its console log with pread(2) through one window
 * of LOGTAIL_LINE_MAX + 1 bytes, following a rotation to LOG.0
 * (virtlogd) or LOG.1, at most a bound of bytes per pass (SPEC 7.2), and
 * only from a regular file.
 *
 * Ownership: a struct logtail owns nvrm; a struct logtails owns its
 * array, the strings of each tail and the window. Pointers to a tail are
 * borrowed until the set changes (logtails_get, logtails_sweep). Nothing
 * here prints: failures return -1 with errno, and a log that cannot be
 * opened or read is passed to the caller's logtail_error_fn, which logs it.
 */
#ifndef VFS_LOGTAIL_H
#define VFS_LOGTAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "guestproto.h"

#define LOGTAIL_LINE_MAX 65536	/* longest line kept, newline excluded */

struct logtail {
	unsigned long long offset;	/* bytes of the log consumed */
	bool skipping;			/* inside an over-long line */
	enum guest_marker last;		/* last marker of this pass */
	char *nvrm;			/* owned; the last FAILED's message,
					 * unescaped (\\ and \xNN) */
	char *kernel;			/* owned; the pass's last kernel line
					 * (guestproto_kernel_line_match), NULL
					 * for none */
};

void logtail_init(struct logtail *t);
void logtail_release(struct logtail *t);

/* Starts a pass: forgets the last marker and kernel line, keeps the
 * position. */
void logtail_pass_begin(struct logtail *t);

/* The log was truncated or replaced: read it again from 0, not skipping. */
void logtail_restart(struct logtail *t);

/*
 * Feeds buf, the log bytes starting at t->offset. Consumes every whole
 * line; an unterminated rest longer than LOGTAIL_LINE_MAX is consumed too
 * and the line's later bytes are skipped up to its newline. The rest is
 * left for the next call (give it again with more bytes). Returns the
 * number of bytes consumed (t->offset advanced by it), or -1/ENOMEM.
 * A caller buffer of LOGTAIL_LINE_MAX + 1 bytes always makes progress.
 */
ssize_t logtail_feed(struct logtail *t, const char *buf, size_t len);

/* --- the tails of every instance ---------------------------------------- */

/* The tail of one instance's console log, for one assignment. */
struct logtail_file {
	char *instance_id;		/* owned */
	char *vf;			/* owned */
	char *claimed_at;		/* owned */
	ino_t ino;			/* 0 until the log was opened */
	bool seen;			/* got since the last sweep */
	bool fresh;			/* no pass yet */
	bool agent_answered;		/* the agent answered over an
					 * endpoint in this assignment */
	struct logtail lt;
};

struct logtails {
	struct logtail_file *v;		/* owned */
	size_t n;
	char *buf;			/* owned, LOGTAIL_LINE_MAX + 1 */
};

enum logtail_error {
	LOGTAIL_OPEN,			/* the log of the pass: stat or open */
	LOGTAIL_READ,			/* a read failed */
	LOGTAIL_NOT_REGULAR		/* not a regular file (after links):
					 * not opened, or not read */
};

/*
 * A console log at path could not be used: what, and err (the errno;
 * 0 for LOGTAIL_NOT_REGULAR). A missing rotated file is not reported.
 */
typedef void logtail_error_fn(void *arg, const char *path,
    enum logtail_error what, int err);

/* true: end the pass now (a stop signal), with what was read so far. */
typedef bool logtail_stop_fn(void *arg);

/*
 * Opens the console log at path for reading without blocking, if it is
 * a regular file (safeopen.h: nothing else is ever opened), st its
 * status: the descriptor, or -1 with errno (IO_ENOTREG for any other
 * kind of file).
 */
typedef int logtail_open_fn(void *arg, const char *path, struct stat *st);

/* How a pass reads; every pointer borrowed. */
struct logtail_io {
	unsigned long long max;		/* bytes read per pass at most; a pass
					 * may read one window (LOGTAIL_LINE_MAX
					 * + 1) whatever max is, so that an
					 * over-long line is always passed */
	logtail_error_fn *report;	/* NULL: none */
	logtail_stop_fn *stop;		/* NULL: never; asked before each
					 * read */
	logtail_open_fn *open;		/* NULL: safeopen_file() by this
					 * process, links followed */
	void *arg;			/* for report, stop and open */
};

/* An empty set with its window. 0 or -1/ENOMEM. */
int logtails_init(struct logtails *ts);

/* Frees every tail and the window; ts is empty (and usable by init). */
void logtails_release(struct logtails *ts);

/*
 * The tail of instance_id, marked seen: the one it has, or a new one
 * read from 0 when the instance is new or holds another assignment (vf,
 * claimed_at) now. Borrowed until ts changes; NULL/ENOMEM.
 */
struct logtail_file *logtails_get(struct logtails *ts,
    const char *instance_id, const char *vf, const char *claimed_at);

/*
 * Where a fresh tail (no pass yet) begins: at offset of the log whose
 * inode is ino, the size the claim recorded when it was made (SPEC.md
 * 8.2), so what the log held before this assignment (an append='on' log)
 * is never read. The first pass reads from there when the log still has
 * that inode; a rotated log's rest from there first, then the new file
 * from 0; a replaced one from 0. ino 0, or a tail that made a pass:
 * nothing changes.
 */
void logtails_start(struct logtail_file *f, unsigned long long ino,
    unsigned long long offset);

/*
 * One pass of f over the log at path: forgets the last marker, then
 * feeds the log from f's offset to its end or to io->max bytes read
 * (f->lt.last and f->lt.nvrm are the pass's marker); the next pass goes
 * on from there. Anything but a regular file (after links: /dev/zero, a
 * FIFO, a device whose open would act) is refused before it is opened
 * (io->open, safeopen.h), without blocking. A log that shrank or has
 * another inode was rotated: the rest of the old file (PATH.0 or PATH.1
 * with the old inode; PATH.1 for a log truncated in place) is read from
 * the old offset first, then the new one from 0; a rest the bound cut
 * is finished by the next pass first. Errors go to io->report and end
 * the pass. 0, or -1/ENOMEM.
 */
int logtails_pass(struct logtails *ts, struct logtail_file *f,
    const char *path, const struct logtail_io *io);

/* Drops the tails not got since the last sweep. */
void logtails_sweep(struct logtails *ts);

#endif
