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
 * after re-reading the targets (confirm.h): it is dropped when the
 * instance now holds another VF or claim time. With --source log it
 * tails each target's console log (app_log) instead and writes failed/ok
 * for marker lines.
 *
 * While no VF has the vendor-VFIO vGPU framework (SR-IOV is often
 * enabled after the services start at boot) it polls nothing and
 * re-checks sysfs every --framework-recheck seconds; scans start when
 * VFs appear and stop again if they go away. --metrics-file is rewritten
 * after each scan or re-check (pollstat.h).
 *
 * Exit codes: 0 (after --once, or on SIGTERM/SIGINT), 64 usage, 71 OS
 * error, 74 stdout failed or its reader went away, 78 configuration.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpool.h"
#include "cli.h"
#include "confirm.h"
#include "conf.h"
#include "guestproto.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "logtail.h"
#include "pollstat.h"
#include "sig.h"
#include "sysfs.h"
#include "targets.h"
#include "vmm.h"
#include "wait.h"

#define PROG "sentinel-poll"
#define REQUEST "{\"method\":\"GetGPUInitStatus\"}\n"
#define CONFIRM_EVERY_MS 250		/* batch the re-reads of the targets */
#define FD_SPARE 32			/* descriptors beside the checks in flight */
#define MAX_SECONDS 86400		/* --interval, --framework-recheck */

static const char usage[] =
    "usage: sentinel-poll [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                     [--lock-timeout S] [--log-level LEVEL]\n"
    "                     [--interval S] [--once] [--concurrency N]\n"
    "                     [--timeout S] [--targets FILE|-]\n"
    "                     [--source vsock|log] [--proc-root DIR]\n"
    "                     [--framework-recheck S] [--metrics-file PATH]\n"
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
    "  --once                exit 0 after one scan (at once, with no output,\n"
    "                        on a host without the vGPU framework)\n"
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
    "  --framework-recheck S seconds between sysfs re-checks while no VF has\n"
    "                        the vGPU framework (default\n"
    "                        sentinel.framework_recheck, 60)\n"
    "  --metrics-file PATH   rewrite this Prometheus textfile after each scan\n"
    "                        or re-check\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_INTERVAL = CLI_OPT_FIRST_FREE,
	OPT_ONCE,
	OPT_CONCURRENCY,
	OPT_TIMEOUT,
	OPT_TARGETS,
	OPT_SOURCE,
	OPT_PROC_ROOT,
	OPT_RECHECK,
	OPT_METRICS
};

struct poller {
	struct conf conf;
	unsigned interval;
	unsigned timeout;
	unsigned concurrency;
	unsigned recheck;		/* --framework-recheck */
	bool once;
	bool log_source;
	const char *metrics;		/* --metrics-file, or NULL */
	struct targets_source source;	/* path NULL: the ledger; "-": stdin */
	const char *proc_root;		/* PROC is PROC_ROOT/proc */
	struct targets stdin_targets;	/* --targets -, read once */
	struct checkpool pool;		/* concurrency checks, tags: targets */
	struct confirm_batch pend;	/* failed/ok lines to confirm */
	struct logtails tails;		/* --source log */
	sigset_t run_mask;		/* the mask with TERM/INT deliverable */
	struct stop stop;		/* why the loop ends (wait.h) */
	struct target_marks skipped;	/* VMM not alive, warned about */
	bool table_warned;		/* PROC/net/unix unreadable, warned */
	bool waiting;			/* no framework, told at info */
	bool metrics_warned;		/* the last metrics write failed */
	struct pollstat stat;		/* what --metrics-file says */
};

/* --- targets ------------------------------------------------------------ */

