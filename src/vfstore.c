/*
 * vfstore - the locking mutator of the VF health store and the claims
 * ledger under DATA_DIR/gpu (SPEC.md 4.1, 4.2).
 *
 * Commands: report-failure, report-success, apply (a stream of check
 * lines from sentinel-poll on stdin), show, quarantine, clear, drain,
 * undrain, claims,
 * release, deconfigure, reconcile, check, init, config, edit, history.
 * Output: one compact JSON object per line on stdout; logs: JSON lines
 * on stderr. This file is the dispatch (the options, which command takes
 * which, main); the commands are the files of src/vfstore/, each in the
 * file named after it (vfstore.h is their header), with the output and
 * store-access helpers they share in src/vfstore/emit.c and ctx.c.
 *
 * Every mutation takes the exclusive lock, loads the files (strictly: a
 * broken file is never overwritten), changes them and saves them with
 * atomic_write(); readers take the shared lock. A success report is
 * first decided without any lock (files are only replaced by rename, so
 * a read sees one whole version): the routine no-op report never queues
 * behind a writer. A report that changes state takes the exclusive lock
 * and loads again.
 *
 * Exit codes: 0 done, 1 nothing matched (show --vf, quarantine --card
 * without VFs, release or deconfigure refused while the VF is open or
 * claimed) or edit's editor failed, 64 usage, 65 bad VF address or
 * argument, quarantine --vf or deconfigure of a VF sysfs lacks, an edit
 * the loader refuses, 69 store unavailable, 71 out of memory, 74 persist
 * or output failure, 75 lock wait timed out, 78 configuration.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "store.h"
#include "vfaddr.h"

#include "vfstore/vfstore.h"

#define PROG "vfstore"

static const char usage[] =
    "usage: vfstore [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "               [--lock-timeout S] [--log-level LEVEL] COMMAND [ARGS]\n"
    "commands:\n"
    "  report-failure --vf VF --instance ID --assigned-at TS\n"
    "  report-success --vf VF --instance ID --assigned-at TS\n"
    "  apply [--metrics-file PATH]\n"
    "  show [--vf VF]\n"
    "  quarantine --vf VF [--force] | --card PF [--reason TEXT]\n"
    "  clear --vf VF | --card PF [--reason TEXT]\n"
    "  drain --vf VF | --card PF --reason TEXT\n"
    "  undrain --vf VF | --card PF [--reason TEXT]\n"
    "  claims\n"
    "  config\n"
    "  release --instance ID [--deconfigure] [--proc-root DIR]\n"
    "          [--ended HOW] [--reason TEXT]\n"
    "  deconfigure --vf VF [--proc-root DIR] [--reason TEXT]\n"
    "  reconcile [--once | --interval S] [--grace S] [--dry-run]\n"
    "            [--metrics-file PATH] [--proc-root DIR]\n"
    "  check\n"
    "  init [--owner USER]\n"
    "  edit [health|claims] [--reason TEXT]\n"
    "  history [--vf VF | --card PF] [--limit N]\n"
    "\n"
    "Commands:\n"
    "  report-failure        tally a failed driver init of an assignment; the\n"
    "                        VF is quarantined at gpu.vf_quarantine_threshold\n"
    "  report-success        remove the assignment's failure and older ones;\n"
    "                        rescind a quarantine it triggered\n"
    "  apply                 read sentinel-poll's check lines on standard\n"
    "                        input, answer one line each\n"
    "  show                  the records and drains; \"quarantined\", \"why\"\n"
    "  quarantine            quarantine a VF, or every VF of a card\n"
    "  clear                 remove the records of a VF or of a card's VFs\n"
    "  drain, undrain        take VFs out of placement and back; health\n"
    "                        untouched\n"
    "  claims                the claims ledger, one line a claim\n"
    "  config                the effective configuration as one JSON object\n"
    "  release               remove the claim of an instance\n"
    "  deconfigure           write 0 to an unclaimed VF's current_vgpu_type\n"
    "  reconcile             release the claims of VMs that are provably\n"
    "                        gone, deconfiguring their VFs\n"
    "  check                 load and validate both files\n"
    "  init                  create DATA_DIR/gpu and its lock file\n"
    "  edit                  edit a file in $EDITOR under the lock; saved\n"
    "                        only if it loads\n"
    "  history               the audit log's lines, oldest first\n"
    "\n"
    "Options:\n"
    "  --vf VF               a VF's PCI address, e3:00.4 or 0000:e3:00.4\n"
    "  --card PF             a card's (physical function's) PCI address\n"
    "  --instance ID         the VM instance\n"
    "  --assigned-at TS      when the VF was assigned to the instance (RFC\n"
    "                        3339, the claim's claimed_at)\n"
    "  --force               quarantine a VF that sysfs does not show\n"
    "  --reason TEXT         why, logged and audited\n"
    "  --metrics-file PATH   apply, reconcile: the Prometheus textfile\n"
    "  --deconfigure         release: first write 0 to current_vgpu_type\n"
    "  --proc-root DIR       where /proc is (default /)\n"
    "  --once                reconcile: one pass, then exit (the default)\n"
    "  --interval S          reconcile: a pass every S seconds until SIGTERM\n"
    "  --grace S             reconcile: leave claims younger than S seconds\n"
    "                        alone (default reconcile.grace, else 120)\n"
    "  --dry-run             reconcile: decide and print, change nothing\n"
    "  --limit N             history: only the last N lines\n"
    "  --ended HOW           release: clean, unclean or unknown (default)\n"
    "  --owner USER          init: give DATA_DIR/gpu and the lock to USER\n"
    "  -c, --config FILE     configuration file (default $VFSENTINEL_CONF,\n"
    "                        else /etc/vfsentinel/vfsentinel.conf)\n"
    "  --data-dir DIR        host state directory; the files are in DIR/gpu\n"
    "                        (default data_dir, else /var/lib/vfsentinel)\n"
    "  --sysfs-root DIR      prefix for /sys (default sysfs_root, else /)\n"
    "  --lock-timeout S      seconds to wait for the store lock (default 10)\n"
    "  --log-level LEVEL     debug, info, warn or error (default info)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n"
    "\n"
    "The shared options may also follow the command.\n";

enum {
	OPT_VF = CLI_OPT_FIRST_FREE,
	OPT_CARD,
	OPT_INSTANCE,
	OPT_ASSIGNED_AT,
	OPT_REASON,
	OPT_METRICS,
	OPT_DECONFIGURE,
	OPT_PROC_ROOT,
	OPT_OWNER,
	OPT_FORCE,
	OPT_ONCE,
	OPT_INTERVAL,
	OPT_GRACE,
	OPT_DRY_RUN,
	OPT_LIMIT,
	OPT_ENDED
};

/*
 * The bit of each command option, for "which command takes which"; each
 * is tied to its option in arg_bits[] below, so no value depends on the
 * order of either enum.
 */
