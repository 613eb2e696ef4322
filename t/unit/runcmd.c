/*
 * runcmd.c - unit tests (TAP) for src/lib/runcmd.c: a command's child
 * plumbing (runcmd_child_stdio, which gpu-probe's attempts share), the
 * group kill, and runcmd_run's status, output and timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "io.h"
#include "runcmd.h"
#include "tap.h"

static void
on_term(int sig)
{
	(void)sig;
}

/* Reads fd to its end (or 5 s): the bytes, NUL-terminated, in buf. */
static size_t
read_all(int fd, char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t n = 0;
	ssize_t got;

	while (n + 1 < len && poll(&pfd, 1, 5000) > 0) {
		got = read(fd, buf + n, len - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	return n;
}

/* The child's checks: 0 when all hold, else the number of the first
 * that failed (its exit status). */
static int
child_checks(void)
{
	struct sigaction sa;
	sigset_t cur;
	char c;

	if (read(STDIN_FILENO, &c, 1) != 0)
		return 2;
	if (sigprocmask(SIG_SETMASK, NULL, &cur) < 0 ||
	    sigismember(&cur, SIGTERM))
		return 3;
	if (sigaction(SIGPIPE, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL ||
	    sigaction(SIGTERM, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL)
		return 4;
	if (write(STDOUT_FILENO, "out\n", 4) != 4 ||
	    write(STDERR_FILENO, "err\n", 4) != 4)
		return 5;
	return 0;
}

static void
test_child_stdio(void)
{
	char buf[64];
	sigset_t term;
	int p[2], status = -1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		abort();
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &term, NULL) < 0 ||
	    signal(SIGPIPE, SIG_IGN) == SIG_ERR ||
	    signal(SIGTERM, on_term) == SIG_ERR || (pid = fork()) < 0)
		abort();
	if (pid == 0)
		_exit(runcmd_child_stdio(p[1]) < 0 ? 1 : child_checks());
	close(p[1]);
	read_all(p[0], buf, sizeof(buf));
	close(p[0]);
	(void)waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: stdin "
	    "/dev/null, nothing blocked, default SIGPIPE and SIGTERM "
	    "(status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	is_str(buf, "out\nerr\n", "child: stdout and stderr into the pipe");
	if (sigprocmask(SIG_UNBLOCK, &term, NULL) < 0 ||
	    signal(SIGTERM, SIG_DFL) == SIG_ERR)
		abort();
}

/* A leader whose grandchild holds the pipe: the kill reaches both. */
static void
test_kill_group(void)
{
	char buf[16];
	long long t0;
	int p[2];
	pid_t pid;

	if (pipe(p) < 0 || (pid = fork()) < 0)
		abort();
	if (pid == 0) {
		(void)setpgid(0, 0);
		if (fork() == 0)
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	(void)setpgid(pid, pid);
	close(p[1]);
	usleep(100000);
	t0 = io_now_ms();
	runcmd_kill_group(pid);
	(void)waitpid(pid, NULL, 0);
	read_all(p[0], buf, sizeof(buf));
	close(p[0]);
	ok(io_now_ms() - t0 < 4000, "kill_group: the grandchild holding "
	    "the pipe died too (%lld ms)", io_now_ms() - t0);
}

static void
test_run(void)
{
	char *const args[] = { (char *)"cmd", (char *)"A1", NULL };
	char *const env[] = { (char *)"RUNCMD_T=E1", NULL };
	struct runcmd_result r;

	ok(runcmd_run("echo \"$0 $1 $RUNCMD_T\"; read x; echo \"in=$x\" >&2; "
	    "exit 3", args, env, 10, &r) == 0, "run: started");
	ok(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3 &&
	    !r.timed_out && !runcmd_ok(&r), "run: exit 3, not ok");
	is_str(r.output, "cmd A1 E1\nin=\n", "run: $0, $1, env, stdin "
	    "/dev/null, stderr kept");
	runcmd_release(&r);
	ok(runcmd_run("exec sleep 30", NULL, NULL, 1, &r) == 0 &&
	    r.timed_out && !runcmd_ok(&r), "run: killed at the timeout");
	runcmd_release(&r);
}

int
main(void)
{
	test_child_stdio();
	test_kill_group();
	test_run();
	return done_testing();
}
