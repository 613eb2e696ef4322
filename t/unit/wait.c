/*
 * wait.c - unit tests for src/lib/wait.c: waiting while watching the
 * reader of stdout, the stop reasons and their exit codes; and
 * io_fd_limit_fit(), the open-files fit of sentinel-poll and
 * vsock-answer.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <unistd.h>

#include "io.h"
#include "sig.h"
#include "tap.h"
#include "wait.h"

/* stdout becomes the write end of a pipe; *rd gets the read end. */
static int
stdout_pipe(int *rd)
{
	int p[2];

	if (pipe(p) < 0 || dup2(p[1], STDOUT_FILENO) < 0)
		return -1;
	close(p[1]);
	*rd = p[0];
	return 0;
}

static void
test_wait(void)
{
	struct stop s = { RUNNING, 0 };
	int in[2], rd = -1, saved = dup(STDOUT_FILENO);
	long long t0;

	if (!ok(saved >= 0 && pipe(in) == 0 && stdout_pipe(&rd) == 0,
	    "pipes"))
		return;
	t0 = io_now_ms();
	ok(wait_fd(&s, in[0], 50) == 0 && s.why == RUNNING,
	    "timeout: 0, still running");
	ok(io_now_ms() - t0 >= 40, "timeout waited");
	ok(write(in[1], "x", 1) == 1 && wait_fd(&s, in[0], 1000) == 1,
	    "readable: 1");
	ok(wait_nap(&s, 0) == 0, "nap of 0 s returns 0");
	close(rd);
	ok(wait_fd(&s, -1, 5000) == -1 && s.why == STOP_PEER,
	    "reader gone: -1, STOP_PEER");
	ok(wait_exit_code(&s) == EX_IOERR, "peer gone: exit 74");
	wait_stop_set(&s, STOP_MEMORY, ENOMEM);
	ok(s.why == STOP_PEER, "the first reason stays");
	ok(wait_nap(&s, 1) == -1, "nap when stopping: -1");
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(in[0]);
	close(in[1]);
}

static void
test_codes(void)
{
	struct stop s = { RUNNING, 0 };

	ok(wait_exit_code(&s) == 0, "running: 0");
	ok(!wait_stop_check(&s), "no signal: not stopping");
	sig_stop = SIGTERM;
	ok(wait_stop_check(&s) && s.why == STOP_SIGNAL, "signal: STOP_SIGNAL");
	ok(wait_fd(&s, -1, 5000) == -1, "signal: wait returns at once");
	ok(wait_exit_code(&s) == 0, "signal: exit 0");
	sig_stop = 0;
	s = (struct stop){ RUNNING, 0 };
	wait_stop_set(&s, STOP_OS, EAGAIN);
	ok(wait_exit_code(&s) == EX_OSERR && s.err == EAGAIN, "os: exit 71");
	s = (struct stop){ RUNNING, 0 };
	wait_stop_set(&s, STOP_OUTPUT, EIO);
	ok(wait_exit_code(&s) == EX_IOERR, "output: exit 74");
}

/* Last: it lowers the hard limit, which cannot be undone. */
static void
test_fd_limit(void)
{
	struct rlimit rl = { 48, 100 };
	const char *pre = getenv("LD_PRELOAD");

	/* valgrind keeps descriptors of its own above the limit and refuses
	 * to lower it: the check needs a process of its own there. */
	if (pre != NULL && strstr(pre, "vgpreload") != NULL) {
		printf("ok %d - # skip setrlimit under valgrind\n", ++tap_n);
		return;
	}
	if (!ok(setrlimit(RLIMIT_NOFILE, &rl) == 0, "limit 48/100"))
		return;
	ok(io_fd_limit_fit(10, 32) == 10, "10 + 32 fit in 48");
	ok(io_fd_limit_fit(50, 32) == 50 && getrlimit(RLIMIT_NOFILE, &rl) ==
	    0 && rl.rlim_cur == 82, "50 + 32: soft limit raised to 82");
	ok(io_fd_limit_fit(1000, 32) == 68 && getrlimit(RLIMIT_NOFILE, &rl) ==
	    0 && rl.rlim_cur == 100, "1000 + 32: 68 fit under the hard 100");
	ok(io_fd_limit_fit(1000, 100) == 0, "not even the spare ones: 0");
}

int
main(void)
{
	ok(sig_ignore_pipe() == 0, "SIGPIPE ignored");
	test_wait();
	test_codes();
	test_fd_limit();
	return done_testing();
}
