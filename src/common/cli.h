/*
 * cli.h - the skeleton every program shares: the top-level half of the
 * options of SPEC.md 2.1 (src/lib/cliparse.h parses them and returns a
 * status; this prints the usage and exits), and the start and end of a
 * run. Only programs call these, from main or the functions main calls
 * to read its arguments: the library never prints and never exits.
 *
 * Each program lists its own getopt_long table and includes the entries
 * of CLI_COMMON_OPTIONS; its loop takes the options from cli_next(),
 * which handles the shared ones and returns only the program's own:
 *
 *	static const struct option opts[] = {
 *		CLI_COMMON_OPTIONS,
 *		{ "once", no_argument, NULL, 'o' },
 *		{ 0 }
 *	};
 *	cli_start(PROG);		(first thing in main)
 *	...
 *	cli_init(&cli, usage);
 *	while ((c = cli_next(&cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
 *		switch (c) {
 *		case OPT_ONCE:
 *			once = true;
 *			break;
 *		default:
 *			cli_bad_option(&cli, argv);
 *		}
 *	}
 *	cli_finish(&cli, &conf);	(loads config, applies overrides)
 *
 * That is the one shape in every program: one switch over cli_next(),
 * a case for each of the program's own options, and a default: that
 * calls the one usage path (cli_bad_option() for getopt_long's '?').
 */
#ifndef VFS_CLI_H
#define VFS_CLI_H

#include <stdbool.h>
#include <stdnoreturn.h>

#include "cliparse.h"
#include "conf.h"
#include "wait.h"

/*
 * Every program's short options: -c FILE and -h (the rest are long).
 * The leading "+" stops at the first operand, as POSIX getopt does: a
 * command's own options (vfstore CMD --vf ...) and libvirt-hook's four
 * arguments are never taken for the program's; a program without
 * operands refuses a stray word the same way (cli_no_operands()).
 */
#define CLI_SHORTOPTS "+c:h"

/* The --help lines of the shared options of a program that reads the
 * store and sysfs (vfpick, resources-report), as their man pages say. */
#define CLI_HELP_HOST_OPTIONS \
  "  -c, --config FILE     configuration file (default $VFSENTINEL_CONF,\n" \
  "                        else /etc/vfsentinel/vfsentinel.conf)\n" \
  "  --data-dir DIR        host state directory; the files are in DIR/gpu\n" \
  "                        (default data_dir, else /var/lib/vfsentinel)\n" \
  "  --sysfs-root DIR      prefix for /sys (default sysfs_root, else /)\n" \
  "  --lock-timeout S      seconds to wait for the store lock (default 10)\n" \
  "  --log-level LEVEL     debug, info, warn or error (default info)\n"

/*
 * The first call of every main: log_init(prog), then sig_start() (no
 * inherited blocked signals, SIGTERM not ignored, SIGPIPE ignored so a
 * closed stdout exits 74). Exits 71 if the signal state cannot be set.
 */
void cli_start(const char *prog);

/* sig_stop_install(restart), or exit 71 with the reason logged. */
void cli_stop_signals(bool restart);

/* cliparse_init(). */
void cli_init(struct cli *cli, const char *usage);

/*
 * getopt_long(3) over argv with shortopts and opts: the next option of
 * the program's own, or -1 at the end; the shared ones are handled by
 * cli_option(). optarg as getopt_long leaves it.
 */
int cli_next(struct cli *cli, int argc, char **argv, const char *shortopts,
    const struct option *opts);

/*
 * Handles a shared option: returns true if c was one. --help prints the
 * usage and exits 0, --version prints "PROG (vfsentinel) X.Y.Z" and exits
 * 0, a bad value is a usage error (exit 64).
 */
bool cli_option(struct cli *cli, int c, const char *arg);

/*
 * Prints "PROG: msg" (if msg), the synopsis (the usage text up to its
 * first empty line; --help prints all of it, the options and what each
 * does) and "Run 'PROG --help' ..." to stderr, exits 64.
 */
noreturn void cli_usage_error(const struct cli *cli, const char *msg);

/*
 * The usage error of a getopt_long() '?' (call it from the default: case
 * with the argv getopt_long saw): "PROG: unknown option or missing
 * argument: ARG" and the usage on stderr, exit 64.
 */
noreturn void cli_bad_option(struct cli *cli, char *const *argv);

/*
 * The usage error of operands a program does not take, when optind <
 * argc: "PROG: unexpected argument: ARG" (ARG is argv[optind]) and the
 * usage on stderr, exit 64. Returns when there is none.
 */
void cli_no_operands(const struct cli *cli, int argc, char *const *argv);

/* cliparse_uint(), or the usage error naming the option and the range. */
unsigned cli_uint(struct cli *cli, const char *opt, const char *arg,
    unsigned min, unsigned max);

/*
 * cliparse_conf(), or exit: 78 with the reason (the configuration), 64
 * (a path option too long).
 */
void cli_finish(struct cli *cli, struct conf *conf);

struct store;

/*
 * Call where a store load returned -1: if it ran out of memory
 * (s->nomem), exits 71 ("out of memory", SPEC 2.2: an OS error), never
 * "store unavailable" (69); otherwise returns.
 */
void cli_die_nomem(const struct store *s);

/* Flushes and closes stdout; a failure exits 74 ("write stdout: ..."). */
void cli_close_stdout(void);

/* Logs a stop for stdout (s->why STOP_PEER or STOP_OUTPUT, wait.h). */
void cli_stop_log(const struct stop *s);

/*
 * Closes stdout at the end of a run that exits with code: after a
 * stdout failure (74) there is nothing to flush, else cli_close_stdout().
 * Returns code.
 */
int cli_stop_close(int code);

/*
 * SPEC 2.3: a string that a program stores or emits from its arguments
 * must be valid UTF-8 (utf8_valid()); otherwise this exits 65 naming the
 * option, before anything is written. NULL (not given) passes.
 */
void cli_require_text(const char *opt, const char *arg);

#endif
