/*
 * wait.c - waiting while watching stdout's reader; stop reasons.
 */
#include <errno.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "sig.h"
#include "wait.h"

#define NAP_TICK_MS 500		/* bound on noticing a signal that raced poll */

int
wait_fds(struct pollfd *pfds, size_t n, int out_fd, long long ms,
    const sigset_t *mask, bool *gone)
{
	struct timespec ts;
	int r;

	if (ms < 0)
		ms = 0;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	pfds[n].fd = out_fd;
	pfds[n].events = 0;
	pfds[n].revents = 0;
	r = ppoll(pfds, n + 1, &ts, mask);
	if (r > 0 && (pfds[n].revents & (POLLERR | POLLHUP | POLLNVAL)))
		*gone = true;
	return r;
}

void
wait_stop_set(struct stop *s, enum stop_why why, int err)
{
	if (s->why != RUNNING)
		return;
	s->why = why;
	s->err = err;
}

bool
wait_stop_check(struct stop *s)
{
	if (sig_stop)
		wait_stop_set(s, STOP_SIGNAL, 0);
	return s->why != RUNNING;
}

int
wait_fd(struct stop *s, int fd, int ms)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN } };
	bool gone = false;
	size_t n = fd < 0 ? 0 : 1;

	if (wait_stop_check(s))
		return -1;
	if (wait_fds(p, n, STDOUT_FILENO, ms, NULL, &gone) < 0 && !sig_stop)
		return 0;
	if (gone)
		wait_stop_set(s, STOP_PEER, 0);
	if (wait_stop_check(s))
		return -1;
	return n > 0 && p[0].revents != 0;
}

int
wait_nap(struct stop *s, unsigned sec)
{
	long long end = io_now_ms() + 1000LL * sec;
	long long left;

	while ((left = end - io_now_ms()) > 0)
		if (wait_fd(s, -1, left > NAP_TICK_MS ? NAP_TICK_MS :
		    (int)left) < 0)
			return -1;
	return wait_stop_check(s) ? -1 : 0;
}

int
wait_exit_code(const struct stop *s)
{
	if (s->why == STOP_MEMORY || s->why == STOP_OS)
		return EX_OSERR;
	return s->why == STOP_PEER || s->why == STOP_OUTPUT ? EX_IOERR : 0;
}
