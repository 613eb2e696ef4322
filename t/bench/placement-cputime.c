/*
 * placement-cputime - runs a command (stdout and stderr to /dev/null)
 * and prints the CPU time it used, user plus system, in microseconds,
 * from wait4(2)'s rusage. CPU time, unlike wall time, does not grow when
 * other jobs share the machine's cores, so side-by-side ratios stay
 * meaningful on a busy 2-core box.
 *
 * usage: placement-cputime CMD [ARGS...]
 * Exit codes: 0 the command exited 0; 1 it failed; 64 usage; 71 fork.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static long long
usec(const struct timeval *tv)
{
	return (long long)tv->tv_sec * 1000000 + tv->tv_usec;
}

static void
child(char **argv)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	execvp(argv[0], argv);
	_exit(127);
}

int
main(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;

	if (argc < 2) {
		fputs("usage: placement-cputime CMD [ARGS...]\n", stderr);
		return 64;
	}
	if ((pid = fork()) == -1)
		return 71;
	if (pid == 0)
		child(argv + 1);
	if (wait4(pid, &status, 0, &ru) == -1)
		return 71;
	printf("%lld\n", usec(&ru.ru_utime) + usec(&ru.ru_stime));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
