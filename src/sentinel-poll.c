/*
 * sentinel-poll - ask every live claimed guest for its GPU init state.
 *
 * Every interval (the first scan at once) it lists its targets (the
 * claims ledger under a shared lock, or --targets JSON lines), polls
 * each one whose VMM is alive (vmm.h: its control socket is a listener in
 * PROC/net/unix, or one connect says so) over its endpoint (vsock:,
 * hvsock:, unix:) with {"method":"GetGPUInitStatus"}, at most
 * --concurrency checks in flight in one poll(2) loop, each bounded by
 * --timeout in total, and writes one check line per target:
 *
 *	{"check":"failed","vf_address":...,"instance_id":...,
 *	 "assigned_at":...,"nvrm":"NVRM: ..."}
 *
 * check is ok, failed, unknown, rpc_error (with "error") or
 * unsupported_agent; a scan that cannot list its targets writes
 * {"check":"list_error","error":...}. A failed or ok line is written only
 * after re-reading the targets: it is dropped when the instance now holds
 * another VF or claim time. With --source log it tails each target's
 * console log (app_log) instead and writes failed/ok for marker lines.
 *
 * Exit codes: 0 (after --once, on SIGTERM/SIGINT, or on a host without
 * the vendor-VFIO vGPU framework), 64 usage, 71 OS error, 74 stdout
 * failed or its reader went away, 78 configuration.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpool.h"
#include "cli.h"
#include "conf.h"
#include "guestproto.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "logtail.h"
#include "sig.h"
#include "store.h"
#include "sysfs.h"
#include "targets.h"
#include "vmm.h"
#include "wait.h"

#define PROG "sentinel-poll"
#define REQUEST "{\"method\":\"GetGPUInitStatus\"}\n"
#define CONFIRM_EVERY_MS 250		/* batch the re-reads of the targets */
#define FD_SPARE 32			/* descriptors beside the checks in flight */

static const char usage[] =
    "usage: sentinel-poll [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                     [--lock-timeout S] [--log-level LEVEL]\n"
    "                     [--interval S] [--once] [--concurrency N]\n"
    "                     [--timeout S] [--targets FILE|-]\n"
    "                     [--source vsock|log] [--proc-root DIR]\n"
    "\n"
    "Asks every live claimed vGPU guest for its GPU init state and writes one\n"
    "check line each, for vfstore apply.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     configuration file (default $VFSENTINEL_CONF,\n"
    "                        else /etc/vfsentinel/vfsentinel.conf)\n"
    "  --data-dir DIR        host state directory; the claims ledger is\n"
    "                        DIR/gpu/vf-claims.json (default data_dir)\n"
    "  --sysfs-root DIR      prefix for /sys (default sysfs_root, else /)\n"
    "  --lock-timeout S      seconds to wait for the store lock (default 10);\n"
    "                        a scan that cannot get it is a list_error\n"
    "  --log-level LEVEL     debug, info, warn or error (default info)\n"
    "  --interval S          seconds between scan starts (default\n"
    "                        sentinel.interval, 5)\n"
    "  --once                exit 0 after one scan\n"
    "  --concurrency N       checks in flight (default sentinel.concurrency,\n"
    "                        64)\n"
    "  --timeout S           seconds per check, connect to reply (default\n"
    "                        sentinel.timeout, 5)\n"
    "  --targets FILE|-      read the targets from JSON lines instead of the\n"
    "                        claims ledger\n"
    "  --source vsock|log    where guest states come from: the guest agent,\n"
    "                        or the VM's console log (default vsock)\n"
    "  --proc-root DIR       read the Unix socket table from\n"
    "                        DIR/proc/net/unix, for tests (default /)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_INTERVAL = CLI_OPT_FIRST_FREE,
	OPT_ONCE,
	OPT_CONCURRENCY,
	OPT_TIMEOUT,
	OPT_TARGETS,
	OPT_SOURCE,
	OPT_PROC_ROOT
};

/* A failed/ok result waiting for its assignment to be confirmed. */
struct pending {
	const struct target *t;		/* borrowed from the scan's list */
	enum checkpool_verdict v;
	char *nvrm;			/* owned, NULL for ok */
};

