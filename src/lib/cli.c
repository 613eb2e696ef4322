/*
 * cli.c - the options every program shares (SPEC.md 2.1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "utf8.h"
#include "sig.h"
#include "store.h"

void
cli_start(const char *prog)
{
	log_init(prog);
	if (sig_start() < 0)
		die(EX_OSERR, "cannot reset the signal state", "{s:s}",
		    "error", strerror(errno));
}

void
cli_stop_signals(bool restart)
{
	if (sig_stop_install(restart) < 0)
		die(EX_OSERR, "cannot install the stop signal handlers",
		    "{s:s}", "error", strerror(errno));
}

int
cli_next(struct cli *cli, int argc, char **argv, const char *shortopts,
    const struct option *opts)
{
	int c;

	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1)
		if (!cli_option(cli, c, optarg))
			return c;
	return -1;
}

void
cli_stop_log(const struct stop *s)
{
	if (s->why == STOP_PEER)
		log_msg(LVL_WARN, "stdout reader gone", NULL);
	if (s->why == STOP_OUTPUT)
		log_msg(LVL_ERROR, "write stdout failed", "{s:s}", "error",
		    strerror(s->err));
}

int
cli_stop_close(int code)
{
	if (code == EX_IOERR)
		fclose(stdout);		/* already failed; nothing to flush */
	else
		cli_close_stdout();
	return code;
}

void
cli_init(struct cli *cli, const char *usage)
{
	memset(cli, 0, sizeof(*cli));
	cli->usage = usage;
	cli->lock_timeout = 10;
	opterr = 0;		/* cli_bad_option() says it, in one format */
}

noreturn void
cli_usage_error(const struct cli *cli, const char *msg)
{
	const char *end = strstr(cli->usage, "\n\n");
	int len = end != NULL ? (int)(end - cli->usage + 1) :
	    (int)strlen(cli->usage);

	if (msg != NULL)
		fprintf(stderr, "%s: %s\n", log_prog(), msg);
	fprintf(stderr, "%.*sRun '%s --help' to see what each option does.\n",
	    len, cli->usage, log_prog());
	exit(EX_USAGE);
}

/*
 * The argument getopt_long() just refused. A long option ("--bogus", or
 * "--data-dir" without its value) is the element before optind. A short
 * one is optopt; inside a cluster ("-xZ") optind has not moved past the
 * cluster yet, so the element before optind is not it.
 */
static void
bad_arg(char *const *argv, char *buf, size_t len)
{
	const char *prev = optind > 0 ? argv[optind - 1] : "";
	const char *cur = argv[optind];
	bool in_cluster = cur != NULL && cur[0] == '-' && cur[1] != '-' &&
	    optopt > 0 && optopt < 0x80 && strchr(cur + 1, optopt) != NULL;

	if (!in_cluster && strncmp(prev, "--", 2) == 0)
		snprintf(buf, len, "%s", prev);
	else if (optopt > 0 && optopt < 0x80)
		snprintf(buf, len, "-%c", optopt);
	else
		snprintf(buf, len, "%s", prev);
}

void
cli_bad_option(const struct cli *cli, char *const *argv)
{
	char arg[128], msg[256];

	bad_arg(argv, arg, sizeof(arg));
	snprintf(msg, sizeof(msg), "unknown option or missing argument: %s",
	    arg);
	cli_usage_error(cli, msg);
}

unsigned
cli_uint(const struct cli *cli, const char *opt, const char *arg,
    unsigned min, unsigned max)
{
	char msg[256];
	unsigned v;

	if (conf_parse_uint(arg, min, max, &v) == 0)
		return v;
	snprintf(msg, sizeof(msg), "%s: invalid value \"%s\" (expected %u..%u)",
	    opt, arg, min, max);
	cli_usage_error(cli, msg);
}

static noreturn void
print_and_exit(const char *text)
{
	fputs(text, stdout);
	cli_close_stdout();
	exit(EX_OK);
}

bool
cli_option(struct cli *cli, int c, const char *arg)
{
	char ver[128];

	switch (c) {
	case CLI_OPT_CONFIG:
		cli->config = arg;
		return true;
	case CLI_OPT_DATA_DIR:
		cli->data_dir = arg;
		return true;
	case CLI_OPT_SYSFS_ROOT:
		cli->sysfs_root = arg;
		return true;
	case CLI_OPT_LOCK_TIMEOUT:
		cli->lock_timeout = cli_uint(cli, "--lock-timeout", arg, 0,
		    86400);
		return true;
	case CLI_OPT_LOG_LEVEL:
		if (log_set_level_name(arg) < 0)
			cli_usage_error(cli, "--log-level: expected debug, "
			    "info, warn or error");
		cli->log_level = arg;
		return true;
	case CLI_OPT_HELP:
		print_and_exit(cli->usage);
	case CLI_OPT_VERSION:
		snprintf(ver, sizeof(ver), "%s (vfsentinel) %s\n", log_prog(),
		    VFS_VERSION);
		print_and_exit(ver);
	default:
		return false;
	}
}

static void
set_path(char *dst, const char *src, const char *opt)
{
	if (strlen(src) >= PATH_MAX)
		die(EX_USAGE, "path too long", "{s:s}", "option", opt);
	strcpy(dst, src);
}

void
cli_finish(const struct cli *cli, struct conf *conf)
{
	char err[PATH_MAX + 256];

	conf_defaults(conf);
	if (conf_load_default(conf, cli->config, err, sizeof(err)) < 0)
		die(EX_CONFIG, "cannot load configuration", "{s:s}", "error",
		    err);
	if (cli->data_dir != NULL)
		set_path(conf->data_dir, cli->data_dir, "--data-dir");
	if (cli->sysfs_root != NULL)
		set_path(conf->sysfs_root, cli->sysfs_root, "--sysfs-root");
}

void
cli_die_nomem(const struct store *s)
{
	if (s->nomem)
		die(EX_OSERR, "out of memory", "{s:s}", "error", s->why);
}

void
cli_close_stdout(void)
{
	if (fflush(stdout) == EOF || ferror(stdout) || fclose(stdout) == EOF)
		die(EX_IOERR, "write stdout failed", "{s:s}", "error",
		    strerror(errno ? errno : EIO));
}

void
cli_require_text(const char *opt, const char *arg)
{
	if (utf8_valid_str(arg))
		return;
	die(EX_DATAERR, "argument is not valid UTF-8; nothing was written",
	    "{s:s}", "option", opt);
}
