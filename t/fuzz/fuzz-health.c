/*
 * fuzz-health.c - the loader of vf-health.json (health_parse) and its
 * writer. Properties, for every input the loader accepts:
 * - records are sorted by a valid, unique VF address, and each one is
 *   quarantined or has failures (the all-or-nothing validation held);
 * - health_dump() succeeds, its text loads again, and dumping that gives
 *   the same bytes (a store vfsentinel loaded can always be saved and
 *   reloaded unchanged: no mutation can turn a good store unavailable).
 * - in that dump, replacing a record by itself (healthview_splice) gives
 *   the same bytes, and removing it then putting it back too; the text
 *   without it loads, one record shorter;
 * - a splice of the raw input, whatever it is, stays within its bytes.
 * A rejected input must come with a reason.
 */
#include "fuzz.h"
#include "vfstore/healthview.h"
#include "store.h"
#include "healthfile.h"

#define T "health"

static void
check_shape(const struct health *h)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		fuzz_require(vfaddr_valid(h->recs[i].vf), T,
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

/* Record i of h put back into text (len bytes, h's dump) two ways. */
static void
check_splice_one(const struct health *h, size_t i, const char *text,
    size_t len)
{
	const struct vf_record *r = &h->recs[i];
	char why[1024], *same, *without, *back;
	size_t n1, n2, n3;
	struct health less;

	same = healthview_splice(text, len, r->vf, r, &n1);
	fuzz_require(same != NULL && n1 == len && memcmp(same, text, len) == 0,
	    T, "a record spliced over itself changed the text");
	without = healthview_splice(text, len, r->vf, NULL, &n2);
	fuzz_require(without != NULL, T, "cannot splice a record out");
	fuzz_require(health_parse(without, n2, &less, why, sizeof(why)) == 0 &&
	    less.n == h->n - 1, T, "the text without a record does not load");
	health_release(&less);
	back = healthview_splice(without, n2, r->vf, r, &n3);
	fuzz_require(back != NULL && n3 == len && memcmp(back, text, len) == 0,
	    T, "a record spliced out and back in changed the text");
	free(same);
	free(without);
	free(back);
}

static void
check_splice(const struct health *h)
{
	char *text;
	size_t len, i;

	text = health_dump(h, &len);
	fuzz_require(text != NULL, T, "cannot dump a store that loaded");
	for (i = 0; i < h->n && i < 4; i++)
		check_splice_one(h, i, text, len);
	free(text);
}

static void
check_raw_splice(const uint8_t *data, size_t size)
{
	struct vf_record r = { .vf = "0000:e3:00.4", .quarantined = true };
	char *out;
	size_t n;

	out = healthview_splice((const char *)data, size, r.vf, &r, &n);
	free(out);
	out = healthview_splice((const char *)data, size, r.vf, NULL, &n);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct health h;
	char why[1024];

	why[0] = '\0';
	check_raw_splice(data, size);
	if (health_parse((const char *)data, size, &h, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', T, "rejected without a reason");
		return 0;
	}
	check_shape(&h);
	check_roundtrip(&h);
	check_splice(&h);
	health_release(&h);
	return 0;
}
