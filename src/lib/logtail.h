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
 * guest_marker_match(). Fuzzed.
 */
#ifndef VFS_LOGTAIL_H
#define VFS_LOGTAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "guestproto.h"

#define LOGTAIL_LINE_MAX 65536	/* longest line kept, newline excluded */

struct logtail {
	unsigned long long offset;	/* bytes of the log consumed */
	bool skipping;			/* inside an over-long line */
	enum guest_marker last;		/* last marker of this pass */
	char *nvrm;			/* owned; the last FAILED's message,
					 * unescaped (\\ and \xNN) */
};

void logtail_init(struct logtail *t);
void logtail_release(struct logtail *t);

/* Starts a pass: forgets the last marker, keeps the position. */
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

#endif
