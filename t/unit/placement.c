/*
 * placement.c - unit tests (TAP) for the placement rule (src/lib/
 * placement.c): used, dirty, quarantined, candidates, allocatable, the
 * cards' load and order, over a fake sysfs tree in a temporary directory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static void
test_unavailable(const struct vf_inventory *inv, const struct claims *c)
{
	struct placement p;

	ok(placement_build(&p, inv, NULL, c) == 0, "built without health");
	ok(p.used == 6 && p.quarantined == 0 && p.allocatable == 0 &&
	    p.cards[0].quarantined == 0, "fail closed: used as usual, "
	    "nothing quarantined or allocatable");
	placement_release(&p);
}

static void
test_empty(void)
{
	struct vf_inventory inv = { 0 };
	struct health h = { 0 };
	struct claims c = { 0 };
	struct placement p;

	ok(placement_build(&p, &inv, &h, &c) == 0 && p.ncards == 0 &&
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
	char cmd[PATH_MAX + 16];
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/vfs-unit-placement-XXXXXX",
	    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(root) == NULL)
		abort();
	make_tree();
	load(&inv, &h, &c);
	ok(placement_build(&p, &inv, &h, &c) == 0, "placement built");
	test_states(&p);
	test_counts(&p);
	test_cards(&p);
	test_candidates(&p);
	test_order();
	test_unavailable(&inv, &c);
	test_empty();
	placement_release(&p);
	sysfs_inventory_release(&inv);
	health_release(&h);
	claims_release(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		abort();
	return done_testing();
}
