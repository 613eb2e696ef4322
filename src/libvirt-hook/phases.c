/*
 * phases.c - what libvirt-hook does at each of libvirt's qemu hook calls
 * (SPEC.md 6.6): prepare begin refuses or claims, started begin and
 * reconnect begin complete the claim (reconnect adopts a missing one),
 * release end releases it. Only prepare may fail the domain: a non-zero
 * exit of started or reconnect would make libvirt kill a running guest,
 * and release cannot be undone, so those log and exit 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "grant.h"
#include "log.h"
#include "libvirt-hook.h"
#include "healthfile.h"
#include "claims.h"

enum phase
phases_of(const char *op, const char *sub)
{
	if (strcmp(op, "prepare") == 0 && strcmp(sub, "begin") == 0)
		return PHASE_PREPARE;
	if (strcmp(op, "started") == 0 && strcmp(sub, "begin") == 0)
		return PHASE_STARTED;
	if (strcmp(op, "release") == 0 && strcmp(sub, "end") == 0)
		return PHASE_RELEASE;
	if (strcmp(op, "reconnect") == 0 && strcmp(sub, "begin") == 0)
		return PHASE_RECONNECT;
	return PHASE_OTHER;
}

/* True if vf is an NVIDIA vGPU VF of this host (4.3's inventory: it has
 * nvidia/creatable_vgpu_types). */
static bool
nvidia_vf(const struct hook *h, const char *vf)
{
	char path[PATH_MAX];
	struct stat st;

	return sysfs_vf_path(h->conf.sysfs_root, vf,
	    "nvidia/creatable_vgpu_types", path, sizeof(path)) == 0 &&
	    stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int
add_vf(struct vf_list *l, const char *vf)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], vf) == 0)
			return 0;
	return sysfs_vf_list_add(l, vf);
}

/*
 * The domain's VFs of this host into h->vfs. A metadata VF that is not
 * one is refused at prepare (the launcher means to plug it), ignored
 * after. 0, or an exit code.
 */
int
phases_find_vfs(struct hook *h, enum phase ph)
{
	char msg[256];
	size_t i;

	for (i = 0; i < h->dom.hostdevs.n; i++)
		if (nvidia_vf(h, h->dom.hostdevs.v[i]) &&
		    add_vf(&h->vfs, h->dom.hostdevs.v[i]) == -1)
			return log_fail(EX_OSERR, "out of memory", NULL);
	if (h->dom.meta_vf[0] == '\0')
		return 0;
	if (nvidia_vf(h, h->dom.meta_vf))
		return add_vf(&h->vfs, h->dom.meta_vf) == -1 ?
		    log_fail(EX_OSERR, "out of memory", NULL) : 0;
	(void)snprintf(msg, sizeof(msg), "VF %s named in the domain's "
	    "vfsentinel metadata is not a vGPU VF of this host; fix the "
	    "metadata", h->dom.meta_vf);
	if (ph == PHASE_PREPARE)
		return refuse_start(msg);
	log_msg(LVL_WARN, msg, NULL);
	return 0;
}

/* Takes the store's exclusive lock within libvirt.lock_timeout. 0, or
 * -1 with the reason in msg. */
static int
phases_lock(struct hook *h, char *msg, size_t len)
{
	enum store_lock_failure why;

	if (store_init(&h->view.store, h->conf.data_dir) == -1) {
		(void)snprintf(msg, len, "the data directory path is too long");
		return -1;
	}
	if (store_lock(&h->view.store, true, h->conf.libvirt_lock_timeout) == 0)
		return 0;
	why = store_lock_failure(&h->view.store, errno);
	if (why == STORE_LOCK_UNAVAILABLE)
		(void)snprintf(msg, len, "the VF health state is unavailable "
		    "(%.600s)", h->view.store.why);
	else if (why == STORE_LOCK_TIMEOUT)
		(void)snprintf(msg, len, "gave up waiting %u s for the store "
		    "lock %.600s; try again", h->conf.libvirt_lock_timeout,
		    h->view.store.lock_path);
	else
		(void)snprintf(msg, len, "cannot lock %.600s: %s",
		    h->view.store.lock_path, strerror(errno));
	return -1;
}

