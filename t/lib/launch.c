/*
 * launch - test aid: starts a program the way careless launchers do, with
 * signals blocked or ignored, or with a stdout nobody reads any more.
 *
 * usage: launch [-b SIG]... [-i SIG]... [-p] PROG [ARGS...]
 *
 *	-b SIG	block SIG (a number or TERM, INT, HUP, QUIT, CHLD, PIPE)
 *	-i SIG	ignore SIG (SIG_IGN survives execve(2), as a blocked mask does)
 *	-p	make stdout a pipe whose read end is already closed, so the
 *		program's first write fails with EPIPE (or raises SIGPIPE)
 *		whatever the timing
 *
 * Exits 64 on a usage error, 71 if the set-up or the exec fails.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *name;
	int sig;
} names[] = {
	{ "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP },
	{ "QUIT", SIGQUIT }, { "CHLD", SIGCHLD }, { "PIPE", SIGPIPE },
};

static int
signum(const char *s)
{
	size_t i;
	int n;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].sig;
	n = atoi(s);
	if (n <= 0 || n >= NSIG) {
		fprintf(stderr, "launch: unknown signal %s\n", s);
		exit(64);
	}
	return n;
}

/* Leaves fd 1 as the write end of a pipe with no reader left. */
static void
closed_stdout(void)
{
	int p[2];

	if (pipe(p) < 0 || dup2(p[1], STDOUT_FILENO) < 0) {
		perror("launch: pipe");
		exit(71);
	}
	close(p[0]);
	if (p[1] != STDOUT_FILENO)
		close(p[1]);
}

int
main(int argc, char **argv)
{
	sigset_t block;
	int c;

	sigemptyset(&block);
	while ((c = getopt(argc, argv, "+b:i:p")) != -1) {
		if (c == 'b')
			sigaddset(&block, signum(optarg));
		else if (c == 'i')
			signal(signum(optarg), SIG_IGN);
		else if (c == 'p')
			closed_stdout();
		else
			return 64;
	}
	if (optind >= argc) {
		fputs("usage: launch [-b SIG]... [-i SIG]... [-p] PROG "
		    "[ARGS...]\n", stderr);
		return 64;
	}
	if (sigprocmask(SIG_BLOCK, &block, NULL) < 0) {
		perror("launch: sigprocmask");
		return 71;
	}
	execvp(argv[optind], argv + optind);
	perror("launch: exec");
	return 71;
}
