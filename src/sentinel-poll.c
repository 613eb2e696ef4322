/*
 * sentinel-poll - ask every live claimed guest for its GPU init state.
 *
 * Every interval (the first scan at once) it lists its targets (the
 * claims ledger under a shared lock, or --targets JSON lines), polls
 * each one whose VMM is alive (vmm.h: its control socket is a listener in
 * PROC/net/unix, or one connect says so) over its endpoint (vsock:,
 * hvsock:, unix:) with {"method":"GetGPUInitStatus"}, at most
 * --concurrency checks in flight in one poll(2) loop, each bounded by
 * --timeout in total, and writes one check line per target (the engine
 * is src/sentinel-poll/poller.c; this file is its options, logs and output):
 *
 *	{"check":"failed","vf_address":...,"instance_id":...,
 *	 "assigned_at":...,"nvrm":"NVRM: ..."}
 *
 * check is ok, failed, unknown, rpc_error (with "error") or
 * unsupported_agent; a scan that cannot list its targets writes
 * {"check":"list_error","error":...}. A failed or ok line is written only
 * after re-reading the targets (confirm.h): it is dropped when the
 * instance now holds another VF or claim time. Each target's agent
 * endpoint (vsock) is polled and its console log (app_log) tailed, for
 * the marker lines and the guest kernel's own RmInitAdapter line
 * (sentinel.console_kernel_lines, SPEC 6.2); --source restricts it to
 * one kind. A console log is read only if it is a regular file, at most
 * sentinel.console_read_max bytes a scan. A failure seen is written again
 * at every scan until the health store holds it (SPEC 7.2). A target that
 * cannot be checked is logged at warn with its reason, path and fix, and
 * counted in the metrics file by reason (SPEC 7.1).
 *
 * While no VF has the vendor-VFIO vGPU framework (SR-IOV is often
 * enabled after the services start at boot) it polls nothing and
 * re-checks sysfs every --framework-recheck seconds; scans start when
 * VFs appear and stop again if they go away. --metrics-file is rewritten
 * after each scan or re-check (pollstat.h).
 *
 * SIGTERM and SIGINT end it within a second in any state: they are let
 * in by ppoll(2) alone, which the long steps (a console log's reads, a
 * store lock's wait) call between their parts.
 *
 * Exit codes: 0 (after --once, or on SIGTERM/SIGINT), 64 usage, 71 OS
 * error, 74 stdout failed or its reader went away, 78 configuration.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "conf.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "sentinel-poll/opener.h"
#include "sentinel-poll/poller.h"
#include "sig.h"

#define PROG "sentinel-poll"
#define FD_SPARE 32			/* fds beside the checks in flight */
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
    "  --source vsock|log    only the guest agent, or only the VM's console\n"
    "                        log (default: each target's endpoint and log)\n"
    "  --proc-root DIR       read the Unix socket table from\n"
    "                        DIR/proc/net/unix, for tests (default /)\n"
    "  --framework-recheck S\n"
    "                        seconds between sysfs re-checks while no VF has\n"
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

struct sentinel {
	struct conf conf;
	struct poller_conf pc;		/* 0 in a number: not given */
	sigset_t run_mask;		/* the mask with TERM/INT deliverable */
	struct opener_dirs dirs;	/* sentinel.privileged_dirs */
	struct openreq opener;
};

/* --- logs and output ---------------------------------------------------- */

/* A check line on stdout (poller_emit_fn). */
static int
emit(void *arg, json_t *line)
{
	int rc = jsonl_write(stdout, line);

	(void)arg;
	json_decref(line);
	if (rc == -1)
		log_msg(LVL_ERROR, "write stdout failed", "{s:s}", "error",
		    strerror(errno));
	return rc;
}

/*
 * The fix each reason's warning names (SPEC 7.1). What the packages
 * grant, and what that lets the sentinel read, is security.md's.
 */
static const char *const fixes[POLLSTAT_REASON_N] = {
	[POLLSTAT_NO_SOURCE] = "give the VM the vfsentinel agent's channel "
	    "(virtio-serial or vsock) or a console log; for a pty console add "
	    "<log file='/var/log/libvirt/qemu/DOMAIN-console.log'/> inside "
	    "its <serial> or <console> element",
	[POLLSTAT_PERMISSION] = "let sentinel-poll use it: "
	    "CAP_DAC_READ_SEARCH for its process (console logs, libvirt's "
	    "domain directories) and the ACL libvirt-hook puts on the agent "
	    "channel socket at started begin; see security.md",
	[POLLSTAT_VMM_NOT_ALIVE] = "none if the VM was stopped: its claim "
	    "goes at libvirt-hook's release, vfstore release or vfstore "
	    "reconcile",
	[POLLSTAT_VMM_UNCERTAIN] = "give the claim the VMM's own monitor "
	    "socket (QMP or API) as control_socket",
	[POLLSTAT_CONSOLE_UNREADABLE] = "point the claim's console log at "
	    "the regular file the VMM or virtlogd writes (<log file='...'/> "
	    "or <serial type='file'>)",
};

