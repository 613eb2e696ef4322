/*
 * placement.c - the placement rule of SPEC.md 4.3 and the counts of 4.5
 * (see placement.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "conf.h"
#include "healthfile.h"
#include "placement.h"

/* True if the union of offered profiles holds name under id. */
static bool
offered_has(const struct placement *p, const char *name, unsigned id)
{
	size_t i;

	for (i = 0; i < p->noffered; i++)
		if (p->offered[i].id == id &&
		    strcmp(p->offered[i].name, name) == 0)
			return true;
	return false;
}

/* Builds the union of the profiles all VFs offer (a handful). */
static int
build_offered(struct placement *p)
{
	const struct vgpu_type *t;
	struct vgpu_type *nv;
	size_t i, j;

	for (i = 0; i < p->inv->n; i++) {
		for (j = 0; j < p->inv->v[i].ntypes; j++) {
			t = &p->inv->v[i].types[j];
			if (offered_has(p, t->name, t->id))
				continue;
			nv = reallocarray(p->offered, p->noffered + 1,
			    sizeof(*nv));
			if (nv == NULL)
				return -1;
			p->offered = nv;
			p->offered[p->noffered++] = *t;
		}
	}
	return 0;
}

/*
 * The framebuffer of a profile some VF still offers, looked up by name
 * (name != NULL) or by type id. false when no VF offers it any more: its
 * size cannot be read, so the card's load is unknown.
 */
static bool
offered_fb(const struct placement *p, const char *name, unsigned id,
    unsigned long long *fb)
{
	const struct vgpu_type *t;
	size_t i;

	for (i = 0; i < p->noffered; i++) {
		t = &p->offered[i];
		if (name ? strcmp(t->name, name) == 0 : t->id == id) {
			*fb = t->framebuffer_mb;
			return true;
		}
	}
	return false;
}

/* The framebuffer a used VF holds; false when unknown. */
static bool
used_fb(const struct placement *p, const struct placement_vf *v,
    unsigned long long *fb)
{
	const struct claim *cl = v->claim;
	unsigned id = 0;

	if (cl == NULL)
		return offered_fb(p, NULL, v->vi->current_type, fb);
	if (cl->profile != NULL)
		return offered_fb(p, cl->profile, 0, fb);
	if (cl->type_id != NULL && conf_parse_uint(cl->type_id, 1,
	    VGPU_TYPE_ID_MAX, &id) == 0)
		return offered_fb(p, NULL, id, fb);
	return false;
}

/* Finds or adds the card at addr (cards has room for every VF). */
static struct placement_card *
card_of(struct placement *p, const char *addr)
{
	size_t i;

	for (i = 0; i < p->ncards; i++)
		if (strcmp(p->cards[i].addr, addr) == 0)
			return &p->cards[i];
	p->cards[p->ncards].addr = addr;
	return &p->cards[p->ncards++];
}

/* The one state of a classified VF (quarantined wins, then drained). */
static enum placement_view
view_of(const struct placement_vf *v)
{
	if (v->quarantined)
		return PLACEMENT_VIEW_QUARANTINED;
	if (v->drained)
		return PLACEMENT_VIEW_DRAINED;
	if (v->state == PLACEMENT_CLAIMED)
		return PLACEMENT_VIEW_CLAIMED;
	return v->state == PLACEMENT_DIRTY ? PLACEMENT_VIEW_DIRTY :
	    PLACEMENT_VIEW_FREE;
}

/* SPEC.md 4.3 step 1 for one VF, and its share of its card. */
static void
classify(struct placement *p, struct placement_vf *v, const struct health *h,
    const struct claims *c)
{
	struct placement_card *cs = card_of(p, v->vi->card);
	unsigned long long fb;

	v->claim = claims_find_vf(c, v->vi->addr);
	if (v->claim != NULL)
		v->state = PLACEMENT_CLAIMED;
	else if (v->vi->current_type != 0)
		v->state = PLACEMENT_DIRTY;
	v->rec = h != NULL ? health_find(h, v->vi->addr) : NULL;
	v->quarantined = v->rec != NULL &&
	    health_record_quarantined(v->rec, h->threshold);
	v->drained = drains_vf_drained(p->drains, v->vi->addr);
	v->allocatable = h != NULL && p->drains != NULL &&
	    v->state == PLACEMENT_FREE && !v->quarantined && !v->drained;
	v->view = view_of(v);
	cs->vfs++;
	cs->views[v->view]++;
	if (v->state != PLACEMENT_FREE) {
		cs->used++;
		if (used_fb(p, v, &fb))
			cs->load_mb += fb;
		else
			cs->unknown_load = true;
	}
	cs->quarantined += v->quarantined;
	cs->drained += v->view == PLACEMENT_VIEW_DRAINED;
	p->used += v->state != PLACEMENT_FREE;
	p->quarantined += v->quarantined;
	p->drained += v->view == PLACEMENT_VIEW_DRAINED;
	p->allocatable += v->allocatable;
}

