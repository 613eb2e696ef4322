/*
 * systemic.c - the systemic-failure rule of SPEC.md 4.5 and 6.5 (see
 * systemic.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditlog.h"
#include "healthfile.h"
#include "jsonl.h"
#include "systemic.h"
#include "timefmt.h"

struct systemic_rule
systemic_rule_of(const struct conf *c)
{
	struct systemic_rule r;

	r.window = c->systemic_window;
	r.fraction = c->systemic_fraction;
	return r;
}

/* a < b for timestamps. */
static bool
ts_before(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec;
	return a->tv_nsec < b->tv_nsec;
}

/* True if member key of line is the string want. */
static bool
str_is(const json_t *line, const char *key, const char *want)
{
	const char *s = jsonl_str(line, key);

	return s != NULL && strcmp(s, want) == 0;
}

/* The entry of card in r, added (time 0) when new; NULL/ENOMEM. */
static struct systemic_recovery *
recovery_slot(struct systemic_recoveries *r, const char *card)
{
	struct systemic_recovery *v;
	size_t i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i].card, card) == 0)
			return &r->v[i];
	if ((v = realloc(r->v, (r->n + 1) * sizeof(*v))) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	r->v = v;
	v = &r->v[r->n++];
	memset(v, 0, sizeof(*v));
	strcpy(v->card, card);
	return v;
}

/*
 * One audit line: a recovery when vfrecover's clear was done. The log
 * is in the order of the events, so the last line of a card wins, even
 * over a later ts of before a clock step back.
 */
static int
recovery_line(const json_t *line, void *arg)
{
	struct systemic_recovery *slot;
	const char *card = jsonl_str(line, "card");
	const char *ts = jsonl_str(line, "ts");
	struct timespec at;

	if (!str_is(line, "prog", "vfrecover") ||
	    !str_is(line, "command", "clear") ||
	    !str_is(line, "outcome", "done") || card == NULL ||
	    strlen(card) > VF_ADDR_LEN || ts == NULL ||
	    timefmt_parse(ts, &at) < 0)
		return 0;
	if ((slot = recovery_slot(arg, card)) == NULL)
		return -1;
	slot->at = at;
	return 0;
}

int
systemic_recoveries_load(const char *gpu_dir,
    struct systemic_recoveries *out)
{
	int saved;

	memset(out, 0, sizeof(*out));
	if (auditlog_read_text(gpu_dir, "\"command\":\"clear\"", recovery_line,
	    out, NULL) == 0)
		return 0;
	saved = errno;
	systemic_recoveries_release(out);
	errno = saved;
	return -1;
}

