/*
 * wait.h - waiting while watching stdout's reader, and why a long-running
 * program stops (kmsg-watch, gpu-probe, sentinel-poll, vfstore apply).
 */
#ifndef VFS_WAIT_H
#define VFS_WAIT_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Waits up to ms milliseconds (negative: 0) for the n descriptors in
 * pfds and for the reader of out_fd to go away: pfds has n + 1 entries,
 * the last one is filled in here for out_fd. mask goes to ppoll(2)
 * (NULL: the current mask). *gone is set when out_fd's reader went
 * away. Returns what ppoll(2) returned (-1/errno, EINTR on a signal).
 */
int wait_fds(struct pollfd *pfds, size_t n, int out_fd, long long ms,
    const sigset_t *mask, bool *gone);

enum stop_why {
	RUNNING,
	STOP_SIGNAL,		/* SIGTERM or SIGINT: exit 0 */
	STOP_PEER,		/* stdout reader gone: exit 74 */
	STOP_OUTPUT,		/* write to stdout failed: exit 74 */
	STOP_MEMORY,		/* out of memory: exit 71 */
	STOP_OS			/* fork or pipe failed: exit 71 */
};

struct stop {
	enum stop_why why;
	int err;		/* errno of STOP_OUTPUT, STOP_OS */
};

/* Records why (and errno err) unless a reason is already set. */
void wait_stop_set(struct stop *s, enum stop_why why, int err);

/* Records a pending SIGTERM/SIGINT; true when the program must stop. */
bool wait_stop_check(struct stop *s);

/*
 * Waits up to ms for fd (-1: none) to be readable, watching stdout's
 * reader and the stop flag. 1 readable, 0 timeout or interrupted, -1
 * when the program must stop (s->why says why).
 */
int wait_fd(struct stop *s, int fd, int ms);

/* Sleeps sec seconds unless the program must stop first. 0 or -1. */
int wait_nap(struct stop *s, unsigned sec);

/* The exit code for s: 0, 71 (EX_OSERR) or 74 (EX_IOERR). */
int wait_exit_code(const struct stop *s);

#endif
