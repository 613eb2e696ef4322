/*
 * faultinj.c - LD_PRELOAD shim that fails chosen libc calls, for the
 * persist-step fault-injection tests.
 *
 *	FAIL_<fn>=N	fail the Nth counted call (N >= 1); 0: every call;
 *			-N: the Nth and every later call
 *	FAIL_ERRNO=E	errno to fail with (default EIO)
 *	FAIL_MATCH=S	only calls whose path (or the fd's path) contains S
 *			are counted (default: all calls on fds > 2)
 *	FAIL_LOG=FILE	append "fn path" for every counted call (to learn N)
 *	CRASH_MATCH=S	any call above on a path containing S dies of
 *			SIGSEGV instead (a bug in the code that made it)
 *
 * fn is one of mkdir, open (also openat/creat), write, fsync (also
 * fdatasync), close, rename (also renameat/renameat2), unlink.
 *
 * An open can also hang, as one of /dev/nvidiaN does while the driver is
 * stuck in RmInitAdapter (independent of the FAIL_ knobs):
 *
 *	DELAY_open=S	sleep S seconds (a fraction allowed) before every
 *			open whose path contains DELAY_MATCH (default: all)
 *	DELAY_LOG=FILE	append "PID path" as such a delay starts; first
 *			"overlap PID" for every pid logged earlier (by
 *			another process) that still exists, a zombie too:
 *			it was not reaped before this one started
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int
fd_path(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static void
note(const char *fn, const char *path)
{
	const char *log = getenv("FAIL_LOG");
	int fd;
	char line[PATH_MAX + 32];
	int n;

	if (log == NULL)
		return;
	fd = (int)syscall(SYS_openat, AT_FDCWD, log,
	    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%s %s\n", fn, path ? path : "-");
	if (n > 0)
		syscall(SYS_write, fd, line, (size_t)n);
	syscall(SYS_close, fd);
}

/* Decides whether this call of fn (on path) fails. */
static int
should_fail(const char *fn, int *count, const char *path)
{
	char var[64];
	const char *v, *match, *e;
	long n;

	match = getenv("CRASH_MATCH");
	if (match != NULL && path != NULL && strstr(path, match) != NULL) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	}
	match = getenv("FAIL_MATCH");
	if (match != NULL && (path == NULL || strstr(path, match) == NULL))
		return 0;
	snprintf(var, sizeof(var), "FAIL_%s", fn);
	v = getenv(var);
	if (v == NULL && getenv("FAIL_LOG") == NULL)
		return 0;
	++*count;
	note(fn, path);
	if (v == NULL)
		return 0;
	n = strtol(v, NULL, 10);
	if (n == 0 || *count == n || (n < 0 && *count >= -n)) {
		e = getenv("FAIL_ERRNO");
		errno = e ? atoi(e) : EIO;
		return 1;
	}
	return 0;
}

static int
should_fail_fd(const char *fn, int *count, int fd)
{
	char path[PATH_MAX];

	if (fd <= 2)
		return 0;
	if (fd_path(fd, path, sizeof(path)) < 0)
		path[0] = '\0';
	return should_fail(fn, count, path);
}

