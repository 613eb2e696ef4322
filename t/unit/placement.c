/*
 * placement.c - unit tests (TAP) for the placement rule (src/lib/
 * placement.c): used, dirty, quarantined, candidates, allocatable, the
 * cards' load and order, over a fake sysfs tree in a temporary directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "claims.h"
#include "healthfile.h"
#include "healthrules.h"
#include "placement.h"
#include "tap.h"

#define CARD_A "0000:e3:00.0"
#define CARD_B "0000:e4:00.0"
#define CARD_C "0000:e5:00.0"
#define P12 "NVIDIA L40S-12Q"
#define P1 "NVIDIA L40S-1B"
#define HDR "ID : vGPU Name\n"
#define T12 "1160 : " P12 "\n"
#define T1 "1155 : " P1 "\n"

static char root[PATH_MAX];
/* No VF drained: the drain file is known and empty. */
static const struct drains no_drains;

static void
put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) != 0)
		abort();
}

/* A VF of card offering types, with current_vgpu_type cur. */
static void
make_vf(const char *vf, const char *card, const char *types, const char *cur)
{
	char rel[256], path[PATH_MAX * 2], target[64];

	snprintf(path, sizeof(path), "mkdir -p '%s/sys/bus/pci/devices/%s/"
	    "nvidia'", root, vf);
	if (system(path) != 0)
		abort();
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/nvidia/"
	    "creatable_vgpu_types", vf);
	put(rel, types);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/nvidia/"
	    "current_vgpu_type", vf);
	put(rel, cur);
	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s/physfn", root,
	    vf);
	snprintf(target, sizeof(target), "../%s", card);
	if (symlink(target, path) != 0)
		abort();
}

/*
 * Card A: .4 free (12Q, 1B), .5 claimed (12Q), .6 dirty (1160, no
 * claim), .7 free but quarantined, 01.0 claimed (1B) and quarantined.
 * Card B: .4 free (12Q), .5 dirty (1160). Card C: .4 dirty (1160), .5
 * claimed with a profile no VF offers (unknown load).
 */
static void
make_tree(void)
{
	make_vf("0000:e3:00.4", CARD_A, HDR T12 T1, "0\n");
	make_vf("0000:e3:00.5", CARD_A, HDR, "1160\n");
	make_vf("0000:e3:00.6", CARD_A, HDR, "1160\n");
	make_vf("0000:e3:00.7", CARD_A, HDR T12, "0\n");
	make_vf("0000:e3:01.0", CARD_A, HDR, "1155\n");
	make_vf("0000:e4:00.4", CARD_B, HDR T12, "0\n");
	make_vf("0000:e4:00.5", CARD_B, HDR, "1160\n");
	make_vf("0000:e5:00.4", CARD_C, HDR, "1160\n");
	make_vf("0000:e5:00.5", CARD_C, HDR, "0\n");
}

static void
add_claim(struct claims *c, const char *vf, const char *id,
    const char *profile)
{
	struct claim cl = { .instance_id = (char *)id,
	    .claimed_at = (char *)"2026-08-20T15:00:00Z",
	    .profile = (char *)profile };

	snprintf(cl.vf, sizeof(cl.vf), "%s", vf);
	if (claims_add(c, &cl) == -1)
		abort();
}

static void
load(struct vf_inventory *inv, struct health *h, struct claims *c)
{
	static const char health[] = "{\"version\":1,\"records\":["
	    "{\"vf_address\":\"0000:e3:00.7\",\"quarantined_at\":"
	    "\"2026-08-20T00:00:00Z\"},{\"vf_address\":\"0000:e3:01.0\","
	    "\"quarantined_at\":\"2026-08-20T00:00:00Z\"}]}";
	char why[512] = "";

	if (sysfs_inventory(root, inv, NULL) == -1 || health_parse(health,
	    strlen(health), h, why, sizeof(why)) == -1) {
		fprintf(stderr, "cannot load: %s\n", why);
		abort();
	}
	add_claim(c, "0000:e3:00.5", "i-1", P12);
	add_claim(c, "0000:e3:01.0", "i-2", P1);
	add_claim(c, "0000:e5:00.5", "i-3", "NVIDIA L40S-48Q");
}

/* The placement VF of address vf, or abort. */
static const struct placement_vf *
vf_of(const struct placement *p, const char *vf)
{
	size_t i;

	for (i = 0; i < p->inv->n; i++)
		if (strcmp(p->vf[i].vi->addr, vf) == 0)
			return &p->vf[i];
	abort();
}