/* Out of memory: the loop stops and the program exits 71. */
static void
out_of_memory(struct poller *p)
{
	stop_set(&p->stop, STOP_MEMORY, ENOMEM);
}

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
		out_of_memory(p);
	log_msg(first == 1 ? LVL_WARN : LVL_DEBUG,
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
		out_of_memory(p);
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
 * fit in memory stops the program (71).
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
		out_of_memory(p);
	if (rc == 0 && gate)
		load_listeners(p, &l);
	for (i = 0; rc == 0 && i < all.n; i++) {
		if (!target_has_transport(p, &all.v[i]) ||
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
	if (o == NULL) {
		log_msg(LVL_ERROR, "cannot build check line", NULL);
		return;
	}
	if (p->stop.why != STOP_OUTPUT && jsonl_write(stdout, o) == -1) {
		log_msg(LVL_ERROR, "write stdout failed", "{s:s}", "error",
		    strerror(errno));
		stop_set(&p->stop, STOP_OUTPUT, errno);
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

/* A failed or ok verdict waits for the next confirmation batch; the
 * others are written at once. */
static void
record(struct poller *p, const struct target *t,
    enum checkpool_verdict v, const char *detail)
{
	if (v == CP_RPC_ERROR)
		log_msg(LVL_DEBUG, "cannot query the guest agent",
		    "{s:s, s:s}", "instance_id", t->instance_id, "error",
		    detail);
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
	const struct target *t = pe->t;
	const char *action = pe->v == CP_FAILED ? "init_failure" :
	    "init_success";

	if (now == NULL)
		log_msg(LVL_WARN, "could not confirm assignment; dropping "
		    "report", "{s:s, s:s, s:s, s:s}", "action", action, "vf",
		    t->vf, "instance_id", t->instance_id, "error", why);
	else if (confirm_judge(pe, now) == CONFIRM_CHANGED)
		log_msg(LVL_INFO, "skipping report: assignment changed during "
		    "poll", "{s:s, s:s, s:s}", "action", action, "vf", t->vf,
		    "instance_id", t->instance_id);
	else
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

	if (p->pend.n == 0)
		return;
	listed = scan_targets(p, &now, true, false, &why) == 0;
	for (i = 0; i < p->pend.n; i++)
		confirm(p, &p->pend.v[i], listed ? &now : NULL, why.text);
	confirm_clear(&p->pend);
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

static bool
stopping(struct poller *p)
{
	return stop_check(&p->stop);
}

/* Waits in ppoll(2), the only place TERM/INT are delivered. */
static int
poller_wait(struct poller *p, struct pollfd *pfds, size_t n, long long ms)
{
	bool gone = false;
	int r;

	r = wait_fds(pfds, n, STDOUT_FILENO, ms, &p->run_mask, &gone);
	if (gone && p->stop.why != STOP_PEER) {
		log_msg(LVL_INFO, "stdout reader went away", NULL);
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
		    log_error, NULL) == -1) {
			out_of_memory(p);
			return;
		}
		if (f->lt.last == GUEST_MARKER_FAILED)
			record(p, t, CP_FAILED, f->lt.nvrm);
		else if (f->lt.last == GUEST_MARKER_OK)
			record(p, t, CP_OK, NULL);
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

	if (scan_targets(p, &ts, false, true, &why) == -1) {
		if (p->stop.why != STOP_MEMORY) {
			log_msg(LVL_WARN, "vGPU sentinel failed to list "
			    "instances", "{s:s}", "error", why.text);
			emit_list_error(p, why.text);
		}
	} else if (p->log_source)
		log_scan(p, &ts);
	else
		vsock_scan(p, &ts);
	flush_pending(p);
	log_msg(LVL_DEBUG, "scan finished", "{s:I, s:I, s:I}", "targets",
	    (json_int_t)p->stat.targets, "polled", (json_int_t)ts.n, "ms",
	    (json_int_t)(io_now_ms() - start));
	targets_release(&ts);
}

/*
 * Whether a VF has the vendor-VFIO framework now. The waiting sentinel
 * (SPEC 4.4) says so once at info each time the framework goes away,
 * and again when it comes back; while it waits nothing is listed.
 */
static bool
framework_check(struct poller *p)
{
	bool present = sysfs_has_vgpu_framework(p->conf.sysfs_root);

	if (!present && !p->waiting)
		log_msg(LVL_INFO, p->once ? "vGPU sentinel exiting: host has "
		    "no vGPU framework" : "vGPU sentinel waiting: host has no "
		    "vGPU framework; re-checking sysfs", "{s:s, s:i}",
		    "sysfs_root", p->conf.sysfs_root, "recheck",
		    (int)p->recheck);
	else if (present && p->waiting)
		log_msg(LVL_INFO, "vGPU framework appeared; scanning",
		    "{s:s}", "sysfs_root", p->conf.sysfs_root);
	p->waiting = !present;
	p->stat.framework_present = present;
	if (!present)
		p->stat.targets = p->stat.polled = 0;
	return present;
}

/* Rewrites --metrics-file; a failure warns once until a write works. */
static void
write_metrics(struct poller *p)
{
	if (p->metrics == NULL)
		return;
	p->stat.last_scan = time(NULL);
	if (pollstat_write(&p->stat, p->metrics) == 0) {
		p->metrics_warned = false;
		return;
	}
	if (errno == ENOMEM)
		out_of_memory(p);
	else if (!p->metrics_warned)
		log_msg(LVL_WARN, "cannot write the metrics file", "{s:s, s:s}",
		    "path", p->metrics, "error", strerror(errno));
	p->metrics_warned = true;
}

/* Sleeps until at, watching stdout's reader and signals. */
static void
wait_until(struct poller *p, long long at)
{
	struct pollfd pfd;
	long long left;

	while (!stopping(p) && (left = at - io_now_ms()) > 0)
		poller_wait(p, &pfd, 0, left);
}

/* Scans (or re-checks sysfs while waiting) until --once or a stop. */
static int
run(struct poller *p)
{
	long long start;
	unsigned pause;

	for (;;) {
		start = io_now_ms();
		pause = p->recheck;
		if (framework_check(p)) {
			scan(p);
			pause = p->interval;
		}
		write_metrics(p);
		if (!p->once)
			wait_until(p, start + pause * 1000LL);
		if (stopping(p) || p->once)
			return stop_exit_code(&p->stop);
	}
}

/* --- setup -------------------------------------------------------------- */

static void
parse_source(struct cli *cli, struct poller *p, const char *arg)
{
	if (strcmp(arg, "log") == 0)
		p->log_source = true;
	else if (strcmp(arg, "vsock") == 0)
		p->log_source = false;
	else
		cli_usage_error(cli, "--source: expected vsock or log");
}

/* One of the program's own options (not a shared one). */
static void
parse_option(struct cli *cli, struct poller *p, int c, char **argv)
{
	switch (c) {
	case OPT_INTERVAL:
		p->interval = cli_uint(cli, "--interval", optarg, 1,
		    MAX_SECONDS);
		break;
	case OPT_ONCE:
		p->once = true;
		break;
	case OPT_CONCURRENCY:
		p->concurrency = cli_uint(cli, "--concurrency", optarg, 1,
		    4096);
		break;
	case OPT_TIMEOUT:
		p->timeout = cli_uint(cli, "--timeout", optarg, 1, 3600);
		break;
	case OPT_TARGETS:
		p->source.path = optarg;
		break;
	case OPT_SOURCE:
		parse_source(cli, p, optarg);
		break;
	case OPT_PROC_ROOT:
		p->proc_root = optarg;
		break;
	case OPT_RECHECK:
		p->recheck = cli_uint(cli, "--framework-recheck", optarg, 1,
		    MAX_SECONDS);
		break;
	case OPT_METRICS:
		p->metrics = optarg;
		break;
	default:
		cli_bad_option(cli, argv);
	}
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
		{ "framework-recheck", required_argument, NULL, OPT_RECHECK },
		{ "metrics-file", required_argument, NULL, OPT_METRICS },
		{ 0 }
	};
	struct cli cli;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, "c:h", opts)) != -1)
		parse_option(&cli, p, c, argv);
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
		p->interval = p->conf.interval ? p->conf.interval : 1;
	if (p->timeout == 0)
		p->timeout = p->conf.timeout ? p->conf.timeout : 1;
	if (p->concurrency == 0)
		p->concurrency = p->conf.concurrency ? p->conf.concurrency : 1;
	if (p->recheck == 0)
		p->recheck = p->conf.framework_recheck ?
		    p->conf.framework_recheck : 1;
	if (p->proc_root == NULL)
		p->proc_root = "/";
}

