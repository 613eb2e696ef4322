/*
 * claims.c - `vfstore claims`: the claims ledger listed, a line a claim
 * with what sentinel-poll can use of it (SPEC.md 4.2, 7.1).
 */
#include "claims.h"
#include "store.h"

#include "vfstore.h"

static bool
given(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/*
 * What sentinel-poll can use of a claim (SPEC 7.1): its agent endpoint,
 * its console log, both, or none. A claim without the VMM's control
 * socket is never polled (its liveness cannot be told): none.
 */
static const char *
sentinel_sources(const struct claim *cl)
{
	bool agent = given(cl->vsock), console = given(cl->app_log);

	if (!given(cl->control_socket))
		return "none";
	if (agent && console)
		return "agent,console";
	return agent ? "agent" : console ? "console" : "none";
}

/* A claim's line: the ledger's fields and sentinel_sources. */
static json_t *
claim_line(const struct claim *cl)
{
	json_t *o = claim_json(cl);

	if (o != NULL && json_object_set_new(o, "sentinel_sources",
	    json_string(sentinel_sources(cl))) == -1) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

int
cmd_claims(struct ctx *c)
{
	struct claims cl;
	size_t i;
	int rc;

	if ((rc = ctx_open_claims(c, false, &cl)) != 0)
		return rc;
	store_unlock(&c->s);
	for (i = 0; i < cl.n && rc == 0; i++)
		rc = emit(claim_line(&cl.v[i]));
	claims_release(&cl);
	return rc;
}
