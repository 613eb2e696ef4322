/*
 * runcmd.h - runs an operator's command for vfrecover (SPEC.md 4.6):
 * /bin/sh -c SCRIPT [ARG0 ARGS...], stdin from /dev/null, stdout and
 * stderr kept (the first RUNCMD_KEEP bytes) for the log, extra variables
 * in its environment, in a process group of its own, and the whole group
 * killed with SIGKILL at the timeout.
 *
 * A stop signal (sig_stop) does not cut the command short: the step it
 * belongs to is let finish (or reach its timeout). Nothing here prints.
 */
#ifndef VFS_RUNCMD_H
#define VFS_RUNCMD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RUNCMD_KEEP 65536

struct runcmd_result {
	int status;			/* waitpid(2) status */
	bool timed_out;			/* killed at the timeout */
	char *output;			/* owned, NUL-terminated, at most
					   RUNCMD_KEEP bytes */
	size_t len;
	bool truncated;			/* more output was dropped */
	bool interrupted;		/* a stop signal ended it (opts) */
};

/*
 * How runcmd_run_opts() ends a command (SPEC.md 8.2, for verify
 * commands): grace_s > 0 sends SIGTERM to the group at the timeout and
 * SIGKILL grace_s later (0: SIGKILL at once); stop makes a stop signal
 * (sig_stop) do the same at once (r->interrupted); leftovers kills the
 * group with SIGKILL once the command has exited, before it is reaped,
 * so that nothing it started outlives it.
 */
struct runcmd_opts {
	unsigned grace_s;
	bool stop;
	bool leftovers;
};

/*
 * Runs script with /bin/sh -c; args (NULL-terminated, may be NULL) become
 * $0, $1, ...; env (NULL-terminated "NAME=VALUE" strings, may be NULL) is
 * added to the environment. Waits for it, at most timeout_s seconds. 0
 * with r filled (whatever the command's exit status), or -1 with errno
 * when it could not be started (pipe, fork, ENOMEM).
 */
int runcmd_run(const char *script, char *const args[], char *const env[],
    unsigned timeout_s, struct runcmd_result *r);

/* runcmd_run() ended as o says (NULL: as runcmd_run()). */
int runcmd_run_opts(const char *script, char *const args[],
    char *const env[], unsigned timeout_s, const struct runcmd_opts *o,
    struct runcmd_result *r);

/* True if r is an exit with status 0. */
bool runcmd_ok(const struct runcmd_result *r);

/* "exit 3", "signal 9", "timeout" (static or in buf). */
const char *runcmd_describe(const struct runcmd_result *r, char *buf,
    size_t len);

void runcmd_release(struct runcmd_result *r);

/*
 * The plumbing of a command's child, shared with gpu-probe's attempts
 * (which bring their own waiting: a stop signal cuts them short). In the
 * child, before its work or exec: the signal mask emptied; SIGPIPE,
 * SIGTERM and SIGINT at their defaults (SIG_IGN would survive an exec, a
 * handler would not); stdin /dev/null; stdout and stderr the descriptor
 * out. 0, or -1 with errno: the caller _exits with its own status.
 */
int runcmd_child_stdio(int out);

/* SIGKILL to the process group pid leads, and to pid itself (in case its
 * setpgid lost the race with the kill). */
void runcmd_kill_group(pid_t pid);

#endif
