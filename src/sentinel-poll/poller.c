/*
 * poller.c - the scan loop of sentinel-poll (poller.h): the targets and
 * their gate (a source, a live VMM), the guest checks (vsock) and
 * console-log passes (log; the endpoint first, SPEC 6.2), the failures
 * reported again until the store holds them (SPEC 7.2), the reasons a
 * target is not checked (SPEC 7.1), the confirmation of failed/ok
 * verdicts, the wait for the vendor-VFIO framework and the metrics
 * textfile.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkline.h"
#include "checkpool.h"
#include "confirm.h"
#include "guestproto.h"
#include "endpoint.h"
#include "io.h"
#include "jsonl.h"
#include "logtail.h"
#include "opener.h"
#include "poller.h"
#include "pollstat.h"
#include "safeopen.h"
#include "sig.h"
#include "storeread.h"
#include "sysfs.h"
#include "unsaved.h"
#include "wait.h"

#define REQUEST "{\"method\":\"GetGPUInitStatus\"}\n"
#define CONFIRM_EVERY_MS 250		/* batch the re-reads of the targets */
#define FAIL_LOG_MS (5 * 60 * 1000)	/* a check failure's warn, per target */
#define HEALTH_WAIT_MS 250		/* the store lock, to read the health
					 * store; busy longer: report again */

/* Why one polled target of a scan cannot be fully checked, if it cannot:
 * the first reason that applies (pollstat.h order). */
struct note {
	enum pollstat_reason reason;	/* POLLSTAT_NONE: checked */
	enum poller_source source;
	enum logtail_error log;
	const char *path;		/* borrowed from the target */
	int err;
};

struct poller {
	const struct poller_conf *conf;	/* borrowed */
	struct targets_source source;	/* conf's, with stdin_list */
	struct targets stdin_targets;	/* --targets -, read once */
	struct checkpool pool;		/* concurrency checks, tags: targets */
	struct confirm_batch pend;	/* failed/ok lines to confirm */
	struct logtails tails;		/* the log source */
	struct unsaved unsaved;		/* failures the store may not hold */
	struct stop stop;		/* why the loop ends (wait.h) */
	struct target_marks skipped;	/* VMM not alive, reported */
	struct target_marks failing;	/* checks failed: why, when reported */
	struct target_marks unpolled[POLLSTAT_REASON_N];	/* reported */
	long long failing_swept;	/* when failing was last swept */
	const struct targets *polled;	/* the scan's polled targets */
	struct note *notes;		/* one per polled target */
	bool table_warned;		/* PROC/net/unix unreadable, reported */
	bool waiting;			/* no framework, reported */
	bool metrics_warned;		/* the last metrics write failed */
	struct pollstat stat;		/* what the textfile says */
};

static void
tell(struct poller *p, const struct poller_event *ev)
{
	p->conf->event(p->conf->arg, ev);
}

/* Out of memory: the loop stops (71). */
static void
out_of_memory(struct poller *p)
{
	wait_stop_set(&p->stop, STOP_MEMORY, ENOMEM);
}

static bool
stopping(struct poller *p)
{
	return wait_stop_check(&p->stop);
}

/* Waits in ppoll(2), the only place TERM/INT are delivered. */
static int
wait_events(struct poller *p, struct pollfd *pfds, size_t n, long long ms)
{
	bool gone = false;
	int r;

	r = wait_fds(pfds, n, p->conf->out_fd, ms, p->conf->run_mask, &gone);
	if (gone && p->stop.why != STOP_PEER) {
		tell(p, &(struct poller_event){ .kind = POLLER_EV_PEER_GONE });
		wait_stop_set(&p->stop, STOP_PEER, 0);
	}
	return r;
}

/*
 * A point between the parts of a long step (a console log's reads): a
 * ppoll(2) that does not wait lets a pending TERM/INT in. true when the
 * program must stop (logtail_stop_fn).
 */
