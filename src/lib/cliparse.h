/*
 * cliparse.h - the options every program shares (SPEC.md 2.1), parsed
 * without printing or exiting: each call returns a status and leaves the
 * message in cli->err. The program's side (src/common/cli.h) prints the
 * usage and exits.
 */
#ifndef VFS_CLIPARSE_H
#define VFS_CLIPARSE_H

#include <getopt.h>
#include <stddef.h>

#include "conf.h"

enum {
	CLI_OPT_CONFIG = 'c',
	CLI_OPT_HELP = 'h',
	CLI_OPT_DATA_DIR = 0x100,
	CLI_OPT_SYSFS_ROOT,
	CLI_OPT_LOCK_TIMEOUT,
	CLI_OPT_LOG_LEVEL,
	CLI_OPT_VERSION,
	CLI_OPT_FIRST_FREE = 0x120	/* programs number their own from it */
};

#define CLI_COMMON_OPTIONS \
	{ "config", required_argument, NULL, CLI_OPT_CONFIG }, \
	{ "data-dir", required_argument, NULL, CLI_OPT_DATA_DIR }, \
	{ "sysfs-root", required_argument, NULL, CLI_OPT_SYSFS_ROOT }, \
	{ "lock-timeout", required_argument, NULL, CLI_OPT_LOCK_TIMEOUT }, \
	{ "log-level", required_argument, NULL, CLI_OPT_LOG_LEVEL }, \
	{ "help", no_argument, NULL, CLI_OPT_HELP }, \
	{ "version", no_argument, NULL, CLI_OPT_VERSION }

/* What cliparse_option() made of an option. */
enum cli_kind {
	CLI_OWN,			/* not a shared option: the program's */
	CLI_TAKEN,			/* a shared option, recorded in cli */
	CLI_WANTS_HELP,			/* -h, --help */
	CLI_WANTS_VERSION,		/* --version */
	CLI_BAD				/* a bad value; message in cli->err */
};

struct cli {
	const char *usage;		/* the program's usage text */
	const char *config;		/* -c, or NULL */
	const char *data_dir;		/* --data-dir, or NULL */
	const char *sysfs_root;		/* --sysfs-root, or NULL */
	const char *log_level;		/* --log-level, or NULL */
	unsigned lock_timeout;		/* --lock-timeout, default 10 */
	char err[PATH_MAX + 256];	/* the last failure's message */
	struct conf_load_opts load;	/* how the file is loaded; after a
					 * failure, its key (SPEC 8.1) */
};

/* Sets the defaults; also turns getopt's own messages off (opterr = 0). */
void cliparse_init(struct cli *cli, const char *usage);

/* Records a shared option c (getopt_long's value) with its argument. */
enum cli_kind cliparse_option(struct cli *cli, int c, const char *arg);

/*
 * A whole number in [min, max] for option opt: 0, or -1 with
 * "OPT: invalid value "ARG" (expected MIN..MAX)" in cli->err.
 */
int cliparse_uint(struct cli *cli, const char *opt, const char *arg,
    unsigned min, unsigned max, unsigned *out);

/*
 * The message of a getopt_long() '?' in cli->err, with the argv that
 * getopt_long saw: "unknown option or missing argument: ARG", ARG as
 * given ("--bogus", "--data-dir", "-x").
 */
void cliparse_bad_option(struct cli *cli, char *const *argv);

/*
 * Loads the configuration (conf_load_default()), then applies
 * --data-dir and --sysfs-root over it. 0, or the exit code (EX_CONFIG:
 * the file; EX_USAGE: a path too long) with the message in cli->err.
 */
int cliparse_conf(struct cli *cli, struct conf *conf);

/* The length of the synopsis: the usage text up to its first empty line. */
int cliparse_synopsis_len(const char *usage);

#endif
