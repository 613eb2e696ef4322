/*
 * healthcache.h - the seal of vf-health.json, which lets a report
 * decode one VF's record without parsing the other 255
 * (src/vfstore/healthview.h).
 *
 * Every save writes, next to the file, a seal (vf-health.json.seal): the
 * size and a 64-bit hash of the bytes just written, and the highest
 * failure tally of a record not yet quarantined. Those bytes were made
 * by health_dump() from a valid struct health, so while the file's bytes
 * still hash to the seal they are known valid and in the dump's layout,
 * where one record can be found, decoded and replaced by itself. The
 * seal is a cache, not state: it is written after the file, without
 * fsync, and a seal that is missing, stale, torn or from another version
 * only costs the full load (which then fails closed as before). It is
 * never written by a reader.
 */
#ifndef VFS_HEALTHCACHE_H
#define VFS_HEALTHCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "healthfile.h"
#include "store.h"

#define HEALTHSEAL_FILE "vf-health.json.seal"

struct healthseal {
	size_t size;
	uint64_t hash;
	size_t open_max;		/* most failures of an open record */
};

/* What a save has to know about the text it wrote. */
void healthcache_of(struct healthseal *seal, const char *text, size_t len,
    const struct health *h);

/* The seal of text after one record changed to r (NULL: removed): its
 * size and hash, and open_max raised to r's open failures. */
void healthcache_update(struct healthseal *seal, const char *text,
    size_t len, const struct vf_record *r);

/* Writes DIR/HEALTHSEAL_FILE (rename, no fsync). 0 or -1/errno. */
int healthcache_write(const char *dir, const struct healthseal *seal);

/* True when DIR's seal describes text (len bytes). */
bool healthcache_matches(const char *dir, const char *text, size_t len,
    struct healthseal *seal);

#endif