struct poller {
	struct conf conf;
	unsigned interval;
	unsigned timeout;
	unsigned concurrency;
	bool once;
	bool log_source;
	struct targets_source source;	/* path NULL: the ledger; "-": stdin */
	const char *proc_root;		/* PROC is PROC_ROOT/proc */
	struct targets stdin_targets;	/* --targets -, read once */
	struct checkpool pool;		/* concurrency checks, tags: targets */
	struct pending *pend;		/* owned */
	size_t npend;
	long long pend_since;
	struct logtails tails;		/* --source log */
	sigset_t run_mask;		/* the mask with TERM/INT deliverable */
	bool peer_gone;			/* stdout's reader went away */
	bool out_failed;		/* stdout broke: exit 74 */
	struct target_marks skipped;	/* VMM not alive, warned about */
	bool table_warned;		/* PROC/net/unix unreadable, warned */
	size_t listed, polled;		/* targets of the last scan */
};

/* --- targets ------------------------------------------------------------ */

/* The target has a transport: an endpoint, or a console log. */
static bool
target_has_transport(const struct poller *p, const struct target *t)
{
	const char *via = p->log_source ? t->app_log : t->vsock;

	if (via == NULL || via[0] == '\0') {
		log_msg(LVL_DEBUG, "skipping target without an endpoint",
		    "{s:s, s:s}", "vf", t->vf, "instance_id", t->instance_id);
		return false;
	}
	return true;
}

/*
 * The VMM liveness gate (SPEC 4.4): only a target whose VMM is alive is
 * polled. A stopped or killed VM can keep a stale claim, a VMM killed
 * with SIGKILL leaves its socket file behind, and the dead VM's vsock
 * CID may since belong to an unrelated guest, whose answer would be
 * charged to the old VF. Skips warn once per target (p->skipped holds
 * those skipped in a row), then debug.
 */
static bool
vmm_alive(struct poller *p, const struct vmm_listeners *l,
    const struct target *t)
{
	const char *cs = t->control_socket, *why;
	enum vmm_state st;
	int err, first;

	if (cs == NULL || cs[0] == '\0') {
		log_msg(LVL_DEBUG, "skipping target without a control socket",
		    "{s:s, s:s}", "vf", t->vf, "instance_id", t->instance_id);
		return false;
	}
	st = vmm_liveness(l, cs, &why);
	err = errno;
	if (st == VMM_ALIVE)
		return true;
	if ((first = target_marks_set(&p->skipped, t)) == -1)
		die(EX_OSERR, "out of memory", NULL);
	log_msg(first ? LVL_WARN : LVL_DEBUG,
	    "skipping target: VMM not alive",
	    "{s:s, s:s, s:s, s:s, s:s, s:s*}", "vf", t->vf, "instance_id",
	    t->instance_id, "control_socket", cs, "vmm",
	    vmm_state_name(st), "reason", why, "error",
	    err ? strerror(err) : NULL);
	return false;
}

/* The listener table of this scan; unreadable, every check connects. */
static void
load_listeners(struct poller *p, struct vmm_listeners *l)
{
	if (vmm_listeners_load(l, p->proc_root) == 0) {
		p->table_warned = false;
		return;
	}
	if (errno == ENOMEM)
		die(EX_OSERR, "out of memory", NULL);
	log_msg(p->table_warned ? LVL_DEBUG : LVL_WARN,
	    "cannot read the Unix socket table; VMM liveness connects",
	    "{s:s, s:s}", "proc_root", p->proc_root, "error",
	    strerror(errno));
	p->table_warned = true;
}

/* A skipped --targets line (targets_bad_fn): a warning. */
static void
bad_line(void *arg, unsigned long lineno, const char *why)
{
	(void)arg;
	if (why == NULL)
		log_msg(LVL_WARN, "skipping over-long target line", "{s:I}",
		    "line", (json_int_t)lineno);
	else
		log_msg(LVL_WARN, "skipping bad target line", "{s:I, s:s}",
		    "line", (json_int_t)lineno, "error", why);
}

/*
 * Lists the targets (targets.h): those with an endpoint (or a console
 * log, for the log source) and, with gate (a scan), whose VMM is alive.
 * The re-read that confirms an assignment has no gate: it only compares
 * the VF and claim time, and must not probe a VMM a second time. quiet:
 * bad --targets lines are not warned about again. A ledger that does not
 * fit in memory is fatal (71).
 */
static int
scan_targets(struct poller *p, struct targets *ts, bool quiet, bool gate,
    struct targets_why *why)
{
	struct targets all = { 0 };
	struct vmm_listeners l = { 0 };
	int rc;
	size_t i;