static bool
stop_point(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd;

	if (!stopping(p))
		wait_events(p, &pfd, 0, 0);
	return stopping(p);
}

/* A nap in a store lock's wait, a stop let in (storeread_wait_fn). */
static int
lock_nap(void *arg, long long ms)
{
	struct poller *p = arg;
	struct pollfd pfd;

	if (!stopping(p))
		wait_events(p, &pfd, 0, ms);
	return stopping(p) ? -1 : 0;
}

/* --- targets ------------------------------------------------------------ */

/* The target's agent endpoint is polled (it has one, and the source
 * allows it). */
static bool
uses_agent(const struct poller *p, const struct target *t)
{
	return !p->conf->no_agent && t->vsock != NULL && t->vsock[0] != '\0';
}

/* The target's console log is read. */
static bool
uses_log(const struct poller *p, const struct target *t)
{
	return !p->conf->no_log && t->app_log != NULL &&
	    t->app_log[0] != '\0';
}

static bool
denied(int err)
{
	return err == EACCES || err == EPERM;
}

/* --- the opener (opener.h, SPEC 8.3) ------------------------------------- */

/*
 * What this process was denied (err), asked of the opener: its
 * descriptor, or -1 with errno err again where the opener has nothing
 * more to say (there is none, or no claim names path), else its own.
 */
static int
ask_opener(struct poller *p, enum opener_op op, const char *path, int err)
{
	int fd;

	if (!denied(err) || p->conf->opener == NULL) {
		errno = err;
		return -1;
	}
	fd = openreq_ask(p->conf->opener, op, path);
	/* A dead opener is a crash of half the program: the whole ends, and
	 * the supervisor starts both again (as after a kill -9 of the
	 * poller), rather than go on checking less. */
	if (fd == -1 && openreq_broken(p->conf->opener) &&
	    p->stop.why != STOP_OS) {
		tell(p, &(struct poller_event){
		    .kind = POLLER_EV_OPENER_GONE });
		wait_stop_set(&p->stop, STOP_OS, ECONNRESET);
	}
	if (fd == -1 && (errno == ECONNRESET || errno == EPERM))
		errno = err;
	return fd;
}

/* A console log (logtail_open_fn): opened by this process, else by the
 * opener where this process may not. */
static int
open_log(struct poller *p, const char *path, struct stat *st)
{
	int fd = safeopen_file(AT_FDCWD, path, SAFEOPEN_FOLLOW, st);

	if (fd != -1)
		return fd;
	if ((fd = ask_opener(p, OPENER_FILE, path, errno)) == -1)
		return -1;
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = IO_ENOTREG;
		return -1;
	}
	return fd;
}

/* An agent channel (guestcheck_dial_fn): as open_log(). */
static int
dial(void *arg, const struct endpoint *ep)
{
	int fd = endpoint_connect(ep);

	if (fd != -1 || ep->kind == EP_VSOCK)
		return fd;
	return ask_opener(arg, OPENER_CONNECT, ep->path, errno);
}

/* The liveness of the VMM of control socket cs: judged by this process,
 * else through the opener's O_PATH descriptor where it may not stat
 * it. */
static enum vmm_state
liveness(struct poller *p, const struct vmm_listeners *l, const char *cs,
    const char **why)
{
	enum vmm_state st = vmm_liveness(l, cs, why);
	int fd, err;

	if (st == VMM_ALIVE ||
	    (fd = ask_opener(p, OPENER_PATH, cs, errno)) == -1)
		return st;
	st = vmm_liveness_fd(l, cs, fd, why);
	err = errno;
	close(fd);
	errno = err;
	return st;
}

/*
 * t is not checked (or not fully) for ev's reason: counted, and reported
 * as new (not repeat) the first time, and again every FAIL_LOG_MS while
 * the target keeps that reason from scan to scan (p->unpolled, swept
 * after each scan).
 */
