/*
 * edit.c - the commands that change the health store by hand:
 * quarantine and clear (a VF, or every VF of a card; the logic is
 * quarantine.c) and edit, the visudo of the store (editengine.c).
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
#include "sysfs.h"
#include "quarantine.h"
#include "healthfile.h"
#include "suspect.h"

#include "vfstore.h"

/* --- quarantine, clear -------------------------------------------------- */

/* The VFs named by --vf or --card; exit code on failure. */
int
target_vfs(struct ctx *c, struct vf_list *l)
{
	memset(l, 0, sizeof(*l));
	if ((c->a.vf == NULL) == (c->a.card == NULL))
		cli_usage_error(&c->cli, "give exactly one of --vf or --card");
	if (c->a.vf != NULL)
		return sysfs_vf_list_add(l, c->a.vf) == 0 ? 0 : EX_OSERR;
	if (sysfs_card_vfs(c->conf.sysfs_root, c->a.card, l) < 0) {
		log_msg(LVL_ERROR, "cannot list the card's VFs", "{s:s, s:s}",
		    "card", c->a.card, "error", strerror(errno));
		return EX_IOERR;
	}
	if (l->n == 0)
		log_msg(LVL_ERROR, "no VFs found for card", "{s:s}", "card",
		    c->a.card);
	return l->n == 0 ? EXIT_NO : 0;
}

/*
 * quarantine or drain --vf of a VF this host's sysfs does not have is
 * refused (quarantine unless --force, SPEC.md 4.2): a typo would record
 * it for nothing and leave the real VF in rotation. clear and undrain
 * need no such check: a record of a VF that sysfs no longer has must
 * still be removable.
 */
int
check_vf_present(struct ctx *c, const char *hint)
{
	char msg[192];

	if (c->a.vf == NULL || c->a.force ||
	    sysfs_vf_present(c->conf.sysfs_root, c->a.vf))
		return 0;
	snprintf(msg, sizeof(msg), "no VF %s on this host; check the address%s",
	    c->a.vf, hint);
	log_msg(LVL_ERROR, msg, "{s:s, s:s}", "vf", c->a.vf, "sysfs_root",
	    c->conf.sysfs_root);
	return EX_DATAERR;
}

/* quarantine_run() on h, loaded under the exclusive lock: its exit code;
 * changed[i] per VF, *any when one changed. */
static int
run_vfops(struct ctx *c, struct health *h, bool quarantine,
    const struct vf_list *l, bool *changed, bool *any)
{
	struct vfops_result r;

	quarantine_run(&c->s, h, quarantine, l, c->a.card, c->a.reason, changed,
	    &r);
	if (r.status == VFOPS_NOMEM)
		return EX_OSERR;
	if (r.status == VFOPS_PERSIST) {
		log_msg(LVL_ERROR, "cannot persist VF health state",
		    "{s:s, s:s}", "step", r.step, "error", c->s.why);
		return EX_IOERR;
	}
	*any = r.changed;
	ctx_audited(c, r.audit_err, c->a.vf ? "vf" : "card",
	    c->a.vf ? c->a.vf : c->a.card);
	return 0;
}

/* Quarantines or clears the VFs under the exclusive lock (quarantine.c),
 * prints one line per VF; *any when a VF changed. */
static int
mutate_vfs(struct ctx *c, bool quarantine, bool *any)
{
	struct suspects sus = { 0 };
	bool *changed = NULL;
	struct vf_list l;
	struct health h;
	size_t i;
	int rc;

	if ((rc = target_vfs(c, &l)) != 0 ||
	    (rc = ctx_open_health(c, true, &h, NULL)) != 0) {
		free(l.v);
		return rc;
	}
	if (quarantine && (rc = check_vf_present(c,
	    ", or quarantine it with --force")) != 0)
		l.n = 0;
	if (rc == 0 && (changed = calloc(l.n + 1, sizeof(*changed))) == NULL)
		rc = EX_OSERR;
	/* A clear ends suspicions too (SPEC.md 7.3); their file is loaded
	 * first, so one that does not load changes nothing (69). */
	if (rc == 0 && !quarantine)
		rc = suspectcmd_load(c, &sus);
	if (rc == 0)
		rc = run_vfops(c, &h, quarantine, &l, changed, any);
	if (rc == 0 && !quarantine)
		rc = suspectcmd_clear(c, &sus, &l, changed);
	for (i = 0; i < l.n && rc == 0; i++)
		*any |= changed[i];
	store_unlock(&c->s);
	suspects_release(&sus);
	for (i = 0; i < l.n && rc == 0; i++)
		rc = emit(quarantine_json(&h, quarantine, l.v[i], changed[i]));
	health_release(&h);
	free(changed);
	free(l.v);
	return rc;
}

/* A command that changed nothing (SPEC.md 6.3): info, not a change. */
static void
log_unchanged(const struct ctx *c, const char *msg)
{
	log_msg(LVL_INFO, msg, "{s:s, s:s}", c->a.vf ? "vf" : "card",
	    c->a.vf ? c->a.vf : c->a.card, "reason",
	    c->a.reason ? c->a.reason : "");
}

int
cmd_quarantine(struct ctx *c)
{
	bool any = false;
	int rc = mutate_vfs(c, true, &any);

	if (rc == 0 && !any)
		log_unchanged(c, "quarantine changed nothing: quarantined "
		    "already");
	else if (rc == 0)
		log_msg(LVL_WARN, "quarantined VF by operator", "{s:s, s:s}",
		    c->a.vf ? "vf" : "card", c->a.vf ? c->a.vf : c->a.card,
		    "reason", c->a.reason ? c->a.reason : "");
	return rc;
}

int
cmd_clear(struct ctx *c)
{
	bool any = false;
	int rc = mutate_vfs(c, false, &any);

	if (rc == 0 && !any)
		log_unchanged(c, "clear changed nothing: no record");
	else if (rc == 0)
		log_msg(LVL_INFO, "cleared VF health records", "{s:s, s:s}",
		    c->a.vf ? "vf" : "card", c->a.vf ? c->a.vf : c->a.card,
		    "reason", c->a.reason ? c->a.reason : "");
	return rc;
}

/* --- edit ----------------------------------------------------------------- */

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
