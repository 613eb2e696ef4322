/*
 * holders.c - processes holding device nodes open (see holders.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "holders.h"
#include "io.h"
#include "procfd.h"

void
holders_release(struct holders *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

/* procfd_walk()'s callback: pid holds target; recorded once. */
static int
holders_add(void *arg, int proc_fd, const char *pid, const char *target)
{
	struct holders *h = arg;
	struct holder *v;
	char path[PATH_MAX];
	size_t cap, n;
	ssize_t got;
	int fd;

	if (h->n == h->cap) {
		cap = h->cap ? h->cap * 2 : 8;
		if ((v = realloc(h->v, cap * sizeof(*v))) == NULL)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	v = &h->v[h->n++];
	memset(v, 0, sizeof(*v));
	v->pid = strtol(pid, NULL, 10);
	n = strlen(target);
	if (n >= sizeof(v->dev))
		n = sizeof(v->dev) - 1;	/* a name kept for the log */
	memcpy(v->dev, target, n);
	if (io_pathf(path, sizeof(path), "%s/comm", pid) == 0 &&
	    (fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC)) >= 0) {
		got = io_read(fd, v->comm, sizeof(v->comm) - 1);
		close(fd);
		v->comm[got > 0 ? got : 0] = '\0';
		v->comm[strcspn(v->comm, "\n")] = '\0';
	}
	return PROCFD_NEXT_PROCESS;
}

int
holders_scan(struct holders *h, const char *proc_root, const char *prefix)
{
	int err;

	memset(h, 0, sizeof(*h));
	if (procfd_walk(proc_root, prefix, holders_add, h, NULL) == 0)
		return 0;
	err = errno;
	holders_release(h);
	errno = err;
	return -1;
}
