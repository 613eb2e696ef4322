/*
 * applybatch.c - the health state of the apply engine (applybatch.h):
 * the cached loads of the health file and the ledger, kept while each
 * file is unchanged (filekey.h), and the locked batch.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "applybatch.h"
#include "applysuspect.h"
#include "filekey.h"
#include "healthrules.h"
#include "jsonl.h"
#include "store.h"
#include "auditfields.h"
#include "timefmt.h"
#include "healthfile.h"

void
applybatch_tell(struct apply *ap, const struct apply_event *ev)
{
	if (ap->conf->event != NULL)
		ap->conf->event(ap->conf->arg, ev);
}

static void
set_unavailable(struct apply *ap, const char *why)
{
	struct apply_event ev = { .kind = APPLY_EV_UNAVAILABLE, .error = why,
	    .s = ap->conf->s };

	ev.repeat = ap->unavailable && strcmp(ap->reason, why) == 0;
	applybatch_tell(ap, &ev);
	ap->unavailable = true;
	snprintf(ap->reason, sizeof(ap->reason), "%s", why);
	ap->metrics_dirty = true;
}

static void
set_available(struct apply *ap)
{
	if (ap->unavailable) {
		applybatch_tell(ap, &(struct apply_event){
		    .kind = APPLY_EV_AVAILABLE });
		ap->metrics_dirty = true;
	}
	ap->unavailable = false;
}

/*
 * The ledger as the health file above: reloaded when it changed. One
 * that does not load is not cached, so its OKs go to the locked batch,
 * which answers them with the reason.
 */
static void
claims_refresh(struct apply *ap)
{
	struct store *s = ap->conf->s;

	if (filekey_unchanged(&ap->ckey, s->claims_path))
		return;
	claims_release(&ap->ccache);
	if (claims_load(s, &ap->ccache) == 0)
		filekey_loaded(&ap->ckey, s->claims_path);
}

/* The claim of rep's very assignment when it has no ok_at yet, else NULL:
 * only the first OK of an assignment is written (SPEC.md 7.3). */
static struct claim *
claim_wants_ok(const struct claims *c, const struct health_report *rep)
{
	struct claim *cl = claims_find_vf(c, rep->vf);

	if (cl == NULL || cl->ok_at != NULL ||
	    strcmp(cl->instance_id, rep->instance) != 0 ||
	    strcmp(cl->claimed_at, rep->assigned_at) != 0)
		return NULL;
	return cl;
}

/*
 * Reloads the cache when the file changed. No lock: the file is only
 * ever replaced by rename, so a read sees one whole version; a version
 * replaced while it was read shows as a key change and is not kept.
 */
void
applybatch_refresh(struct apply *ap)
{
	struct store *s = ap->conf->s;

	/* The ledger and the suspects change without the health file (a
	 * new claim, a suspicion): each is checked on its own key. */
	claims_refresh(ap);
	applysuspect_refresh(ap);
	if (filekey_unchanged(&ap->key, s->health_path))
		return;
	health_release(&ap->cache);
	if (health_load(s, &ap->cache, ap->conf->threshold) < 0) {
		set_unavailable(ap, s->why);
		return;
	}
	set_available(ap);
	filekey_loaded(&ap->key, s->health_path);
}

static bool
is_report(const struct item *it)
{
	return it->report && it->error == NULL;
}

/* Answers what the cache can; true if some report needs the lock. */
bool
applybatch_from_cache(struct apply *ap)
{
	bool need = false;
	size_t i;

	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!is_report(it)) {
			it->done = true;
			continue;
		}
		if (ap->unavailable)
			continue;
		if (!ap->key.valid) {
			need = true;
			continue;
		}
		it->done = it->check == APPLY_FAILED ?
		    healthrules_failure_noop(&ap->cache, &it->rep) :
		    healthrules_success_noop(&ap->cache, &it->rep) &&
		    ap->ckey.valid && claim_wants_ok(&ap->ccache, &it->rep) ==
		    NULL && !applysuspect_needs_lock(ap, it);
		need |= !it->done;
	}
	return need;
}

/* Marks every report still unanswered as failed with reason. */
void
applybatch_fail_pending(struct apply *ap, const char *prefix,
    const char *reason)
{
	size_t i;

	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!is_report(it) || it->done)
			continue;
		snprintf(it->errbuf, sizeof(it->errbuf), "%s%s", prefix,
		    reason);
		it->error = it->errbuf;
	}
}

/* Applies the batch's reports to h in input order. */
static bool
apply_reports(struct apply *ap, struct health *h)
{
	bool changed = h->requarantined;
	size_t i;

	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!is_report(it))
			continue;
		it->done = false;
		if (it->check == APPLY_FAILED &&
		    healthrules_report_failure(h, &it->rep) < 0)
			it->error = "out of memory";
		else if (it->check == APPLY_OK)
			healthrules_report_success(h, &it->rep);
		changed |= it->rep.changed;
	}
	return changed;
}

/* Audits the batch's quarantines, durable in h (SPEC.md 4.1). */
static void
audit_quarantines(struct apply *ap, const struct health *h)
{
	const char *nvrm, *why;
	size_t i;

	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!is_report(it) || it->error != NULL ||
		    it->check != APPLY_FAILED ||
		    it->rep.outcome != HEALTH_QUARANTINED)
			continue;
		nvrm = jsonl_str(it->in, "nvrm");
		if (auditfields_quarantined(ap->conf->s->dir, "apply", h,
		    &it->rep, ap->conf->threshold, nvrm) == 0)
			continue;
		why = strerror(errno);
		snprintf(it->errbuf, sizeof(it->errbuf),
		    "cannot write the audit log: %s", why);
		it->audit_error = it->errbuf;
		applybatch_tell(ap, &(struct apply_event){
		    .kind = APPLY_EV_AUDIT, .rep = &it->rep, .error = why });
	}
}

