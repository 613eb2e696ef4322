/*
 * lock.c - flock(2) with a timeout, on lock files only their owners (and
 * the vfsentinel group) can open.
 *
 * flock has no timeout of its own; a signal-interrupted blocking flock
 * would need an alarm handler shared with the program. Polling with
 * LOCK_NB and a short, growing sleep keeps the library free of signals;
 * the waits are tiny next to the fsyncs the holder is doing.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "lock.h"

int
lock_secure(int fd, uid_t uid, gid_t gid)
{
	struct group *g = getgrnam(LOCK_GROUP);
	mode_t mode = 0600;

	if (g != NULL) {
		gid = g->gr_gid;
		mode = 0640;
	}
	/* A user outside the group may not give it the file: then only
	 * the owner opens it. */
	if (fchown(fd, uid, gid) < 0) {
		if (errno != EPERM || fchown(fd, uid, (gid_t)-1) < 0)
			return -1;
		mode = 0600;
	}
	return fchmod(fd, mode);
}

/* The directory holding name in dirfd (AT_FDCWD: name is a path). */
static int
dir_stat(int dirfd, const char *name, struct stat *st)
{
	const char *slash = strrchr(name, '/');
	char dir[PATH_MAX];
	size_t n;

	if (dirfd != AT_FDCWD)
		return fstat(dirfd, st);
	if (slash == NULL)
		return stat(".", st);
	n = slash == name ? 1 : (size_t)(slash - name);
	if (n >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, name, n);
	dir[n] = '\0';
	return stat(dir, st);
}

/* A new lock file: root gives it to the owner of its directory. */
static int
secure_new(int fd, int dirfd, const char *name)
{
	struct stat st;

	if (geteuid() != 0)
		return lock_secure(fd, (uid_t)-1, (gid_t)-1);
	if (dir_stat(dirfd, name, &st) < 0)
		return -1;
	return lock_secure(fd, st.st_uid, st.st_gid);
}

static int
close_fail(int fd)
{
	int saved = errno;

	close(fd);
	errno = saved;
	return -1;
}

/*
 * Opens name in dirfd: created 0600 with O_EXCL (then secured), else the
 * existing file read-write or, where that is denied, read-only (flock
 * needs neither). O_NONBLOCK: a FIFO planted there never hangs a root
 * command; anything but a regular file is refused (EINVAL).
 */
static int
open_lock(int dirfd, const char *name)
{
	const int flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	struct stat st;
	int fd;

	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | flags, 0600);
	if (fd >= 0)
		return secure_new(fd, dirfd, name) < 0 ? close_fail(fd) : fd;
	if (errno == EEXIST)
		fd = openat(dirfd, name, O_RDWR | flags);
	if (fd < 0 && (errno == EACCES || errno == EROFS))
		fd = openat(dirfd, name, O_RDONLY | flags);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		return close_fail(fd);
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return close_fail(fd);
	}
	return fd;
}

int
lock_acquire_at(int dirfd, const char *name, bool exclusive,
    unsigned timeout_s)
{
	long long deadline = io_now_ms() + (long long)timeout_s * 1000;
	struct timespec nap = { 0, 1000000 };	/* 1 ms, doubling to 32 ms */
	int fd, op = (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;

	if ((fd = open_lock(dirfd, name)) < 0)
		return -1;
	while (flock(fd, op) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return close_fail(fd);
		if (io_now_ms() >= deadline) {
			errno = EWOULDBLOCK;
			return close_fail(fd);
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 32000000)
			nap.tv_nsec *= 2;
	}
	return fd;
}

int
lock_acquire(const char *path, bool exclusive, unsigned timeout_s)
{
	return lock_acquire_at(AT_FDCWD, path, exclusive, timeout_s);
}

void
lock_release(int fd)
{
	if (fd >= 0)
		close(fd);
}
