/*
 * claim.c - vfpick --claim: the instance's claim in the ledger (a new
 * one, or the one it holds with its endpoints brought up to date) and
 * --configure, which writes the claim's type id to the VF or removes the
 * claim again; --adopt, the claim of a VF a running VM already holds.
 * Runs under the exclusive store lock vfpick.c holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "claimlife.h"
#include "claims.h"
#include "healthfile.h"
#include "log.h"
#include "timefmt.h"
#include "vfpick.h"

/* Persists the claims ledger; a failure is 74 and changes nothing. */
static int
save_claims(struct run *r, const char *what)
{
	struct atomic_result res = { 0 };

	if (claims_save(&r->view.store, &r->view.claims, &res) == 0)
		return 0;
	return log_fail(EX_IOERR, what, "{s:s, s:s, s:s}", "path",
	    r->view.store.claims_path, "step", res.step ? res.step : "",
	    "error", r->view.store.why);
}

/* Persists the new claim cl (claimlife_new() done); logs it. */
static int
persisted(struct run *r, const struct claim *cl)
{
	int code;

	if ((code = save_claims(r, "cannot persist the claim")) != 0)
		return code;
	log_msg(LVL_INFO, "claimed VF", "{s:s, s:s, s:s, s:s}", "vf",
	    cl->vf, "instance_id", r->instance, "profile", cl->profile,
	    "claimed_at", cl->claimed_at);
	return 0;
}

/* Persists a new claim of vi for the instance. */
int
claim_persist(struct run *r, const struct vf_info *vi)
{
	char now[TIMEFMT_MAX], type_id[16];
	struct claim cl = { 0 };

	(void)snprintf(type_id, sizeof(type_id), "%u",
	    placement_type_id(vi, r->profile));	/* <= VGPU_TYPE_ID_MAX */
	strcpy(cl.vf, vi->addr);
	cl.instance_id = r->instance;
	cl.profile = r->profile;
	cl.type_id = type_id;
	cl.vsock = r->vsock;
	cl.control_socket = r->control_socket;
	if (claimlife_new(&r->view.claims, &cl, now, sizeof(now)) == -1)
		return errno == ENOMEM ? CLAIM_NOMEM : log_fail(EX_SOFTWARE,
		    "cannot format the claim time", NULL);
	return persisted(r, &cl);
}

/* Removes the claim of a failed configure again; returns the code. */
static int
configure_fail(struct run *r, int code, const char *msg, const char *vf,
    const char *err)
{
	char why[1024];
	int saved;

	/* Copy first: removing the claim may reuse the buffers. */
	(void)snprintf(why, sizeof(why), "%s", err);	/* a log field */
	claims_remove_instance(&r->view.claims, r->instance);
	saved = save_claims(r, "cannot remove the claim after a failed "
	    "configure");
	if (saved != 0)
		return saved;
	return log_fail(code, msg, "{s:s, s:s, s:s}", "vf", vf,
	    "instance_id", r->instance, "error", why);
}

/* Re-reads the health store under the lock; 0, or the failure's code. */
static int
configure_health(struct run *r, const char *vf)
{
	struct hostview *v = &r->view;
	char msg[128];

	health_release(&v->health);
	if (health_load(&v->store, &v->health, r->conf.threshold) == -1) {
		if (r->view.store.nomem)
			return CLAIM_LOAD;
		return configure_fail(r, EX_UNAVAILABLE, "VF health state "
		    "unavailable", vf, r->view.store.why);
	}
	/* A verification boot configures the quarantined VF on purpose. */
	if (!health_vf_quarantined(&v->health, vf) ||
	    (r->include_quarantined && strcmp(vf, r->pin) == 0))
		return 0;
	(void)snprintf(msg, sizeof(msg), "vendor VFIO vGPU on VF %s is "
	    "quarantined", vf);
	return configure_fail(r, EXIT_NO, msg, vf, "quarantined");
}

/*
 * Writes the claim's type id to current_vgpu_type and reads it back. The
 * health store is re-read first, under the same lock, so a VF
 * quarantined since the claim was made is refused. A VF that already
 * holds the type (a retried configure, a reused dirty VF) is left alone:
 * the driver takes a new type only on a free VF. On failure the claim is
 * removed again.
 */
int
claim_configure(struct run *r, const struct claim *cl)
{
	char vf[VF_ADDR_LEN + 1];
	bool already;
	unsigned id;
	int code;

	strcpy(vf, cl->vf);
	if (cl->type_id == NULL || conf_parse_uint(cl->type_id, 1,
	    VGPU_TYPE_ID_MAX, &id) == -1)
		return configure_fail(r, EX_DATAERR, "claim has no valid "
		    "type_id", vf, cl->type_id ? cl->type_id : "");
	if ((code = configure_health(r, vf)) != 0)
		return code;
	if (claimlife_configure(r->conf.sysfs_root, vf, id, &already) == -1)
		return configure_fail(r, EX_IOERR, "cannot configure VF", vf,
		    strerror(errno));
	if (already) {
		log_msg(LVL_INFO, "VF already holds the type", "{s:s, s:i}",
		    "vf", vf, "type_id", (int)id);
		return 0;
	}
	log_msg(LVL_INFO, "configured VF", "{s:s, s:s, s:i}", "vf", vf,
	    "instance_id", r->instance, "type_id", (int)id);
	return 0;
}

