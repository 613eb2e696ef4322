/*
 * adopt.c - unit tests (TAP) for the adoption rules (src/lib/adopt.c):
 * each refusal and its sentence, their order, the profile an adopted
 * claim records, and the VFIO holder's warning over a fake sysfs and
 * /proc in a temporary directory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adopt.h"
#include "claims.h"
#include "tap.h"

#define VF "0000:e3:00.4"
#define P12 "NVIDIA L40S-12Q"
#define P24 "NVIDIA L40S-24Q"

static struct vgpu_type types[] = {
	{ .id = 1160, .name = P12, .framebuffer_mb = 12288 },
	{ .id = 1161, .name = P24, .framebuffer_mb = 24576 },
};

/* A free, healthy, unclaimed VF offering both types, holding cur. */
static void
make(struct vf_info *vi, struct placement_vf *v, unsigned cur)
{
	memset(vi, 0, sizeof(*vi));
	memset(v, 0, sizeof(*v));
	strcpy(vi->addr, VF);
	strcpy(vi->card, "0000:e3:00.0");
	vi->current_type = cur;
	vi->types = types;
	vi->ntypes = 2;
	v->vi = vi;
}

static void
test_refusals(void)
{
	struct claim other = { .vf = VF, .instance_id = "vm-9" };
	struct placement_vf v;
	struct vf_info vi;
	char msg[512];

	make(&vi, &v, 1160);
	ok(adopt_check(&v, P12, msg, sizeof(msg)) == ADOPT_OK,
	    "a configured VF of the profile's type is adopted");
	ok(adopt_check(&v, NULL, msg, sizeof(msg)) == ADOPT_OK &&
	    adopt_check(&v, "", msg, sizeof(msg)) == ADOPT_OK,
	    "without a profile any configured type is adopted");
	ok(adopt_check(&v, P24, msg, sizeof(msg)) == ADOPT_OTHER_TYPE,
	    "another profile's type is refused");
	is_str(msg, "VF " VF " is configured with vGPU type 1160, not "
	    "profile '" P24 "'", "  with the type and the profile named");
	make(&vi, &v, 0);
	ok(adopt_check(&v, P12, msg, sizeof(msg)) == ADOPT_UNCONFIGURED,
	    "an unconfigured VF is refused");
	is_str(msg, "VF " VF " has no vGPU type configured: nothing to "
	    "adopt", "  with nothing to adopt");
	v.drained = true;
	ok(adopt_check(&v, P12, msg, sizeof(msg)) == ADOPT_DRAINED,
	    "a drained VF is refused before its type is looked at");
	is_str(msg, "VF " VF " is drained", "  named drained");
	v.quarantined = true;
	ok(adopt_check(&v, P12, msg, sizeof(msg)) == ADOPT_QUARANTINED,
	    "a quarantined VF is refused before a drain");
	is_str(msg, "VF " VF " is quarantined", "  named quarantined");
	v.claim = &other;
	ok(adopt_check(&v, P12, msg, sizeof(msg)) == ADOPT_CLAIMED,
	    "a claimed VF is refused first");
	is_str(msg, "VF " VF " is claimed by vm-9", "  naming the holder");
	ok(adopt_check(&v, P12, msg, 8) == ADOPT_CLAIMED &&
	    strcmp(msg, "VF 0000") == 0, "a short buffer truncates the "
	    "sentence");
}

static void
test_profile(void)
{
	struct placement_vf v;
	struct vf_info vi;

	make(&vi, &v, 1161);
	is_str(adopt_profile(&v, P12), P12, "the profile given is recorded");
	is_str(adopt_profile(&v, NULL), P24, "else the held type's name");
	is_str(adopt_profile(&v, ""), P24, "  (an empty profile is none)");
	vi.current_type = 999;
	ok(adopt_profile(&v, NULL) == NULL, "a type the VF does not offer "
	    "has no name");
}

/* The fake tree: the VF's iommu_group, a /proc with one process. */
static void
test_holder(void)
{
	char root[PATH_MAX], cmd[PATH_MAX * 2];
	const char *w;
	long pid;

	tap_tmpdir(root, sizeof(root), "adopt");
	(void)snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir -p "
	    "sys/bus/pci/devices/" VF " sys/kernel/iommu_groups/87 "
	    "proc/1234/fd && ln -s ../../../kernel/iommu_groups/87 "
	    "sys/bus/pci/devices/" VF "/iommu_group", root);
	if (system(cmd) != 0)
		abort();
	w = adopt_holder(root, root, VF, &pid);
	ok(w != NULL && pid == 0 && strstr(w, "no process holds") != NULL,
	    "no holder: a warning that the VM may not have started");
	(void)snprintf(cmd, sizeof(cmd), "ln -s /dev/vfio/87 "
	    "'%s/proc/1234/fd/9'", root);
	if (system(cmd) != 0)
		abort();
	w = adopt_holder(root, root, VF, &pid);
	ok(w == NULL && pid == 1234, "a holder: no warning, its pid");
	(void)snprintf(cmd, sizeof(cmd), "rm -r '%s/proc'", root);
	if (system(cmd) != 0)
		abort();
	w = adopt_holder(root, root, VF, &pid);
	ok(w != NULL && pid == -1 && strstr(w, "cannot scan") != NULL,
	    "/proc unreadable: a warning, no holder assumed");
	tap_rmtree(root);
}

int
main(void)
{
	test_refusals();
	test_profile();
	test_holder();
	return done_testing();
}