/* What a denied path is, in a permission warning. */
static const char *
source_name(enum poller_source src)
{
	switch (src) {
	case POLLER_SRC_CONTROL:
		return "control_socket";
	case POLLER_SRC_AGENT:
		return "endpoint";
	case POLLER_SRC_CONSOLE:
		return "console_log";
	case POLLER_SRC_CLAIM:
		break;
	}
	return "claim";
}

/* The message of a target that cannot be checked. */
static const char *
unpolled_msg(const struct poller_event *ev)
{
	if (ev->reason == POLLSTAT_NO_SOURCE)
		return "cannot check target: no agent endpoint and no console "
		    "log";
	if (ev->reason == POLLSTAT_PERMISSION)
		return "cannot check target: permission denied";
	if (ev->source == POLLER_SRC_CLAIM)
		return "skipping target without a control socket";
	if (ev->source == POLLER_SRC_CONTROL)
		return "skipping target: VMM not alive";
	if (ev->log == LOGTAIL_NOT_REGULAR)
		return "console log is not a regular file";
	return ev->log == LOGTAIL_OPEN ? "cannot open console log" :
	    "cannot read console log";
}

/* A target that cannot be checked: warn, or debug while it repeats. */
static void
log_unpolled(const struct poller_event *ev)
{
	const struct target *t = ev->t;
	bool vmm = ev->source == POLLER_SRC_CONTROL &&
	    ev->reason != POLLSTAT_PERMISSION;

	log_msg(ev->repeat ? LVL_DEBUG : LVL_WARN, unpolled_msg(ev),
	    "{s:s, s:s, s:s, s:s*, s:s*, s:s*, s:s*, s:s*, s:s*, s:s}",
	    "vf", t->vf, "instance_id", t->instance_id,
	    "unpolled", pollstat_reason_name(ev->reason),
	    "source", ev->reason == POLLSTAT_PERMISSION ?
	    source_name(ev->source) : NULL,
	    "path", ev->path, "control_socket", vmm ? ev->path : NULL,
	    "vmm", vmm ? vmm_state_name(ev->vmm) : NULL,
	    "reason", vmm ? ev->why : NULL,
	    "error", ev->err != 0 ? strerror(ev->err) : NULL,
	    "fix", fixes[ev->reason]);
}

/* The log line of a target skipped or not confirmed. */
static void
log_target(const struct poller_event *ev)
{
	const struct target *t = ev->t;

	if (ev->kind == POLLER_EV_UNPOLLED)
		log_unpolled(ev);
	else if (ev->kind == POLLER_EV_UNCONFIRMED)
		log_msg(LVL_WARN, "could not confirm assignment; dropping "
		    "report", "{s:s, s:s, s:s, s:s}", "action", ev->action,
		    "vf", t->vf, "instance_id", t->instance_id, "error",
		    ev->why);
	else if (ev->kind == POLLER_EV_CHANGED)
		log_msg(LVL_INFO, "skipping report: assignment changed during "
		    "poll", "{s:s, s:s, s:s}", "action", ev->action, "vf",
		    t->vf, "instance_id", t->instance_id);
	else if (ev->kind == POLLER_EV_RPC_ERROR)
		log_msg(ev->repeat ? LVL_DEBUG : LVL_WARN,
		    "cannot check target", "{s:s, s:s, s:s, s:s}", "vf",
		    t->vf, "instance_id", t->instance_id, "endpoint",
		    t->vsock, "error", ev->why);
	else
		log_msg(LVL_INFO, "VMM alive; polling target",
		    "{s:s, s:s, s:s}", "vf", t->vf, "instance_id",
		    t->instance_id, "control_socket", t->control_socket);
}

/* The log line of a failed input (a target line, stdin, the socket
 * table, the metrics file). */
