/*
 * applysuspect.c - the suspect VFs in vfstore apply (applysuspect.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "applysuspect.h"
#include "filekey.h"
#include "healthrules.h"
#include "store.h"
#include "timefmt.h"

void
applysuspect_refresh(struct apply *ap)
{
	struct store *s = ap->conf->s;
	char path[PATH_MAX];

	if (suspects_path(s, path, sizeof(path)) < 0)
		return;
	if (filekey_unchanged(&ap->skey, path))
		return;
	suspects_release(&ap->scache);
	if (suspects_load(s, &ap->scache) == 0)
		filekey_loaded(&ap->skey, path);
}

bool
applysuspect_needs_lock(const struct apply *ap, const struct item *it)
{
	return !ap->skey.valid ||
	    suspects_find(&ap->scache, it->rep.vf) != NULL;
}

/* True when rep is the suspected assignment's own report. */
static bool
same_assignment(const struct suspect *sp, const struct health_report *rep)
{
	return strcmp(sp->instance_id, rep->instance) == 0 &&
	    strcmp(sp->assigned_at, rep->assigned_at) == 0;
}

/*
 * A later assignment's failure: the VF quarantined now (SPEC.md 7.3),
 * its record keeping that one real failure beside quarantined_at (an
 * operator's quarantine, healthrules_quarantine(), would drop it).
 */
static void
quarantine_now(struct health *h, struct item *it, bool *hchanged)
{
	struct vf_record *r = health_find(h, it->rep.vf);

	if (it->rep.outcome != HEALTH_RECORDED || r == NULL || r->quarantined)
		return;
	timefmt_now(&r->quarantined_at);
	r->quarantined = true;
	*hchanged = true;
	it->rep.outcome = HEALTH_QUARANTINED;
	it->rep.changed = true;
}

bool
applysuspect_apply(struct apply *ap, struct health *h, struct suspects *d,
    struct suspects *gone, bool *hchanged)
{
	const struct suspect *sp;
	bool changed = false, added;
	size_t i;

	memset(gone, 0, sizeof(*gone));
	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!it->report || it->error != NULL ||
		    (sp = suspects_find(d, it->rep.vf)) == NULL)
			continue;
		if (it->check == APPLY_FAILED &&
		    it->rep.outcome == HEALTH_UNCHANGED)
			continue;
		if (it->check == APPLY_FAILED && !same_assignment(sp, &it->rep))
			quarantine_now(h, it, hchanged);
		it->unsuspect = it->check == APPLY_OK ? "ok" : "failure";
		added = false;
		if (suspects_add(gone, sp, &added) < 0) {
			it->error = "out of memory";
			continue;
		}
		suspects_remove(d, it->rep.vf, &changed);
	}
	return changed;
}

/* Fails the reports that ended a suspicion, with prefix and why (as
 * an audit error when audit: the change stands). */
static void
fail_unsuspects(struct apply *ap, const char *prefix, const char *why,
    bool audit)
{
	size_t i;

	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (it->unsuspect == NULL || it->error != NULL)
			continue;
		snprintf(it->errbuf, sizeof(it->errbuf), "%s%s", prefix, why);
		if (audit)
			it->audit_error = it->errbuf;
		else
			it->error = it->errbuf;
	}
}

void
applysuspect_save(struct apply *ap, struct suspects *d,
    const struct suspects *gone)
{
	struct store *s = ap->conf->s;
	struct atomic_result res;
	size_t i, j;

	if (gone->n == 0)
		return;
	if (suspects_save(s, d, &res) < 0) {
		fail_unsuspects(ap, "persist VF suspects: ", s->why, false);
		return;
	}
	for (i = 0; i < gone->n; i++) {
		const char *cause = "ok";

		for (j = 0; j < ap->n; j++)
			if (ap->items[j].unsuspect != NULL &&
			    strcmp(ap->items[j].rep.vf, gone->v[i].vf) == 0)
				cause = ap->items[j].unsuspect;
		if (suspect_audit_end(s->dir, &gone->v[i], cause) < 0)
			fail_unsuspects(ap, "cannot write the audit log: ",
			    strerror(errno), true);
	}
}
