/*
 * io.c - EINTR-safe read/write loops and small file helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

char *
io_slurp(const char *path, size_t max, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	ssize_t r;
	int fd, saved;

	/* Only state files are slurped: a symlink planted in their
	 * directory is never followed (ELOOP), so the caller fails closed
	 * instead of reading some other file as root. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	buf = malloc(max + 2);
	if (buf == NULL)
		goto fail;
	while ((r = io_read(fd, buf + n, max + 1 - n)) > 0) {
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
	if (snprintf(up, sizeof(up), "%s", dir) >= (int)sizeof(up)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (strcmp(dirname(up), dir) == 0 || io_mkdir_p(up) < 0)
		return -1;
	return mkdir_0755(dir);
}