/*
 * TERM/INT only set a flag, and only arrive inside ppoll(2). Each check
 * in flight holds one descriptor: the soft limit of open files is raised
 * toward the hard one if needed, else the concurrency lowered (a check
 * would otherwise fail with EMFILE). 0 or -1/errno.
 */
static int
poller_setup(struct poller *p)
{
	size_t n = io_fd_limit_fit(p->concurrency, FD_SPARE);

	cli_stop_signals(false);
	if (sig_stop_block(&p->run_mask) == -1)
		return -1;
	sig_stop_unblocked(&p->run_mask);
	if (n != 0 && n < p->concurrency) {
		log_msg(LVL_WARN, "concurrency lowered to fit the open files "
		    "limit", "{s:i, s:i}", "concurrency", (int)p->concurrency,
		    "limit", (int)n);
		p->concurrency = (unsigned)n;
	}
	return 0;
}

/* The pool, the tails and the stdin list. 0 or -1/ENOMEM. */
static int
poller_alloc(struct poller *p)
{
	struct targets_why why;

	if (checkpool_init(&p->pool, p->concurrency, REQUEST) == -1 ||
	    (p->log_source && logtails_init(&p->tails) == -1))
		return -1;
	if (p->source.path != NULL && strcmp(p->source.path, "-") == 0 &&
	    targets_read_fd(STDIN_FILENO, &p->stdin_targets, bad_line, NULL,
	    &why) == -1) {
		if (why.nomem)
			return -1;
		log_msg(LVL_WARN, "cannot read targets from stdin", "{s:s}",
		    "error", why.text);
	}
	return 0;
}

static void
poller_release(struct poller *p)
{
	checkpool_release(&p->pool);
	confirm_release(&p->pend);
	target_marks_release(&p->skipped);
	logtails_release(&p->tails);
	targets_release(&p->stdin_targets);
}

int
main(int argc, char **argv)
{
	struct poller p;
	int rc;

	cli_start(PROG);
	memset(&p, 0, sizeof(p));
	parse_args(argc, argv, &p);
	apply_defaults(&p);
	if (poller_setup(&p) == -1)
		die(EX_OSERR, "cannot block the stop signals", "{s:s}",
		    "error", strerror(errno));
	if (poller_alloc(&p) == -1)
		stop_set(&p.stop, STOP_MEMORY, ENOMEM);
	else
		log_msg(LVL_INFO, "vGPU sentinel started", "{s:i, s:i, s:i}",
		    "interval", (int)p.interval, "timeout", (int)p.timeout,
		    "concurrency", (int)p.concurrency);
	rc = p.stop.why == RUNNING ? run(&p) : stop_exit_code(&p.stop);
	poller_release(&p);
	if (rc == EX_OSERR)
		log_msg(LVL_ERROR, "out of memory", NULL);
	if (rc == EX_OK)
		cli_close_stdout();
	return rc;
}
