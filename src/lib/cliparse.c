/*
 * cliparse.c - the options every program shares (SPEC.md 2.1), parsed
 * without printing or exiting.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cliparse.h"
#include "log.h"

void
cliparse_init(struct cli *cli, const char *usage)
{
	memset(cli, 0, sizeof(*cli));
	cli->usage = usage;
	cli->lock_timeout = 10;
	opterr = 0;	/* cliparse_bad_option() says it, in one format */
}

enum cli_kind
cliparse_option(struct cli *cli, int c, const char *arg)
{
	switch (c) {
	case CLI_OPT_CONFIG:
		cli->config = arg;
		return CLI_TAKEN;
	case CLI_OPT_DATA_DIR:
		cli->data_dir = arg;
		return CLI_TAKEN;
	case CLI_OPT_SYSFS_ROOT:
		cli->sysfs_root = arg;
		return CLI_TAKEN;
	case CLI_OPT_LOCK_TIMEOUT:
		return cliparse_uint(cli, "--lock-timeout", arg, 0, 86400,
		    &cli->lock_timeout) == 0 ? CLI_TAKEN : CLI_BAD;
	case CLI_OPT_LOG_LEVEL:
		if (log_set_level_name(arg) < 0) {
			(void)snprintf(cli->err, sizeof(cli->err),
			    "--log-level: expected debug, info, warn or error");
			return CLI_BAD;
		}
		cli->log_level = arg;
		return CLI_TAKEN;
	case CLI_OPT_HELP:
		return CLI_WANTS_HELP;
	case CLI_OPT_VERSION:
		return CLI_WANTS_VERSION;
	default:
		return CLI_OWN;
	}
}

int
cliparse_uint(struct cli *cli, const char *opt, const char *arg,
    unsigned min, unsigned max, unsigned *out)
{
	if (conf_parse_uint(arg, min, max, out) == 0)
		return 0;
	/* The message is for a person: a truncated argument still says it. */
	(void)snprintf(cli->err, sizeof(cli->err),
	    "%s: invalid value \"%.200s\" (expected %u..%u)", opt, arg, min,
	    max);
	return -1;
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
		(void)snprintf(buf, len, "%s", prev);
	else if (optopt > 0 && optopt < 0x80)
		(void)snprintf(buf, len, "-%c", optopt);
	else
		(void)snprintf(buf, len, "%s", prev);
}

void
cliparse_bad_option(struct cli *cli, char *const *argv)
{
	char arg[128];

	bad_arg(argv, arg, sizeof(arg));	/* truncation: still readable */
	(void)snprintf(cli->err, sizeof(cli->err),
	    "unknown option or missing argument: %s", arg);
}

static int
set_path(struct cli *cli, char *dst, const char *src, const char *opt)
{
	if (strlen(src) >= PATH_MAX) {
		(void)snprintf(cli->err, sizeof(cli->err),
		    "%s: path too long (at most %d bytes)", opt, PATH_MAX - 1);
		return EX_USAGE;
	}
	strcpy(dst, src);
	return 0;
}

int
cliparse_conf(struct cli *cli, struct conf *conf)
{
	conf_defaults(conf);
	if (conf_load_default_as(conf, cli->config, &cli->load, cli->err,
	    sizeof(cli->err)) < 0)
		return EX_CONFIG;
	if (cli->data_dir != NULL &&
	    set_path(cli, conf->data_dir, cli->data_dir, "--data-dir") != 0)
		return EX_USAGE;
	if (cli->sysfs_root != NULL && set_path(cli, conf->sysfs_root,
	    cli->sysfs_root, "--sysfs-root") != 0)
		return EX_USAGE;
	return 0;
}

int
cliparse_synopsis_len(const char *usage)
{
	const char *end = strstr(usage, "\n\n");

	return end != NULL ? (int)(end - usage + 1) : (int)strlen(usage);
}