static void
unpolled(struct poller *p, struct poller_event *ev)
{
	struct target_mark *m;
	int same = 0;

	ev->kind = POLLER_EV_UNPOLLED;
	p->stat.unpolled[ev->reason]++;
	if ((m = targets_marks_get(&p->unpolled[ev->reason], ev->t)) == NULL ||
	    (same = targets_mark_repeat(m, pollstat_reason_name(ev->reason),
	    io_now_ms(), FAIL_LOG_MS)) == -1)
		out_of_memory(p);
	ev->repeat = same == 1;
	tell(p, ev);
}

/* The polled target t has reason r too (the first that applies wins). */
static void
note(struct poller *p, const struct target *t, const struct note *n)
{
	struct note *have;

	if (p->notes == NULL || t < p->polled->v ||
	    t >= p->polled->v + p->polled->n)
		return;
	have = &p->notes[t - p->polled->v];
	if (n->reason < have->reason)
		*have = *n;
}

/* After a scan: each polled target's reason, if it has one. */
static void
report_notes(struct poller *p)
{
	struct poller_event ev;
	const struct note *n;
	size_t i;

	for (i = 0; p->notes != NULL && i < p->polled->n; i++) {
		n = &p->notes[i];
		if (n->reason == POLLSTAT_NONE)
			continue;
		ev = (struct poller_event){ .t = &p->polled->v[i],
		    .reason = n->reason, .source = n->source, .log = n->log,
		    .path = n->path, .err = n->err };
		unpolled(p, &ev);
	}
}

/*
 * The VMM liveness gate (SPEC 4.4): only a target whose VMM is alive is
 * polled. A stopped or killed VM can keep a stale claim, a VMM killed
 * with SIGKILL leaves its socket file behind, and the dead VM's vsock
 * CID may since belong to an unrelated guest, whose answer would be
 * charged to the old VF. A socket the sentinel may not stat or connect
 * to is a permission problem, not a dead VM (SPEC 7.1).
 */
static bool
vmm_alive(struct poller *p, const struct vmm_listeners *l,
    const struct target *t)
{
	const char *cs = t->control_socket, *why;
	struct poller_event ev = { .t = t, .source = POLLER_SRC_CONTROL,
	    .path = cs };
	enum vmm_state st;

	if (cs == NULL || cs[0] == '\0') {
		ev.reason = POLLSTAT_VMM_UNCERTAIN;
		ev.source = POLLER_SRC_CLAIM;
		unpolled(p, &ev);
		return false;
	}
	st = liveness(p, l, cs, &why);
	ev.err = errno;
	if (st == VMM_ALIVE) {
		if (targets_marks_has(&p->skipped, t))
			tell(p, &(struct poller_event){
			    .kind = POLLER_EV_VMM_BACK, .t = t });
		return true;
	}
	if (targets_marks_set(&p->skipped, t) == -1)
		out_of_memory(p);
	ev.vmm = st;
	ev.why = why;
	ev.reason = denied(ev.err) ? POLLSTAT_PERMISSION : st == VMM_GONE ?
	    POLLSTAT_VMM_NOT_ALIVE : POLLSTAT_VMM_UNCERTAIN;
	unpolled(p, &ev);
	return false;
}

/* The listener table of this scan; unreadable, every check connects. */
static void
load_listeners(struct poller *p, struct vmm_listeners *l)
{
	if (vmm_listeners_load(l, p->conf->proc_root) == 0) {
		p->table_warned = false;
		return;
	}
	if (errno == ENOMEM)
		out_of_memory(p);
	tell(p, &(struct poller_event){ .kind = POLLER_EV_TABLE,
	    .err = errno, .repeat = p->table_warned });
	p->table_warned = true;
}

/* A skipped --targets line (targets_bad_fn). */
static void
bad_line(void *arg, unsigned long lineno, const char *why)
{
	tell(arg, &(struct poller_event){ .kind = POLLER_EV_BAD_LINE,
	    .lineno = lineno, .why = why });
}

