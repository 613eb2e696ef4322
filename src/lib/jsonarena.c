/*
 * jsonarena.c - a bump allocator for jansson: see jsonarena.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "jsonarena.h"

#define ARENA_ALIGN 16
#define ARENA_CHUNK (64u << 10)		/* the smallest chunk */
#define ARENA_CHUNK_MAX (16u << 20)	/* chunks stop doubling here */

struct jsonarena_chunk {
	struct jsonarena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

static struct jsonarena *current;	/* the innermost arena, or NULL */

static struct jsonarena_chunk *
chunk_new(struct jsonarena *a, size_t need)
{
	struct jsonarena_chunk *c;
	size_t cap = ARENA_CHUNK;

	if (a->chunk != NULL)
		cap = a->chunk->cap < ARENA_CHUNK_MAX ? a->chunk->cap * 2 :
		    a->chunk->cap;
	if (cap < need)
		cap = need;
	if (cap > SIZE_MAX - sizeof(*c) || (c = malloc(sizeof(*c) + cap)) ==
	    NULL)
		return NULL;
	c->next = a->chunk;
	c->used = 0;
	c->cap = cap;
	a->chunk = c;
	a->last = 0;
	return c;
}

static void *
arena_malloc(size_t size)
{
	struct jsonarena *a = current;
	struct jsonarena_chunk *c = a->chunk;
	size_t n = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	char *p;

	if (n < size)
		return NULL;
	if (n == 0)
		n = ARENA_ALIGN;
	if (c->cap - c->used < n && (c = chunk_new(a, n)) == NULL)
		return NULL;
	p = (char *)c->data + c->used;
	a->last = c->used;
	c->used += n;
	return p;
}

/* The arena's chunk holding p, or NULL. */
static struct jsonarena_chunk *
chunk_of(const struct jsonarena *a, const char *p)
{
	struct jsonarena_chunk *c;

	for (c = a->chunk; c != NULL; c = c->next)
		if (p >= (const char *)c->data &&
		    p < (const char *)c->data + c->cap)
			return c;
	return NULL;
}

/*
 * A block of the innermost arena, if it is the last, is given back; one
 * of an outer arena waits for that arena's end; one from before every
 * arena goes to the allocator the outermost begin replaced.
 */
static void
arena_free(void *p)
{
	struct jsonarena *a, *outermost = current;
	struct jsonarena_chunk *c;

	if (p == NULL)
		return;
	for (a = current; a != NULL; a = a->outer) {
		if ((c = chunk_of(a, p)) != NULL) {
			if (a == current && c == a->chunk &&
			    (char *)p == (char *)c->data + a->last)
				c->used = a->last;
			return;
		}
		outermost = a;
	}
	outermost->old_free(p);
}

int
jsonarena_begin(struct jsonarena *a, size_t hint)
{
	a->chunk = NULL;
	if (chunk_new(a, hint) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	json_get_alloc_funcs(&a->old_malloc, &a->old_free);
	a->outer = current;
	current = a;
	json_set_alloc_funcs(arena_malloc, arena_free);
	return 0;
}

void
jsonarena_end(struct jsonarena *a)
{
	struct jsonarena_chunk *c;

	json_set_alloc_funcs(a->old_malloc, a->old_free);
	current = a->outer;
	while ((c = a->chunk) != NULL) {
		a->chunk = c->next;
		free(c);
	}
}
