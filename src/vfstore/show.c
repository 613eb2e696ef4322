/*
 * show.c - `vfstore show` (SPEC.md 4.2, 6.3): the health records with the
 * threshold applied, and the drained VFs; each VF that is out (it is
 * quarantined, by an operator or by its failures, or drained) gets
 * "why", derived from the drain file and the audit log, never stored in
 * vf-health.json: the operator's reason of the quarantine or the drain,
 * or the failures and the NVRM line the quarantining report carried.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditlog.h"
#include "drain.h"
#include "healthfile.h"
#include "jsonl.h"
#include "log.h"
#include "suspect.h"

#include "vfstore.h"

/* What the audit log says of one VF since its last clear. */
struct why {
	char vf[VF_ADDR_LEN + 1];
	const struct vf_record *rec;	/* borrowed; NULL when none */
	const struct drain *drain;	/* borrowed; NULL when not drained */
	const struct suspect *sus;	/* borrowed; NULL when not suspect */
	char *reason;			/* the last operator quarantine's */
	char *nvrm;			/* the last quarantining report's */
};

struct show {
	struct health h;
	struct drains d;
	struct suspects sus;
	struct why *w;			/* sorted by vf */
	size_t n;
};

/* Adds vf to the VFs shown (records and drains come sorted). */
static void
show_add(struct show *sh, const char *vf)
{
	struct why *w;

	if (sh->n > 0 && strcmp(sh->w[sh->n - 1].vf, vf) == 0)
		return;
	w = &sh->w[sh->n++];
	memcpy(w->vf, vf, VF_ADDR_LEN + 1);
	w->rec = health_find(&sh->h, vf);
	w->drain = drains_find(&sh->d, vf);
	w->sus = suspects_find(&sh->sus, vf);
}

static int
addr_cmp(const void *x, const void *y)
{
	return strcmp(x, y);
}

/* The VFs to show, in address order: all, or only (not NULL): those with
 * a record, a drain or a suspicion. */
static int
show_list(struct show *sh, const char *only)
{
	size_t i, n = 0, max = sh->h.n + sh->d.n + sh->sus.n;
	char (*a)[VF_ADDR_LEN + 1];

	if ((sh->w = calloc(max + 1, sizeof(*sh->w))) == NULL ||
	    (a = calloc(max + 1, sizeof(*a))) == NULL)
		return -1;
	for (i = 0; i < sh->h.n; i++)
		memcpy(a[n++], sh->h.recs[i].vf, VF_ADDR_LEN + 1);
	for (i = 0; i < sh->d.n; i++)
		memcpy(a[n++], sh->d.v[i].vf, VF_ADDR_LEN + 1);
	for (i = 0; i < sh->sus.n; i++)
		memcpy(a[n++], sh->sus.v[i].vf, VF_ADDR_LEN + 1);
	qsort(a, n, sizeof(*a), addr_cmp);
	for (i = 0; i < n; i++)
		if (only == NULL || strcmp(only, a[i]) == 0)
			show_add(sh, a[i]);
	free(a);
	return 0;
}

static struct why *
show_find(struct show *sh, const char *vf)
{
	size_t lo = 0, hi = sh->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = strcmp(sh->w[mid].vf, vf)) == 0)
			return &sh->w[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void
set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s != NULL ? strdup(s) : NULL;
}

/* One audit line's part in w: a clear forgets, a quarantine remembers. */
static void
why_note(struct why *w, const json_t *line, const char *cmd)
{
	const char *outcome = jsonl_str(line, "outcome");

	if (outcome != NULL && strcmp(outcome, "unchanged") == 0)
		return;
	if (strcmp(cmd, "clear") == 0) {
		set_str(&w->reason, NULL);
		set_str(&w->nvrm, NULL);
	} else if (strcmp(cmd, "quarantine") == 0) {
		set_str(&w->reason, jsonl_str(line, "reason") ?
		    jsonl_str(line, "reason") : "");
	} else if ((strcmp(cmd, "report-failure") == 0 ||
	    strcmp(cmd, "apply") == 0) && jsonl_str(line, "nvrm") != NULL) {
		set_str(&w->nvrm, jsonl_str(line, "nvrm"));
	}
}

/* auditlog_read()'s callback: each VF the line names ("vfs", else "vf"). */
static int
why_line(const json_t *line, void *arg)
{
	const json_t *vfs = json_object_get(line, "vfs");
	const char *cmd = jsonl_str(line, "command"), *vf;
	struct show *sh = arg;
	struct why *w;
	size_t i;

	if (cmd == NULL)
		return 0;
	if (!json_is_array(vfs)) {
		vf = jsonl_str(line, "vf");
		if (vf != NULL && (w = show_find(sh, vf)) != NULL)
			why_note(w, line, cmd);
		return 0;
	}
	for (i = 0; i < json_array_size(vfs); i++) {
		vf = json_string_value(json_array_get(vfs, i));
		if (vf != NULL && (w = show_find(sh, vf)) != NULL)
			why_note(w, line, cmd);
	}
	return 0;
}