enum {
	ARG_VF = 1u << 0,
	ARG_CARD = 1u << 1,
	ARG_INSTANCE = 1u << 2,
	ARG_ASSIGNED_AT = 1u << 3,
	ARG_REASON = 1u << 4,
	ARG_METRICS = 1u << 5,
	ARG_DECONFIGURE = 1u << 6,
	ARG_PROC_ROOT = 1u << 7,
	ARG_OWNER = 1u << 8,
	ARG_FORCE = 1u << 9,
	ARG_ONCE = 1u << 10,
	ARG_INTERVAL = 1u << 11,
	ARG_GRACE = 1u << 12,
	ARG_DRY_RUN = 1u << 13,
	ARG_LIMIT = 1u << 15,
	ARG_ENDED = 1u << 16,
	ARG_OPERAND = 1u << 14		/* not an option: a command's operand */
};

static const struct {
	int opt;
	unsigned bit;
} arg_bits[] = {
	{ OPT_VF, ARG_VF },
	{ OPT_CARD, ARG_CARD },
	{ OPT_INSTANCE, ARG_INSTANCE },
	{ OPT_ASSIGNED_AT, ARG_ASSIGNED_AT },
	{ OPT_REASON, ARG_REASON },
	{ OPT_METRICS, ARG_METRICS },
	{ OPT_DECONFIGURE, ARG_DECONFIGURE },
	{ OPT_PROC_ROOT, ARG_PROC_ROOT },
	{ OPT_OWNER, ARG_OWNER },
	{ OPT_FORCE, ARG_FORCE },
	{ OPT_ONCE, ARG_ONCE },
	{ OPT_INTERVAL, ARG_INTERVAL },
	{ OPT_GRACE, ARG_GRACE },
	{ OPT_DRY_RUN, ARG_DRY_RUN },
	{ OPT_LIMIT, ARG_LIMIT },
	{ OPT_ENDED, ARG_ENDED },
};


struct command {
	const char *name;
	int (*run)(struct ctx *);
	unsigned allowed;		/* ARG_ bits */
	unsigned required;
};

