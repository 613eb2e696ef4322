/*
 * holders.c - processes holding device nodes open (see holders.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "holders.h"
#include "io.h"

void
holders_release(struct holders *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static int
holders_add(struct holders *h, int pfd, const char *name, const char *dev)
{
	struct holder *v;
	char path[PATH_MAX];
	size_t cap;

	if (h->n == h->cap) {
		cap = h->cap ? h->cap * 2 : 8;
		if ((v = realloc(h->v, cap * sizeof(*v))) == NULL)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	v = &h->v[h->n++];
	memset(v, 0, sizeof(*v));
	v->pid = strtol(name, NULL, 10);
	(void)snprintf(v->dev, sizeof(v->dev), "%s", dev);
	if (io_pathf(path, sizeof(path), "%s/comm", name) == 0) {
		int fd = openat(pfd, path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : io_read(fd, v->comm,
		    sizeof(v->comm) - 1);

		if (fd >= 0)
			close(fd);
		v->comm[n > 0 ? n : 0] = '\0';
		v->comm[strcspn(v->comm, "\n")] = '\0';
	}
	return 0;
}

/* The first held node of process name under prefix, into dev; 1, 0. */
static int
held_node(int pfd, const char *name, const char *prefix, char *dev,
    size_t len)
{
	char link[PATH_MAX];
	struct dirent *de;
	int fd, found = 0;
	ssize_t n;
	DIR *d;

	if (io_pathf(link, sizeof(link), "%s/fd", name) < 0 ||
	    (fd = openat(pfd, link, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (!found && (de = readdir(d)) != NULL) {
		n = de->d_name[0] == '.' ? -1 :
		    readlinkat(fd, de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = strncmp(link, prefix, strlen(prefix)) == 0;
	}
	if (found) {
		n = (ssize_t)strlen(link);
		if ((size_t)n >= len)
			n = (ssize_t)len - 1;	/* a name kept for the log */
		memcpy(dev, link, (size_t)n);
		dev[n] = '\0';
	}
	closedir(d);
	return found;
}

int
holders_scan(struct holders *h, const char *proc_root, const char *prefix)
{
	char proc[PATH_MAX], dev[64];
	struct dirent *de;
	int rc = 0, err;
	DIR *d;

	memset(h, 0, sizeof(*h));
	if (io_pathf(proc, sizeof(proc), "%s/proc", proc_root) < 0 ||
	    (d = opendir(proc)) == NULL)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    held_node(dirfd(d), de->d_name, prefix, dev, sizeof(dev)))
			rc = holders_add(h, dirfd(d), de->d_name, dev);
	err = errno;
	closedir(d);
	if (rc < 0) {
		holders_release(h);
		errno = err;
		return -1;
	}
	return 0;
}
