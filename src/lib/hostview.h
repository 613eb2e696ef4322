/*
 * hostview.h - the host as a program that places or reports sees it:
 * the stores under DATA_DIR/gpu (health, claims, drains; SPEC.md 4.1,
 * 6.3) read under the store's lock, the sysfs inventory of the VFs, and
 * the placement computed from them. vfpick, libvirt-hook,
 * resources-report and vfrecover load it as one and release it as one:
 *
 *	struct hostview v = { 0 };
 *	store_init(&v.store, data_dir); store_lock(&v.store, ...);
 *	if (hostview_load(&v, sysfs_root, threshold) == -1)
 *		... v.failed says which step: v.store.why, or errno ...
 *	... placement_find(&v.pl, vf), claims_find_instance(&v.claims, id)
 *	hostview_release(&v);	(unlocks the store too)
 *
 * Ownership: v owns everything in it; hostview_release() frees it and
 * leaves v zeroed but for the store's paths. Nothing here prints.
 */
#ifndef VFS_HOSTVIEW_H
#define VFS_HOSTVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "claims.h"
#include "drain.h"
#include "suspect.h"
#include "healthfile.h"
#include "placement.h"
#include "store.h"
#include "sysfs.h"

/* The step of hostview_load() that failed. */
enum hostview_step {
	HOSTVIEW_OK = 0,
	HOSTVIEW_STORES,		/* a file of the store: store.why,
					   store.nomem */
	HOSTVIEW_INVENTORY,		/* listing the VFs: errno */
	HOSTVIEW_PLACEMENT		/* the placement: errno (ENOMEM) */
};

struct hostview {
	struct store store;		/* the caller inits and locks it */
	struct health health;
	struct claims claims;
	struct drains drains;
	struct suspects suspects;	/* SPEC.md 7.3 */
	bool suspect_exclude;		/* the caller's: conf_suspect_
					   exclude() */
	struct vf_inventory inv;
	struct placement pl;
	size_t skipped;			/* VFs sysfs did not let us read */
	enum hostview_step failed;	/* the last -1's step */
};

/*
 * Loads the health store (with threshold), the claims, the drains and
 * the suspects,
 * all or nothing, under the lock the caller holds. 0, or -1 with
 * v->failed HOSTVIEW_STORES and the reason in v->store.
 */
int hostview_load_stores(struct hostview *v, unsigned threshold);

/* Lists the VFs under sysfs_root; v->skipped counts the unreadable
 * ones. 0, or -1 with errno and v->failed HOSTVIEW_INVENTORY. */
int hostview_load_inventory(struct hostview *v, const char *sysfs_root);

/*
 * Builds the placement from what is loaded; with health_known false
 * the health store counts as unknown (resources-report's unavailable
 * store), and so do the drains with drains_known false (vfrecover
 * reads no drains where it looks at the host). 0, or -1/ENOMEM and
 * v->failed HOSTVIEW_PLACEMENT.
 */
int hostview_place(struct hostview *v, bool health_known,
    bool drains_known);

/* The three above in their order; stops at the first -1. */
int hostview_load(struct hostview *v, const char *sysfs_root,
    unsigned threshold);

/* Unlocks the store and frees what v holds. */
void hostview_release(struct hostview *v);

#endif