/* Appends "overlap PID" to fd for each other pid in the log still there. */
static void
delay_overlaps(int fd)
{
	static char buf[65536];
	char line[64], proc[32];
	ssize_t n, len = 0;
	long pid;
	char *s, *end;

	while (len < (ssize_t)sizeof(buf) - 1 &&
	    (n = syscall(SYS_read, fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	for (s = buf; *s != '\0'; s = *end ? end + 1 : end) {
		end = strchrnul(s, '\n');
		pid = strtol(s, NULL, 10);
		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(proc, sizeof(proc), "/proc/%ld", pid);
		if (syscall(SYS_faccessat, AT_FDCWD, proc, F_OK) != 0)
			continue;
		n = snprintf(line, sizeof(line), "overlap %ld\n", pid);
		syscall(SYS_write, fd, line, (size_t)n);
	}
}

/* DELAY_open: logs, then sleeps, before an open of a matching path. */
static void
maybe_delay(const char *path)
{
	const char *v = getenv("DELAY_open"), *match = getenv("DELAY_MATCH");
	const char *log = getenv("DELAY_LOG");
	char line[PATH_MAX + 32];
	struct timespec ts;
	double s;
	int fd, n;

	if (v == NULL || (match != NULL && (path == NULL ||
	    strstr(path, match) == NULL)))
		return;
	if (log != NULL && (fd = (int)syscall(SYS_openat, AT_FDCWD, log,
	    O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) >= 0) {
		delay_overlaps(fd);
		n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(),
		    path ? path : "-");
		if (n > 0)
			syscall(SYS_write, fd, line, (size_t)n);
		syscall(SYS_close, fd);
	}
	s = strtod(v, NULL);
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

#define REAL(type, name, args) \
	static type (*real_##name) args; \
	if (real_##name == NULL) \
		real_##name = (type (*) args)dlsym(RTLD_NEXT, #name)

static int c_mkdir, c_open, c_write, c_fsync, c_close, c_rename, c_unlink;

int
mkdir(const char *path, mode_t mode)
{
	REAL(int, mkdir, (const char *, mode_t));
	if (should_fail("mkdir", &c_mkdir, path))
		return -1;
	return real_mkdir(path, mode);
}

int
mkdirat(int dfd, const char *path, mode_t mode)
{
	REAL(int, mkdirat, (int, const char *, mode_t));
	if (should_fail("mkdir", &c_mkdir, path))
		return -1;
	return real_mkdirat(dfd, path, mode);
}

static mode_t
open_mode(int flags, va_list ap)
{
	if (flags & (O_CREAT | __O_TMPFILE))
		return (mode_t)va_arg(ap, int);
	return 0;
}

int
open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	REAL(int, open, (const char *, int, ...));
	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	maybe_delay(path);
	if (should_fail("open", &c_open, path))
		return -1;
	return real_open(path, flags, mode);
}

int
open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	REAL(int, open64, (const char *, int, ...));
	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	maybe_delay(path);
	if (should_fail("open", &c_open, path))
		return -1;
	return real_open64(path, flags, mode);
}

int
openat(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	REAL(int, openat, (int, const char *, int, ...));
	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	maybe_delay(path);
	if (should_fail("open", &c_open, path))
		return -1;
	return real_openat(dfd, path, flags, mode);
}

int
openat64(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	REAL(int, openat64, (int, const char *, int, ...));
	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	maybe_delay(path);
	if (should_fail("open", &c_open, path))
		return -1;
	return real_openat64(dfd, path, flags, mode);
}

int
__open_2(const char *path, int flags)
{
	REAL(int, __open_2, (const char *, int));
	maybe_delay(path);
	if (should_fail("open", &c_open, path))
		return -1;
	return real___open_2(path, flags);
}

int
__openat_2(int dfd, const char *path, int flags)
{
	REAL(int, __openat_2, (int, const char *, int));
	maybe_delay(path);
	if (should_fail("open", &c_open, path))
		return -1;
	return real___openat_2(dfd, path, flags);
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	REAL(ssize_t, write, (int, const void *, size_t));
	if (should_fail_fd("write", &c_write, fd))
		return -1;
	return real_write(fd, buf, len);
}

int
fsync(int fd)
{
	REAL(int, fsync, (int));
	if (should_fail_fd("fsync", &c_fsync, fd))
		return -1;
	return real_fsync(fd);
}

int
fdatasync(int fd)
{
	REAL(int, fdatasync, (int));
	if (should_fail_fd("fsync", &c_fsync, fd))
		return -1;
	return real_fdatasync(fd);
}

int
close(int fd)
{
	REAL(int, close, (int));
	if (should_fail_fd("close", &c_close, fd)) {
		int saved = errno;

		real_close(fd);		/* the descriptor is gone either way */
		errno = saved;
		return -1;
	}
	return real_close(fd);
}

int
rename(const char *from, const char *to)
{
	REAL(int, rename, (const char *, const char *));
	if (should_fail("rename", &c_rename, to))
		return -1;
	return real_rename(from, to);
}

int
renameat(int fd1, const char *from, int fd2, const char *to)
{
	REAL(int, renameat, (int, const char *, int, const char *));
	if (should_fail("rename", &c_rename, to))
		return -1;
	return real_renameat(fd1, from, fd2, to);
}

int
renameat2(int fd1, const char *from, int fd2, const char *to, unsigned fl)
{
	REAL(int, renameat2, (int, const char *, int, const char *, unsigned));
	if (should_fail("rename", &c_rename, to))
		return -1;
	return real_renameat2(fd1, from, fd2, to, fl);
}

int
unlink(const char *path)
{
	REAL(int, unlink, (const char *));
	if (should_fail("unlink", &c_unlink, path))
		return -1;
	return real_unlink(path);
}