static int
addr_cmp(const void *pa, const void *pb)
{
	return strcmp(((const struct placement_card *)pa)->addr,
	    ((const struct placement_card *)pb)->addr);
}

int
placement_build(struct placement *p, const struct vf_inventory *inv,
    const struct health *h, const struct claims *c, const struct drains *d)
{
	size_t i, n = inv->n ? inv->n : 1;

	memset(p, 0, sizeof(*p));
	p->inv = inv;
	p->health = h;
	p->drains = h != NULL ? d : NULL;
	p->vf = calloc(n, sizeof(*p->vf));
	p->cards = calloc(n, sizeof(*p->cards));
	if (p->vf == NULL || p->cards == NULL || build_offered(p) == -1) {
		placement_release(p);
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < inv->n; i++) {
		p->vf[i].vi = &inv->v[i];
		classify(p, &p->vf[i], h, c);
	}
	qsort(p->cards, p->ncards, sizeof(*p->cards), addr_cmp);
	return 0;
}

/* The entry of t's name in ps (n so far), added if new. */
static struct placement_profile *
profile_of(struct placement_profile *ps, size_t *n, const struct vgpu_type *t)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(ps[i].name, t->name) == 0)
			return &ps[i];
	ps[*n].name = t->name;
	ps[*n].framebuffer_mb = t->framebuffer_mb;
	return &ps[(*n)++];
}

static int
profile_cmp(const void *pa, const void *pb)
{
	const struct placement_profile *a = pa, *b = pb;

	if (a->framebuffer_mb != b->framebuffer_mb)
		return a->framebuffer_mb < b->framebuffer_mb ? -1 : 1;
	return strcmp(a->name, b->name);
}

struct placement_profile *
placement_profiles(const struct placement *p, size_t *n)
{
	const struct placement_vf *v;
	struct placement_profile *ps;
	size_t i, j, ntypes = 0;

	for (i = 0; i < p->inv->n; i++)
		ntypes += p->inv->v[i].ntypes;
	if ((ps = calloc(ntypes + 1, sizeof(*ps))) == NULL)
		return NULL;
	*n = 0;
	for (i = 0; i < p->inv->n; i++) {
		v = &p->vf[i];
		for (j = 0; j < v->vi->ntypes; j++)
			profile_of(ps, n, &v->vi->types[j])->available +=
			    v->allocatable;
	}
	qsort(ps, *n, sizeof(*ps), profile_cmp);
	return ps;
}

bool
placement_profile_known(const struct placement *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->noffered; i++)
		if (strcmp(p->offered[i].name, name) == 0)
			return true;
	return false;
}

/* The id under which vi advertises the profile name; 0 if it does not. */
static unsigned
advertised_id(const struct vf_info *vi, const char *name)
{
	size_t i;

	for (i = 0; i < vi->ntypes; i++)
		if (strcmp(vi->types[i].name, name) == 0)
			return vi->types[i].id;
	return 0;
}

/* SPEC.md 4.3 step 2 for one VF. */
static enum placement_role
role_of(const struct placement *p, const struct placement_vf *v,
    const char *profile)
{
	if (v->quarantined || v->drained || v->state == PLACEMENT_CLAIMED ||
	    (v->suspect && p->suspect_skip))
		return PLACEMENT_NONE;
	if (v->state == PLACEMENT_FREE)
		return advertised_id(v->vi, profile) != 0 ? PLACEMENT_CLEAN :
		    PLACEMENT_NONE;
	return offered_has(p, profile, v->vi->current_type) ?
	    PLACEMENT_LEFTOVER : PLACEMENT_NONE;
}

/* The roles and the cards' counts; true when some VF is a candidate. */
static bool
candidates_pass(struct placement *p, const char *profile)
{
	struct placement_card *cs;
	bool any = false;
	size_t i;

	for (i = 0; i < p->ncards; i++)
		p->cards[i].nclean = p->cards[i].nleftover = 0;
	for (i = 0; i < p->inv->n; i++) {
		p->vf[i].role = role_of(p, &p->vf[i], profile);
		cs = card_of(p, p->vf[i].vi->card);
		if (p->vf[i].role == PLACEMENT_CLEAN)
			cs->nclean++;
		else if (p->vf[i].role == PLACEMENT_LEFTOVER)
			cs->nleftover++;
		any |= p->vf[i].role != PLACEMENT_NONE;
	}
	return any;
}

/* Suspects are left out; under suspect.placement last they come back
 * when nothing else on any card fits (SPEC.md 7.3). */
void
placement_candidates(struct placement *p, const char *profile)
{
	p->suspect_skip = true;
	if (!candidates_pass(p, profile) && !p->suspect_exclude) {
		p->suspect_skip = false;
		(void)candidates_pass(p, profile);
	}
}

