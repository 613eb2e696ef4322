/*
 * fuzz-health.c - the loader of vf-health.json (health_parse) and its
 * writer. Properties, for every input the loader accepts:
 * - records are sorted by a valid, unique VF address, and each one is
 *   quarantined or has failures (the all-or-nothing validation held);
 * - health_dump() succeeds, its text loads again, and dumping that gives
 *   the same bytes (a store vfsentinel loaded can always be saved and
 *   reloaded unchanged: no mutation can turn a good store unavailable).
 * A rejected input must come with a reason.
 */
#include "fuzz.h"
#include "store.h"

#define T "health"

static void
check_shape(const struct health *h)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		fuzz_require(vf_addr_valid(h->recs[i].vf), T,
		    "record with an invalid address");
		fuzz_require(i == 0 || strcmp(h->recs[i - 1].vf,
		    h->recs[i].vf) < 0, T, "records not sorted and unique");
		fuzz_require(h->recs[i].quarantined ||
		    h->recs[i].nfailures > 0, T, "empty record accepted");
	}
}

static void
check_roundtrip(const struct health *h)
{
	struct health again;
	char why[1024], *text, *text2;
	size_t len, len2;

	text = health_dump(h, &len);
	fuzz_require(text != NULL, T, "cannot dump a store that loaded");
	fuzz_require(health_parse(text, len, &again, why, sizeof(why)) == 0,
	    T, "a dumped store does not load");
	fuzz_require(again.n == h->n, T, "reload changed the record count");
	text2 = health_dump(&again, &len2);
	fuzz_require(text2 != NULL && len2 == len &&
	    memcmp(text, text2, len) == 0, T, "dump is not stable");
	free(text);
	free(text2);
	health_release(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct health h;
	char why[1024];

	why[0] = '\0';
	if (health_parse((const char *)data, size, &h, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', T, "rejected without a reason");
		return 0;
	}
	check_shape(&h);
	check_roundtrip(&h);
	health_release(&h);
	return 0;
}
