/*
 * healthcache.h - a report's view of vf-health.json: one VF's record,
 * decoded without parsing the other 255.
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

#include "atomic.h"
#include "store.h"

#define HEALTHSEAL_FILE "vf-health.json.seal"

struct healthseal {
	size_t size;
	uint64_t hash;
	size_t open_max;		/* most failures of an open record */
};

/* What a save has to know about the text it wrote. */
void healthseal_of(struct healthseal *seal, const char *text, size_t len,
    const struct health *h);

/* Writes DIR/HEALTHSEAL_FILE (rename, no fsync). 0 or -1/errno. */
int healthseal_write(const char *dir, const struct healthseal *seal);

/* True when DIR's seal describes text (len bytes). */
bool healthseal_matches(const char *dir, const char *text, size_t len,
    struct healthseal *seal);

/*
 * The text of a sealed file (in health_dump()'s layout) with vf's record
 * replaced by r, inserted (sorted) when absent, or removed when r is
 * NULL: exactly what health_dump() writes for the changed store (any
 * other text gives some text, read within its len bytes). New buffer
 * (*outlen bytes) the caller frees; NULL with errno.
 */
char *healthseal_splice(const char *text, size_t len, const char *vf,
    const struct vf_record *r, size_t *outlen);

struct health_view {
	char *text;			/* owned: the file as read */
	size_t len;
	bool partial;			/* h holds vf's record only */
	struct healthseal seal;
	char vf[VF_ADDR_LEN + 1];
};

/*
 * health_load() for a command that reads and changes one VF's record (a
 * report): when the file is sealed and the threshold can quarantine no
 * other record (threshold > seal.open_max), h holds vf's record alone
 * (v->partial); otherwise the whole store, as health_load(). -1 as
 * health_load().
 */
int health_load_vf(struct store *s, struct health *h, unsigned threshold,
    const char *vf, struct health_view *v);

/* Turns a partial view into the whole store (h replaced). -1 as above. */
int health_view_full(struct store *s, struct health_view *v,
    struct health *h);

/* health_save() of h loaded by health_load_vf(). */
int health_view_save(struct store *s, const struct health_view *v,
    const struct health *h, struct atomic_result *res);

void health_view_release(struct health_view *v);

#endif