	rc = targets_list(&p->source, &all, quiet ? NULL : bad_line, NULL,
	    why);
	if (rc == -1 && why->nomem)
		die(EX_OSERR, "out of memory", "{s:s}", "error", why->text);
	if (rc == 0 && gate)
		load_listeners(p, &l);
	for (i = 0; rc == 0 && i < all.n; i++) {
		if (!target_has_transport(p, &all.v[i]) ||
		    (gate && !vmm_alive(p, &l, &all.v[i])))
			continue;
		if (targets_add(ts, &all.v[i]) == -1) {
			snprintf(why->text, sizeof(why->text), "%s",
			    strerror(errno));
			rc = -1;
		}
	}
	if (rc == 0 && gate) {
		target_marks_sweep(&p->skipped);
		p->listed = all.n;
		p->polled = ts->n;
	}
	vmm_listeners_release(&l);
	targets_release(&all);
	return rc;
}

/* --- output ------------------------------------------------------------- */

static void
emit(struct poller *p, json_t *o)
{
	if (o == NULL) {
		log_msg(LVL_ERROR, "cannot build check line", NULL);
		return;
	}
	if (!p->out_failed && jsonl_write(stdout, o) == -1) {
		log_msg(LVL_ERROR, "write stdout failed", "{s:s}", "error",
		    strerror(errno));
		p->out_failed = true;
	}
	json_decref(o);
}

static void
emit_list_error(struct poller *p, const char *why)
{
	emit(p, json_pack("{s:s, s:o}", "check", "list_error", "error",
	    jsonl_string_lossy(why, strlen(why))));
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
	if (o != NULL && detail != NULL)
		json_object_set_new(o, v == CP_FAILED ? "nvrm" : "error",
		    jsonl_string_lossy(detail, strlen(detail)));
	emit(p, o);
}

/*
 * A failed or ok verdict waits for the next confirmation batch; the
 * others are written at once. Out of memory is fatal (71).
 */
static void
record(struct poller *p, const struct target *t,
    enum checkpool_verdict v, const char *detail)
{
	struct pending *pe;

	if (v == CP_RPC_ERROR)
		log_msg(LVL_DEBUG, "cannot query the guest agent",
		    "{s:s, s:s}", "instance_id", t->instance_id, "error",
		    detail);
	if (v != CP_FAILED && v != CP_OK) {
		emit_check(p, t, v, detail);
		return;
	}
	pe = reallocarray(p->pend, p->npend + 1, sizeof(*pe));
	if (pe == NULL)
		die(EX_OSERR, "out of memory", NULL);
	p->pend = pe;
	pe = &p->pend[p->npend];
	pe->t = t;
	pe->v = v;
	pe->nvrm = NULL;
	if (v == CP_FAILED && (pe->nvrm = strdup(detail ? detail : "")) == NULL)
		die(EX_OSERR, "out of memory", NULL);
	if (p->npend++ == 0)
		p->pend_since = io_now_ms();
}

/*
 * Upstream's assignment confirmation: a report is dropped when the
 * instance now holds another VF or claim time, and still made when the
 * instance is gone (a released wedge is still a wedge).
 */
static void
confirm(struct poller *p, const struct pending *pe,
    const struct targets *now, const char *why)
{
	const struct target *t = pe->t, *cur;
	const char *action = pe->v == CP_FAILED ? "init_failure" :
	    "init_success";

	if (now == NULL) {
		log_msg(LVL_WARN, "could not confirm assignment; dropping "
		    "report", "{s:s, s:s, s:s, s:s}", "action", action, "vf",
		    t->vf, "instance_id", t->instance_id, "error", why);
		return;
	}
	cur = targets_find(now, t->instance_id);
	if (cur != NULL && (strcmp(cur->vf, t->vf) != 0 ||
	    strcmp(cur->claimed_at, t->claimed_at) != 0)) {
		log_msg(LVL_INFO, "skipping report: assignment changed during "
		    "poll", "{s:s, s:s, s:s}", "action", action, "vf", t->vf,
		    "instance_id", t->instance_id);
		return;
	}
	emit_check(p, t, pe->v, pe->nvrm);
}

/* Re-reads the targets once and writes every confirmed pending line. */
static void
flush_pending(struct poller *p)
{
	struct targets now = { 0 };
	struct targets_why why;
	bool listed;
	size_t i;

	if (p->npend == 0)
		return;
	listed = scan_targets(p, &now, true, false, &why) == 0;
	for (i = 0; i < p->npend; i++) {
		confirm(p, &p->pend[i], listed ? &now : NULL, why.text);
		free(p->pend[i].nvrm);
	}
	p->npend = 0;
	targets_release(&now);
}

/* --- guest checks ------------------------------------------------------- */

/* A check ended (checkpool_done_fn): record its verdict. */
static void
check_done(void *arg, const void *tag, enum checkpool_verdict v,
    const char *detail)
{
	record(arg, tag, v, detail);
}

