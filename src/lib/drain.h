/*
 * drain.h - the drains, DATA_DIR/gpu/vf-drain.json (SPEC.md 6.3):
 *
 *	{"version": 1, "drains": [{"vf_address": "0000:e3:00.4",
 *	 "drained_at": "2026-12-02T13:00:00Z", "reason": "SR-IOV cycle"}]}
 *
 * vfsentinel's own file (upstream has no drain), beside the health store
 * and the claims ledger and under their lock: loaded strictly (a file
 * that does not load makes placement fail closed, never overwritten) and
 * saved with atomic_write(), as they are. A drained VF is not offered
 * and not allocatable (placement.h); its health record is never touched,
 * so an undrain restores exactly the placement state before the drain.
 *
 * Ownership: struct drains owns its strings; drains_release() frees
 * them. Nothing here prints or exits: -1 with errno, and for the loader
 * and saver s->why naming the file.
 */
#ifndef VFS_DRAIN_H
#define VFS_DRAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic.h"
#include "store.h"

#define DRAIN_FILE "vf-drain.json"
#define DRAIN_NOUN "VF drains"

struct drain {
	char vf[VF_ADDR_LEN + 1];
	char *drained_at;		/* owned, RFC 3339 */
	char *reason;			/* owned; "" when none */
};

struct drains {
	struct drain *v;		/* owned, sorted by vf */
	size_t n;
	size_t cap;
};

/* DATA_DIR/gpu/vf-drain.json into buf. 0, or -1/ENAMETOOLONG. */
int drains_path(const struct store *s, char *buf, size_t len);

/*
 * Loads the drain file; a missing file is no drain. -1 with s->why
 * ("PATH: validate VF drains drain 0: ...") when it cannot be used
 * (s->unavailable for a missing DATA_DIR/gpu, s->nomem for ENOMEM): the
 * caller fails closed.
 */
int drains_load(struct store *s, struct drains *d);

/* Parses the file's text by the loader's rules (for it and fuzzing). */
int drains_parse(const char *text, size_t len, struct drains *d,
    char *why, size_t whylen);

/* The file's text (2-space indent, as the other stores). New buffer, or
 * NULL/ENOMEM (EILSEQ: a string that is not UTF-8). */
char *drains_dump(const struct drains *d, size_t *len);

/* Saves atomically and durably. -1 with errno, s->why and res. */
int drains_save(struct store *s, const struct drains *d,
    struct atomic_result *res);

/* The drain of vf (borrowed), or NULL. */
const struct drain *drains_find(const struct drains *d, const char *vf);

/*
 * The query every placement makes (vfpick, --adopt, the libvirt hook,
 * resources-report through placement_build()): true when d drains vf.
 */
bool drains_vf_drained(const struct drains *d, const char *vf);

/*
 * Drains vf since drained_at for reason, unless it is drained already
 * (then nothing changes: the first drain's time and reason stay). Sets
 * *changed when d changed. 0 or -1/ENOMEM (EINVAL: a bad VF address).
 */
int drains_add(struct drains *d, const char *vf, const char *drained_at,
    const char *reason, bool *changed);

/* Undrains vf; sets *changed when it was drained. */
void drains_remove(struct drains *d, const char *vf, bool *changed);

void drains_release(struct drains *d);

#endif
