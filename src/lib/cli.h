/*
 * cli.h - the options every program shares (SPEC.md 2.1).
 *
 * Each program lists its own getopt_long table and includes the entries
 * below; its loop takes the options from cli_next(), which hands every
 * one to cli_option() first and returns only the program's own:
 *
 *	static const struct option opts[] = {
 *		CLI_COMMON_OPTIONS,
 *		{ "once", no_argument, NULL, 'o' },
 *		{ 0 }
 *	};
 *	cli_start(PROG);		(first thing in main)
 *	...
 *	cli_init(&cli, usage);
 *	while ((c = cli_next(&cli, argc, argv, "+c:h", opts)) != -1) {
 *		switch (c) { ... default: cli_bad_option(&cli, argv); }
 *	}
 *	cli_finish(&cli, &conf);	(loads config, applies overrides)
 */
#ifndef VFS_CLI_H
#define VFS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdnoreturn.h>

#include "conf.h"
#include "wait.h"

enum {
	CLI_OPT_CONFIG = 'c',
	CLI_OPT_HELP = 'h',
	CLI_OPT_DATA_DIR = 0x100,
	CLI_OPT_SYSFS_ROOT,
	CLI_OPT_LOCK_TIMEOUT,
	CLI_OPT_LOG_LEVEL,
	CLI_OPT_VERSION,
	CLI_OPT_FIRST_FREE = 0x120	/* programs number their own from here */
};

#define CLI_COMMON_OPTIONS \
	{ "config", required_argument, NULL, CLI_OPT_CONFIG }, \
	{ "data-dir", required_argument, NULL, CLI_OPT_DATA_DIR }, \
	{ "sysfs-root", required_argument, NULL, CLI_OPT_SYSFS_ROOT }, \
	{ "lock-timeout", required_argument, NULL, CLI_OPT_LOCK_TIMEOUT }, \
	{ "log-level", required_argument, NULL, CLI_OPT_LOG_LEVEL }, \
	{ "help", no_argument, NULL, CLI_OPT_HELP }, \
	{ "version", no_argument, NULL, CLI_OPT_VERSION }

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

struct cli {
	const char *usage;		/* the program's usage text */
	const char *config;		/* -c, or NULL */
	const char *data_dir;		/* --data-dir, or NULL */
	const char *sysfs_root;		/* --sysfs-root, or NULL */
	const char *log_level;		/* --log-level, or NULL */
	unsigned lock_timeout;		/* --lock-timeout, default 10 */
};

/*
 * The first call of every main: log_init(prog), then sig_start() (no
 * inherited blocked signals, SIGTERM not ignored, SIGPIPE ignored so a
 * closed stdout exits 74). Exits 71 if the signal state cannot be set.
 */
void cli_start(const char *prog);

/* sig_stop_install(restart), or exit 71 with the reason logged. */
void cli_stop_signals(bool restart);

/*
 * getopt_long(3) over argv with shortopts and opts, the shared options
 * handled by cli_option(): the next option of the program's own, or -1
 * at the end. optarg as getopt_long leaves it.
 */
int cli_next(struct cli *cli, int argc, char **argv, const char *shortopts,
    const struct option *opts);

/* Logs a stop for stdout (s->why STOP_PEER or STOP_OUTPUT, wait.h). */
void cli_stop_log(const struct stop *s);

/*
 * Closes stdout at the end of a run that exits with code: after a
 * stdout failure (74) there is nothing to flush, else cli_close_stdout().
 * Returns code.
 */
int cli_stop_close(int code);

/* Sets the defaults; also turns getopt's own messages off (opterr = 0). */
void cli_init(struct cli *cli, const char *usage);

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
 * argument: ARG" and the usage on stderr, exit 64. ARG is the option as
 * given ("--bogus", "--data-dir", "-x").
 */
noreturn void cli_bad_option(const struct cli *cli, char *const *argv);

/* Parses a whole number of seconds (or count) for an option; exits 64 on
 * a bad value, naming the option. */
unsigned cli_uint(const struct cli *cli, const char *opt, const char *arg,
    unsigned min, unsigned max);

/*
 * Loads the configuration (exit 78 with the reason on error), then applies
 * --data-dir, --sysfs-root and --log-level over it.
 */
void cli_finish(const struct cli *cli, struct conf *conf);

struct store;

/*
 * Call where a store load returned -1: if it ran out of memory
 * (s->nomem), exits 71 ("out of memory", SPEC 2.2: an OS error), never
 * "store unavailable" (69); otherwise returns.
 */
void cli_die_nomem(const struct store *s);

/* Flushes and closes stdout; a failure exits 74 ("write stdout: ..."). */
void cli_close_stdout(void);

/*
 * SPEC 2.3: a string that a program stores or emits from its arguments
 * must be valid UTF-8 (utf8_valid()); otherwise this exits 65 naming the
 * option, before anything is written. NULL (not given) passes.
 */
void cli_require_text(const char *opt, const char *arg);

#endif