/*
 * Lists every target (quiet: bad --targets lines are not reported
 * again). The re-read that confirms an assignment only compares the VF
 * and claim time, and must not probe a VMM a second time.
 */
static int
list_targets(struct poller *p, struct targets *all, bool quiet,
    struct targets_why *why)
{
	int rc;

	rc = targets_list(&p->source, all, quiet ? NULL : bad_line, p, why);
	if (rc == -1 && why->nomem)
		out_of_memory(p);
	return rc;
}

/*
 * The scan's gate: copies to ts the targets of all with a source and a
 * live VMM; each other one is reported with its reason.
 */
static void
gate_targets(struct poller *p, const struct targets *all,
    struct targets *ts)
{
	struct vmm_listeners l = { 0 };
	const struct target *t;
	size_t i;

	memset(p->stat.unpolled, 0, sizeof(p->stat.unpolled));
	load_listeners(p, &l);
	for (i = 0; i < all->n && !stopping(p); i++) {
		t = &all->v[i];
		if (!uses_agent(p, t) && !uses_log(p, t)) {
			unpolled(p, &(struct poller_event){ .t = t,
			    .reason = POLLSTAT_NO_SOURCE,
			    .source = POLLER_SRC_CLAIM });
			continue;
		}
		if (!vmm_alive(p, &l, t))
			continue;
		if (targets_add(ts, t) == -1)
			out_of_memory(p);
	}
	targets_marks_sweep(&p->skipped);
	p->stat.targets = all->n;
	p->stat.polled = ts->n;
	vmm_listeners_release(&l);
}

/* --- output ------------------------------------------------------------- */

static void
emit(struct poller *p, json_t *o)
{
	if (o == NULL)
		out_of_memory(p);
	else if (p->stop.why == STOP_OUTPUT)
		json_decref(o);
	else if (p->conf->emit(p->conf->arg, o) == -1)
		wait_stop_set(&p->stop, STOP_OUTPUT, errno);
}

/* detail is the nvrm of a failed check or the error of an rpc_error. */
static void
emit_check(struct poller *p, const struct target *t,
    enum checkpool_verdict v, const char *detail)
{
	emit(p, checkline_new((enum checkline_verdict)v, t->vf,
	    t->instance_id, t->claimed_at, detail));
}

/*
 * A check of t could not be made, for why: reported as new (not repeat) the
 * first time, when why changes, and once every FAIL_LOG_MS while it
 * keeps failing the same way. The marks of targets that did not fail
 * for FAIL_LOG_MS are forgotten.
 */
static void
check_failed(struct poller *p, const struct target *t, const char *why)
{
	long long now = io_now_ms();
	struct target_mark *m;
	int same;

	if (now - p->failing_swept >= FAIL_LOG_MS) {
		targets_marks_sweep(&p->failing);
		p->failing_swept = now;
	}
	if ((m = targets_marks_get(&p->failing, t)) == NULL) {
		out_of_memory(p);
		return;
	}
	why = why != NULL ? why : "";
	if ((same = targets_mark_repeat(m, why, now, FAIL_LOG_MS)) == -1)
		out_of_memory(p);
	tell(p, &(struct poller_event){ .kind = POLLER_EV_RPC_ERROR,
	    .t = t, .why = why, .repeat = same == 1 });
}

/* A failed or ok verdict waits for the next confirmation batch; the
 * others are written at once. */
static void
record(struct poller *p, const struct target *t,
    enum checkpool_verdict v, const char *detail)
{
	if (v != CP_FAILED && v != CP_OK)
		emit_check(p, t, v, detail);
	else if (confirm_add(&p->pend, t, v, detail) == -1)
		out_of_memory(p);
}

/*
 * Upstream's assignment confirmation (confirm.h): dropped when the
 * instance now holds another VF or claim time, still made when the
 * instance is gone (a released wedge is still a wedge).
 */
