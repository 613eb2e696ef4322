/*
 * systemic.c - unit tests (TAP) for the systemic-failure rule (src/lib/
 * systemic.c, SPEC.md 4.5 as 6.5 amends it) on a host made in memory:
 * 8 cards of 4 VFs, failures, claims and recoveries at times before NOW,
 * and the recoveries read from an audit log in a temporary directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "auditlog.h"
#include "claims.h"
#include "conf.h"
#include "healthfile.h"
#include "healthrules.h"
#include "placement.h"
#include "systemic.h"
#include "tap.h"
#include "timefmt.h"

#define NOW 1800000000
#define NCARDS 8
#define NVFS 4
#define LONG_AGO 9000000		/* a VM that ran for months */
#define UNKNOWN (-1)			/* an assigned_at that is no time */

static const struct drains no_drains;

struct host {
	struct vf_info vi[NCARDS * NVFS];
	struct vf_inventory inv;
	struct health h;
	struct claims c;
	struct systemic_recoveries rec;
	struct systemic_recovery recv[NCARDS];
};

/* The address of card c ("0000:40:00.0", "0000:44:00.0", ...). */
static const char *
card(int c)
{
	static char buf[NCARDS][VF_ADDR_LEN + 1];

	snprintf(buf[c], sizeof(buf[c]), "0000:%02x:00.0", 0x40 + 4 * c);
	return buf[c];
}

static void
host_init(struct host *x)
{
	int c, n;

	memset(x, 0, sizeof(*x));
	for (c = 0; c < NCARDS; c++)
		for (n = 0; n < NVFS; n++) {
			snprintf(x->vi[c * NVFS + n].addr, VF_ADDR_LEN + 1,
			    "0000:%02x:01.%d", 0x40 + 4 * c, n);
			strcpy(x->vi[c * NVFS + n].card, card(c));
		}
	x->inv.v = x->vi;
	x->inv.n = NCARDS * NVFS;
	x->h.threshold = 1000;
	x->rec.v = x->recv;
}

static void
host_release(struct host *x)
{
	health_release(&x->h);
	claims_release(&x->c);
}

/* The RFC 3339 time ago seconds before NOW, in a new string. */
static char *
ago_str(long ago)
{
	struct timespec ts = { NOW - ago, 0 };
	char buf[TIMEFMT_MAX];

	if (ago == UNKNOWN)
		return strdup("launcher-7");
	if (timefmt_format(&ts, buf, sizeof(buf)) < 0)
		abort();
	return strdup(buf);
}

/* A failure on VF n of card c: an assignment that began began seconds
 * before NOW (UNKNOWN: no time), reported reported seconds before. */
static void
fail(struct host *x, int c, int n, long began, long reported)
{
	struct vf_record *r = healthrules_record_get(&x->h, x->vi[c * NVFS +
	    n].addr);
	struct vf_failure *f;

	if (r == NULL || (f = realloc(r->failures, (r->nfailures + 1) *
	    sizeof(*f))) == NULL)
		abort();
	r->failures = f;
	f = &r->failures[r->nfailures++];
	f->instance_id = strdup("i-x");
	f->assigned_at = ago_str(began);
	f->reported_at.tv_sec = NOW - reported;
	f->reported_at.tv_nsec = 0;
}

/* A claim of VF n of card c made ago seconds before NOW. */
static void
claim_at(struct host *x, int c, int n, long ago)
{
	struct claim cl = { 0 };
	char id[32];

	strcpy(cl.vf, x->vi[c * NVFS + n].addr);
	snprintf(id, sizeof(id), "i-%d-%d", c, n);
	cl.instance_id = id;
	cl.claimed_at = ago_str(ago);
	if (claims_add(&x->c, &cl) < 0)
		abort();
	free(cl.claimed_at);
}

/* Card c recovered ago seconds before NOW. */
static void
recovered(struct host *x, int c, long ago)
{
	struct systemic_recovery *r = &x->recv[x->rec.n++];

	strcpy(r->card, card(c));
	r->at.tv_sec = NOW - ago;
	r->at.tv_nsec = 0;
}

static struct systemic
check(const struct host *x, unsigned window, double fraction)
{
	const struct systemic_rule rule = { window, fraction };
	const struct timespec now = { NOW, 0 };
	struct placement p;
	struct systemic s;

	if (placement_build(&p, &x->inv, &x->h, &x->c, &no_drains) == -1 ||
	    systemic_check(&p, &x->rec, &rule, &now, &s) == -1)
		abort();
	placement_release(&p);
	return s;
}