/* The failures part: "2 failed assignments (instances A, B): NVRM". */
static void
why_failures(FILE *f, const struct why *w)
{
	const struct vf_record *r = w->rec;
	size_t i;

	fprintf(f, "%zu failed assignment%s (instance%s ", r->nfailures,
	    r->nfailures == 1 ? "" : "s", r->nfailures == 1 ? "" : "s");
	for (i = 0; i < r->nfailures; i++)
		fprintf(f, "%s%s", i > 0 ? ", " : "",
		    r->failures[i].instance_id);
	if (w->nvrm != NULL)
		fprintf(f, "): %s", w->nvrm);
	else
		fputs("); no NVRM line in the audit log", f);
}

/* The suspicion part: "suspect: assignment of i-1 ended unclean at T
 * (libvirt-hook: reason=crashed) before its guest said OK". */
static void
why_suspect(FILE *f, const struct suspect *sp, bool more)
{
	fprintf(f, "%ssuspect: assignment of %s ended %s at %s (%s) before "
	    "its guest said OK", more ? "; " : "", sp->instance_id,
	    sp->ended, sp->ended_at, sp->source[0] != '\0' ? sp->source :
	    "no source");
}

/* "why" of an out or suspect VF, a new string; NULL when neither. */
static char *
why_text(const struct why *w)
{
	bool q = w->rec != NULL && w->rec->quarantined;
	char *s = NULL;
	size_t len;
	FILE *f;

	if (!q && w->drain == NULL && w->sus == NULL)
		return NULL;
	if ((f = open_memstream(&s, &len)) == NULL)
		return NULL;
	if (w->drain != NULL)
		fprintf(f, "drained: %s%s", w->drain->reason[0] != '\0' ?
		    w->drain->reason : "no reason given", q ? "; " : "");
	if (q && w->rec->nfailures > 0)
		why_failures(f, w);
	else if (q)
		fprintf(f, "quarantined by operator%s%s",
		    w->reason != NULL && w->reason[0] != '\0' ? ": " : "",
		    w->reason != NULL ? w->reason : "");
	if (w->sus != NULL)
		why_suspect(f, w->sus, q || w->drain != NULL);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* The suspicion as its file holds it, less the address. New ref. */
static json_t *
suspect_json(const struct suspect *sp)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "instance_id",
	    sp->instance_id, "assigned_at", sp->assigned_at, "ended_at",
	    sp->ended_at, "ended", sp->ended, "source", sp->source);
}

/* The line of w: the record (or a drained or suspect VF's own), drain,
 * suspicion and why. */
static json_t *
show_json(const struct why *w)
{
	json_t *o = w->rec != NULL ? health_record_json(w->rec) :
	    json_pack("{s:s, s:b}", "vf_address", w->vf, "quarantined", 0);
	char *why = why_text(w);

	if (o != NULL && w->drain != NULL &&
	    (json_object_set_new(o, "drained", json_true()) < 0 ||
	    json_object_set_new(o, "drained_at",
	    json_string(w->drain->drained_at)) < 0))
		o = (json_decref(o), NULL);
	if (o != NULL && w->sus != NULL && json_object_set_new(o, "suspect",
	    suspect_json(w->sus)) < 0)
		o = (json_decref(o), NULL);
	if (o != NULL && why != NULL &&
	    json_object_set_new(o, "why", json_string(why)) < 0)
		o = (json_decref(o), NULL);
	free(why);
	return o;
}

static void
show_release(struct show *sh)
{
	size_t i;

	for (i = 0; i < sh->n; i++) {
		free(sh->w[i].reason);
		free(sh->w[i].nvrm);
	}
	free(sh->w);
	health_release(&sh->h);
	drains_release(&sh->d);
	suspects_release(&sh->sus);
}

/* Loads both files under the shared lock, then reads the audit log. */
static int
show_load(struct ctx *c, struct show *sh)
{
	size_t skipped = 0;
	int rc;

	if ((rc = ctx_open_health(c, false, &sh->h, NULL)) != 0)
		return rc;
	if ((rc = drain_load(c, &sh->d)) == 0)
		rc = suspectcmd_load(c, &sh->sus);
	store_unlock(&c->s);
	if (rc != 0)
		return rc;
	if (show_list(sh, c->a.vf) < 0)
		return EX_OSERR;
	if (auditlog_read(c->s.dir, NULL, NULL, why_line, sh, &skipped) < 0)
		log_msg(LVL_WARN, "cannot read the audit log; \"why\" says "
		    "less", "{s:s}", "error", strerror(errno));
	return 0;
}

int
cmd_show(struct ctx *c)
{
	struct show sh = { 0 };
	size_t i;
	int rc;

	if (c->a.vf != NULL && !vfaddr_valid(c->a.vf)) {
		log_msg(LVL_ERROR, "invalid VF address", "{s:s}", "vf",
		    c->a.vf);
		return EX_DATAERR;
	}
	if ((rc = show_load(c, &sh)) == 0 && c->a.vf != NULL && sh.n == 0)
		rc = EXIT_NO;
	for (i = 0; i < sh.n && rc == 0; i++)
		rc = emit(show_json(&sh.w[i]));
	show_release(&sh);
	return rc;
}