static void
log_input(const struct sentinel *s, const struct poller_event *ev)
{
	const char *err = strerror(ev->err);

	if (ev->kind == POLLER_EV_BAD_LINE && ev->why == NULL)
		log_msg(LVL_WARN, "skipping over-long target line", "{s:I}",
		    "line", (json_int_t)ev->lineno);
	else if (ev->kind == POLLER_EV_BAD_LINE)
		log_msg(LVL_WARN, "skipping bad target line", "{s:I, s:s}",
		    "line", (json_int_t)ev->lineno, "error", ev->why);
	else if (ev->kind == POLLER_EV_STDIN)
		log_msg(LVL_WARN, "cannot read targets from stdin", "{s:s}",
		    "error", ev->why);
	else if (ev->kind == POLLER_EV_LIST_FAILED)
		log_msg(LVL_WARN, "vGPU sentinel failed to list instances",
		    "{s:s}", "error", ev->why);
	else if (ev->kind == POLLER_EV_TABLE)
		log_msg(ev->repeat ? LVL_DEBUG : LVL_WARN, "cannot read the "
		    "Unix socket table; VMM liveness connects", "{s:s, s:s}",
		    "proc_root", s->pc.proc_root, "error", err);
	else
		log_msg(LVL_WARN, "cannot write the metrics file",
		    "{s:s, s:s}", "path", ev->path, "error", err);
}

/* Every event of the engine is one log line (poller_event_fn). */
static void
event(void *arg, const struct poller_event *ev)
{
	const struct sentinel *s = arg;

	if (ev->t != NULL)
		log_target(ev);
	else if (ev->kind == POLLER_EV_SCAN)
		log_msg(LVL_DEBUG, "scan finished", "{s:I, s:I, s:I}",
		    "targets", (json_int_t)ev->listed, "polled",
		    (json_int_t)ev->polled, "ms", (json_int_t)ev->ms);
	else if (ev->kind == POLLER_EV_WAITING)
		log_msg(LVL_INFO, s->pc.once ? "vGPU sentinel exiting: host "
		    "has no vGPU framework" : "vGPU sentinel waiting: host has "
		    "no vGPU framework; re-checking sysfs", "{s:s, s:i}",
		    "sysfs_root", s->conf.sysfs_root, "recheck",
		    (int)s->pc.recheck);
	else if (ev->kind == POLLER_EV_APPEARED)
		log_msg(LVL_INFO, "vGPU framework appeared; scanning",
		    "{s:s}", "sysfs_root", s->conf.sysfs_root);
	else if (ev->kind == POLLER_EV_PEER_GONE)
		log_msg(LVL_INFO, "stdout reader went away", NULL);
	else if (ev->kind == POLLER_EV_OPENER_GONE)
		log_msg(LVL_ERROR, "the opener process is gone: exiting, for "
		    "the supervisor to start both again", NULL);
	else
		log_input(s, ev);
}

/* --- options ------------------------------------------------------------ */

/* sentinel.console_kernel_lines: auto, on or off (else 78). */
static enum poller_kernel_lines
kernel_lines(const char *v)
{
	if (strcmp(v, "on") == 0)
		return POLLER_KL_ON;
	if (strcmp(v, "off") == 0)
		return POLLER_KL_OFF;
	if (strcmp(v, "auto") != 0)
		die(EX_CONFIG, "cannot load configuration", "{s:s}", "error",
		    "sentinel.console_kernel_lines: invalid value (expected "
		    "auto, on or off)");
	return POLLER_KL_AUTO;
}

static void
parse_source(struct cli *cli, struct poller_conf *pc, const char *arg)
{
	if (strcmp(arg, "log") == 0)
		pc->no_agent = true;
	else if (strcmp(arg, "vsock") == 0)
		pc->no_log = true;
	else
		cli_usage_error(cli, "--source: expected vsock or log");
}

static void
parse_args(int argc, char **argv, struct sentinel *s)
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
	struct poller_conf *pc = &s->pc;
	struct cli cli;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
		switch (c) {
		case OPT_INTERVAL:
			pc->interval = cli_uint(&cli, "--interval", optarg,
			    1, MAX_SECONDS);
			break;
		case OPT_ONCE:
			pc->once = true;
			break;
		case OPT_CONCURRENCY:
			pc->concurrency = cli_uint(&cli, "--concurrency",
			    optarg, 1, 4096);
			break;
		case OPT_TIMEOUT:
			pc->timeout = cli_uint(&cli, "--timeout", optarg, 1,
			    3600);
			break;
		case OPT_TARGETS:
			pc->source.path = optarg;
			break;
		case OPT_SOURCE:
			parse_source(&cli, pc, optarg);
			break;
		case OPT_PROC_ROOT:
			pc->proc_root = optarg;
			break;
		case OPT_RECHECK:
			pc->recheck = cli_uint(&cli, "--framework-recheck",
			    optarg, 1, MAX_SECONDS);
			break;
		case OPT_METRICS:
			pc->metrics = optarg;
			break;
		default:
			cli_bad_option(&cli, argv);
		}
	}
	cli_no_operands(&cli, argc, argv);
	cli_finish(&cli, &s->conf);
	pc->source.lock_timeout = cli.lock_timeout;
	pc->source.data_dir = s->conf.data_dir;
}