/* 8 VFs on 4 cards wedged by one OOM kill of long-running VMs. */
static void
test_mass_kill(void)
{
	struct host x;
	struct systemic s;
	int c;

	host_init(&x);
	for (c = 0; c < NCARDS; c++) {
		claim_at(&x, c, 0, LONG_AGO);
		claim_at(&x, c, 1, LONG_AGO);
	}
	for (c = 4; c < 7; c++)
		claim_at(&x, c, 2, 600);
	for (c = 0; c < 4; c++) {
		fail(&x, c, 0, LONG_AGO, 60);
		fail(&x, c, 1, LONG_AGO, 59);
	}
	fail(&x, 0, 2, 1800, 58);
	fail(&x, 1, 2, 1200, 57);
	s = check(&x, 3600, 0.5);
	ok(!s.suspected && s.assigned == 5 && s.failed == 2 &&
	    s.reason[0] == '\0', "a mass kill of 8 VFs on 4 cards of an "
	    "8-card host: not systemic (2 of the 5 VFs assigned within the "
	    "window failed)");
	s = check(&x, 3600, 0.4);
	ok(s.suspected && s.failed == 2, "at a fraction of 0.4 it is");
	host_release(&x);
}

/* A rollout: every VF that boots within the window fails. */
static void
test_rollout(void)
{
	struct host x;
	struct systemic s;

	host_init(&x);
	claim_at(&x, 0, 0, LONG_AGO);
	fail(&x, 2, 0, 900, 880);
	s = check(&x, 3600, 0.5);
	ok(!s.suspected && s.assigned == 1 && s.failed == 1,
	    "one failed boot of one: below SYSTEMIC_MIN_VFS");
	fail(&x, 3, 0, 600, 590);
	s = check(&x, 3600, 0.5);
	ok(s.suspected && s.assigned == 2 && s.failed == 2,
	    "two failed boots of two: suspected");
	is_str(s.reason, "failures on 2 of the 2 VFs assigned within 3600 s",
	    "the reason");
	claim_at(&x, 4, 0, 300);
	claim_at(&x, 5, 0, 240);
	claim_at(&x, 6, 0, 3600);
	s = check(&x, 3600, 0.4);
	ok(s.suspected && s.assigned == 5 && s.failed == 2 &&
	    !check(&x, 3600, 0.41).suspected, "2 of 5: at 0.4, not 0.41 "
	    "(a claim made exactly the window ago counts)");
	fail(&x, 7, 0, 60, 50);
	fail(&x, 7, 0, 40, 30);
	s = check(&x, 3600, 0.5);
	ok(s.suspected && s.assigned == 6 && s.failed == 3, "one VF that "
	    "fails twice is one VF");
	s = check(&x, 3599, 0.5);
	ok(s.assigned == 5 && s.failed == 3, "a claim one second older than "
	    "the window does not count");
	s = check(&x, 580, 0.5);
	ok(s.assigned == 3 && s.failed == 1 && !s.suspected, "a narrower "
	    "window: failures of older assignments drop out");
	host_release(&x);
}

/* Failures whose assigned_at is not a time; failures gone stale. */
static void
test_unknown_start(void)
{
	struct host x;
	struct systemic s;

	host_init(&x);
	fail(&x, 0, 0, UNKNOWN, 10);
	fail(&x, 1, 0, UNKNOWN, 10);
	fail(&x, 2, 0, 3000, 3601);
	fail(&x, 3, 0, -50, -40);
	s = check(&x, 3600, 0.5);
	ok(!s.suspected && s.assigned == 1 && s.failed == 1, "an unknown "
	    "start and a report older than the window count in neither; a "
	    "failure from the future does");
	recovered(&x, 1, 100);
	s = check(&x, 3600, 0.5);
	ok(s.suspected && s.recovered == 1, "after a recovery an unknown "
	    "start is taken as the report's time");
	host_release(&x);
}

/* A card that fails again right after its recovery. */
static void
test_recovery(void)
{
	struct host x;
	struct systemic s;
	int c;

	host_init(&x);
	claim_at(&x, 0, 0, LONG_AGO);
	for (c = 3; c < 7; c++)
		claim_at(&x, c, 0, 100);
	recovered(&x, 1, 1200);
	fail(&x, 1, 1, 2000, 1500);
	fail(&x, 1, 2, 1500, 300);
	s = check(&x, 3600, 0.5);
	ok(!s.suspected && s.recovered == 0, "failures reported before the "
	    "recovery, or of an assignment begun before it: no");
	fail(&x, 1, 0, 600, 300);
	s = check(&x, 3600, 0.5);
	ok(s.suspected && s.recovered == 1 && s.recovered_cards == 1,
	    "one failure after the recovery: suspected");
	is_str(s.reason, "failures on 1 VF of card 0000:44:00.0 since its "
	    "recovery", "the reason names the card");
	s = check(&x, 1199, 0.5);
	ok(!s.suspected, "a recovery older than the window: no");
	recovered(&x, 2, 1000);
	fail(&x, 2, 0, 900, 800);
	fail(&x, 2, 3, 800, 700);
	s = check(&x, 3600, 0.5);
	ok(s.suspected && s.recovered == 3 && s.recovered_cards == 2,
	    "two cards");
	is_str(s.reason, "failures on 3 VFs of 2 cards since their recovery; "
	    "failures on 5 of the 9 VFs assigned within 3600 s",
	    "both rules: the reasons joined");
	host_release(&x);
}