static void
test_states(const struct placement *p)
{
	static const char *const want[][2] = {
		{ "0000:e3:00.4", "free" }, { "0000:e3:00.5", "claimed" },
		{ "0000:e3:00.6", "dirty" }, { "0000:e3:00.7", "quarantined" },
		{ "0000:e3:01.0", "quarantined" }, { "0000:e4:00.4", "free" },
		{ "0000:e4:00.5", "dirty" }, { "0000:e5:00.4", "dirty" },
		{ "0000:e5:00.5", "claimed" }
	};
	size_t i;

	ok(p->inv->n == 9, "nine VFs listed");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		is_str(placement_state_name(vf_of(p, want[i][0])), want[i][1],
		    want[i][0]);
	ok(vf_of(p, "0000:e3:01.0")->state == PLACEMENT_CLAIMED &&
	    vf_of(p, "0000:e3:01.0")->claim != NULL,
	    "a quarantined claimed VF keeps its claim");
	ok(vf_of(p, "0000:e3:00.7")->state == PLACEMENT_FREE,
	    "a quarantined VF can be free");
	ok(vf_of(p, "0000:e3:01.0")->view == PLACEMENT_VIEW_QUARANTINED &&
	    vf_of(p, "0000:e3:00.6")->view == PLACEMENT_VIEW_DIRTY,
	    "the view: quarantined wins over claimed");
	ok(vf_of(p, "0000:e3:00.7")->rec != NULL &&
	    vf_of(p, "0000:e3:00.4")->rec == NULL, "health records borrowed");
	is_str(placement_view_name(PLACEMENT_NVIEWS), "unknown",
	    "an out-of-range view has a name");
}

/* Each card's views sum to its VFs, and over the cards they give the
 * host's counts: the per-VF states and the counts cannot disagree. */
static void
test_views(const struct placement *p)
{
	unsigned sum[PLACEMENT_NVIEWS] = { 0 }, used = 0, n;
	size_t i, k;
	bool ok_sum = true;

	for (i = 0; i < p->ncards; i++) {
		n = 0;
		for (k = 0; k < PLACEMENT_NVIEWS; k++) {
			n += p->cards[i].views[k];
			sum[k] += p->cards[i].views[k];
		}
		ok_sum = ok_sum && n == p->cards[i].vfs;
	}
	ok(ok_sum, "every card's views sum to its VFs");
	for (i = 0; i < p->inv->n; i++)
		used += p->vf[i].state != PLACEMENT_FREE;
	ok(sum[PLACEMENT_VIEW_QUARANTINED] == p->quarantined &&
	    sum[PLACEMENT_VIEW_FREE] == p->allocatable && used == p->used,
	    "quarantined and free views are the counts (%u %u)",
	    sum[PLACEMENT_VIEW_QUARANTINED], sum[PLACEMENT_VIEW_FREE]);
	ok(p->cards[0].views[PLACEMENT_VIEW_FREE] == 1 &&
	    p->cards[0].views[PLACEMENT_VIEW_CLAIMED] == 1 &&
	    p->cards[0].views[PLACEMENT_VIEW_DIRTY] == 1 &&
	    p->cards[0].views[PLACEMENT_VIEW_QUARANTINED] == 2,
	    "card A: free 1, claimed 1, dirty 1, quarantined 2");
}

/* The profiles by framebuffer: 1B (avail1 allocatable), 12Q (avail12). */
static void
test_profiles(const struct placement *p, unsigned avail1, unsigned avail12)
{
	struct placement_profile *ps;
	size_t n = 99;

	ps = placement_profiles(p, &n);
	ok(ps != NULL && n == 2, "two profiles advertised (%zu)", n);
	if (ps == NULL || n != 2)
		abort();
	is_str(ps[0].name, P1, "smaller framebuffer first");
	ok(ps[0].framebuffer_mb == 1024 && ps[0].available == avail1 &&
	    ps[1].framebuffer_mb == 12288 && ps[1].available == avail12,
	    "available = allocatable VFs advertising it (%u, %u)",
	    ps[0].available, ps[1].available);
	free(ps);
}

static void
test_counts(const struct placement *p)
{
	ok(p->used == 6, "used = claimed or allocated (%u)", p->used);
	ok(p->quarantined == 2, "quarantined, used or not (%u)",
	    p->quarantined);
	ok(p->allocatable == 2, "allocatable = neither used nor quarantined "
	    "(%u)", p->allocatable);
	ok(vf_of(p, "0000:e3:00.4")->allocatable &&
	    vf_of(p, "0000:e4:00.4")->allocatable &&
	    !vf_of(p, "0000:e3:00.7")->allocatable &&
	    !vf_of(p, "0000:e3:00.6")->allocatable, "which are allocatable");
	ok(placement_profile_known(p, P12) && placement_profile_known(p, P1) &&
	    !placement_profile_known(p, "NVIDIA L40S-48Q"), "offered profiles");
	test_profiles(p, 1, 2);
}

