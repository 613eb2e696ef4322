/*
 * poller.c - the scan loop of sentinel-poll (poller.h): the targets and
 * their VMM liveness gate, the guest checks (vsock) and console-log
 * passes (log; the endpoint first, SPEC 6.2), the confirmation of
 * failed/ok verdicts, the wait for the vendor-VFIO framework and the
 * metrics textfile.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpool.h"
#include "confirm.h"
#include "guestproto.h"
#include "io.h"
#include "jsonl.h"
#include "logtail.h"
#include "poller.h"
#include "pollstat.h"
#include "sig.h"
#include "sysfs.h"
#include "wait.h"

#define REQUEST "{\"method\":\"GetGPUInitStatus\"}\n"
#define CONFIRM_EVERY_MS 250		/* batch the re-reads of the targets */
#define FAIL_LOG_MS (5 * 60 * 1000)	/* a check failure's warn, per target */

struct poller {
	const struct poller_conf *conf;	/* borrowed */
	struct targets_source source;	/* conf's, with stdin_list */
	struct targets stdin_targets;	/* --targets -, read once */
	struct checkpool pool;		/* concurrency checks, tags: targets */
	struct confirm_batch pend;	/* failed/ok lines to confirm */
	struct logtails tails;		/* the log source */
	struct stop stop;		/* why the loop ends (wait.h) */
	struct target_marks skipped;	/* VMM not alive, reported */
	struct target_marks failing;	/* checks failed: why, when reported */
	long long failing_swept;	/* when failing was last swept */
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
	stop_set(&p->stop, STOP_MEMORY, ENOMEM);
}

