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
#include <time.h>

#include "adopt.h"
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

	if (claims_save(&r->store, &r->claims, &res) == 0)
		return 0;
	return log_fail(EX_IOERR, what, "{s:s, s:s, s:s}", "path",
	    r->store.claims_path, "step", res.step ? res.step : "", "error",
	    r->store.why);
}

/* Persists a new claim of vi for the instance. */
int
persist_claim(struct run *r, const struct vf_info *vi)
{
	char now[TIMEFMT_MAX], type_id[16];
	struct timespec ts;
	struct claim cl = { 0 };
	int code;

	timefmt_now(&ts);
	if (timefmt_format(&ts, now, sizeof(now)) == -1)
		return log_fail(EX_SOFTWARE, "cannot format the claim time",
		    NULL);
	(void)snprintf(type_id, sizeof(type_id), "%u",
	    placement_type_id(vi, r->profile));	/* <= VGPU_TYPE_ID_MAX */
	strcpy(cl.vf, vi->addr);
	cl.instance_id = r->instance;
	cl.claimed_at = now;
	cl.profile = r->profile;
	cl.type_id = type_id;
	cl.vsock = r->vsock;
	cl.control_socket = r->control_socket;
	if (claims_add(&r->claims, &cl) == -1)
		return CLAIM_NOMEM;
	if ((code = save_claims(r, "cannot persist the claim")) != 0)
		return code;
	log_msg(LVL_INFO, "claimed VF", "{s:s, s:s, s:s, s:s}", "vf",
	    vi->addr, "instance_id", r->instance, "profile", r->profile,
	    "claimed_at", now);
	return 0;
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
	claims_remove_instance(&r->claims, r->instance);
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
	char msg[128];

	health_release(&r->health);
	if (health_load(&r->store, &r->health, r->conf.threshold) == -1) {
		if (r->store.nomem)
			return CLAIM_LOAD;
		return configure_fail(r, EX_UNAVAILABLE, "VF health state "
		    "unavailable", vf, r->store.why);
	}
	/* A verification boot configures the quarantined VF on purpose. */
	if (!health_vf_quarantined(&r->health, vf) || (r->include_quarantined
	    && strcmp(vf, r->pin) == 0))
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
configure_claim(struct run *r, const struct claim *cl)
{
	char vf[VF_ADDR_LEN + 1];
	unsigned id, cur;
	int code;

	strcpy(vf, cl->vf);
	if (cl->type_id == NULL || conf_parse_uint(cl->type_id, 1,
	    VGPU_TYPE_ID_MAX, &id) == -1)
		return configure_fail(r, EX_DATAERR, "claim has no valid "
		    "type_id", vf, cl->type_id ? cl->type_id : "");
	if ((code = configure_health(r, vf)) != 0)
		return code;
	if (sysfs_vgpu_type(r->conf.sysfs_root, vf, &cur) == 0 && cur == id) {
		log_msg(LVL_INFO, "VF already holds the type", "{s:s, s:i}",
		    "vf", vf, "type_id", (int)id);
		return 0;
	}
	if (sysfs_set_vgpu_type(r->conf.sysfs_root, vf, id) == -1)
		return configure_fail(r, EX_IOERR, "cannot configure VF", vf,
		    strerror(errno));
	log_msg(LVL_INFO, "configured VF", "{s:s, s:s, s:i}", "vf", vf,
	    "instance_id", r->instance, "type_id", (int)id);
	return 0;
}

/* Sets *slot to a copy of v when v is given and differs. 1 if set, 0 if
 * not, -1/ENOMEM. */
static int
update_str(char **slot, const char *v)
{
	char *copy;

	if (v == NULL || (*slot != NULL && strcmp(*slot, v) == 0))
		return 0;
	if ((copy = strdup(v)) == NULL)
		return -1;
	free(*slot);
	*slot = copy;
	return 1;
}

/* The endpoints given anew replace the claim's (persisted); 0 or a code. */
static int
update_endpoints(struct run *r, struct claim *cl)
{
	int vsock, ctl, code;

	vsock = update_str(&cl->vsock, r->vsock);
	ctl = update_str(&cl->control_socket, r->control_socket);
	if (vsock < 0 || ctl < 0)
		return CLAIM_NOMEM;
	if (vsock + ctl == 0)
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
existing_claim(struct run *r, struct claim *cl)
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
add_warning(struct run *r, const char *msg, const char *vf)
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
adopt_claim(struct run *r, const struct placement_vf *v)
{
	char msg[512];
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
	if ((code = persist_claim(r, v->vi)) != 0)
		return code;
	warning = adopt_holder(r->conf.sysfs_root, r->proc_root, r->pin, &pid);
	if (warning != NULL)
		add_warning(r, warning, r->pin);
	log_msg(LVL_INFO, "adopted the VF", "{s:s, s:s, s:I}", "vf", r->pin,
	    "instance_id", r->instance, "holder_pid", (json_int_t)pid);
	return 0;
}
