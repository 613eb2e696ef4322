/*
 * fuzz-claims.c - the loader of vf-claims.json (claims_parse) and its
 * writer. Properties, for every input the loader accepts:
 * - no VF and no instance holds two claims; every address is valid;
 * - claims_dump() succeeds, its text loads again with the same claims
 *   (compared field by field, absent stays absent) and dumping that gives
 *   the same bytes.
 * A rejected input must come with a reason.
 */
#include "claims.h"
#include "fuzz.h"
#include "store.h"

#define T "claims"

static bool
same_opt(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static void
check_shape(const struct claims *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		fuzz_require(vfaddr_valid(c->v[i].vf), T,
		    "claim with an invalid address");
		fuzz_require(claims_find_vf(c, c->v[i].vf) == &c->v[i], T,
		    "a VF claimed twice");
		fuzz_require(claims_find_instance(c, c->v[i].instance_id) ==
		    &c->v[i], T, "an instance holds two claims");
	}
}

static void
check_same(const struct claims *a, const struct claims *b)
{
	const struct claim *x, *y;
	size_t i;

	fuzz_require(a->n == b->n, T, "reload changed the claim count");
	for (i = 0; i < a->n; i++) {
		x = &a->v[i];
		y = claims_find_vf(b, x->vf);
		fuzz_require(y != NULL && same_opt(x->instance_id,
		    y->instance_id) && same_opt(x->claimed_at, y->claimed_at) &&
		    same_opt(x->profile, y->profile) &&
		    same_opt(x->type_id, y->type_id) &&
		    same_opt(x->vsock, y->vsock) &&
		    same_opt(x->control_socket, y->control_socket), T,
		    "reload changed a claim");
	}
}

static void
check_roundtrip(const struct claims *c)
{
	struct claims again;
	char why[1024], *text, *text2;
	size_t len, len2;

	text = claims_dump(c, &len);
	fuzz_require(text != NULL, T, "cannot dump a ledger that loaded");
	fuzz_require(claims_parse(text, len, &again, why, sizeof(why)) == 0,
	    T, "a dumped ledger does not load");
	check_same(c, &again);
	text2 = claims_dump(&again, &len2);
	fuzz_require(text2 != NULL && len2 == len &&
	    memcmp(text, text2, len) == 0, T, "dump is not stable");
	free(text);
	free(text2);
	claims_release(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct claims c;
	char why[1024];

	why[0] = '\0';
	if (claims_parse((const char *)data, size, &c, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', T, "rejected without a reason");
		return 0;
	}
	check_shape(&c);
	check_roundtrip(&c);
	claims_release(&c);
	return 0;
}
