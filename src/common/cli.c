/*
 * cli.c - the skeleton every program shares: prints the usage and exits
 * where src/lib/cliparse.c returned a status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "sig.h"
#include "store.h"
#include "utf8.h"

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

void
cli_init(struct cli *cli, const char *usage)
{
	cliparse_init(cli, usage);
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

noreturn void
cli_usage_error(const struct cli *cli, const char *msg)
{
	if (msg != NULL)
		fprintf(stderr, "%s: %s\n", log_prog(), msg);
	fprintf(stderr, "%.*sRun '%s --help' to see what each option does.\n",
	    cliparse_synopsis_len(cli->usage), cli->usage, log_prog());
	exit(EX_USAGE);
}

void
cli_bad_option(struct cli *cli, char *const *argv)
{
	cliparse_bad_option(cli, argv);
	cli_usage_error(cli, cli->err);
}

void
cli_no_operands(const struct cli *cli, int argc, char *const *argv)
{
	char msg[192];

	if (optind >= argc)
		return;
	/* Cut, not refused: the message must still come out. */
	(void)snprintf(msg, sizeof(msg), "unexpected argument: %.128s",
	    argv[optind]);
	cli_usage_error(cli, msg);
}

unsigned
cli_uint(struct cli *cli, const char *opt, const char *arg, unsigned min,
    unsigned max)
{
	unsigned v;

	if (cliparse_uint(cli, opt, arg, min, max, &v) < 0)
		cli_usage_error(cli, cli->err);
	return v;
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

	switch (cliparse_option(cli, c, arg)) {
	case CLI_OWN:
		return false;
	case CLI_TAKEN:
		return true;
	case CLI_WANTS_HELP:
		print_and_exit(cli->usage);
	case CLI_WANTS_VERSION:
		(void)snprintf(ver, sizeof(ver), "%s (vfsentinel) %s\n",
		    log_prog(), VFS_VERSION);
		print_and_exit(ver);
	case CLI_BAD:
	default:
		cli_usage_error(cli, cli->err);
	}
}

void
cli_finish(struct cli *cli, struct conf *conf)
{
	int code = cliparse_conf(cli, conf);

	if (code == EX_CONFIG)
		die(EX_CONFIG, "cannot load configuration", "{s:s, s:s}",
		    "error", cli->err, "stops",
		    conf_key_stops(cli->load.bad_key));
	if (code != 0)
		die(code, "bad option", "{s:s}", "error", cli->err);
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
cli_require_text(const char *opt, const char *arg)
{
	if (utf8_valid_str(arg))
		return;
	die(EX_DATAERR, "argument is not valid UTF-8; nothing was written",
	    "{s:s}", "option", opt);
}
