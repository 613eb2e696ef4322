/*
 * edit.c - `vfstore edit [health|claims]`: the store changed by hand, the
 * visudo of the store (the logic is editengine.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "auditfields.h"
#include "editengine.h"

#include "vfstore.h"

/* Runs the editor; 0, or 1 when it failed (nothing is written then). */
static int
edit_once(struct storeedit *e)
{
	int status;

	if (editengine_run_editor(e, &status) < 0) {
		log_msg(LVL_ERROR, "cannot start the editor", "{s:s, s:s}",
		    "editor", editengine_editor(), "error", strerror(errno));
		return EX_OSERR;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	log_msg(LVL_ERROR, "the editor failed; nothing written", "{s:s, s:i}",
	    "editor", editengine_editor(), WIFEXITED(status) ? "exit_status" :
	    "signal", WIFEXITED(status) ? WEXITSTATUS(status) :
	    WTERMSIG(status));
	return EXIT_NO;
}

/* On a terminal, as visudo does: true to edit the refused copy again. */
static bool
ask_again(const char *file, const char *why)
{
	char line[64];
	int ch;

	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
		return false;
	fprintf(stderr, "%s: %s\n", file, why);
	for (;;) {
		fputs("What now? (e)dit again, (q)uit without saving: ",
		    stderr);
		if (fgets(line, sizeof(line), stdin) == NULL)
			return false;
		if (strchr(line, '\n') == NULL)
			while ((ch = getchar()) != EOF && ch != '\n')
				continue;
		if (line[0] == 'e' || line[0] == 'q')
			return line[0] == 'e';
	}
}

/* Edits until the copy passes the loader's rules; *changed as
 * editengine_check() says. 65 when refused and not edited again. */
static int
edit_until_valid(struct storeedit *e, const char *file, int *changed)
{
	int rc;

	for (;;) {
		if ((rc = edit_once(e)) != 0)
			return rc;
		if ((*changed = editengine_check(e)) >= 0)
			return 0;
		if (errno != EINVAL) {
			log_msg(LVL_ERROR, "cannot read the edited copy",
			    "{s:s}", "error", e->why);
			return EX_IOERR;
		}
		log_msg(LVL_ERROR, "refused the edit; the file is unchanged",
		    "{s:s, s:s}", "file", file, "error", e->why);
		if (!ask_again(file, e->why))
			return EX_DATAERR;
	}
}

/* Copies, edits, checks and saves, all under the exclusive lock. */
static int
edit_locked(struct ctx *c, enum storeedit_kind kind, int *changed)
{
	const char *file = editengine_file_name(kind);
	const char *tmpdir = getenv("TMPDIR");
	struct atomic_result res;
	struct storeedit e;
	int rc;

	if (tmpdir == NULL || tmpdir[0] == '\0')
		tmpdir = "/tmp";
	if (editengine_begin(&e, &c->s, kind, tmpdir) < 0) {
		rc = errno == ENOMEM ? EX_OSERR : e.orig == NULL ?
		    EX_UNAVAILABLE : EX_IOERR;
		log_msg(LVL_ERROR, rc == EX_UNAVAILABLE ? "VF health state "
		    "unavailable" : "cannot copy the file for the editor",
		    "{s:s}", "error", e.why);
	} else if ((rc = edit_until_valid(&e, file, changed)) == 0 &&
	    *changed > 0 && editengine_commit(&e, &c->s, &res) < 0) {
		log_msg(LVL_ERROR, "cannot persist the edit", "{s:s, s:s}",
		    "step", res.step ? res.step : "", "error", c->s.why);
		rc = EX_IOERR;
	} else if (rc == 0 && *changed > 0) {
		ctx_audited(c, auditfields_edit(c->s.dir, file,
		    c->a.reason) < 0 ? errno : 0, "file", file);
	}
	editengine_release(&e);
	return rc;
}

/*
 * `edit [health|claims]`: the visudo of the store. The exclusive lock is
 * held while the editor runs, so every writer waits and no change is
 * lost, as one made between copying and renaming a hand edit would be.
 */
int
cmd_edit(struct ctx *c)
{
	enum storeedit_kind kind;
	char msg[128];
	int rc, changed = 0;

	if (editengine_kind_parse(c->a.operand, &kind) < 0) {
		snprintf(msg, sizeof(msg), "edit: unknown file \"%.64s\" "
		    "(health or claims)", c->a.operand);
		cli_usage_error(&c->cli, msg);
	}
	if ((rc = ctx_lock(c, true)) != 0)
		return rc;
	rc = edit_locked(c, kind, &changed);
	store_unlock(&c->s);
	if (rc != 0)
		return rc;
	log_msg(LVL_INFO, "edited the store by hand", "{s:s, s:b, s:s*}",
	    "file", editengine_file_name(kind), "changed", changed > 0,
	    "reason", c->a.reason);
	return emit(json_pack("{s:s, s:b}", "file", editengine_file_name(kind),
	    "changed", changed > 0));
}
