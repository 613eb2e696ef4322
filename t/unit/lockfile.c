/*
 * lockfile.c - unit tests (TAP) for the files root makes where the
 * service user can write (SPEC.md 7.2): lock files (src/lib/lock.c)
 * that no other user can open, never a link or a FIFO, and
 * atomic_write_at() (src/lib/atomic.c), which reaches nothing by path.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic.h"
#include "lock.h"
#include "tap.h"

static char root[PATH_MAX];

/* root/name into buf. */
static const char *
at(char *buf, size_t len, const char *name)
{
	if (snprintf(buf, len, "%s/%s", root, name) >= (int)len)
		abort();
	return buf;
}

/* The permission bits a lock file must have here. */
static mode_t
lock_mode(void)
{
	return getgrnam(LOCK_GROUP) != NULL ? 0640 : 0600;
}

static void
test_lock(void)
{
	char path[PATH_MAX + 16], target[PATH_MAX + 16];
	struct stat st;
	int fd, fd2;

	fd = lock_acquire(at(path, sizeof(path), "lock"), true, 0);
	ok(fd >= 0 && stat(path, &st) == 0 &&
	    (st.st_mode & 0777) == lock_mode(),
	    "a new lock is %03o, never readable by others",
	    (unsigned)lock_mode());
	fd2 = lock_acquire(path, false, 0);
	ok(fd2 == -1 && errno == EWOULDBLOCK, "held: a second lock waits");
	lock_release(fd);
	ok(chmod(path, 0666) == 0 && (fd = open(path, O_RDONLY)) >= 0 &&
	    lock_secure(fd, (uid_t)-1, (gid_t)-1) == 0 && fstat(fd, &st) ==
	    0 && (st.st_mode & 0777) == lock_mode(), "lock_secure tightens "
	    "a 0666 lock");
	close(fd);
	if (symlink(at(target, sizeof(target), "victim"),
	    at(path, sizeof(path), "linked")) != 0)
		abort();
	ok(lock_acquire(path, true, 0) == -1 && errno == ELOOP &&
	    access(target, F_OK) == -1, "a link is refused, nothing made "
	    "at its target");
	if (mkfifo(at(path, sizeof(path), "fifo"), 0644) != 0)
		abort();
	ok(lock_acquire(path, false, 0) == -1 && errno == EINVAL,
	    "a FIFO is refused at once, not waited on");
}

static void
test_lock_at(void)
{
	char path[PATH_MAX + 16];
	struct stat st;
	int dirfd, fd;

	dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = lock_acquire_at(dirfd, "host.lock", true, 0);
	ok(fd >= 0 && stat(at(path, sizeof(path), "host.lock"), &st) == 0 &&
	    (st.st_mode & 0777) == lock_mode(), "lock_acquire_at: made in "
	    "the directory");
	lock_release(fd);
	close(dirfd);
}

static void
test_write_at(void)
{
	char path[PATH_MAX + 16], target[PATH_MAX + 16];
	struct atomic_result res;
	const char *text;
	int dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (symlink(at(target, sizeof(target), "planted"),
	    at(path, sizeof(path), "j.json.tmp")) != 0)
		abort();
	ok(atomic_write_at(dirfd, "j.json", "{}\n", 3, 0644, &res) == 0 &&
	    res.renamed, "atomic_write_at writes");
	text = tap_slurp(at(path, sizeof(path), "j.json"));
	is_str(text, "{}\n", "the new contents are there");
	ok(access(target, F_OK) == -1 && access(at(path, sizeof(path),
	    "j.json.tmp"), F_OK) == -1, "a link planted at the temporary "
	    "name is removed, never written through");
	if (symlink(target, at(path, sizeof(path), "k.json")) != 0)
		abort();
	ok(atomic_write_at(dirfd, "k.json", "1", 1, 0644, &res) == 0 &&
	    access(target, F_OK) == -1, "a link at the name is replaced");
	ok(atomic_write_at(dirfd, "a/b", "1", 1, 0644, &res) == -1 &&
	    errno == EINVAL, "a name with a slash is refused");
	close(dirfd);
}

int
main(void)
{
	tap_tmpdir(root, sizeof(root), "lockfile");
	test_lock();
	test_lock_at();
	test_write_at();
	tap_rmtree(root);
	return done_testing();
}
