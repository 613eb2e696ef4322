/*
 * reconcileengine.c - the claims of dead VMs (SPEC.md 4.2, 4.4). A stale claim
 * costs capacity; a wrong release hands a VF in use to a second VM. So
 * every doubt keeps the claim, and a release is decided twice: once
 * without a lock over the whole ledger, then again under the exclusive
 * lock for the claims found gone, against a fresh ledger and fresh
 * tables (a VM relaunched in between keeps its claim).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prom.h"
#include "safeopen.h"
#include "reconcileengine.h"
#include "claimlife.h"
#include "sysfs.h"
#include "timefmt.h"
#include "claims.h"

/* The tables one decision needs, read once per phase. */
struct tables {
	struct vmm_listeners l;
	struct vfio_scan held;
	bool scanned;			/* held is valid */
};

static void
tables_load(struct tables *t, const char *proc_root)
{
	(void)vmm_listeners_load(&t->l, proc_root);	/* else: connect */
	t->scanned = vfio_scan_load(&t->held, proc_root) == 0;
}

static void
tables_release(struct tables *t)
{
	vmm_listeners_release(&t->l);
	if (t->scanned)
		vfio_scan_release(&t->held);
}

void
reconcileengine_pass_release(struct reconcile_pass *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->v[i].instance_id);
	free(p->v);
	free(p->unclaimed);
	memset(p, 0, sizeof(*p));
}

