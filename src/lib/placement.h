/*
 * placement.h - the placement rule of SPEC.md 4.3, in one place: which
 * VFs are used (claimed, or allocated in sysfs without a claim: dirty),
 * quarantined, candidates for a profile, or allocatable (4.5: what vfpick
 * can hand out), each card's load, and the order of the cards. vfpick
 * places with it and resources-report counts with it, so the two cannot
 * disagree.
 *
 * Ownership: a struct placement borrows the inventory, the health store
 * and the claims ledger it was built from (they must outlive it) and owns
 * its arrays; placement_release() frees them. Nothing here prints or
 * exits: failures return -1 with errno.
 */
#ifndef VFS_PLACEMENT_H
#define VFS_PLACEMENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "claims.h"
#include "drain.h"
#include "suspect.h"
#include "healthfile.h"
#include "store.h"
#include "sysfs.h"

/* The largest vGPU type id (the driver's ids are unsigned 32-bit). */
#define VGPU_TYPE_ID_MAX UINT_MAX

/* Whether a VF is in use (SPEC.md 4.3 step 1). */
enum placement_state {
	PLACEMENT_FREE,			/* neither claimed nor allocated */
	PLACEMENT_CLAIMED,		/* in the claims ledger */
	PLACEMENT_DIRTY			/* allocated in sysfs, no claim */
};

/*
 * The state an operator sees (SPEC.md 4.5 --vfs and the per-card gauges):
 * quarantined wins over drained, drained over suspect, suspect over
 * claimed and dirty (7.3), so every VF has exactly one.
 */
enum placement_view {
	PLACEMENT_VIEW_FREE,
	PLACEMENT_VIEW_CLAIMED,
	PLACEMENT_VIEW_DIRTY,
	PLACEMENT_VIEW_QUARANTINED,
	PLACEMENT_VIEW_DRAINED,
	PLACEMENT_VIEW_SUSPECT,		/* SPEC.md 7.3: after drained */
	PLACEMENT_NVIEWS
};

/* What a VF is for the profile of placement_candidates(). */
enum placement_role {
	PLACEMENT_NONE,			/* used, quarantined, drained or not
					   offering */
	PLACEMENT_CLEAN,		/* free and advertises the profile */
	PLACEMENT_LEFTOVER		/* dirty, leftover type = the profile */
};

struct placement_vf {
	const struct vf_info *vi;	/* borrowed from the inventory */
	const struct claim *claim;	/* borrowed; NULL when unclaimed */
	const struct vf_record *rec;	/* borrowed health record; NULL when
					   none or health is unknown */
	enum placement_state state;
	bool quarantined;		/* never while health is unknown */
	bool drained;			/* in the drain file (drain.h) */
	bool suspect;			/* in the suspect file (suspect.h) */
	enum placement_view view;
	bool allocatable;		/* free, not quarantined, not drained,
					   health and drains known */
	enum placement_role role;
};

struct placement_card {
	const char *addr;		/* borrowed from the inventory */
	unsigned vfs;
	unsigned used;
	unsigned quarantined;
	unsigned drained;		/* drained and not quarantined */
	unsigned suspect;		/* suspect, not quarantined */
	unsigned views[PLACEMENT_NVIEWS];	/* VFs per view; sum = vfs */
	unsigned long long load_mb;	/* framebuffer its used VFs hold */
	bool unknown_load;		/* one holds a type no VF offers */
	size_t nclean;			/* candidates, after _candidates() */
	size_t nleftover;
};

struct placement {
	const struct vf_inventory *inv;
	const struct health *health;	/* borrowed; NULL when unknown */
	const struct drains *drains;	/* borrowed; NULL when unknown */
	struct placement_vf *vf;	/* owned: one per VF, inventory order */
	struct placement_card *cards;	/* owned, sorted by address */
	size_t ncards;
	struct vgpu_type *offered;	/* owned: union of offered profiles */
	size_t noffered;
	unsigned used;
	unsigned quarantined;
	unsigned drained;		/* drained and not quarantined */
	unsigned suspect;		/* suspect, not quarantined */
	bool suspect_exclude;		/* suspect.placement acts as
					   exclude (else last) */
	bool suspect_skip;		/* placement_candidates() */
	unsigned allocatable;
};