/* Fails the batch's OK reports not yet answered, with prefix and why. */
static void
fail_oks(struct apply *ap, const char *prefix, const char *why)
{
	size_t i;

	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!is_report(it) || it->check != APPLY_OK)
			continue;
		snprintf(it->errbuf, sizeof(it->errbuf), "%s%s", prefix, why);
		it->error = it->errbuf;
	}
}

static bool
batch_has_ok(const struct apply *ap)
{
	size_t i;

	for (i = 0; i < ap->n; i++)
		if (is_report(&ap->items[i]) &&
		    ap->items[i].check == APPLY_OK)
			return true;
	return false;
}

/*
 * Under the lock, before the reports: the ledger, for the OKs. One that
 * does not load fails the OKs only (a failure needs no claim). True when
 * *c holds the ledger.
 */
static bool
claims_locked_load(struct apply *ap, struct claims *c)
{
	struct store *s = ap->conf->s;

	memset(c, 0, sizeof(*c));
	if (!batch_has_ok(ap))
		return false;
	if (claims_load(s, c) == 0)
		return true;
	fail_oks(ap, "VF health state unavailable: ", s->why);
	return false;
}

/*
 * Sets ok_at on the claim of each OK's assignment that has none, and
 * saves the ledger when one was set (after the health file: an OK is
 * answered once both are durable). A failed save fails the OKs. True
 * when c is the ledger on disk.
 */
static bool
claims_mark_ok(struct apply *ap, struct claims *c)
{
	struct store *s = ap->conf->s;
	struct atomic_result res;
	struct timespec ts;
	char now[TIMEFMT_MAX];
	struct claim *cl;
	bool changed = false;
	size_t i;

	timefmt_now(&ts);
	if (timefmt_format(&ts, now, sizeof(now)) < 0)
		return false;
	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (!is_report(it) || it->check != APPLY_OK ||
		    (cl = claim_wants_ok(c, &it->rep)) == NULL)
			continue;
		if ((cl->ok_at = strdup(now)) == NULL) {
			it->error = "out of memory";
			return false;
		}
		changed = true;
	}
	if (!changed || claims_save(s, c, &res) == 0)
		return true;
	applybatch_tell(ap, &(struct apply_event){ .kind = APPLY_EV_PERSIST,
	    .step = res.step ? res.step : "", .error = s->why });
	ap->persist_failed = ap->metrics_dirty = true;
	fail_oks(ap, "persist VF claims: ", s->why);
	return false;
}

/* The ledger on disk (under the lock) becomes the cache; c is emptied. */
static void
keep_claims(struct apply *ap, struct claims *c)
{
	claims_release(&ap->ccache);
	filekey_written(&ap->ckey, ap->conf->s->claims_path);
	ap->ccache = *c;
	memset(c, 0, sizeof(*c));
}

/* Makes the state just saved (under the lock) the cache; h is emptied. */
static void
keep_cache(struct apply *ap, struct health *h)
{
	health_release(&ap->cache);
	filekey_written(&ap->key, ap->conf->s->health_path);
	ap->cache = *h;
	memset(h, 0, sizeof(*h));
}

/* Under the lock, h loaded: the reports, the saves, the audit. */
static void
locked_reports(struct apply *ap, struct health *h)
{
	struct store *s = ap->conf->s;
	struct atomic_result res;
	struct suspects d, gone = { 0 };
	struct claims c;
	bool ledger, hchanged;

	if (suspects_load(s, &d) < 0) {
		applybatch_fail_pending(ap, "VF health state unavailable: ",
		    s->why);
		return;
	}
	ledger = claims_locked_load(ap, &c);
	hchanged = apply_reports(ap, h);
	applysuspect_apply(ap, h, &d, &gone, &hchanged);
	if (hchanged && health_save(s, h, &res) < 0) {
		applybatch_tell(ap, &(struct apply_event){
		    .kind = APPLY_EV_PERSIST,
		    .step = res.step ? res.step : "", .error = s->why });
		ap->persist_failed = ap->metrics_dirty = true;
		applybatch_fail_pending(ap, "persist VF health state: ",
		    s->why);
	} else {
		ap->persist_failed = false;
		if (ledger && claims_mark_ok(ap, &c))
			keep_claims(ap, &c);
		audit_quarantines(ap, h);
		applysuspect_save(ap, &d, &gone);
		set_available(ap);
		keep_cache(ap, h);
	}
	claims_release(&c);
	suspects_release(&d);
	suspects_release(&gone);
}

/*
 * The batch holds reports that change state: one exclusive lock, one
 * fresh load, every report of the batch in order, one save. A report is
 * answered only after the save returned, so its line means "durable".
 */
void
applybatch_locked(struct apply *ap)
{
	struct store *s = ap->conf->s;
	struct health h;

	ap->key.valid = false;
	if (store_lock(s, true, ap->conf->lock_timeout) < 0) {
		if (s->unavailable)
			set_unavailable(ap, s->why);
		applybatch_fail_pending(ap, s->unavailable ?
		    "VF health state unavailable: " : "", s->why);
		return;
	}
	if (health_load(s, &h, ap->conf->threshold) < 0) {
		set_unavailable(ap, s->why);
		applybatch_fail_pending(ap, "VF health state unavailable: ",
		    s->why);
	} else {
		locked_reports(ap, &h);
	}
	store_unlock(s);
	health_release(&h);
}
