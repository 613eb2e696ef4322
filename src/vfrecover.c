/*
 * vfrecover - the recovery runbook of one card as a resumable program
 * (SPEC.md 4.6): preflight, drain, idle, quiesce, disable (sriov-manage
 * -d), enable (-e), restore, verify, clear.
 *
 * Input: the card's sysfs, the health store and the claims ledger, the
 * journal DATA_DIR/gpu/recovery/PF.json of a run that did not finish.
 * Output: one line per step {"card":PF,"step":...,"status":"done|skipped|
 * failed",...}, then {"card":PF,"result":"recovered|failed|busy",...}.
 * --dry-run prints the plan (status "planned") and changes nothing;
 * --status prints every journal (with --card: that card's) as one line.
 * A run rewrites a Prometheus textfile from the journals after each step
 * (metrics.h): --metrics-file, else vfsentinel-recovery.prom in
 * metrics.textfile_dir when that directory exists (node_exporter's; not
 * made here). A failed write is a warning.
 *
 * The steps run in the library (recoverrun.h); this file parses the
 * options, prints the engine's lines and log events, and dispatches.
 *
 * Exit codes: 0 recovered (or a dry run that would proceed); 1 a step
 * failed or the card is busy (the card stays drained); 64 usage; 65 the
 * journal is not one; 69 store unavailable; 71 OS error; 74 I/O error
 * (journal, audit, store, stdout); 75 another run holds the card's lock,
 * or a stop signal (restore has run, the journal says where to resume);
 * 78 configuration.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "auditlog.h"
#include "cli.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "vfrecover/verifysuspects.h"
#include "vfrecover/recoverrun.h"
#include "vfrecover/recovery.h"
#include "store.h"
#include "vfaddr.h"

#define PROG "vfrecover"

static const char usage[] =
    "usage: vfrecover [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                 [--proc-root DIR] [--lock-timeout S]\n"
    "                 [--log-level LEVEL]\n"
    "                 --card PF [--dry-run] [--wait S] [--force]\n"
    "                 [--metrics-file PATH]\n"
    "       vfrecover [OPTIONS] --status [--card PF]\n"
    "       vfrecover [OPTIONS] --verify-suspects [--dry-run]\n"
    "\n"
    "Cycles SR-IOV on one card to recover wedged VFs: drains it, waits until\n"
    "no VF is in use, stops what holds the GPU, runs sriov-manage -d and -e,\n"
    "restores, verifies and clears the quarantine; resumable after a crash.\n"
    "\n"
    "Options:\n"
    "  --card PF             the card (physical function) to cycle\n"
    "  --dry-run             print the plan and what is busy (with\n"
    "                        --verify-suspects: the VFs it would verify);\n"
    "                        change nothing\n"
    "  --wait S              wait up to S seconds for the VFs to go idle\n"
    "                        and for another card's quiesce-restore window\n"
    "                        (default 0: check once)\n"
    "  --force               cycle even when a systemic failure is suspected\n"
    "  --metrics-file PATH   the Prometheus textfile rewritten after each\n"
    "                        step (default: vfsentinel-recovery.prom in\n"
    "                        metrics.textfile_dir, if that directory exists)\n"
    "  --status              print the journal of every card (with --card:\n"
    "                        of that card), one per line\n"
    "  --verify-suspects     run recovery.verify_command once per suspect\n"
    "                        VF: a pass clears it, a fail quarantines it\n"
    "  --proc-root DIR       where /proc is, for the holder checks\n"
    "                        (default /)\n"
    CLI_HELP_HOST_OPTIONS
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_CARD = CLI_OPT_FIRST_FREE,
	OPT_DRY_RUN,
	OPT_WAIT,
	OPT_FORCE,
	OPT_STATUS,
	OPT_PROC_ROOT,
	OPT_METRICS,
	OPT_VERIFY_SUSPECTS
};

static const struct option opts[] = {
	CLI_COMMON_OPTIONS,
	{ "card", required_argument, NULL, OPT_CARD },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
	{ "metrics-file", required_argument, NULL, OPT_METRICS },
	{ "verify-suspects", no_argument, NULL, OPT_VERIFY_SUSPECTS },
	{ 0 }
};

struct prog {
	struct cli cli;
	struct conf conf;
	char card[VF_ADDR_LEN + 1];
	bool dry_run, force, status, out_failed;
	bool verify_suspects;		/* --verify-suspects (SPEC.md 7.3) */
	unsigned wait;
	const char *proc_root;
	const char *metrics;		/* --metrics-file, or NULL */
	char default_metrics[PATH_MAX];
};

/* --- arguments ----------------------------------------------------------- */

/* What no single option tells: operands, --card or --status. */
static void
check_args(struct prog *p, int argc, char **argv)
{
	cli_no_operands(&p->cli, argc, argv);
	if (p->verify_suspects && (p->status || p->card[0] != '\0'))
		cli_usage_error(&p->cli, "--verify-suspects takes no --card "
		    "and no --status");
	if (!p->status && !p->verify_suspects && p->card[0] == '\0')
		cli_usage_error(&p->cli, "give --card or --status");
	if (p->status && p->metrics != NULL)
		cli_usage_error(&p->cli, "--status writes no --metrics-file");
	if (p->proc_root == NULL)
		p->proc_root = "/";
}

