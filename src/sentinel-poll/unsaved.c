/*
 * unsaved.c - the failures seen and not yet known to be in the store
 * (unsaved.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unsaved.h"

/* The index of key in u, or u->n. */
static size_t
find(const struct unsaved *u, const char *key)
{
	size_t i;

	for (i = 0; i < u->n; i++)
		if (strcmp(u->v[i].key, key) == 0)
			break;
	return i;
}

/* t's entry, added if create; NULL (none, or ENOMEM). */
static struct unsaved_entry *
lookup(struct unsaved *u, const struct target *t, bool create)
{
	struct unsaved_entry *v;
	char *key;
	size_t i;

	if ((key = targets_key(t)) == NULL)
		return NULL;
	if ((i = find(u, key)) < u->n || !create) {
		free(key);
		return i < u->n ? &u->v[i] : NULL;
	}
	if ((v = reallocarray(u->v, u->n + 1, sizeof(*v))) == NULL) {
		free(key);
		return NULL;
	}
	u->v = v;
	memset(&u->v[u->n], 0, sizeof(u->v[u->n]));
	u->v[u->n].key = key;
	return &u->v[u->n++];
}

int
unsaved_set(struct unsaved *u, const struct target *t,
    enum unsaved_source src, const char *nvrm)
{
	struct unsaved_entry *e;
	char *copy;

	if ((copy = strdup(nvrm != NULL ? nvrm : "")) == NULL)
		return -1;
	if ((e = lookup(u, t, true)) == NULL) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	free(e->nvrm[src]);
	e->nvrm[src] = copy;
	e->fresh[src] = true;
	return 0;
}

void
unsaved_clear(struct unsaved *u, const struct target *t,
    enum unsaved_source src)
{
	struct unsaved_entry *e = lookup(u, t, false);

	if (e == NULL)
		return;
	free(e->nvrm[src]);
	e->nvrm[src] = NULL;
	e->fresh[src] = false;
}

struct unsaved_entry *
unsaved_get(struct unsaved *u, const struct target *t)
{
	struct unsaved_entry *e = lookup(u, t, false);

	if (e != NULL)
		e->listed = true;
	return e;
}

bool
unsaved_pending(const struct unsaved_entry *e)
{
	return e->nvrm[UNSAVED_MARKER] != NULL ||
	    e->nvrm[UNSAVED_KERNEL] != NULL ||
	    (e->nvrm[UNSAVED_AGENT] != NULL && !e->fresh[UNSAVED_AGENT]);
}

void
unsaved_saved(struct unsaved_entry *e)
{
	size_t k;

	for (k = 0; k < UNSAVED_N; k++) {
		free(e->nvrm[k]);
		e->nvrm[k] = NULL;
	}
}

static bool
empty(const struct unsaved_entry *e)
{
	size_t k;

	for (k = 0; k < UNSAVED_N; k++)
		if (e->nvrm[k] != NULL)
			return false;
	return true;
}

static void
entry_release(struct unsaved_entry *e)
{
	unsaved_saved(e);
	free(e->key);
}

void
unsaved_sweep(struct unsaved *u)
{
	size_t i = 0, k;

	while (i < u->n) {
		if (!u->v[i].listed || empty(&u->v[i])) {
			entry_release(&u->v[i]);
			u->v[i] = u->v[--u->n];
			continue;
		}
		u->v[i].listed = false;
		for (k = 0; k < UNSAVED_N; k++)
			u->v[i].fresh[k] = false;
		i++;
	}
}

void
unsaved_release(struct unsaved *u)
{
	size_t i;

	for (i = 0; i < u->n; i++)
		entry_release(&u->v[i]);
	free(u->v);
	u->v = NULL;
	u->n = 0;
}