static void
confirm(struct poller *p, const struct pending *pe,
    const struct targets *now, const char *why)
{
	struct poller_event ev = { .t = pe->t, .why = why,
	    .action = pe->v == CP_FAILED ? "init_failure" : "init_success" };

	ev.kind = now == NULL ? POLLER_EV_UNCONFIRMED : POLLER_EV_CHANGED;
	if (now == NULL || confirm_judge(pe, now) == CONFIRM_CHANGED)
		tell(p, &ev);
	else
		emit_check(p, pe->t, pe->v, pe->nvrm);
}

/* Re-reads the targets once and writes every confirmed pending line. */
static void
flush_pending(struct poller *p)
{
	struct targets now = { 0 };
	struct targets_why why;
	bool listed;
	size_t i;

	if (p->pend.n == 0 || stopping(p))
		return;
	listed = list_targets(p, &now, true, &why) == 0;
	for (i = 0; i < p->pend.n; i++)
		confirm(p, &p->pend.v[i], listed ? &now : NULL, why.text);
	confirm_clear(&p->pend);
	targets_release(&now);
}

/* --- failures reported until the store holds them ----------------------- */

static void
keep_failure(struct poller *p, const struct target *t,
    enum unsaved_source src, const char *nvrm)
{
	if (unsaved_set(&p->unsaved, t, src, nvrm) == -1)
		out_of_memory(p);
}

/* Whether a failure of some listed assignment waits to be reported. */
static bool
any_unsaved(struct poller *p, const struct targets *all)
{
	struct unsaved_entry *e;
	bool any = false;
	size_t i;

	for (i = 0; i < all->n; i++)
		if ((e = unsaved_get(&p->unsaved, &all->v[i])) != NULL &&
		    unsaved_pending(e))
			any = true;
	return any;
}

/*
 * SPEC 7.2: each failure seen of a listed assignment (the console's in
 * this scan, or an agent's FAILED answer of an earlier scan) is reported
 * again until the store holds the assignment's failure, read under the
 * shared lock; the store unreadable or its lock busy, it is reported
 * (vfstore apply answers a repeat from its cache, at no cost). The
 * assignments no longer listed are forgotten.
 */
static void
report_unsaved(struct poller *p, const struct targets *all)
{
	struct storeread_health sh;
	struct unsaved_entry *e;
	const struct target *t;
	size_t i, k;

	if (!any_unsaved(p, all)) {
		unsaved_sweep(&p->unsaved);
		return;
	}
	if (storeread_health(&sh, p->conf->source.data_dir,
	    p->conf->threshold, HEALTH_WAIT_MS, lock_nap, p) == -1 &&
	    errno == ENOMEM)
		out_of_memory(p);
	for (i = 0; i < all->n && !stopping(p); i++) {
		t = &all->v[i];
		if ((e = unsaved_get(&p->unsaved, t)) == NULL ||
		    !unsaved_pending(e))
			continue;
		if (storeread_holds(&sh, t->vf, t->instance_id,
		    t->claimed_at)) {
			unsaved_saved(e);
			continue;
		}
		for (k = 0; k < UNSAVED_N; k++)
			if (e->nvrm[k] != NULL && (k != UNSAVED_AGENT ||
			    !e->fresh[k]))
				record(p, t, CP_FAILED, e->nvrm[k]);
	}
	storeread_release(&sh);
	unsaved_sweep(&p->unsaved);
}

/* --- guest checks ------------------------------------------------------- */

/*
 * The agent answered with a state: its console tail (a new one if need
 * be) remembers it for this assignment, for console_kernel_lines auto.
 */
static void
agent_answered(struct poller *p, const struct target *t)
{
	struct logtail_file *f;

	if (!uses_log(p, t))
		return;
	f = logtails_get(&p->tails, t->instance_id, t->vf, t->claimed_at);
	if (f == NULL)
		out_of_memory(p);
	else
		f->agent_answered = true;
}