/*
 * Options override the configuration (its numbers are at least 1);
 * the rest of the engine's settings.
 */
static void
apply_defaults(struct sentinel *s)
{
	struct poller_conf *pc = &s->pc;

	if (pc->interval == 0)
		pc->interval = s->conf.interval;
	if (pc->timeout == 0)
		pc->timeout = s->conf.timeout;
	if (pc->concurrency == 0)
		pc->concurrency = s->conf.concurrency;
	if (pc->recheck == 0)
		pc->recheck = s->conf.framework_recheck;
	if (pc->proc_root == NULL)
		pc->proc_root = "/";
	pc->vsock_port = s->conf.vsock_port;
	pc->threshold = s->conf.threshold;
	pc->console_read_max = s->conf.console_read_max;
	pc->kernel_lines = kernel_lines(s->conf.console_kernel_lines);
	pc->sysfs_root = s->conf.sysfs_root;
	pc->run_mask = &s->run_mask;
	pc->out_fd = STDOUT_FILENO;
	pc->emit = emit;
	pc->event = event;
	pc->arg = s;
}

/*
 * TERM/INT only set a flag, and only arrive inside ppoll(2) (the engine
 * calls one without a wait between the parts of a long step). Each check
 * in flight holds one descriptor: the soft limit of open files is raised
 * toward the hard one if needed, else the concurrency lowered (a check
 * would otherwise fail with EMFILE). 0 or -1/errno.
 */
static int
setup(struct sentinel *s)
{
	size_t n = io_fd_limit_fit(s->pc.concurrency, FD_SPARE);

	cli_stop_signals(false);
	if (sig_stop_block(&s->run_mask) == -1)
		return -1;
	sig_stop_unblocked(&s->run_mask);
	if (n != 0 && n < s->pc.concurrency) {
		log_msg(LVL_WARN, "concurrency lowered to fit the open files "
		    "limit", "{s:i, s:i}", "concurrency",
		    (int)s->pc.concurrency, "limit", (int)n);
		s->pc.concurrency = (unsigned)n;
	}
	return 0;
}

/*
 * The privilege split (SPEC 8.3): the opener is forked with this
 * process's CAP_DAC_READ_SEARCH, and this process, which parses what
 * tenants write, keeps no capability. With --targets there is no ledger
 * to check a path against, and no opener. Fatal (78, 71) when the
 * directories are not a list of absolute paths, or the capabilities
 * cannot be dropped.
 */
static void
split(struct sentinel *s)
{
	const struct conf *c = &s->conf;
	char deflt[3 * PATH_MAX + 32];
	const char *list = c->privileged_dirs;

	if (list[0] == '\0') {
		(void)snprintf(deflt, sizeof(deflt), "%s,%s,/run/libvirt/qemu",
		    c->libvirt_log_dir, c->qemu_state_dir);
		list = deflt;
	}
	if (opener_dirs_parse(list, &s->dirs) == -1)
		die(errno == EINVAL ? EX_CONFIG : EX_OSERR,
		    "invalid sentinel.privileged_dirs: not a list of absolute "
		    "paths", "{s:s}", "value", list);
	if (openreq_start(&s->opener, s->pc.source.path == NULL ?
	    c->data_dir : NULL, &s->dirs) == -1)
		die(EX_OSERR, "cannot drop the capabilities", "{s:s}",
		    "error", strerror(errno));
	s->pc.opener = &s->opener;
}

int
main(int argc, char **argv)
{
	struct sentinel s;
	struct poller *p;
	int rc;

	cli_start(PROG);
	memset(&s, 0, sizeof(s));
	parse_args(argc, argv, &s);
	apply_defaults(&s);
	if (setup(&s) == -1)
		die(EX_OSERR, "cannot block the stop signals", "{s:s}",
		    "error", strerror(errno));
	split(&s);
	if ((p = poller_new(&s.pc)) == NULL)
		die(EX_OSERR, "out of memory", NULL);
	log_msg(LVL_INFO, "vGPU sentinel started", "{s:i, s:i, s:i}",
	    "interval", (int)s.pc.interval, "timeout", (int)s.pc.timeout,
	    "concurrency", (int)s.pc.concurrency);
	rc = poller_run(p);
	poller_free(p);
	if (rc == EX_OSERR && !openreq_broken(&s.opener))
		log_msg(LVL_ERROR, "out of memory", NULL);
	openreq_stop(&s.opener);
	opener_dirs_release(&s.dirs);
	if (rc == EX_OK)
		cli_close_stdout();
	return rc;
}
