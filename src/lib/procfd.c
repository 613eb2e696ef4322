/*
 * procfd.c - one walk over every PROC_ROOT/proc/PID/fd link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "procfd.h"

struct walk {
	const char *prefix;
	size_t prefix_len;
	procfd_fn *fn;
	void *arg;
	size_t links;
};

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
		if (strncmp(link, w->prefix, w->prefix_len) == 0)
			rc = w->fn(w->arg, proc_fd, pid, link);
	}
	closedir(d);
	return rc < 0 ? -1 : 0;
}

int
procfd_walk(const char *proc_root, const char *prefix, procfd_fn *fn,
    void *arg, size_t *links)
{
	struct walk w = { .prefix = prefix, .prefix_len = strlen(prefix),
	    .fn = fn, .arg = arg };
	char proc[PATH_MAX];
	struct dirent *de;
	int rc = 0, err = 0;
	DIR *d;

	if (io_pathf(proc, sizeof(proc), "%s/proc", proc_root) < 0 ||
	    (d = opendir(proc)) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    (rc = walk_pid(&w, dirfd(d), de->d_name)) < 0)
			err = errno;
	closedir(d);
	if (links != NULL)
		*links = w.links;
	if (rc < 0) {
		errno = err;
		return -1;
	}
	return 0;
}
