/*
 * suspicion.c - the suspicion rule of SPEC.md 7.3 (suspicion.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auditlog.h"
#include "guestproto.h"
#include "healthfile.h"
#include "healthrules.h"
#include "io.h"
#include "safeopen.h"
#include "suspect.h"
#include "suspicion.h"
#include "timefmt.h"

#define CONSOLE_LINE_MAX (64 * 1024)	/* as sentinel-poll's tail */

static bool
given(const char *s)
{
	return s != NULL && s[0] != '\0';
}

int
suspicion_case_init(struct suspicion_case *sc, const struct claim *cl)
{
	memset(sc, 0, sizeof(*sc));
	if (cl == NULL)
		return 0;
	memcpy(sc->vf, cl->vf, sizeof(sc->vf));
	sc->ok = cl->ok_at != NULL;
	sc->provable = given(cl->vsock) || given(cl->app_log);
	sc->instance_id = strdup(cl->instance_id);
	sc->claimed_at = strdup(cl->claimed_at);
	sc->app_log = given(cl->app_log) ? strdup(cl->app_log) : NULL;
	sc->profile = given(cl->profile) ? strdup(cl->profile) : NULL;
	(void)claims_console_start(cl, &sc->console_offset,
	    &sc->console_inode);
	if (sc->instance_id != NULL && sc->claimed_at != NULL &&
	    (sc->app_log != NULL || !given(cl->app_log)) &&
	    (sc->profile != NULL || !given(cl->profile)))
		return 0;
	suspicion_case_release(sc);
	errno = ENOMEM;
	return -1;
}

void
suspicion_case_release(struct suspicion_case *sc)
{
	free(sc->instance_id);
	free(sc->claimed_at);
	free(sc->app_log);
	free(sc->profile);
	memset(sc, 0, sizeof(*sc));
}

/*
 * True when the console log holds an OK marker: a console log belongs to
 * one assignment (sentinel-poll archives it at start; libvirt truncates
 * it), so any OK in it is this assignment's, also one the sentinel had
 * not read yet when the VMM ended. A log that cannot be read proves
 * nothing. The path is the service user's to write into the ledger, and
 * the caller is root holding the store lock: it is opened as safeopen.h
 * says (no link, nothing but a regular file; a refusal goes to v for the
 * caller's warn), and only its last how->read_max bytes are read, so a
 * tenant's endless line costs milliseconds, not the lock.
 */
static bool
console_says_ok(const struct suspicion_case *sc,
    const struct suspicion_how *how, struct suspicion_verdict *v)
{
	const char *path = sc->app_log;
	size_t max = how->read_max != 0 ? how->read_max :
	    SUSPICION_READ_MAX, len = 0, n;
	unsigned long long start, from = 0;
	char *text, *p, *nl;
	struct stat st;
	bool ok = false;
	int fd;

	if (path == NULL)
		return false;
	if ((fd = safeopen_regular(path, &st)) == -1) {
		if (errno == IO_ENOTREG || errno == ELOOP) {
			v->console_err = errno;
			(void)snprintf(v->console_path,
			    sizeof(v->console_path), "%s", path);
		}
		return false;
	}
	/* Only what this assignment wrote: after the offset the claim
	 * recorded, in that file; a rotated or new file from its start. */
	start = sc->console_inode != 0 && st.st_ino == sc->console_inode ?
	    sc->console_offset : 0;
	text = safeopen_read_tail(fd, &st, start, max, &len, &from);
	close(fd);
	p = text;
	/* A tail cut by the bound starts inside a line: not a whole one. */
	if (text != NULL && from > start && (p = memchr(text, '\n', len)) !=
	    NULL)
		p++;
	for (; !ok && p != NULL && p < text + len; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(text + len - p))) == NULL)
			break;
		n = (size_t)(nl - p) + 1;
		ok = n <= CONSOLE_LINE_MAX && guestproto_marker_match(p, n,
		    NULL, NULL) == GUEST_MARKER_OK;
	}
	free(text);
	return ok;
}

/* True when the assignment lasted at most window seconds until now. */
static bool
within_window(const char *claimed_at, unsigned window,
    const struct timespec *now)
{
	struct timespec at;

	if (timefmt_parse(claimed_at, &at) < 0)
		return false;
	return now->tv_sec - at.tv_sec <= (time_t)window;
}

