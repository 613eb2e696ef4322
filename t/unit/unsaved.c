/*
 * unsaved.c - unit tests (TAP) for the failures sentinel-poll reports
 * again until the store holds them (SPEC 7.2): per assignment and
 * source, fresh in the scan that saw them, forgotten when saved or when
 * the assignment is no longer listed; and the store's answer
 * (storeread.h) for an assignment it holds.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "healthfile.h"
#include "healthrules.h"
#include "store.h"
#include "sentinel-poll/storeread.h"
#include "sentinel-poll/unsaved.h"
#include "tap.h"

static struct target t1 = { .vf = "0000:e3:00.4", .instance_id = "i-1",
    .claimed_at = "t1" };
static struct target t1b = { .vf = "0000:e3:00.4", .instance_id = "i-1",
    .claimed_at = "t2" };

static void
test_sources(void)
{
	struct unsaved u = { 0 };
	struct unsaved_entry *e;

	ok(unsaved_get(&u, &t1) == NULL, "nothing seen: no entry");
	ok(unsaved_set(&u, &t1, UNSAVED_AGENT, "NVRM: a") == 0 &&
	    (e = unsaved_get(&u, &t1)) != NULL && !unsaved_pending(e),
	    "an agent's FAILED of this scan was written: not pending");
	unsaved_sweep(&u);
	ok((e = unsaved_get(&u, &t1)) != NULL && unsaved_pending(e) &&
	    strcmp(e->nvrm[UNSAVED_AGENT], "NVRM: a") == 0,
	    "the next scan it is pending, the agent silent");
	unsaved_clear(&u, &t1, UNSAVED_AGENT);
	ok(!unsaved_pending(e), "an OK from the agent forgets it");
	unsaved_sweep(&u);
	ok(u.n == 0, "an entry without a failure is dropped");
	ok(unsaved_set(&u, &t1, UNSAVED_KERNEL, "NVRM: k") == 0 &&
	    (e = unsaved_get(&u, &t1)) != NULL && unsaved_pending(e),
	    "a console line waits for the store in its own scan");
	ok(unsaved_set(&u, &t1b, UNSAVED_MARKER, NULL) == 0 &&
	    unsaved_get(&u, &t1b) != NULL && u.n == 2,
	    "another claim time is another assignment");
	ok(strcmp(unsaved_get(&u, &t1b)->nvrm[UNSAVED_MARKER], "") == 0,
	    "a NULL message is kept as \"\"");
	unsaved_saved(unsaved_get(&u, &t1));
	unsaved_sweep(&u);
	ok(u.n == 1 && unsaved_get(&u, &t1) == NULL,
	    "saved: the store holds it, forgotten");
	(void)unsaved_get(&u, &t1b);
	unsaved_sweep(&u);
	ok(u.n == 1, "listed in the last scan: kept");
	unsaved_sweep(&u);
	ok(u.n == 0, "not listed by a scan: forgotten");
	unsaved_release(&u);
}

static void
test_store(void)
{
	struct storeread_health r;
	struct health h = { 0 };
	struct health_report rep = { .vf = "0000:e3:00.4", .instance = "i-1",
	    .assigned_at = "t1" };
	struct atomic_result res;
	struct store s;
	char dir[PATH_MAX];
	bool created;

	tap_tmpdir(dir, sizeof(dir), "unsaved");
	ok(storeread_health(&r, dir, 2, 100, NULL, NULL) == -1 && !r.loaded &&
	    !storeread_holds(&r, "0000:e3:00.4", "i-1", "t1"),
	    "no store: nothing is known, nothing held");
	storeread_release(&r);
	ok(store_init(&s, dir) == 0 && store_create(&s, (uid_t)-1,
	    (gid_t)-1, &created) == 0, "a store");
	h.threshold = 2;
	ok(store_lock(&s, true, 1) == 0 &&
	    healthrules_report_failure(&h, &rep) == 0 &&
	    health_save(&s, &h, &res) == 0, "holding i-1's failure");
	store_unlock(&s);
	health_release(&h);
	ok(storeread_health(&r, dir, 2, 100, NULL, NULL) == 0 &&
	    storeread_holds(&r, "0000:e3:00.4", "i-1", "t1") &&
	    !storeread_holds(&r, "0000:e3:00.4", "i-1", "t2") &&
	    !storeread_holds(&r, "0000:e3:00.5", "i-1", "t1"),
	    "the store holds that assignment's failure, no other");
	storeread_release(&r);
	ok(store_lock(&s, true, 1) == 0, "another holds the lock");
	ok(storeread_health(&r, dir, 2, 50, NULL, NULL) == -1 &&
	    !r.loaded, "busy past the wait: nothing known");
	store_unlock(&s);
	storeread_release(&r);
	tap_rmtree(dir);
}

int
main(void)
{
	test_sources();
	test_store();
	return done_testing();
}