void
placement_suspects(struct placement *p, const struct suspects *s,
    bool exclude)
{
	struct placement_card *cs;
	struct placement_vf *v;
	size_t i;

	p->suspect_exclude = exclude;
	for (i = 0; s != NULL && i < p->inv->n; i++) {
		v = &p->vf[i];
		if (suspects_find(s, v->vi->addr) == NULL)
			continue;
		v->suspect = true;
		if (v->quarantined)
			continue;
		cs = card_of(p, v->vi->card);
		cs->suspect++;
		p->suspect++;
		if (exclude && v->allocatable) {
			v->allocatable = false;
			p->allocatable--;
		}
		if (v->view == PLACEMENT_VIEW_DRAINED)
			continue;
		cs->views[v->view]--;
		v->view = PLACEMENT_VIEW_SUSPECT;
		cs->views[v->view]++;
	}
}

/*
 * SPEC.md 4.3 step 3: fewer quarantined VFs (a card with a wedged VF is
 * overflow-only), known load before unknown, lower load, address.
 */
int
placement_card_cmp(const struct placement_card *a,
    const struct placement_card *b)
{
	if (a->quarantined != b->quarantined)
		return a->quarantined < b->quarantined ? -1 : 1;
	if (a->unknown_load != b->unknown_load)
		return a->unknown_load ? 1 : -1;
	if (a->load_mb != b->load_mb)
		return a->load_mb < b->load_mb ? -1 : 1;
	return strcmp(a->addr, b->addr);
}

const struct placement_card *
placement_best_card(const struct placement *p)
{
	const struct placement_card *best = NULL, *cs;
	size_t i;

	for (i = 0; i < p->ncards; i++) {
		cs = &p->cards[i];
		if (cs->nclean + cs->nleftover == 0)
			continue;
		if (best == NULL || placement_card_cmp(cs, best) < 0)
			best = cs;
	}
	return best;
}

size_t
placement_card_choices(const struct placement_card *c)
{
	return c->nclean > 0 ? c->nclean : c->nleftover;
}

const struct vf_info *
placement_choice(const struct placement *p, const struct placement_card *c,
    size_t k)
{
	enum placement_role want;
	size_t i;

	want = c->nclean > 0 ? PLACEMENT_CLEAN : PLACEMENT_LEFTOVER;
	for (i = 0; i < p->inv->n; i++) {
		if (p->vf[i].role != want || strcmp(p->vf[i].vi->card,
		    c->addr) != 0)
			continue;
		if (k-- == 0)
			return p->vf[i].vi;
	}
	return NULL;
}

unsigned
placement_type_id(const struct vf_info *vi, const char *profile)
{
	unsigned id = advertised_id(vi, profile);

	return id != 0 ? id : vi->current_type;
}

const struct placement_vf *
placement_find(const struct placement *p, const char *vf)
{
	size_t i;

	for (i = 0; i < p->inv->n; i++)
		if (strcmp(p->vf[i].vi->addr, vf) == 0)
			return &p->vf[i];
	return NULL;
}

enum placement_pin
placement_pin(const struct placement *p, const struct placement_vf *v,
    const char *profile, bool include_quarantined)
{
	if (v->state == PLACEMENT_CLAIMED)
		return PLACEMENT_PIN_CLAIMED;
	if (v->state == PLACEMENT_DIRTY)
		return PLACEMENT_PIN_DIRTY;
	if (placement_type_id(v->vi, profile) == 0)
		return PLACEMENT_PIN_NOT_OFFERED;
	if (v->quarantined && !include_quarantined)
		return PLACEMENT_PIN_QUARANTINED;
	if (v->drained && !include_quarantined)
		return PLACEMENT_PIN_DRAINED;
	if (p->health == NULL || p->drains == NULL)
		return PLACEMENT_PIN_HEALTH_UNKNOWN;
	return PLACEMENT_PIN_OK;
}

const char *
placement_view_name(enum placement_view view)
{
	static const char *const names[PLACEMENT_NVIEWS] = {
		[PLACEMENT_VIEW_FREE] = "free",
		[PLACEMENT_VIEW_CLAIMED] = "claimed",
		[PLACEMENT_VIEW_DIRTY] = "dirty",
		[PLACEMENT_VIEW_QUARANTINED] = "quarantined",
		[PLACEMENT_VIEW_DRAINED] = "drained",
		[PLACEMENT_VIEW_SUSPECT] = "suspect"
	};

	return view < PLACEMENT_NVIEWS ? names[view] : "unknown";
}

const char *
placement_state_name(const struct placement_vf *v)
{
	return placement_view_name(v->view);
}

void
placement_release(struct placement *p)
{
	free(p->vf);
	free(p->cards);
	free(p->offered);
	p->vf = NULL;
	p->cards = NULL;
	p->offered = NULL;
	p->ncards = p->noffered = 0;
}
