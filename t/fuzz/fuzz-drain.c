/*
 * fuzz-drain.c - the loader of vf-drain.json (drains_parse) and its
 * writer. Properties, for every input the loader accepts:
 * - the drains are sorted by address, each address valid and drained
 *   once, each with a drained_at and a reason (possibly empty);
 * - drains_dump() succeeds, its text loads again with the same drains
 *   and dumping that gives the same bytes.
 * A rejected input must come with a reason.
 */
#include "drain.h"
#include "fuzz.h"

#define T "drain"

static void
check_shape(const struct drains *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		fuzz_require(vfaddr_valid(d->v[i].vf), T,
		    "drain with an invalid address");
		fuzz_require(i == 0 || strcmp(d->v[i - 1].vf, d->v[i].vf) < 0,
		    T, "drains not sorted, or a VF drained twice");
		fuzz_require(d->v[i].drained_at != NULL &&
		    d->v[i].reason != NULL, T, "a drain without its fields");
		fuzz_require(drains_vf_drained(d, d->v[i].vf) &&
		    drains_find(d, d->v[i].vf) == &d->v[i], T,
		    "a loaded drain is not found");
	}
}

static void
check_same(const struct drains *a, const struct drains *b)
{
	size_t i;

	fuzz_require(a->n == b->n, T, "reload changed the drain count");
	for (i = 0; i < a->n; i++)
		fuzz_require(strcmp(a->v[i].vf, b->v[i].vf) == 0 &&
		    strcmp(a->v[i].drained_at, b->v[i].drained_at) == 0 &&
		    strcmp(a->v[i].reason, b->v[i].reason) == 0, T,
		    "reload changed a drain");
}

static void
check_roundtrip(const struct drains *d)
{
	struct drains again;
	char why[1024], *text, *text2;
	size_t len, len2;

	text = drains_dump(d, &len);
	fuzz_require(text != NULL, T, "cannot dump drains that loaded");
	fuzz_require(drains_parse(text, len, &again, why, sizeof(why)) == 0,
	    T, "a dumped drain file does not load");
	check_same(d, &again);
	text2 = drains_dump(&again, &len2);
	fuzz_require(text2 != NULL && len2 == len &&
	    memcmp(text, text2, len) == 0, T, "dump is not stable");
	free(text);
	free(text2);
	drains_release(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drains d;
	char why[1024];

	why[0] = '\0';
	if (drains_parse((const char *)data, size, &d, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', T, "rejected without a reason");
		return 0;
	}
	check_shape(&d);
	check_roundtrip(&d);
	drains_release(&d);
	return 0;
}