/* Loads the health state, the ledger, the inventory and the placement
 * under the lock. 0, or -1 with the reason in msg. */
static int
load_all(struct hook *h, char *msg, size_t len)
{
	h->view.suspect_exclude = conf_suspect_exclude(&h->conf);
	if (hostview_load(&h->view, h->conf.sysfs_root,
	    h->conf.threshold) == 0)
		return 0;
	if (h->view.failed == HOSTVIEW_STORES)
		(void)snprintf(msg, len, "the VF health state is unavailable "
		    "(%.600s); fix it (vfstore check) and start again",
		    h->view.store.why);
	else
		(void)snprintf(msg, len, "cannot list the host's VFs: %s",
		    strerror(errno));
	return -1;
}

/* True when vf is the source of one of the domain's <hostdev>s. */
static bool
hostdev_vf(const struct hook *h, const char *vf)
{
	size_t i;

	for (i = 0; i < h->dom.hostdevs.n; i++)
		if (strcmp(h->dom.hostdevs.v[i], vf) == 0)
			return true;
	return false;
}

/*
 * What to do instead: "; pick another with vfpick --profile 'P'" (or
 * NAME when none is named). A <hostdev> domain needs a free VF's
 * element: vfpick --claim UUID --format libvirt prints it, and the
 * claim it makes is the one this hook keeps at the next prepare.
 */
static void
pick_hint(const struct hook *h, const char *vf, char *buf, size_t len)
{
	char profile[VGPU_NAME_MAX + 2];

	if (h->dom.profile[0] != '\0')
		(void)snprintf(profile, sizeof(profile), "'%s'",
		    h->dom.profile);
	if (hostdev_vf(h, vf))
		(void)snprintf(buf, len, "; pick another with vfpick "
		    "--profile %s --claim %s --format libvirt and put the "
		    "<hostdev> element it prints in the domain",
		    h->dom.profile[0] != '\0' ? profile : "NAME", h->dom.uuid);
	else if (h->dom.profile[0] != '\0')
		(void)snprintf(buf, len, "; pick another with vfpick "
		    "--profile %s", profile);
	else
		(void)snprintf(buf, len, "; pick another VF (vfpick "
		    "--profile NAME)");
}

/* Why v may not be claimed for the domain, into msg; NULL if it may. */
static const char *
prepare_refusal(const struct hook *h, const struct placement_vf *v,
    char *msg, size_t len)
{
	const char *vf = v->vi->addr;
	char hint[VGPU_NAME_MAX + UUID_LEN + 128];

	pick_hint(h, vf, hint, sizeof(hint));
	if (v->quarantined && v->rec != NULL && v->rec->nfailures > 0)
		(void)snprintf(msg, len, "VF %s is quarantined (%zu failed "
		    "assignments)%s", vf, v->rec->nfailures, hint);
	else if (v->quarantined)
		(void)snprintf(msg, len, "VF %s is quarantined by an "
		    "operator%s", vf, hint);
	else if (v->drained)
		(void)snprintf(msg, len, "VF %s is drained%s", vf, hint);
	else if (v->suspect && h->view.pl.suspect_exclude)
		(void)snprintf(msg, len, "VF %s is suspect (its last domain "
		    "ended before the guest said OK) until its verification "
		    "passes (vfrecover --verify-suspects)%s", vf, hint);
	else if (v->claim != NULL)
		(void)snprintf(msg, len, "VF %s is claimed by instance "
		    "%.256s%s", vf, v->claim->instance_id, hint);
	else if (v->state == PLACEMENT_DIRTY)
		(void)snprintf(msg, len, "VF %s is configured (vGPU type %u) "
		    "without a claim; free it with vfstore deconfigure --vf %s "
		    "or, if a running VM holds it, record that with vfpick "
		    "--adopt", vf, v->vi->current_type, vf);
	else if (h->dom.profile[0] != '\0' &&
	    placement_type_id(v->vi, h->dom.profile) == 0)
		(void)snprintf(msg, len, "VF %s does not offer profile '%s'%s",
		    vf, h->dom.profile, hint);
	else
		return NULL;
	return msg;
}

