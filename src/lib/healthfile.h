/*
 * healthfile.h - the health store, vf-health.json under DATA_DIR/gpu
 * (SPEC.md 4.1): loaded strictly through store.h (all-or-nothing; any
 * problem makes the store unavailable), saved atomically and sealed
 * (healthcache.h). Ownership: a struct health owns every string in it;
 * free it with health_release(). Nothing here prints.
 */
#ifndef VFS_HEALTHFILE_H
#define VFS_HEALTHFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "atomic.h"
#include "store.h"
#include "vfaddr.h"

struct vf_failure {
	char *instance_id;		/* owned, "" when absent */
	char *assigned_at;		/* owned, "" when absent; opaque */
	struct timespec reported_at;
};

struct vf_record {
	char vf[VF_ADDR_LEN + 1];
	struct vf_failure *failures;	/* owned, oldest first */
	size_t nfailures;
	bool quarantined;		/* quarantined_at is set */
	struct timespec quarantined_at;
};

struct health {
	struct vf_record *recs;		/* owned, sorted by vf */
	size_t n;
	size_t cap;
	unsigned threshold;
	bool requarantined;		/* the threshold applied: persist */
};

#define HEALTH_NOUN "VF health state"

/*
 * Loads vf-health.json and applies the threshold: a record with at least
 * threshold failures and no quarantined_at gets quarantined_at = now and
 * h->requarantined is set (the next save persists it). A missing file is
 * an empty store. -1 with s->why (upstream wording, e.g. "validate VF
 * health state record 0: invalid VF address \"x\"") when unavailable
 * (a missing DATA_DIR/gpu too, with s->unavailable set).
 */
int health_load(struct store *s, struct health *h, unsigned threshold);

/* Parses health JSON text (for the loader and fuzzing). Same rules. */
int health_parse(const char *text, size_t len, struct health *h,
    char *why, size_t whylen);

/* Serialises in the upstream layout (2-space indent, no final newline).
 * New buffer the caller frees; NULL/ENOMEM, or NULL/EILSEQ when a string
 * is not valid UTF-8 (the loader would refuse the file: never written). */
char *health_dump(const struct health *h, size_t *len);

/* Appends r in that layout, its "{" at depth (for healthcache.c). */
struct obuf;
void health_dump_record(struct obuf *b, const struct vf_record *r, int depth);

/* The threshold part of health_load(): sets h->threshold, quarantines
 * (now) what reached it, and sets h->requarantined then. */
void health_apply_threshold(struct health *h, unsigned threshold);

/* Persists h atomically, and seals it (healthcache.h). -1 with errno,
 * s->why and res filled. */
int health_save(struct store *s, const struct health *h,
    struct atomic_result *res);

/* Borrowed pointer into h, or NULL. */
struct vf_record *health_find(const struct health *h, const char *vf);

/*
 * True when r is quarantined: quarantined_at is set, or threshold (>= 1;
 * 0 means none) failures are tallied.
 */
bool health_record_quarantined(const struct vf_record *r, unsigned threshold);

/* True when h holds a quarantined record for vf (under h->threshold). */
bool health_vf_quarantined(const struct health *h, const char *vf);

/* The number of quarantined records in h (under h->threshold). */
size_t health_count_quarantined(const struct health *h);

/* The record as JSON (upstream field order), plus "quarantined". New ref. */
json_t *health_record_json(const struct vf_record *r);

void health_release(struct health *h);

#endif
