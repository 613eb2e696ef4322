/*
 * history.c - `vfstore history`: the audit log's lines, oldest first,
 * of a VF, a card or all (SPEC.md 4.1; the reader is src/lib/auditlog.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "auditlog.h"
#include "cli.h"
#include "io.h"
#include "log.h"

#include "vfstore.h"

static int
history_line(const json_t *line, void *arg)
{
	(void)arg;
	return emit(json_incref((json_t *)line));
}

/* Logs the failed read naming the file (SPEC 6.3): the generation that
 * is there but not a regular file, else the log. */
static void
history_failed(const char *dir, int err)
{
	char path[PATH_MAX], why[PATH_MAX + 64];
	struct stat st;

	if (io_pathf(path, sizeof(path), "%s/%s", dir, AUDIT_OLD_FILE) < 0 ||
	    lstat(path, &st) < 0 || S_ISREG(st.st_mode))
		(void)io_pathf(path, sizeof(path), "%s/%s", dir, AUDIT_FILE);
	(void)snprintf(why, sizeof(why), "%s: %s", path, io_strerror(err));
	log_msg(LVL_ERROR, "cannot read the audit log", "{s:s}", "error",
	    why);
}

/*
 * `history [--vf VF | --card PF] [--limit N]`: read without the lock (the
 * log is only appended to and renamed), so a slow reader never holds up
 * a writer; the lock is only taken and dropped at once, so that a
 * missing DATA_DIR/gpu is unavailable (69), never an empty history.
 */
int
cmd_history(struct ctx *c)
{
	unsigned limit = 0;
	size_t skipped = 0;
	int rc;

	if (c->a.vf != NULL && c->a.card != NULL)
		cli_usage_error(&c->cli, "history: give at most one of --vf "
		    "or --card");
	if (c->a.limit != NULL)
		limit = cli_uint(&c->cli, "--limit", c->a.limit, 0, UINT_MAX);
	if ((rc = ctx_lock(c, false)) != 0)
		return rc;
	store_unlock(&c->s);
	if (c->a.limit == NULL)
		rc = auditlog_read(c->s.dir, c->a.vf, c->a.card, history_line,
		    NULL, &skipped);
	else
		rc = auditlog_read_last(c->s.dir, c->a.vf, c->a.card, limit,
		    history_line, NULL, &skipped);
	if (skipped > 0)
		log_msg(LVL_WARN, "skipped audit lines that are not JSON "
		    "objects", "{s:I}", "skipped", (json_int_t)skipped);
	if (rc >= 0)
		return rc;
	history_failed(c->s.dir, errno);
	return EX_IOERR;
}