/*
 * Marks the suspect VFs of s (SPEC.md 7.3): their view is suspect unless
 * quarantined or drained; with exclude they are not allocatable and
 * never candidates, without it (suspect.placement last) they are
 * candidates only when no other VF on any card fits.
 */
void placement_suspects(struct placement *p, const struct suspects *s,
    bool exclude);

/*
 * Classifies every VF of inv and sums up the cards. h is NULL when the
 * health state is unavailable, d when the drain file is: then nothing is
 * quarantined, nothing drained and nothing allocatable (fail closed).
 * Every placement passes the drains (drains_load() under the store lock,
 * with the health store and the ledger): a drained VF is never offered.
 * 0 or -1/ENOMEM (p then holds nothing).
 */
int placement_build(struct placement *p, const struct vf_inventory *inv,
    const struct health *h, const struct claims *c, const struct drains *d);

/* True if some VF offers a profile of that name. */
bool placement_profile_known(const struct placement *p, const char *name);

/* Sets every VF's role for the profile and the cards' candidate counts
 * (SPEC.md 4.3 step 2). Needs a health store (p built with h != NULL). */
void placement_candidates(struct placement *p, const char *profile);

/* The card order of SPEC.md 4.3 step 3 (qsort-style result). */
int placement_card_cmp(const struct placement_card *a,
    const struct placement_card *b);

/* A profile some VF advertises (SPEC.md 4.5 "profiles"). */
struct placement_profile {
	const char *name;		/* borrowed from the inventory */
	unsigned framebuffer_mb;
	unsigned available;		/* allocatable VFs advertising it */
};

/*
 * Every profile advertised, by name, with its allocatable VFs, sorted by
 * framebuffer then name. A new array (*n entries) the caller frees, or
 * NULL/ENOMEM.
 */
struct placement_profile *placement_profiles(const struct placement *p,
    size_t *n);

/* The first card, in that order, with a candidate; NULL if none. */
const struct placement_card *placement_best_card(const struct placement *p);

/* The number of candidates to choose from on card c: its clean ones, or
 * its leftover ones when it has no clean one (step 2). */
size_t placement_card_choices(const struct placement_card *c);

/* The k-th (from 0, inventory order) of those; NULL if k is too big. */
const struct vf_info *placement_choice(const struct placement *p,
    const struct placement_card *c, size_t k);

/* The type id vi takes for the profile: the id under which it advertises
 * it, else its leftover type (a dirty candidate); 0 if neither. */
unsigned placement_type_id(const struct vf_info *vi, const char *profile);

/* The placement VF of address vf (canonical), or NULL when the
 * inventory has none. */
const struct placement_vf *placement_find(const struct placement *p,
    const char *vf);

/* Whether a pinned VF (--vf, SPEC.md 4.3) can take a profile. */
enum placement_pin {
	PLACEMENT_PIN_OK,
	PLACEMENT_PIN_CLAIMED,		/* v->claim holds it */
	PLACEMENT_PIN_DIRTY,		/* allocated in sysfs, no claim */
	PLACEMENT_PIN_NOT_OFFERED,	/* neither advertised nor leftover */
	PLACEMENT_PIN_QUARANTINED,	/* and quarantined ones not accepted */
	PLACEMENT_PIN_DRAINED,		/* and drained ones not accepted */
	PLACEMENT_PIN_HEALTH_UNKNOWN	/* p built without a health store or
					   without the drains */
};

/*
 * The verdict for pinning v to the profile, the first that applies in
 * the order above; a quarantined or drained VF passes only with
 * include_quarantined (a verification boot, on a drained card).
 */
enum placement_pin placement_pin(const struct placement *p,
    const struct placement_vf *v, const char *profile,
    bool include_quarantined);

/* "free", "claimed", "dirty", "quarantined" or "drained" (which wins:
 * SPEC.md 4.5 --vfs, 6.3): the name of v->view. */
const char *placement_state_name(const struct placement_vf *v);

/* The name of a view, as above (static). */
const char *placement_view_name(enum placement_view view);

void placement_release(struct placement *p);

#endif
