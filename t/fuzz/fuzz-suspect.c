/*
 * fuzz-suspect.c - the loader of vf-suspect.json (suspects_parse) and its
 * writer. Properties, for every input the loader accepts:
 * - the suspects are sorted by address, each address valid and suspect
 *   once, each with an instance, an ended_at and one of the three ends;
 * - suspects_dump() succeeds, its text loads again with the same suspects
 *   and dumping that gives the same bytes.
 * A rejected input must come with a reason.
 */
#include "suspect.h"
#include "fuzz.h"

#define T "suspect"

static void
check_shape(const struct suspects *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		fuzz_require(vfaddr_valid(d->v[i].vf), T,
		    "suspect with an invalid address");
		fuzz_require(i == 0 || strcmp(d->v[i - 1].vf, d->v[i].vf) < 0,
		    T, "suspects not sorted, or a VF suspect twice");
		fuzz_require(d->v[i].instance_id[0] != '\0' &&
		    d->v[i].ended_at[0] != '\0' &&
		    d->v[i].assigned_at != NULL && d->v[i].source != NULL,
		    T, "a suspect without its fields");
		fuzz_require(suspect_ended_valid(d->v[i].ended), T,
		    "a suspect with an end not clean, unclean or unknown");
		fuzz_require(suspects_find(d, d->v[i].vf) == &d->v[i], T,
		    "a loaded suspect is not found");
	}
}

static bool
same(const struct suspect *a, const struct suspect *b)
{
	return strcmp(a->vf, b->vf) == 0 &&
	    strcmp(a->instance_id, b->instance_id) == 0 &&
	    strcmp(a->assigned_at, b->assigned_at) == 0 &&
	    strcmp(a->ended_at, b->ended_at) == 0 &&
	    strcmp(a->ended, b->ended) == 0 &&
	    strcmp(a->source, b->source) == 0;
}

static void
check_same(const struct suspects *a, const struct suspects *b)
{
	size_t i;

	fuzz_require(a->n == b->n, T, "reload changed the suspect count");
	for (i = 0; i < a->n; i++)
		fuzz_require(same(&a->v[i], &b->v[i]), T,
		    "reload changed a suspect");
}

static void
check_roundtrip(const struct suspects *d)
{
	struct suspects again;
	char why[1024], *text, *text2;
	size_t len, len2;

	text = suspects_dump(d, &len);
	fuzz_require(text != NULL, T, "cannot dump suspects that loaded");
	fuzz_require(suspects_parse(text, len, &again, why, sizeof(why)) == 0,
	    T, "a dumped suspect file does not load");
	check_same(d, &again);
	text2 = suspects_dump(&again, &len2);
	fuzz_require(text2 != NULL && len2 == len &&
	    memcmp(text, text2, len) == 0, T, "dump is not stable");
	free(text);
	free(text2);
	suspects_release(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct suspects d;
	char why[1024];

	why[0] = '\0';
	if (suspects_parse((const char *)data, size, &d, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', T, "rejected without a reason");
		return 0;
	}
	check_shape(&d);
	check_roundtrip(&d);
	suspects_release(&d);
	return 0;
}
