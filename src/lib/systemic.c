/*
 * systemic.c - the systemic-failure rule of SPEC.md 4.5 (see systemic.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "healthfile.h"
#include "systemic.h"

struct systemic_rule
systemic_rule_of(const struct conf *c)
{
	struct systemic_rule r;

	r.window = c->systemic_window;
	r.cards = c->systemic_cards;
	r.vfs = c->systemic_vfs;
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

bool
systemic_recent(const struct vf_record *rec, unsigned window,
    const struct timespec *now)
{
	struct timespec since = *now;
	size_t i;

	if (rec == NULL || rec->nfailures == 0)
		return false;
	since.tv_sec -= (time_t)window;
	/* The newest, whatever the order of a hand-edited file. */
	for (i = 0; i < rec->nfailures; i++)
		if (!ts_before(&rec->failures[i].reported_at, &since))
			return true;
	return false;
}

/* The recent VFs of card c. */
static unsigned
card_recent(const struct placement *p, const struct placement_card *c,
    unsigned window, const struct timespec *now)
{
	unsigned n = 0;
	size_t i;

	for (i = 0; i < p->inv->n; i++)
		if (strcmp(p->vf[i].vi->card, c->addr) == 0 &&
		    systemic_recent(p->vf[i].rec, window, now))
			n++;
	return n;
}

/* The reason text (at most 67 bytes with three 10-digit numbers). */
static void
reason(struct systemic *out, unsigned window)
{
	int n;

	n = snprintf(out->reason, sizeof(out->reason), "failures on %u VF%s "
	    "of %u card%s within %u s", out->vfs, out->vfs == 1 ? "" : "s",
	    out->cards, out->cards == 1 ? "" : "s", window);
	if (n < 0 || (size_t)n >= sizeof(out->reason))
		strcpy(out->reason, "failures on many VFs");
}

int
systemic_check(const struct placement *p, const struct systemic_rule *rule,
    const struct timespec *now, struct systemic *out)
{
	unsigned n;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (p->health == NULL) {
		errno = ENODATA;
		return -1;
	}
	for (i = 0; i < p->ncards; i++) {
		n = card_recent(p, &p->cards[i], rule->window, now);
		out->vfs += n;
		out->cards += n > 0;
		if (n > out->most)
			out->most = n;
	}
	out->suspected = out->vfs > 0 && (out->cards >= rule->cards ||
	    out->most >= rule->vfs);
	if (out->suspected)
		reason(out, rule->window);
	return 0;
}