/* --- command line ------------------------------------------------------- */

#define ARG_REPORT (ARG_VF | ARG_INSTANCE | ARG_ASSIGNED_AT)

static const struct command commands[] = {
	{ "report-failure", cmd_report_failure, ARG_REPORT, ARG_REPORT },
	{ "report-success", cmd_report_success, ARG_REPORT, ARG_REPORT },
	{ "apply", cmd_apply, ARG_METRICS, 0 },
	{ "show", cmd_show, ARG_VF, 0 },
	{ "quarantine", cmd_quarantine, ARG_VF | ARG_CARD | ARG_REASON |
	    ARG_FORCE, 0 },
	{ "clear", cmd_clear, ARG_VF | ARG_CARD | ARG_REASON, 0 },
	{ "drain", cmd_drain, ARG_VF | ARG_CARD | ARG_REASON, ARG_REASON },
	{ "undrain", cmd_undrain, ARG_VF | ARG_CARD | ARG_REASON, 0 },
	{ "claims", cmd_claims, 0, 0 },
	{ "config", cmd_config, 0, 0 },
	{ "release", cmd_release, ARG_INSTANCE | ARG_DECONFIGURE |
	    ARG_PROC_ROOT | ARG_REASON | ARG_ENDED, ARG_INSTANCE },
	{ "deconfigure", cmd_deconfigure, ARG_VF | ARG_PROC_ROOT | ARG_REASON,
	    ARG_VF },
	{ "reconcile", cmd_reconcile, ARG_ONCE | ARG_INTERVAL | ARG_GRACE |
	    ARG_DRY_RUN | ARG_METRICS | ARG_PROC_ROOT, 0 },
	{ "check", cmd_check, 0, 0 },
	{ "init", cmd_init, ARG_OWNER, 0 },
	{ "edit", cmd_edit, ARG_OPERAND | ARG_REASON, 0 },
	{ "history", cmd_history, ARG_VF | ARG_CARD | ARG_LIMIT, 0 },
};

static const struct option opts[] = {
	CLI_COMMON_OPTIONS,
	{ "vf", required_argument, NULL, OPT_VF },
	{ "card", required_argument, NULL, OPT_CARD },
	{ "instance", required_argument, NULL, OPT_INSTANCE },
	{ "assigned-at", required_argument, NULL, OPT_ASSIGNED_AT },
	{ "reason", required_argument, NULL, OPT_REASON },
	{ "metrics-file", required_argument, NULL, OPT_METRICS },
	{ "deconfigure", no_argument, NULL, OPT_DECONFIGURE },
	{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
	{ "owner", required_argument, NULL, OPT_OWNER },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "ended", required_argument, NULL, OPT_ENDED },
	{ 0 }
};

/* The ARG_ bit of a command option; 0 for a shared one. */
static unsigned
arg_bit(int opt)
{
	size_t i;

	for (i = 0; i < sizeof(arg_bits) / sizeof(*arg_bits); i++)
		if (arg_bits[i].opt == opt)
			return arg_bits[i].bit;
	return 0;
}

/*
 * Shared options go anywhere; a command's own only after it. A flat
 * dispatch: each option and the field it sets.
 */
static void
parse_opts(struct ctx *c, int argc, char **argv, bool sub)
{
	struct args *a = &c->a;
	int opt;

	while ((opt = cli_next(&c->cli, argc, argv, CLI_SHORTOPTS, opts)) !=
	    -1) {
		if (!sub && opt != '?')
			cli_usage_error(&c->cli, "a command's options come "
			    "after the command");
		a->seen |= arg_bit(opt);
		switch (opt) {
		case OPT_VF:
			a->vf = optarg;
			break;
		case OPT_CARD:
			a->card = optarg;
			break;
		case OPT_INSTANCE:
			cli_require_text("--instance", optarg);
			a->instance = optarg;
			break;
		case OPT_ASSIGNED_AT:
			cli_require_text("--assigned-at", optarg);
			a->assigned_at = optarg;
			break;
		case OPT_REASON:
			cli_require_text("--reason", optarg);
			a->reason = optarg;
			break;
		case OPT_METRICS:
			a->metrics = optarg;
			break;
		case OPT_PROC_ROOT:
			a->proc_root = optarg;
			break;
		case OPT_OWNER:
			a->owner = optarg;
			break;
		case OPT_INTERVAL:
			a->interval = optarg;
			break;
		case OPT_GRACE:
			a->grace = optarg;
			break;
		case OPT_LIMIT:
			a->limit = optarg;
			break;
		case OPT_ENDED:
			a->ended = optarg;
			break;
		case OPT_DECONFIGURE:
			a->deconfigure = true;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_ONCE:
			a->once = true;
			break;
		case OPT_DRY_RUN:
			a->dry_run = true;
			break;
		default:
			cli_bad_option(&c->cli, argv);
		}
	}
}