/*
 * A check ended (checkpool_done_fn): record its verdict. A FAILED answer
 * is also kept until the store holds it, an OK one forgets it; an
 * endpoint the sentinel may not connect to is a permission reason.
 */
static void
check_done(void *arg, const void *tag, enum checkpool_verdict v,
    const char *detail, int err)
{
	struct poller *p = arg;
	const struct target *t = tag;

	if (v == CP_OK || v == CP_FAILED || v == CP_UNKNOWN)
		agent_answered(p, t);
	if (v == CP_FAILED)
		keep_failure(p, t, UNSAVED_AGENT, detail);
	else if (v == CP_OK)
		unsaved_clear(&p->unsaved, t, UNSAVED_AGENT);
	if (v == CP_RPC_ERROR && denied(err))
		note(p, t, &(struct note){ .reason = POLLSTAT_PERMISSION,
		    .source = POLLER_SRC_AGENT, .path = t->vsock, .err = err });
	else if (v == CP_RPC_ERROR)
		check_failed(p, t, detail);
	record(p, t, v, detail);
}

/* Starts checks until the slots are full or the targets run out. */
static void
fill_slots(struct poller *p, const struct targets *ts, size_t *next)
{
	const struct target *t;
	size_t i;

	for (i = 0; i < p->pool.n && *next < ts->n; i++) {
		if (p->pool.slots[i].gc.fd != -1)
			continue;
		while (*next < ts->n && !uses_agent(p, &ts->v[*next]))
			(*next)++;
		if (*next == ts->n)
			break;
		t = &ts->v[(*next)++];
		checkpool_start(&p->pool, i, t->vsock, p->conf->vsock_port,
		    io_now_ms() + p->conf->timeout * 1000LL, t, check_done, p);
	}
}

/* One round: wait for events or the nearest deadline, then advance. */
static void
check_round(struct poller *p)
{
	long long ms = checkpool_prepare(&p->pool);

	if (wait_events(p, p->pool.pfds, p->pool.n, ms) == -1 &&
	    errno == EINTR)
		return;
	checkpool_advance(&p->pool, check_done, p);
}

static void
vsock_scan(struct poller *p, const struct targets *ts)
{
	size_t next = 0;

	while (!stopping(p) && (next < ts->n || p->pool.busy > 0)) {
		fill_slots(p, ts, &next);
		if (p->pool.busy > 0)
			check_round(p);
		if (p->pend.n > 0 && io_now_ms() - p->pend.since >=
		    CONFIRM_EVERY_MS)
			flush_pending(p);
	}
	checkpool_abandon(&p->pool);
}

/* --- the console-log source --------------------------------------------- */

/* The target whose console log a pass reads, for its errors. */
struct log_pass {
	struct poller *p;
	const struct target *t;
};

/*
 * A console log that cannot be used (logtail_error_fn): denied is a
 * permission reason, anything else (not a regular file, missing, a read
 * error) console_unreadable.
 */
static void
log_error(void *arg, const char *path, enum logtail_error what, int err)
{
	struct log_pass *lp = arg;

	note(lp->p, lp->t, &(struct note){ .reason = denied(err) ?
	    POLLSTAT_PERMISSION : POLLSTAT_CONSOLE_UNREADABLE,
	    .source = POLLER_SRC_CONSOLE, .log = what,
	    .path = lp->t->app_log, .err = err });
	(void)path;
}

/* logtail_open_fn of a pass. */
static int
log_open(void *arg, const char *path, struct stat *st)
{
	struct log_pass *lp = arg;

	return open_log(lp->p, path, st);
}

static bool
log_stop(void *arg)
{
	return stop_point(((struct log_pass *)arg)->p);
}

/* Whether the pass's kernel line of f counts (SPEC 6.2). */
static bool
kernel_counts(const struct poller *p, const struct logtail_file *f)
{
	if (f->lt.kernel == NULL)
		return false;
	switch (p->conf->kernel_lines) {
	case POLLER_KL_ON:
		return true;
	case POLLER_KL_OFF:
		return false;
	case POLLER_KL_AUTO:
		break;
	}
	return !f->agent_answered;
}

