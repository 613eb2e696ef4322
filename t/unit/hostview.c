/*
 * hostview.c - unit tests (TAP) for the host as one view
 * (src/lib/hostview.c): the four stores, the sysfs inventory and the
 * placement loaded together under the caller's lock; each step's
 * failure named in v.failed; an unknown health store or unknown drains;
 * the suspects; and hostview_release() leaving v reusable. Over a fake
 * sysfs tree and a store in a temporary directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostview.h"
#include "tap.h"

#define E3 "0000:e3:00.0"
#define VF4 "0000:e3:00.4"
#define VF5 "0000:e3:00.5"
#define VF6 "0000:e3:00.6"
#define VF7 "0000:e3:00.7"
#define E4 "0000:e4:00.0"
#define W4 "0000:e4:00.4"
#define W5 "0000:e4:00.5"
#define DEV "sys/bus/pci/devices/"

static char root[PATH_MAX], data[PATH_MAX * 2];

/* A free VF of card pf offering one profile. */
static void
make_vf(const char *pf, const char *vf)
{
	tap_sh(root, "mkdir -p " DEV "%s/nvidia && echo 0 >" DEV "%s/nvidia/"
	    "current_vgpu_type && printf 'ID : vGPU Name\\n1160 : NVIDIA "
	    "L40S-12Q\\n' >" DEV "%s/nvidia/creatable_vgpu_types && "
	    "ln -s ../%s " DEV "%s/physfn", vf, vf, vf, pf, vf);
}

/* Writes text to DATA/gpu/name. */
static void
put(const char *name, const char *text)
{
	tap_sh(root, "printf '%%s' '%s' >'%s/gpu/%s'", text, data, name);
}

/*
 * The host: on e3, VF4 claimed by i-1, VF5 quarantined by an operator,
 * VF6 drained, VF7 free; on e4, W4 suspect (free), and W5, whose
 * creatable_vgpu_types cannot be read.
 */
static void
make_host(void)
{
	struct store s;
	bool created;

	make_vf(E3, VF4);
	make_vf(E3, VF5);
	make_vf(E3, VF6);
	make_vf(E3, VF7);
	make_vf(E4, W4);
	tap_sh(root, "mkdir -p " DEV W5 "/nvidia/creatable_vgpu_types");
	if (store_init(&s, data) == -1 ||
	    store_create(&s, (uid_t)-1, (gid_t)-1, &created) == -1) {
		printf("Bail out! no store in %s\n", data);
		exit(1);
	}
	put("vf-health.json", "{\"version\":1,\"records\":[{\"vf_address\":"
	    "\"" VF5 "\",\"quarantined_at\":\"2026-08-20T00:00:00Z\"}]}");
	put("vf-claims.json", "{\"version\":1,\"claims\":[{\"vf_address\":"
	    "\"" VF4 "\",\"instance_id\":\"i-1\",\"claimed_at\":"
	    "\"2026-08-20T15:00:00Z\",\"profile\":\"NVIDIA L40S-12Q\"}]}");
	put("vf-drain.json", "{\"version\":1,\"drains\":[{\"vf_address\":"
	    "\"" VF6 "\",\"drained_at\":\"2026-12-02T13:00:00Z\",\"reason\":"
	    "\"SR-IOV cycle\"}]}");
	put("vf-suspect.json", "{\"version\":1,\"suspects\":[{\"vf_address\":"
	    "\"" W4 "\",\"instance_id\":\"i-4\",\"assigned_at\":"
	    "\"2026-08-20T15:00:00Z\",\"ended_at\":\"2026-08-20T15:01:00Z\","
	    "\"ended\":\"unclean\",\"source\":\"libvirt-hook: "
	    "reason=crashed\"}]}");
}

/* A view of the host with the store locked shared (its lock file
 * exists: store_create() made it). */
static void
begin(struct hostview *v, bool exclude)
{
	memset(v, 0, sizeof(*v));
	v->suspect_exclude = exclude;
	if (store_init(&v->store, data) == -1 ||
	    store_lock(&v->store, false, 1) == -1) {
		printf("Bail out! cannot lock the store in %s\n", data);
		exit(1);
	}
}

/* The view name of vf, or "(none)". */
static const char *
view(const struct hostview *v, const char *vf)
{
	const struct placement_vf *p = placement_find(&v->pl, vf);

	return p != NULL ? placement_state_name(p) : "(none)";
}