static void
parse_args(int argc, char **argv, struct prog *p)
{
	int c;

	cli_init(&p->cli, usage);
	while ((c = cli_next(&p->cli, argc, argv, CLI_SHORTOPTS, opts)) !=
	    -1) {
		switch (c) {
		case OPT_CARD:
			if (vfaddr_parse_arg(optarg, p->card) < 0) {
				char why[512];

				vfaddr_why("card", optarg, why, sizeof(why));
				die(EX_DATAERR, why, NULL);
			}
			break;
		case OPT_DRY_RUN:
			p->dry_run = true;
			break;
		case OPT_WAIT:
			p->wait = cli_uint(&p->cli, "--wait", optarg, 0, 86400);
			break;
		case OPT_FORCE:
			p->force = true;
			break;
		case OPT_VERIFY_SUSPECTS:
			p->verify_suspects = true;
			break;
		case OPT_STATUS:
			p->status = true;
			break;
		case OPT_PROC_ROOT:
			p->proc_root = optarg;
			break;
		case OPT_METRICS:
			p->metrics = optarg;
			break;
		default:
			cli_bad_option(&p->cli, argv);
		}
	}
	check_args(p, argc, argv);
}

/* --- the engine's output ------------------------------------------------- */

static void
emit(void *arg, json_t *obj)
{
	struct prog *p = arg;

	if (obj == NULL || jsonl_write(stdout, obj) < 0)
		p->out_failed = true;
	json_decref(obj);
}

/* The audit line of a step, under the store's lock the engine holds. */
static int
audit(void *arg, const char *gpu_dir, const struct audit_event *ev)
{
	(void)arg;
	return auditlog_append(gpu_dir, ev);
}

/* The message of each error event, and the field before its "error". */
static const struct {
	const char *msg, *key;
} errors[] = {
	[RECOVERRUN_EV_PATH] = { "a path is too long", "data_dir" },
	[RECOVERRUN_EV_UNAVAILABLE] = { "VF health state unavailable", NULL },
	[RECOVERRUN_EV_LOCK] = { "cannot lock the store", NULL },
	[RECOVERRUN_EV_NOMEM] = { "out of memory", NULL },
	[RECOVERRUN_EV_AUDIT_LOCK] = {
	    "cannot lock the store for the audit line", NULL },
	[RECOVERRUN_EV_AUDIT] = { "cannot write the audit line", "step" },
	[RECOVERRUN_EV_JOURNAL] = { "cannot write the journal", "path" },
	[RECOVERRUN_EV_SYSTEMIC] = {
	    "cannot apply the systemic-failure rule", NULL },
	[RECOVERRUN_EV_SAVE] = { "cannot save the store", NULL },
	[RECOVERRUN_EV_IDLE] = { "cannot tell whether the VFs are idle",
	    "proc_root" },
	[RECOVERRUN_EV_MOVE] = { "cannot move the journal", "path" },
	[RECOVERRUN_EV_DIR] = { "cannot create the journal directory",
	    "path" },
	[RECOVERRUN_EV_CARD_BUSY] = { "another vfrecover runs on the card",
	    "card" },
	[RECOVERRUN_EV_CARD_LOCK] = { "cannot lock the card", "card" },
	[RECOVERRUN_EV_LOAD] = { "cannot load the journal", NULL },
	[RECOVERRUN_EV_HOST_BUSY] = {
	    "another card's quiesce-restore window stayed held", "card" },
	[RECOVERRUN_EV_METRICS] = { "cannot write the metrics file", "path" }
};

/* The value of an error event's field before "error". */
static const char *
key_value(const struct prog *p, const struct recoverrun_event *ev,
    const char *key)
{
	if (strcmp(key, "path") == 0)
		return ev->path;
	if (strcmp(key, "step") == 0)
		return ev->step;
	if (strcmp(key, "card") == 0)
		return p->card;
	if (strcmp(key, "proc_root") == 0)
		return p->proc_root;
	return p->conf.data_dir;
}

/* An error event: its message with the key's field, then "error". */
static void
log_error(const struct prog *p, const struct recoverrun_event *ev)
{
	const char *msg, *key, *e = ev->error;

	if ((size_t)ev->kind >= sizeof(errors) / sizeof(errors[0])) {
		log_msg(LVL_ERROR, "unknown event", "{s:i}", "kind",
		    (int)ev->kind);
		return;
	}
	msg = errors[ev->kind].msg;
	key = errors[ev->kind].key;
	if (key != NULL && e != NULL)
		log_msg(LVL_ERROR, msg, "{s:s, s:s}", key,
		    key_value(p, ev, key), "error", e);
	else if (key != NULL)
		log_msg(LVL_ERROR, msg, "{s:s}", key, key_value(p, ev, key));
	else if (e != NULL)
		log_msg(LVL_ERROR, msg, "{s:s}", "error", e);
	else
		log_msg(LVL_ERROR, msg, NULL);
}