/* The control socket's verdict in the words of a result line. */
static const char *
socket_reason(const char *why)
{
	static const char *const map[][2] = {
		{ "no such file", "control socket does not exist" },
		{ "connect refused", "control socket refused connections" },
		{ "listening", "control socket is listening" },
		{ "connect accepted", "control socket accepted a connection" },
		{ "not a socket", "control socket path is not a socket" },
		{ "lstat failed", "cannot lstat the control socket" },
		{ "a link", "control socket path has a link (not followed)" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(*map); i++)
		if (strcmp(why, map[i][0]) == 0)
			return map[i][1];
	return "connect to the control socket failed";
}

/*
 * The VMM's liveness by its control socket, reached as a root process
 * reaches a path the service user wrote (SPEC.md 8.3): no link followed
 * in any component, never opened by name (safeopen.h, vmm_liveness_fd).
 */
static enum vmm_state
socket_liveness(const struct vmm_listeners *l, const char *path,
    const char **why)
{
	enum vmm_state st;
	int fd = safeopen_path(AT_FDCWD, path, SAFEOPEN_NO_LINKS), err;

	if (fd < 0 && errno == ENOENT) {
		*why = "no such file";
		errno = 0;
		return VMM_GONE;
	}
	if (fd < 0) {
		*why = errno == ELOOP ? "a link" : "stat failed";
		return VMM_UNCERTAIN;
	}
	st = vmm_liveness_fd(l, path, fd, why);
	err = errno;
	close(fd);
	errno = err;
	return st;
}

/*
 * The liveness of cl's VMM by the tables t: a VFIO holder is alive;
 * without one, the control socket decides (none: uncertain), and a gone
 * VMM stays uncertain when /proc could not be scanned for holders.
 */
static void
decide(const char *sysfs_root, const struct tables *t,
    const struct claim *cl, struct reconcile_claim *r)
{
	const char *why;

	r->err = 0;
	r->holder = t->scanned ?
	    vfio_scan_holder(&t->held, sysfs_root, cl->vf) : 0;
	if (r->holder != 0) {
		r->liveness = VMM_ALIVE;
		r->reason = "a process holds the VF's VFIO device";
	} else if (cl->control_socket == NULL) {
		r->liveness = VMM_UNCERTAIN;
		r->reason = "no control socket in the claim";
	} else {
		r->liveness = socket_liveness(&t->l, cl->control_socket, &why);
		r->err = errno;
		r->reason = socket_reason(why);
		r->end = why == vmm_why_refused ? "unclean" : "unknown";
	}
	if (r->liveness == VMM_GONE && !t->scanned) {
		r->liveness = VMM_UNCERTAIN;
		r->reason = "cannot scan /proc for VFIO holders";
	}
}

/* True while cl is younger than grace seconds (the launch window). */
static bool
in_grace(const struct claim *cl, unsigned grace, const struct timespec *now,
    bool *bad)
{
	struct timespec at;

	*bad = timefmt_parse(cl->claimed_at, &at) < 0;
	if (*bad)
		return false;
	return now->tv_sec - at.tv_sec < (time_t)grace ||
	    (now->tv_sec - at.tv_sec == (time_t)grace &&
	    now->tv_nsec < at.tv_nsec);
}

/* PROC_ROOT/proc/PID/comm into buf ("" when it cannot be read). */
static void
read_comm(const char *proc_root, long pid, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n = -1;
	int fd;

	buf[0] = '\0';
	if ((size_t)snprintf(path, sizeof(path), "%s/proc/%ld/comm",
	    strcmp(proc_root, "/") == 0 ? "" : proc_root, pid) >=
	    sizeof(path) || (fd = open(path, O_RDONLY | O_CLOEXEC |
	    O_NONBLOCK | O_NOFOLLOW)) < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/*
 * Every VF of the inventory that a process holds through VFIO (by the
 * scan t) with no claim in cl, into p->unclaimed. -1 on ENOMEM; an
 * unreadable inventory leaves p->inventory_read false.
 */
static int
find_unclaimed(const struct reconcile_conf *conf, const struct claims *cl,
    const struct tables *t, struct reconcile_pass *p)
{
	struct vf_inventory inv;
	struct reconcile_unclaimed *u;
	size_t i;
	long pid;
	int rc = 0;

	if (!t->scanned || sysfs_inventory(conf->sysfs_root, &inv, NULL) < 0)
		return 0;
	p->inventory_read = true;
	for (i = 0; i < inv.n && rc == 0; i++) {
		if (claims_find_vf(cl, inv.v[i].addr) != NULL ||
		    (pid = vfio_scan_holder(&t->held, conf->sysfs_root,
		    inv.v[i].addr)) <= 0)
			continue;
		u = realloc(p->unclaimed, (p->nunclaimed + 1) * sizeof(*u));
		if (u == NULL) {
			rc = -1;
			break;
		}
		p->unclaimed = u;
		u += p->nunclaimed++;
		memcpy(u->vf, inv.v[i].addr, sizeof(u->vf));
		u->pid = pid;
		read_comm(conf->proc_root, pid, u->comm, sizeof(u->comm));
	}
	sysfs_inventory_release(&inv);
	return rc;
}

/* The first phase: every claim of cl, without a lock. */
static int
decide_all(const struct reconcile_conf *conf, const struct claims *cl,
    struct reconcile_pass *p)
{
	struct timespec now;
	struct tables t;
	struct reconcile_claim *r;
	bool bad;
	size_t i;

	if (cl->n > 0 && (p->v = calloc(cl->n, sizeof(*p->v))) == NULL)
		return -1;
	timefmt_now(&now);
	tables_load(&t, conf->proc_root);
	for (i = 0; i < cl->n; i++, p->n++) {
		r = &p->v[i];
		memcpy(r->vf, cl->v[i].vf, sizeof(r->vf));
		if ((r->instance_id = strdup(cl->v[i].instance_id)) == NULL)
			break;
		r->verification = cl->v[i].verify_token != NULL;
		r->reason = "claimed within the grace period";
		if (in_grace(&cl->v[i], conf->grace, &now, &bad))
			continue;
		r->examined = true;
		decide(conf->sysfs_root, &t, &cl->v[i], r);
		if (bad && r->liveness == VMM_GONE) {
			r->liveness = VMM_UNCERTAIN;
			r->reason = "claimed_at is not a timestamp";
		}
	}
	bad = i < cl->n || find_unclaimed(conf, cl, &t, p) < 0;
	tables_release(&t);
	return bad ? -1 : 0;
}

static bool
same_text(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The claim of r's instance in fresh if it is the one old held. */
static const struct claim *
unchanged(const struct claims *fresh, const struct claims *old,
    const struct reconcile_claim *r)
{
	const struct claim *a = claims_find_instance(old, r->instance_id);
	const struct claim *b = claims_find_instance(fresh, r->instance_id);

	if (a == NULL || b == NULL || strcmp(a->vf, b->vf) != 0 ||
	    strcmp(a->claimed_at, b->claimed_at) != 0 ||
	    !same_text(a->control_socket, b->control_socket))
		return NULL;
	return b;
}

/*
 * True when vf has a vGPU type to reset. A VF that sysfs no longer
 * shows (SR-IOV disabled, the card gone), or one without the vendor
 * attribute, has nothing to reset; its claim is still released.
 */
static bool
has_vgpu_type(const char *sysfs_root, const char *vf)
{
	char path[PATH_MAX];

	return sysfs_vf_path(sysfs_root, vf, "nvidia/current_vgpu_type", path,
	    sizeof(path)) == 0 && access(path, F_OK) == 0;
}

/*
 * Under the exclusive lock: if r's claim is unchanged in fresh, its VMM
 * still gone and no process holds the VF (by the fresh tables t),
 * deconfigures the VF. True when the claim is to be released.
 */
static bool
recheck_release(const struct reconcile_conf *conf, const struct tables *t,
    struct claims *fresh, const struct claims *old, struct reconcile_claim *r)
{
	const struct claim *cl = unchanged(fresh, old, r);
	bool wrote;
	long pid;

	if (cl == NULL) {
		r->reason = "the claim changed before it could be released";
		r->err = 0;
		return false;
	}
	decide(conf->sysfs_root, t, cl, r);
	if (r->liveness != VMM_GONE)
		return false;
	if (has_vgpu_type(conf->sysfs_root, r->vf)) {
		if (claimlife_deconfigure(conf->sysfs_root, &t->held, r->vf,
		    &pid, &wrote) < 0) {
			r->err = errno;
			r->reason = "cannot reset current_vgpu_type";
			return false;
		}
		r->deconfigured = true;
	}
	return true;
}

static void
lock_failed(struct reconcile_pass *p, const struct store *s)
{
	if (s->unavailable)
		p->status = RECONCILE_UNAVAILABLE;
	else if (errno == EWOULDBLOCK)
		p->status = RECONCILE_LOCK_TIMEOUT;
	else
		p->status = RECONCILE_LOCK_FAILED;
}

/* Nothing of the pass counts as released: the release path failed. */
static void
none_released(struct reconcile_pass *p, const struct atomic_result *res)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->v[i].released) {
			p->v[i].released = false;
			p->v[i].reason = "cannot persist the VF claims";
		}
	p->status = res->step == NULL && errno == ENOMEM ? RECONCILE_NOMEM :
	    RECONCILE_PERSIST;
	p->step = res->step;
}

/* One end of claimlife_release_all() for r; its suspicion's how in
 * *how, the source text in source. */
static void
end_of(const struct reconcile_conf *conf, struct reconcile_claim *r,
    struct claimlife_end *e, struct suspicion_how *how, char *source,
    size_t len)
{
	*e = (struct claimlife_end){ .command = "reconcile", .vf = r->vf,
	    .instance_id = r->instance_id,
	    .liveness = vmm_state_name(r->liveness), .reason = r->reason,
	    .deconfigured = r->deconfigured, .verdict = &r->verdict };
	/* A verification claim (vfrecover's, SPEC 8.2) left by a stopped
	 * vfrecover: released, its end never judged (the VF is suspect). */
	if (conf->how == NULL || r->verification)
		return;
	*how = *conf->how;
	how->ended = r->end != NULL ? r->end : "unknown";
	(void)snprintf(source, len, "reconcile: %s", r->reason);
	how->source = source;
	e->how = how;
}

/*
 * The n claims marked released go by the one release path (SPEC.md
 * 4.1, 7.3): removed from fresh, saved once, each audited, and each
 * end judged (a socket that refused connections ended unclean).
 */
static int
release_marked(const struct reconcile_conf *conf, struct claims *fresh,
    struct reconcile_pass *p, size_t n)
{
	struct atomic_result res = { 0 };
	struct claimlife_end *ends;
	struct suspicion_how *hows;
	char (*sources)[160];
	size_t i, k = 0;
	int rc = -1;

	if (n == 0)
		return 0;
	ends = calloc(n, sizeof(*ends));
	hows = calloc(n, sizeof(*hows));
	sources = calloc(n, sizeof(*sources));
	for (i = 0; ends != NULL && hows != NULL && sources != NULL &&
	    i < p->n; i++)
		if (p->v[i].released) {
			end_of(conf, &p->v[i], &ends[k], &hows[k], sources[k],
			    sizeof(sources[k]));
			k++;
		}
	if (k == n)
		rc = claimlife_release_all(conf->s, fresh, ends, n, &res);
	if (rc < 0)
		none_released(p, &res);
	else
		p->released = n;
	for (i = 0, k = 0; rc == 0 && i < p->n; i++) {
		if (!p->v[i].released)
			continue;
		p->v[i].ended = p->v[i].end != NULL ? p->v[i].end : "unknown";
		if ((p->v[i].audit_err = ends[k++].audit_err) != 0)
			p->audit_failed++;
	}
	free(ends);
	free(hows);
	free(sources);
	return rc;
}

/* The second phase: the gone claims, under the exclusive lock. */
static int
release_gone(const struct reconcile_conf *conf, const struct claims *old,
    struct reconcile_pass *p)
{
	struct claims fresh;
	struct tables t;
	size_t i, n = 0;
	int rc;

	if (store_lock(conf->s, true, conf->lock_timeout) < 0) {
		lock_failed(p, conf->s);
		return -1;
	}
	if (claims_load(conf->s, &fresh) < 0) {
		p->status = conf->s->nomem ? RECONCILE_NOMEM :
		    RECONCILE_UNAVAILABLE;
		store_unlock(conf->s);
		return -1;
	}
	tables_load(&t, conf->proc_root);
	for (i = 0; i < p->n; i++)
		if (p->v[i].examined && p->v[i].liveness == VMM_GONE &&
		    recheck_release(conf, &t, &fresh, old, &p->v[i])) {
			p->v[i].released = true;
			n++;
		}
	tables_release(&t);
	rc = release_marked(conf, &fresh, p, n);
	store_unlock(conf->s);
	claims_release(&fresh);
	return rc;
}

static bool
any_gone(const struct reconcile_pass *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->v[i].examined && p->v[i].liveness == VMM_GONE)
			return true;
	return false;
}

int
reconcileengine_run(const struct reconcile_conf *conf, struct reconcile_pass *p)
{
	struct claims cl;
	size_t i;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	if (claims_load(conf->s, &cl) < 0) {
		p->status = conf->s->nomem ? RECONCILE_NOMEM :
		    RECONCILE_UNAVAILABLE;
		return -1;
	}
	if (decide_all(conf, &cl, p) < 0) {
		p->status = RECONCILE_NOMEM;
		rc = -1;
	} else if (!conf->dry_run && any_gone(p)) {
		rc = release_gone(conf, &cl, p);
	}
	for (i = 0; i < p->n; i++)
		if (p->v[i].examined && p->v[i].liveness == VMM_UNCERTAIN)
			p->uncertain++;
	claims_release(&cl);
	return rc;
}

int
reconcileengine_write_metrics(const char *path, unsigned long long uncertain,
    unsigned long long released, size_t unclaimed)
{
	struct prom p;
	const char *text;
	size_t len;
	int rc = -1, err;

	prom_init(&p);
	prom_family(&p, "hypeman_instances_vgpu_liveness_uncertain_total",
	    "counter", "Claims kept because their VMM's liveness was "
	    "uncertain, counted at each reconcile pass.");
	prom_sample(&p, "hypeman_instances_vgpu_liveness_uncertain_total",
	    NULL, (double)uncertain);
	prom_family(&p, "vfsentinel_claims_released_total", "counter",
	    "Claims of gone VMMs released by reconcile.");
	prom_sample(&p, "vfsentinel_claims_released_total", NULL,
	    (double)released);
	prom_family(&p, "vfsentinel_unclaimed_vfs_in_use", "gauge",
	    "VFs a process holds through VFIO with no claim: nothing "
	    "watches their guests (the last pass).");
	prom_sample(&p, "vfsentinel_unclaimed_vfs_in_use", NULL,
	    (double)unclaimed);
	if ((text = prom_finish(&p, &len)) != NULL)
		rc = prom_write_textfile(path, text, len);
	err = errno;
	prom_release(&p);
	errno = err;
	return rc;
}

json_t *
reconcileengine_claim_json(const struct reconcile_claim *r, bool dry_run)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:s}", "instance_id",
	    r->instance_id, "vf_address", r->vf, "liveness",
	    vmm_state_name(r->liveness), "released", r->released, "reason",
	    r->reason);
	int bad = 0;

	if (o != NULL && (r->released || r->deconfigured))
		bad |= json_object_set_new(o, "deconfigured",
		    json_boolean(r->deconfigured));
	if (o != NULL && r->ended != NULL)
		bad |= json_object_set_new(o, "ended",
		    json_string(r->ended)) | json_object_set_new(o, "suspect",
		    json_boolean(r->verdict.suspect));
	if (o != NULL && r->holder != 0)
		bad |= json_object_set_new(o, "pid",
		    json_integer((json_int_t)r->holder));
	if (o != NULL && r->err != 0)
		bad |= json_object_set_new(o, "error",
		    json_string(strerror(r->err)));
	if (o != NULL && dry_run)
		bad |= json_object_set_new(o, "dry_run", json_true());
	if (bad != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

enum log_level
reconcileengine_claim_msg(const struct reconcile_claim *r, bool dry_run,
    const char **msg)
{
	*msg = "VMM alive; claim kept";
	if (!r->examined)
		*msg = "claim within the grace period; not judged";
	else if (r->released)
		*msg = "released the claim of a gone VMM";
	else if (r->liveness == VMM_UNCERTAIN)
		*msg = "VMM liveness uncertain; claim kept";
	else if (r->liveness == VMM_GONE && dry_run)
		*msg = "VMM gone; claim not released (dry run)";
	else if (r->liveness == VMM_GONE)
		*msg = "VMM gone; claim kept";
	if (!r->examined || r->liveness == VMM_ALIVE)
		return LVL_DEBUG;
	if (r->liveness == VMM_UNCERTAIN)
		return LVL_WARN;
	if (r->released || dry_run)
		return LVL_INFO;
	return r->err != 0 ? LVL_ERROR : LVL_WARN;
}