static bool
stopping(struct poller *p)
{
	return stop_check(&p->stop);
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

/* The target has a transport: an endpoint, a console log or both. */
static bool
has_transport(struct poller *p, const struct target *t)
{
	if (uses_agent(p, t) || uses_log(p, t))
		return true;
	tell(p, &(struct poller_event){ .kind = POLLER_EV_NO_ENDPOINT,
	    .t = t });
	return false;
}

/*
 * The VMM liveness gate (SPEC 4.4): only a target whose VMM is alive is
 * polled. A stopped or killed VM can keep a stale claim, a VMM killed
 * with SIGKILL leaves its socket file behind, and the dead VM's vsock
 * CID may since belong to an unrelated guest, whose answer would be
 * charged to the old VF. A skip is new (not repeat) once per target
 * skipped in a row (p->skipped).
 */
static bool
vmm_alive(struct poller *p, const struct vmm_listeners *l,
    const struct target *t)
{
	const char *cs = t->control_socket, *why;
	enum vmm_state st;
	int err, first;

	if (cs == NULL || cs[0] == '\0') {
		tell(p, &(struct poller_event){ .kind = POLLER_EV_NO_CONTROL,
		    .t = t });
		return false;
	}
	st = vmm_liveness(l, cs, &why);
	err = errno;
	if (st == VMM_ALIVE) {
		if (target_marks_has(&p->skipped, t))
			tell(p, &(struct poller_event){
			    .kind = POLLER_EV_VMM_BACK, .t = t });
		return true;
	}
	if ((first = target_marks_set(&p->skipped, t)) == -1)
		out_of_memory(p);
	tell(p, &(struct poller_event){ .kind = POLLER_EV_VMM_DOWN, .t = t,
	    .vmm = st, .why = why, .err = err, .repeat = first != 1 });
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
 * Lists the targets: those with a transport and, with gate (a scan),
 * whose VMM is alive. The re-read that confirms an assignment has no
 * gate: it only compares the VF and claim time, and must not probe a
 * VMM a second time. quiet: bad --targets lines are not reported again.
 */
static int
list_targets(struct poller *p, struct targets *ts, bool quiet, bool gate,
    struct targets_why *why)
{
	struct targets all = { 0 };
	struct vmm_listeners l = { 0 };
	int rc;
	size_t i;

	rc = targets_list(&p->source, &all, quiet ? NULL : bad_line, p, why);
	if (rc == -1 && why->nomem)
		out_of_memory(p);
	if (rc == 0 && gate)
		load_listeners(p, &l);
	for (i = 0; rc == 0 && i < all.n; i++) {
		if (!has_transport(p, &all.v[i]) ||
		    (gate && !vmm_alive(p, &l, &all.v[i])))
			continue;
		if (targets_add(ts, &all.v[i]) == -1) {
			out_of_memory(p);
			rc = -1;
		}
	}
	if (rc == 0 && gate) {
		target_marks_sweep(&p->skipped);
		p->stat.targets = all.n;
		p->stat.polled = ts->n;
	}
	vmm_listeners_release(&l);
	targets_release(&all);
	return rc;
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
		stop_set(&p->stop, STOP_OUTPUT, errno);
}

/* detail is the nvrm of a failed check or the error of an rpc_error. */
static void
emit_check(struct poller *p, const struct target *t,
    enum checkpool_verdict v, const char *detail)
{
	json_t *o;

	o = json_pack("{s:s, s:s, s:s, s:s}", "check",
	    checkpool_verdict_name(v), "vf_address", t->vf, "instance_id",
	    t->instance_id, "assigned_at", t->claimed_at);
	if (o != NULL && detail != NULL && json_object_set_new(o,
	    v == CP_FAILED ? "nvrm" : "error",
	    jsonl_string_lossy(detail, strlen(detail))) == -1) {
		json_decref(o);
		o = NULL;
	}
	emit(p, o);
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
		target_marks_sweep(&p->failing);
		p->failing_swept = now;
	}
	if ((m = target_marks_get(&p->failing, t)) == NULL) {
		out_of_memory(p);
		return;
	}
	why = why != NULL ? why : "";
	if ((same = target_mark_repeat(m, why, now, FAIL_LOG_MS)) == -1)
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
	if (v == CP_RPC_ERROR)
		check_failed(p, t, detail);
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

	if (p->pend.n == 0)
		return;
	listed = list_targets(p, &now, true, false, &why) == 0;
	for (i = 0; i < p->pend.n; i++)
		confirm(p, &p->pend.v[i], listed ? &now : NULL, why.text);
	confirm_clear(&p->pend);
	targets_release(&now);
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

/* A check ended (checkpool_done_fn): record its verdict. */
static void
check_done(void *arg, const void *tag, enum checkpool_verdict v,
    const char *detail)
{
	if (v == CP_OK || v == CP_FAILED || v == CP_UNKNOWN)
		agent_answered(arg, tag);
	record(arg, tag, v, detail);
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
		stop_set(&p->stop, STOP_PEER, 0);
	}
	return r;
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

/* A console log that cannot be opened (yet) or read (logtail_error_fn). */
static void
log_error(void *arg, const char *path, bool opening, int err)
{
	tell(arg, &(struct poller_event){ .kind = opening ?
	    POLLER_EV_LOG_OPEN : POLLER_EV_LOG_READ, .path = path,
	    .err = err });
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

/* One pass over every target's console log (logtail.h): the markers,
 * then the guest kernel's own line as a check line of its own. */
static void
log_scan(struct poller *p, const struct targets *ts)
{
	const struct target *t;
	struct logtail_file *f;
	size_t i;

	for (i = 0; i < ts->n && !stopping(p); i++) {
		t = &ts->v[i];
		if (!uses_log(p, t))
			continue;
		f = logtails_get(&p->tails, t->instance_id, t->vf,
		    t->claimed_at);
		if (f == NULL || logtails_pass(&p->tails, f, t->app_log,
		    log_error, p) == -1) {
			out_of_memory(p);
			return;
		}
		if (f->lt.last == GUEST_MARKER_FAILED)
			record(p, t, CP_FAILED, f->lt.nvrm);
		else if (f->lt.last == GUEST_MARKER_OK)
			record(p, t, CP_OK, NULL);
		if (kernel_counts(p, f))
			record(p, t, CP_FAILED, f->lt.kernel);
	}
	if (!stopping(p))
		logtails_sweep(&p->tails);
}

/* --- the scan loop ------------------------------------------------------ */

static void
scan(struct poller *p)
{
	struct targets ts = { 0 };
	long long start = io_now_ms();
	struct targets_why why;

	if (list_targets(p, &ts, false, true, &why) == -1) {
		if (p->stop.why == STOP_MEMORY)
			goto out;
		tell(p, &(struct poller_event){ .kind = POLLER_EV_LIST_FAILED,
		    .why = why.text });
		emit(p, json_pack("{s:s, s:o}", "check", "list_error", "error",
		    jsonl_string_lossy(why.text, strlen(why.text))));
	} else {
		if (!p->conf->no_agent)
			vsock_scan(p, &ts);
		if (!p->conf->no_log && !stopping(p))
			log_scan(p, &ts);
	}
	flush_pending(p);
	tell(p, &(struct poller_event){ .kind = POLLER_EV_SCAN,
	    .listed = p->stat.targets, .polled = ts.n,
	    .ms = io_now_ms() - start });
out:
	targets_release(&ts);
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
	if (!present)
		p->stat.targets = p->stat.polled = 0;
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
	return stop_exit_code(&p->stop);
}

/* --- setup -------------------------------------------------------------- */

/* --targets -: stdin is read once, at the start. 0 or -1/ENOMEM. */
static int
read_stdin(struct poller *p)
{
	struct targets_why why;

	if (p->source.path == NULL || strcmp(p->source.path, "-") != 0 ||
	    targets_read_fd(STDIN_FILENO, &p->stdin_targets, bad_line, p,
	    &why) == 0)
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
	if (checkpool_init(&p->pool, conf->concurrency, REQUEST) == -1 ||
	    logtails_init(&p->tails) == -1 ||
	    read_stdin(p) == -1) {
		poller_free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void
poller_free(struct poller *p)
{
	if (p == NULL)
		return;
	checkpool_release(&p->pool);
	confirm_release(&p->pend);
	target_marks_release(&p->skipped);
	target_marks_release(&p->failing);
	logtails_release(&p->tails);
	targets_release(&p->stdin_targets);
	free(p);
}
