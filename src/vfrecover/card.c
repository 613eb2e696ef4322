/*
 * card.c - the card's SR-IOV state in sysfs, the idle rule and
 * the drain and clear of vfrecover (see recovery.h).
 *
 * A PF lists its VFs as virtfn0, virtfn1, ... links and their number in
 * sriov_numvfs. sriov-manage -d removes them; -e creates them, and the
 * vendor-VFIO framework then gives each its nvidia/creatable_vgpu_types.
 * sriov-manage has exited 0 without creating a VF, so only sysfs says
 * whether a step worked.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "claims.h"
#include "drain.h"
#include "healthfile.h"
#include "healthrules.h"
#include "holders.h"
#include "io.h"
#include "placement.h"
#include "recovery.h"
#include "sig.h"
#include "timefmt.h"
#include "vfio.h"

static int
addr_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int
card_virtfns(const char *sysfs_root, const char *card,
    struct vf_list *l)
{
	char dir[PATH_MAX], path[PATH_MAX], link[PATH_MAX];
	const char *base;
	struct dirent *de;
	ssize_t n;
	size_t first = l->n;
	DIR *d;

	if (sysfs_vf_path(sysfs_root, card, NULL, dir, sizeof(dir)) < 0)
		return -1;
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "virtfn", 6) != 0 ||
		    io_pathf(path, sizeof(path), "%s/%s", dir,
		    de->d_name) < 0 ||
		    (n = readlink(path, link, sizeof(link) - 1)) <= 0)
			continue;
		link[n] = '\0';
		base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		if (vfaddr_valid(base) && sysfs_vf_list_add(l, base) < 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	if (l->n - first > 1)
		qsort(l->v + first, l->n - first, sizeof(*l->v), addr_cmp);
	return 0;
}

bool
card_present(const char *sysfs_root, const char *card)
{
	char dir[PATH_MAX];
	struct stat st;

	return sysfs_vf_path(sysfs_root, card, NULL, dir, sizeof(dir)) == 0 &&
	    stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

bool
card_disabled(const char *sysfs_root, const char *card)
{
	struct vf_list l = { 0 };
	char path[PATH_MAX], buf[32];
	bool gone;

	if (sysfs_vf_path(sysfs_root, card, "sriov_numvfs", path,
	    sizeof(path)) == 0 && io_read_attr(path, buf, sizeof(buf)) == 0 &&
	    strcmp(buf, "0") == 0)
		return true;
	gone = card_virtfns(sysfs_root, card, &l) == 0 && l.n == 0;
	free(l.v);
	return gone;
}

/* True when VF vf has a non-empty nvidia/creatable_vgpu_types. */
static bool
vf_ready(const char *sysfs_root, const char *vf)
{
	char path[PATH_MAX], line[128];

	if (sysfs_vf_path(sysfs_root, vf, "nvidia/creatable_vgpu_types",
	    path, sizeof(path)) < 0)
		return false;
	if (io_read_attr(path, line, sizeof(line)) < 0)
		return errno == ENAMETOOLONG;	/* a long first line */
	return line[0] != '\0';
}

bool
card_enabled(const char *sysfs_root, const char *card,
    size_t want, size_t *have)
{
	struct vf_list l = { 0 };
	size_t i;

	*have = 0;
	if (card_virtfns(sysfs_root, card, &l) < 0)
		return false;
	for (i = 0; i < l.n; i++)
		if (vf_ready(sysfs_root, l.v[i]))
			(*have)++;
	free(l.v);
	return *have >= want && want > 0;
}

/* The placement view of vf, or NULL when the inventory lacks it. */
static const struct placement_vf *
placement_of(const struct placement *p, const char *vf)
{
	size_t i;

	for (i = 0; i < p->inv->n; i++)
		if (strcmp(p->vf[i].vi->addr, vf) == 0)
			return &p->vf[i];
	return NULL;
}

/* Why vf is busy, as a new object, or NULL when it is idle. */
static json_t *
busy_json(const struct placement *p, const struct claims *c,
    const struct vfio_scan *held, const char *sysfs_root, const char *vf)
{
	const struct placement_vf *pv = placement_of(p, vf);
	const struct claim *cl = claims_find_vf(c, vf);
	long pid;

	if (cl != NULL)
		return json_pack("{s:s, s:s, s:s}", "vf", vf, "why", "claimed",
		    "instance_id", cl->instance_id);
	if (pv != NULL && pv->state == PLACEMENT_DIRTY)
		return json_pack("{s:s, s:s, s:I}", "vf", vf, "why",
		    "allocated", "current_type",
		    (json_int_t)pv->vi->current_type);
	if ((pid = vfio_scan_holder(held, sysfs_root, vf)) > 0)
		return json_pack("{s:s, s:s, s:I}", "vf", vf, "why", "held",
		    "pid", (json_int_t)pid);
	return json_null();
}