/* --- the scan loop ------------------------------------------------------ */

static bool
stopping(const struct poller *p)
{
	return sig_stop != 0 || p->peer_gone || p->out_failed;
}

/* Waits in ppoll(2), the only place TERM/INT are delivered. */
static int
poller_wait(struct poller *p, struct pollfd *pfds, size_t n, long long ms)
{
	bool gone = false;
	int r;

	r = wait_fds(pfds, n, STDOUT_FILENO, ms, &p->run_mask, &gone);
	if (gone && !p->peer_gone)
		log_msg(LVL_INFO, "stdout reader went away", NULL);
	p->peer_gone = p->peer_gone || gone;
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
		t = &ts->v[(*next)++];
		checkpool_start(&p->pool, i, t->vsock, p->conf.vsock_port,
		    io_now_ms() + p->timeout * 1000LL, t, check_done, p);
	}
}

/* One round: wait for events or the nearest deadline, then advance. */
static void
check_round(struct poller *p)
{
	long long ms = checkpool_prepare(&p->pool);

	if (poller_wait(p, p->pool.pfds, p->pool.n, ms) == -1 &&
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
		if (p->npend > 0 && io_now_ms() - p->pend_since >=
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
	(void)arg;
	if (opening)
		log_msg(LVL_DEBUG, "cannot open console log", "{s:s, s:s}",
		    "path", path, "error", strerror(err));
	else
		log_msg(LVL_WARN, "cannot read console log", "{s:s, s:s}",
		    "path", path, "error", strerror(err));
}

/* One pass over every target's console log (logtail.h). */
static void
log_scan(struct poller *p, const struct targets *ts)
{
	const struct target *t;
	struct logtail_file *f;
	size_t i;

	for (i = 0; i < ts->n && !stopping(p); i++) {
		t = &ts->v[i];
		f = logtails_get(&p->tails, t->instance_id, t->vf,
		    t->claimed_at);
		if (f == NULL || logtails_pass(&p->tails, f, t->app_log,
		    log_error, NULL) == -1)
			die(EX_OSERR, "out of memory", NULL);
		if (f->lt.last == GUEST_MARKER_FAILED)
			record(p, t, CP_FAILED, f->lt.nvrm);
		else if (f->lt.last == GUEST_MARKER_OK)
			record(p, t, CP_OK, NULL);
	}
	if (!stopping(p))
		logtails_sweep(&p->tails);
}

/* --- main --------------------------------------------------------------- */

static void
scan(struct poller *p)
{
	struct targets ts = { 0 };
	long long start = io_now_ms();
	struct targets_why why;

	if (scan_targets(p, &ts, false, true, &why) == -1) {
		log_msg(LVL_WARN, "vGPU sentinel failed to list instances",
		    "{s:s}", "error", why.text);
		emit_list_error(p, why.text);
	} else if (p->log_source)
		log_scan(p, &ts);
	else
		vsock_scan(p, &ts);
	flush_pending(p);
	log_msg(LVL_DEBUG, "scan finished", "{s:I, s:I, s:I}", "targets",
	    (json_int_t)p->listed, "polled", (json_int_t)ts.n, "ms",
	    (json_int_t)(io_now_ms() - start));
	targets_release(&ts);
}

/* Sleeps until the next scan, watching stdout's reader and signals. */
static void
wait_next_scan(struct poller *p, long long at)
{
	struct pollfd pfd;
	long long left;

	while (!stopping(p) && (left = at - io_now_ms()) > 0)
		poller_wait(p, &pfd, 0, left);
}

/* Scans until --once, a signal or a dead stdout. The exit code. */
static int
run(struct poller *p)
{
	long long start;

	for (;;) {
		start = io_now_ms();
		scan(p);
		if (!p->once)
			wait_next_scan(p, start + p->interval * 1000LL);
		if (p->out_failed || p->peer_gone)
			return EX_IOERR;
		if (p->once || sig_stop)
			return EX_OK;
	}
}

static void
parse_source(const struct cli *cli, struct poller *p, const char *arg)
{
	if (strcmp(arg, "log") == 0)
		p->log_source = true;
	else if (strcmp(arg, "vsock") == 0)
		p->log_source = false;
	else
		cli_usage_error(cli, "--source: expected vsock or log");
}

static void
parse_args(int argc, char **argv, struct poller *p)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "concurrency", required_argument, NULL, OPT_CONCURRENCY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "targets", required_argument, NULL, OPT_TARGETS },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
		{ 0 }
	};
	struct cli cli;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, "c:h", opts)) != -1) {
		switch (c) {
		case OPT_INTERVAL:
			p->interval = cli_uint(&cli, "--interval", optarg, 1,
			    86400);
			break;
		case OPT_ONCE:
			p->once = true;
			break;
		case OPT_CONCURRENCY:
			p->concurrency = cli_uint(&cli, "--concurrency",
			    optarg, 1, 4096);
			break;
		case OPT_TIMEOUT:
			p->timeout = cli_uint(&cli, "--timeout", optarg, 1,
			    3600);
			break;
		case OPT_TARGETS:
			p->source.path = optarg;
			break;
		case OPT_SOURCE:
			parse_source(&cli, p, optarg);
			break;
		case OPT_PROC_ROOT:
			p->proc_root = optarg;
			break;
		default:
			cli_bad_option(&cli, argv);
		}
	}
	if (optind < argc)
		cli_usage_error(&cli, "unexpected argument");
	cli_finish(&cli, &p->conf);
	p->source.lock_timeout = cli.lock_timeout;
	p->source.data_dir = p->conf.data_dir;
	p->source.stdin_list = &p->stdin_targets;
}