/* prepare begin: refuse, keep the domain's claim, or claim the VF. */
static int
prepare(struct hook *h)
{
	const struct placement_vf *v;
	const struct claim *held;
	struct claim *cl;
	const char *vf = h->vfs.v[0];
	char msg[1024];

	if (h->vfs.n > 1) {
		(void)snprintf(msg, sizeof(msg), "the domain has %zu vGPU VFs "
		    "(%s, %s%s); vfsentinel tracks one VF per domain",
		    h->vfs.n, h->vfs.v[0], h->vfs.v[1], h->vfs.n > 2 ? ", ..." :
		    "");
		return refuse_start(msg);
	}
	if (phases_lock(h, msg, sizeof(msg)) == -1 ||
	    load_all(h, msg, sizeof(msg)) == -1)
		return refuse_start(msg);
	held = claims_find_instance(&h->view.claims, h->dom.uuid);
	if (held != NULL && strcmp(held->vf, vf) == 0) {
		log_msg(LVL_INFO, "the domain already holds the claim",
		    "{s:s, s:s, s:s}", "vf", vf, "instance_id", h->dom.uuid,
		    "domain", h->dom.name);
		return 0;
	}
	if (held != NULL) {
		(void)snprintf(msg, sizeof(msg), "instance %s already holds "
		    "VF %s, not %s; release it first (vfstore release "
		    "--instance %s)", h->dom.uuid, held->vf, vf, h->dom.uuid);
		return refuse_start(msg);
	}
	if ((v = placement_find(&h->view.pl, vf)) == NULL) {
		(void)snprintf(msg, sizeof(msg), "VF %s cannot be read from "
		    "sysfs", vf);
		return refuse_start(msg);
	}
	/* A VF being verified: its verification domain only (SPEC 8.2). */
	if ((cl = claim_verification(h, vf)) != NULL && !v->quarantined &&
	    !v->drained)
		return claim_verify(h, cl, v);
	if (prepare_refusal(h, v, msg, sizeof(msg)) != NULL)
		return refuse_start(msg);
	if (v->suspect)
		log_msg(LVL_WARN, "placing on a suspect VF: its last domain "
		    "ended before the guest said OK", "{s:s, s:s}", "vf", vf,
		    "domain", h->dom.name);
	return claim_new(h, v);
}

/*
 * Gives the store's owner (the sentinel's user) connect access to the
 * domain's virtio-serial channel socket, or takes it back (grant.c). A
 * root-owned store needs nothing; a socket elsewhere than libvirt's own
 * place is logged with what to do, and the domain runs on.
 */
static void
channel_access(const struct hook *h, bool grant)
{
	struct stat st;
	const char *why;

	if (h->dom.channel[0] == '\0' || h->dom.has_cid ||
	    stat(h->view.store.dir, &st) == -1 || st.st_uid == 0)
		return;
	if (grant_channel(h->conf.qemu_state_dir, h->dom.id, h->dom.channel,
	    st.st_uid, grant, &why) == 0) {
		log_msg(LVL_DEBUG, grant ? "gave the sentinel's user the "
		    "channel socket" : "took back the channel socket", "{s:s, "
		    "s:s, s:i}", "instance_id", h->dom.uuid, "path",
		    h->dom.channel, "uid", (int)st.st_uid);
		return;
	}
	if (!grant && errno == ENOENT)
		return;
	log_msg(grant ? LVL_WARN : LVL_DEBUG, grant ? "cannot give the "
	    "sentinel's user the channel socket" : "cannot take back the "
	    "channel socket", "{s:s, s:s, s:s, s:s, s:s}", "instance_id",
	    h->dom.uuid, "path", h->dom.channel, "reason", why ? why : "",
	    "error", strerror(errno), "fix", "leave the channel's source "
	    "path to libvirt (<source mode='bind'/>), or grant the "
	    "sentinel's user write access to the socket (setfacl -m "
	    "u:vfsentinel:rw PATH)");
}

