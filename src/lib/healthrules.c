/*
 * healthrules.c - the report rules of the VF health store (SPEC.md 4.1,
 * upstream 2.8) and the operator's quarantine and clear, on a loaded
 * struct health. Nothing here locks, reads or writes a file.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "healthfile.h"
#include "healthrules.h"
#include "store.h"
#include "timefmt.h"

/* --- health records ---------------------------------------------------- */

struct vf_record *
healthrules_record_get(struct health *h, const char *vf)
{
	struct vf_record *r = health_find(h, vf), *recs;
	size_t at;

	if (r != NULL)
		return r;
	for (at = 0; at < h->n && strcmp(h->recs[at].vf, vf) < 0; at++)
		;
	recs = store_array_gap(h->recs, h->n, &h->cap, 16, sizeof(*recs), at);
	if (recs == NULL)
		return NULL;
	h->recs = recs;
	h->n++;
	r = &h->recs[at];
	memset(r, 0, sizeof(*r));
	memcpy(r->vf, vf, VF_ADDR_LEN + 1);
	return r;
}

/* Drops the first n failures of r (the oldest). */
static void
failures_drop(struct vf_record *r, size_t n)
{
	size_t j;

	for (j = 0; j < n; j++) {
		free(r->failures[j].instance_id);
		free(r->failures[j].assigned_at);
	}
	if (r->nfailures > n)
		memmove(r->failures, r->failures + n,
		    (r->nfailures - n) * sizeof(*r->failures));
	r->nfailures -= n;
	if (r->nfailures == 0) {
		free(r->failures);
		r->failures = NULL;
	}
}

static void
record_remove(struct health *h, struct vf_record *r)
{
	size_t at = (size_t)(r - h->recs);

	failures_drop(r, r->nfailures);
	memmove(r, r + 1, (h->n - at - 1) * sizeof(*r));
	h->n--;
}

/* Index of the failure of assignment (id, at), or -1. */
static long
failure_index(const struct vf_record *r, const char *id, const char *at)
{
	size_t j;

	for (j = 0; r != NULL && j < r->nfailures; j++)
		if (strcmp(r->failures[j].instance_id, id) == 0 &&
		    strcmp(r->failures[j].assigned_at, at) == 0)
			return (long)j;
	return -1;
}

static int
failure_append(struct vf_record *r, const char *id, const char *at,
    const struct timespec *now)
{
	struct vf_failure *f;

	f = realloc(r->failures, (r->nfailures + 1) * sizeof(*f));
	if (f == NULL)
		return -1;
	r->failures = f;
	f = &f[r->nfailures];
	f->instance_id = strdup(id);
	f->assigned_at = strdup(at);
	f->reported_at = *now;
	if (f->instance_id == NULL || f->assigned_at == NULL) {
		free(f->instance_id);
		free(f->assigned_at);
		return -1;
	}
	r->nfailures++;
	return 0;
}

bool
healthrules_failure_noop(const struct health *h, struct health_report *rep)
{
	const struct vf_record *r = health_find(h, rep->vf);

	rep->outcome = HEALTH_UNCHANGED;
	rep->failures = r != NULL ? r->nfailures : 0;
	rep->changed = false;
	return r != NULL && (r->quarantined ||
	    failure_index(r, rep->instance, rep->assigned_at) >= 0);
}

int
healthrules_report_failure(struct health *h, struct health_report *rep)
{
	struct vf_record *r;
	struct timespec now;

	if (healthrules_failure_noop(h, rep))
		return 0;
	r = healthrules_record_get(h, rep->vf);
	timefmt_now(&now);
	if (r == NULL || failure_append(r, rep->instance, rep->assigned_at,
	    &now) < 0) {
		if (r != NULL && r->nfailures == 0 && !r->quarantined)
			record_remove(h, r);
		return -1;
	}
	rep->changed = true;
	rep->failures = r->nfailures;
	rep->outcome = HEALTH_RECORDED;
	if (r->nfailures >= h->threshold) {
		r->quarantined = true;
		r->quarantined_at = now;
		rep->outcome = HEALTH_QUARANTINED;
	}
	return 0;
}

bool
healthrules_success_noop(const struct health *h, struct health_report *rep)
{
	const struct vf_record *r = health_find(h, rep->vf);

	rep->cleared = 0;
	rep->rescinded = false;
	rep->changed = false;
	return failure_index(r, rep->instance, rep->assigned_at) < 0;
}

void
healthrules_report_success(struct health *h, struct health_report *rep)
{
	struct vf_record *r;
	long j;

	if (healthrules_success_noop(h, rep))
		return;
	r = health_find(h, rep->vf);
	j = failure_index(r, rep->instance, rep->assigned_at);
	rep->cleared = (size_t)j + 1;
	rep->changed = true;
	failures_drop(r, rep->cleared);
	if (r->nfailures == 0) {
		rep->rescinded = r->quarantined;
		record_remove(h, r);
	}
}

int
healthrules_quarantine(struct health *h, const char *vf, bool *changed)
{
	struct vf_record *r = healthrules_record_get(h, vf);

	if (r == NULL)
		return -1;
	if (r->quarantined && r->nfailures == 0)
		return 0;
	failures_drop(r, r->nfailures);
	if (!r->quarantined)
		timefmt_now(&r->quarantined_at);
	r->quarantined = true;
	*changed = true;
	return 0;
}

int
healthrules_clear(struct health *h, const char *vf, bool *changed)
{
	struct vf_record *r = health_find(h, vf);

	if (r != NULL) {
		record_remove(h, r);
		*changed = true;
	}
	return 0;
}

static const char *const outcome_name[] = {	/* enum health_outcome */
	"unchanged", "recorded", "quarantined"
};

/*
 * Sets key (a literal, so unchecked) to v in o, taking v; false, with o
 * dropped, when v is NULL or the set failed (out of memory).
 */
static bool
put(json_t *o, const char *key, json_t *v)
{
	if (v != NULL && json_object_set_new_nocheck(o, key, v) == 0)
		return true;
	json_decref(o);
	return false;
}

/* The answers, built member by member: json_pack's format parsing was
 * a fifth of what `vfstore apply` spends on a no-op line. */
json_t *
healthrules_failure_json(const struct health_report *rep, unsigned threshold)
{
	json_t *o = json_object();

	if (o == NULL || !put(o, "vf_address", json_string(rep->vf)) ||
	    !put(o, "outcome", json_string_nocheck(
	    outcome_name[rep->outcome])) ||
	    !put(o, "failures", json_integer((json_int_t)rep->failures)) ||
	    !put(o, "threshold", json_integer((json_int_t)threshold)))
		return NULL;
	return o;
}

json_t *
healthrules_success_json(const struct health_report *rep)
{
	json_t *o = json_object();

	if (o == NULL || !put(o, "vf_address", json_string(rep->vf)) ||
	    !put(o, "cleared", json_integer((json_int_t)rep->cleared)) ||
	    !put(o, "rescinded", json_boolean(rep->rescinded)))
		return NULL;
	return o;
}