/*
 * One pass over every target's console log (logtail.h), each at most
 * console_read_max bytes: an OK marker is written (it forgets the
 * console's failure), a FAILED marker and the guest kernel's own line
 * wait for the store's word (report_unsaved).
 */
static void
log_scan(struct poller *p, const struct targets *ts)
{
	struct log_pass lp = { .p = p };
	struct logtail_io io = { .max = p->conf->console_read_max,
	    .report = log_error, .stop = log_stop, .open = log_open,
	    .arg = &lp };
	const struct target *t;
	struct logtail_file *f;
	size_t i;

	for (i = 0; i < ts->n && !stopping(p); i++) {
		t = lp.t = &ts->v[i];
		if (!uses_log(p, t))
			continue;
		f = logtails_get(&p->tails, t->instance_id, t->vf,
		    t->claimed_at);
		if (f != NULL)
			logtails_start(f, t->console_inode,
			    t->console_offset);
		if (f == NULL || logtails_pass(&p->tails, f, t->app_log,
		    &io) == -1) {
			out_of_memory(p);
			return;
		}
		if (f->lt.last == GUEST_MARKER_FAILED) {
			keep_failure(p, t, UNSAVED_MARKER, f->lt.nvrm);
		} else if (f->lt.last == GUEST_MARKER_OK) {
			unsaved_clear(&p->unsaved, t, UNSAVED_MARKER);
			record(p, t, CP_OK, NULL);
		}
		if (kernel_counts(p, f))
			keep_failure(p, t, UNSAVED_KERNEL, f->lt.kernel);
	}
	if (!stopping(p))
		logtails_sweep(&p->tails);
}

/* --- the scan loop ------------------------------------------------------ */

/* The scan of the targets listed (all): the polled ones' checks and
 * console passes, the failures to report again, then the reasons. */
static void
scan_listed(struct poller *p, const struct targets *all)
{
	struct targets ts = { 0 };
	long long start = io_now_ms();
	size_t i;

	gate_targets(p, all, &ts);
	p->polled = &ts;
	if (ts.n > 0 && (p->notes = calloc(ts.n, sizeof(*p->notes))) == NULL)
		out_of_memory(p);
	for (i = 0; p->notes != NULL && i < ts.n; i++)
		p->notes[i].reason = POLLSTAT_NONE;
	if (!p->conf->no_agent && !stopping(p))
		vsock_scan(p, &ts);
	if (!p->conf->no_log && !stopping(p))
		log_scan(p, &ts);
	if (!stopping(p))
		report_unsaved(p, all);
	flush_pending(p);
	if (!stopping(p))
		report_notes(p);
	for (i = 0; i < POLLSTAT_REASON_N && !stopping(p); i++)
		targets_marks_sweep(&p->unpolled[i]);
	tell(p, &(struct poller_event){ .kind = POLLER_EV_SCAN,
	    .listed = all->n, .polled = ts.n, .ms = io_now_ms() - start });
	free(p->notes);
	p->notes = NULL;
	p->polled = NULL;
	targets_release(&ts);
}

static void
scan(struct poller *p)
{
	struct targets all = { 0 };
	struct targets_why why;

	if (list_targets(p, &all, false, &why) == 0) {
		scan_listed(p, &all);
	} else if (p->stop.why == RUNNING) {
		tell(p, &(struct poller_event){ .kind = POLLER_EV_LIST_FAILED,
		    .why = why.text });
		emit(p, checkline_list_error(why.text));
	}
	targets_release(&all);
}

/*
 * Whether a VF has the vendor-VFIO framework now. The waiting engine
 * (SPEC 4.4) tells so each time the framework goes away, and again when
 * it comes back; while it waits nothing is listed.
 */
