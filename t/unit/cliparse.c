/*
 * cliparse.c - unit tests (TAP) for the library half of the shared
 * options: every outcome is a status and a message, nothing is printed
 * and nothing exits (the program's half, src/common/cli.c, does that).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "cliparse.h"
#include "tap.h"

static const char usage[] = "usage: x [-c FILE]\n       x -h\n\nMore.\n";

static void
test_option(void)
{
	struct cli cli;

	cliparse_init(&cli, usage);
	ok(cli.lock_timeout == 10 && opterr == 0, "defaults; getopt quiet");
	ok(cliparse_option(&cli, CLI_OPT_CONFIG, "/f") == CLI_TAKEN &&
	    strcmp(cli.config, "/f") == 0, "-c is taken and kept");
	ok(cliparse_option(&cli, CLI_OPT_HELP, NULL) == CLI_WANTS_HELP,
	    "--help is a status, not an exit");
	ok(cliparse_option(&cli, CLI_OPT_VERSION, NULL) == CLI_WANTS_VERSION,
	    "--version is a status");
	ok(cliparse_option(&cli, 'o', NULL) == CLI_OWN, "a program option");
	ok(cliparse_option(&cli, CLI_OPT_LOCK_TIMEOUT, "7") == CLI_TAKEN &&
	    cli.lock_timeout == 7, "--lock-timeout 7");
	ok(cliparse_option(&cli, CLI_OPT_LOCK_TIMEOUT, "x") == CLI_BAD,
	    "--lock-timeout x is bad");
	is_str(cli.err, "--lock-timeout: invalid value \"x\" (expected "
	    "0..86400)", "the message names the option and the range");
	ok(cliparse_option(&cli, CLI_OPT_LOG_LEVEL, "loud") == CLI_BAD &&
	    strstr(cli.err, "debug, info, warn or error") != NULL,
	    "--log-level loud is bad, and says what is accepted");
}

static void
test_uint(void)
{
	struct cli cli;
	unsigned v = 99;

	cliparse_init(&cli, usage);
	ok(cliparse_uint(&cli, "--n", "12", 1, 20, &v) == 0 && v == 12,
	    "a whole number in range");
	ok(cliparse_uint(&cli, "--n", "21", 1, 20, &v) == -1 &&
	    strcmp(cli.err, "--n: invalid value \"21\" (expected 1..20)") == 0,
	    "out of range: -1 and the message");
	ok(cliparse_uint(&cli, "--n", "-1", 0, 20, &v) == -1, "negative");
}

static void
test_bad_option(void)
{
	char *argv[] = { "x", "--bogus", NULL };
	struct cli cli;

	cliparse_init(&cli, usage);
	optind = 2;
	optopt = 0;
	cliparse_bad_option(&cli, argv);
	is_str(cli.err, "unknown option or missing argument: --bogus",
	    "a long option as given");
}

static void
test_conf(void)
{
	char dir[PATH_MAX], path[PATH_MAX], longp[PATH_MAX + 8];
	struct conf conf;
	struct cli cli;
	FILE *f;
	int n;

	tap_tmpdir(dir, sizeof(dir), "cliparse");
	n = snprintf(path, sizeof(path), "%s/conf", dir);
	f = n > 0 && (size_t)n < sizeof(path) ? fopen(path, "w") : NULL;
	ok(f != NULL, "a temporary configuration");
	if (f == NULL) {
		rmdir(dir);
		return;
	}
	fputs("sentinel.interval = 0\n", f);
	fclose(f);
	cliparse_init(&cli, usage);
	cli.config = path;
	ok(cliparse_conf(&cli, &conf) == EX_CONFIG &&
	    strstr(cli.err, ":1: ") != NULL, "a bad file: 78, FILE:LINE");
	f = fopen(path, "w");
	fputs("sentinel.interval = 3\n", f);
	fclose(f);
	cli.data_dir = "/srv/d";
	ok(cliparse_conf(&cli, &conf) == 0 && conf.interval == 3 &&
	    strcmp(conf.data_dir, "/srv/d") == 0, "file, then --data-dir");
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	cli.sysfs_root = longp;
	ok(cliparse_conf(&cli, &conf) == EX_USAGE &&
	    strstr(cli.err, "--sysfs-root: path too long") == cli.err,
	    "a path option too long: 64, naming it");
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	test_option();
	test_uint();
	test_bad_option();
	test_conf();
	ok(cliparse_synopsis_len(usage) == 31, "the synopsis ends at the "
	    "first empty line");
	return done_testing();
}
