/*
 * jsonarena.h - a bump allocator for jansson (json_set_alloc_funcs).
 *
 * jansson allocates every value, key and hashtable with its own malloc,
 * and json_decref() walks a tree again to free it: in a load of the
 * store that was a third of all instructions (callgrind,
 * share/doc/performance.md). Between jsonarena_begin() and
 * jsonarena_end(), jansson allocates from an arena instead, and
 * jsonarena_end() drops it in one go.
 *
 * The rule for a caller: every json_t made between begin and end is
 * released (or never touched again) before end, and nothing jansson
 * allocates inside (json_dumps()) is handed to free(3). A block freed while it
 * is the arena's last one is given back (jansson's string buffers grow
 * that way); other frees wait for the end; a block from before begin is
 * handed to the allocator that made it. Arenas nest (an inner begin
 * saves the outer one); not thread-safe, as the programs have no threads.
 */
#ifndef VFS_JSONARENA_H
#define VFS_JSONARENA_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct jsonarena_chunk;

struct jsonarena {
	struct jsonarena_chunk *chunk;	/* the current one, then older */
	size_t last;			/* offset of the last block */
	json_malloc_t old_malloc;	/* what begin replaced */
	json_free_t old_free;
	struct jsonarena *outer;
};

/* Starts an arena whose first chunk holds about hint bytes; -1/ENOMEM. */
int jsonarena_begin(struct jsonarena *a, size_t hint);

/* Gives jansson back its previous allocator and frees the arena. */
void jsonarena_end(struct jsonarena *a);

#endif
