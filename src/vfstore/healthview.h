/*
 * healthview.h - a report's view of vf-health.json: one VF's record,
 * decoded without parsing the other 255, where the seal (healthcache.h)
 * shows the file is still what a save wrote.
 */
#ifndef VFS_HEALTHVIEW_H
#define VFS_HEALTHVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic.h"
#include "healthcache.h"
#include "healthfile.h"
#include "store.h"

/*
 * The text of a sealed file (in health_dump()'s layout) with vf's record
 * replaced by r, inserted (sorted) when absent, or removed when r is
 * NULL: exactly what health_dump() writes for the changed store (any
 * other text gives some text, read within its len bytes). New buffer
 * (*outlen bytes) the caller frees; NULL with errno.
 */
char *healthview_splice(const char *text, size_t len, const char *vf,
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
int healthview_load_vf(struct store *s, struct health *h, unsigned threshold,
    const char *vf, struct health_view *v);

/* Turns a partial view into the whole store (h replaced). -1 as above. */
int healthview_full(struct store *s, struct health_view *v,
    struct health *h);

/* health_save() of h loaded by healthview_load_vf(). */
int healthview_save(struct store *s, const struct health_view *v,
    const struct health *h, struct atomic_result *res);

void healthview_release(struct health_view *v);

#endif