static void
test_cards(const struct placement *p)
{
	const struct placement_card *a = &p->cards[0], *b = &p->cards[1],
	    *c = &p->cards[2];

	ok(p->ncards == 3, "three cards");
	is_str(a->addr, CARD_A, "cards sorted by address: A");
	is_str(b->addr, CARD_B, "cards sorted by address: B");
	is_str(c->addr, CARD_C, "cards sorted by address: C");
	ok(a->vfs == 5 && a->used == 3 && a->quarantined == 2,
	    "card A: 5 VFs, 3 used, 2 quarantined");
	ok(a->load_mb == 12288 + 12288 + 1024 && !a->unknown_load,
	    "card A load: a claim's profile, a dirty VF's type (%llu)",
	    a->load_mb);
	ok(b->vfs == 2 && b->used == 1 && b->quarantined == 0 &&
	    b->load_mb == 12288, "card B");
	ok(c->unknown_load, "card C: a profile no VF offers is unknown load");
}

static void
test_candidates(struct placement *p)
{
	const struct placement_card *best;

	placement_candidates(p, P12);
	ok(vf_of(p, "0000:e3:00.4")->role == PLACEMENT_CLEAN &&
	    vf_of(p, "0000:e3:00.6")->role == PLACEMENT_LEFTOVER &&
	    vf_of(p, "0000:e3:00.7")->role == PLACEMENT_NONE &&
	    vf_of(p, "0000:e3:00.5")->role == PLACEMENT_NONE,
	    "clean, leftover, quarantined and claimed roles");
	best = placement_best_card(p);
	ok(best != NULL && strcmp(best->addr, CARD_B) == 0,
	    "fewer quarantined VFs first: B before A");
	ok(best != NULL && placement_card_choices(best) == 1 &&
	    strcmp(placement_choice(p, best, 0)->addr, "0000:e4:00.4") == 0 &&
	    placement_choice(p, best, 1) == NULL,
	    "a clean candidate before a dirty one on the card");
	ok(p->cards[2].nclean == 0 && placement_card_choices(&p->cards[2]) ==
	    1 && strcmp(placement_choice(p, &p->cards[2], 0)->addr,
	    "0000:e5:00.4") == 0, "dirty with the profile's type: a candidate "
	    "when the card has no clean one");
	ok(placement_type_id(placement_choice(p, &p->cards[2], 0), P12) ==
	    1160, "a dirty candidate keeps its leftover type");
	placement_candidates(p, P1);
	best = placement_best_card(p);
	ok(best != NULL && strcmp(best->addr, CARD_A) == 0 &&
	    placement_type_id(placement_choice(p, best, 0), P1) == 1155,
	    "a card with quarantined VFs is the overflow");
}

static void
test_order(void)
{
	struct placement_card x = { .addr = "b", .load_mb = 1 }, y = x;

	ok(placement_card_cmp(&x, &y) == 0, "equal cards");
	y.addr = "a";
	ok(placement_card_cmp(&x, &y) > 0, "address last");
	y.load_mb = 2;
	ok(placement_card_cmp(&x, &y) < 0, "lower load first");
	y.load_mb = 0;
	x.unknown_load = true;
	ok(placement_card_cmp(&x, &y) > 0, "known load before unknown");
	y.quarantined = 1;
	ok(placement_card_cmp(&x, &y) < 0, "fewer quarantined before load");
}

/* Without a health store nothing is quarantined or allocatable. */
/* --vf: what a pinned VF is refused for, in the rule's order. */
static void
test_pin(const struct placement *p)
{
	const struct placement_vf *v;

	ok(placement_find(p, "0000:e9:00.4") == NULL, "pin: a VF the "
	    "inventory lacks is not found");
	v = placement_find(p, "0000:e3:00.5");
	ok(v != NULL && placement_pin(p, v, P12, false) ==
	    PLACEMENT_PIN_CLAIMED && strcmp(v->claim->instance_id,
	    "i-1") == 0, "pin: a claimed VF, with its claim");
	ok(placement_pin(p, vf_of(p, "0000:e3:01.0"), P1, true) ==
	    PLACEMENT_PIN_CLAIMED, "pin: claimed wins over quarantined");
	ok(placement_pin(p, vf_of(p, "0000:e3:00.6"), P12, false) ==
	    PLACEMENT_PIN_DIRTY, "pin: a dirty VF is in use");
	ok(placement_pin(p, vf_of(p, "0000:e4:00.4"), P1, false) ==
	    PLACEMENT_PIN_NOT_OFFERED, "pin: a free VF not offering it");
	ok(placement_pin(p, vf_of(p, "0000:e3:00.7"), P1, false) ==
	    PLACEMENT_PIN_NOT_OFFERED, "pin: not offered before quarantined");
	ok(placement_pin(p, vf_of(p, "0000:e3:00.7"), P12, false) ==
	    PLACEMENT_PIN_QUARANTINED, "pin: quarantined, not accepted");
	ok(placement_pin(p, vf_of(p, "0000:e3:00.7"), P12, true) ==
	    PLACEMENT_PIN_OK, "pin: quarantined, --include-quarantined");
	ok(placement_pin(p, vf_of(p, "0000:e3:00.4"), P1, false) ==
	    PLACEMENT_PIN_OK, "pin: a free VF offering it");
}