static const struct command *
find_command(struct ctx *c, const char *name)
{
	char msg[128];
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	snprintf(msg, sizeof(msg), "unknown command \"%.64s\"", name);
	cli_usage_error(&c->cli, msg);
}

/*
 * A --vf or --card in the canonical form: the short form lspci prints
 * and upper-case hex are accepted here, on the command line only
 * (SPEC.md 2.3); files and JSON lines take the canonical form alone.
 */
static const char *
canon_addr(const char *arg, char *buf, const char *noun)
{
	char why[512];

	if (arg == NULL || vfaddr_parse_arg(arg, buf) == 0)
		return arg == NULL ? NULL : buf;
	vfaddr_why(noun, arg, why, sizeof(why));
	die(EX_DATAERR, why, NULL);
}

/* "CMD: missing --a, --b": the required options of cmd not given. */
static void
missing_msg(const struct command *cmd, unsigned seen, char *buf, size_t len)
{
	const char *sep = ": missing ";
	size_t i, n;

	n = (size_t)snprintf(buf, len, "%s", cmd->name);
	for (i = 0; opts[i].name != NULL && n < len; i++) {
		if ((cmd->required & ~seen & arg_bit(opts[i].val)) == 0)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s--%s", sep,
		    opts[i].name);
		sep = ", ";
	}
}

/* The usage error naming what cmd does not take: an operand, or the
 * first option (in the table's order) that only other commands have. */
static void
not_allowed(struct ctx *c, const struct command *cmd, int argc,
    char **argv)
{
	unsigned extra = c->a.seen & ~cmd->allowed;
	char msg[256];
	size_t i;

	if (optind < argc) {
		(void)snprintf(msg, sizeof(msg), "%s: unexpected argument: "
		    "%.128s", cmd->name, argv[optind]);
		cli_usage_error(&c->cli, msg);
	}
	for (i = 0; extra != 0 && opts[i].name != NULL; i++) {
		if ((arg_bit(opts[i].val) & extra) == 0)
			continue;
		(void)snprintf(msg, sizeof(msg), "%s: unknown option or "
		    "missing argument: --%s", cmd->name, opts[i].name);
		cli_usage_error(&c->cli, msg);
	}
}

static const struct command *
parse_args(struct ctx *c, int argc, char **argv)
{
	const struct command *cmd;
	char msg[128];

	parse_opts(c, argc, argv, false);
	if (optind >= argc)
		cli_usage_error(&c->cli, "missing command");
	cmd = find_command(c, argv[optind]);
	argc -= optind;
	argv += optind;
	optind = 0;		/* GNU getopt: start over at argv[1] */
	parse_opts(c, argc, argv, true);
	if ((cmd->allowed & ARG_OPERAND) != 0 && optind < argc) {
		c->a.operand = argv[optind++];
		parse_opts(c, argc, argv, true);	/* options after it */
	}
	not_allowed(c, cmd, argc, argv);
	missing_msg(cmd, c->a.seen, msg, sizeof(msg));
	if ((c->a.seen & cmd->required) != cmd->required)
		cli_usage_error(&c->cli, msg);
	c->a.vf = canon_addr(c->a.vf, c->a.vf_buf, "VF");
	c->a.card = canon_addr(c->a.card, c->a.card_buf, "card");
	return cmd;
}

int
main(int argc, char **argv)
{
	const struct command *cmd;
	struct ctx c;
	int rc;

	cli_start(PROG);
	memset(&c, 0, sizeof(c));
	cli_init(&c.cli, usage);
	cmd = parse_args(&c, argc, argv);
	cli_finish(&c.cli, &c.conf);
	if (store_init(&c.s, c.conf.data_dir) < 0)
		die(EX_USAGE, "data dir path too long", "{s:s}", "data_dir",
		    c.conf.data_dir);
	rc = cmd->run(&c);
	if (rc == 0 && c.audit_failed)
		rc = EX_IOERR;
	if (rc == EX_IOERR && ferror(stdout))
		clearerr(stdout);
	cli_close_stdout();
	return rc;
}
