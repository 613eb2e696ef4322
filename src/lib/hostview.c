/*
 * hostview.c - the stores, the inventory and the placement as one
 * (hostview.h).
 */
#include <errno.h>

#include "hostview.h"

int
hostview_load_stores(struct hostview *v, unsigned threshold)
{
	if (health_load(&v->store, &v->health, threshold) == -1 ||
	    claims_load(&v->store, &v->claims) == -1 ||
	    drains_load(&v->store, &v->drains) == -1 ||
	    suspects_load(&v->store, &v->suspects) == -1) {
		v->failed = HOSTVIEW_STORES;
		return -1;
	}
	return 0;
}

int
hostview_load_inventory(struct hostview *v, const char *sysfs_root)
{
	v->skipped = 0;
	if (sysfs_inventory(sysfs_root, &v->inv, &v->skipped) == -1) {
		v->failed = HOSTVIEW_INVENTORY;
		return -1;
	}
	return 0;
}

int
hostview_place(struct hostview *v, bool health_known, bool drains_known)
{
	if (placement_build(&v->pl, &v->inv, health_known ? &v->health :
	    NULL, &v->claims, drains_known ? &v->drains : NULL) == -1) {
		v->failed = HOSTVIEW_PLACEMENT;
		return -1;
	}
	if (health_known)
		placement_suspects(&v->pl, &v->suspects, v->suspect_exclude);
	return 0;
}

int
hostview_load(struct hostview *v, const char *sysfs_root,
    unsigned threshold)
{
	v->failed = HOSTVIEW_OK;
	if (hostview_load_stores(v, threshold) == -1 ||
	    hostview_load_inventory(v, sysfs_root) == -1 ||
	    hostview_place(v, true, true) == -1)
		return -1;
	return 0;
}

void
hostview_release(struct hostview *v)
{
	store_unlock(&v->store);
	health_release(&v->health);
	claims_release(&v->claims);
	drains_release(&v->drains);
	suspects_release(&v->suspects);
	sysfs_inventory_release(&v->inv);
	placement_release(&v->pl);
	v->skipped = 0;
	v->failed = HOSTVIEW_OK;
}
