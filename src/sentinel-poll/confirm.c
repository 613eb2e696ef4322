/*
 * confirm.c - the batch of verdicts waiting for the re-read of the
 * targets, and the comparison that confirms an assignment (confirm.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "confirm.h"
#include "io.h"

int
confirm_add(struct confirm_batch *b, const struct target *t,
    enum checkpool_verdict v, const char *nvrm)
{
	struct pending *pe;
	char *copy = NULL;

	if (v == CP_FAILED && (copy = strdup(nvrm ? nvrm : "")) == NULL)
		return -1;
	pe = reallocarray(b->v, b->n + 1, sizeof(*pe));
	if (pe == NULL) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	b->v = pe;
	pe[b->n].t = t;
	pe[b->n].v = v;
	pe[b->n].nvrm = copy;
	if (b->n++ == 0)
		b->since = io_now_ms();
	return 0;
}

void
confirm_clear(struct confirm_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		free(b->v[i].nvrm);
	b->n = 0;
}

void
confirm_release(struct confirm_batch *b)
{
	confirm_clear(b);
	free(b->v);
	memset(b, 0, sizeof(*b));
}

enum confirm_result
confirm_judge(const struct pending *pe, const struct targets *now)
{
	const struct target *cur = targets_find(now, pe->t->instance_id);

	if (cur == NULL)
		return CONFIRM_GONE;
	if (strcmp(cur->vf, pe->t->vf) != 0 ||
	    strcmp(cur->claimed_at, pe->t->claimed_at) != 0)
		return CONFIRM_CHANGED;
	return CONFIRM_SAME;
}
