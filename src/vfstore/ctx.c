/*
 * ctx.c - the store access every vfstore command shares, on the context
 * it runs in (struct ctx, vfstore.h): the lock, the health store and the
 * claims loaded and saved, the audit failure noted; each returning an
 * exit code (SPEC.md 2.2) with its failure logged.
 */
#include <errno.h>
#include <string.h>

#include "auditlog.h"
#include "claims.h"
#include "cli.h"
#include "healthfile.h"
#include "log.h"
#include "store.h"

#include "vfstore.h"

int
ctx_lock(struct ctx *c, bool exclusive)
{
	if (store_lock(&c->s, exclusive, c->cli.lock_timeout) == 0)
		return 0;
	return ctx_lock_failed(c, errno);
}

/* store_lock() failed with err: logged, and the exit code. */
int
ctx_lock_failed(struct ctx *c, int err)
{
	enum store_lock_failure why = store_lock_failure(&c->s, err);

	if (why == STORE_LOCK_UNAVAILABLE) {
		log_msg(LVL_ERROR, "VF health state unavailable", "{s:s}",
		    "error", c->s.why);
		return EX_UNAVAILABLE;
	}
	log_msg(LVL_ERROR, why == STORE_LOCK_TIMEOUT ? "lock wait timed out" :
	    "cannot take the store lock", "{s:s}", "error", c->s.why);
	if (why == STORE_LOCK_DENIED)
		return EX_NOPERM;	/* SPEC 7.2: not the store's owner */
	return why == STORE_LOCK_TIMEOUT ? EX_TEMPFAIL : EX_IOERR;
}

/*
 * Loads the health store, or through v (not NULL) what a report on c's
 * --vf needs (healthcache.h). 0, or the logged exit status.
 */
int
ctx_load_health(struct ctx *c, struct health *h, struct health_view *v)
{
	if (v == NULL ? health_load(&c->s, h, c->conf.threshold) == 0 :
	    healthview_load_vf(&c->s, h, c->conf.threshold, c->a.vf, v) == 0)
		return 0;
	if (v != NULL)
		healthview_release(v);
	return ctx_unavailable(c, "VF health state unavailable");
}

/* Locks and loads the health store (as ctx_load_health()); the lock
 * stays held on success. */
int
ctx_open_health(struct ctx *c, bool exclusive, struct health *h,
    struct health_view *v)
{
	int rc;

	memset(h, 0, sizeof(*h));
	if ((rc = ctx_lock(c, exclusive)) != 0)
		return rc;
	if ((rc = ctx_load_health(c, h, v)) == 0)
		return 0;
	store_unlock(&c->s);
	return rc;
}

int
ctx_open_claims(struct ctx *c, bool exclusive, struct claims *cl)
{
	int rc;

	memset(cl, 0, sizeof(*cl));
	if ((rc = ctx_lock(c, exclusive)) != 0)
		return rc;
	if (claims_load(&c->s, cl) == 0)
		return 0;
	rc = ctx_unavailable(c, "VF claims unavailable");
	store_unlock(&c->s);
	return rc;
}

/* A store file did not load: out of memory exits 71 here (cli.h); else
 * msg is logged with the reason, and the exit code is 69. */
int
ctx_unavailable(struct ctx *c, const char *msg)
{
	cli_die_nomem(&c->s);
	log_msg(LVL_ERROR, msg, "{s:s}", "error", c->s.why);
	return EX_UNAVAILABLE;
}

/* Saves h, loaded through v (or NULL, as ctx_open_health()). */
int
ctx_save_health(struct ctx *c, const struct health *h,
    const struct health_view *v)
{
	struct atomic_result res;

	if ((v != NULL ? healthview_save(&c->s, v, h, &res) :
	    health_save(&c->s, h, &res)) == 0)
		return 0;
	log_msg(LVL_ERROR, "cannot persist VF health state", "{s:s, s:s}",
	    "step", res.step ? res.step : "", "error", c->s.why);
	return EX_IOERR;
}

/*
 * After a durable change: a failed audit write (err, its errno; 0 when
 * written) is logged and makes a one-shot command exit 74; the change
 * stands (SPEC.md 4.1).
 */
void
ctx_audited(struct ctx *c, int err, const char *key, const char *val)
{
	if (err == 0)
		return;
	log_msg(LVL_ERROR, "cannot write the audit log", "{s:s, s:s, s:s}",
	    key, val, "file", AUDIT_FILE, "error", strerror(err));
	c->audit_failed = true;
}
