/*
 * sysfs.h - NVIDIA vendor-VFIO VF inventory under a sysfs root
 * (SPEC.md 4.3). Every path is SYSFS_ROOT/sys/bus/pci/devices/...
 */
#ifndef VFS_SYSFS_H
#define VFS_SYSFS_H

#include <stdbool.h>
#include <stddef.h>

#include "vfaddr.h"

#define VGPU_NAME_MAX 128

struct vgpu_type {
	unsigned id;
	char name[VGPU_NAME_MAX];	/* "NVIDIA L40S-12Q" */
	unsigned framebuffer_mb;	/* 12288; 0 when the name has no size */
};

struct vf_info {
	char addr[VF_ADDR_LEN + 1];
	char card[VF_ADDR_LEN + 1];	/* basename of physfn; "" if none */
	unsigned current_type;		/* nvidia/current_vgpu_type; 0 = free */
	struct vgpu_type *types;	/* owned: creatable_vgpu_types */
	size_t ntypes;
};

struct vf_inventory {
	struct vf_info *v;		/* owned, sorted by addr */
	size_t n;
};

/*
 * Lists every SYSFS_ROOT/sys/bus/pci/devices/<dev> with
 * nvidia/creatable_vgpu_types. A VF whose files cannot be read is skipped
 * (and counted in *skipped if not NULL). 0 or -1/errno (devices dir
 * unreadable; a missing dir is an empty inventory).
 */
int sysfs_inventory(const char *sysfs_root, struct vf_inventory *inv,
    size_t *skipped);
void sysfs_inventory_release(struct vf_inventory *inv);

/* True if at least one VF has nvidia/creatable_vgpu_types. */
bool sysfs_has_vgpu_framework(const char *sysfs_root);

/*
 * Parses creatable_vgpu_types text: a header line "ID : vGPU Name", then
 * lines "ID : NAME". Malformed lines are skipped. New array in *types.
 * 0 or -1/ENOMEM.
 */
int sysfs_vgpu_types_parse(const char *text, size_t len,
    struct vgpu_type **types, size_t *n);

/* Framebuffer of a profile name in MB: the number before the final
 * series letter, in GiB ("NVIDIA L40S-12Q" -> 12288); 0 if none. */
unsigned sysfs_vgpu_fb_mb(const char *name);

/* Writes type_id to the VF's nvidia/current_vgpu_type and reads it back.
 * 0 or -1/errno (EIO when the read-back differs). */
int sysfs_set_vgpu_type(const char *sysfs_root, const char *vf,
    unsigned type_id);

/* The VF's nvidia/current_vgpu_type now (0 = free). 0 or -1/errno
 * (unreadable; EINVAL: not a whole number). */
int sysfs_vgpu_type(const char *sysfs_root, const char *vf,
    unsigned *type_id);

/* A list of VF addresses (or other names of at most VF_ADDR_LEN). */
struct vf_list {
	char (*v)[VF_ADDR_LEN + 1];	/* owned: free(v) */
	size_t n;
};

/* Appends vf (its first VF_ADDR_LEN bytes). 0 or -1/ENOMEM. */
int sysfs_vf_list_add(struct vf_list *l, const char *vf);

/*
 * Appends every VF whose physfn is card, sorted by address. 0 (a missing
 * devices dir lists none) or -1/errno.
 */
int sysfs_card_vfs(const char *sysfs_root, const char *card,
    struct vf_list *l);

/*
 * Builds SYSFS_ROOT/sys/bus/pci[/sub[/vf[/rel]]] into buf (a NULL part
 * is left out; a trailing '/' of the root is not doubled). 0, or -1 with
 * errno ENAMETOOLONG.
 */
int sysfs_pci_path(const char *sysfs_root, const char *sub, const char *vf,
    const char *rel, char *buf, size_t len);

/* Builds SYSFS_ROOT/sys/bus/pci/devices/VF[/rel] into buf. 0 or -1. */
int sysfs_vf_path(const char *sysfs_root, const char *vf, const char *rel,
    char *buf, size_t len);

/*
 * True if this host's sysfs has vf as a VF: SYSFS_ROOT/sys/bus/pci/
 * devices/VF has a physfn link (an SR-IOV VF, with or without the vGPU
 * framework loaded) or nvidia/creatable_vgpu_types. A card, another PCI
 * function or a typo is not one.
 */
bool sysfs_vf_present(const char *sysfs_root, const char *vf);

#endif
