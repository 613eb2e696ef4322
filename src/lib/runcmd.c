/*
 * runcmd.c - an operator's command, bounded in time and output (see
 * runcmd.h).
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
#include "sig.h"

#define RUNCMD_MAX_ARGS 16

int
runcmd_child_stdio(int out)
{
	sigset_t none;
	int fd;

	if (sigemptyset(&none) < 0 || sigprocmask(SIG_SETMASK, &none,
	    NULL) < 0 || signal(SIGPIPE, SIG_DFL) == SIG_ERR ||
	    signal(SIGTERM, SIG_DFL) == SIG_ERR || signal(SIGINT,
	    SIG_DFL) == SIG_ERR)
		return -1;
	if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (dup2(fd, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
	    dup2(out, STDERR_FILENO) < 0)
		return -1;
	return 0;
}

void
runcmd_kill_group(pid_t pid)
{
	(void)kill(-pid, SIGKILL);
	(void)kill(pid, SIGKILL);
}

/* In the child: its own group, /dev/null in, the pipe out, exec. */
static void
child(const char *script, char *const args[], char *const env[], int out)
{
	char *argv[RUNCMD_MAX_ARGS + 4];
	size_t i, n = 0;

	(void)setpgid(0, 0);
	if (runcmd_child_stdio(out) < 0)
		_exit(126);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		if (putenv(env[i]) != 0)
			_exit(126);
	argv[n++] = (char *)"sh";
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)script;
	for (i = 0; args != NULL && args[i] != NULL &&
	    i < RUNCMD_MAX_ARGS; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	execv("/bin/sh", argv);
	_exit(127);
}

/* Keeps what fits of the n bytes read. */
static void
keep(struct runcmd_result *r, const char *buf, size_t n)
{
	size_t room = RUNCMD_KEEP - r->len;

	if (n > room) {
		r->truncated = true;
		n = room;
	}
	memcpy(r->output + r->len, buf, n);
	r->len += n;
	r->output[r->len] = '\0';
}

/* SIGTERM to the process group pid leads, and to pid itself. */
static void
term_group(pid_t pid)
{
	(void)kill(-pid, SIGTERM);
	(void)kill(pid, SIGTERM);
}

/*
 * True once pid has exited. A command that ended by itself (no SIGTERM
 * sent: kill_at 0) with leftovers has its group killed before pid is
 * reaped (a zombie leader keeps the group's id from reuse).
 */
static bool
leader_exited(pid_t pid, const struct runcmd_opts *o, long long kill_at,
    struct runcmd_result *r)
{
	siginfo_t si;

	if (o->leftovers && kill_at == 0 && !r->timed_out &&
	    !r->interrupted) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG |
		    WNOWAIT) < 0 || si.si_pid != pid)
			return false;
		(void)kill(-pid, SIGKILL);
	}
	return waitpid(pid, &r->status, WNOHANG) == pid;
}

/*
 * True when no process of the group pgid is left. Its members that were
 * reparented to this process (a child subreaper) are reaped here.
 */
static bool
group_gone(pid_t pgid)
{
	int st;

	while (waitpid(-pgid, &st, WNOHANG) > 0)
		;
	return kill(-pgid, 0) < 0 && errno == ESRCH;
}

/* Ends the command as o says: at the timeout, or on a stop. */
static void
end_command(pid_t pid, const struct runcmd_opts *o, long long deadline,
    long long *kill_at, struct runcmd_result *r)
{
	long long now = io_now_ms();
	bool stop = o->stop && sig_stop != 0 && !r->interrupted &&
	    !r->timed_out;

	if ((!r->timed_out && !r->interrupted && now >= deadline) || stop) {
		if (stop)
			r->interrupted = true;
		else
			r->timed_out = true;
		if (o->grace_s == 0) {
			runcmd_kill_group(pid);
			return;
		}
		term_group(pid);
		*kill_at = now + (long long)o->grace_s * 1000;
	}
	if (*kill_at != 0 && now >= *kill_at) {
		runcmd_kill_group(pid);
		*kill_at = 0;
	}
}

/*
 * Reads the pipe until the command exits (or is ended). After a SIGTERM
 * the whole group is waited for, until the SIGKILL: a shell's child may
 * outlive it to clean up (its `sh -c` dies at once).
 */
static void
collect(pid_t pid, int fd, long long deadline, const struct runcmd_opts *o,
    struct runcmd_result *r)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[4096];
	long long kill_at = 0, until;
	ssize_t n;
	bool done = false, open_pipe = true;

	for (;;) {
		if (!done)
			done = leader_exited(pid, o, kill_at, r);
		if (done && (kill_at == 0 || group_gone(pid)))
			break;
		end_command(pid, o, deadline, &kill_at, r);
		if (!open_pipe || poll(&pfd, 1, 50) <= 0) {
			if (!open_pipe)
				(void)poll(NULL, 0, 50);
			continue;
		}
		n = read(fd, buf, sizeof(buf));
		if (n > 0)
			keep(r, buf, (size_t)n);
		else if (n == 0 || errno != EINTR)
			open_pipe = false;
	}
	/* What was killed and reparented here is reaped (a second). */
	for (until = io_now_ms() + 1000; o->leftovers && !group_gone(pid) &&
	    io_now_ms() < until;)
		(void)poll(NULL, 0, 10);
	while (open_pipe && io_set_nonblock(fd, true) == 0 &&
	    (n = read(fd, buf, sizeof(buf))) > 0)
		keep(r, buf, (size_t)n);
}

int
runcmd_run(const char *script, char *const args[], char *const env[],
    unsigned timeout_s, struct runcmd_result *r)
{
	return runcmd_run_opts(script, args, env, timeout_s, NULL, r);
}

int
runcmd_run_opts(const char *script, char *const args[], char *const env[],
    unsigned timeout_s, const struct runcmd_opts *o,
    struct runcmd_result *r)
{
	static const struct runcmd_opts plain = { 0 };
	int p[2];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if ((r->output = malloc(RUNCMD_KEEP + 1)) == NULL)
		return -1;
	r->output[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0) {
		runcmd_release(r);
		return -1;
	}
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		runcmd_release(r);
		return -1;
	}
	if (pid == 0)
		child(script, args, env, p[1]);
	(void)setpgid(pid, pid);	/* either side may win the race */
	close(p[1]);
	collect(pid, p[0], io_now_ms() + (long long)timeout_s * 1000,
	    o != NULL ? o : &plain, r);
	close(p[0]);
	return 0;
}

bool
runcmd_ok(const struct runcmd_result *r)
{
	return !r->timed_out && !r->interrupted && WIFEXITED(r->status) &&
	    WEXITSTATUS(r->status) == 0;
}

const char *
runcmd_describe(const struct runcmd_result *r, char *buf, size_t len)
{
	if (r->interrupted)
		return "interrupted";
	if (r->timed_out)
		return "timeout";
	if (WIFEXITED(r->status))
		(void)snprintf(buf, len, "exit %d", WEXITSTATUS(r->status));
	else
		(void)snprintf(buf, len, "signal %d", WTERMSIG(r->status));
	return buf;
}

void
runcmd_release(struct runcmd_result *r)
{
	free(r->output);
	r->output = NULL;
	r->len = 0;
}
