/*
 * safeopen.c - opening a path that someone else chose (safeopen.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "io.h"
#include "safeopen.h"

/* "/proc/self/fd/N": the descriptor's own file, whatever its name is
 * now (a magic link that the kernel resolves to the open file). */
static int
fd_path(int fd, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/self/fd/%d", fd);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * glibc 2.36 has no openat2() wrapper. Kernels before 5.6 have no
 * openat2 (ENOSYS): O_NOFOLLOW then guards the last component only, and
 * a path below a directory must not climb out by name.
 */
static int
path_fallback(int dirfd, const char *path, enum safeopen_links links)
{
	int flags = O_PATH | O_CLOEXEC;

	if (dirfd != AT_FDCWD && (path[0] == '/' || strstr(path, "..") !=
	    NULL)) {
		errno = EXDEV;
		return -1;
	}
	if (links == SAFEOPEN_NO_LINKS || dirfd != AT_FDCWD)
		flags |= O_NOFOLLOW;
	return openat(dirfd, path, flags);
}

int
safeopen_path(int dirfd, const char *path, enum safeopen_links links)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_NO_MAGICLINKS };
	long fd;

	if (links == SAFEOPEN_NO_LINKS || dirfd != AT_FDCWD)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	if (dirfd != AT_FDCWD)
		how.resolve |= RESOLVE_BENEATH;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd == -1 && (errno == EINTR || errno == EAGAIN));
	if (fd == -1 && errno == ENOSYS)
		return path_fallback(dirfd, path, links);
	return (int)fd;
}

int
safeopen_reopen(int pathfd, struct stat *st)
{
	char proc[64];
	struct stat now;
	int fd;

	if (fstat(pathfd, st) == -1)
		return -1;
	if (!S_ISREG(st->st_mode)) {
		errno = IO_ENOTREG;
		return -1;
	}
	if (fd_path(pathfd, proc, sizeof(proc)) == -1 ||
	    (fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &now) == -1)
		goto fail;
	if (!S_ISREG(now.st_mode) || now.st_ino != st->st_ino ||
	    now.st_dev != st->st_dev) {
		errno = IO_ENOTREG;
		goto fail;
	}
	*st = now;
	return fd;
fail:
	io_close_keep_errno(fd);
	return -1;
}

int
safeopen_file(int dirfd, const char *path, enum safeopen_links links,
    struct stat *st)
{
	int pathfd, fd;

	if ((pathfd = safeopen_path(dirfd, path, links)) == -1)
		return -1;
	fd = safeopen_reopen(pathfd, st);
	io_close_keep_errno(pathfd);
	return fd;
}

int
safeopen_regular(const char *path, struct stat *st)
{
	return safeopen_file(AT_FDCWD, path, SAFEOPEN_NO_LINKS, st);
}

int
safeopen_connect(int pathfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (fstat(pathfd, &st) == -1)
		return -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = IO_ENOTREG;
		return -1;
	}
	if (fd_path(pathfd, sa.sun_path, sizeof(sa.sun_path)) == -1)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 &&
	    errno != EINPROGRESS) {
		io_close_keep_errno(fd);
		return -1;
	}
	return fd;
}

char *
safeopen_read_tail(int fd, const struct stat *st, unsigned long long offset,
    size_t max, size_t *len, unsigned long long *from)
{
	unsigned long long size = st->st_size > 0 ?
	    (unsigned long long)st->st_size : 0, start = offset;
	size_t want, have = 0;
	ssize_t n;
	char *buf;

	if (size > max && start < size - max)
		start = size - max;
	want = start < size ? (size_t)(size - start) : 0;
	if ((buf = malloc(want + 1)) == NULL)
		return NULL;
	while (have < want) {
		n = pread(fd, buf + have, want - have, (off_t)(start + have));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	buf[have] = '\0';
	*len = have;
	if (from != NULL)
		*from = start;
	return buf;
}