/* started begin: complete the domain's claim from the live XML. */
static int
started(struct hook *h)
{
	struct claim *cl;
	char msg[1024];

	if (phases_lock(h, msg, sizeof(msg)) == -1)
		return log_fail(0, "cannot complete the claim", "{s:s}",
		    "error", msg);
	if (claims_load(&h->view.store, &h->view.claims) == -1)
		return log_fail(0, "cannot complete the claim: VF claims "
		    "unavailable", "{s:s}", "error", h->view.store.why);
	/* A verification domain completes the claim it took over. */
	if ((cl = claims_find_instance(&h->view.claims, h->dom.uuid)) == NULL)
		cl = claim_verifying(h);
	if (cl == NULL) {
		log_msg(LVL_WARN, "the domain holds no claim to complete",
		    "{s:s, s:s, s:s}", "vf", h->vfs.v[0], "instance_id",
		    h->dom.uuid, "domain", h->dom.name);
		return 0;
	}
	if (!claim_is_domains(h, cl)) {
		log_msg(LVL_WARN, "kept the claim as it is: its VF is not one "
		    "of the domain's", "{s:s, s:s, s:s, s:s}", "claimed_vf",
		    cl->vf, "vf", h->vfs.v[0], "instance_id", h->dom.uuid,
		    "domain", h->dom.name);
		return 0;
	}
	if (claim_complete(h, cl) != 0)
		return 0;
	channel_access(h, true);
	return 0;
}

/* release end: release the domain's claim; idempotent. */
static int
release(struct hook *h)
{
	const struct claim *cl;
	char msg[1024];

	if (phases_lock(h, msg, sizeof(msg)) == -1)
		return log_fail(0, "cannot release the claim", "{s:s}",
		    "error", msg);
	if (claims_load(&h->view.store, &h->view.claims) == -1)
		return log_fail(0, "cannot release the claim: VF claims "
		    "unavailable", "{s:s}", "error", h->view.store.why);
	channel_access(h, false);
	/* A verification's claim is vfrecover's to release, and its end
	 * is not judged (SPEC 8.2). */
	if (claims_find_instance(&h->view.claims, h->dom.uuid) == NULL &&
	    (cl = claim_verifying(h)) != NULL) {
		log_msg(LVL_INFO, "left the verification's claim to vfrecover",
		    "{s:s, s:s, s:s}", "vf", cl->vf, "instance_id",
		    cl->instance_id, "domain", h->dom.name);
		return 0;
	}
	return claim_end(h);
}

/* reconnect begin: the running domain's claim exists (adopted if not)
 * and is complete. */
static int
reconnect(struct hook *h)
{
	struct claim *cl;
	char msg[1024];

	if (phases_lock(h, msg, sizeof(msg)) == -1 ||
	    load_all(h, msg, sizeof(msg)) == -1)
		return log_fail(0, "cannot check the claim", "{s:s}", "error",
		    msg);
	/* A verification domain's claim is found by its domain_uuid (8.2);
	 * any other missing claim is adopted. */
	if ((cl = claims_find_instance(&h->view.claims, h->dom.uuid)) ==
	    NULL && (cl = claim_verifying(h)) != NULL)
		return claim_complete(h, cl);
	if (cl == NULL && claim_adopt(h, h->vfs.v[0]) != 0)
		return 0;
	cl = claims_find_instance(&h->view.claims, h->dom.uuid);
	if (cl != NULL && strcmp(cl->vf, h->vfs.v[0]) != 0) {
		log_msg(LVL_ERROR, "the domain's claim names another VF",
		    "{s:s, s:s, s:s}", "vf", h->vfs.v[0], "claimed_vf", cl->vf,
		    "instance_id", h->dom.uuid);
		return 0;
	}
	return cl != NULL ? claim_complete(h, cl) : 0;
}

int
phases_work(struct hook *h, enum phase ph)
{
	char msg[128];

	if (h->dom.uuid[0] == '\0') {
		(void)snprintf(msg, sizeof(msg), "the domain has no <uuid>");
		return ph == PHASE_PREPARE ? refuse_start(msg) :
		    log_fail(0, msg, NULL);
	}
	switch (ph) {
	case PHASE_PREPARE:
		return prepare(h);
	case PHASE_STARTED:
		return started(h);
	case PHASE_RELEASE:
		return release(h);
	case PHASE_RECONNECT:
		return reconnect(h);
	default:
		return 0;
	}
}