static void
test_unavailable(const struct vf_inventory *inv, const struct claims *c)
{
	struct placement p;

	ok(placement_build(&p, inv, NULL, c, NULL) == 0,
	    "built without health");
	ok(p.used == 6 && p.quarantined == 0 && p.allocatable == 0 &&
	    p.cards[0].quarantined == 0, "fail closed: used as usual, "
	    "nothing quarantined or allocatable");
	test_profiles(&p, 0, 0);
	ok(placement_pin(&p, vf_of(&p, "0000:e3:00.4"), P12, false) ==
	    PLACEMENT_PIN_HEALTH_UNKNOWN && placement_pin(&p, vf_of(&p,
	    "0000:e3:00.7"), P12, false) == PLACEMENT_PIN_HEALTH_UNKNOWN,
	    "pin: without health nothing can be pinned");
	placement_release(&p);
}

/* Drained VFs: out of placement, their own view, health untouched. */
static void
test_drained(const struct vf_inventory *inv, const struct health *h,
    const struct claims *c, unsigned allocatable)
{
	static const char *const vfs[] = { "0000:e3:00.4", "0000:e3:00.5",
	    "0000:e3:00.7" };
	struct drains d = { 0 };
	struct placement p;
	bool changed;
	size_t i;

	for (i = 0; i < 3; i++)
		if (drains_add(&d, vfs[i], "2026-12-02T13:00:00Z", "t",
		    &changed) < 0)
			abort();
	if (placement_build(&p, inv, h, c, &d) < 0)
		abort();
	ok(vf_of(&p, "0000:e3:00.4")->drained &&
	    vf_of(&p, "0000:e3:00.4")->view == PLACEMENT_VIEW_DRAINED &&
	    !vf_of(&p, "0000:e3:00.4")->allocatable,
	    "drained: a free VF is drained, its view, not allocatable");
	ok(vf_of(&p, "0000:e3:00.5")->view == PLACEMENT_VIEW_DRAINED &&
	    vf_of(&p, "0000:e3:00.7")->view == PLACEMENT_VIEW_QUARANTINED,
	    "drained: wins over claimed, quarantined wins over drained");
	ok(p.drained == 2 && p.allocatable == allocatable - 1 &&
	    p.cards[0].drained == 2, "drained: counted apart from "
	    "quarantined, allocatable one less");
	ok(placement_pin(&p, vf_of(&p, "0000:e3:00.4"), P12, false) ==
	    PLACEMENT_PIN_DRAINED && placement_pin(&p, vf_of(&p,
	    "0000:e3:00.4"), P12, true) == PLACEMENT_PIN_OK,
	    "pin: drained, refused unless --include-quarantined");
	placement_candidates(&p, P12);
	ok(vf_of(&p, "0000:e3:00.4")->role == PLACEMENT_NONE,
	    "drained: never a candidate");
	ok(strcmp(placement_state_name(vf_of(&p, "0000:e3:00.4")),
	    "drained") == 0, "drained: the state's name");
	placement_release(&p);
	ok(placement_build(&p, inv, h, c, NULL) == 0 && p.allocatable == 0 &&
	    p.drained == 0, "drains unknown: nothing allocatable");
	placement_release(&p);
	drains_release(&d);
}

static void
test_empty(void)
{
	struct vf_inventory inv = { 0 };
	struct health h = { 0 };
	struct claims c = { 0 };
	struct placement p;

	ok(placement_build(&p, &inv, &h, &c, &no_drains) == 0 &&
	    p.ncards == 0 &&
	    p.noffered == 0, "no VFs: no cards");
	placement_candidates(&p, P12);
	ok(placement_best_card(&p) == NULL, "no VFs: no card to pick");
	placement_release(&p);
}

int
main(void)
{
	struct vf_inventory inv = { 0 };
	struct health h = { 0 };
	struct claims c = { 0 };
	struct placement p;

	tap_tmpdir(root, sizeof(root), "placement");
	make_tree();
	load(&inv, &h, &c);
	ok(placement_build(&p, &inv, &h, &c, &no_drains) == 0,
	    "placement built");
	test_states(&p);
	test_views(&p);
	test_counts(&p);
	test_cards(&p);
	test_candidates(&p);
	test_pin(&p);
	test_order();
	test_unavailable(&inv, &c);
	test_drained(&inv, &h, &c, p.allocatable);
	test_empty();
	placement_release(&p);
	sysfs_inventory_release(&inv);
	health_release(&h);
	claims_release(&c);
	tap_rmtree(root);
	return done_testing();
}
