/*
 * healthrules.c - unit tests (TAP) for the report rules and the operator's
 * quarantine and clear: tally, quarantine at the threshold, no-ops, the
 * rescind rule of a success report, sorted insertion.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "healthfile.h"
#include "healthrules.h"
#include "store.h"
#include "tap.h"

#define VF4 "0000:e3:00.4"
#define VF5 "0000:e3:00.5"

static struct health_report
report(const char *vf, const char *instance, const char *at)
{
	struct health_report rep = { vf, instance, at, HEALTH_UNCHANGED, 0,
	    0, false, false };

	return rep;
}

static void
test_failures(void)
{
	struct health h = { .threshold = 2 };
	struct health_report rep = report(VF4, "i-1", "t1");
	const struct vf_record *r;

	ok(!healthrules_failure_noop(&h, &rep), "a first failure is not a no-op");
	ok(healthrules_report_failure(&h, &rep) == 0 && rep.changed &&
	    rep.outcome == HEALTH_RECORDED && rep.failures == 1,
	    "first failure recorded below the threshold");
	r = health_find(&h, VF4);
	ok(r != NULL && r->nfailures == 1 && !r->quarantined,
	    "record holds one failure, not quarantined");
	rep = report(VF4, "i-1", "t1");
	ok(healthrules_failure_noop(&h, &rep) && healthrules_report_failure(&h,
	    &rep) == 0 && !rep.changed && rep.outcome == HEALTH_UNCHANGED &&
	    rep.failures == 1, "the same assignment is tallied once");
	rep = report(VF4, "i-2", "t2");
	ok(healthrules_report_failure(&h, &rep) == 0 && rep.changed &&
	    rep.outcome == HEALTH_QUARANTINED && rep.failures == 2,
	    "second failure quarantines at the threshold");
	r = health_find(&h, VF4);
	ok(r != NULL && r->quarantined && health_record_quarantined(r, 2) &&
	    health_count_quarantined(&h) == 1, "record is quarantined");
	rep = report(VF4, "i-3", "t3");
	ok(healthrules_failure_noop(&h, &rep) && healthrules_report_failure(&h,
	    &rep) == 0 && !rep.changed && rep.failures == 2,
	    "a quarantined VF tallies nothing more");
	rep = report(VF4, "i-1", "t1");
	healthrules_report_success(&h, &rep);
	r = health_find(&h, VF4);
	ok(rep.changed && rep.cleared == 1 && !rep.rescinded && r != NULL &&
	    r->quarantined && r->nfailures == 1,
	    "success of an older assignment clears it, keeps the quarantine");
	rep = report(VF4, "i-2", "t2");
	healthrules_report_success(&h, &rep);
	ok(rep.changed && rep.cleared == 1 && rep.rescinded && h.n == 0,
	    "success of the newest tally rescinds the quarantine");
	health_release(&h);
}

static void
test_success(void)
{
	struct health h = { .threshold = 3 };
	struct health_report rep = report(VF4, "i-1", "t1");

	ok(healthrules_success_noop(&h, &rep) && rep.cleared == 0 &&
	    !rep.rescinded && !rep.changed, "success on no record is a no-op");
	healthrules_report_success(&h, &rep);
	ok(!rep.changed && h.n == 0, "and changes nothing");
	healthrules_report_failure(&h, &rep);
	rep = report(VF4, "i-2", "t2");
	healthrules_report_failure(&h, &rep);
	rep = report(VF4, "i-2", "t1");
	ok(healthrules_success_noop(&h, &rep),
	    "success needs the exact assignment (instance and time)");
	rep = report(VF4, "i-2", "t2");
	ok(!healthrules_success_noop(&h, &rep), "the exact assignment matches");
	healthrules_report_success(&h, &rep);
	ok(rep.cleared == 2 && !rep.rescinded && h.n == 0,
	    "clears the match and every older failure; nothing to rescind");
	health_release(&h);
}

static void
test_operator(void)
{
	struct health h = { .threshold = 3 };
	struct health_report rep = report(VF4, "i-1", "t1");
	const struct vf_record *r;
	struct timespec at;
	bool changed = false;

	healthrules_report_failure(&h, &rep);
	ok(healthrules_quarantine(&h, VF4, &changed) == 0 && changed,
	    "operator quarantine changes a VF with failures");
	r = health_find(&h, VF4);
	ok(r != NULL && r->quarantined && r->nfailures == 0,
	    "and drops its failures");
	at = r->quarantined_at;
	changed = false;
	ok(healthrules_quarantine(&h, VF4, &changed) == 0 && !changed,
	    "quarantining again changes nothing");
	r = health_find(&h, VF4);
	ok(r->quarantined_at.tv_sec == at.tv_sec &&
	    r->quarantined_at.tv_nsec == at.tv_nsec, "quarantined_at is kept");
	rep = report(VF4, "i-1", "t1");
	ok(healthrules_success_noop(&h, &rep),
	    "no success report rescinds an operator quarantine");
	ok(healthrules_clear(&h, VF5, &changed) == 0 && !changed,
	    "clearing a VF without record changes nothing");
	ok(healthrules_clear(&h, VF4, &changed) == 0 && changed && h.n == 0,
	    "clear removes the record");
	health_release(&h);
}

static void
test_order(void)
{
	struct health h = { .threshold = 1 };

	ok(healthrules_record_get(&h, VF5) != NULL &&
	    healthrules_record_get(&h, VF4) != NULL &&
	    healthrules_record_get(&h, VF5) != NULL && h.n == 2,
	    "records are found or inserted once");
	ok(strcmp(h.recs[0].vf, VF4) == 0 && strcmp(h.recs[1].vf, VF5) == 0,
	    "records stay sorted by VF");
	ok(!health_vf_quarantined(&h, VF4) &&
	    health_count_quarantined(&h) == 0,
	    "records without failures are not quarantined");
	health_release(&h);
}

int
main(void)
{
	test_failures();
	test_success();
	test_operator();
	test_order();
	return done_testing();
}
