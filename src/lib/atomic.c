/*
 * atomic.c - atomic, durable replacement of a file.
 *
 * rename(2) is atomic, but only durable once the directory holding the
 * new entry is fsynced; and a directory created for the first time is
 * only durable once its own parent is fsynced. The temporary file is
 * created with O_EXCL|O_NOFOLLOW so a symlink planted at PATH.tmp can
 * never redirect the write.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "io.h"

static int
fail(struct atomic_result *res, const char *step)
{
	res->step = step;
	return -1;
}

int
atomic_sync_dir(const char *dir)
{
	int fd, rc;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	io_close_keep_errno(fd);
	return rc;
}

/* Splits path into its directory and that directory's parent. */
static int
split_dirs(const char *path, char *dir, char *parent)
{
	char tmp[PATH_MAX];

	if (io_pathf(tmp, sizeof(tmp), "%s", path) < 0)
		return -1;
	snprintf(dir, PATH_MAX, "%s", dirname(tmp));
	snprintf(tmp, sizeof(tmp), "%s", dir);
	snprintf(parent, PATH_MAX, "%s", dirname(tmp));
	return 0;
}

/*
 * Creates the file's directory if needed and, on the file's first write,
 * syncs the directory's parent so that a first-time creation of the
 * directory is durable too. Once the file exists a previous write got past
 * this step (or the directory was made by hand), so later writes skip the
 * extra journal commit; a failed parent sync leaves no file, so the next
 * write retries it.
 */
static int
prepare_dir(const char *path, const char *dir, const char *parent,
    struct atomic_result *res)
{
	struct stat st;

	if (io_mkdir_p(dir) < 0)
		return fail(res, "create dir");
	if (lstat(path, &st) == 0)
		return 0;
	if (atomic_sync_dir(parent) < 0)
		return fail(res, "sync parent dir");
	return 0;
}

/* unlink(2) of tmp in dirfd (AT_FDCWD: a path, by unlink itself, which
 * the tests' fault-injection shim intercepts). */
static int
remove_temp(int dirfd, const char *tmp)
{
	return dirfd == AT_FDCWD ? unlink(tmp) : unlinkat(dirfd, tmp, 0);
}

static int
write_temp(int dirfd, const char *tmp, const void *buf, size_t len,
    mode_t mode, struct atomic_result *res)
{
	int fd, saved;

	if (remove_temp(dirfd, tmp) < 0 && errno != ENOENT)
		return fail(res, "remove stale temp");
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd < 0)
		return fail(res, "create temp");
	if (fchmod(fd, mode) < 0)
		res->step = "create temp";
	else if (io_write_all(fd, buf, len) < 0)
		res->step = "write";
	else if (fsync(fd) < 0)
		res->step = "sync";
	if (res->step != NULL) {
		saved = errno;
		close(fd);
		remove_temp(dirfd, tmp);
		errno = saved;
		return -1;
	}
	if (close(fd) < 0) {
		saved = errno;
		remove_temp(dirfd, tmp);
		errno = saved;
		return fail(res, "close");
	}
	return 0;
}

int
atomic_write(const char *path, const void *buf, size_t len, mode_t mode,
    struct atomic_result *res)
{
	char dir[PATH_MAX], parent[PATH_MAX], tmp[PATH_MAX];
	int saved;

	res->step = NULL;
	res->renamed = false;
	if (split_dirs(path, dir, parent) < 0)
		return fail(res, "create dir");
	if (io_pathf(tmp, sizeof(tmp), "%s.tmp", path) < 0)
		return fail(res, "create temp");
	if (prepare_dir(path, dir, parent, res) < 0)
		return -1;
	if (write_temp(AT_FDCWD, tmp, buf, len, mode, res) < 0)
		return -1;
	if (rename(tmp, path) < 0) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		return fail(res, "rename");
	}
	res->renamed = true;
	if (atomic_sync_dir(dir) < 0)
		return fail(res, "sync dir");
	return 0;
}

int
atomic_write_at(int dirfd, const char *name, const void *buf, size_t len,
    mode_t mode, struct atomic_result *res)
{
	char tmp[NAME_MAX + 1];
	int saved;

	res->step = NULL;
	res->renamed = false;
	if (strchr(name, '/') != NULL || io_pathf(tmp, sizeof(tmp), "%s.tmp",
	    name) < 0) {
		errno = EINVAL;
		return fail(res, "create temp");
	}
	if (write_temp(dirfd, tmp, buf, len, mode, res) < 0)
		return -1;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		saved = errno;
		remove_temp(dirfd, tmp);
		errno = saved;
		return fail(res, "rename");
	}
	res->renamed = true;
	if (fsync(dirfd) < 0)
		return fail(res, "sync dir");
	return 0;
}