void
systemic_recoveries_release(struct systemic_recoveries *r)
{
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* When f's assignment began: its assigned_at, when that is a time. */
static bool
assignment_start(const struct vf_failure *f, struct timespec *at)
{
	return f->assigned_at != NULL && f->assigned_at[0] != '\0' &&
	    timefmt_parse(f->assigned_at, at) == 0;
}

/*
 * True if v has a failure reported at or after since, of an assignment
 * that began at or after since (unknown: began when reported, or, with
 * known_start, not at all). The start is compared in whole seconds: an
 * assigned_at from a launcher or an operator often has no fraction, and
 * a VM started within the second of a recovery began after it (the
 * card was idle throughout its cycle).
 */
static bool
failed_since(const struct placement_vf *v, const struct timespec *since,
    bool known_start)
{
	const struct timespec second = { since->tv_sec, 0 };
	const struct vf_failure *f;
	struct timespec at;
	size_t i;

	for (i = 0; v->rec != NULL && i < v->rec->nfailures; i++) {
		f = &v->rec->failures[i];
		if (ts_before(&f->reported_at, since))
			continue;
		if (!assignment_start(f, &at)) {
			if (known_start)
				continue;
			at = f->reported_at;
		}
		if (!ts_before(&at, &second))
			return true;
	}
	return false;
}

/* The rollout rule's counts: the VFs assigned since, the failed ones. */
static void
count_fresh(const struct placement *p, const struct timespec *since,
    struct systemic *out)
{
	const struct placement_vf *v;
	struct timespec at;
	bool failed;
	size_t i;

	for (i = 0; i < p->inv->n; i++) {
		v = &p->vf[i];
		failed = failed_since(v, since, true);
		out->failed += failed;
		out->assigned += failed || (v->claim != NULL &&
		    timefmt_parse(v->claim->claimed_at, &at) == 0 &&
		    !ts_before(&at, since));
	}
}

/* The last recovery of card, when at or after since; NULL if none. */
static const struct timespec *
recovered_at(const struct systemic_recoveries *rec, const char *card,
    const struct timespec *since)
{
	size_t i;

	for (i = 0; rec != NULL && i < rec->n; i++)
		if (strcmp(rec->v[i].card, card) == 0)
			return ts_before(&rec->v[i].at, since) ? NULL :
			    &rec->v[i].at;
	return NULL;
}

/* The recovery rule's counts; *first the first card that failed again. */
static void
count_recovered(const struct placement *p,
    const struct systemic_recoveries *rec, const struct timespec *since,
    struct systemic *out, const char **first)
{
	const struct timespec *at;
	unsigned n;
	size_t c, i;

	*first = NULL;
	for (c = 0; c < p->ncards; c++) {
		if ((at = recovered_at(rec, p->cards[c].addr, since)) == NULL)
			continue;
		n = 0;
		for (i = 0; i < p->inv->n; i++)
			n += strcmp(p->vf[i].vi->card, p->cards[c].addr) == 0 &&
			    failed_since(&p->vf[i], at, false);
		if (n > 0 && *first == NULL)
			*first = p->cards[c].addr;
		out->recovered += n;
		out->recovered_cards += n > 0;
	}
}

/* The recovery rule's part of the reason into b; its length, or -1. */
static int
reason_recovered(const struct systemic *out, const char *card, char *b,
    size_t len)
{
	if (out->recovered_cards == 0)
		return snprintf(b, len, "%s", "");
	if (out->recovered_cards == 1)
		return snprintf(b, len, "failures on %u VF%s of card %s since "
		    "its recovery", out->recovered,
		    out->recovered == 1 ? "" : "s", card);
	return snprintf(b, len, "failures on %u VFs of %u cards since their "
	    "recovery", out->recovered, out->recovered_cards);
}

/* The reason: the parts of the rules that hold, joined by "; " (at most
 * 160 bytes with 10-digit numbers). */
static void
reason(struct systemic *out, bool rollout, const char *card,
    unsigned window)
{
	size_t len = sizeof(out->reason), used;
	int n;

	n = reason_recovered(out, card, out->reason, len);
	if (n >= 0 && (size_t)n < len && rollout) {
		used = (size_t)n;
		n = snprintf(out->reason + used, len - used, "%sfailures on "
		    "%u of the %u VFs assigned within %u s", used > 0 ? "; " :
		    "", out->failed, out->assigned, window);
		if (n >= 0)
			n += (int)used;
	}
	if (n < 0 || (size_t)n >= len)
		strcpy(out->reason, "failures on many VFs");
}

int
systemic_check(const struct placement *p,
    const struct systemic_recoveries *rec, const struct systemic_rule *rule,
    const struct timespec *now, struct systemic *out)
{
	struct timespec since = *now;
	const char *card;
	bool rollout;

	memset(out, 0, sizeof(*out));
	if (p->health == NULL) {
		errno = ENODATA;
		return -1;
	}
	since.tv_sec -= (time_t)rule->window;
	count_fresh(p, &since, out);
	count_recovered(p, rec, &since, out, &card);
	rollout = out->failed >= SYSTEMIC_MIN_VFS &&
	    (double)out->failed >= rule->fraction * (double)out->assigned;
	out->suspected = rollout || out->recovered > 0;
	if (out->suspected)
		reason(out, rollout, card, rule->window);
	return 0;
}
