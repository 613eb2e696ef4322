/*
 * vfstore-floor.c - the durability floor for one health-store update:
 * write a same-sized file to FILE.tmp, fsync it, rename it over FILE and
 * fsync the directory, N times. Prints the mean milliseconds per update.
 *
 *	vfstore-floor FILE BYTES N
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

static int
update(const char *path, const char *tmp, const char *dir, const char *buf,
    size_t len)
{
	int fd, dfd, rc = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (io_write_all(fd, buf, len) < 0 || fsync(fd) < 0)
		rc = -1;
	if (close(fd) < 0 || rc < 0 || rename(tmp, path) < 0)
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	rc = fsync(dfd);
	close(dfd);
	return rc;
}

int
main(int argc, char **argv)
{
	char tmp[4096], dir[4096], *buf, *slash;
	long long t0;
	size_t len;
	long i, n;

	if (argc != 4)
		return 64;
	len = strtoul(argv[2], NULL, 10);
	n = strtol(argv[3], NULL, 10);
	buf = calloc(1, len + 1);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	slash = strrchr(dir, '/');
	if (buf == NULL || slash == NULL || n < 1)
		return 70;
	*slash = '\0';
	memset(buf, 'x', len);
	t0 = io_now_ms();
	for (i = 0; i < n; i++)
		if (update(argv[1], tmp, dir, buf, len) < 0) {
			perror("update");
			return 74;
		}
	printf("%.3f\n", (double)(io_now_ms() - t0) / (double)n);
	free(buf);
	return 0;
}
