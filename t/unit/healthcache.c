/*
 * healthcache.c - unit tests (TAP) for the seal of vf-health.json and the
 * one-record view: a splice is byte for byte what health_dump() writes
 * for the changed store (thousands of generated stores and changes); the
 * view is used only while the seal matches and the threshold can
 * quarantine nothing else; a changed file falls back to the full load.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "healthrules.h"
#include "healthcache.h"
#include "vfstore/healthview.h"
#include "io.h"
#include "store.h"
#include "tap.h"
#include "healthfile.h"

static const char *const pool[] = {
	"0000:40:00.1", "0000:40:00.2", "0000:40:01.0", "0000:41:00.1",
	"0000:41:07.7", "0000:e3:00.4", "0000:e3:00.5", "0000:ff:1f.7",
};
#define NPOOL (sizeof(pool) / sizeof(pool[0]))

/* Instance ids that would confuse a layout-blind search. */
static const char *const ids[] = {
	"i-1", "\n    {\n      \"vf_address\": \"0000:40:01.0\"", "\n    }",
	"<&>", "x\"y", "",
};

static unsigned rnd_state;

static unsigned
rnd(unsigned n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

static void
gen_record(struct vf_record *r)
{
	size_t j;

	r->nfailures = rnd(4);
	r->failures = r->nfailures ? calloc(r->nfailures,
	    sizeof(*r->failures)) : NULL;
	for (j = 0; j < r->nfailures; j++) {
		r->failures[j].instance_id = strdup(ids[rnd(6)]);
		r->failures[j].assigned_at = strdup(rnd(2) ? "t" : "");
		r->failures[j].reported_at.tv_sec = 1787000000 + rnd(1000);
		r->failures[j].reported_at.tv_nsec = rnd(3) * 1000;
	}
	r->quarantined = r->nfailures == 0 || rnd(3) == 0;
	r->quarantined_at.tv_sec = r->quarantined ? 1787000000 : 0;
}

/* A store holding each pool VF with probability 1/2, from seed. */
static void
gen_health(unsigned seed, struct health *h)
{
	size_t i;

	memset(h, 0, sizeof(*h));
	rnd_state = seed;
	for (i = 0; i < NPOOL; i++)
		if (rnd(2))
			gen_record(healthrules_record_get(h, pool[i]));
}

static void
drop(struct health *h, const char *vf)
{
	struct vf_record *r = health_find(h, vf);
	size_t at, j;

	if (r == NULL)
		return;
	at = (size_t)(r - h->recs);
	for (j = 0; j < r->nfailures; j++) {
		free(r->failures[j].instance_id);
		free(r->failures[j].assigned_at);
	}
	free(r->failures);
	memmove(r, r + 1, (h->n - at - 1) * sizeof(*r));
	h->n--;
}

/* One case: seed's store, vf replaced by a new record or removed. */
static bool
splice_case(unsigned seed, bool *was_empty)
{
	struct health h, want;
	struct vf_record *r;
	char *before, *got, *expect;
	size_t blen, glen, elen;
	const char *vf;
	bool remove, same;

	gen_health(seed, &h);
	gen_health(seed, &want);
	*was_empty = h.n == 0;
	before = health_dump(&h, &blen);
	vf = pool[rnd(NPOOL)];
	remove = rnd(3) == 0;
	drop(&want, vf);
	r = NULL;
	if (!remove)
		gen_record(r = healthrules_record_get(&want, vf));
	got = healthview_splice(before, blen, vf, remove ? NULL :
	    health_find(&want, vf), &glen);
	expect = health_dump(&want, &elen);
	same = got != NULL && expect != NULL && glen == elen &&
	    memcmp(got, expect, elen) == 0;
	if (!same)
		printf("# seed %u vf %s remove %d\n# got:\n%s\n# want:\n%s\n",
		    seed, vf, remove, got ? got : "(null)", expect);
	free(before);
	free(got);
	free(expect);
	health_release(&h);
	health_release(&want);
	(void)r;
	return same;
}

static void
test_splice(void)
{
	unsigned seed, bad = 0, empties = 0;
	bool empty;

	for (seed = 1; seed <= 4000; seed++) {
		if (!splice_case(seed, &empty))
			bad++;
		empties += empty;
	}
	ok(bad == 0, "4000 splices equal health_dump of the changed store "
	    "(%u differ)", bad);
	ok(empties > 0, "the cases include the empty store (%u)", empties);
}

/* --- the view on a real store directory ------------------------------- */

static char dir[PATH_MAX];

static void
make_store(struct store *s, unsigned seed)
{
	struct atomic_result res;
	struct health h;
	char gpu[PATH_MAX * 2];

	snprintf(gpu, sizeof(gpu), "%s/gpu", dir);
	(void)mkdir(gpu, 0755);
	store_init(s, dir);
	gen_health(seed, &h);
	ok(health_save(s, &h, &res) == 0, "seed %u saved and sealed", seed);
	health_release(&h);
}

static void
test_view(void)
{
	struct health_report rep = { .vf = "0000:40:00.2", .instance = "new",
	    .assigned_at = "t" };
	struct health_view v;
	struct atomic_result res;
	struct health h, full;
	struct store s;

	make_store(&s, 7);
	ok(healthview_load_vf(&s, &h, 1000, rep.vf, &v) == 0 && v.partial &&
	    h.n <= 1, "a sealed file gives the one-record view");
	ok(healthrules_report_failure(&h, &rep) == 0 && rep.changed &&
	    healthview_save(&s, &v, &h, &res) == 0, "a report saves through "
	    "the view");
	healthview_release(&v);
	health_release(&h);
	ok(health_load(&s, &full, 1000) == 0 && health_find(&full, rep.vf) &&
	    health_find(&full, rep.vf)->nfailures >= 1, "the full load reads "
	    "the spliced file");
	health_release(&full);
	ok(healthview_load_vf(&s, &h, 1000, rep.vf, &v) == 0 && v.partial,
	    "the spliced file is sealed again");
	healthview_release(&v);
	health_release(&h);
}

static void
test_fallbacks(void)
{
	struct health_view v;
	struct health h;
	struct store s;
	char path[PATH_MAX * 2];
	FILE *f;

	make_store(&s, 11);
	ok(healthview_load_vf(&s, &h, 1, pool[0], &v) == 0 && !v.partial,
	    "threshold 1 could quarantine another record: the full load");
	healthview_release(&v);
	health_release(&h);
	snprintf(path, sizeof(path), "%s/gpu/vf-health.json", dir);
	f = fopen(path, "a");
	fputs("x", f);
	fclose(f);
	ok(healthview_load_vf(&s, &h, 1000, pool[0], &v) == -1 &&
	    strstr(s.why, "unmarshal") != NULL, "a file changed after its "
	    "seal fails closed in the full load: %s", s.why);
	healthview_release(&v);
}

int
main(void)
{
	tap_tmpdir(dir, sizeof(dir), "healthcache");
	test_splice();
	test_view();
	test_fallbacks();
	tap_rmtree(dir);
	return done_testing();
}
