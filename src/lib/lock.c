/*
 * lock.c - flock(2) with a timeout.
 *
 * flock has no timeout of its own; a signal-interrupted blocking flock
 * would need an alarm handler shared with the program. Polling with
 * LOCK_NB and a short, growing sleep keeps the library free of signals;
 * the waits are tiny next to the fsyncs the holder is doing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "lock.h"

int
lock_acquire(const char *path, bool exclusive, unsigned timeout_s)
{
	long long deadline = io_now_ms() + (long long)timeout_s * 1000;
	struct timespec nap = { 0, 1000000 };	/* 1 ms, doubling to 32 ms */
	int fd, saved, op = (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;

	/* Created 0644 whatever the umask (a service's chpst or an
	 * operator's umask 077 would make it 0600), so that readers running
	 * as another user can still take the shared lock. */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd >= 0 && fchmod(fd, 0644) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	/* flock(2) needs no write access: a lock file another user created
	 * (root's vfstore, 0644) still serves a service running as the
	 * dedicated user, exclusive or shared. */
	if (fd < 0 && (errno == EACCES || errno == EROFS))
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	while (flock(fd, op) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			goto fail;
		if (io_now_ms() >= deadline) {
			errno = EWOULDBLOCK;
			goto fail;
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 32000000)
			nap.tv_nsec *= 2;
	}
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

void
lock_release(int fd)
{
	if (fd >= 0)
		close(fd);
}