static void
test_load(void)
{
	struct hostview v;
	const struct placement_vf *p;

	begin(&v, false);
	ok(hostview_load(&v, root, 2) == 0 && v.failed == HOSTVIEW_OK,
	    "load: the stores, the inventory and the placement");
	ok(v.inv.n == 5 && v.skipped == 1,
	    "  five VFs listed, the unreadable one skipped and counted");
	ok(v.claims.n == 1 && claims_find_instance(&v.claims, "i-1") != NULL,
	    "  the claims: i-1 found by instance");
	ok(v.health.n == 1 && v.drains.n == 1 && v.suspects.n == 1,
	    "  the health store, the drains and the suspects");
	is_str(view(&v, VF4), "claimed", "  " VF4 " claimed");
	is_str(view(&v, VF5), "quarantined", "  " VF5 " quarantined");
	is_str(view(&v, VF6), "drained", "  " VF6 " drained");
	is_str(view(&v, VF7), "free", "  " VF7 " free");
	is_str(view(&v, W4), "suspect", "  " W4 " suspect");
	ok(v.pl.used == 1 && v.pl.quarantined == 1 && v.pl.drained == 1 &&
	    v.pl.suspect == 1 && v.pl.allocatable == 2 && v.pl.ncards == 2,
	    "  the counts: 1 used, 1 quarantined, 1 drained, 1 suspect, 2 "
	    "allocatable (a suspect last in line), 2 cards");
	p = placement_find(&v.pl, VF4);
	ok(p != NULL && p->claim == claims_find_vf(&v.claims, VF4),
	    "  a VF's claim is the view's own claim");
	hostview_release(&v);
	ok(v.store.lock_fd == -1 && v.inv.n == 0 && v.inv.v == NULL &&
	    v.pl.vf == NULL && v.claims.n == 0 && v.health.n == 0 &&
	    v.skipped == 0 && v.failed == HOSTVIEW_OK,
	    "release: the store unlocked, nothing held");
	ok(store_lock(&v.store, false, 1) == 0 &&
	    hostview_load(&v, root, 2) == 0 && v.inv.n == 5,
	    "  and the same view loads again");
	hostview_release(&v);
	begin(&v, true);
	ok(hostview_load(&v, root, 2) == 0 && v.pl.allocatable == 1 &&
	    !placement_find(&v.pl, W4)->allocatable,
	    "with suspect_exclude a suspect VF is not allocatable");
	hostview_release(&v);
}

static void
test_unknown(void)
{
	struct hostview v;

	begin(&v, false);
	ok(hostview_load_stores(&v, 2) == 0 &&
	    hostview_load_inventory(&v, root) == 0 &&
	    hostview_place(&v, false, true) == 0,
	    "the health store unknown (resources-report's unavailable store)");
	ok(v.pl.quarantined == 0 && v.pl.allocatable == 0 && v.pl.suspect == 0,
	    "  nothing quarantined, nothing allocatable, no suspects applied");
	hostview_release(&v);
	begin(&v, false);
	ok(hostview_load_stores(&v, 2) == 0 &&
	    hostview_load_inventory(&v, root) == 0 &&
	    hostview_place(&v, true, false) == 0,
	    "the drains unknown (vfrecover's look at the host)");
	ok(v.pl.drained == 0 && v.pl.quarantined == 1 && v.pl.allocatable == 0,
	    "  nothing drained, the quarantine known, nothing allocatable");
	hostview_release(&v);
}

static void
test_failures(void)
{
	char other[PATH_MAX * 2];
	struct hostview v;

	put("vf-suspect.json", "not json");
	begin(&v, false);
	ok(hostview_load(&v, root, 2) == -1 && v.failed == HOSTVIEW_STORES &&
	    strstr(v.store.why, "vf-suspect.json") != NULL,
	    "a broken suspect file: the stores' step, the file named");
	ok(v.inv.n == 0, "  the inventory is not read after it");
	hostview_release(&v);
	put("vf-suspect.json", "{\"version\":1,\"suspects\":[]}");
	put("vf-health.json", "{\"version\":2,\"records\":[]}");
	begin(&v, false);
	ok(hostview_load(&v, root, 2) == -1 && v.failed == HOSTVIEW_STORES &&
	    strstr(v.store.why, "vf-health.json") != NULL,
	    "a broken health store: the stores' step, the file named");
	hostview_release(&v);
	put("vf-health.json", "{\"version\":1,\"records\":[]}");
	(void)snprintf(other, sizeof(other), "%s/other", root);
	tap_sh(root, "mkdir -p other/sys/bus/pci && "
	    ": >other/sys/bus/pci/devices");
	begin(&v, false);
	errno = 0;
	ok(hostview_load(&v, other, 2) == -1 &&
	    v.failed == HOSTVIEW_INVENTORY && errno == ENOTDIR,
	    "a devices directory that is a file: the inventory's step, errno");
	hostview_release(&v);
	tap_sh(root, "rm -r other/sys");
	begin(&v, false);
	ok(hostview_load(&v, other, 2) == 0 && v.inv.n == 0 &&
	    v.pl.allocatable == 0 && v.failed == HOSTVIEW_OK,
	    "no devices directory: no VF, no failure");
	hostview_release(&v);
}

int
main(void)
{
	tap_tmpdir(root, sizeof(root), "hostview");
	(void)snprintf(data, sizeof(data), "%s/data", root);
	make_host();
	test_load();
	test_unknown();
	test_failures();
	tap_rmtree(root);
	return done_testing();
}
