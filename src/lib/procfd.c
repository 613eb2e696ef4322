/*
 * procfd.c - one walk over every PROC_ROOT/proc/PID/fd link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "io.h"
#include "procfd.h"

struct walk {
	const char *prefix;
	size_t prefix_len;
	procfd_fn *fn;
	procfd_chr_fn *chr_fn;		/* instead of fn: procfd_walk_chr */
	void *arg;
	size_t links;
};

/* One link, name in fd (PID/fd): fn's answer, or PROCFD_NEXT. */
static int
visit(struct walk *w, int proc_fd, int fd, const char *pid,
    const char *name, const char *link)
{
	bool under = strncmp(link, w->prefix, w->prefix_len) == 0;
	struct stat st;
	dev_t rdev = 0;

	if (w->chr_fn == NULL)
		return under ? w->fn(w->arg, proc_fd, pid, link) :
		    PROCFD_NEXT;
	if (link[0] == '/' && fstatat(fd, name, &st, 0) == 0 &&
	    S_ISCHR(st.st_mode))
		rdev = st.st_rdev;
	if (!under && rdev == 0)
		return PROCFD_NEXT;
	return w->chr_fn(w->arg, proc_fd, pid, link, rdev);
}

/* The fd links of process pid (a directory of proc_fd). 0 or -1. */
static int
walk_pid(struct walk *w, int proc_fd, const char *pid)
{
	char link[PATH_MAX];
	struct dirent *de;
	int rc = PROCFD_NEXT, fd;
	ssize_t n;
	DIR *d;

	if (io_pathf(link, sizeof(link), "%s/fd", pid) < 0 ||
	    (fd = openat(proc_fd, link, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (rc == PROCFD_NEXT && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(fd, de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		w->links++;
		link[n] = '\0';
		rc = visit(w, proc_fd, fd, pid, de->d_name, link);
	}
	closedir(d);
	return rc < 0 ? -1 : 0;
}

/* The walk w over PROC_ROOT/proc. */
static int
walk(struct walk *w, const char *proc_root, size_t *links)
{
	char proc[PATH_MAX];
	struct dirent *de;
	int rc = 0, err = 0;
	DIR *d;

	if (io_pathf(proc, sizeof(proc), "%s/proc", proc_root) < 0 ||
	    (d = opendir(proc)) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    (rc = walk_pid(w, dirfd(d), de->d_name)) < 0)
			err = errno;
	closedir(d);
	if (links != NULL)
		*links = w->links;
	if (rc < 0) {
		errno = err;
		return -1;
	}
	return 0;
}

int
procfd_walk(const char *proc_root, const char *prefix, procfd_fn *fn,
    void *arg, size_t *links)
{
	struct walk w = { .prefix = prefix, .prefix_len = strlen(prefix),
	    .fn = fn, .arg = arg };

	return walk(&w, proc_root, links);
}

int
procfd_walk_chr(const char *proc_root, const char *prefix,
    procfd_chr_fn *fn, void *arg, size_t *links)
{
	struct walk w = { .prefix = prefix, .prefix_len = strlen(prefix),
	    .chr_fn = fn, .arg = arg };

	return walk(&w, proc_root, links);
}
