/*
 * check.c - vfstore check: loads every file of the store under the shared
 * lock and says whether it is available, with its counts (SPEC.md 4.2);
 * as root, also whether the store's owner can use it (8.5,
 * owneraccess.c), and a lock it cannot open is "lock_permission" (77).
 */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "drain.h"
#include "healthfile.h"
#include "claims.h"
#include "log.h"
#include "store.h"
#include "owneraccess.h"

#include "vfstore.h"

/* The lock cannot be opened (SPEC 8.5): the status line, and 77. */
static int
lock_permission(struct ctx *c)
{
	int rc = ctx_lock_failed(c, errno);

	if (rc == EX_NOPERM && emit(json_pack("{s:s, s:s, s:s, s:s}",
	    "status", "unavailable", "reason", "lock_permission", "lock",
	    c->s.lock_path, "error", c->s.why)) != 0)
		return EX_IOERR;
	return rc;
}

/* The store loaded for the caller; can its owner use it (8.5)? NULL,
 * or the "unavailable" status line. */
static json_t *
owner_status(struct ctx *c)
{
	struct owneraccess r;

	if (owneraccess_check(c->s.dir, &r) < 0 || !r.tested || r.ok)
		return NULL;
	log_msg(LVL_ERROR, "the store's owner cannot use the store: the "
	    "sentinel cannot record (detection lost)", "{s:s, s:s, s:s}",
	    "owner", r.owner, "file", r.what, "error", strerror(r.err));
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "status",
	    "unavailable", "reason", "owner_access", "owner", r.owner, "file",
	    r.what, "error", strerror(r.err));
}

int
cmd_check(struct ctx *c)
{
	struct health h = { 0 };
	struct claims cl = { 0 };
	struct drains d = { 0 };
	json_t *out;
	int rc = 0;

	if (store_lock(&c->s, false, c->cli.lock_timeout) < 0 &&
	    !c->s.unavailable)
		return lock_permission(c);
	if (c->s.unavailable || health_load(&c->s, &h, c->conf.threshold) < 0
	    || claims_load(&c->s, &cl) < 0 || drains_load(&c->s, &d) < 0) {
		cli_die_nomem(&c->s);
		out = json_pack("{s:s, s:s}", "status", "unavailable",
		    "reason", c->s.why);
		log_msg(LVL_ERROR, "VF health state unavailable", "{s:s}",
		    "error", c->s.why);
		rc = EX_UNAVAILABLE;
	} else if ((out = owner_status(c)) != NULL) {
		rc = EX_UNAVAILABLE;
	} else {
		out = json_pack("{s:s, s:I, s:I, s:I, s:I}", "status", "ok",
		    "records", (json_int_t)h.n, "quarantined",
		    (json_int_t)health_count_quarantined(&h), "claims",
		    (json_int_t)cl.n, "drained", (json_int_t)d.n);
	}
	store_unlock(&c->s);
	health_release(&h);
	claims_release(&cl);
	drains_release(&d);
	if (emit(out) != 0 && rc == 0)
		rc = EX_IOERR;
	return rc;
}
