/*
 * fuzz-targets.c - the --targets line parser of sentinel-poll
 * (targets_parse_line): one line per input line, all into one list.
 * Properties: an accepted line adds exactly one target with a valid VF
 * address and a non-empty instance id, a rejected one adds none and says
 * why; every target is a deep copy (it outlives the parsed line) that
 * targets_find() returns for its instance id (the first one wins), and
 * targets_append_all() copies the list whole.
 */
#include "fuzz.h"
#include "sentinel-poll/targets.h"

#define T "targets"

static void
check_list(const struct targets *ts)
{
	struct targets copy = { 0 };
	const struct target *t;
	size_t i;

	for (i = 0; i < ts->n; i++) {
		t = &ts->v[i];
		fuzz_require(vfaddr_valid(t->vf) && t->instance_id[0] != '\0' &&
		    t->claimed_at != NULL, T, "a bad target was kept");
		fuzz_require(targets_find(ts, t->instance_id) != NULL, T,
		    "a target cannot be found");
	}
	fuzz_require(targets_append_all(&copy, ts) == 0 && copy.n == ts->n, T,
	    "append_all lost targets");
	targets_release(&copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct targets ts = { 0 };
	const char *s = (const char *)data, *end = s + size, *nl, *why;
	char *line;
	size_t before;
	int rc;

	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL)
			nl = end;
		line = fuzz_strndup((const uint8_t *)s, (size_t)(nl - s));
		before = ts.n;
		why = NULL;
		rc = targets_parse_line(&ts, line, (size_t)(nl - s), &why);
		/* The line's memory is gone before the list is checked. */
		memset(line, 'X', (size_t)(nl - s));
		free(line);
		fuzz_require(rc == 1 ? ts.n == before + 1 :
		    ts.n == before && why != NULL, T, "count and verdict differ");
		s = nl + 1;
	}
	check_list(&ts);
	targets_release(&ts);
	return 0;
}