static bool
framework_check(struct poller *p)
{
	bool present = sysfs_has_vgpu_framework(p->conf->sysfs_root);

	if (present == p->waiting)
		tell(p, &(struct poller_event){ .kind = present ?
		    POLLER_EV_APPEARED : POLLER_EV_WAITING });
	p->waiting = !present;
	p->stat.framework_present = present;
	if (!present) {
		p->stat.targets = p->stat.polled = 0;
		memset(p->stat.unpolled, 0, sizeof(p->stat.unpolled));
	}
	return present;
}

/* Rewrites the metrics textfile; a failure is reported once until a write
 * works again. */
static void
write_metrics(struct poller *p)
{
	if (p->conf->metrics == NULL)
		return;
	p->stat.last_scan = time(NULL);
	if (pollstat_write(&p->stat, p->conf->metrics) == 0) {
		p->metrics_warned = false;
		return;
	}
	if (errno == ENOMEM)
		out_of_memory(p);
	else if (!p->metrics_warned)
		tell(p, &(struct poller_event){ .kind = POLLER_EV_METRICS,
		    .path = p->conf->metrics, .err = errno });
	p->metrics_warned = true;
}

/* Sleeps until at, watching the output's reader and signals. */
static void
wait_until(struct poller *p, long long at)
{
	struct pollfd pfd;
	long long left;

	while (!stopping(p) && (left = at - io_now_ms()) > 0)
		wait_events(p, &pfd, 0, left);
}

int
poller_run(struct poller *p)
{
	long long start;
	unsigned pause;

	while (!stopping(p)) {
		start = io_now_ms();
		pause = p->conf->recheck;
		if (framework_check(p)) {
			scan(p);
			pause = p->conf->interval;
		}
		write_metrics(p);
		if (p->conf->once)
			break;
		wait_until(p, start + pause * 1000LL);
	}
	return wait_exit_code(&p->stop);
}

/* --- setup -------------------------------------------------------------- */

/* stdin can be read, or the program must stop (targets_ready_fn): the
 * wait is a ppoll(2), where a stop signal gets in. */
static int
stdin_ready(void *arg, int fd)
{
	struct poller *p = arg;
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN } };

	while (!stopping(p) && pfd[0].revents == 0)
		wait_events(p, pfd, 1, 1000);
	return stopping(p) ? -1 : 0;
}

/* --targets -: stdin is read once, at the start, until its end or a
 * stop. 0 or -1/ENOMEM. */
static int
read_stdin(struct poller *p)
{
	struct targets_why why;

	if (p->source.path == NULL || strcmp(p->source.path, "-") != 0 ||
	    targets_read_fd(STDIN_FILENO, &p->stdin_targets, bad_line, p,
	    stdin_ready, &why) == 0 || stopping(p))
		return 0;
	if (why.nomem)
		return -1;
	tell(p, &(struct poller_event){ .kind = POLLER_EV_STDIN,
	    .why = why.text });
	return 0;
}

struct poller *
poller_new(const struct poller_conf *conf)
{
	struct poller *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->conf = conf;
	p->source = conf->source;
	p->source.stdin_list = &p->stdin_targets;
	p->source.wait = lock_nap;
	p->source.wait_arg = p;
	if (checkpool_init(&p->pool, conf->concurrency, REQUEST) == -1 ||
	    logtails_init(&p->tails) == -1 ||
	    read_stdin(p) == -1) {
		poller_free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->pool.dial = dial;
	p->pool.dial_arg = p;
	return p;
}

void
poller_free(struct poller *p)
{
	size_t i;

	if (p == NULL)
		return;
	checkpool_release(&p->pool);
	confirm_release(&p->pend);
	targets_marks_release(&p->skipped);
	targets_marks_release(&p->failing);
	for (i = 0; i < POLLSTAT_REASON_N; i++)
		targets_marks_release(&p->unpolled[i]);
	unsaved_release(&p->unsaved);
	logtails_release(&p->tails);
	targets_release(&p->stdin_targets);
	free(p);
}