static void
test_unknown_health(void)
{
	const struct systemic_rule rule = { 3600, 0.5 };
	const struct timespec now = { NOW, 0 };
	struct host x;
	struct placement p;
	struct systemic s;
	struct conf conf;

	host_init(&x);
	ok(placement_build(&p, &x.inv, NULL, &x.c, NULL) == 0 &&
	    systemic_check(&p, NULL, &rule, &now, &s) == -1 &&
	    errno == ENODATA && !s.suspected, "no health state: the rule "
	    "cannot be applied");
	placement_release(&p);
	host_release(&x);
	conf_defaults(&conf);
	ok(systemic_rule_of(&conf).window == 3600 &&
	    systemic_rule_of(&conf).fraction == 0.5, "the rule's defaults");
}

static void
test_fraction_key(void)
{
	static const char *const good[] = { "0.5", "1", "1.0", "0.25",
	    "00.125" };
	static const char *const bad[] = { "0", "0.0", "1.5", "2", "-0.5",
	    ".5", "0.", "0.5x", "abc", "", " 0.5", "1e-1", "0x1", "inf" };
	double v;
	size_t i;
	bool all = true;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		all = all && conf_parse_fraction(good[i], &v) == 0;
	ok(all && v == 0.125, "fractions above 0 and at most 1 are read");
	all = true;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (conf_parse_fraction(bad[i], &v) == 0) {
			printf("# accepted \"%s\"\n", bad[i]);
			all = false;
		}
	ok(all, "everything else is refused");
}

/* Writes text to dir/name. */
static void
put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) != 0)
		abort();
}

#define CLEAR(card, ts, prog, outcome) "{\"ts\":\"" ts "\",\"prog\":\"" \
	prog "\",\"command\":\"clear\",\"card\":\"" card "\",\"vfs\":[]," \
	"\"uid\":0,\"user\":\"root\",\"outcome\":\"" outcome "\"}\n"

/* The recoveries of an audit log: vfrecover's clears that were done. */
static void
test_audit(const char *dir)
{
	struct systemic_recoveries r;
	char path[PATH_MAX + 32];

	ok(systemic_recoveries_load(dir, &r) == 0 && r.n == 0 &&
	    r.v == NULL, "no audit log: no recoveries");
	put(dir, AUDIT_OLD_FILE, CLEAR("0000:48:00.0", "2026-08-01T10:00:00Z",
	    "vfrecover", "done"));
	put(dir, AUDIT_FILE,
	    CLEAR("0000:40:00.0", "2026-08-02T10:00:00Z", "vfrecover", "done")
	    CLEAR("0000:44:00.0", "2026-08-02T11:00:00Z", "vfstore", "ok")
	    CLEAR("0000:4c:00.0", "2026-08-02T11:00:00Z", "vfrecover",
	    "failed")
	    CLEAR("0000:50:00.0", "not a time", "vfrecover", "done")
	    CLEAR("0000:54:00.0000000", "2026-08-02T11:00:00Z", "vfrecover",
	    "done")
	    "{\"ts\":\"2026-08-02T11:00:00Z\",\"prog\":\"vfrecover\","
	    "\"command\":\"drain\",\"card\":\"0000:58:00.0\","
	    "\"outcome\":\"done\"}\n"
	    "not json\n"
	    CLEAR("0000:40:00.0", "2026-08-02T09:00:00Z", "vfrecover", "done"));
	ok(systemic_recoveries_load(dir, &r) == 0 && r.n == 2,
	    "only vfrecover's clears that were done, with a time and a card");
	ok(r.n == 2 && strcmp(r.v[0].card, "0000:48:00.0") == 0 &&
	    strcmp(r.v[1].card, "0000:40:00.0") == 0 &&
	    r.v[1].at.tv_sec == 1785661200, "the rotated file first; a "
	    "card's last line wins (even with an earlier ts)");
	systemic_recoveries_release(&r);
	snprintf(path, sizeof(path), "%s/%s", dir, AUDIT_FILE);
	if (unlink(path) < 0 || mkfifo(path, 0600) < 0)
		abort();
	errno = 0;
	ok(systemic_recoveries_load(dir, &r) == -1 && errno != 0 &&
	    r.n == 0 && r.v == NULL, "an audit log that cannot be read: "
	    "-1 with errno, nothing held");
}

int
main(void)
{
	char dir[PATH_MAX];

	tap_tmpdir(dir, sizeof(dir), "systemic");
	test_mass_kill();
	test_rollout();
	test_unknown_start();
	test_recovery();
	test_unknown_health();
	test_fraction_key();
	test_audit(dir);
	tap_rmtree(dir);
	return done_testing();
}