/* The endpoints given anew replace the claim's (persisted); 0 or a code. */
static int
update_endpoints(struct run *r, struct claim *cl)
{
	int changed, code;

	changed = claimlife_complete(cl, r->control_socket, r->vsock, NULL);
	if (changed < 0)
		return CLAIM_NOMEM;
	if (changed == 0)
		return 0;
	if ((code = save_claims(r, "cannot persist the claim's endpoints")))
		return code;
	log_msg(LVL_INFO, "updated the claim's endpoints", "{s:s, s:s, s:s?, "
	    "s:s?}", "vf", cl->vf, "instance_id", r->instance, "vsock",
	    cl->vsock, "control_socket", cl->control_socket);
	return 0;
}

/*
 * A second --claim for an instance that holds one. Another profile is
 * refused: configuring the held VF with it, or placing the instance a
 * second time, would both be wrong, so the launcher must release first.
 * The same profile is the same assignment (same claimed_at); a relaunched
 * VMM may listen elsewhere, so endpoints given anew replace the ledger's,
 * or the sentinel would keep polling the old ones.
 */
int
claim_existing(struct run *r, struct claim *cl)
{
	char msg[512];

	if (cl->profile == NULL || strcmp(cl->profile, r->profile) != 0) {
		(void)snprintf(msg, sizeof(msg), "instance %.256s already "
		    "holds VF %s with profile \"%.128s\"; release it first",
		    r->instance, cl->vf, cl->profile ? cl->profile : "");
		return log_fail(EX_DATAERR, msg, "{s:s, s:s}", "vf", cl->vf,
		    "instance_id", r->instance);
	}
	if (r->pin[0] != '\0' && strcmp(cl->vf, r->pin) != 0) {
		(void)snprintf(msg, sizeof(msg), "instance %.256s already "
		    "holds VF %s, not %s; release it first", r->instance,
		    cl->vf, r->pin);
		return log_fail(EX_DATAERR, msg, "{s:s, s:s}", "vf", cl->vf,
		    "instance_id", r->instance);
	}
	log_msg(LVL_INFO, "instance already holds a claim", "{s:s, s:s}",
	    "vf", cl->vf, "instance_id", r->instance);
	return update_endpoints(r, cl);
}

void
claim_warn(struct run *r, const char *msg, const char *vf)
{
	size_t n = strlen(r->warning);

	(void)snprintf(r->warning + n, sizeof(r->warning) - n, "%s%s",
	    n > 0 ? "; " : "", msg);
	log_msg(LVL_WARN, msg, "{s:s, s:s}", "vf", vf, "instance_id",
	    r->instance);
}

/*
 * --adopt: a VM already runs on the VF (a host that ran VMs before
 * vfsentinel): its claim is recorded and nothing touches the VF, under
 * adopt.h's rules. No VFIO holder means the VM may not have started:
 * made, with a warning.
 */
int
claim_adopt(struct run *r, const struct placement_vf *v)
{
	char msg[512], now[TIMEFMT_MAX];
	struct claim cl = { 0 };
	enum adopt_verdict why;
	const char *warning;
	size_t n;
	long pid;
	int code;

	if ((why = adopt_check(v, r->profile, msg, sizeof(msg))) != ADOPT_OK) {
		n = strlen(msg);
		if (why == ADOPT_UNCONFIGURED)
			(void)snprintf(msg + n, sizeof(msg) - n, " (claim it "
			    "with --configure)");
		return log_fail(EXIT_NO, msg, "{s:s, s:s}", "vf", r->pin,
		    "instance_id", r->instance);
	}
	cl.instance_id = r->instance;
	cl.profile = r->profile;
	cl.vsock = r->vsock;
	cl.control_socket = r->control_socket;
	if (claimlife_adopt(&r->view.claims, v, &cl, now, sizeof(now)) == -1)
		return errno == ENOMEM ? CLAIM_NOMEM : log_fail(EX_SOFTWARE,
		    "cannot format the claim time", NULL);
	if ((code = persisted(r, &cl)) != 0)
		return code;
	warning = adopt_holder(r->conf.sysfs_root, r->proc_root, r->pin, &pid);
	if (warning != NULL)
		claim_warn(r, warning, r->pin);
	log_msg(LVL_INFO, "adopted the VF", "{s:s, s:s, s:I}", "vf", r->pin,
	    "instance_id", r->instance, "holder_pid", (json_int_t)pid);
	return 0;
}