/* Options override the configuration; 0 means "not given". */
static void
apply_defaults(struct poller *p)
{
	if (p->interval == 0)
		p->interval = p->conf.interval;
	if (p->timeout == 0)
		p->timeout = p->conf.timeout;
	if (p->concurrency == 0)
		p->concurrency = p->conf.concurrency;
	if (p->interval == 0)
		p->interval = 1;
	if (p->timeout == 0)
		p->timeout = 1;
	if (p->concurrency == 0)
		p->concurrency = 1;
	if (p->proc_root == NULL)
		p->proc_root = "/";
}

/* TERM/INT only set a flag, and only arrive inside ppoll(2). */
static void
setup_signals(struct poller *p)
{
	cli_stop_signals(false);
	sig_stop_block(&p->run_mask);
	sig_stop_unblocked(&p->run_mask);
}

/*
 * Each check in flight holds one descriptor: raise the soft limit of
 * open files toward the hard one if needed, else lower the concurrency
 * (a check would otherwise fail with EMFILE).
 */
static void
fit_fd_limit(struct poller *p)
{
	size_t n = io_fd_limit_fit(p->concurrency, FD_SPARE);

	if (n == 0 || n >= p->concurrency)
		return;
	log_msg(LVL_WARN, "concurrency lowered to fit the open files limit",
	    "{s:i, s:i}", "concurrency", (int)p->concurrency, "limit",
	    (int)n);
	p->concurrency = (unsigned)n;
}

static void
poller_alloc(struct poller *p)
{
	struct targets_why why;

	fit_fd_limit(p);
	if (checkpool_init(&p->pool, p->concurrency, REQUEST) == -1 ||
	    (p->log_source && logtails_init(&p->tails) == -1))
		die(EX_OSERR, "out of memory", NULL);
	if (p->source.path != NULL && strcmp(p->source.path, "-") == 0 &&
	    targets_read_fd(STDIN_FILENO, &p->stdin_targets, bad_line, NULL,
	    &why) == -1)
		log_msg(LVL_WARN, "cannot read targets from stdin", "{s:s}",
		    "error", why.text);
}

static void
poller_release(struct poller *p)
{
	size_t i;

	checkpool_release(&p->pool);
	for (i = 0; i < p->npend; i++)
		free(p->pend[i].nvrm);
	target_marks_release(&p->skipped);
	logtails_release(&p->tails);
	free(p->pend);
	targets_release(&p->stdin_targets);
}

int
main(int argc, char **argv)
{
	struct poller p;
	int rc = EX_OK;

	cli_start(PROG);
	memset(&p, 0, sizeof(p));
	parse_args(argc, argv, &p);
	apply_defaults(&p);
	if (!sysfs_has_vgpu_framework(p.conf.sysfs_root)) {
		log_msg(LVL_INFO, "vGPU sentinel exiting: host has no vGPU "
		    "framework", "{s:s}", "sysfs_root", p.conf.sysfs_root);
	} else {
		setup_signals(&p);
		poller_alloc(&p);
		log_msg(LVL_INFO, "vGPU sentinel started", "{s:i, s:i, s:i}",
		    "interval", (int)p.interval, "timeout", (int)p.timeout,
		    "concurrency", (int)p.concurrency);
		rc = run(&p);
	}
	poller_release(&p);
	if (rc == EX_OK)
		cli_close_stdout();
	return rc;
}