static void
event(void *arg, const struct recoverrun_event *ev)
{
	const struct prog *p = arg;

	switch (ev->kind) {
	case RECOVERRUN_EV_COMMAND:
		log_msg(ev->ok ? LVL_INFO : LVL_ERROR, ev->ok ?
		    "command done" : "command failed",
		    "{s:s, s:s, s:s, s:s, s:o?}", "step", ev->step, "card",
		    p->card, "command", ev->command, "result", ev->result,
		    "output", jsonl_string_lossy(ev->output, ev->len));
		break;
	case RECOVERRUN_EV_NO_VERIFY:
		log_msg(LVL_WARN, "no verification boot: the next placement "
		    "on the card is the verification", "{s:s}", "card",
		    p->card);
		break;
	case RECOVERRUN_EV_STOPPED:
		log_msg(LVL_WARN, "stopped; a later run resumes", "{s:s, s:s}",
		    "card", p->card, "step", ev->step);
		break;
	case RECOVERRUN_EV_METRICS:
		log_msg(LVL_WARN, "cannot write the metrics file",
		    "{s:s, s:s}", "path", ev->path, "error", ev->error);
		break;
	case RECOVERRUN_EV_HOST_WAIT:
		log_msg(LVL_INFO, "waiting for another card's quiesce-restore "
		    "window", "{s:s, s:s, s:i}", "card", p->card, "holder",
		    ev->path, "wait", (int)p->wait);
		break;
	default:
		log_error(p, ev);
	}
}

/* --- dispatch ------------------------------------------------------------ */

/*
 * The textfile: --metrics-file, else TEXTFILE_DIR/vfsentinel-recovery.prom
 * if that directory is there (a host without node_exporter gets none, and
 * no directory of node_exporter's is made here); NULL for none.
 */
static const char *
metrics_path(struct prog *p)
{
	struct stat st;

	if (p->metrics != NULL)
		return p->metrics;
	if (stat(p->conf.textfile_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    io_pathf(p->default_metrics, sizeof(p->default_metrics),
	    "%s/vfsentinel-recovery.prom", p->conf.textfile_dir) < 0)
		return NULL;
	return p->default_metrics;
}

/* --card PF: the engine's run, or its plan with --dry-run. */
static int
recover(struct prog *p)
{
	struct recoverrun_conf rc = { .conf = &p->conf, .card = p->card,
	    .proc_root = p->proc_root, .wait = p->wait,
	    .lock_timeout = p->cli.lock_timeout, .dry_run = p->dry_run,
	    .force = p->force, .emit = emit, .event = event, .audit = audit,
	    .arg = p };

	if (!p->dry_run)
		rc.metrics = metrics_path(p);
	return recoverrun_run(&rc);
}

static void
status_line(json_t *journal, void *arg)
{
	emit(arg, json_incref(journal));
}

/* --status: every journal (--card: that card's), in progress or last,
 * one line each. */
static int
show_status(struct prog *p)
{
	char why[PATH_MAX + 256];
	struct store s;

	if (store_init(&s, p->conf.data_dir) < 0)
		return log_fail(EX_USAGE, "a path is too long", NULL);
	if (recovery_journals(s.dir, p->card[0] != '\0' ? p->card : NULL,
	    status_line, p, why, sizeof(why)) < 0)
		return log_fail(EX_IOERR, "cannot list the journals", "{s:s}",
		    "error", why[0] != '\0' ? why : strerror(errno));
	return 0;
}

/* --verify-suspects (SPEC.md 8.2). */
static int
verify_suspects(struct prog *p)
{
	const char *env = getenv("VFSENTINEL_CONF");
	struct verifysuspects_conf vc = { .conf = &p->conf,
	    .conf_path = p->cli.config != NULL ? p->cli.config :
	    env != NULL && env[0] != '\0' ? env : CONF_DEFAULT_PATH,
	    .proc_root = p->proc_root, .lock_timeout = p->cli.lock_timeout,
	    .dry_run = p->dry_run, .emit = emit, .arg = p };

	return verifysuspects_run(&vc);
}

int
main(int argc, char **argv)
{
	struct prog p = { 0 };
	int code;

	cli_start(PROG);
	parse_args(argc, argv, &p);
	cli_finish(&p.cli, &p.conf);
	/* A stop finishes the step and restores (SPEC.md 4.6). */
	cli_stop_signals(true);
	if (p.verify_suspects)
		code = verify_suspects(&p);
	else
		code = p.status ? show_status(&p) : recover(&p);
	if (p.out_failed && (code == 0 || code == RECOVERRUN_NO))
		code = log_fail(EX_IOERR, "cannot write stdout", NULL);
	if (code == 0 || code == RECOVERRUN_NO)
		cli_close_stdout();
	return code;
}