/* The busy VFs of vfs, given the inventory and the scan. */
static int
busy_list(const struct placement *p, const struct claims *c,
    const struct vfio_scan *held, const char *sysfs_root,
    const struct vf_list *vfs, json_t *out)
{
	json_t *b;
	size_t i;

	for (i = 0; i < vfs->n; i++) {
		if ((b = busy_json(p, c, held, sysfs_root, vfs->v[i])) == NULL)
			return -1;
		if (json_is_null(b))
			continue;
		if (json_array_append_new(out, b) < 0)
			return -1;
	}
	return 0;
}

int
card_busy(const char *sysfs_root, const char *proc_root,
    struct hostview *v, const struct vf_list *vfs, json_t **busy)
{
	struct vfio_scan held;
	int rc = -1, saved;

	*busy = NULL;
	if (vfio_scan_load(&held, proc_root) < 0)
		return -1;
	if (hostview_load_inventory(v, sysfs_root) < 0 ||
	    hostview_place(v, true, false) < 0)
		goto out;
	if ((*busy = json_array()) == NULL)
		errno = ENOMEM;
	else if (busy_list(&v->pl, &v->claims, &held, sysfs_root, vfs,
	    *busy) == 0)
		rc = 0;
	else
		errno = ENOMEM;
out:
	saved = errno;
	if (rc < 0) {
		json_decref(*busy);
		*busy = NULL;
	}
	vfio_scan_release(&held);
	errno = saved;
	return rc;
}

int
card_drains(struct drains *d, const struct vf_list *vfs, bool drain,
    bool *changed)
{
	char at[TIMEFMT_MAX];
	struct timespec now;
	size_t i;

	timefmt_now(&now);
	if (timefmt_format(&now, at, sizeof(at)) < 0)
		return -1;
	for (i = 0; i < vfs->n; i++)
		if (!drain)
			drains_remove(d, vfs->v[i], changed);
		else if (drains_add(d, vfs->v[i], at, RECOVERY_DRAIN_REASON,
		    changed) < 0)
			return -1;
	return 0;
}

int
card_clear(struct health *h, const struct vf_list *vfs, bool *changed,
    json_t **dropped)
{
	struct vf_record *r;
	size_t i;

	if ((*dropped = json_array()) == NULL)
		return -1;
	for (i = 0; i < vfs->n; i++) {
		if ((r = health_find(h, vfs->v[i])) != NULL &&
		    r->nfailures > 0 &&
		    json_array_append_new(*dropped, health_record_json(r)) < 0)
			return -1;
		(void)healthrules_clear(h, vfs->v[i], changed);
	}
	return 0;
}

/* Polls every 200 ms until the deadline; false at it or on a stop. */
static bool
nap(long long end)
{
	if (sig_stop || io_now_ms() >= end)
		return false;
	(void)poll(NULL, 0, 200);
	return true;
}

bool
card_wait_disabled(const char *sysfs_root, const char *card,
    unsigned timeout_s)
{
	long long end = io_now_ms() + (long long)timeout_s * 1000;

	while (!card_disabled(sysfs_root, card))
		if (!nap(end))
			return false;
	return true;
}

bool
card_wait_enabled(const char *sysfs_root, const char *card, size_t want,
    unsigned timeout_s, size_t *have)
{
	long long end = io_now_ms() + (long long)timeout_s * 1000;

	while (!card_enabled(sysfs_root, card, want, have))
		if (!nap(end))
			return false;
	return true;
}

/* The holders of h as a new array, or NULL/ENOMEM. */
static json_t *
holders_json(const struct holders *h)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < h->n; i++)
		if (json_array_append_new(a, json_pack("{s:I, s:s, s:s}",
		    "pid", (json_int_t)h->v[i].pid, "comm", h->v[i].comm,
		    "dev", h->v[i].dev)) < 0) {
			json_decref(a);
			a = NULL;
		}
	if (a == NULL)
		errno = ENOMEM;
	return a;
}

int
card_wait_unheld(const char *proc_root, unsigned timeout_s,
    json_t **held)
{
	long long end = io_now_ms() + (long long)timeout_s * 1000;
	struct holders h;

	*held = NULL;
	for (;;) {
		if (holders_scan(&h, proc_root, "/dev/nvidia") < 0)
			return -1;
		if (h.n == 0)
			return 0;
		if (!nap(end))
			break;
		holders_release(&h);
	}
	*held = holders_json(&h);
	holders_release(&h);
	return *held == NULL ? -1 : 1;
}

int
card_systemic(const struct conf *conf, struct hostview *v,
    struct systemic *out)
{
	struct systemic_rule rule = systemic_rule_of(conf);
	struct systemic_recoveries rec = { 0 };
	struct timespec now;
	int rc = -1;

	timefmt_now(&now);
	if (systemic_recoveries_load(v->store.dir, &rec) == 0 &&
	    hostview_load_inventory(v, conf->sysfs_root) == 0 &&
	    hostview_place(v, true, false) == 0)
		rc = systemic_check(&v->pl, &rec, &rule, &now, out);
	systemic_recoveries_release(&rec);
	return rc;
}
