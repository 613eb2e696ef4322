/*
 * kmsg-rss - runs a command and prints its peak resident set size in KiB
 * (getrusage's ru_maxrss of the waited-for child), for the kmsg-watch
 * benchmark; GNU time is not installed everywhere.
 *
 *	kmsg-rss CMD [ARG...]
 *
 * The command's stdout goes to /dev/null. Exits with the command's status
 * (126/127 when it could not be run, 64 usage, 71 fork failed).
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void
child(char **argv)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
		_exit(126);
	execvp(argv[0], argv);
	perror(argv[0]);
	_exit(127);
}

int
main(int argc, char **argv)
{
	struct rusage ru;
	pid_t pid;
	int status;

	if (argc < 2) {
		fputs("usage: kmsg-rss CMD [ARG...]\n", stderr);
		return 64;
	}
	pid = fork();
	if (pid < 0)
		return 71;
	if (pid == 0)
		child(argv + 1);
	if (wait4(pid, &status, 0, &ru) < 0)
		return 71;
	printf("%ld\n", ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