/* The rule's conditions that need no store. */
static bool
may_suspect(const struct suspicion_case *sc, const struct suspicion_how *how,
    const struct timespec *now, struct suspicion_verdict *v)
{
	const char *ended = how->ended != NULL ? how->ended : "unknown";

	/* suspect.trust_ok = false: an OK of the ended assignment does not
	 * count (SPEC 8.2). */
	if (sc->vf[0] == '\0' || (sc->ok && !how->ignore_ok) ||
	    !sc->provable)
		return false;
	if (strcmp(ended, "unclean") != 0 &&
	    !(strcmp(ended, "unknown") == 0 && how->on_unknown))
		return false;
	return within_window(sc->claimed_at, how->window, now) &&
	    (how->ignore_ok || !console_says_ok(sc, how, v));
}

/* True when h holds a failure of this very assignment, or the VF is
 * quarantined already (a suspicion would add nothing). */
static bool
failure_known(const struct health *h, const struct suspicion_case *sc)
{
	const struct vf_record *r = health_find(h, sc->vf);
	size_t i;

	if (r == NULL)
		return false;
	if (health_vf_quarantined(h, sc->vf))
		return true;
	for (i = 0; i < r->nfailures; i++)
		if (strcmp(r->failures[i].instance_id, sc->instance_id) == 0 &&
		    strcmp(r->failures[i].assigned_at, sc->claimed_at) == 0)
			return true;
	return false;
}

static void
failed(struct suspicion_verdict *v, struct store *s)
{
	v->err = errno != 0 ? errno : EIO;
	v->why = s->why;
}

/* A second suspicion: the VF quarantined, saved, audited with both. */
static void
quarantine_second(struct store *s, struct health *h,
    const struct suspect *first, const struct suspect *sp,
    struct suspicion_verdict *v)
{
	struct audit_event ev = { .command = "quarantine", .vf = sp->vf,
	    .reason = "a second suspicion from another assignment" };
	struct atomic_result res;
	bool changed = false;
	json_t *extra;

	if (healthrules_quarantine(h, sp->vf, &changed) < 0 ||
	    health_save(s, h, &res) < 0) {
		failed(v, s);
		return;
	}
	v->suspect = v->quarantined = true;
	extra = json_pack("{s:s, s:s, s:s, s:s}", "instance_id",
	    sp->instance_id, "assigned_at", sp->assigned_at, "source",
	    sp->source, "suspected_before", first->instance_id);
	ev.extra = extra;
	if (suspect_audit(s->dir, sp) < 0 || extra == NULL ||
	    auditlog_append(s->dir, &ev) < 0)
		failed(v, s);
	json_decref(extra);
}

/* Records sp (or quarantines on a second suspicion), given h and d. */
static void
record(struct store *s, struct health *h, struct suspects *d,
    const struct suspect *sp, struct suspicion_verdict *v)
{
	const struct suspect *first = suspects_find(d, sp->vf);
	struct atomic_result res;
	bool changed = false;

	if (first != NULL && (strcmp(first->instance_id, sp->instance_id) !=
	    0 || strcmp(first->assigned_at, sp->assigned_at) != 0)) {
		quarantine_second(s, h, first, sp, v);
		return;
	}
	if (first != NULL) {
		v->suspect = true;
		return;
	}
	if (suspects_add(d, sp, &changed) < 0 ||
	    suspects_save(s, d, &res) < 0) {
		failed(v, s);
		return;
	}
	v->suspect = true;
	if (suspect_audit(s->dir, sp) < 0)
		failed(v, s);
}

void
suspicion_decide(struct store *s, const struct suspicion_case *sc,
    const struct suspicion_how *how, struct suspicion_verdict *v)
{
	char ended_at[TIMEFMT_MAX];
	struct suspects d = { 0 };
	struct health h = { 0 };
	struct timespec now;
	struct suspect sp = { 0 };

	memset(v, 0, sizeof(*v));
	timefmt_now(&now);
	if (!may_suspect(sc, how, &now, v) ||
	    timefmt_format(&now, ended_at, sizeof(ended_at)) < 0)
		return;
	errno = 0;
	if (health_load(s, &h, how->threshold) < 0) {
		failed(v, s);
		return;
	}
	if (!failure_known(&h, sc) && suspects_load(s, &d) < 0)
		failed(v, s);
	else if (!failure_known(&h, sc)) {
		memcpy(sp.vf, sc->vf, sizeof(sp.vf));
		sp.instance_id = sc->instance_id;
		sp.assigned_at = sc->claimed_at;
		sp.ended_at = ended_at;
		sp.ended = (char *)(how->ended != NULL ? how->ended :
		    "unknown");
		sp.source = (char *)(how->source != NULL ? how->source : "");
		sp.profile = sc->profile;
		record(s, &h, &d, &sp, v);
	}
	suspects_release(&d);
	health_release(&h);
}
