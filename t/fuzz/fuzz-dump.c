/*
 * fuzz-dump.c - the writers of both stores, fed arbitrary strings: a
 * health record and a claim whose every text field is a piece of the
 * input (split at byte 0x00; any byte, invalid UTF-8 included).
 * Properties (SPEC 2.3, 4.1: "a store must never hold what its own loader
 * refuses"):
 * - health_dump() / claims_dump() refuse (NULL, EILSEQ) exactly when a
 *   field is not valid UTF-8 (utf8_valid_str());
 * - every document they do produce loads again, with every field byte
 *   for byte as it was.
 */
#include <errno.h>

#include "claims.h"
#include "fuzz.h"
#include "healthfile.h"
#include "store.h"
#include "utf8.h"

#define T "dump"
#define NFIELDS 8

/* Splits the input at NUL bytes into NFIELDS strings (missing ones ""). */
static void
fields(const uint8_t *data, size_t size, char **f)
{
	size_t i, k = 0, start = 0;

	for (i = 0; i <= size && k < NFIELDS; i++) {
		if (i < size && data[i] != 0)
			continue;
		f[k++] = fuzz_strndup(data + start, i - start);
		start = i + 1;
	}
	while (k < NFIELDS)
		f[k++] = fuzz_strndup(data, 0);
}

static bool
all_valid(char **f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!utf8_valid_str(f[i]))
			return false;
	return true;
}

static void
check_health(char **f)
{
	struct vf_failure fail = { f[0], f[1], { 1700000000, 5 } };
	struct vf_record rec = { "0000:e3:00.4", &fail, 1, false, { 0, 0 } };
	struct health h = { &rec, 1, 1, 2, false }, again;
	char why[1024], *text;
	size_t len = 0;

	text = health_dump(&h, &len);
	fuzz_require((text != NULL) == all_valid(f, 2), T,
	    "health_dump refused valid text or wrote invalid text");
	if (text == NULL) {
		fuzz_require(errno == EILSEQ, T, "health_dump: not EILSEQ");
		return;
	}
	fuzz_require(health_parse(text, len, &again, why, sizeof(why)) == 0,
	    T, "a dumped store does not load");
	fuzz_require(again.n == 1 && again.recs[0].nfailures == 1 &&
	    strcmp(again.recs[0].failures[0].instance_id, f[0]) == 0 &&
	    strcmp(again.recs[0].failures[0].assigned_at, f[1]) == 0, T,
	    "reload changed a failure");
	health_release(&again);
	free(text);
}

static void
check_claims(char **f)
{
	struct claim cl = { "0000:e3:00.4", f[2], f[3], f[4], f[5], f[6],
	    f[7], NULL, NULL, NULL, NULL, NULL, NULL };
	struct claims c = { &cl, 1, 1 }, again;
	char why[1024], *text;
	size_t len = 0;
	bool ok = all_valid(f + 2, 6) && f[2][0] != '\0' && f[3][0] != '\0';

	text = claims_dump(&c, &len);
	fuzz_require((text != NULL) == all_valid(f + 2, 6), T,
	    "claims_dump refused valid text or wrote invalid text");
	if (text == NULL)
		return;
	if (ok) {
		fuzz_require(claims_parse(text, len, &again, why,
		    sizeof(why)) == 0, T, "a dumped ledger does not load");
		fuzz_require(again.n == 1 &&
		    strcmp(again.v[0].instance_id, f[2]) == 0 &&
		    strcmp(again.v[0].control_socket, f[7]) == 0, T,
		    "reload changed a claim");
		claims_release(&again);
	}
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *f[NFIELDS];
	size_t i;

	fields(data, size, f);
	check_health(f);
	check_claims(f);
	for (i = 0; i < NFIELDS; i++)
		free(f[i]);
	return 0;
}
