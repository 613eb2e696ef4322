/*
 * io.c - EINTR-safe read/write loops and small file helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

ssize_t
io_read(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n;
}

int
io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
io_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl);
}

void
io_close_keep_errno(int fd)
{
	int saved = errno;

	close(fd);
	errno = saved;
}

int
io_pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

size_t
io_fd_limit_fit(size_t want, size_t spare)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)want + spare, cur;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur >= need)
		return want;
	cur = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	if (rl.rlim_cur != cur && setrlimit(RLIMIT_NOFILE, &rl) == 0)
		cur = rl.rlim_cur;
	if (cur >= need)
		return want;
	return cur > spare ? (size_t)(cur - spare) : 0;
}

bool
io_peer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = 0 };

	/* A pipe's write end reports POLLERR once its last reader closed;
	 * a socket reports POLLHUP. Neither needs a write to notice. */
	if (poll(&p, 1, 0) <= 0)
		return false;
	return (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
}

/*
 * The first buffer for a file: its size (+1 to see the end, +1 for the
 * NUL) when fstat knows it, else a page (sysfs and /proc report 0 or
 * 4096 whatever they hold), never more than max + 2.
 */
static size_t
slurp_cap(const struct stat *st, size_t max)
{
	size_t want = 4096;

	if (S_ISREG(st->st_mode) && st->st_size > 0)
		want = (size_t)st->st_size + 2;
	return want < max + 2 ? want : max + 2;
}

/* Doubles *buf, up to max + 2 bytes. 0 or -1/ENOMEM. */
static int
slurp_grow(char **buf, size_t *cap, size_t max)
{
	size_t ncap = *cap * 2 < max + 2 ? *cap * 2 : max + 2;
	char *n;

	if ((n = realloc(*buf, ncap)) == NULL)
		return -1;
	*buf = n;
	*cap = ncap;
	return 0;
}

const char *
io_strerror(int err)
{
	return err == IO_ENOTREG ? "not a regular file" : strerror(err);
}

int
io_open_regular(const char *path, int flags, mode_t mode)
{
	return io_open_regular_at(AT_FDCWD, path, flags, mode);
}

int
io_open_regular_at(int dirfd, const char *path, int flags, mode_t mode)
{
	struct stat st;
	int fd;

	fd = openat(dirfd, path, flags | O_CLOEXEC | O_NONBLOCK, mode);
	if (fd < 0) {
		/* A FIFO opened for writing without a reader. */
		if (errno == ENXIO)
			errno = IO_ENOTREG;
		return -1;
	}
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = IO_ENOTREG;
		goto fail;
	}
	if (io_set_nonblock(fd, false) < 0)
		goto fail;
	return fd;
fail:
	io_close_keep_errno(fd);
	return -1;
}

char *
io_slurp(const char *path, size_t max, size_t *len)
{
	return io_slurp_at(AT_FDCWD, path, max, len);
}

char *
io_slurp_at(int dirfd, const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0, cap;
	ssize_t r;
	int fd, saved;

	/* Only state files are slurped: a symlink planted in their
	 * directory is never followed (ELOOP), so the caller fails closed
	 * instead of reading some other file as root; and a FIFO or a
	 * directory in their place is refused without blocking. */
	fd = io_open_regular_at(dirfd, path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max) {
		errno = EFBIG;
		goto fail;
	}
	cap = slurp_cap(&st, max);
	if ((buf = malloc(cap)) == NULL)
		goto fail;
	for (;;) {
		if (cap - n < 2 && slurp_grow(&buf, &cap, max) < 0)
			goto fail;
		if ((r = io_read(fd, buf + n, cap - 1 - n)) <= 0)
			break;
		n += (size_t)r;
		if (n > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	if (r < 0)
		goto fail;
	close(fd);
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
fail:
	saved = errno;
	free(buf);
	close(fd);
	errno = saved;
	return NULL;
}

int
io_read_attr(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, saved;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = io_read(fd, buf, len);
	saved = errno;
	close(fd);
	if (n < 0) {
		errno = saved;
		return -1;
	}
	if ((size_t)n == len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	n = (ssize_t)strlen(buf);
	while (n > 0 && strchr(" \t\r", buf[n - 1]) != NULL)
		buf[--n] = '\0';
	return 0;
}

long long
io_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * mkdir(dir, 0755) that ignores the umask (a umask of 077 from chpst or an
 * operator's shell would make it 0700 and lock out readers running as
 * another user); 0 also when dir exists.
 */
static int
mkdir_0755(const char *dir)
{
	if (mkdir(dir, 0755) < 0)
		return errno == EEXIST ? 0 : -1;
	return chmod(dir, 0755);
}

int
io_mkdir_p(const char *dir)
{
	char up[PATH_MAX];

	if (mkdir_0755(dir) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	if (io_pathf(up, sizeof(up), "%s", dir) < 0)
		return -1;
	if (strcmp(dirname(up), dir) == 0 || io_mkdir_p(up) < 0)
		return -1;
	return mkdir_0755(dir);
}
