/*
 * editengine.h - `vfstore edit`: the visudo of the health store and the
 * claims ledger (SPEC.md 4.2).
 *
 * The caller holds the store's exclusive lock from editengine_begin() to
 * editengine_release(), so no writer (apply, report-failure, vfpick) can
 * slip a change in between the copy and the replacement, and none is
 * lost: renaming a hand-edited file into place without the lock loses
 * every change made since the copy was taken.
 *
 *	editengine_begin()	copy the file (or an empty document) to a
 *				temporary file in tmpdir
 *	editengine_run_editor()	$VISUAL, else $EDITOR, else vi, on it
 *	editengine_check()	the loader's rules; canonical form; changed?
 *	editengine_commit()	the store's own atomic save
 *	editengine_release()	remove the temporary file, free
 *
 * Nothing here prints; reasons go to e->why (the loader's own wording
 * for a refused edit).
 */
#ifndef VFS_EDITENGINE_H
#define VFS_EDITENGINE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "claims.h"
#include "healthfile.h"
#include "store.h"

enum storeedit_kind {
	STOREEDIT_HEALTH,		/* vf-health.json */
	STOREEDIT_CLAIMS		/* vf-claims.json */
};

struct storeedit {
	enum storeedit_kind kind;
	const char *path;		/* borrowed from the store */
	char tmp[PATH_MAX];		/* the editor's copy; "" when none */
	char *orig;			/* owned: the file or empty doc */
	size_t origlen;
	bool missing;			/* the file did not exist */
	struct health h;		/* the checked edit (kind health) */
	struct claims c;		/* the checked edit (kind claims) */
	char why[1024];
};

/* "health" (also NULL: the default) or "claims". 0 or -1/EINVAL. */
int editengine_kind_parse(const char *name, enum storeedit_kind *kind);

/* The file's name in DATA_DIR/gpu ("vf-health.json"). Static. */
const char *editengine_file_name(enum storeedit_kind kind);

/*
 * Copies the file to a new temporary file tmpdir/vfstore-edit.NAME.XXXXXX.json
 * (mode 0600). A missing file is offered as the empty document; a file
 * the loader refuses is offered as it is, so that it can be repaired.
 * -1 with errno and e->why: the file cannot be read (unavailable), or
 * the temporary file cannot be written (EIO family).
 */
int editengine_begin(struct storeedit *e, const struct store *s,
    enum storeedit_kind kind, const char *tmpdir);

/*
 * The editor command: $VISUAL, else $EDITOR (either only when not
 * empty), else "vi". Borrowed from the environment or static.
 */
const char *editengine_editor(void);

/*
 * Runs the editor on the temporary file as git and visudo do, through
 * /bin/sh -c 'EDITOR "$@"', so that EDITOR may carry arguments
 * ("emacs -nw"). SIGINT and SIGQUIT are ignored while it runs (a ^C is
 * the editor's). *status gets the waitpid(2) status. 0, or -1/errno when
 * it could not be started (fork).
 */
int editengine_run_editor(const struct storeedit *e, int *status);

/*
 * Reads the edited copy back and validates it with the loader's rules
 * (health_parse(), claims_parse()). 1: valid and different from the file
 * in its canonical form, ready for editengine_commit(); 0: valid and the
 * same (nothing to write); -1: refused, errno EINVAL and the loader's
 * reason in e->why, or another errno when the copy cannot be read.
 */
int editengine_check(struct storeedit *e);

/* Saves the checked edit with health_save()/claims_save(). -1 with
 * errno, s->why and res as they set them. */
int editengine_commit(struct storeedit *e, struct store *s,
    struct atomic_result *res);

/* Removes the temporary file and frees everything; e may be reused. */
void editengine_release(struct storeedit *e);

#endif
